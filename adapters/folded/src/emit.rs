//! Folded emitter.
//!
//! * Default: one line per call node with samples, from a depth-first walk of the call tree with
//!   siblings by name (compared as if followed by `;`, so the order is that of sorting the lines,
//!   except where a name is a prefix of a sibling's followed by a byte below `;`).
//! * `per-thread`: the same, one block per thread (kernel run, process), in thread order.
//! * `flamechart`: time order, nothing merged: for a profile with exact calls, one line per
//!   call with its self value (the Octez debugger's `profile` output); otherwise one line per
//!   run of consecutive samples on the same stack.
//! * A differential profile (metadata `diff` = `before,after`, as `profconv diff` builds and the
//!   parser reads from `STACK BEFORE AFTER` lines) is written with both counts on each line,
//!   inferno's differential format, unless `value` picks one column.

use crate::parse::{count, is_comment};
use prefetch_index::prefetch_index;
use profconv_plugin::ir::diff::DIFF_COLUMNS;
use profconv_plugin::ir::strings::order_by_bytes;
use profconv_plugin::ir::{CallTree, IrError, NONE, ProfileRef, ValueKind, path_sums, write_fixed};
use profconv_plugin::{PluginError, human_bytes, value_column};
use std::borrow::Cow;
use std::io::Write;

/// What to write.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmitOptions<'a> {
    /// Value type to write (default: the first weight; both columns of a differential
    /// profile).
    pub value: Option<&'a str>,
    /// One merged block per thread.
    pub per_thread: bool,
    /// Time order, one line per call.
    pub flamechart: bool,
    /// The most bytes to write: a lower bound of the output is checked before anything is
    /// written, and each line before it is written; `None` (the `Default`): no bound. The
    /// plugin's default is [`MAX_SIZE`] (option `max-size`).
    pub max_size: Option<u64>,
}

/// Default [`EmitOptions::max_size`]: 16 GiB ([`profconv_plugin::MAX_OUTPUT_SIZE`]). Every line
/// holds its whole stack, so the output grows with the square of the depth.
pub const MAX_SIZE: u64 = profconv_plugin::MAX_OUTPUT_SIZE;

/// Writes `p` as folded stacks.
pub fn emit_folded(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: EmitOptions<'_>,
) -> Result<(), PluginError> {
    let Some(cols) = written_columns(p, opts.value)? else {
        return Ok(());
    };
    let mut w = LineWriter::new(p, cols);
    w.max_size = opts.max_size;
    if opts.flamechart {
        return w.flamechart(p, out);
    }
    if opts.per_thread && p.n_threads() > 1 {
        return per_thread(&mut w, p, out);
    }
    merged(&mut w, p, out, true)
}

/// One merged block per thread, in thread order, on the whole profile's call tree. A thread's
/// lines are its nodes in the whole tree's line order, found from its own samples: the work is
/// its samples and lines, not the tree's size, so a trace of many short runs (threads) is
/// written in time linear in its size.
fn per_thread(
    w: &mut LineWriter,
    p: &ProfileRef<'_>,
    out: &mut impl Write,
) -> Result<(), PluginError> {
    let tree = CallTree::build_columns(p, &[])?;
    let rank = name_ranks(p);
    let key: Vec<u32> = tree.func.iter().map(|&f| rank[f as usize]).collect();
    let place = Ordered::new(tree.len(), |n| tree.parent[n], &key).preorder();
    drop(key);
    let parent = |n: usize| tree.parent[n];
    let func_of = |n: u32| tree.func[n as usize];
    let path_len = w.path_lengths(p, parent, func_of, tree.len());
    let names = WrittenNames::new(p);
    // Self values of one thread's samples on the shared tree's nodes; reset after each thread.
    let mut selfv = vec![vec![0i64; tree.len()]; w.cols.len()];
    let mut has = vec![false; tree.len()];
    let mut nodes: Vec<u32> = Vec::new();
    for samples in p.samples_by_thread() {
        nodes.clear();
        for &i in &samples {
            let n = tree.stack_node[p.sample_stack[i as usize] as usize] as usize;
            for (v, &c) in selfv.iter_mut().zip(&w.cols) {
                let (cell, add) = (&mut v[n], p.sample_values[c][i as usize]);
                *cell = cell.checked_add(add).ok_or_else(|| overflow(*cell, add))?;
            }
            if !std::mem::replace(&mut has[n], true) {
                nodes.push(n as u32);
            }
        }
        nodes.sort_unstable_by_key(|&n| place[n as usize]);
        w.project_lines(&path_len, nodes.iter().map(|&n| n as usize), || {
            path_sums(tree.len(), parent, |_| 1)
        })?;
        let columns: Vec<&[i64]> = selfv.iter().map(Vec::as_slice).collect();
        w.write_nodes(&names, &nodes, parent, func_of, &columns, out)?;
        for &n in &nodes {
            has[n as usize] = false;
            for v in &mut selfv {
                v[n as usize] = 0;
            }
        }
    }
    Ok(())
}

/// The value columns each line holds: the one `value` names; else, for a differential profile
/// (metadata `diff` = [`DIFF_COLUMNS`]), its `before` and `after` columns (inferno's
/// `STACK BEFORE AFTER` lines); else the first weight. `None` for a profile with no value column.
fn written_columns(
    p: &ProfileRef<'_>,
    value: Option<&str>,
) -> Result<Option<Vec<usize>>, PluginError> {
    if value.is_none_or(str::is_empty)
        && p.meta("diff") == Some(DIFF_COLUMNS)
        && let (Some(before), Some(after)) =
            (p.value_type_index("before"), p.value_type_index("after"))
    {
        return Ok(Some(vec![before, after]));
    }
    Ok(value_column(p, value)?.map(|c| vec![c]))
}

/// The merged call tree, one line per call node with samples; from the stack table when it is
/// the call tree already and `try_stacks` (false only in tests, to compare both ways).
fn merged(
    w: &mut LineWriter,
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    try_stacks: bool,
) -> Result<(), PluginError> {
    let rank = name_ranks(p);
    let counted = w.max_size.is_some();
    if try_stacks && let Some(stacks) = StackTree::new(p, &w.cols, &rank, counted)? {
        if let Some((bytes, lines)) = stacks.projected {
            let lines_at = (0..p.n_stacks()).filter(|&s| stacks.has[s]);
            w.add_projection(bytes, lines, lines_at, || {
                path_sums(p.n_stacks(), |s| p.stack_prefix[s], |_| 1)
            })?;
        }
        let selfv: Vec<&[i64]> = stacks.selfv.iter().map(|c| &c[..]).collect();
        return w.write(
            p,
            &stacks.order,
            FuncOf {
                via: p.stack_frame,
                then: Some(p.frame_func),
            },
            &selfv,
            &stacks.has,
            out,
        );
    }
    // The written columns are the tree's only ones (a Deep.data profile has ten).
    let tree = CallTree::build_columns(p, &w.cols)?;
    let has: Vec<bool> = tree.sample_count.iter().map(|&c| c > 0).collect();
    let key: Vec<u32> = tree.func.iter().map(|&f| rank[f as usize]).collect();
    let order = Ordered::new(tree.len(), |n| tree.parent[n], &key);
    let lines = (0..tree.len()).filter(|&n| has[n]);
    w.project(
        p,
        |n| tree.parent[n],
        |n| tree.func[n as usize],
        tree.len(),
        lines,
    )?;
    let selfv: Vec<&[i64]> = w.cols.iter().map(|&c| &tree.self_values[c][..]).collect();
    w.write(
        p,
        &order,
        FuncOf {
            via: &tree.func,
            then: None,
        },
        &selfv,
        &has,
        out,
    )
}

/// A node's func, for [`LineWriter::write`]: `via[node]`, or with `then`, `then[via[node]]` (a
/// stack's frame's func).
#[derive(Clone, Copy)]
struct FuncOf<'a> {
    via: &'a [u32],
    then: Option<&'a [u32]>,
}

impl FuncOf<'_> {
    #[inline]
    fn get(self, node: u32) -> u32 {
        let v = self.via[node as usize];
        self.then.map_or(v, |then| then[v as usize])
    }

    /// Starts loading what [`Self::get`] reads first.
    #[inline]
    fn prefetch(self, node: u32) {
        prefetch_index(self.via, node as usize);
    }
}

/// Children lists in line-sort order: node `n`'s children are `kids[start[n]..start[n + 1]]`,
/// and the roots are the list of `n = len`. Made with a counting sort by parent, which keeps
/// first-seen order, then a stable sort of each list by name rank.
struct Ordered {
    start: Vec<u32>,
    kids: Vec<u32>,
    /// Whether some list has two nodes of one rank (one name).
    ties: bool,
}

impl Ordered {
    /// `key[n]`: node `n`'s name rank.
    fn new(len: usize, parent: impl Fn(usize) -> u32, key: &[u32]) -> Self {
        let list = |n: usize| {
            let p = parent(n);
            if p == NONE { len } else { p as usize }
        };
        // Counts at `start[k + 2]`; their running sums make `start[k + 1]` where list k is
        // filled from, and after filling, where list k ends.
        let mut start = vec![0u32; len + 3];
        for n in 0..len {
            start[list(n) + 2] += 1;
        }
        for k in 2..start.len() {
            start[k] += start[k - 1];
        }
        let mut kids = vec![0u32; len];
        for n in 0..len {
            let at = &mut start[list(n) + 1];
            kids[*at as usize] = n as u32;
            *at += 1;
        }
        start.truncate(len + 2);
        let mut ties = false;
        for k in 0..=len {
            let run = &mut kids[start[k] as usize..start[k + 1] as usize];
            if run.len() > 1 {
                // By rank, equal ranks in first-seen order (the lists are ascending).
                run.sort_unstable_by_key(|&c| (key[c as usize], c));
                // Noted here, where the list's ranks are in the caches.
                ties = ties
                    || run
                        .windows(2)
                        .any(|w| key[w[0] as usize] == key[w[1] as usize]);
            }
        }
        Ordered { start, kids, ties }
    }

    /// The children of `node` (`len` for the roots), in line-sort order.
    fn children(&self, node: usize) -> &[u32] {
        &self.kids[self.start[node] as usize..self.start[node + 1] as usize]
    }

    fn roots(&self) -> &[u32] {
        self.children(self.start.len() - 2)
    }

    /// Each node's place in line-sort order (depth first, children in order).
    fn preorder(&self) -> Vec<u32> {
        let len = self.kids.len();
        let mut place = vec![0u32; len];
        let mut todo: Vec<u32> = self.roots().iter().rev().copied().collect();
        let mut next = 0;
        while let Some(n) = todo.pop() {
            place[n as usize] = next;
            next += 1;
            todo.extend(self.children(n as usize).iter().rev());
        }
        place
    }
}

#[cfg(test)]
thread_local! {
    /// Siblings of one rank looked at by [`StackTree::new`] (tests bound it).
    static SIBLING_CHECKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The stack table as the tree to write, when it already is the call tree: no two sibling
/// stacks (nor two roots) have one func. Then each stack is exactly one call node (by
/// induction from the roots) and the output is the call tree's, line for line, without
/// building it: about 25 bytes per stack instead of 60 per node, and no child lookups. Folded
/// stacks and PVM traces always qualify; a profile whose funcs have several frames (lines,
/// addresses) usually does not.
struct StackTree<'p> {
    order: Ordered,
    /// Self values of each written column: the profile's own column when its sample rows are
    /// its stacks, one for one and in order (an aggregated PVM trace), else summed here.
    selfv: Vec<Cow<'p, [i64]>>,
    has: Vec<bool>,
    /// What the lines take at least, for the output's bound: bytes and lines, as
    /// [`LineWriter::project`] counts them (when asked for).
    projected: Option<(u128, u64)>,
}

impl<'p> StackTree<'p> {
    /// `counted`: with [`StackTree::projected`] (for a bound on the output's size).
    fn new(
        p: &ProfileRef<'p>,
        cols: &[usize],
        rank: &[u32],
        counted: bool,
    ) -> Result<Option<Self>, PluginError> {
        // Only tried where funcs have one frame each (else siblings of one func are likely,
        // and finding one after ordering every list would be wasted work).
        let mut framed = vec![false; p.n_funcs()];
        for &f in p.frame_func {
            if std::mem::replace(&mut framed[f as usize], true) {
                return Ok(None);
            }
        }
        let ns = p.n_stacks();
        let func = |s: u32| p.stack_func(s);
        let key: Vec<u32> = (0..ns as u32).map(|s| rank[func(s) as usize]).collect();
        let order = Ordered::new(ns, |s| p.stack_prefix[s], &key);
        // Only lists with two nodes of one rank can hold siblings of one func. Siblings of one
        // func have one rank, so they are in one run of equal ranks; a run's funcs are told
        // apart by the run each was last seen in (a run can be long: a static `init` in each
        // of many files, all roots of a callgrind file, compared pairwise took 6 s for 80 000).
        if order.ties {
            let mut seen_in = vec![u32::MAX; p.n_funcs()];
            let mut run = 0u32;
            for k in 0..=ns {
                for same_rank in order
                    .children(k)
                    .chunk_by(|&a, &b| key[a as usize] == key[b as usize])
                    .filter(|r| r.len() > 1)
                {
                    for &a in same_rank {
                        #[cfg(test)]
                        SIBLING_CHECKS.with(|c| c.set(c.get() + 1));
                        if std::mem::replace(&mut seen_in[func(a) as usize], run) == run {
                            return Ok(None);
                        }
                    }
                    run += 1;
                }
            }
        }
        // Row i on stack i for every stack: the rows are the self values already.
        let one_row_per_stack = p.sample_stack.len() == ns
            && p.sample_stack
                .iter()
                .enumerate()
                .all(|(i, &s)| s as usize == i);
        let mut has = vec![one_row_per_stack; ns];
        if !one_row_per_stack {
            for &s in p.sample_stack {
                has[s as usize] = true;
            }
        }
        // The lines' bytes, counted as [`LineWriter::project`] counts them: each stack's name and
        // the `;` before it are on every line below it, its own included. One pass over the
        // stacks, children first, adding each stack's lines to its parent's, in the ranks'
        // memory, which is not needed any more and whose pages are in memory already (a new
        // vector of each stack's path length, one `u64` per stack, cost about 0.05 s of a PVM
        // trace's 1.2 s conversion, most of it page faults). Off the peak before the value
        // vectors either way.
        let projected = counted.then(|| {
            let name_len: Vec<u64> = (0..p.n_funcs() as u32)
                .map(|f| p.func_name_str(f).len() as u64)
                .collect();
            let mut below = key;
            for (c, &h) in below.iter_mut().zip(&has) {
                *c = u32::from(h);
            }
            let mut bytes = 0u128;
            for s in (0..ns).rev() {
                let lines = below[s];
                bytes += u128::from(name_len[func(s as u32) as usize] + 1) * u128::from(lines);
                let prefix = p.stack_prefix[s];
                if prefix != NONE {
                    below[prefix as usize] += lines;
                }
            }
            let lines = has.iter().filter(|&&h| h).count() as u64;
            (bytes + u128::from(lines) * 2 * cols.len() as u128, lines)
        });
        let mut columns = Vec::with_capacity(cols.len());
        for &col in cols {
            let selfv: Cow<'p, [i64]> = if one_row_per_stack {
                Cow::Borrowed(p.sample_values[col])
            } else {
                let mut selfv = vec![0i64; ns];
                for (&s, &v) in p.sample_stack.iter().zip(p.sample_values[col]) {
                    let cell = &mut selfv[s as usize];
                    *cell = cell.checked_add(v).ok_or_else(|| overflow(*cell, v))?;
                }
                Cow::Owned(selfv)
            };
            // The call tree checks that every node's total fits; so does this, with a pass over
            // every stack unless the column's sum says that every total fits.
            if p.value_types[col].kind == ValueKind::Weight && p.nonnegative_sum(col).is_none() {
                let mut total = selfv.to_vec();
                for s in (0..ns).rev() {
                    let prefix = p.stack_prefix[s];
                    if prefix != NONE {
                        let v = total[s];
                        let cell = &mut total[prefix as usize];
                        *cell = cell.checked_add(v).ok_or_else(|| overflow(*cell, v))?;
                    }
                }
            }
            columns.push(selfv);
        }
        Ok(Some(StackTree {
            order,
            selfv: columns,
            has,
            projected,
        }))
    }
}

/// The call tree's error for a sum that does not fit.
fn overflow(a: i64, b: i64) -> PluginError {
    PluginError::from(IrError::Overflow(format!(
        "{a} + {b} does not fit in 64 bits"
    )))
}

struct LineWriter {
    /// The value columns written on each line (one, or a differential profile's two).
    cols: Vec<usize>,
    decimals: Vec<u32>,
    path: Vec<u8>,
    num: String,
    max_size: Option<u64>,
    /// Bytes and lines of the blocks checked so far (`per-thread` writes several).
    projected: Projected,
    /// Bytes and lines written so far: the projection is a lower bound (one digit per count),
    /// so the bound is checked again as lines are written.
    written: u64,
    lines: u64,
}

/// What the output will take, at least: every line's stack, a space and one digit per value,
/// and a newline.
#[derive(Default)]
struct Projected {
    bytes: u128,
    lines: u64,
    deepest: u64,
}

impl Projected {
    #[inline]
    fn line(&mut self, path_len: u64, values: usize) {
        self.bytes += path_len as u128 + 2 * values as u128 + 1;
        self.lines += 1;
    }
}

impl LineWriter {
    fn new(p: &ProfileRef<'_>, cols: Vec<usize>) -> Self {
        LineWriter {
            decimals: cols.iter().map(|&c| p.value_types[c].decimals).collect(),
            cols,
            path: Vec::with_capacity(4096),
            num: String::new(),
            max_size: None,
            projected: Projected::default(),
            written: 0,
            lines: 0,
        }
    }

    /// Adds lines to the projection and checks the bound. `parent` and `func_of` describe a tree
    /// whose nodes are numbered parents first (stacks and call nodes are); `lines` gives the
    /// node of each line to write. One pass over the nodes, not the walk that writes (which
    /// cost 6 % of a PVM trace's emit).
    fn project(
        &mut self,
        p: &ProfileRef<'_>,
        parent: impl Fn(usize) -> u32 + Copy,
        func_of: impl Fn(u32) -> u32,
        nodes: usize,
        lines: impl Iterator<Item = usize> + Clone,
    ) -> Result<(), PluginError> {
        let len = self.path_lengths(p, parent, func_of, nodes);
        self.project_lines(&len, lines, || path_sums(nodes, parent, |_| 1))
    }

    /// The length of each node's path as written (see [`Self::project`]); empty when there is
    /// no bound to check.
    fn path_lengths(
        &self,
        p: &ProfileRef<'_>,
        parent: impl Fn(usize) -> u32,
        func_of: impl Fn(u32) -> u32,
        nodes: usize,
    ) -> Vec<u64> {
        if self.max_size.is_none() {
            return Vec::new();
        }
        let name_len: Vec<u64> = (0..p.n_funcs() as u32)
            .map(|f| p.func_name_str(f).len() as u64)
            .collect();
        // Each name and the `;` before it; the root has none.
        path_sums(nodes, &parent, |n| name_len[func_of(n as u32) as usize] + 1)
    }

    /// Adds the lines of `lines` (nodes, with their path lengths `len`) to the projection and
    /// checks the bound; `depths` gives every node's depth, for the error's text.
    fn project_lines(
        &mut self,
        len: &[u64],
        lines: impl Iterator<Item = usize> + Clone,
        depths: impl FnOnce() -> Vec<u64>,
    ) -> Result<(), PluginError> {
        if self.max_size.is_none() {
            return Ok(());
        }
        for n in lines.clone() {
            self.projected.line(len[n] - 1, self.cols.len());
        }
        if self.projected.bytes > self.max_size.unwrap_or(u64::MAX) as u128 {
            let depth = depths();
            let most = lines.map(|n| depth[n]).max();
            self.projected.deepest = self.projected.deepest.max(most.unwrap_or(0));
        }
        self.check_size()
    }

    /// Adds `bytes` and `lines`, counted by the caller as [`Self::project_lines`] counts them,
    /// to the projection and checks the bound (`lines_at`, the lines' nodes, and `depths` are
    /// used only for the error's text).
    fn add_projection(
        &mut self,
        bytes: u128,
        lines: u64,
        lines_at: impl Iterator<Item = usize>,
        depths: impl FnOnce() -> Vec<u64>,
    ) -> Result<(), PluginError> {
        self.projected.bytes += bytes;
        self.projected.lines += lines;
        if self.projected.bytes > self.max_size.unwrap_or(u64::MAX) as u128 {
            let depth = depths();
            let most = lines_at.map(|n| depth[n]).max();
            self.projected.deepest = self.projected.deepest.max(most.unwrap_or(0));
        }
        self.check_size()
    }

    /// [`Self::project`] over the profile's stack table.
    fn project_stacks(
        &mut self,
        p: &ProfileRef<'_>,
        lines: impl Iterator<Item = usize> + Clone,
    ) -> Result<(), PluginError> {
        self.project(
            p,
            |s| p.stack_prefix[s],
            |s| p.stack_func(s),
            p.n_stacks(),
            lines,
        )
    }

    /// An error when what was projected is over the bound, before any line is written.
    fn check_size(&self) -> Result<(), PluginError> {
        let (Some(max), pr) = (self.max_size, &self.projected) else {
            return Ok(());
        };
        if pr.bytes <= max as u128 {
            return Ok(());
        }
        Err(PluginError::unsupported(format!(
            "the folded output would take at least {}: {} lines, stacks up to {} frames deep, \
             each line holding its whole stack; over the {max}-byte bound. Shorten the stacks \
             (-T collapse-rec, -T max-depth:N), write a format that does not repeat them \
             (flamegraph, callgrind, firefox), or raise the bound: -O max-size=BYTES (0: none)",
            human_bytes(pr.bytes),
            pr.lines,
            pr.deepest
        )))
    }

    /// A line: `path`, then the first `cols.len()` of `values`, each at its column's scale. An
    /// error, before writing it, when it would end past the bound. The counts are appended to
    /// `path` so that the line is one write, not three (then taken off again).
    fn line(
        &mut self,
        path: &mut Vec<u8>,
        values: [i64; 2],
        out: &mut impl Write,
    ) -> Result<(), PluginError> {
        self.num.clear();
        for (&value, &decimals) in values.iter().zip(&self.decimals) {
            self.num.push(' ');
            let start = self.num.len();
            write_fixed(&mut self.num, value, decimals);
            // `0.50` → `0.5`, `2.00` → `2`: what the reader reads back is written back the same.
            if decimals > 0 {
                let keep = start
                    + self.num[start..]
                        .trim_end_matches('0')
                        .trim_end_matches('.')
                        .len();
                self.num.truncate(keep);
            }
        }
        if let Some(max) = self.max_size {
            let len = path.len() as u64 + self.num.len() as u64 + 1;
            self.written = self.written.saturating_add(len);
            self.lines += 1;
            if self.written > max {
                return Err(PluginError::unsupported(format!(
                    "the folded output would take more than {max} bytes, the bound: line {} would \
                     end at byte {}. Shorten the stacks (-T collapse-rec, -T max-depth:N), write \
                     a format that does not repeat them (flamegraph, callgrind, firefox), or raise \
                     the bound: -O max-size=BYTES (0: none)",
                    self.lines, self.written
                )));
            }
        }
        let len = path.len();
        path.extend_from_slice(self.num.as_bytes());
        path.push(b'\n');
        let written = out.write_all(path);
        path.truncate(len);
        Ok(written?)
    }

    /// One line per node with `has`, depth first, siblings in line-sort order (`order`);
    /// `func_of` gives a node's func.
    fn write(
        &mut self,
        p: &ProfileRef<'_>,
        order: &Ordered,
        func_of: FuncOf<'_>,
        selfv: &[&[i64]],
        has: &[bool],
        out: &mut impl Write,
    ) -> Result<(), PluginError> {
        let second = selfv.get(1).copied().unwrap_or_default();
        let names = WrittenNames::new(p);
        // Length of the path before each depth's name, so a sibling truncates, not rebuilds.
        let mut prefix_len: Vec<usize> = Vec::new();
        // (node, depth), the next one to write last.
        let mut todo: Vec<(u32, u32)> = order.roots().iter().rev().map(|&r| (r, 0)).collect();
        let mut path = std::mem::take(&mut self.path);
        while let Some((node, depth)) = todo.pop() {
            let (i, depth) = (node as usize, depth as usize);
            prefix_len.truncate(depth);
            path.truncate(prefix_len.last().copied().unwrap_or(0));
            if depth > 0 {
                path.push(b';');
            }
            names.push(&mut path, func_of.get(node));
            prefix_len.push(path.len());
            if has[i] {
                let values = [selfv[0][i], second.get(i).copied().unwrap_or(0)];
                self.line(&mut path, values, out)?;
            }
            let below = depth as u32 + 1;
            let kids = order.children(i);
            // What each child's visit reads starts loading now: its siblings wait on `todo`
            // while the subtrees before them are written (the walk's loads are cache misses).
            for &c in kids {
                func_of.prefetch(c);
                let c = c as usize;
                prefetch_index(has, c);
                prefetch_index(selfv[0], c);
                prefetch_index(&order.start, c);
            }
            todo.extend(kids.iter().rev().map(|&c| (c, below)));
        }
        self.path = path;
        Ok(())
    }

    /// One line per node of `nodes`, in that order: each node's path up from it (`parent`),
    /// written as [`Self::write`] writes it.
    fn write_nodes(
        &mut self,
        names: &WrittenNames,
        nodes: &[u32],
        parent: impl Fn(usize) -> u32,
        func_of: impl Fn(u32) -> u32,
        selfv: &[&[i64]],
        out: &mut impl Write,
    ) -> Result<(), PluginError> {
        let second = selfv.get(1).copied().unwrap_or_default();
        let mut path = std::mem::take(&mut self.path);
        let mut chain: Vec<u32> = Vec::new();
        for &node in nodes {
            chain.clear();
            let mut n = node;
            while n != NONE {
                chain.push(n);
                n = parent(n as usize);
            }
            path.clear();
            for (depth, &n) in chain.iter().rev().enumerate() {
                if depth > 0 {
                    path.push(b';');
                }
                names.push(&mut path, func_of(n));
            }
            let i = node as usize;
            let values = [selfv[0][i], second.get(i).copied().unwrap_or(0)];
            self.line(&mut path, values, out)?;
        }
        self.path = path;
        Ok(())
    }

    /// Time order: one line per call (with exact calls) or per run of equal stacks.
    fn flamechart(&mut self, p: &ProfileRef<'_>, out: &mut impl Write) -> Result<(), PluginError> {
        let calls = p
            .value_type_index("calls")
            .filter(|&c| p.value_types[c].kind == ValueKind::Count);
        // (stack, values) per output line, in order of first appearance.
        let mut lines: Vec<(u32, [i64; 2])> = Vec::new();
        // Open calls: (stack, line) from the outermost in, each the caller of the next (line
        // `usize::MAX`: a caller not seen starting, with no line of its own yet).
        let mut open: Vec<(u32, usize)> = Vec::new();
        // Each stack's depth (a prefix comes before its stacks).
        let mut depth: Vec<u32> = Vec::with_capacity(p.n_stacks());
        for &pre in p.stack_prefix {
            let d = match pre {
                NONE => 0,
                pre => depth[pre as usize] + 1,
            };
            depth.push(d);
        }
        // Stacks between an open call and a sample's leaf, innermost first.
        let mut chain: Vec<u32> = Vec::new();
        let first = p.sample_values[self.cols[0]];
        let second = self.cols.get(1).map_or(&[][..], |&c| p.sample_values[c]);
        // The first line of the current thread (kernel run): nothing continues across runs.
        let (mut thread, mut run_start) = (u32::MAX, 0);
        for (i, (&s, &v0)) in p.sample_stack.iter().zip(first).enumerate() {
            let v = [v0, second.get(i).copied().unwrap_or(0)];
            let t = p.sample_thread_of(i);
            if t != thread {
                open.clear();
                (thread, run_start) = (t, lines.len());
            }
            let add = |sum: &mut [i64; 2]| -> Result<(), PluginError> {
                for (cell, v) in sum.iter_mut().zip(v) {
                    *cell = cell.checked_add(v).ok_or_else(|| overflow(*cell, v))?;
                }
                Ok(())
            };
            match calls {
                Some(c) if p.sample_values[c][i] > 0 => {
                    // A new call of the leaf: close what is not its caller, nor a caller's.
                    let caller = p.stack_prefix[s as usize];
                    if caller == NONE {
                        open.clear();
                    } else {
                        let common = open_in(&open, caller, &depth, p.stack_prefix, &mut chain);
                        open.truncate(common);
                        if common == 0 {
                            // The caller was not seen opening (a trace cut at its start).
                            open.push((caller, usize::MAX));
                        } else {
                            // Callers between the deepest open one and the leaf start here
                            // (after `-T collapse-rec`), each a line before its callees', as
                            // the SVG flame chart draws them.
                            for &c in chain.iter().rev() {
                                open.push((c, lines.len()));
                                lines.push((c, [0, 0]));
                            }
                        }
                    }
                    open.push((s, lines.len()));
                    lines.push((s, v));
                }
                Some(_) => {
                    // More of a call under way: back to the deepest open call the sample is
                    // in (its own, or a caller), as the SVG flame chart reads it. The calls
                    // inside that one have ended; a leaf not open starts a line of its own
                    // (after `-T collapse-rec`, a caller resumes with no new call), and so
                    // does each caller between it and that open call, before it, as the SVG
                    // draws them: the lines stay a pre-order of the calls.
                    let common = open_in(&open, s, &depth, p.stack_prefix, &mut chain);
                    open.truncate(common);
                    match (chain.split_first(), open.last_mut()) {
                        (None, Some((_, l))) if *l != usize::MAX => add(&mut lines[*l].1)?,
                        (None, Some((_, l))) => {
                            *l = lines.len();
                            lines.push((s, v));
                        }
                        (Some((_, between)), _) => {
                            if common > 0 {
                                for &c in between.iter().rev() {
                                    open.push((c, lines.len()));
                                    lines.push((c, [0, 0]));
                                }
                            }
                            open.push((s, lines.len()));
                            lines.push((s, v));
                        }
                        (None, None) => {
                            open.push((s, lines.len()));
                            lines.push((s, v));
                        }
                    }
                }
                None => match (lines.len() > run_start, lines.last_mut()) {
                    (true, Some(last)) if last.0 == s => add(&mut last.1)?,
                    _ => lines.push((s, v)),
                },
            }
        }
        let stacks = lines.iter().map(|&(s, _)| s as usize);
        self.project_stacks(p, stacks)?;
        let written = WrittenNames::new(p);
        let mut names: Vec<u32> = Vec::new();
        let mut path = std::mem::take(&mut self.path);
        for (s, v) in lines {
            names.clear();
            let mut cur = s;
            while cur != NONE {
                names.push(p.stack_func(cur));
                cur = p.stack_prefix[cur as usize];
            }
            path.clear();
            for (k, &f) in names.iter().rev().enumerate() {
                if k > 0 {
                    path.push(b';');
                }
                written.push(&mut path, f);
            }
            self.line(&mut path, v, out)?;
        }
        self.path = path;
        Ok(())
    }
}

/// How many of the `open` calls (a chain, outermost first) stack `s` is in: those that are
/// `s` or its callers. `chain` gets the stacks from `s` up to, not including, the deepest of
/// them, innermost first (empty when `s` is open itself). Linear in the calls it skips and
/// the stacks it collects, so a run of samples costs what it opens and closes.
fn open_in(
    open: &[(u32, usize)],
    s: u32,
    depth: &[u32],
    prefix: &[u32],
    chain: &mut Vec<u32>,
) -> usize {
    chain.clear();
    let Some(&(outer, _)) = open.first() else {
        chain.push(s);
        return 0;
    };
    let (base, ds) = (depth[outer as usize], depth[s as usize]);
    if ds < base {
        chain.push(s);
        return 0;
    }
    // Open call k is at depth base + k: the one that could hold `s` at most is at its depth.
    let mut common = open.len().min((ds - base) as usize + 1);
    let mut n = s;
    let mut d = (ds - base) as usize;
    while d + 1 > common {
        chain.push(n);
        n = prefix[n as usize];
        d -= 1;
    }
    // `n` is the ancestor of `s` at open call `common - 1`'s depth: back up until they agree.
    while common > 0 && open[common - 1].0 != n {
        chain.push(n);
        n = prefix[n as usize];
        common -= 1;
    }
    if common == 0 {
        chain.clear();
        chain.push(s);
    }
    common
}

/// Each func's rank when names are sorted as the lines that hold them are (`name;` byte
/// order), names as written ([`WrittenNames`]: `42` alone is written `_42`, which sorts after
/// `B`), so the lines come in `LC_ALL=C sort` order and reading them back writes them in the
/// same order; equal written names share a rank.
fn name_ranks(p: &ProfileRef<'_>) -> Vec<u32> {
    let written = WrittenNames::new(p);
    let name = |f: u32| written.get(f);
    let order = order_by_bytes(p.n_funcs(), name, Some(b';'));
    let mut rank = vec![0u32; order.len()];
    let mut r = 0u32;
    for k in 1..order.len() {
        if written.get(order[k - 1]) != written.get(order[k]) {
            r += 1;
        }
        rank[order[k] as usize] = r;
    }
    rank
}

/// True for the bytes a name cannot hold in folded stacks: `;` separates frames, and a line
/// break would end the line.
fn unwritable(b: u8) -> bool {
    matches!(b, b';' | b'\n' | b'\r')
}

/// Where a func's name starts a line ([`ROOT`]) or ends its stack ([`LEAF`]) on some line.
type Places = u8;
/// The func is a root (its name starts the lines of its stacks).
const ROOT: Places = 1;
/// The func is the leaf of some sample (its name ends that line's stack, before the count).
const LEAF: Places = 2;
/// The func is on the stack of some sample: its name is written.
const WRITTEN: Places = 4;
/// The func is a whole stack of some sample, root and leaf (its name alone before the count).
const ALONE: Places = 8;

/// True when a name, at the start of a line, would not read back as itself: it is empty (the
/// line would be a count without a stack), a comment (`#`, or `#` and whitespace), a number
/// (`42 7` alone reads as two counts and no stack), or starts with whitespace or a byte-order
/// mark (readers trim both).
fn troubles_a_root(name: &[u8]) -> bool {
    name.first().is_none_or(u8::is_ascii_whitespace)
        || name.starts_with(profconv_plugin::UTF8_BOM)
        || needs_root_mark(name)
}

/// True when a name, before a line's count, would not read back as itself: it ends with
/// whitespace (trimmed) or in a space or tab and a number (the line's stack would end in what
/// reads as a count: the first line of a file so written reads as a differential
/// `STACK BEFORE AFTER` line).
fn troubles_a_leaf(name: &[u8]) -> bool {
    name.last().is_some_and(|&last| {
        last.is_ascii_whitespace()
            || (last.is_ascii_digit() || last == b'.') && spaced_count(name).is_some()
    })
}

/// Per func, its [`Places`] where they matter: a root's, if its name troubles a root, and a
/// leaf's (the func of some sample's stack), if its name troubles a leaf; and [`WRITTEN`] for a
/// func on some sample's stack (whose name is written), if its name needs any rewriting. Such
/// names are rare, so the passes over the stacks and samples are made only when some name has
/// them. Only the stacks of samples count: a func left in the table by a transform
/// (`-T focus-func`), or a stack no sample is on, writes nothing.
fn places(p: &ProfileRef<'_>) -> Vec<Places> {
    // What each name would need, kept where the func is in that place.
    let need: Vec<Places> = (0..p.n_funcs() as u32)
        .map(|f| {
            let name = p.func_name_str(f).as_bytes();
            let root = if troubles_a_root(name) { ROOT } else { 0 };
            let leaf = if troubles_a_leaf(name) { LEAF } else { 0 };
            let alone = if troubles_alone(name) { ALONE } else { 0 };
            let rewritten = root | leaf | alone != 0 || name.iter().copied().any(unwritable);
            root | leaf | alone | if rewritten { WRITTEN } else { 0 }
        })
        .collect();
    if need.iter().all(|&n| n == 0) {
        return need;
    }
    let mut at = vec![0; need.len()];
    // The stacks of samples and their prefixes: what is written.
    let mut seen = vec![false; p.n_stacks()];
    for &s in p.sample_stack.iter() {
        let f = p.stack_func(s) as usize;
        at[f] |= need[f] & LEAF;
        if p.stack_prefix[s as usize] == NONE {
            at[f] |= need[f] & ALONE;
        }
        let mut s = s;
        while !std::mem::replace(&mut seen[s as usize], true) {
            let f = p.stack_func(s) as usize;
            at[f] |= need[f] & WRITTEN;
            let prefix = p.stack_prefix[s as usize];
            if prefix == NONE {
                at[f] |= need[f] & ROOT;
                break;
            }
            s = prefix;
        }
    }
    at
}

/// True when a name is written otherwise than it is: it holds a byte that cannot be written
/// ([`unwritable`]), or it troubles a root ([`troubles_a_root`]) or a leaf
/// ([`troubles_a_leaf`]) and the func is one ([`Places`]). Whitespace inside a stack is written
/// as it is (`[T; N]` in a Rust name, split at its `;`, gives frames that start with a space).
fn needs_rewrite(name: &[u8], at: Places) -> bool {
    at & ROOT != 0 && troubles_a_root(name)
        || at & LEAF != 0 && troubles_a_leaf(name)
        || name.iter().copied().any(unwritable)
}

/// Where the last space or tab of `name` is, when what follows it is a count. A line break
/// counts as a space: it is written as one (`retry\n2` is written `retry 2`, which would end
/// its line in two counts).
fn spaced_count(name: &[u8]) -> Option<usize> {
    let sp = name
        .iter()
        .rposition(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
    count(&name[sp + 1..]).is_some().then_some(sp)
}

/// Every func's name as written ([`push_name`]), computed once: the same on every line.
struct WrittenNames {
    text: Vec<u8>,
    end: Vec<usize>,
}

impl WrittenNames {
    fn new(p: &ProfileRef<'_>) -> Self {
        let at = places(p);
        let mut text = Vec::new();
        let mut end = Vec::with_capacity(p.n_funcs() + 1);
        end.push(0);
        for (f, &at) in at.iter().enumerate() {
            push_name(&mut text, p.func_name_str(f as u32), at);
            end.push(text.len());
        }
        WrittenNames { text, end }
    }

    /// `func`'s name as written.
    #[inline]
    fn get(&self, func: u32) -> &[u8] {
        let f = func as usize;
        &self.text[self.end[f]..self.end[f + 1]]
    }

    /// Appends `func`'s name as written to `path`.
    #[inline]
    fn push(&self, path: &mut Vec<u8>, func: u32) {
        let f = func as usize;
        path.extend_from_slice(&self.text[self.end[f]..self.end[f + 1]]);
    }
}

/// Appends a frame name as it can be written ([`needs_rewrite`]; `at`: its [`Places`]): a `;`
/// (the frame separator: Rust's `<[u8; 8]>`, names from other formats) becomes `:`, as
/// collapsers write it, and line breaks become spaces. A root's name that is empty, a comment
/// or a number gets [`ROOT_MARK`] before it; otherwise its leading whitespace and byte-order
/// marks become `_`. A leaf's trailing whitespace becomes `_`, and so does the space or tab
/// before a number that ends it (`attempt 3` → `attempt_3`). A func's name is written so on
/// every line, root or not. [`rewritten_names`] and [`marked_roots`] count the names changed,
/// for the warnings.
fn push_name(path: &mut Vec<u8>, name: &str, at: Places) {
    let name = name.as_bytes();
    if !needs_rewrite(name, at) {
        path.extend_from_slice(name);
        return;
    }
    let start = path.len();
    let marked = is_marked(name, at);
    if marked {
        path.push(ROOT_MARK);
    }
    path.extend(name.iter().map(|&b| match b {
        b';' => b':',
        b'\n' | b'\r' => b' ',
        b => b,
    }));
    if at & ROOT != 0 && !marked {
        let mut i = start;
        loop {
            if path[i..].starts_with(profconv_plugin::UTF8_BOM) {
                path.splice(i..i + profconv_plugin::UTF8_BOM.len(), [b'_']);
            } else if path.get(i).is_some_and(u8::is_ascii_whitespace) {
                path[i] = b'_';
            } else {
                break;
            }
            i += 1;
        }
    }
    let written = &mut path[start..];
    if at & LEAF != 0 {
        for b in written.iter_mut().rev() {
            if !b.is_ascii_whitespace() {
                break;
            }
            *b = b'_';
        }
        if let Some(sp) = spaced_count(written) {
            written[sp] = b'_';
        }
    }
}

/// Every func's name as the writer writes it, by func id (see `push_name`): what a reader of
/// the output sees, for checks that compare a profile with its folded stacks read back.
pub fn written_names(p: &ProfileRef<'_>) -> Vec<String> {
    let names = WrittenNames::new(p);
    names
        .end
        .windows(2)
        .map(|w| String::from_utf8_lossy(&names.text[w[0]..w[1]]).into_owned())
        .collect()
}

/// How many names of the written funcs folded stacks cannot hold as they are, other than the
/// roots [`marked_roots`] counts (see [`push_name`]); a name counts once, however many funcs
/// have it (callgrind's code inlined from other files is a func of the same name per file).
pub fn rewritten_names(p: &ProfileRef<'_>) -> usize {
    let at = places(p);
    let mut names = std::collections::HashSet::new();
    for f in (0..p.n_funcs()).filter(|&f| at[f] & WRITTEN != 0) {
        let name = p.func_name_str(f as u32).as_bytes();
        if name.iter().copied().any(unwritable)
            || at[f] & ROOT != 0 && troubles_a_root(name) && !needs_root_mark(name)
            || at[f] & LEAF != 0 && troubles_a_leaf(name)
        {
            names.insert(name);
        }
    }
    names.len()
}

/// Written before the name of a root that would make its lines comments (`#`, or `#` and
/// whitespace: austin's `# key: value`), so that they read back with their samples, and before
/// a root named by a number (`42`, whose line of its own would read as two counts and no stack)
/// or with no name (its line would be a count without a stack); on every line, also where the
/// func is called.
const ROOT_MARK: u8 = b'_';

/// True for a root name that may be written with [`ROOT_MARK`] before it ([`is_marked`]).
fn needs_root_mark(name: &[u8]) -> bool {
    is_comment(name) || troubles_alone(name)
}

/// True for a name that cannot be a whole stack: empty (the line would be a count without a
/// stack) or a number (`42 7` reads as two counts). As a root with callees it reads back
/// (`42;f 7`, `;f 7`).
fn troubles_alone(name: &[u8]) -> bool {
    name.is_empty() || count(name).is_some()
}

/// True when a func's name is written with [`ROOT_MARK`] before it: it is a root and a comment
/// (every line of its stacks would be skipped), or it is a whole stack alone and empty or a
/// number.
fn is_marked(name: &[u8], at: Places) -> bool {
    at & ROOT != 0 && is_comment(name) || at & ALONE != 0 && troubles_alone(name)
}

/// How many names of roots are written with [`ROOT_MARK`] before them ([`is_marked`]).
pub fn marked_roots(p: &ProfileRef<'_>) -> usize {
    let at = places(p);
    let names: std::collections::HashSet<&str> = (0..p.n_funcs())
        .filter(|&f| is_marked(p.func_name_str(f as u32).as_bytes(), at[f]))
        .map(|f| p.func_name_str(f as u32))
        .collect();
    names.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::testing::{XorShift, trace};
    use profconv_plugin::ir::{Profile, ProfileBuilder, ValueKind};

    fn emit(p: &Profile, opts: EmitOptions<'_>) -> String {
        let mut out = Vec::new();
        emit_folded(&p.view(), &mut out, opts).unwrap();
        String::from_utf8(out).unwrap()
    }

    const CHART: EmitOptions<'static> = EmitOptions {
        value: None,
        per_thread: false,
        flamechart: true,
        max_size: None,
    };

    #[test]
    fn flamechart_of_seed_000_is_one_line_per_call() {
        let p = trace(&["C f 0", "C g 10", "C h 30", "E 60", "E 100", "E 160"]);
        assert_eq!(emit(&p, CHART), "f 70\nf;g 60\nf;g;h 30\n");
        assert_eq!(emit(&p, EmitOptions::default()), "f 70\nf;g 60\nf;g;h 30\n");
    }

    #[test]
    fn back_to_back_calls_stay_apart_and_recursion_keeps_its_levels() {
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
            emit(&p, CHART),
            "main 6\nmain;g 3\nmain;g 12\nmain;f 15\nmain;f;f 4\nmain;f;f;leaf 1\n"
        );
        assert_eq!(
            emit(&p, EmitOptions::default()),
            "main 6\nmain;f 15\nmain;f;f 4\nmain;f;f;leaf 1\nmain;g 15\n"
        );
    }

    /// After `-T collapse-rec` a caller resumes with no new call (`main`, back from the inner
    /// `main` that became itself): its time goes to its open call's line, as the SVG flame
    /// chart draws one call. The calls open inside were all closed, so the first `main` was cut
    /// into a third call (and a chain 20 000 deep of f0;f1;f2 wrote 13 333 root `f0` lines).
    /// And calls do not continue across kernel runs (after `-T invert`, which zeroes calls,
    /// two runs' `kernel_run` were one line).
    #[test]
    fn a_resumed_caller_continues_its_call_and_runs_stay_apart() {
        use profconv_plugin::ir::transform::{Transform, apply};
        let p = trace(&[
            "C main 0",
            "C g 10",
            "C main 20",
            "C h 30",
            "E 40",
            "E 50",
            "E 60",
            "E 70",
            "C main 70",
            "E 80",
        ]);
        let (collapsed, _) = apply(&p.view(), &Transform::CollapseRecursion(None)).unwrap();
        assert_eq!(
            emit(&collapsed, CHART),
            "main 40\nmain;g 10\nmain;h 10\nmain;g 10\nmain 10\n"
        );
        let mut events = Vec::new();
        for i in 0..300 {
            events.push(format!("C f{} {i}", i % 3));
        }
        for i in 0..300 {
            events.push(format!("E {}", 300 + i));
        }
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        let (collapsed, _) =
            apply(&trace(&events).view(), &Transform::CollapseRecursion(None)).unwrap();
        let chart = emit(&collapsed, CHART);
        assert_eq!(chart.lines().filter(|l| l.starts_with("f0 ")).count(), 1);
        assert_eq!(chart.lines().next(), Some("f0 200"));
        let runs = trace(&[
            "R run1",
            "C kernel_run 0",
            "E 10",
            "R run2",
            "C kernel_run 30",
            "E 40",
        ]);
        let (inverted, _) = apply(&runs.view(), &Transform::Invert).unwrap();
        assert_eq!(emit(&inverted, CHART), "kernel_run 10\nkernel_run 10\n");
    }

    /// A flame chart of samples with a calls column, where some calls were never seen starting
    /// (no sample with a call on them): callers between an open call and a deeper sample start
    /// there (each a line) and stay open, so the outer call continues after a new call under
    /// them; a trace cut inside a call (its first sample deep, its caller not a root) continues
    /// that call; a sample on a sibling of the open call, with no call, starts a line of its
    /// own.
    #[test]
    fn a_flamechart_follows_calls_it_did_not_see_start() {
        let chart = |rows: &[(&[&str], i64)]| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_value_type("calls", "count", ValueKind::Count);
            b.set_flags(profconv_plugin::ir::flags::ORDERED);
            for &(names, calls) in rows {
                let s = b.stack_of_names(names);
                b.push_sample(s, None, &[1, calls]);
            }
            emit(&b.finish(), CHART)
        };
        // `a;b` is not seen called: it starts with `a;b;c` (a line of 0 before its callees',
        // as the SVG flame chart draws its frame) and stays open under `a` while `e` is
        // called from it, and `a` then continues its first call.
        assert_eq!(
            chart(&[
                (&["a"], 1),
                (&["a", "b", "c"], 0),
                (&["a", "b", "e"], 1),
                (&["a"], 0)
            ]),
            "a 2\na;b 0\na;b;c 1\na;b;e 1\n"
        );
        // Cut inside `a;b`: the call of `c` continues after its callee `d`.
        assert_eq!(
            chart(&[
                (&["a", "b", "c"], 1),
                (&["a", "b", "c", "d"], 0),
                (&["a", "b", "c"], 0)
            ]),
            "a;b;c 2\na;b;c;d 1\n"
        );
        // `c` runs after `b` returned, not seen called: a line of its own; `a` continues.
        assert_eq!(
            chart(&[(&["a"], 1), (&["a", "b"], 1), (&["a", "c"], 0), (&["a"], 0)]),
            "a 2\na;b 1\na;c 1\n"
        );
        // After a cut trace, a sample under another root shares no open call.
        assert_eq!(
            chart(&[(&["a", "b", "c"], 1), (&["x", "y"], 0), (&["x", "y"], 0)]),
            "a;b;c 1\nx;y 2\n"
        );
    }

    /// An ordered profile of ticks and calls, one sample per row: (stack, ticks, calls).
    fn ticks_and_calls(rows: &[(&[&str], i64, i64)]) -> Profile {
        let mut b = ProfileBuilder::new();
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        b.add_value_type("calls", "count", ValueKind::Count);
        b.set_flags(profconv_plugin::ir::flags::ORDERED);
        for &(names, ticks, calls) in rows {
            let s = b.stack_of_names(names);
            b.push_sample(s, None, &[ticks, calls]);
        }
        b.finish()
    }

    /// After `-T collapse-rec`, a caller resumes on a stack whose callers between it and the
    /// deepest open call were never seen called (`a;b;x;a` collapsed to `a`, then `a;b;x`
    /// again): those callers start there, as the SVG flame chart draws them, so each gets a
    /// line before its callees and the lines stay a pre-order of the calls, the debugger's
    /// flame chart that the PVM reader reads back.
    #[test]
    fn callers_opened_by_a_resumed_sample_get_their_line_before_their_callees() {
        let p = ticks_and_calls(&[
            (&["k"], 1, 1),
            (&["k", "b"], 1, 1),
            (&["k", "b", "c"], 1, 1),
            (&["k"], 1, 0),
            (&["k", "y"], 1, 1),
            (&["k"], 1, 0),
            (&["k", "b", "c"], 1, 0),
            (&["k", "b"], 1, 0),
            (&["k"], 1, 0),
        ]);
        assert_eq!(
            emit(&p, CHART),
            "k 4\nk;b 1\nk;b;c 1\nk;y 1\nk;b 1\nk;b;c 1\n"
        );
    }

    /// The same with a new call whose caller was never seen called (`a;b;x;a` collapsed to
    /// `a`, then `a;b;x;y` called from the inner `a`'s caller): `a;b` and `a;b;x` start there
    /// under the open `a`, which continues its one call; nothing is read as a cut trace.
    #[test]
    fn a_new_call_under_callers_not_open_opens_them_under_the_open_call() {
        let p = ticks_and_calls(&[
            (&["a"], 1, 1),
            (&["a", "b"], 1, 1),
            (&["a", "b", "x"], 1, 1),
            (&["a"], 1, 0),
            (&["a", "b", "x", "y"], 2, 1),
            (&["a", "b", "x"], 1, 0),
            (&["a", "b"], 1, 0),
            (&["a"], 1, 0),
        ]);
        assert_eq!(
            emit(&p, CHART),
            "a 3\na;b 1\na;b;x 1\na;b 1\na;b;x 1\na;b;x;y 2\n"
        );
    }

    /// Without a calls column, a flame chart joins a run of samples of one stack into one
    /// line, but never across threads (kernel runs).
    #[test]
    fn a_flamechart_without_calls_joins_samples_within_a_thread_only() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.set_flags(profconv_plugin::ir::flags::ORDERED);
        let (t1, t2) = (b.add_thread("run1"), b.add_thread("run2"));
        for (t, names) in [(t1, &["a", "b"][..]), (t1, &["a", "b"]), (t2, &["a", "b"])] {
            b.set_thread(t);
            let s = b.stack_of_names(names);
            b.push_sample(s, None, &[1]);
        }
        assert_eq!(emit(&b.finish(), CHART), "a;b 2\na;b 1\n");
    }

    #[test]
    fn per_thread_blocks_follow_thread_order() {
        let p = trace(&[
            "R run1", "C k 0", "C b 1", "E 3", "C a 3", "E 4", "E 10", "R run2", "C k 10",
            "C a 11", "E 15", "E 16",
        ]);
        let per_thread = EmitOptions {
            per_thread: true,
            ..Default::default()
        };
        assert_eq!(emit(&p, per_thread), "k 7\nk;a 1\nk;b 2\nk 2\nk;a 4\n");
        assert_eq!(emit(&p, EmitOptions::default()), "k 9\nk;a 5\nk;b 2\n");
        // Many runs: each block holds its own run's lines only, in line order (a thread's work
        // is its own samples, not the whole tree: 80 000 runs took 11 s when it was).
        let mut events = Vec::new();
        for r in 0..3000 {
            let t = 10 * r;
            events.push(format!("R run{r}"));
            events.push(format!("C k {t}"));
            events.push(format!("C f{} {}", r % 7, t + 1));
            events.push(format!("E {}", t + 1 + r % 3));
            events.push(format!("E {}", t + 5));
        }
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        let text = emit(&trace(&events), per_thread);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 * 3000);
        for r in 0..3000 {
            // A call of no ticks keeps its line (its call is counted).
            let inner = r % 3;
            let want = [format!("k {}", 5 - inner), format!("k;f{} {inner}", r % 7)];
            assert_eq!(lines[2 * r..2 * r + 2], want, "run {r}");
        }
    }

    /// Sums that do not fit in 64 bits are an error in every mode, as in the call tree, never
    /// a wrap, a saturated count or a panic.
    #[test]
    fn sums_that_overflow_are_an_error_in_every_mode() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let run1 = b.add_thread("run1");
        let f = b.func("f");
        let fr = b.frame(f);
        let s = b.stack(NONE, fr);
        // Two rows of one stack in one thread: one flame-chart run, one per-thread line.
        b.push_sample(s, Some(0), &[i64::MAX]);
        b.push_sample(s, Some(1), &[1]);
        b.add_thread("run2");
        b.push_sample(s, Some(2), &[1]);
        b.set_thread(run1);
        let p = b.finish();
        for opts in [
            CHART,
            EmitOptions {
                per_thread: true,
                ..Default::default()
            },
            EmitOptions::default(),
        ] {
            let mut out = Vec::new();
            let e = emit_folded(&p.view(), &mut out, opts).expect_err("an overflow");
            assert!(
                e.message.contains("does not fit in 64 bits"),
                "{opts:?}: {e}"
            );
        }
    }

    /// True when the stack table is written as it is.
    fn is_call_tree(p: &Profile) -> bool {
        let v = p.view();
        StackTree::new(&v, &[0], &name_ranks(&v), false)
            .unwrap()
            .is_some()
    }

    /// The output from the stack table and from the call tree.
    fn both_ways(p: &Profile) -> (String, String) {
        let v = p.view();
        let way = |try_stacks| {
            let mut out = Vec::new();
            let mut w = LineWriter::new(&v, vec![0]);
            merged(&mut w, &v, &mut out, try_stacks).unwrap();
            String::from_utf8(out).unwrap()
        };
        (way(true), way(false))
    }

    /// Many siblings of one name and different funcs (a static `init` in each of many files,
    /// all roots of a callgrind file) are checked for a repeated func in work linear in their
    /// number: each was compared with every later one (80 000 took 6 s).
    #[test]
    fn siblings_of_one_name_are_checked_in_linear_work() {
        let n = 2000;
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        for i in 0..n {
            let f = b.func_with("init", Some(&format!("s{i}.c")), None, None);
            let fr = b.frame(f);
            let s = b.stack(NONE, fr);
            b.add_to_stack(s, &[1]).unwrap();
        }
        let p = b.finish();
        SIBLING_CHECKS.with(|c| c.set(0));
        assert!(is_call_tree(&p));
        let checks = SIBLING_CHECKS.with(|c| c.get());
        assert!(checks <= 2 * n, "{checks} checks for {n} siblings");
        let (stacks, tree) = both_ways(&p);
        assert_eq!(stacks, tree);
        assert_eq!(stacks.lines().count(), n);
    }

    /// Self values that fit and a total that does not: an error either way, as the call tree
    /// gives (the stack table's check of the totals is skipped only when the values' sum fits).
    #[test]
    fn a_total_beyond_64_bits_is_an_error_from_the_stack_table_too() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[1 << 62]).unwrap();
        b.add_stack(&["a", "b"], &[1 << 62]).unwrap();
        let p = b.finish();
        let v = p.view();
        let e = StackTree::new(&v, &[0], &name_ranks(&v), false)
            .err()
            .unwrap();
        assert!(e.to_string().contains("does not fit in 64 bits"), "{e}");
        for try_stacks in [true, false] {
            let mut w = LineWriter::new(&v, vec![0]);
            let e = merged(&mut w, &v, &mut Vec::new(), try_stacks).unwrap_err();
            assert!(e.to_string().contains("does not fit in 64 bits"), "{e}");
        }
        // Their sum fits: no error, and the same lines both ways.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[1 << 61]).unwrap();
        b.add_stack(&["a", "b"], &[1 << 61]).unwrap();
        let (stacks, tree) = both_ways(&b.finish());
        assert_eq!(stacks, tree);
        assert_eq!(stacks, format!("a {}\na;b {}\n", 1u64 << 61, 1u64 << 61));
    }

    /// Rows that are the stacks one for one (an aggregated PVM trace) are used as they are;
    /// rows in another order, or fewer, are summed per stack; the lines are the same.
    #[test]
    fn rows_one_per_stack_are_the_self_values_as_they_are() {
        let build = |order: &[&[&str]]| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("ticks", "ticks", ValueKind::Weight);
            for names in order {
                b.add_stack(names, &[names.len() as i64 * 10]).unwrap();
            }
            b.finish()
        };
        let in_order = build(&[&["a"], &["a", "b"], &["a", "b", "c"], &["d"]]);
        let other = build(&[&["a", "b", "c"], &["d"], &["a", "b"], &["a"]]);
        assert_eq!(in_order.samples.stack, vec![0, 1, 2, 3]);
        assert_ne!(other.samples.stack, vec![0, 1, 2, 3]);
        for (p, borrowed) in [(&in_order, true), (&other, false)] {
            let v = p.view();
            let tree = StackTree::new(&v, &[0], &name_ranks(&v), false)
                .unwrap()
                .unwrap();
            assert_eq!(matches!(tree.selfv[0], Cow::Borrowed(_)), borrowed);
            assert!(tree.has.iter().all(|&h| h));
            let (stacks, calls) = both_ways(p);
            assert_eq!(stacks, calls);
            assert_eq!(stacks, "a 10\na;b 20\na;b;c 30\nd 10\n");
        }
    }

    #[test]
    fn the_stack_table_gives_the_call_trees_lines() {
        // Random stacks over few names (many shared prefixes, siblings, equal names at several
        // depths), deterministic.
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut next = |n: u64| rng.below(n);
        for round in 0..20 {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            for _ in 0..200 {
                let depth = 1 + next(8) as usize;
                let names: Vec<String> = (0..depth)
                    .map(|_| ["a", "b", "a-b", "B", "c;d", "x y"][next(6) as usize].to_string())
                    .collect();
                b.add_stack(&names, &[next(5) as i64 - (round % 2)])
                    .unwrap();
            }
            let p = b.finish();
            assert!(is_call_tree(&p));
            let (stacks, tree) = both_ways(&p);
            assert_eq!(stacks, tree, "round {round}");
            assert!(!stacks.is_empty());
        }
    }

    /// The stack table's projection of the output's size (lines counted below each stack) is
    /// the one made from each line's path length, on random stack tables with stacks that have
    /// no line of their own and with one or two written columns.
    #[test]
    fn the_counted_projection_is_the_path_lengths_one() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n);
        for round in 0..20 {
            let mut b = ProfileBuilder::new();
            b.add_value_type("before", "count", ValueKind::Weight);
            b.add_value_type("after", "count", ValueKind::Weight);
            for _ in 0..100 {
                let depth = 1 + next(8) as usize;
                let names: Vec<String> = (0..depth)
                    .map(|_| ["a", "bb", "", "c;d", "long name", "é"][next(6) as usize].to_string())
                    .collect();
                let v = next(1000) as i64;
                b.add_stack(&names, &[v, v / 2]).unwrap();
            }
            let p = b.finish();
            let v = p.view();
            for cols in [vec![0], vec![0, 1]] {
                let tree = StackTree::new(&v, &cols, &name_ranks(&v), true)
                    .unwrap()
                    .unwrap();
                let (bytes, lines) = tree.projected.unwrap();
                let mut w = LineWriter::new(&v, cols.clone());
                w.max_size = Some(u64::MAX);
                let has_line = (0..v.n_stacks()).filter(|&s| tree.has[s]);
                w.project_stacks(&v, has_line.clone()).unwrap();
                assert_eq!((bytes, lines), (w.projected.bytes, w.projected.lines));
                assert!(
                    has_line.count() < v.n_stacks(),
                    "round {round}: inner stacks"
                );
            }
        }
    }

    #[test]
    fn sibling_stacks_of_one_func_are_merged() {
        // Appended in bulk, stacks are not deduplicated: `a;b` twice is one line.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let (fa, fb) = (b.func("a"), b.func("b"));
        let (a, bf) = (b.frame(fa), b.frame(fb));
        let mut k = b.into_bulk();
        let root = k.push_stack(NONE, a).unwrap();
        for n in [2, 3] {
            let s = k.push_stack(root, bf).unwrap();
            k.push_row(s, &[n]).unwrap();
        }
        let p = k.finish();
        assert!(!is_call_tree(&p));
        assert_eq!(both_ways(&p), ("a;b 5\n".into(), "a;b 5\n".into()));
        // A func with a frame per line: two stacks, one call node.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let main = b.func("main");
        let work = b.func("work");
        let w = b.frame(work);
        for (line, n) in [(3, 2), (9, 3)] {
            let m = b.frame_at(main, None, Some(line));
            let s = b.stack(NONE, m);
            let s = b.stack(s, w);
            b.add_to_stack(s, &[n]).unwrap();
        }
        let p = b.finish();
        assert!(!is_call_tree(&p));
        assert_eq!(emit(&p, EmitOptions::default()), "main;work 5\n");
    }

    #[test]
    fn siblings_sort_as_their_subtrees_text_would() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        for (stack, n) in [
            (&["a", "x"][..], 1),
            (&["a-b"][..], 2),
            (&["a"][..], 3),
            (&["B"][..], 4),
        ] {
            b.add_stack(stack, &[n]).unwrap();
        }
        let p = b.finish();
        // `a-b` before `a;x` as `sort` has it ('-' < ';'). The one difference from sorting the
        // lines: `a 3` stays with its subtree, where `sort` would put it before `a-b 2`.
        assert_eq!(emit(&p, EmitOptions::default()), "B 4\na-b 2\na 3\na;x 1\n");
    }

    #[test]
    fn separators_and_line_breaks_in_names_are_replaced_and_counted() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", "<[u8; 8] as Debug>::fmt", "two\nlines"], &[3])
            .unwrap();
        b.add_stack(&["main", "plain"], &[1]).unwrap();
        let p = b.finish();
        assert_eq!(rewritten_names(&p.view()), 2);
        assert_eq!(
            emit(&p, EmitOptions::default()),
            "main;<[u8: 8] as Debug>::fmt;two lines 3\nmain;plain 1\n"
        );
        // The flame chart writes names the same way.
        let p = trace(&["C f;g 0", "C h\r\n 10", "E 60", "E 100"]);
        assert_eq!(emit(&p, CHART), "f:g 50\nf:g;h__ 50\n");
    }

    /// The warning counts the names written otherwise, once each: not a func no sample's stack
    /// reaches (left in the table by `-T focus-func`, or never used), and not once per func of
    /// one name (callgrind's code inlined from other files is a func per file). A callgrind
    /// file of a Rust program focused away from `<[u8; 8] as Crunch>::crunch` warned of "4
    /// function name(s)" while writing none.
    #[test]
    fn rewritten_names_count_the_names_written_once_each() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let main = b.func("main");
        let (f1, f2) = (
            b.func_with("<[u8; 8]>::crunch", Some("main.rs"), None, None),
            b.func_with("<[u8; 8]>::crunch", Some("iter.rs"), None, None),
        );
        b.func("never;used");
        let (m, x, y) = (b.frame(main), b.frame(f1), b.frame(f2));
        let s = b.stack(NONE, m);
        let s1 = b.stack(s, x);
        let s2 = b.stack(s1, y);
        b.push_sample(s1, None, &[2]);
        b.push_sample(s2, None, &[3]);
        let g = b.stack_of_names(&["main", "g"]);
        b.push_sample(g, None, &[1]);
        let p = b.finish();
        assert_eq!(rewritten_names(&p.view()), 1);
        assert_eq!(
            emit(&p, EmitOptions::default()),
            "main;<[u8: 8]>::crunch 2\nmain;<[u8: 8]>::crunch;<[u8: 8]>::crunch 3\nmain;g 1\n"
        );
        let (focused, _) = profconv_plugin::ir::transform::apply(
            &p.view(),
            &profconv_plugin::ir::transform::Transform::FocusFunction("g".into()),
        )
        .unwrap();
        assert_eq!(emit(&focused, EmitOptions::default()), "g 1\n");
        assert_eq!(rewritten_names(&focused.view()), 0);
        // A root that is no sample's root any more is not counted as marked either.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["42", "f"], &[1]).unwrap();
        b.add_stack(&["42"], &[1]).unwrap();
        b.add_stack(&["main", "f"], &[1]).unwrap();
        let p = b.finish();
        assert_eq!(marked_roots(&p.view()), 1);
        let (dropped, _) = profconv_plugin::ir::transform::apply(
            &p.view(),
            &profconv_plugin::ir::transform::Transform::Drop(vec!["42".into()]),
        )
        .unwrap();
        assert_eq!(emit(&dropped, EmitOptions::default()), "main;f 1\n");
        assert_eq!(marked_roots(&dropped.view()), 0);
    }

    /// Whitespace that the reader would trim or split at (a root's leading, a leaf's trailing,
    /// the space before a number ending a leaf's name) becomes `_` (inside a stack it stays),
    /// and a root named by a number
    /// gets `_` before it: every line reads back with its own stack and count, and the file is
    /// not taken for a differential one (`attempt 3 5` reads as two counts).
    #[test]
    fn whitespace_and_numbers_that_would_read_back_otherwise_are_rewritten() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        for (stack, n) in [
            (&["attempt 3"][..], 5),
            (&["main", "attempt 3"][..], 2),
            (&[" lead", "trail "][..], 1),
            (&["  "][..], 1),
            (&["42"][..], 7),
            (&["42", "x 1.5"][..], 1),
            (&["main", "a\tb", "tab 7 x"][..], 1),
            // Inside a stack, whitespace stays: `[T; 2]` split at its `;`.
            (&["main", "[T", " 2]>::f 1", "g"][..], 1),
            // A marked root is marked where it is called too; an empty root and a byte-order
            // mark at a root's start would be lost.
            (&["m", "42"][..], 3),
            (&[""][..], 4),
            (&["\u{feff}bom"][..], 1),
        ] {
            b.add_stack(stack, &[n]).unwrap();
        }
        let p = b.finish();
        assert_eq!(rewritten_names(&p.view()), 6);
        assert_eq!(marked_roots(&p.view()), 2);
        let text = emit(&p, EmitOptions::default());
        assert_eq!(
            text,
            // In the order of the names as written, each followed by `;` (`_42;` < `_;` <
            // `__;` < `_bom;`).
            "_42 7\n_42;x_1.5 1\n_ 4\n__ 1\n_bom 1\n_lead;trail_ 1\nattempt_3 5\nm;_42 3\n\
             main;[T; 2]>::f 1;g 1\nmain;a\tb;tab 7 x 1\nmain;attempt_3 2\n"
        );
        let back = parse(text.as_bytes());
        assert_eq!(back.view().meta("diff"), None);
        assert_eq!(back.samples.values[0].iter().sum::<i64>(), 27);
        // The same lines in the same order.
        assert_eq!(emit(&back, EmitOptions::default()), text);
    }

    /// A line break before a number that ends a leaf's name is written as a space, so it is a
    /// space before a number like any other: written `_` (a PVM name `retry\n2`, or a folded
    /// frame `retry\r2`, was written `retry 2`, and the line `main;retry 2 10` read back as a
    /// differential line: the frame `retry`, before 2, after 10).
    #[test]
    fn a_line_break_before_a_number_ending_a_leaf_is_rewritten_too() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", "retry\n2"], &[10]).unwrap();
        b.add_stack(&["main", "work"], &[3]).unwrap();
        b.add_stack(&["4\r5"], &[1]).unwrap();
        let p = b.finish();
        assert_eq!(rewritten_names(&p.view()), 2);
        let text = emit(&p, EmitOptions::default());
        assert_eq!(text, "4_5 1\nmain;retry_2 10\nmain;work 3\n");
        let back = parse(text.as_bytes());
        assert_eq!(back.view().meta("diff"), None);
        assert_eq!(back.samples.values[0].iter().sum::<i64>(), 14);
        // A folded frame with a `\r` before its number (kept inside a line) reads back as one
        // frame with its count, first line or not.
        let p = parse(b"a;retry\r2 10\na;work 3\n");
        let text = emit(&p, EmitOptions::default());
        assert_eq!(text, "a;retry_2 10\na;work 3\n");
        assert_eq!(parse(text.as_bytes()).view().meta("diff"), None);
    }

    /// A root named by a number or with no name reads back as itself when it has callees
    /// (`1234;main;f 3`: a process id as the root; `;a 5`): only a line of its own (`1234 7`, ` 7`)
    /// would read as counts. Such a root is written as it is unless it is a whole stack
    /// somewhere, so folded → folded keeps the input (it was written `_1234;main;f 3`, with a
    /// warning about "a line of its own" that no line was).
    #[test]
    fn a_number_or_empty_root_with_callees_only_is_written_as_it_is() {
        let p = parse(b"1234;main;f 3\n1234;main;g 2\n;a 5\n");
        assert_eq!(marked_roots(&p.view()), 0);
        assert_eq!(rewritten_names(&p.view()), 0);
        let text = emit(&p, EmitOptions::default());
        assert_eq!(text, "1234;main;f 3\n1234;main;g 2\n;a 5\n");
        assert_eq!(emit(&parse(text.as_bytes()), EmitOptions::default()), text);
        // Alone on a line somewhere, it is marked on every line.
        let p = parse(b"1234;main;f 3\n1234 1\n");
        assert_eq!(marked_roots(&p.view()), 1);
        assert_eq!(
            emit(&p, EmitOptions::default()),
            "_1234 1\n_1234;main;f 3\n"
        );
    }

    /// Siblings are sorted by their names as written, not as they are: `42` alone is written
    /// `_42`, which `sort` puts after `B`, and a leaf `x 3` is written `x_3`, after `x;y`.
    /// Sorted as they were, the lines were not in `sort` order, and folded → folded → folded
    /// was not byte-stable (the second conversion moved `_42 5` below `B 1`).
    #[test]
    fn rewritten_names_sort_as_written_so_a_second_conversion_is_identical() {
        for (input, want) in [
            (&b"B 1\n42 5\n"[..], "B 1\n_42 5\n"),
            (b"m 1\nm;x 3 1\nm;x;y 2\n", "m 1\nm;x;y 2\nm;x_3 1\n"),
        ] {
            let text = emit(&parse(input), EmitOptions::default());
            assert_eq!(text, want);
            assert_eq!(emit(&parse(text.as_bytes()), EmitOptions::default()), text);
        }
    }

    /// A root named `#`, or `#` and whitespace, would turn its lines into comments (samples
    /// lost on reading back): it is written with `_` before it, on every line, merged or in time
    /// order, also where it is called (`#1 worker;_#`), so it reads back as one function; other
    /// names starting with `#`, never roots, are written as they are (`# inner`).
    #[test]
    fn roots_that_would_read_as_comments_are_marked_and_counted() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["# key: value", "# inner"], &[3]).unwrap();
        b.add_stack(&["# key: value"], &[1]).unwrap();
        b.add_stack(&["#"], &[2]).unwrap();
        b.add_stack(&["#\nx"], &[2]).unwrap();
        b.add_stack(&["#1 worker", "#"], &[4]).unwrap();
        let p = b.finish();
        assert_eq!(marked_roots(&p.view()), 3);
        let text = emit(&p, EmitOptions::default());
        assert_eq!(
            text,
            // In the order of the names as written (`#1` < `_# k` < `_# x` < `_#;`).
            "#1 worker;_# 4\n_# key: value 1\n_# key: value;# inner 3\n_# x 2\n_# 2\n"
        );
        // Read back, every sample is there, and written again in the same order.
        let back = parse(text.as_bytes());
        assert_eq!(back.samples.values[0].iter().sum::<i64>(), 12);
        assert_eq!(emit(&back, EmitOptions::default()), text);
        // The flame chart marks the same roots.
        let p = trace(&["C #\trun 0", "C g 10", "E 60", "E 100"]);
        assert_eq!(emit(&p, CHART), "_#\trun 50\n_#\trun;g 50\n");
    }

    fn parse(text: &[u8]) -> Profile {
        crate::parse::parse_folded(
            &mut profconv_plugin::Input::from_slice(text),
            false,
            &mut profconv_plugin::Context::silent(),
        )
        .unwrap()
    }

    /// A differential profile (metadata `diff`, as `profconv diff` builds) is written as
    /// `STACK BEFORE AFTER` lines, each count at its column's scale, which read back as the same
    /// profile; `value` picks one column.
    #[test]
    fn differential_profiles_are_written_with_both_counts() {
        use profconv_plugin::ir::testing::stacks;
        let x = stacks(&[(&["main", "a"], 3), (&["main", "b"], 1)]);
        let y = stacks(&[(&["main", "b"], 5), (&["main", "c"], 2), (&["main"], 1)]);
        let d = profconv_plugin::ir::diff::combine(&x.view(), 0, &y.view(), 0).unwrap();
        let text = emit(&d, EmitOptions::default());
        assert_eq!(text, "main 0 1\nmain;a 3 0\nmain;b 1 5\nmain;c 0 2\n");
        let back = parse(text.as_bytes());
        assert_eq!(back.view().meta("diff"), Some(DIFF_COLUMNS));
        assert_eq!(emit(&back, EmitOptions::default()), text);
        let one = |value| EmitOptions {
            value: Some(value),
            ..EmitOptions::default()
        };
        assert_eq!(
            emit(&d, one("after")),
            "main 1\nmain;a 0\nmain;b 5\nmain;c 2\n"
        );
        assert_eq!(
            emit(&back, one("before")),
            "main 0\nmain;a 3\nmain;b 1\nmain;c 0\n"
        );
        // The call tree's way (funcs with several frames) and the flame chart write both too.
        let v = d.view();
        let mut out = Vec::new();
        let mut w = LineWriter::new(&v, vec![0, 1]);
        merged(&mut w, &v, &mut out, false).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
        assert_eq!(
            emit(&d, CHART),
            "main;a 3 0\nmain;b 1 5\nmain;c 0 2\nmain 0 1\n"
        );
        // Each column at its own scale; trailing zeros dropped per count.
        let p = parse(b"a;b 1.5 2\na;c 0.25 3\na 1 4.125\nd 0 0\n");
        let text = emit(&p, EmitOptions::default());
        assert_eq!(text, "a 1 4.125\na;b 1.5 2\na;c 0.25 3\nd 0 0\n");
        assert_eq!(emit(&parse(text.as_bytes()), EmitOptions::default()), text);
        // The size bound counts both counts: `a 1 4\n` is projected as `a 0 0\n`, 6 bytes.
        let p = parse(b"a 1 4\n");
        let bounded = |max| EmitOptions {
            max_size: Some(max),
            ..EmitOptions::default()
        };
        assert_eq!(emit(&p, bounded(6)), "a 1 4\n");
        let e = emit_folded(&p.view(), &mut Vec::new(), bounded(5)).unwrap_err();
        assert!(e.to_string().contains("max-size"), "{e}");
    }

    #[test]
    fn output_over_the_size_bound_is_an_error_before_any_line() {
        // Seed 000's trace: `f 70\nf;g 60\nf;g;h 30\n`, 21 bytes, is projected as 18: each line's
        // stack, a space, one digit and a newline. Under 18, nothing is written; from 18 to 20,
        // the lines that fit, then an error at the line that would end past the bound.
        let p = trace(&["C f 0", "C g 10", "C h 30", "E 60", "E 100", "E 160"]);
        for flamechart in [false, true] {
            for per_thread in [false, true] {
                let opts = |max| EmitOptions {
                    flamechart,
                    per_thread,
                    max_size: Some(max),
                    ..EmitOptions::default()
                };
                assert_eq!(emit(&p, opts(21)), "f 70\nf;g 60\nf;g;h 30\n");
                let mut out = Vec::new();
                let e = emit_folded(&p.view(), &mut out, opts(20)).unwrap_err();
                assert_eq!(String::from_utf8_lossy(&out), "f 70\nf;g 60\n");
                assert!(
                    e.message
                        .contains("more than 20 bytes, the bound: line 3 would end at byte 21"),
                    "{}",
                    e.message
                );
                let mut out = Vec::new();
                let e = emit_folded(&p.view(), &mut out, opts(17)).unwrap_err();
                assert!(out.is_empty(), "nothing written");
                assert!(
                    e.message
                        .contains("at least 18 bytes: 3 lines, stacks up to 3 frames deep,")
                        && e.message.contains("-O max-size=BYTES"),
                    "{}",
                    e.message
                );
            }
        }
    }

    /// Every blank (and byte-order mark) that starts a root's name becomes `_`, not only the
    /// first: the reader would trim the rest.
    #[test]
    fn every_leading_blank_of_a_root_is_rewritten() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", "f"], &[1]).unwrap();
        b.add_stack(&[" \t\u{feff} x", "f"], &[2]).unwrap();
        let text = emit(&b.finish(), EmitOptions::default());
        assert_eq!(text, "____x;f 2\nmain;f 1\n");
    }

    /// A name that would need rewriting only in a place it is not in is written as it is: a
    /// root whose name ends in a number (trouble for a leaf only) and a leaf whose name starts
    /// with a blank (trouble for a root only).
    #[test]
    fn names_are_rewritten_only_where_they_would_read_back_otherwise() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["attempt 3", " b"], &[5]).unwrap();
        let p = b.finish();
        assert_eq!(emit(&p, EmitOptions::default()), "attempt 3; b 5\n");
        assert_eq!(rewritten_names(&p.view()), 0);
    }
}
