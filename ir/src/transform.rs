//! Call-tree transforms (seed 001, "Modifying the tree"), as functions from profile to profile.
//!
//! Each transform rewrites the stack table and the samples, so every emitter sees the result.
//! All but `invert` are linear in the stack table, not in input lines: passes over the stacks in
//! table order (a prefix always comes before its stacks; `collapse-rec` walks them depth-first)
//! plus one over the samples. `invert` walks each distinct sampled stack's depth, which grows
//! with the square of a deep chain's depth: it is bounded ([`invert_step_budget`],
//! [`invert_bound`]) and an error past that. Targets are named by a
//! [`CallNodePath`](crate::CallNodePath) of function names from a root, or by one function name.
//! Applied one after another they form a stack: each names nodes of the tree the previous ones
//! left.
//!
//! Rules shared by all transforms:
//! * a stack whose leaf frame is *merged* takes its parent's place; its samples' weights go to
//!   the parent (self), but their [`ValueKind::Count`] values (calls) are dropped: those calls
//!   entered the node that is gone, not the parent;
//! * a sample whose stack becomes empty (a merged root) is removed;
//! * sample order, and so a timeline, is kept; profiles without time order stay aggregated,
//!   one sample per stack.

use crate::builder::ProfileBuilder;
use crate::children::ChildIndex;
use crate::profile::{IrError, NONE, Profile, ProfileRef, ValueKind};
use foldhash::fast::FixedState;
use hashbrown::HashMap;
use std::fmt;

/// One transform of the call tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Transform {
    /// Remove one call node; its children move up to its parent, its self value goes to the
    /// parent ("merge C", "merge E"; charge to caller).
    MergeCallNode(Vec<String>),
    /// [`Transform::MergeCallNode`] for every call node of a function.
    MergeFunction(String),
    /// Remove a node and its subtree; their values become self of the parent (prune).
    MergeSubtree(Vec<String>),
    /// Remove every sample that passes through the node (hide): totals shrink.
    Drop(Vec<String>),
    /// Keep only samples through the node, which becomes the root.
    FocusSubtree(Vec<String>),
    /// Keep only samples through the function; its outermost call nodes combine as one root.
    FocusFunction(String),
    /// `f;f;f` becomes `f` (for one function, or all when `None`).
    CollapseDirectRecursion(Option<String>),
    /// `f;g;f;h` becomes `f;h`: the outermost call keeps what lies under the innermost
    /// (for one function, or all when `None`).
    CollapseRecursion(Option<String>),
    /// The bottom-up tree: roots are the functions where time was spent.
    Invert,
    /// Nodes deeper than N levels are charged to their ancestor at depth N.
    MaxDepth(u32),
    /// Nodes whose total is below this fraction of the grand total are merged into their parent
    /// (with their subtree); roots always stay.
    MinTotal(Fraction),
}

/// A fraction from 0 to 1 as the decimal it was written: `num / 10^scale`, compared exactly
/// (`70%` of 10 is 7, where `0.7 * 10.0` is 7.000000000000001 and a node of exactly 7 would
/// be merged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fraction {
    num: u64,
    scale: u32,
}

impl Fraction {
    /// The most decimals a fraction may have.
    pub const MAX_DECIMALS: u32 = 18;

    /// `num / 10^scale`, `None` unless it is from 0 to 1 with at most
    /// [`Self::MAX_DECIMALS`] decimals. (`decimal(1, 2)` is 1 %.)
    pub fn decimal(mut num: u64, mut scale: u32) -> Option<Fraction> {
        if scale > Self::MAX_DECIMALS || num > 10u64.pow(scale) {
            return None;
        }
        // One value, one form: `0.70` and `70%` are `0.7`.
        while scale > 0 && num % 10 == 0 {
            num /= 10;
            scale -= 1;
        }
        Some(Fraction { num, scale })
    }

    /// Whether `value` is below this fraction of `of`, exactly.
    pub fn below(self, value: i64, of: i64) -> bool {
        (value as i128) * 10i128.pow(self.scale) < (self.num as i128) * (of as i128)
    }

    /// A fraction written `D.DDD`, `.DDD` or `D` (digits only, no sign or exponent), or a
    /// percentage of that form followed by `%`.
    fn parse_text(text: &str) -> Option<Fraction> {
        let (digits, pct) = match text.strip_suffix('%') {
            // Blanks around the number are ignored: `50 %` as `50%`.
            Some(d) => (d.trim_end_matches([' ', '\t']), 2),
            None => (text, 0),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let all = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() && frac.is_empty() || !all(int) || !all(frac) {
            return None;
        }
        let (int, frac) = (int.trim_start_matches('0'), frac.trim_end_matches('0'));
        let scale = frac.len() as u32 + pct;
        if scale > Self::MAX_DECIMALS || int.len() > 3 {
            return None;
        }
        // Up to 21 digits: one that does not fit in 64 bits is far above 1 (an error).
        let digits = format!("{int}{frac}");
        let num = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        Self::decimal(num, scale)
    }
}

impl fmt::Display for Fraction {
    /// As a decimal fraction (`0.02` for `2%`), which parses back to the same fraction.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = 10u64.pow(self.scale);
        match (self.num / unit, self.num % unit) {
            (int, 0) => write!(f, "{int}"),
            // No trailing zeros: `decimal` took them off.
            (int, frac) => write!(f, "{int}.{frac:0width$}", width = self.scale as usize),
        }
    }
}

impl std::str::FromStr for Fraction {
    type Err = String;
    fn from_str(s: &str) -> Result<Fraction, String> {
        Fraction::parse_text(s).ok_or_else(|| {
            format!(
                "min-total needs a fraction from 0 to 1 like 0.01, or a percentage like 1%, with at most {} decimals, not `{s}`",
                Fraction::MAX_DECIMALS
            )
        })
    }
}

/// What a transform found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Stacks the transform's target matched (0: the path or function named nothing).
    pub matched: usize,
    /// Samples removed (dropped, outside the focus, or left with an empty stack).
    pub samples_removed: usize,
}

/// [`path_states`]: the stack is neither on the path nor under it. Also the key
/// [`NameKeys::key`] gives a name no function has, which no stack's key equals.
const OFF: u32 = u32::MAX;
/// [`path_states`]: the stack is a strict descendant of the node the path names.
const INSIDE: u32 = u32::MAX - 1;
/// `new_stack` value of a stack whose samples are removed.
const DROPPED: u32 = u32::MAX - 1;

/// Function names as dense keys: funcs with equal names share a key (paths name functions).
struct NameKeys<'a> {
    by_name: HashMap<&'a str, u32, FixedState>,
    /// Key of each stack's leaf function.
    stack_key: Vec<u32>,
}

impl<'a> NameKeys<'a> {
    fn new(p: &ProfileRef<'a>) -> Self {
        let mut by_name: HashMap<&'a str, u32, FixedState> =
            HashMap::with_hasher(FixedState::with_seed(7));
        let func_key: Vec<u32> = (0..p.n_funcs() as u32)
            .map(|f| {
                let n = by_name.len() as u32;
                *by_name.entry(p.func_name_str(f)).or_insert(n)
            })
            .collect();
        let stack_key = (0..p.n_stacks() as u32)
            .map(|s| func_key[p.stack_func(s) as usize])
            .collect();
        NameKeys { by_name, stack_key }
    }

    /// The key of a name; a name no function has gets a key no stack has.
    fn key(&self, name: &str) -> u32 {
        self.by_name.get(name).copied().unwrap_or(OFF)
    }

    fn path(&self, names: &[String]) -> Vec<u32> {
        names.iter().map(|n| self.key(n)).collect()
    }
}

/// Per stack: how much of `path` its function path matches. `k` (= path length) is the node
/// itself, [`INSIDE`] a strict descendant, [`OFF`] elsewhere; `j < k` a strict ancestor.
fn path_states(p: &ProfileRef<'_>, keys: &NameKeys<'_>, path: &[u32]) -> Vec<u32> {
    let k = path.len() as u32;
    let mut state = Vec::with_capacity(p.n_stacks());
    for s in 0..p.n_stacks() {
        let prefix = p.stack_prefix[s];
        let before = if prefix == NONE {
            0
        } else {
            state[prefix as usize]
        };
        let here = match before {
            OFF => OFF,
            INSIDE => INSIDE,
            j if j == k => INSIDE,
            j if path.get(j as usize) == Some(&keys.stack_key[s]) => j + 1,
            _ => OFF,
        };
        state.push(here);
    }
    state
}

/// The new stack table under construction, and where each old stack went.
struct Rebuild {
    b: ProfileBuilder,
    /// New stack of each old stack: a stack id, [`NONE`] (empty) or [`DROPPED`].
    new_stack: Vec<u32>,
    /// The old stack's leaf was merged into an ancestor: Count values do not follow.
    merged_leaf: Vec<bool>,
}

impl Rebuild {
    fn new(p: &ProfileRef<'_>) -> Self {
        let mut b = ProfileBuilder::with_tables_of(p);
        if p.sample_thread.is_some() {
            b.start_thread_column();
        }
        Rebuild {
            b,
            new_stack: Vec::with_capacity(p.n_stacks()),
            merged_leaf: Vec::with_capacity(p.n_stacks()),
        }
    }

    fn parent_new(&self, p: &ProfileRef<'_>, s: usize) -> u32 {
        let prefix = p.stack_prefix[s];
        if prefix == NONE {
            NONE
        } else {
            self.new_stack[prefix as usize]
        }
    }

    /// Old stack `s` keeps its frame under its parent's new stack.
    fn keep(&mut self, p: &ProfileRef<'_>, s: usize) {
        let parent = self.parent_new(p, s);
        let ns = if parent == DROPPED {
            DROPPED
        } else {
            self.b.stack(parent, p.stack_frame[s])
        };
        self.new_stack.push(ns);
        self.merged_leaf.push(false);
    }

    /// Old stack `s` becomes a root with its frame.
    fn root(&mut self, p: &ProfileRef<'_>, s: usize) {
        let ns = self.b.stack(NONE, p.stack_frame[s]);
        self.new_stack.push(ns);
        self.merged_leaf.push(false);
    }

    /// Old stack `s` is merged into `into` (its parent's new stack, or an ancestor's).
    fn merge_into(&mut self, into: u32) {
        self.new_stack.push(into);
        self.merged_leaf.push(true);
    }

    fn merge(&mut self, p: &ProfileRef<'_>, s: usize) {
        let parent = self.parent_new(p, s);
        self.merge_into(parent);
    }

    fn drop_stack(&mut self) {
        self.new_stack.push(DROPPED);
        self.merged_leaf.push(false);
    }

    /// Moves the samples onto the new stacks.
    fn finish(mut self, p: &ProfileRef<'_>, matched: usize) -> Result<(Profile, Applied), IrError> {
        let ordered = p.is_ordered();
        let counts: Vec<bool> = p
            .value_types
            .iter()
            .map(|v| v.kind == ValueKind::Count)
            .collect();
        let mut row = vec![0i64; p.value_types.len()];
        let mut removed = 0;
        for i in 0..p.n_samples() {
            let s = p.sample_stack[i] as usize;
            let ns = self.new_stack[s];
            if ns == DROPPED || ns == NONE {
                removed += 1;
                continue;
            }
            for (c, col) in p.sample_values.iter().enumerate() {
                row[c] = if counts[c] && self.merged_leaf[s] {
                    0
                } else {
                    col[i]
                };
            }
            if p.sample_thread.is_some() {
                self.b.set_thread(p.sample_thread_of(i));
            }
            if ordered {
                self.b.push_sample(ns, p.sample_time.map(|t| t[i]), &row);
            } else {
                self.b.add_to_stack(ns, &row)?;
            }
        }
        let mut profile = self.b.finish();
        profile.drop_stacks_without_samples();
        Ok((
            profile,
            Applied {
                matched,
                samples_removed: removed,
            },
        ))
    }
}

/// A [`Rebuild`] made only once a transform changes a stack. While every stack so far is kept
/// where it is, nothing is built: the kept stacks are only counted, and made (as
/// [`Rebuild::keep`] would have made them) when the first change comes. A transform that keeps
/// every stack of a profile that rebuilds to itself ([`rebuilds_to_itself`]) builds nothing.
struct Plan {
    rebuild: Option<Rebuild>,
    /// Stacks kept, from the first, while nothing is built.
    kept: usize,
}

impl Plan {
    fn new() -> Self {
        Plan {
            rebuild: None,
            kept: 0,
        }
    }

    /// The rebuild, made now if it is not yet, with the stacks kept so far.
    fn rebuild(&mut self, p: &ProfileRef<'_>) -> &mut Rebuild {
        let kept = self.kept;
        self.rebuild.get_or_insert_with(|| {
            let mut r = Rebuild::new(p);
            for s in 0..kept {
                r.keep(p, s);
            }
            r
        })
    }

    fn keep(&mut self, p: &ProfileRef<'_>, s: usize) {
        match &mut self.rebuild {
            None => {
                debug_assert_eq!(self.kept, s, "stacks are planned in table order");
                self.kept += 1;
            }
            Some(r) => r.keep(p, s),
        }
    }

    fn root(&mut self, p: &ProfileRef<'_>, s: usize) {
        self.rebuild(p).root(p, s);
    }

    fn merge(&mut self, p: &ProfileRef<'_>, s: usize) {
        self.rebuild(p).merge(p, s);
    }

    fn drop_stack(&mut self, p: &ProfileRef<'_>) {
        self.rebuild(p).drop_stack();
    }

    /// The new profile, or `None` (with `keep_unchanged`) when every stack was kept and the
    /// rebuild would give `p` again.
    fn finish(
        mut self,
        p: &ProfileRef<'_>,
        matched: usize,
        live: &[bool],
        keep_unchanged: bool,
    ) -> Result<(Option<Profile>, Applied), IrError> {
        if self.rebuild.is_none() {
            debug_assert_eq!(self.kept, p.n_stacks());
            if keep_unchanged && rebuilds_to_itself(p, live) {
                return Ok((
                    None,
                    Applied {
                        matched,
                        samples_removed: 0,
                    },
                ));
            }
        }
        self.rebuild(p);
        let r = self.rebuild.take().expect("made just now");
        let (profile, applied) = r.finish(p, matched)?;
        Ok((Some(profile), applied))
    }
}

/// Whether rebuilding `p` with every stack kept in place gives `p` again, column for column:
/// every stack has samples on it or below it (`live`, else the rebuild drops it), no two stacks
/// have one prefix and one frame (else the rebuild makes them one), and, without time order, no
/// two sample rows have one stack and thread (else the rebuild adds them up) nor a time column
/// (which the rebuild does not keep); with time order, a time column holds a sample (an empty
/// one is not made again). One pass over the stacks and one over the samples; memory of a
/// `u32` per stack, and a set of the (prefix, frame) pairs of stacks with siblings.
fn rebuilds_to_itself(p: &ProfileRef<'_>, live: &[bool]) -> bool {
    if !live.iter().all(|&l| l) {
        return false;
    }
    let n = p.n_stacks();
    if p.is_ordered() {
        if p.sample_time.is_some() && p.n_samples() == 0 {
            return false;
        }
    } else {
        if p.sample_time.is_some() {
            return false;
        }
        // The thread (+ 1) of each stack's first row; a later row of the stack is looked up
        // among the (thread, stack) pairs of stacks with rows in several threads.
        let mut first = vec![0u32; n];
        let mut more: hashbrown::HashSet<(u32, u32), FixedState> =
            hashbrown::HashSet::with_hasher(FixedState::with_seed(7));
        for i in 0..p.n_samples() {
            let s = p.sample_stack[i];
            let t = p.sample_thread.map_or(0, |t| t[i]);
            let cell = &mut first[s as usize];
            if *cell == 0 {
                *cell = t + 1;
            } else if *cell == t + 1 || !more.insert((t, s)) {
                return false;
            } else {
                more.insert((*cell - 1, s));
            }
        }
    }
    // Each parent's first child's frame (roots under `n`); a parent with two or more children
    // has them checked in a set.
    let mut first_frame = vec![NONE; n + 1];
    let mut siblings = vec![false; n + 1];
    let parent = |s: usize| match p.stack_prefix[s] {
        NONE => n,
        prefix => prefix as usize,
    };
    for s in 0..n {
        let (up, frame) = (parent(s), p.stack_frame[s]);
        if first_frame[up] == NONE {
            first_frame[up] = frame;
        } else if first_frame[up] == frame {
            return false;
        } else {
            siblings[up] = true;
        }
    }
    drop(first_frame);
    let mut seen: hashbrown::HashSet<(u32, u32), FixedState> =
        hashbrown::HashSet::with_hasher(FixedState::with_seed(7));
    (0..n).all(|s| {
        let up = parent(s);
        !siblings[up] || seen.insert((up as u32, p.stack_frame[s]))
    })
}

/// Applies one transform, building a new profile even when the transform changes nothing
/// (see [`apply_or_keep`]).
pub fn apply(p: &ProfileRef<'_>, t: &Transform) -> Result<(Profile, Applied), IrError> {
    let (profile, applied) = apply_inner(p, t, false)?;
    Ok((profile.expect("a profile is built"), applied))
}

/// Applies one transform; `None` instead of a profile when the transform provably changes
/// nothing (no stack merged, dropped or moved, and `p` is what a rebuild of it gives: see
/// `rebuilds_to_itself`), so `p` is the result, as [`apply`] would have built it column for
/// column. Deciding costs a pass over the stacks (and the samples, for a profile without time
/// order), not the new tables: a `merge-func` naming no function, a `max-depth` above the
/// deepest stack, a `min-total:0`.
pub fn apply_or_keep(
    p: &ProfileRef<'_>,
    t: &Transform,
) -> Result<(Option<Profile>, Applied), IrError> {
    apply_inner(p, t, true)
}

fn apply_inner(
    p: &ProfileRef<'_>,
    t: &Transform,
    keep_unchanged: bool,
) -> Result<(Option<Profile>, Applied), IrError> {
    let keys = NameKeys::new(p);
    let n = p.n_stacks();
    let mut r = Plan::new();
    // Only a stack with samples on it or below counts as matched: a parser may leave stacks
    // without any (a transform's own output never has them), and a target found only there
    // matched nothing a user can see.
    let live = crate::profile::live_stacks(p.stack_prefix, p.sample_stack);
    let live_count = |s: usize| usize::from(live[s]);
    let mut matched = 0usize;
    match t {
        Transform::MergeCallNode(path)
        | Transform::MergeSubtree(path)
        | Transform::Drop(path)
        | Transform::FocusSubtree(path) => {
            if path.is_empty() {
                return Err(IrError::Invalid("a call node path needs a function".into()));
            }
            let k = path.len() as u32;
            let state = path_states(p, &keys, &keys.path(path));
            for (s, &st) in state.iter().enumerate() {
                matched += usize::from(st == k) * live_count(s);
                match (t, st) {
                    (Transform::MergeCallNode(_), st) if st == k => r.merge(p, s),
                    (Transform::MergeSubtree(_), st) if st == k || st == INSIDE => r.merge(p, s),
                    (Transform::Drop(_), st) if st == k || st == INSIDE => r.drop_stack(p),
                    (Transform::FocusSubtree(_), st) if st == k => r.root(p, s),
                    (Transform::FocusSubtree(_), INSIDE) => r.keep(p, s),
                    (Transform::FocusSubtree(_), _) => r.drop_stack(p),
                    _ => r.keep(p, s),
                }
            }
        }
        Transform::MergeFunction(name) => {
            let f = keys.key(name);
            for s in 0..n {
                if keys.stack_key[s] == f {
                    matched += live_count(s);
                    r.merge(p, s);
                } else {
                    r.keep(p, s);
                }
            }
        }
        Transform::FocusFunction(name) => {
            let f = keys.key(name);
            let mut in_focus = Vec::with_capacity(n);
            for s in 0..n {
                let prefix = p.stack_prefix[s];
                let parent_in = prefix != NONE && in_focus[prefix as usize];
                if parent_in {
                    r.keep(p, s);
                } else if keys.stack_key[s] == f {
                    matched += live_count(s);
                    r.root(p, s);
                } else {
                    r.drop_stack(p);
                }
                in_focus.push(parent_in || keys.stack_key[s] == f);
            }
        }
        Transform::CollapseDirectRecursion(only) => {
            let only = only.as_deref().map(|n| keys.key(n));
            for s in 0..n {
                let prefix = p.stack_prefix[s];
                let key = keys.stack_key[s];
                if prefix != NONE
                    && keys.stack_key[prefix as usize] == key
                    && only.is_none_or(|o| o == key)
                {
                    matched += live_count(s);
                    r.merge(p, s);
                } else {
                    r.keep(p, s);
                }
            }
        }
        Transform::CollapseRecursion(only) => {
            matched = collapse_recursion(
                p,
                &keys,
                only.as_deref().map(|n| keys.key(n)),
                &live,
                &mut r,
            );
        }
        Transform::Invert => return invert(p).map(|(q, a)| (Some(q), a)),
        Transform::MaxDepth(max) => {
            if *max == 0 {
                return Err(IrError::Invalid("max depth must be at least 1".into()));
            }
            let mut depth = Vec::with_capacity(n);
            for s in 0..n {
                let prefix = p.stack_prefix[s];
                let d = if prefix == NONE {
                    0
                } else {
                    depth[prefix as usize] + 1
                };
                depth.push(d);
                if d >= *max {
                    matched += live_count(s);
                    r.merge(p, s);
                } else {
                    r.keep(p, s);
                }
            }
        }
        Transform::MinTotal(fraction) => {
            let Some(col) = p.default_weight() else {
                return Err(IrError::Invalid(
                    "min total needs a weight value type".into(),
                ));
            };
            // A differential profile (a `before` and an `after` column) keeps a node either
            // side keeps: measured by `before` alone, a path new or grown in `after` (the
            // shape a differential flame graph draws) was merged away.
            let cols = match p.meta("diff") == Some(crate::diff::DIFF_COLUMNS)
                && p.value_types.len() >= 2
            {
                true => vec![0, 1],
                false => vec![col],
            };
            let mut measured = cols
                .iter()
                .map(|&c| name_node_totals(p, &keys, c))
                .collect::<Result<Vec<_>, _>>()?;
            // A side of no total (a diff against an empty profile) holds no node small or
            // large: it is not measured, unless both are so.
            if measured.iter().any(|m| m.2 != 0) {
                measured.retain(|m| m.2 != 0);
            }
            let stack_node = &measured[0].0;
            let mut small = Vec::with_capacity(n);
            for (s, &node) in stack_node.iter().enumerate() {
                let prefix = p.stack_prefix[s];
                // Roots stay: they have no parent to take their value.
                let is_small = prefix != NONE
                    && (small[prefix as usize]
                        || measured
                            .iter()
                            .all(|(_, total, grand)| fraction.below(total[node as usize], *grand)));
                small.push(is_small);
                if is_small {
                    matched += live_count(s);
                    r.merge(p, s);
                } else {
                    r.keep(p, s);
                }
            }
        }
    }
    r.finish(p, matched, &live, keep_unchanged)
}

/// Call nodes as a transform sees them, functions compared by name (two `f`s of different
/// files under `main` are one node, as `merge:main;f` takes both): each stack's node, each
/// node's total of column `col`, and the grand total.
fn name_node_totals(
    p: &ProfileRef<'_>,
    keys: &NameKeys<'_>,
    col: usize,
) -> Result<(Vec<u32>, Vec<i64>, i64), IrError> {
    let n = p.n_stacks();
    let mut index = ChildIndex::default();
    let mut parent: Vec<u32> = Vec::new();
    let mut stack_node: Vec<u32> = Vec::with_capacity(n);
    for s in 0..n {
        let prefix = p.stack_prefix[s];
        let up = match prefix {
            NONE => NONE,
            prefix => stack_node[prefix as usize],
        };
        let node = index.get_or_make(up, keys.stack_key[s], || {
            parent.push(up);
            (parent.len() - 1) as u32
        });
        stack_node.push(node);
    }
    let overflow = |a: i64, b: i64| IrError::Overflow(format!("{a} + {b} does not fit in 64 bits"));
    let mut total: Vec<i64> = crate::zeros(parent.len());
    for (&s, &v) in p.sample_stack.iter().zip(p.sample_values[col].iter()) {
        let cell = &mut total[stack_node[s as usize] as usize];
        *cell = cell.checked_add(v).ok_or_else(|| overflow(*cell, v))?;
    }
    // A node is made after its parent: children first, from the last.
    let mut grand = 0i64;
    for i in (0..parent.len()).rev() {
        let v = total[i];
        let cell = match parent[i] {
            NONE => &mut grand,
            up => &mut total[up as usize],
        };
        *cell = cell.checked_add(v).ok_or_else(|| overflow(*cell, v))?;
    }
    Ok((stack_node, total, grand))
}

/// Collapses recursion with one depth-first walk of the stack table (the outermost call of each
/// function on the current path is what a recursive call merges into).
fn collapse_recursion(
    p: &ProfileRef<'_>,
    keys: &NameKeys<'_>,
    only: Option<u32>,
    live: &[bool],
    plan: &mut Plan,
) -> usize {
    let n = p.n_stacks();
    // Children lists, ascending.
    let mut first_child = vec![NONE; n];
    let mut next_sibling = vec![NONE; n];
    let mut roots = Vec::new();
    for s in (0..n).rev() {
        let prefix = p.stack_prefix[s];
        if prefix == NONE {
            roots.push(s as u32);
        } else {
            next_sibling[s] = first_child[prefix as usize];
            first_child[prefix as usize] = s as u32;
        }
    }
    let n_keys = keys.by_name.len();
    // The outermost stack of each function on the current path (an input stack).
    let mut outer = vec![NONE; n_keys];
    // The input stack each merged stack becomes (an ancestor: a lower id), or NONE.
    let mut merged_into = vec![NONE; n];
    let mut merged_leaf = vec![false; n];
    let mut matched = 0;
    // (stack, entering?) events; on exit, restore what entering set.
    let mut todo: Vec<(u32, bool)> = roots.iter().rev().map(|&s| (s, true)).collect();
    let mut set_here = vec![false; n];
    while let Some((s, entering)) = todo.pop() {
        let si = s as usize;
        let key = keys.stack_key[si];
        if !entering {
            if set_here[si] {
                outer[key as usize] = NONE;
            }
            continue;
        }
        let tracked = only.is_none_or(|o| o == key);
        if tracked && outer[key as usize] != NONE {
            matched += live[si] as usize;
            merged_into[si] = outer[key as usize];
            merged_leaf[si] = true;
        } else if tracked {
            outer[key as usize] = s;
            set_here[si] = true;
        }
        todo.push((s, false));
        let mut c = first_child[si];
        while c != NONE {
            todo.push((c, true));
            c = next_sibling[c as usize];
        }
    }
    if !merged_leaf.contains(&true) {
        // Nothing is merged: every stack stays where it is.
        for s in 0..n {
            plan.keep(p, s);
        }
        return matched;
    }
    let r = plan.rebuild(p);
    r.merged_leaf = merged_leaf;
    // The new stacks are made in the input's stack order, not the walk's: a stack moved up to
    // an outer call (`a;b;a;d` → `a;d`) then comes after the siblings the input reached first
    // (`a;c`), and `--order first-seen` keeps the input's order. A stack's prefix and the
    // stack it merges into both come before it.
    r.new_stack = Vec::with_capacity(n);
    for (si, &into) in merged_into.iter().enumerate() {
        let ns = match into {
            NONE => {
                let parent = match p.stack_prefix[si] {
                    NONE => NONE,
                    prefix => r.new_stack[prefix as usize],
                };
                r.b.stack(parent, p.stack_frame[si])
            }
            into => r.new_stack[into as usize],
        };
        r.new_stack.push(ns);
    }
    matched
}

/// The most stacks an inverted profile may have: [`INVERT_STACKS_PER_STACK`] per stack of the
/// profile, and at least [`INVERT_MIN_STACKS`].
pub fn invert_bound(n_stacks: usize) -> usize {
    n_stacks
        .saturating_mul(INVERT_STACKS_PER_STACK)
        .max(INVERT_MIN_STACKS)
}
/// See [`invert_bound`]. A deep call chain of distinct functions, each with its own samples,
/// inverts into a number of stacks that grows with the square of its depth (a 20 000-deep
/// trace: 200 million).
pub const INVERT_STACKS_PER_STACK: usize = 16;
/// See [`invert_bound`]: 4 M stacks, about 150 MB of stack table and index.
pub const INVERT_MIN_STACKS: usize = 1 << 22;

/// The most steps inverting may walk: [`INVERT_STEPS_PER_STACK`] per stack of the profile, and
/// at least [`INVERT_MIN_STEPS`]. A step is one run of equal frames on a sampled stack's path
/// (a frame, or a whole run of direct recursion `f;f;…;f`), so the steps are the sum over the
/// distinct sampled stacks of their depths with direct recursion counted once per run.
pub fn invert_step_budget(n_stacks: usize) -> u64 {
    (n_stacks as u64)
        .saturating_mul(INVERT_STEPS_PER_STACK)
        .max(INVERT_MIN_STEPS)
}
/// See [`invert_step_budget`]. A deep chain that inverts into few stacks (mutual recursion
/// `f;g;f;g;…`, 2 stacks per level) still walks the square of its depth: a 100 000-deep one,
/// 5 billion steps (about 20 s).
pub const INVERT_STEPS_PER_STACK: u64 = 256;
/// See [`invert_step_budget`]: about 1 billion steps, a few seconds.
pub const INVERT_MIN_STEPS: u64 = 1 << 30;

/// The bottom-up tree: each sampled stack reversed. Cost: one step per run of equal frames on
/// each distinct sampled stack, once (a run of direct recursion `f;…;f` reuses the inverted
/// chain `…;f;…;f` a shorter run made, so a deep direct recursion inverts in linear time).
/// Count values (calls) are dropped: in the inverted tree no node is a call.
/// More steps than [`invert_step_budget`] is an error, found before any is walked; more stacks
/// than [`invert_bound`] is an error, found before the memory is taken.
fn invert(p: &ProfileRef<'_>) -> Result<(Profile, Applied), IrError> {
    invert_within(
        p,
        invert_bound(p.n_stacks()),
        invert_step_budget(p.n_stacks()),
    )
}

/// [`invert`] with at most `bound` stacks and `step_budget` steps.
fn invert_within(
    p: &ProfileRef<'_>,
    bound: usize,
    step_budget: u64,
) -> Result<(Profile, Applied), IrError> {
    let n = p.n_stacks();
    // Per stack, the run of equal frames it ends: its length, the stack above its first stack
    // (where the next run up starts), and how many runs the stack's path has.
    let mut run_len: Vec<u32> = Vec::with_capacity(n);
    let mut run_above: Vec<u32> = Vec::with_capacity(n);
    let mut runs: Vec<u32> = Vec::with_capacity(n);
    for s in 0..n {
        let prefix = p.stack_prefix[s];
        if prefix == NONE {
            run_len.push(1);
            run_above.push(NONE);
            runs.push(1);
        } else if p.stack_frame[prefix as usize] == p.stack_frame[s] {
            run_len.push(run_len[prefix as usize] + 1);
            run_above.push(run_above[prefix as usize]);
            runs.push(runs[prefix as usize]);
        } else {
            run_len.push(1);
            run_above.push(prefix);
            runs.push(runs[prefix as usize] + 1);
        }
    }
    // The distinct sampled stacks in first-seen order, and the steps inverting them walks.
    let mut seen = vec![false; n];
    let mut sampled: Vec<u32> = Vec::new();
    let mut steps = 0u64;
    for &s in p.sample_stack {
        if !std::mem::replace(&mut seen[s as usize], true) {
            sampled.push(s);
            steps += u64::from(runs[s as usize]);
        }
    }
    drop(seen);
    if steps > step_budget {
        return Err(IrError::TooLarge(format!(
            "inverting walks {steps} frames, more than {step_budget} (the sum of the depths of the {} distinct sampled stacks, a run of direct recursion counted once; the profile has {} stacks, up to {} frames deep): invert a part of it (focus-func, max-depth, collapse-rec first)",
            sampled.len(),
            n,
            max_depth(p),
        )));
    }
    let mut r = Rebuild::new(p);
    r.new_stack = vec![DROPPED; n];
    r.merged_leaf = vec![true; n];
    // The chain `ns;f`, `ns;f;f`, … of each inverted stack `ns` and frame `f` that a run of
    // two or more `f` reached: a longer run extends it, a shorter one reads it.
    let mut chains: HashMap<(u32, u32), Vec<u32>, FixedState> =
        HashMap::with_hasher(FixedState::with_seed(7));
    for (i, &s) in sampled.iter().enumerate() {
        let mut ns = NONE;
        let mut cur = s;
        while cur != NONE {
            let c = cur as usize;
            let frame = p.stack_frame[c];
            let len = run_len[c] as usize;
            ns = if len == 1 {
                r.b.stack(ns, frame)
            } else {
                let chain = chains.entry((ns, frame)).or_default();
                while chain.len() < len {
                    let last = chain.last().copied().unwrap_or(ns);
                    chain.push(r.b.stack(last, frame));
                }
                chain[len - 1]
            };
            cur = run_above[c];
        }
        r.new_stack[s as usize] = ns;
        if r.b.profile().stacks.prefix.len() > bound {
            return Err(IrError::TooLarge(format!(
                "the inverted tree has more than {bound} stacks (the profile has {} stacks, up to {} frames deep; {} of {} sampled stacks inverted so far): invert a part of it (focus-func, max-depth, collapse-rec first)",
                n,
                max_depth(p),
                i + 1,
                sampled.len(),
            )));
        }
    }
    r.finish(p, sampled.len())
}

/// The deepest stack's number of frames.
fn max_depth(p: &ProfileRef<'_>) -> usize {
    let mut depth: Vec<u32> = Vec::with_capacity(p.n_stacks());
    for &prefix in p.stack_prefix {
        let d = if prefix == NONE {
            1
        } else {
            depth[prefix as usize] + 1
        };
        depth.push(d);
    }
    depth.iter().max().copied().unwrap_or(0) as usize
}

/// Escapes `\` and `;` in a name for a transform spec.
fn escape(name: &str, out: &mut String) {
    for c in name.chars() {
        if c == '\\' || c == ';' {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Splits `a;b\;c` into names, honouring `\;` and `\\`; no name may be empty.
fn split_path(text: &str) -> Result<Vec<String>, String> {
    let names = split_names(text)?;
    if names.iter().any(|n| n.is_empty()) {
        return Err(format!("empty function name in path `{text}`"));
    }
    Ok(names)
}

/// [`split_path`] without its check of empty names.
fn split_names(text: &str) -> Result<Vec<String>, String> {
    let mut names = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ';')) => names.last_mut().unwrap_or(&mut String::new()).push(e),
                Some(other) => {
                    return Err(format!("unknown escape `\\{other}` (use `\\;` or `\\\\`)"));
                }
                None => {
                    return Err(format!(
                        "`{text}` ends with a lone `\\` (write `\\\\` for a backslash)"
                    ));
                }
            },
            ';' => names.push(String::new()),
            c => {
                if let Some(last) = names.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    Ok(names)
}

fn single_name(text: &str) -> Result<String, String> {
    match split_names(text)?.as_slice() {
        [one] if one.is_empty() => Err("empty function name".into()),
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "`{text}` names a path; this transform takes one function (escape `;` as `\\;`)"
        )),
    }
}

/// The transform spec grammar, listed in the error for an unknown transform (the CLI's `-T` help
/// lists the same specs in its own text, and a test of the CLI checks that it has every one).
pub const SPEC_HELP: &str = "merge:PATH, merge-func:NAME, prune:PATH, drop:PATH, focus:PATH, \
focus-func:NAME, collapse-direct-rec[:NAME], collapse-rec[:NAME], invert, max-depth:N, \
min-total:FRACTION|PERCENT%; PATH is NAME;NAME;... from a root, `\\;` and `\\\\` escape";

impl std::str::FromStr for Transform {
    type Err = String;

    /// Parses a spec such as `merge:A;B;C`, `focus-func:main`, `max-depth:5`.
    fn from_str(spec: &str) -> Result<Transform, String> {
        let (kind, arg) = match spec.split_once(':') {
            Some((k, a)) => (k.trim(), Some(a)),
            None => (spec.trim(), None),
        };
        fn needed<'a>(kind: &str, a: Option<&'a str>) -> Result<&'a str, String> {
            a.filter(|a| !a.is_empty())
                .ok_or_else(|| format!("transform `{kind}` needs an argument: `{kind}:...`"))
        }
        let need = |a| needed(kind, a);
        // `collapse-rec` is every function, `collapse-rec:NAME` one; `collapse-rec:` is neither
        // (an empty name, as a variable left unset in a script would give).
        let optional_name = |a: Option<&str>| match a {
            None => Ok(None),
            Some("") => Err(format!(
                "transform `{kind}:` has an empty function name: write `{kind}` for every function or `{kind}:NAME` for one"
            )),
            Some(a) => single_name(a).map(Some),
        };
        let t = match kind {
            "merge" | "merge-call-node" => Transform::MergeCallNode(split_path(need(arg)?)?),
            "merge-func" | "merge-function" => Transform::MergeFunction(single_name(need(arg)?)?),
            "prune" | "merge-subtree" => Transform::MergeSubtree(split_path(need(arg)?)?),
            "drop" | "hide" => Transform::Drop(split_path(need(arg)?)?),
            "focus" | "focus-subtree" => Transform::FocusSubtree(split_path(need(arg)?)?),
            "focus-func" | "focus-function" => Transform::FocusFunction(single_name(need(arg)?)?),
            "collapse-direct-rec" => Transform::CollapseDirectRecursion(optional_name(arg)?),
            "collapse-rec" => Transform::CollapseRecursion(optional_name(arg)?),
            "invert" => match arg {
                None => Transform::Invert,
                Some(_) => return Err("`invert` takes no argument".into()),
            },
            "max-depth" => {
                let a = need(arg)?;
                let digits = a.trim();
                if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(format!(
                        "max-depth needs a whole number of levels (digits only), not `{a}`"
                    ));
                }
                // No stack is 2^32 frames deep: a larger limit is no limit.
                let n: u32 = digits.parse().unwrap_or(u32::MAX);
                if n == 0 {
                    return Err("max-depth must be at least 1".into());
                }
                Transform::MaxDepth(n)
            }
            "min-total" => Transform::MinTotal(need(arg)?.trim().parse()?),
            other => return Err(format!("unknown transform `{other}` (known: {SPEC_HELP})")),
        };
        Ok(t)
    }
}

impl fmt::Display for Transform {
    /// The spec form, which parses back to the same transform.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = |names: &[String]| {
            let mut s = String::new();
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    s.push(';');
                }
                escape(n, &mut s);
            }
            s
        };
        let one = |n: &str| {
            let mut s = String::new();
            escape(n, &mut s);
            s
        };
        match self {
            Transform::MergeCallNode(p) => write!(f, "merge:{}", path(p)),
            Transform::MergeFunction(n) => write!(f, "merge-func:{}", one(n)),
            Transform::MergeSubtree(p) => write!(f, "prune:{}", path(p)),
            Transform::Drop(p) => write!(f, "drop:{}", path(p)),
            Transform::FocusSubtree(p) => write!(f, "focus:{}", path(p)),
            Transform::FocusFunction(n) => write!(f, "focus-func:{}", one(n)),
            Transform::CollapseDirectRecursion(None) => f.write_str("collapse-direct-rec"),
            Transform::CollapseDirectRecursion(Some(n)) => {
                write!(f, "collapse-direct-rec:{}", one(n))
            }
            Transform::CollapseRecursion(None) => f.write_str("collapse-rec"),
            Transform::CollapseRecursion(Some(n)) => write!(f, "collapse-rec:{}", one(n)),
            Transform::Invert => f.write_str("invert"),
            Transform::MaxDepth(d) => write!(f, "max-depth:{d}"),
            Transform::MinTotal(x) => write!(f, "min-total:{x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calltree::CallTree;
    use crate::testing::seed_001;
    use crate::text::{TreeOrder, TreeTextOptions, render_tree};

    /// The tree in seed 001's notation: `NAME:total,self`, two spaces per level.
    fn figure(p: &Profile) -> String {
        let tree = CallTree::build(&p.view()).unwrap();
        let opts = TreeTextOptions {
            order: TreeOrder::FirstSeen,
            ..Default::default()
        };
        render_tree(&p.view(), &tree, &opts)
            .unwrap()
            .lines()
            .map(|l| {
                let (name, rest) = l.split_once(" self=").unwrap();
                let (selfv, total) = rest.split_once(" total=").unwrap();
                let total = total.split(' ').next().unwrap();
                format!("{name}:{total},{selfv}\n")
            })
            .collect()
    }

    fn run(p: &Profile, specs: &[&str]) -> Profile {
        let mut cur = p.clone();
        for spec in specs {
            let t: Transform = spec.parse().unwrap();
            cur = apply(&cur.view(), &t).unwrap().0;
        }
        cur
    }

    #[test]
    fn seed_001_merge_c() {
        assert_eq!(
            figure(&run(&seed_001(), &["merge:A;B;C"])),
            "A:3,0\n  B:3,0\n    D:1,0\n      E:1,1\n    F:1,0\n      G:1,1\n    H:1,0\n      F:1,1\n"
        );
    }

    #[test]
    fn seed_001_merge_e() {
        assert_eq!(
            figure(&run(&seed_001(), &["merge:A;B;C;D;E"])),
            "A:3,0\n  B:3,0\n    C:2,0\n      D:1,1\n      F:1,0\n        G:1,1\n    H:1,0\n      F:1,1\n"
        );
    }

    #[test]
    fn seed_001_merge_subtree_c() {
        assert_eq!(
            figure(&run(&seed_001(), &["prune:A;B;C"])),
            "A:3,0\n  B:3,2\n    H:1,0\n      F:1,1\n"
        );
    }

    #[test]
    fn seed_001_hide_c() {
        assert_eq!(
            figure(&run(&seed_001(), &["drop:A;B;C"])),
            "A:1,0\n  B:1,0\n    H:1,0\n      F:1,1\n"
        );
    }

    #[test]
    fn seed_001_focus_c() {
        assert_eq!(
            figure(&run(&seed_001(), &["focus:A;B;C"])),
            "C:2,0\n  D:1,0\n    E:1,1\n  F:1,0\n    G:1,1\n"
        );
    }

    #[test]
    fn order_matters_in_the_stack() {
        let p = seed_001();
        // Merging C first creates the node A;B;F, which the prune then finds...
        assert_eq!(
            figure(&run(&p, &["merge:A;B;C", "prune:A;B;F"])),
            "A:3,0\n  B:3,1\n    D:1,0\n      E:1,1\n    H:1,0\n      F:1,1\n"
        );
        // ...the other way round the prune names nothing, and the merge leaves F in place.
        assert_eq!(
            figure(&run(&p, &["prune:A;B;F", "merge:A;B;C"])),
            figure(&run(&p, &["merge:A;B;C"]))
        );
        // Focusing on F then inverting differs from inverting then focusing on F.
        assert_eq!(
            figure(&run(&p, &["focus-func:F", "invert"])),
            "G:1,0\n  F:1,1\nF:1,1\n"
        );
        assert_eq!(
            figure(&run(&p, &["invert", "focus-func:F"])),
            "F:2,0\n  C:1,0\n    B:1,0\n      A:1,1\n  H:1,0\n    B:1,0\n      A:1,1\n"
        );
    }

    /// A stack moved up to an outer call comes after the siblings the input reached first:
    /// `a;b;a;d` becomes `a;d`, after `a;c` (line 2). The walk made it while inside `b`, so
    /// `--order first-seen` listed `d` before `c`.
    #[test]
    fn collapsed_recursion_keeps_the_first_seen_order() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a", "b", "x"], &[1]).unwrap();
        b.add_stack(&["a", "c"], &[1]).unwrap();
        b.add_stack(&["a", "b", "a", "d"], &[1]).unwrap();
        let p = b.finish();
        assert_eq!(
            figure(&run(&p, &["collapse-rec"])),
            "a:3,0\n  b:1,0\n    x:1,1\n  c:1,1\n  d:1,1\n"
        );
    }

    #[test]
    fn recursion_collapses() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_value_type("calls", "count", ValueKind::Count);
        b.add_stack(&["main", "f", "f", "f", "leaf"], &[1, 1])
            .unwrap();
        b.add_stack(&["main", "f", "g", "f", "h"], &[2, 1]).unwrap();
        b.add_stack(&["main", "f", "g"], &[4, 1]).unwrap();
        let p = b.finish();
        assert_eq!(
            figure(&run(&p, &["collapse-direct-rec"])),
            "main:7,0\n  f:7,0\n    leaf:1,1\n    g:6,4\n      f:2,0\n        h:2,2\n"
        );
        assert_eq!(
            figure(&run(&p, &["collapse-rec:f"])),
            "main:7,0\n  f:7,0\n    leaf:1,1\n    g:4,4\n    h:2,2\n"
        );
        assert_eq!(
            figure(&run(&p, &["collapse-rec"])),
            figure(&run(&p, &["collapse-rec:f"]))
        );
        // Calls stay with the node they entered; a merged leaf's calls do not move up.
        let merged = run(&p, &["merge-func:leaf"]);
        let tree = CallTree::build(&merged.view()).unwrap();
        let f = tree
            .find_by_names(&merged.view(), &["main", "f", "f", "f"])
            .unwrap();
        assert_eq!(
            (
                tree.self_values[0][f as usize],
                tree.self_values[1][f as usize]
            ),
            (1, 0)
        );
    }

    #[test]
    fn max_depth_and_min_total() {
        let p = seed_001();
        assert_eq!(figure(&run(&p, &["max-depth:2"])), "A:3,0\n  B:3,3\n");
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a", "big"], &[98]).unwrap();
        b.add_stack(&["a", "tiny", "x"], &[1]).unwrap();
        b.add_stack(&["a", "small"], &[1]).unwrap();
        let p = b.finish();
        assert_eq!(
            figure(&run(&p, &["min-total:2%"])),
            "a:100,2\n  big:98,98\n"
        );
        assert_eq!(figure(&run(&p, &["min-total:0.01"])), figure(&p));
    }

    /// A profile of one `samples` column with these stacks (names root first) and values.
    fn profile(stacks: &[(&[&str], i64)]) -> Profile {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        for (names, v) in stacks {
            b.add_stack(names, &[*v]).unwrap();
        }
        b.finish()
    }

    /// A transform leaves no node without samples at or below it: dropping a root's only
    /// child drops the root too (as dropping the root itself does), and collapsing `a;b;a`
    /// leaves no empty `b`. Such nodes showed as `total=0` and were matched by later
    /// transforms.
    #[test]
    fn no_node_is_left_without_samples() {
        let p = profile(&[(&["f", "g"], 2)]);
        let dropped = run(&p, &["drop:f;g"]);
        assert_eq!(dropped.stacks.prefix.len(), 0);
        assert_eq!(figure(&dropped), "");
        let (_, applied) = apply(&dropped.view(), &"focus-func:f".parse().unwrap()).unwrap();
        assert_eq!(
            applied.matched, 0,
            "nothing left for a later transform to match"
        );
        let p = profile(&[(&["f", "g"], 2), (&["f", "h"], 3)]);
        assert_eq!(figure(&run(&p, &["drop:f;g"])), "f:3,0\n  h:3,3\n");
        let p = profile(&[(&["a", "b", "a"], 1)]);
        assert_eq!(figure(&run(&p, &["collapse-rec"])), "a:1,1\n");
        // Stacks of the input that have no samples go too, with the ids of the others in
        // their order.
        let mut q = profile(&[(&["a", "b"], 1), (&["c"], 2), (&["a"], 3)]);
        assert_eq!(q.samples.stack, [1, 2, 0]);
        q.samples.stack.remove(0);
        q.samples.values[0].remove(0);
        // Before that, no transform counts it as matched: `a;b` (now without samples) is no
        // target, `a` and `c` still are.
        for (spec, matched) in [
            ("drop:a;b", 0),
            ("merge:a;b", 0),
            ("merge-func:b", 0),
            ("focus-func:b", 0),
            ("focus:a", 1),
            ("focus-func:c", 1),
        ] {
            let (_, applied) = apply(&q.view(), &spec.parse().unwrap()).unwrap();
            assert_eq!(applied.matched, matched, "{spec}");
        }
        assert_eq!(q.drop_stacks_without_samples(), 1);
        assert_eq!(q.stacks.prefix, [NONE, NONE]);
        assert_eq!(q.samples.stack, [1, 0]);
        assert_eq!(figure(&q), "a:3,3\nc:2,2\n");
    }

    /// Each transform counts the stacks (with samples on or below them) it matched and the
    /// samples it removed: what the CLI's "matched nothing" and "removed N sample(s) whose
    /// stack became empty" warnings read.
    #[test]
    fn every_transform_counts_what_it_matched_and_removed() {
        let p = profile(&[
            (&["main", "f", "f", "g"], 1),
            (&["main", "f", "h", "f"], 2),
            (&["main", "k"], 3),
        ]);
        for (spec, matched, removed) in [
            ("merge:main;f", 1, 0),
            ("merge-func:f", 3, 0),
            ("prune:main;f;h", 1, 0),
            ("drop:main;k", 1, 1),
            ("focus:main;f", 1, 1),
            ("focus-func:f", 1, 1),
            ("collapse-direct-rec", 1, 0),
            ("collapse-direct-rec:g", 0, 0),
            ("collapse-rec", 2, 0),
            ("collapse-rec:f", 2, 0),
            ("collapse-rec:g", 0, 0),
            ("invert", 3, 0),
            ("max-depth:2", 4, 0),
            // 34 % of 6 is 2.04: `main;f;f` (1) and `main;f;h` (2) go, with what is under them.
            ("min-total:34%", 4, 0),
        ] {
            let (_, applied) = apply(&p.view(), &spec.parse().unwrap()).unwrap();
            assert_eq!(
                (applied.matched, applied.samples_removed),
                (matched, removed),
                "{spec}"
            );
        }
        // Merging a root leaves its own samples without a stack: they are removed.
        let p = profile(&[(&["main"], 4), (&["main", "k"], 1), (&["main"], 2)]);
        let (q, applied) = apply(&p.view(), &"merge:main".parse().unwrap()).unwrap();
        assert_eq!((applied.matched, applied.samples_removed), (1, 1));
        assert_eq!(figure(&q), "k:1,1\n");
    }

    /// The threshold is exact: a node whose total is exactly X × the grand total stays (as
    /// floating point, 70% of 10 is 7.000000000000001, and a node of 7 was merged), and one a
    /// unit below it goes, however large the totals.
    #[test]
    fn min_total_compares_exactly() {
        let p = profile(&[(&["a", "b"], 7), (&["a"], 3)]);
        for spec in ["min-total:70%", "min-total:0.7", "min-total:.70"] {
            assert_eq!(figure(&run(&p, &[spec])), "a:10,3\n  b:7,7\n", "{spec}");
        }
        assert_eq!(figure(&run(&p, &["min-total:70.1%"])), "a:10,10\n");
        let p = profile(&[(&["a", "b"], 7), (&["a"], 93)]);
        assert_eq!(figure(&run(&p, &["min-total:0.07"])), "a:100,93\n  b:7,7\n");
        // 2^53: as f64, 2^53 + 1 rounds to 2^53 and `b` was not below the whole.
        let big = 1i64 << 53;
        let p = profile(&[(&["a", "b"], big), (&["a"], 1)]);
        assert_eq!(
            figure(&run(&p, &["min-total:1"])),
            format!("a:{},{}\n", big + 1, big + 1)
        );
    }

    /// `min-total` judges a call node as every transform names it, functions compared by
    /// name: two `f`s of different files under `main`, 5 each, are one node of 10, kept at
    /// 60 %; judged apart (as the call tree builds nodes) each was below and both were merged
    /// into `main`.
    #[test]
    fn min_total_compares_functions_by_name() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let main = b.func("main");
        let main = b.frame(main);
        let main = b.stack(NONE, main);
        for file in ["a.c", "b.c"] {
            let f = b.func_with("f", Some(file), None, None);
            let f = b.frame(f);
            let s = b.stack(main, f);
            b.push_sample(s, None, &[5]);
        }
        b.push_sample(main, None, &[1]);
        let p = b.finish();
        // The node `main;f` is 10 of 11 (90.9 %), each `f` 5 (45.5 %).
        for spec in ["min-total:60%", "min-total:90%"] {
            assert_eq!(
                figure(&run(&p, &[spec])),
                "main:11,1\n  f:5,5\n  f:5,5\n",
                "{spec}"
            );
        }
        assert_eq!(figure(&run(&p, &["min-total:91%"])), "main:11,11\n");
    }

    /// A differential profile keeps a node that either column keeps: `b`, new in `after` (50
    /// of 70), was merged into `main` by `before`'s measure (0 of 15), though the differential
    /// flame graph draws `after`'s shape; `c`, gone in `after` (5 of 15 before), stays too.
    #[test]
    fn min_total_of_a_differential_profile_keeps_what_either_side_keeps() {
        // The callees of `main` left by `min-total:10%` in a differential profile of `rows`.
        let kept = |rows: &[(&str, i64, i64)]| -> Vec<String> {
            let mut b = ProfileBuilder::new();
            b.add_value_type("before", "count", ValueKind::Weight);
            b.add_value_type("after", "count", ValueKind::Weight);
            b.add_meta("diff", crate::diff::DIFF_COLUMNS);
            for &(f, before, after) in rows {
                b.add_stack(&["main", f], &[before, after]).unwrap();
            }
            let t = run(&b.finish(), &["min-total:10%"]);
            let v = t.view();
            (0..v.n_stacks())
                .filter(|&s| v.stack_prefix[s] != NONE)
                .map(|s| v.func_name_str(v.stack_func(s as u32)).to_string())
                .collect()
        };
        assert_eq!(
            kept(&[("a", 10, 20), ("b", 0, 50), ("c", 5, 0), ("d", 0, 1)]),
            ["a", "b", "c"],
            "d, 1 of 71, is merged"
        );
        // A side of no total is not measured: it kept every node.
        assert_eq!(kept(&[("a", 20, 0), ("b", 50, 0), ("d", 1, 0)]), ["a", "b"]);
    }

    #[test]
    fn specs_parse_print_and_escape() {
        for spec in [
            "merge:A;B;C",
            "merge-func:F",
            "prune:a\\;b;c",
            "drop:x\\\\y",
            "focus:A",
            "focus-func:main",
            "collapse-direct-rec",
            "collapse-rec:f",
            "invert",
            "max-depth:4",
            "min-total:0.01",
        ] {
            let t: Transform = spec.parse().unwrap();
            assert_eq!(t.to_string(), spec);
        }
        assert_eq!(
            "prune:a\\;b;c".parse::<Transform>().unwrap(),
            Transform::MergeSubtree(vec!["a;b".into(), "c".into()])
        );
        assert_eq!(
            "min-total:1%".parse::<Transform>().unwrap(),
            Transform::MinTotal(Fraction::decimal(1, 2).unwrap())
        );
        // One value, one form: what prints parses back to it.
        for (spec, printed) in [
            ("min-total:70%", "min-total:0.7"),
            ("min-total:0.500", "min-total:0.5"),
            ("min-total:100%", "min-total:1"),
            ("min-total:0%", "min-total:0"),
            ("max-depth: 7 ", "max-depth:7"),
            ("max-depth:4294967296", "max-depth:4294967295"),
            ("max-depth:99999999999999999999999", "max-depth:4294967295"),
            ("min-total: 1% ", "min-total:0.01"),
            (
                "min-total:0.000000000000000001",
                "min-total:0.000000000000000001",
            ),
        ] {
            let t: Transform = spec.parse().unwrap();
            assert_eq!(t.to_string(), printed, "{spec}");
            assert_eq!(printed.parse::<Transform>().unwrap(), t);
        }
        for bad in [
            "fold:A",
            "merge",
            "merge:",
            "merge:A;;B",
            "max-depth:0",
            "max-depth:x",
            "max-depth:+2",
            "max-depth:-1",
            "max-depth: ",
            "min-total:2",
            "min-total:101%",
            "min-total:1e-2",
            "min-total:-0",
            "min-total:.",
            "min-total:0.0000000000000000001",
            "min-total:999.999999999999999999",
            "min-total:20.000000000000000001",
            "min-total:100.000000000000000001",
            "invert:1",
            "merge-func:a;b",
            "drop:a\\q",
            "collapse-rec:",
            "collapse-direct-rec:",
        ] {
            assert!(bad.parse::<Transform>().is_err(), "{bad} should not parse");
        }
        assert!(
            "fold:A"
                .parse::<Transform>()
                .unwrap_err()
                .contains("merge:PATH")
        );
        // A function's errors speak of a function, not a path.
        for (bad, message) in [
            (
                "merge-func:;",
                "`;` names a path; this transform takes one function",
            ),
            ("merge-func:a\\", "`a\\` ends with a lone `\\`"),
            ("merge:a\\", "`a\\` ends with a lone `\\`"),
            ("merge:a;;b", "empty function name in path `a;;b`"),
        ] {
            let e = bad.parse::<Transform>().unwrap_err();
            assert!(e.contains(message), "{bad}: {e}");
        }
        // Blanks before a `%` are ignored, as around the number.
        assert_eq!(
            "min-total:5 %".parse::<Transform>().unwrap(),
            "min-total:5%".parse::<Transform>().unwrap()
        );
    }

    #[test]
    fn invert_stops_at_its_bound() {
        // A chain of 100 distinct functions with samples at every depth inverts into
        // 1 + 2 + … + 100 = 5 050 stacks (the square of the depth).
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let names: Vec<String> = (0..100).map(|i| format!("f{i}")).collect();
        for depth in 1..=names.len() {
            b.add_stack(&names[..depth], &[1]).unwrap();
        }
        let p = b.finish();
        let (inverted, applied) = invert_within(&p.view(), 5_050, INVERT_MIN_STEPS).unwrap();
        assert_eq!(inverted.stacks.prefix.len(), 5_050);
        assert_eq!(applied.matched, 100);
        let e = invert_within(&p.view(), 5_049, INVERT_MIN_STEPS)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("too large: the inverted tree has more than 5049 stacks (the profile has 100 stacks, up to 100 frames deep; 100 of 100 sampled stacks inverted so far)"),
            "{e}"
        );
        assert_eq!(invert_bound(100), INVERT_MIN_STACKS);
        assert_eq!(invert_bound(1 << 20), 16 << 20);
    }

    /// The inversion as it was first written: every sampled stack walked frame by frame.
    fn invert_plain(p: &ProfileRef<'_>) -> Profile {
        let mut r = Rebuild::new(p);
        r.new_stack = vec![DROPPED; p.n_stacks()];
        r.merged_leaf = vec![true; p.n_stacks()];
        for &s in p.sample_stack {
            let mut ns = NONE;
            let mut cur = s;
            while cur != NONE {
                ns = r.b.stack(ns, p.stack_frame[cur as usize]);
                cur = p.stack_prefix[cur as usize];
            }
            r.new_stack[s as usize] = ns;
        }
        r.finish(p, 0).unwrap().0
    }

    fn same_profile(a: &Profile, b: &Profile) -> bool {
        a.stacks.prefix == b.stacks.prefix
            && a.stacks.frame == b.stacks.frame
            && a.samples.stack == b.samples.stack
            && a.samples.time == b.samples.time
            && a.samples.values == b.samples.values
    }

    #[test]
    fn invert_matches_a_plain_walk() {
        // Random trees over three functions, with long runs of direct recursion, sampled or
        // not, time-ordered or aggregated: the same stacks, in the same order, as a plain walk.
        let mut rng = crate::testing::XorShift::new(17);
        for case in 0..300 {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_value_type("calls", "count", ValueKind::Count);
            let ordered = case % 2 == 0;
            if ordered {
                b.set_flags(crate::flags::ORDERED);
            }
            let frames = crate::testing::numbered_frames(&mut b, 3);
            let mut made = vec![NONE];
            for i in 0..rng.below(60) as i64 {
                let mut s = made[rng.below(made.len() as u64) as usize];
                let frame = frames[rng.below(3) as usize];
                let longest = if rng.below(3) == 0 { 12 } else { 2 };
                for _ in 0..1 + rng.below(longest) {
                    s = b.stack(s, frame);
                    made.push(s);
                }
                if rng.below(4) != 0 {
                    let row = [1 + rng.below(5) as i64, 1];
                    if ordered {
                        b.push_sample(s, Some(i), &row);
                    } else {
                        b.add_to_stack(s, &row).unwrap();
                    }
                }
            }
            let p = b.finish();
            let (inverted, applied) = invert(&p.view()).unwrap();
            let plain = invert_plain(&p.view());
            assert!(same_profile(&inverted, &plain), "case {case}");
            assert_eq!(applied.matched, distinct_sampled(&p));
        }
    }

    fn distinct_sampled(p: &Profile) -> usize {
        let mut seen = vec![false; p.stacks.prefix.len()];
        p.samples
            .stack
            .iter()
            .filter(|&&s| !std::mem::replace(&mut seen[s as usize], true))
            .count()
    }

    #[test]
    fn invert_deep_direct_recursion_is_linear() {
        // main;f;f;…;f 200 000 deep with samples at every level, and a sampled g under each
        // f: inverted, `f;…;f;main` and `g;f;…;f;main` at every depth (4 N + 1 stacks with
        // their prefixes). A frame-by-frame walk would take 4·10¹⁰ steps; a run of f is one
        // step: 2 + 3 steps per level, exactly the budget given.
        const N: usize = 200_000;
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let fr = crate::testing::numbered_frames(&mut b, 3);
        let (main, f, g) = (fr[0], fr[1], fr[2]);
        let mut s = b.stack(NONE, main);
        for _ in 0..N {
            s = b.stack(s, f);
            b.add_to_stack(s, &[1]).unwrap();
            let leaf = b.stack(s, g);
            b.add_to_stack(leaf, &[2]).unwrap();
        }
        let p = b.finish();
        let steps = 5 * N as u64;
        let (inverted, applied) = invert_within(&p.view(), 4 * N + 1, steps).unwrap();
        assert_eq!(applied.matched, 2 * N);
        assert_eq!(inverted.stacks.prefix.len(), 4 * N + 1);
        // Each sample moved to the reversed stack: same depth, frames reversed, values kept.
        let frames_of = |q: &Profile, mut s: u32| {
            let mut v = Vec::new();
            while s != NONE {
                v.push(q.stacks.frame[s as usize]);
                s = q.stacks.prefix[s as usize];
            }
            v
        };
        assert_eq!(inverted.samples.stack.len(), 2 * N);
        for i in [0, 1, N, 2 * N - 2, 2 * N - 1] {
            let mut before = frames_of(&p, p.samples.stack[i]);
            before.reverse();
            assert_eq!(frames_of(&inverted, inverted.samples.stack[i]), before);
            assert_eq!(inverted.samples.values[0][i], p.samples.values[0][i]);
        }
        let e = invert_within(&p.view(), 4 * N + 1, steps - 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "too large: inverting walks {steps} frames, more than {}",
                steps - 1
            )),
            "{e}"
        );
    }

    #[test]
    fn invert_stops_at_its_step_budget() {
        // Mutual recursion f;g;f;g;… 2 000 deep, sampled at every level, inverts into 4 000
        // stacks but walks 1 + 2 + … + 2 000 = 2 001 000 steps: the budget stops it first.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let fr = crate::testing::numbered_frames(&mut b, 2);
        let mut s = NONE;
        for d in 0..2_000 {
            s = b.stack(s, fr[d % 2]);
            b.add_to_stack(s, &[1]).unwrap();
        }
        let p = b.finish();
        let (inverted, _) = invert_within(&p.view(), 4_000, 2_001_000).unwrap();
        assert_eq!(inverted.stacks.prefix.len(), 3_999);
        let e = invert_within(&p.view(), 4_000, 2_000_999)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "too large: inverting walks 2001000 frames, more than 2000999 (the sum of the depths of the 2000 distinct sampled stacks, a run of direct recursion counted once; the profile has 2000 stacks, up to 2000 frames deep): invert a part of it (focus-func, max-depth, collapse-rec first)"
        );
        assert_eq!(invert_step_budget(100), INVERT_MIN_STEPS);
        assert_eq!(invert_step_budget(1 << 24), 256 << 24);
    }

    #[test]
    fn time_order_survives() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let s1 = b.stack_of_names(&["main", "a"]);
        let s2 = b.stack_of_names(&["main", "b"]);
        for (i, s) in [s1, s2, s1].into_iter().enumerate() {
            b.push_sample(s, Some(i as i64 * 10), &[10]);
        }
        b.set_flags(crate::flags::ORDERED);
        let p = run(&b.finish(), &["merge:main;a"]);
        assert_eq!(
            p.samples.stack.len(),
            3,
            "ordered samples are not aggregated"
        );
        assert_eq!(p.samples.time.as_deref(), Some(&[0, 10, 20][..]));
    }

    /// Every transform the shortcut may take: some change nothing on any profile below (names
    /// no function has, depths above any stack, a fraction no node is below), some change
    /// something on some.
    const SHORTCUT_SPECS: &[&str] = &[
        "merge-func:nomatch",
        "merge-func:f0",
        "merge:nomatch",
        "merge:f0;f1",
        "prune:nomatch",
        "prune:f1",
        "drop:nomatch",
        "drop:f2",
        "focus:f0",
        "focus-func:f1",
        "collapse-direct-rec",
        "collapse-direct-rec:nomatch",
        "collapse-direct-rec:f1",
        "collapse-rec",
        "collapse-rec:nomatch",
        "collapse-rec:f2",
        "invert",
        "max-depth:1",
        "max-depth:3",
        "max-depth:1000",
        "min-total:0",
        "min-total:0.2",
    ];

    /// `apply_or_keep`'s result as a profile: the one it built, or `p` when it kept `p`.
    fn kept_or_built(p: &Profile, t: &Transform) -> Result<(Option<String>, Applied), String> {
        apply_or_keep(&p.view(), t)
            .map(|(q, a)| (q.map(|q| format!("{q:?}")), a))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_transform_that_changes_nothing_keeps_the_profile_instead_of_building_it() {
        let aggregated = seed_001();
        let ordered = crate::testing::trace(&[
            "C main 0",
            "C a 10",
            "E 20",
            "C b 30",
            "C a 35",
            "E 40",
            "E 50",
            "E 60",
            "R two",
            "C main 70",
            "C a 80",
            "E 90",
            "E 100",
        ]);
        for p in [&aggregated, &ordered] {
            for spec in [
                "merge-func:nomatch",
                "merge:nomatch",
                "merge:A;nomatch",
                "prune:nomatch",
                "drop:nomatch",
                "collapse-direct-rec",
                "collapse-rec",
                "collapse-rec:nomatch",
                "max-depth:1000",
                "min-total:0",
            ] {
                crate::testing::assert_kept_as_rebuilt(p, spec);
            }
            // One that changes something builds.
            let t: Transform = "max-depth:1".parse().unwrap();
            assert!(apply_or_keep(&p.view(), &t).unwrap().0.is_some());
        }
    }

    #[test]
    fn a_profile_a_rebuild_changes_is_rebuilt_even_by_a_transform_that_matches_nothing() {
        let t: Transform = "merge-func:nomatch".parse().unwrap();
        let changed = |p: &Profile| apply_or_keep(&p.view(), &t).unwrap().0.is_some();
        let good = seed_001();
        assert!(!changed(&good));
        // A stack without samples (dropped by a rebuild).
        let mut dead = good.clone();
        dead.stacks.prefix.push(0);
        dead.stacks.frame.push(dead.stacks.frame[4]);
        assert!(changed(&dead));
        // Two stacks of one prefix and frame (made one).
        let mut twice = good.clone();
        twice.stacks.prefix.push(NONE);
        twice.stacks.frame.push(twice.stacks.frame[0]);
        twice
            .samples
            .stack
            .push(twice.stacks.prefix.len() as u32 - 1);
        for col in &mut twice.samples.values {
            col.push(1);
        }
        assert!(changed(&twice));
        // Two rows of one stack without time order (added up).
        let mut rows = good.clone();
        rows.samples.stack.push(rows.samples.stack[0]);
        rows.samples.values[0].push(1);
        assert!(changed(&rows));
        // ... but in two threads they stay two.
        let mut threads = rows.clone();
        let name = threads.strings.intern("t");
        threads.threads = vec![name, name];
        threads.samples.thread = Some(vec![0, 0, 0, 1]);
        assert!(!changed(&threads));
        // A time column without time order (not kept).
        let mut timed = good.clone();
        timed.samples.time = Some(vec![0; timed.samples.stack.len()]);
        assert!(changed(&timed));
    }

    /// On random profiles, each valid but many not what a rebuild gives (stacks without
    /// samples, stacks made twice, rows of one stack without time order, threads): every
    /// transform gives the same profile, column for column, with the shortcut (the profile
    /// itself when it keeps it) and without, and finds the same.
    #[test]
    fn the_shortcut_gives_what_a_rebuild_gives() {
        let mut rng = crate::testing::XorShift::new(29);
        let mut kept = 0;
        for case in 0..400 {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_value_type("calls", "count", ValueKind::Count);
            let ordered = case % 2 == 0;
            let canonical = case % 4 < 2;
            if ordered {
                b.set_flags(crate::flags::ORDERED);
            }
            let threads = rng.below(3) == 0;
            if threads {
                b.add_thread("one");
                b.add_thread("two");
                b.start_thread_column();
            }
            let frames = crate::testing::numbered_frames(&mut b, 3);
            let mut p = b.finish();
            let n_stacks = 1 + rng.below(25) as usize;
            let mut made: Vec<(u32, u32)> = Vec::new();
            for _ in 0..n_stacks {
                let len = p.stacks.prefix.len() as u64;
                let prefix = if len == 0 || rng.below(4) == 0 {
                    NONE
                } else {
                    rng.below(len) as u32
                };
                let frame = frames[rng.below(3) as usize];
                if canonical && made.contains(&(prefix, frame)) {
                    continue;
                }
                made.push((prefix, frame));
                p.stacks.prefix.push(prefix);
                p.stacks.frame.push(frame);
            }
            let n = p.stacks.prefix.len() as u64;
            let mut rows: Vec<u32> = if canonical {
                (0..n as u32).collect()
            } else {
                (0..rng.below(2 * n)).map(|_| rng.below(n) as u32).collect()
            };
            if canonical && !ordered && !threads {
                rows.sort_unstable();
                rows.dedup();
            }
            for (i, &s) in rows.iter().enumerate() {
                p.samples.stack.push(s);
                p.samples.values[0].push(rng.below(10) as i64);
                p.samples.values[1].push(rng.below(3) as i64);
                if let Some(t) = &mut p.samples.thread {
                    t.push(if canonical && !ordered {
                        0
                    } else {
                        rng.below(2) as u32
                    });
                }
                if ordered && case % 8 == 0 {
                    p.samples.time.get_or_insert_with(Vec::new).push(i as i64);
                }
            }
            p.view().validate().unwrap();
            for spec in SHORTCUT_SPECS {
                let t: Transform = spec.parse().unwrap();
                let rebuilt = apply(&p.view(), &t)
                    .map(|(q, a)| (format!("{q:?}"), a))
                    .map_err(|e| e.to_string());
                let shortcut = kept_or_built(&p, &t).map(|(q, a)| {
                    kept += usize::from(q.is_none());
                    (q.unwrap_or_else(|| format!("{p:?}")), a)
                });
                assert_eq!(shortcut, rebuilt, "case {case}, {spec}");
            }
        }
        assert!(kept > 300, "the shortcut was taken {kept} times");
    }
}
