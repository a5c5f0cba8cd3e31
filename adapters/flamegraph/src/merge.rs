//! Merging and layout: which frames are drawn, where, and how wide, in value units.
//!
//! * The flame graph merges every stack into the call tree (the IR's [`CallTree`]) and draws
//!   each call node once, as wide as its total. Siblings are ordered by name (or by weight);
//!   a node's self value is at its left edge and its children follow (as in the anchors).
//! * The flame chart keeps the samples' order (time) and merges only consecutive samples that
//!   share a call: a frame ends when the stack leaves it, and with a `calls` count column a new
//!   call starts wherever a sample carries `calls > 0`, so two back-to-back calls of one
//!   function stay two frames.
//!
//! Both prune before anything is written: a frame narrower than the minimum width is dropped
//! with its whole subtree (in the flame graph it is never even visited), so the work after the
//! call tree is proportional to what is drawn. Both walk iteratively, never recursively.

use crate::attrs::SortOrder;
use prefetch_index::prefetch_index;
use profconv_plugin::ir::strings::cmp_terminated;
use profconv_plugin::ir::{CallTree, NONE, ProfileRef, ValueKind, zeros};
use std::borrow::Cow;

/// One frame to draw, in value units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The call node (of the tree the layout was made from), or the stack (a layout made by
    /// [`merged_from_stacks`]); [`NONE`] for the [`ALL`] frame.
    pub node: u32,
    /// The function drawn; [`NONE`] for the [`ALL`] frame.
    pub func: u32,
    /// Depth (roots are 0).
    pub depth: u32,
    /// Left edge: the values of everything drawn to its left at this depth and below.
    pub x: i64,
    /// Width: the node's total (flame graph) or the call's value (flame chart).
    pub w: i64,
}

/// The frames of a picture.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// Frames, each parent before its children (depth-first, left to right).
    pub frames: Vec<Frame>,
    /// The width of the whole picture in value units (the sum of the roots).
    pub total: i64,
    /// Depth of the deepest frame drawn.
    pub max_depth: u32,
}

/// The name of the frame under everything (as in inferno and flamegraph.pl).
pub const ALL: &str = "all";

impl Layout {
    /// Puts a frame named [`ALL`] (node [`NONE`]) under everything, as wide as the total:
    /// it shows the total and, clicked, zooms back out.
    pub fn add_all_frame(&mut self) {
        for f in &mut self.frames {
            f.depth += 1;
        }
        self.frames.insert(
            0,
            Frame {
                node: NONE,
                func: NONE,
                depth: 0,
                x: 0,
                w: self.total,
            },
        );
        self.max_depth = self.frames.iter().map(|f| f.depth).max().unwrap_or(0);
    }
}

/// The width of every call node: its total of value column `col`, or, without a column, the
/// number of samples under it.
///
/// A weight column without negative values is the tree's own totals (borrowed). Otherwise
/// (a negative value, a count column, no column) the widths are computed here, with negative
/// self values drawn as zero, so that children always fit inside their parent. Returns the
/// widths and how many nodes had a negative self value.
pub fn node_widths<'t>(
    p: &ProfileRef<'_>,
    tree: &'t CallTree,
    col: Option<usize>,
) -> (Cow<'t, [i64]>, usize) {
    let negatives = col.map_or(0, |c| {
        tree.self_values[c].iter().filter(|&&v| v < 0).count()
    });
    if let Some(c) = col {
        if negatives == 0 && p.value_types[c].kind == ValueKind::Weight {
            return (Cow::Borrowed(&tree.total_values[c]), 0);
        }
    }
    let mut w: Vec<i64> = match col {
        Some(c) => tree.self_values[c].iter().map(|&v| v.max(0)).collect(),
        None => tree.sample_count.iter().map(|&n| i64::from(n)).collect(),
    };
    // Parents come before children, so one backward pass adds every subtree up.
    for i in (0..w.len()).rev() {
        let par = tree.parent[i];
        if par != NONE {
            let v = w[i];
            let cell = &mut w[par as usize];
            *cell = cell.saturating_add(v);
        }
    }
    (Cow::Owned(w), negatives)
}

/// The sum of the roots' widths.
pub fn total_of_roots(tree: &CallTree, widths: &[i64]) -> i64 {
    tree.roots
        .iter()
        .fold(0i64, |a, &r| a.saturating_add(widths[r as usize]))
}

/// True when a frame of width `w` is drawn.
#[inline]
fn keep(w: i64, min_value: f64) -> bool {
    w > 0 && w as f64 >= min_value
}

/// The drawn siblings of one list in drawing order, each with the width of the undrawn
/// siblings just before it. Only the drawn ones are sorted (`before` is a total order, the
/// whole list's); each undrawn one is placed among them by a binary search. A frame with a
/// million tiny callees, none drawn, then costs a million searches among its few drawn ones,
/// not a sort of a million names.
fn order_drawn<K>(
    drawn: &mut [K],
    undrawn: &[K],
    before: impl Fn(&K, &K) -> bool,
    width: impl Fn(&K) -> i64,
    gaps: &mut Vec<i64>,
) {
    drawn.sort_unstable_by(|a, b| {
        if before(a, b) {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    });
    gaps.clear();
    gaps.resize(drawn.len() + 1, 0);
    for u in undrawn {
        let at = drawn.partition_point(|d| before(d, u));
        gaps[at] = gaps[at].saturating_add(width(u).max(0));
    }
}

/// Whether sibling `a` is drawn before sibling `b`, given each one's name, the byte after it
/// (`;` when it has callees of positive width, else a space), its width and a tie-break (its
/// first-seen rank).
///
/// Names compare as they do in sorted folded lines, the order inferno and flamegraph.pl draw:
/// followed by `;` when the node has callees (`a-b` before `a;c`, since `-` sorts before `;`),
/// else by the space before the line's count (`a` before `a-b`). Callees count when they have
/// width, as lines count when they have samples. (A node with both self value and callees is
/// two frames there when a sibling sorts between `a ` and `a;`; here it is one, placed by its
/// callees.) Equal names (two functions of one name) keep first-seen order.
#[inline]
fn drawn_before(order: SortOrder, a: (&[u8], u8, i64, u32), b: (&[u8], u8, i64, u32)) -> bool {
    let by_name = || cmp_terminated(a.0, a.1, b.0, b.1).then(a.3.cmp(&b.3));
    match order {
        SortOrder::Name => by_name(),
        SortOrder::Weight => b.2.cmp(&a.2).then_with(by_name),
    }
    .is_lt()
}

/// The merged flame graph: one frame per call node at least `min_value` wide.
///
/// A node's own (self) value comes first, at its left edge, and its children follow: where
/// inferno and flamegraph.pl put it (their sorted input lists a stack before its callees).
pub fn merged(
    p: &ProfileRef<'_>,
    tree: &CallTree,
    widths: &[i64],
    min_value: f64,
    order: SortOrder,
) -> Layout {
    let mut layout = Layout {
        total: total_of_roots(tree, widths),
        ..Layout::default()
    };
    let mut wide_callees = vec![false; tree.len()];
    for (n, &parent) in tree.parent.iter().enumerate() {
        if parent != NONE && widths[n] > 0 {
            wide_callees[parent as usize] = true;
        }
    }
    // (node, left edge), popped in drawing order.
    let mut todo: Vec<(u32, i64)> = Vec::new();
    let mut siblings: Vec<u32> = tree.roots.clone();
    let (mut drawn, mut undrawn, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
    let mut rank: Vec<u32> = vec![0; tree.len()];
    let mut place = |siblings: &mut Vec<u32>, mut x: i64, todo: &mut Vec<(u32, i64)>| {
        drawn.clear();
        undrawn.clear();
        for (i, &n) in siblings.iter().enumerate() {
            rank[n as usize] = i as u32;
            match keep(widths[n as usize], min_value) {
                true => drawn.push(n),
                false => undrawn.push(n),
            }
        }
        let key = |n: u32| {
            let end = if wide_callees[n as usize] { b';' } else { b' ' };
            let name = p.func_name_str(tree.func[n as usize]).as_bytes();
            (name, end, widths[n as usize], rank[n as usize])
        };
        let before = |a: u32, b: u32| drawn_before(order, key(a), key(b));
        order_drawn(
            &mut drawn,
            &undrawn,
            |&a, &b| before(a, b),
            |&n| widths[n as usize],
            &mut gaps,
        );
        let mark = todo.len();
        for (&n, &gap) in drawn.iter().zip(&gaps) {
            // A pruned sibling still takes its place, so everything keeps its position.
            x = x.saturating_add(gap);
            todo.push((n, x));
            x = x.saturating_add(widths[n as usize].max(0));
        }
        todo[mark..].reverse();
    };
    place(&mut siblings, 0, &mut todo);
    while let Some((node, x)) = todo.pop() {
        let depth = tree.depth[node as usize];
        let w = widths[node as usize];
        layout.max_depth = layout.max_depth.max(depth);
        layout.frames.push(Frame {
            node,
            func: tree.func[node as usize],
            depth,
            x,
            w,
        });
        siblings.clear();
        siblings.extend(tree.children(node));
        let children = siblings
            .iter()
            .fold(0i64, |a, &c| a.saturating_add(widths[c as usize].max(0)));
        place(&mut siblings, x.saturating_add(w - children), &mut todo);
    }
    layout
}

/// The merged flame graph straight from the stack table, without building the call tree: the
/// fast path for large profiles. Returns `None` when the stack table is not already the call
/// tree where it matters (the caller then uses [`merged`] on the IR's `CallTree`).
///
/// The stack table is a prefix tree of frames; the call tree merges sibling stacks of one
/// function. If, among the children of every drawn frame (and among the roots), no two stacks
/// have the same function, then each of those stacks is exactly one call node (by induction
/// from the roots), its subtree's values are the node's total, and the picture is the same as
/// the call tree's, frame for frame (the tests compare both). Folded stacks, whose funcs have
/// one frame each and whose stacks are deduplicated, always qualify.
///
/// Cost: one pass over the samples and two over the stacks, plus a sort of the drawn frames
/// among their siblings and a binary search among them per undrawn child of a drawn frame
/// (`order_drawn`); memory: one `u32` per stack (an `i64` when totals need more), two bits,
/// and 8 bytes per stack placed (a drawn frame's children), where the call tree needs about 60
/// bytes per node. `min_value` gives the pruning threshold
/// for a total. Also returns how many stacks have a negative self value (drawn as zero).
pub fn merged_from_stacks(
    p: &ProfileRef<'_>,
    col: Option<usize>,
    min_value: impl Fn(i64) -> f64,
    order: SortOrder,
) -> Option<(Layout, usize)> {
    // Totals of stacks fit in 32 bits when the values are not negative and their sum fits:
    // half the memory (and the page faults) of the 8.6 M stacks of a 1 GB folded file.
    let fits_u32 = match col {
        Some(c) => p
            .nonnegative_sum(c)
            .is_some_and(|sum| u32::try_from(sum).is_ok()),
        None => u32::try_from(p.sample_stack.len()).is_ok(),
    };
    match fits_u32 {
        true => merged_from_totals(p, stack_totals::<u32>(p, col)?, min_value, order),
        false => merged_from_totals(p, stack_totals::<i64>(p, col)?, min_value, order),
    }
}

/// A stack's total as [`merged_from_stacks`] keeps it.
trait Total: Copy + Default + Into<i64> {
    /// Whether it holds negative values (`u32` is only used when no value is negative).
    const SIGNED: bool;
    /// `self + v`, `None` on overflow (or a value the type cannot hold).
    fn plus(self, v: i64) -> Option<Self>;
}

impl Total for u32 {
    const SIGNED: bool = false;
    #[inline]
    fn plus(self, v: i64) -> Option<u32> {
        self.checked_add(u32::try_from(v).ok()?)
    }
}

impl Total for i64 {
    const SIGNED: bool = true;
    #[inline]
    fn plus(self, v: i64) -> Option<i64> {
        self.checked_add(v)
    }
}

/// Per stack, its self value (negative ones as zero), plus its subtree's: one pass over the
/// samples, one backward over the stacks (`prefix[s] < s`). Also the sum of the roots' totals
/// and how many stacks had a negative self value. `None` on overflow.
fn stack_totals<T: Total>(p: &ProfileRef<'_>, col: Option<usize>) -> Option<Totals<T>> {
    let n = p.n_stacks();
    // Written zeros: the passes below add to scattered cells (see `zeros`).
    let mut w: Vec<T> = zeros(n);
    match col {
        Some(c) => {
            for (&s, &v) in p.sample_stack.iter().zip(p.sample_values[c]) {
                let cell = &mut w[s as usize];
                *cell = cell.plus(v)?;
            }
        }
        None => {
            for &s in p.sample_stack {
                let cell = &mut w[s as usize];
                *cell = cell.plus(1)?;
            }
        }
    }
    let mut negatives = 0;
    // With no negative value no sum is negative: the pass over every stack is skipped.
    if T::SIGNED && col.is_some_and(|c| p.sample_values[c].iter().any(|&v| v < 0)) {
        for v in w.iter_mut().filter(|v| Into::<i64>::into(**v) < 0) {
            negatives += 1;
            *v = T::default();
        }
    }
    let mut total = 0i64;
    // Names end as in `drawn_before`: `;` for a stack with callees of positive width, else a
    // space. (A stack of width 0 has only callees of width 0: totals add up self values drawn
    // as at least zero.) A stack's total is complete when the backward pass reaches it (its
    // callees come after it), so the pass marks its prefix then.
    let mut has_callees: Vec<u64> = zeros(n.div_ceil(64));
    // The total of stack `s + 1` when `s` is its prefix (a chain: most stacks are the only
    // callee of the one before), added from a register instead of through memory.
    let mut carry = T::default();
    for s in (0..n).rev() {
        // The first new stack of a folded line has its prefix far back (a cache miss in a
        // table of millions): ask for that cell [`PREFETCH_AHEAD`] stacks early, so that the
        // misses overlap instead of stalling the pass one after another.
        if let Some(&ahead) = s
            .checked_sub(PREFETCH_AHEAD)
            .and_then(|a| p.stack_prefix.get(a))
        {
            prefetch_index(&w, ahead as usize);
        }
        let v = w[s].plus(carry.into())?;
        w[s] = v;
        carry = T::default();
        match p.stack_prefix[s] {
            NONE => total = total.checked_add(v.into())?,
            pre => {
                if Into::<i64>::into(v) > 0 {
                    has_callees[pre as usize / 64] |= 1 << (pre % 64);
                }
                if pre as usize + 1 == s {
                    carry = v;
                } else {
                    let cell = &mut w[pre as usize];
                    *cell = cell.plus(v.into())?;
                }
            }
        }
    }
    Some(Totals {
        w,
        total,
        negatives,
        has_callees,
    })
}

/// What [`stack_totals`] gives.
struct Totals<T> {
    /// Each stack's total.
    w: Vec<T>,
    /// The sum of the roots' totals.
    total: i64,
    /// How many stacks had a negative self value.
    negatives: usize,
    /// A bit per stack: whether it has a callee of positive width.
    has_callees: Vec<u64>,
}

/// How many stacks ahead the backward pass of [`stack_totals`] asks for a prefix's total. Most
/// stacks continue a chain, so far-back prefixes come about one in ten stacks on the 1 GB
/// benchmark: 16 ahead hid little of their misses, 128–512 hid most of them.
const PREFETCH_AHEAD: usize = 256;

/// [`merged_from_stacks`] once the stacks' totals are known.
fn merged_from_totals<T: Total>(
    p: &ProfileRef<'_>,
    Totals {
        w,
        total,
        negatives,
        has_callees,
    }: Totals<T>,
    min_value: impl Fn(i64) -> f64,
    order: SortOrder,
) -> Option<(Layout, usize)> {
    let n = p.n_stacks();
    let w = |s: u32| -> i64 { w[s as usize].into() };
    let min_value = min_value(total);
    // Which stacks are drawn (parents first), and the children of drawn stacks: the only
    // stacks whose order and widths place the drawn ones.
    let mut kept = vec![0u64; n.div_ceil(64)];
    let is_kept = |kept: &[u64], s: u32| kept[s as usize / 64] >> (s % 64) & 1 == 1;
    // Each placed stack with its parent's key above it (0 for a root, else the prefix + 1), so
    // that sorting them groups siblings without reading their prefixes again.
    let mut placed: Vec<u64> = Vec::new();
    for s in 0..n as u32 {
        let pre = p.stack_prefix[s as usize];
        if (pre == NONE || is_kept(&kept, pre)) && w(s) > 0 {
            placed.push((u64::from(pre.wrapping_add(1)) << 32) | u64::from(s));
            if keep(w(s), min_value) {
                kept[s as usize / 64] |= 1 << (s % 64);
            }
        }
    }
    // A sibling's sort key (see `drawn_before`), made once per placed stack.
    let sort_key = |s: u32, func: u32| {
        let end = if is_kept(&has_callees, s) { b';' } else { b' ' };
        (p.func_name_str(func).as_bytes(), end, w(s), s)
    };
    // Functions of one name (one per file: callgrind, Deep.data) that are siblings are placed
    // in the call tree's first-seen order, which counts stacks of no width that this path
    // leaves out: a group with two of them takes the call tree's path (as a repeated function
    // does), so that which path a profile takes cannot swap them.
    let shared_names = {
        use foldhash::HashSetExt;
        let mut names = foldhash::HashSet::with_capacity(p.n_funcs());
        (0..p.n_funcs() as u32).any(|f| !names.insert(p.func_name_str(f)))
    };
    let mut group_names: Vec<&str> = Vec::new();
    // Group by parent (roots first, then parents in stack order, so a parent is placed before
    // its children; within a group, stack order, the call tree's first-seen order).
    placed.sort_unstable();
    let mut layout = Layout {
        total,
        ..Layout::default()
    };
    // Left edge and depth of each drawn stack, looked up when its children are placed.
    let mut at: std::collections::HashMap<u32, (i64, u32)> = std::collections::HashMap::new();
    let (mut funcs, mut group): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let (mut drawn, mut undrawn, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
    let mut i = 0;
    while i < placed.len() {
        let key = placed[i] >> 32;
        let mut j = i;
        while j < placed.len() && placed[j] >> 32 == key {
            j += 1;
        }
        group.clear();
        group.extend(placed[i..j].iter().map(|&v| v as u32));
        // Two siblings of one function: the stack table is not the call tree here.
        funcs.clear();
        funcs.extend(group.iter().map(|&c| p.stack_func(c)));
        let any_drawn = group.iter().any(|&c| is_kept(&kept, c));
        drawn.clear();
        undrawn.clear();
        if any_drawn {
            for (&c, &f) in group.iter().zip(&funcs) {
                match is_kept(&kept, c) {
                    true => drawn.push(sort_key(c, f)),
                    false => undrawn.push(sort_key(c, f)),
                }
            }
        }
        funcs.sort_unstable();
        if funcs.windows(2).any(|f| f[0] == f[1]) {
            return None;
        }
        if shared_names {
            group_names.clear();
            group_names.extend(funcs.iter().map(|&f| p.func_name_str(f)));
            group_names.sort_unstable();
            if group_names.windows(2).any(|w| w[0] == w[1]) {
                return None;
            }
        }
        if !any_drawn {
            // Nothing of this group is drawn: its order and widths place nothing.
            i = j;
            continue;
        }
        order_drawn(
            &mut drawn,
            &undrawn,
            |a, b| drawn_before(order, *a, *b),
            |k| k.2,
            &mut gaps,
        );
        let (mut x, depth) = match key {
            0 => (0, 0),
            _ => {
                let parent = (key - 1) as u32;
                let (px, pd) = at[&parent];
                let children = group.iter().fold(0i64, |a, &c| a + w(c));
                (px + (w(parent) - children), pd + 1)
            }
        };
        for (&(.., cw, c), &gap) in drawn.iter().zip(&gaps) {
            x += gap;
            at.insert(c, (x, depth));
            layout.max_depth = layout.max_depth.max(depth);
            layout.frames.push(Frame {
                node: c,
                func: p.stack_func(c),
                depth,
                x,
                w: cw,
            });
            x += cw;
        }
        i = j;
    }
    // Depth first, left to right: the order [`merged`] draws in.
    layout.frames.sort_by_key(|f| (f.x, f.depth));
    Some((layout, negatives))
}

/// How the flame chart reads the samples.
#[derive(Clone, Copy, Debug)]
pub struct ChartColumns {
    /// The value column drawn (None: one per sample).
    pub value: Option<usize>,
    /// The `calls` count column, when the profile has one: a sample with `calls > 0` starts a
    /// new call of its leaf.
    pub calls: Option<usize>,
}

/// The width of sample `i` in the flame chart (negative values are drawn as zero).
#[inline]
fn sample_width(p: &ProfileRef<'_>, value: Option<usize>, i: usize) -> i64 {
    value.map_or(1, |c| p.sample_values[c][i].max(0))
}

/// The total width of the flame chart: every sample's value.
pub fn chart_total(p: &ProfileRef<'_>, value: Option<usize>) -> i64 {
    (0..p.n_samples()).fold(0i64, |a, i| a.saturating_add(sample_width(p, value, i)))
}

/// The flame chart: samples in stored order, consecutive samples merged while they stay in
/// the same calls. `total` is [`chart_total`].
pub fn flamechart(
    p: &ProfileRef<'_>,
    tree: &CallTree,
    cols: ChartColumns,
    total: i64,
    min_value: f64,
) -> Layout {
    let mut layout = Layout {
        total,
        ..Layout::default()
    };
    // The calls open at the current position, outermost first: (node, left edge).
    let mut open: Vec<(u32, i64)> = Vec::new();
    // Nodes to open, innermost first.
    let mut chain: Vec<u32> = Vec::new();
    let mut x = 0i64;
    let mut thread = u32::MAX;
    let close_to = |open: &mut Vec<(u32, i64)>, len: usize, x: i64, frames: &mut Vec<Frame>| {
        while open.len() > len {
            if let Some((node, start)) = open.pop() {
                let w = x - start;
                if keep(w, min_value) {
                    frames.push(Frame {
                        node,
                        func: tree.func[node as usize],
                        depth: open.len() as u32,
                        x: start,
                        w,
                    });
                }
            }
        }
    };
    for i in 0..p.n_samples() {
        let t = p.sample_thread_of(i);
        if t != thread {
            // Another timeline (thread, process, kernel run): nothing continues across.
            close_to(&mut open, 0, x, &mut layout.frames);
            thread = t;
        }
        let node = tree.stack_node[p.sample_stack[i] as usize];
        let depth = tree.depth[node as usize] as usize;
        let new_call = cols.calls.is_some_and(|c| p.sample_values[c][i] > 0);
        // How many open calls this sample stays in: at most its callers (and the leaf itself
        // unless a new call of it starts here).
        let mut common = open.len().min(if new_call { depth } else { depth + 1 });
        chain.clear();
        let mut n = node;
        let mut d = depth;
        while d >= common {
            chain.push(n);
            n = tree.parent[n as usize];
            if d == 0 {
                break;
            }
            d -= 1;
        }
        // `n` is now the ancestor at depth `common - 1` (if common > 0): back up until the
        // open calls and the sample's ancestors agree.
        while common > 0 && open[common - 1].0 != n {
            chain.push(n);
            n = tree.parent[n as usize];
            common -= 1;
        }
        close_to(&mut open, common, x, &mut layout.frames);
        open.extend(chain.iter().rev().map(|&c| (c, x)));
        x = x.saturating_add(sample_width(p, cols.value, i));
    }
    close_to(&mut open, 0, x, &mut layout.frames);
    // Frames were produced as calls ended (children first); draw parents first.
    layout.frames.sort_by_key(|f| (f.x, f.depth));
    layout.max_depth = layout.frames.iter().map(|f| f.depth).max().unwrap_or(0);
    layout
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::testing::{XorShift, trace};
    use profconv_plugin::ir::{Profile, ProfileBuilder, flags};

    fn folded(lines: &[(&str, i64)]) -> Profile {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        for (stack, n) in lines {
            let names: Vec<&str> = stack.split(';').collect();
            b.add_stack(&names, &[*n]).unwrap();
        }
        b.finish()
    }

    /// `name@depth x+w` per frame.
    fn show(p: &Profile, tree: &CallTree, l: &Layout) -> Vec<String> {
        let v = p.view();
        l.frames
            .iter()
            .map(|f| {
                format!(
                    "{}@{} {}+{}",
                    v.func_name_str(tree.func[f.node as usize]),
                    f.depth,
                    f.x,
                    f.w
                )
            })
            .collect()
    }

    #[test]
    fn merged_graph_sorts_by_name_and_keeps_pruned_space() {
        let p = folded(&[("a;c", 5), ("a;b", 3), ("a;z", 1), ("a", 2), ("d", 4)]);
        let tree = CallTree::build(&p.view()).unwrap();
        let (w, neg) = node_widths(&p.view(), &tree, Some(0));
        assert!(matches!(w, Cow::Borrowed(_)) && neg == 0);
        let l = merged(&p.view(), &tree, &w, 0.0, SortOrder::Name);
        assert_eq!(l.total, 15);
        assert_eq!(l.max_depth, 1);
        // a's self value (2) first, then its children.
        assert_eq!(
            show(&p, &tree, &l),
            ["a@0 0+11", "b@1 2+3", "c@1 5+5", "z@1 10+1", "d@0 11+4"]
        );
        // Pruned: z (1) is dropped, but d stays where it was.
        let l = merged(&p.view(), &tree, &w, 2.0, SortOrder::Name);
        assert_eq!(
            show(&p, &tree, &l),
            ["a@0 0+11", "b@1 2+3", "c@1 5+5", "d@0 11+4"]
        );
        let l = merged(&p.view(), &tree, &w, 0.0, SortOrder::Weight);
        assert_eq!(
            show(&p, &tree, &l),
            ["a@0 0+11", "c@1 2+5", "b@1 7+3", "z@1 10+1", "d@0 11+4"]
        );
        // Names sort as folded lines do: a leaf `a` before `a-b` (`a 1` < `a-b 1`), a caller
        // `a` after it (`a-b 1` < `a;c 1`), as inferno draws them; through the call tree and
        // through the stack table alike.
        let by_name = |lines: &[(&str, i64)]| {
            let p = folded(lines);
            let tree = CallTree::build(&p.view()).unwrap();
            let (w, _) = node_widths(&p.view(), &tree, Some(0));
            let l = merged(&p.view(), &tree, &w, 0.0, SortOrder::Name);
            let (from_stacks, _) =
                merged_from_stacks(&p.view(), Some(0), |_| 0.0, SortOrder::Name).unwrap();
            assert_eq!(show(&p, &tree, &from_stacks), show(&p, &tree, &l));
            show(&p, &tree, &l)
        };
        assert_eq!(
            by_name(&[("a", 1), ("a-b", 1), ("B", 1)]),
            ["B@0 0+1", "a@0 1+1", "a-b@0 2+1"]
        );
        assert_eq!(
            by_name(&[("a;c", 1), ("a-b", 1), ("B", 1)]),
            ["B@0 0+1", "a-b@0 1+1", "a@0 2+1", "c@1 2+1"]
        );
        // A callee without width does not count (nor would its line of count 0 in sorting).
        assert_eq!(
            by_name(&[("a", 1), ("a;c", 0), ("a-b", 1)]),
            ["a@0 0+1", "a-b@0 1+1"]
        );
    }

    #[test]
    fn negative_values_are_drawn_as_zero() {
        let p = folded(&[("a;b", -3), ("a;c", 5)]);
        let tree = CallTree::build(&p.view()).unwrap();
        let (w, neg) = node_widths(&p.view(), &tree, Some(0));
        assert_eq!(neg, 1);
        let l = merged(&p.view(), &tree, &w, 0.0, SortOrder::Name);
        assert_eq!(show(&p, &tree, &l), ["a@0 0+5", "c@1 0+5"]);
        assert_eq!(l.total, 5);
    }

    #[test]
    fn a_deep_chain_is_laid_out_without_recursion() {
        let names: Vec<String> = (0..200_000).map(|i| format!("f{}", i % 3)).collect();
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&names, &[1]).unwrap();
        let p = b.finish();
        let tree = CallTree::build(&p.view()).unwrap();
        let (w, _) = node_widths(&p.view(), &tree, Some(0));
        let l = merged(&p.view(), &tree, &w, 0.0, SortOrder::Name);
        assert_eq!(l.frames.len(), 200_000);
        assert_eq!(l.max_depth, 199_999);
    }

    /// Both ways to the merged graph: the call tree, and the stack table when it qualifies.
    /// With the number of negative self values each found.
    fn both(
        p: &Profile,
        min_value: f64,
        order: SortOrder,
    ) -> ((Layout, usize), Option<(Layout, usize)>) {
        let v = p.view();
        let tree = CallTree::build(&v).unwrap();
        let (w, negatives) = node_widths(&v, &tree, Some(0));
        let slow = merged(&v, &tree, &w, min_value, order);
        let fast = merged_from_stacks(&v, Some(0), |_| min_value, order);
        ((slow, negatives), fast)
    }

    /// Frames without the node ids (call nodes and stacks are numbered differently).
    fn key(l: &Layout) -> Vec<(u32, u32, i64, i64)> {
        l.frames
            .iter()
            .map(|f| (f.func, f.depth, f.x, f.w))
            .collect()
    }

    /// The merged graph the plain way: every sibling list sorted whole (names followed by `;`
    /// or a space, compared byte by byte), every sibling advancing the left edge.
    fn reference(p: &Profile, min_value: f64, order: SortOrder) -> Vec<(u32, u32, i64, i64)> {
        let v = p.view();
        let tree = CallTree::build(&v).unwrap();
        let (w, _) = node_widths(&v, &tree, Some(0));
        let wide_callees: Vec<bool> = (0..tree.len())
            .map(|n| tree.children(n as u32).any(|c| w[c as usize] > 0))
            .collect();
        let key = |n: u32| {
            let end: &[u8] = if wide_callees[n as usize] { b";" } else { b" " };
            let name = v.func_name_str(tree.func[n as usize]).as_bytes().to_vec();
            [name, end.to_vec()].concat()
        };
        let sorted = |mut list: Vec<u32>| {
            list.sort_by(|&a, &b| match order {
                SortOrder::Name => key(a).cmp(&key(b)),
                SortOrder::Weight => w[b as usize].cmp(&w[a as usize]).then(key(a).cmp(&key(b))),
            });
            list
        };
        let mut out = Vec::new();
        let mut todo: Vec<(u32, i64)> = Vec::new();
        let mut x = 0;
        for n in sorted(tree.roots.clone()) {
            if keep(w[n as usize], min_value) {
                todo.push((n, x));
            }
            x += w[n as usize].max(0);
        }
        while let Some((n, x)) = todo.pop() {
            out.push((
                tree.func[n as usize],
                tree.depth[n as usize],
                x,
                w[n as usize],
            ));
            let kids: Vec<u32> = tree.children(n).collect();
            let sum: i64 = kids.iter().map(|&c| w[c as usize].max(0)).sum();
            let mut cx = x + w[n as usize] - sum;
            for c in sorted(kids) {
                if keep(w[c as usize], min_value) {
                    todo.push((c, cx));
                }
                cx += w[c as usize].max(0);
            }
        }
        out.sort_by_key(|&(_, depth, x, _)| (x, depth));
        out
    }

    #[test]
    fn the_stack_table_path_draws_what_the_call_tree_draws() {
        // Deterministic pseudo-random cases, the same everywhere.
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut next = |n: u64| rng.below(n);
        let names = ["a", "a-b", "b", "B", "c;d", "main", "x", "é", "a b"];
        let mut negatives = 0;
        for round in 0..200 {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            for _ in 0..(1 + next(40)) {
                let depth = 1 + next(6) as usize;
                let stack: Vec<&str> = (0..depth).map(|_| names[next(9) as usize]).collect();
                // Some rounds with negative values, some whose totals need more than 32 bits.
                let v = next(100) as i64 - if round % 5 == 0 { 20 } else { 0 };
                let v = if round % 7 == 0 { v << 28 } else { v };
                b.add_stack(&stack, &[v]).unwrap();
            }
            let p = b.finish();
            for min in [0.0, 3.0, 50.0] {
                for order in [SortOrder::Name, SortOrder::Weight] {
                    let ((slow, slow_neg), fast) = both(&p, min, order);
                    let (fast, fast_neg) = fast.expect("folded stacks always qualify");
                    assert_eq!(key(&slow), key(&fast), "round {round} min {min} {order:?}");
                    // Only drawn siblings are sorted; the undrawn ones are searched in.
                    assert_eq!(key(&slow), reference(&p, min, order), "round {round} {min}");
                    assert_eq!((slow.total, slow.max_depth), (fast.total, fast.max_depth));
                    assert_eq!(slow_neg, fast_neg, "round {round}");
                    negatives += fast_neg;
                }
            }
        }
        assert!(negatives > 0, "some rounds have negative self values");
    }

    #[test]
    fn the_stack_table_path_steps_aside_when_siblings_share_a_function() {
        // main at two addresses: two root stacks of one function.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let main = b.func("main");
        let work = b.func("work");
        let m1 = b.frame_at(main, Some(1), None);
        let m2 = b.frame_at(main, Some(2), None);
        let w = b.frame(work);
        for (m, n) in [(m1, 2), (m2, 3)] {
            let s0 = b.stack(NONE, m);
            let s1 = b.stack(s0, w);
            b.add_to_stack(s1, &[n]).unwrap();
        }
        let p = b.finish();
        let ((slow, _), fast) = both(&p, 0.0, SortOrder::Name);
        assert!(fast.is_none());
        assert_eq!(key(&slow), [(main, 0, 0, 5), (work, 1, 0, 5)]);
        // Two functions of one name (different files) are two frames, in first-seen order,
        // by the call tree: the stack table's first-seen order leaves out stacks of no width
        // (`f` of one.c at line 1 had none, and this path put two.c first; which path a
        // profile takes, a repeated function elsewhere, swapped them).
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let f1 = b.func_with("f", Some("one.c"), None, None);
        let f2 = b.func_with("f", Some("two.c"), None, None);
        for (f, n) in [(f2, 1), (f1, 4)] {
            let fr = b.frame(f);
            let s = b.stack(NONE, fr);
            b.add_to_stack(s, &[n]).unwrap();
        }
        let p = b.finish();
        let ((slow, _), fast) = both(&p, 0.0, SortOrder::Name);
        assert!(fast.is_none());
        assert_eq!(key(&slow), [(f2, 0, 0, 1), (f1, 0, 1, 4)]);
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let f1 = b.func_with("f", Some("one.c"), None, None);
        let f2 = b.func_with("f", Some("two.c"), None, None);
        let at = [
            b.frame_at(f1, Some(1), None),
            b.frame(f2),
            b.frame_at(f1, Some(2), None),
        ];
        for (fr, n) in at.into_iter().zip([0, 5, 3]) {
            let s = b.stack(NONE, fr);
            b.add_to_stack(s, &[n]).unwrap();
        }
        let p = b.finish();
        let ((slow, _), fast) = both(&p, 0.0, SortOrder::Name);
        assert!(fast.is_none());
        assert_eq!(key(&slow), [(f1, 0, 0, 3), (f2, 0, 3, 5)]);
    }

    fn chart(p: &Profile) -> Vec<String> {
        let v = p.view();
        let tree = CallTree::build(&v).unwrap();
        let cols = ChartColumns {
            value: Some(0),
            calls: v.value_type_index("calls"),
        };
        let total = chart_total(&v, cols.value);
        let l = flamechart(&v, &tree, cols, total, 0.0);
        show(p, &tree, &l)
    }

    #[test]
    fn flame_chart_keeps_back_to_back_calls_apart() {
        let p = trace(&[
            "C main 0",
            "C g 5",
            "E 8",
            "C g 8",
            "E 20",
            "C f 20",
            "C f 25",
            "C leaf 26",
            "E 27",
            "E 30",
            "E 40",
            "E 41",
        ]);
        assert_eq!(
            chart(&p),
            [
                "main@0 0+41",
                "g@1 5+3",
                "g@1 8+12",
                "f@1 20+20",
                "f@2 25+5",
                "leaf@3 26+1"
            ]
        );
    }

    #[test]
    fn flame_chart_of_seed_000() {
        let p = trace(&["C f 0", "C g 10", "C h 30", "E 60", "E 100", "E 160"]);
        assert_eq!(chart(&p), ["f@0 0+160", "g@1 10+90", "h@2 30+30"]);
    }

    #[test]
    fn flame_chart_separates_threads() {
        let p = trace(&[
            "R run1", "C k 0", "C a 1", "E 4", "E 10", "R run2", "C k 10", "C a 11", "E 15", "E 16",
        ]);
        // The second run's samples follow the first's (their value offsets continue).
        assert_eq!(chart(&p), ["k@0 0+10", "a@1 1+3", "k@0 10+6", "a@1 11+4"]);
    }

    #[test]
    fn flame_chart_without_calls_merges_consecutive_samples() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.set_flags(flags::ORDERED);
        for s in ["a;b", "a;b", "a;c", "a", "a;b", "d"] {
            let names: Vec<&str> = s.split(';').collect();
            let st = b.stack_of_names(&names);
            b.push_sample(st, None, &[1]);
        }
        let p = b.finish();
        assert_eq!(
            chart(&p),
            ["a@0 0+5", "b@1 0+2", "c@1 2+1", "b@1 4+1", "d@0 5+1"]
        );
    }
}
