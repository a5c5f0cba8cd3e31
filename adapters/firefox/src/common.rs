//! What both emitters share: the choice of the weight column, units, the time axis, samples per
//! thread, the depth-first order of stacks and aggregation per stack.

use profconv_plugin::PluginError;
use profconv_plugin::ir::{CallNodes, IrError, NONE, ProfileRef, ValueKind};
use serde::{Serialize, Serializer};

/// Name of the one thread written for a profile without threads.
pub const DEFAULT_THREAD_NAME: &str = "Main";

/// A JSON number: an exact integer, an unsigned integer (addresses) or a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// An integer, written exactly.
    I(i64),
    /// An unsigned integer (code addresses), written exactly.
    U(u64),
    /// A fraction, written as the shortest decimal that reads back to the same `f64`.
    F(f64),
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Num::I(v) => s.serialize_i64(v),
            Num::U(v) => s.serialize_u64(v),
            Num::F(v) => s.serialize_f64(v),
        }
    }
}

/// A column of `n` copies of one value, written without storing them.
pub struct Fill<T>(pub T, pub usize);

impl<T: Serialize> Serialize for Fill<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.1))?;
        for _ in 0..self.1 {
            seq.serialize_element(&self.0)?;
        }
        seq.end()
    }
}

/// Largest integer a JavaScript number holds exactly (2^53).
const JS_EXACT: i128 = 1 << 53;

/// Where a timeline of the sample times `times` starts from: 0, so that they are written as
/// they are, unless one is past 2^53, which a browser reads as a double, rounded (absolute
/// ticks of a long-running PVM put calls 10 ticks apart at 16 and one 5 ticks long at 0):
/// then the earliest, so that the timeline holds the differences, exactly.
pub fn time_origin(times: &[i64]) -> i128 {
    match times.iter().any(|&t| i128::from(t).abs() > JS_EXACT) {
        true => times.iter().min().map_or(0, |&t| i128::from(t)),
        false => 0,
    }
}

/// `v × 10^exp10` as a JSON number: an integer when it is one (and fits), else the double
/// nearest it, rounded once.
pub fn scaled(v: i128, exp10: i32) -> Num {
    if exp10 >= 0 {
        if let Some(x) = 10i128
            .checked_pow(exp10 as u32)
            .and_then(|m| v.checked_mul(m))
        {
            if let Ok(i) = i64::try_from(x) {
                return Num::I(i);
            }
        }
        return Num::F(nearest_f64(v, exp10));
    }
    let d = 10i128
        .checked_pow(exp10.unsigned_abs())
        .unwrap_or(i128::MAX);
    if v % d == 0 {
        if let Ok(i) = i64::try_from(v / d) {
            return Num::I(i);
        }
    }
    // Both operands exact in a double (|v| ≤ 2^53, 10^22 the largest exact power of ten): one
    // IEEE division, correctly rounded. Else converting `v` would round once before the
    // division rounds again.
    let x = if v.abs() <= JS_EXACT && exp10 >= -22 {
        v as f64 / d as f64
    } else {
        nearest_f64(v, exp10)
    };
    if x.fract() == 0.0 && (x as i128).abs() < JS_EXACT {
        Num::I(x as i64)
    } else {
        Num::F(x)
    }
}

/// The double nearest `v × 10^exp10`, rounded once: the exact decimal, read as Rust reads a
/// float literal (correctly rounded).
fn nearest_f64(v: i128, exp10: i32) -> f64 {
    format!("{v}e{exp10}")
        .parse()
        .unwrap_or(v as f64 * 10f64.powi(exp10))
}

/// What a unit measures, as far as the viewers care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    /// A duration; `exp10` converts it to milliseconds (ns: -6, µs: -3, ms: 0, s: 3).
    Time {
        /// Power of ten from this unit to milliseconds.
        exp10_to_ms: i32,
        /// speedscope's name of the unit.
        speedscope: &'static str,
    },
    /// Bytes (allocation sizes).
    Bytes,
    /// Anything else: sample counts, ticks, instructions, calls.
    Other,
}

/// The kind of a unit name (`nanoseconds`, `ns`, `bytes`, `ticks`, ...).
pub fn unit_kind(unit: &str) -> UnitKind {
    let t = |exp10_to_ms, speedscope| UnitKind::Time {
        exp10_to_ms,
        speedscope,
    };
    match unit.to_ascii_lowercase().as_str() {
        "ns" | "nanosecond" | "nanoseconds" | "nsec" => t(-6, "nanoseconds"),
        // Both micro signs: U+00B5 (MICRO SIGN) and U+03BC (GREEK SMALL LETTER MU, what NFKC
        // normalization and Greek keyboards give).
        "us" | "\u{b5}s" | "\u{3bc}s" | "microsecond" | "microseconds" | "usec" => {
            t(-3, "microseconds")
        }
        "ms" | "millisecond" | "milliseconds" | "msec" => t(0, "milliseconds"),
        "s" | "sec" | "second" | "seconds" => t(3, "seconds"),
        "b" | "byte" | "bytes" => UnitKind::Bytes,
        _ => UnitKind::Other,
    }
}

/// The clock of the sample times of an ordered profile: the column the `time_unit` metadata
/// names (by column name or unit), else the first `Weight` column. Its values are each sample's
/// duration.
pub fn time_column(p: &ProfileRef<'_>) -> Option<usize> {
    let by_meta = p.meta("time_unit").and_then(|u| {
        let kind = unit_kind(u);
        (0..p.value_types.len()).find(|&i| {
            p.value_type_name(i) == u
                || p.value_type_unit(i) == u
                || (kind != UnitKind::Other && unit_kind(p.value_type_unit(i)) == kind)
        })
    });
    by_meta.or_else(|| p.default_weight())
}

/// The name of output thread `t`.
pub fn thread_name<'p>(p: &ProfileRef<'p>, t: usize) -> &'p str {
    match p.thread_name.get(t) {
        Some(&s) => p.strings.get(s),
        None => DEFAULT_THREAD_NAME,
    }
}

/// The rank of [`stack_rank_and_spare`] alone.
#[cfg(test)]
pub fn stack_rank(p: &ProfileRef<'_>) -> Vec<u32> {
    stack_rank_and_spare(p).0
}

/// Position of each stack in a depth-first walk of the call tree with siblings by function name
/// (bytewise; ties by func), the stacks of one call node (frames of one func at other lines or
/// addresses) one after another in first-seen order: the order of a flame graph, so every call
/// node's subtree has its samples together. With it, a spare array of one `NONE` per stack (the
/// memory of a temporary, to be reused as a per-stack scratch map).
pub fn stack_rank_and_spare(p: &ProfileRef<'_>) -> (Vec<u32>, Vec<u32>) {
    let n = p.n_stacks();
    // Funcs ranked by name once, so sibling sorts compare integers.
    let funcs = profconv_plugin::ir::strings::order_by_bytes(
        p.n_funcs(),
        |f| p.func_name_str(f).as_bytes(),
        None,
    );
    let mut func_rank = vec![0u32; funcs.len()];
    for (r, &f) in funcs.iter().enumerate() {
        func_rank[f as usize] = r as u32;
    }
    drop(funcs);
    let key = |f: u32| ((func_rank[f as usize] as u64) << 32) | f as u64;
    // When no func has two frames (folded stacks: most profiles), sibling stacks have distinct
    // funcs, so the stacks are the call nodes.
    let mut frame_of = vec![NONE; p.n_funcs()];
    let one_frame_each = p.frame_func.iter().enumerate().all(|(frame, &f)| {
        let slot = &mut frame_of[f as usize];
        let first = *slot == NONE;
        *slot = frame as u32;
        first
    });
    drop(frame_of);
    if one_frame_each {
        let func = |s: u32| p.frame_func[p.stack_frame[s as usize] as usize];
        return tree_rank(n, |i| p.stack_prefix[i], |s| key(func(s)));
    }
    // Otherwise the call nodes are ranked, then each node's stacks take the places from its
    // rank on (a counting sort by node rank, stacks in index order).
    let nodes = CallNodes::build(p);
    let (node_rank, _) = tree_rank(
        nodes.parent.len(),
        |i| nodes.parent[i],
        |v| key(nodes.func[v as usize]),
    );
    let mut start = vec![0u32; node_rank.len() + 1];
    for &v in &nodes.stack_node {
        start[node_rank[v as usize] as usize + 1] += 1;
    }
    for r in 1..start.len() {
        start[r] += start[r - 1];
    }
    let rank = nodes
        .stack_node
        .iter()
        .map(|&v| {
            let at = &mut start[node_rank[v as usize] as usize];
            *at += 1;
            *at - 1
        })
        .collect();
    (rank, vec![NONE; n])
}

/// The depth-first position of each of `n` tree nodes (`prefix(i) < i`, or `NONE` for a root),
/// siblings by `key` (distinct among siblings), and a spare array of `n` `NONE`s.
///
/// No recursion, no hashing and no walk in depth-first order (which would jump around memory):
/// one backward pass links each node's children (in first-seen order) and sums subtree sizes;
/// one forward pass, parents before children, sorts each node's children by key and places them
/// one after another right after their parent: a child's position is its parent's, plus one,
/// plus the sizes of the siblings before it. The size array becomes the rank array as it goes
/// (a child's size is read just before its position is written).
fn tree_rank(
    n: usize,
    prefix: impl Fn(usize) -> u32,
    key: impl Fn(u32) -> u64,
) -> (Vec<u32>, Vec<u32>) {
    let mut rank = vec![1u32; n]; // subtree sizes first
    let mut first_child = vec![NONE; n];
    let mut next_sibling = vec![0u32; n]; // every entry is set below
    let mut first_root = NONE;
    for i in (0..n).rev() {
        match prefix(i) {
            NONE => {
                next_sibling[i] = first_root;
                first_root = i as u32;
            }
            pre => {
                let pre = pre as usize;
                rank[pre] += rank[i];
                next_sibling[i] = first_child[pre];
                first_child[pre] = i as u32;
            }
        }
    }
    let mut kids: Vec<(u64, u32)> = Vec::new();
    let mut place = |head: u32, first: u32, rank: &mut [u32]| {
        if head == NONE {
            return;
        }
        if next_sibling[head as usize] == NONE {
            // An only child (most nodes).
            rank[head as usize] = first;
            return;
        }
        kids.clear();
        let mut c = head;
        while c != NONE {
            kids.push((key(c), c));
            c = next_sibling[c as usize];
        }
        kids.sort_unstable();
        let mut at = first;
        for &(_, c) in &kids {
            let size = rank[c as usize];
            rank[c as usize] = at;
            at += size;
        }
    };
    place(first_root, 0, &mut rank);
    for v in 0..n {
        let first = rank[v] + 1;
        place(first_child[v], first, &mut rank);
    }
    drop(next_sibling);
    first_child.fill(NONE);
    (rank, first_child)
}

/// Sums of one thread's samples per stack, sorted in depth-first order
/// ([`stack_rank_and_spare`]): one row per distinct stack with its self value (`col`'s values,
/// or the number of samples without a column). Scratch `acc` has one slot per stack, all
/// `NONE`, and is left so.
pub fn aggregate_per_stack(
    p: &ProfileRef<'_>,
    samples: &[u32],
    col: Option<usize>,
    rank: &[u32],
    acc: &mut [u32],
) -> Result<Vec<(u32, i64)>, PluginError> {
    let mut rows: Vec<(u32, i64)> = Vec::new();
    for &i in samples {
        let i = i as usize;
        let s = p.sample_stack[i];
        let v = col.map_or(1, |c| p.sample_values[c][i]);
        let slot = &mut acc[s as usize];
        if *slot == NONE {
            *slot = rows.len() as u32;
            rows.push((s, v));
        } else {
            let cell = &mut rows[*slot as usize].1;
            *cell = cell.checked_add(v).ok_or_else(|| {
                PluginError::from(IrError::Overflow(format!(
                    "{cell} + {v} does not fit in 64 bits"
                )))
            })?;
        }
    }
    // Sorted by rank, each looked up once (ranks are distinct, so the order is total).
    let mut ranked: Vec<(u32, u32, i64)> = rows
        .iter()
        .map(|&(s, v)| {
            acc[s as usize] = NONE;
            (rank[s as usize], s, v)
        })
        .collect();
    drop(rows);
    ranked.sort_unstable_by_key(|&(r, _, _)| r);
    Ok(ranked.into_iter().map(|(_, s, v)| (s, v)).collect())
}

/// True when value column `col` is a `Count` (never summed into parents).
pub fn is_count(p: &ProfileRef<'_>, col: usize) -> bool {
    p.value_types[col].kind == ValueKind::Count
}

/// The `calls` column of a profile with exact call counts.
pub fn calls_column(p: &ProfileRef<'_>) -> Option<usize> {
    p.value_type_index("calls").filter(|&c| is_count(p, c))
}

/// Product name for viewers: `profconv (SOURCE_FORMAT)`, from the `source_format` metadata.
pub fn product_name(p: &ProfileRef<'_>) -> String {
    match p.meta("source_format").filter(|s| !s.is_empty()) {
        Some(f) => format!("profconv ({f})"),
        None => "profconv".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_numbers_are_integers_when_they_can_be() {
        assert_eq!(scaled(1500, -6), Num::F(0.0015));
        assert_eq!(scaled(3_000_000, -6), Num::I(3));
        assert_eq!(scaled(7, 0), Num::I(7));
        assert_eq!(scaled(7, 3), Num::I(7000));
        assert_eq!(scaled(3123, -2), Num::F(31.23));
        assert_eq!(scaled(i64::MAX as i128, 0), Num::I(i64::MAX));
        assert_eq!(scaled(-5, -1), Num::F(-0.5));
        assert!(matches!(scaled(i64::MAX as i128, 3), Num::F(_)));
    }

    /// The depth-first walk of the call tree that `stack_rank` stands for: call nodes made by
    /// (parent node, func), children sorted at each visit, a node's stacks in index order.
    fn stack_rank_by_walk(p: &ProfileRef<'_>) -> Vec<u32> {
        let n = p.n_stacks();
        let func = |s: usize| p.frame_func[p.stack_frame[s] as usize];
        let mut node_of = std::collections::HashMap::new();
        let mut stacks_of: Vec<Vec<u32>> = Vec::new();
        let mut children: Vec<Vec<u32>> = Vec::new();
        let mut roots = Vec::new();
        let mut stack_node = vec![0u32; n];
        for s in 0..n {
            let up = match p.stack_prefix[s] {
                NONE => NONE,
                pre => stack_node[pre as usize],
            };
            let v = *node_of.entry((up, func(s))).or_insert_with(|| {
                stacks_of.push(Vec::new());
                children.push(Vec::new());
                let v = (stacks_of.len() - 1) as u32;
                match up {
                    NONE => roots.push(v),
                    up => children[up as usize].push(v),
                }
                v
            });
            stack_node[s] = v;
            stacks_of[v as usize].push(s as u32);
        }
        let key = |v: &u32| {
            let f = func(stacks_of[*v as usize][0] as usize);
            (p.func_name_str(f).as_bytes(), f)
        };
        roots.sort_by_key(key);
        let mut todo: Vec<u32> = roots.into_iter().rev().collect();
        let mut rank = vec![0u32; n];
        let mut next = 0;
        while let Some(v) = todo.pop() {
            for &s in &stacks_of[v as usize] {
                rank[s as usize] = next;
                next += 1;
            }
            let mut kids = children[v as usize].clone();
            kids.sort_by_key(key);
            todo.extend(kids.iter().rev());
        }
        rank
    }

    #[test]
    fn stack_rank_is_the_depth_first_order_by_name() {
        use profconv_plugin::ir::ProfileBuilder;
        // Pseudo-random stacks over a few names, so siblings tie on names; then with frames of
        // one func at two addresses too (a call node of several stacks, ranked as nodes).
        for addresses in [false, true] {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            let names = ["b", "a", "c", "a2", "B", "z", "a"];
            let funcs: Vec<u32> = names.iter().map(|n| b.func(n)).collect();
            let mut frames: Vec<u32> = funcs.iter().map(|&f| b.frame(f)).collect();
            if addresses {
                frames.push(b.frame_at(funcs[1], Some(0x10), None));
                frames.push(b.frame_at(funcs[1], Some(0x20), None));
            }
            let mut x: u64 = 42;
            let mut rnd = |m: u64| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) % m
            };
            for _ in 0..2000 {
                let depth = 1 + rnd(6);
                let mut s = NONE;
                for _ in 0..depth {
                    s = b.stack(s, frames[rnd(frames.len() as u64) as usize]);
                }
                b.add_to_stack(s, &[1]).unwrap();
            }
            let p = b.finish();
            let v = p.view();
            assert!(v.n_stacks() > 1000);
            assert_eq!(stack_rank(&v), stack_rank_by_walk(&v), "{addresses}");
        }
        // A single chain and an empty profile.
        let mut b = ProfileBuilder::new();
        let f = b.func("f");
        let fr = b.frame(f);
        let mut s = NONE;
        for _ in 0..100 {
            s = b.stack(s, fr);
        }
        let p = b.finish();
        assert_eq!(stack_rank(&p.view()), (0..100).collect::<Vec<u32>>());
        assert!(stack_rank(&ProfileBuilder::new().finish().view()).is_empty());
    }

    /// Times up to 2^53 are exact in a double, so they are written as they are; one past it
    /// moves the origin to the earliest.
    #[test]
    fn times_up_to_2_53_keep_the_origin_at_0() {
        let edge = 1i64 << 53;
        assert_eq!(time_origin(&[5, edge]), 0);
        assert_eq!(time_origin(&[5, -edge]), 0);
        assert_eq!(time_origin(&[5, edge + 1]), 5);
        assert_eq!(time_origin(&[5, -edge - 1]), i128::from(-edge - 1));
    }

    /// A quotient that rounds to a whole number (10^23 + 1 over 10^23 is 1 in a double) is
    /// written as an integer, as an exact one is.
    #[test]
    fn a_fraction_that_rounds_to_a_whole_number_is_an_integer() {
        assert_eq!(scaled(10i128.pow(23) + 1, -23), Num::I(1));
        assert_eq!(scaled(-(10i128.pow(23) + 1), -23), Num::I(-1));
    }

    /// The `time_unit` metadata picks the clock column by name, by unit, or by a unit of the
    /// same time kind (`ns` for `nanoseconds`); a non-time unit matches only itself.
    #[test]
    fn the_time_unit_picks_its_column_by_name_unit_or_kind() {
        use profconv_plugin::ir::ProfileBuilder;
        let column = |meta: &str, unit: &str| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_value_type("clock", unit, ValueKind::Weight);
            b.add_meta("time_unit", meta);
            time_column(&b.finish().view())
        };
        assert_eq!(column("ticks", "ticks"), Some(1));
        assert_eq!(column("clock", "ticks"), Some(1));
        assert_eq!(column("ns", "nanoseconds"), Some(1));
        assert_eq!(column("ms", "milliseconds"), Some(1));
        // Another unit: the first weight column.
        assert_eq!(column("cycles", "ticks"), Some(0));
        assert_eq!(column("ns", "ticks"), Some(0));
    }

    /// Each family of time units converts to milliseconds by its power of ten.
    #[test]
    fn every_time_unit_converts_to_milliseconds() {
        let t = |exp10_to_ms, speedscope| UnitKind::Time {
            exp10_to_ms,
            speedscope,
        };
        for (units, want) in [
            (
                ["ns", "nanosecond", "nanoseconds", "nsec"],
                t(-6, "nanoseconds"),
            ),
            (
                ["us", "microsecond", "microseconds", "usec"],
                t(-3, "microseconds"),
            ),
            (
                ["ms", "millisecond", "milliseconds", "msec"],
                t(0, "milliseconds"),
            ),
            (["s", "sec", "second", "seconds"], t(3, "seconds")),
        ] {
            for u in units {
                assert_eq!(unit_kind(u), want, "{u}");
                assert_eq!(unit_kind(&u.to_uppercase()), want, "{u}");
            }
        }
        for u in ["b", "byte", "Bytes"] {
            assert_eq!(unit_kind(u), UnitKind::Bytes, "{u}");
        }
    }

    /// The `calls` column is the one of that name, if it is a count; none otherwise.
    #[test]
    fn the_calls_column_is_the_count_named_calls() {
        use profconv_plugin::ir::ProfileBuilder;
        let calls = |kinds: &[(&str, ValueKind)]| {
            let mut b = ProfileBuilder::new();
            for &(name, kind) in kinds {
                b.add_value_type(name, "count", kind);
            }
            calls_column(&b.finish().view())
        };
        let (w, c) = (ValueKind::Weight, ValueKind::Count);
        assert_eq!(calls(&[("samples", w), ("a", w), ("calls", c)]), Some(2));
        assert_eq!(calls(&[("samples", w), ("calls", w)]), None);
        assert_eq!(calls(&[("samples", w), ("hits", c)]), None);
    }

    /// A unit written with the Greek letter mu (U+03BC) is microseconds, as with the micro sign
    /// (U+00B5): a callgrind event `Time (μs)` was written as unitless samples.
    #[test]
    fn microseconds_with_either_mu_are_a_time() {
        let micro = UnitKind::Time {
            exp10_to_ms: -3,
            speedscope: "microseconds",
        };
        assert_eq!(unit_kind("\u{b5}s"), micro);
        assert_eq!(unit_kind("\u{3bc}s"), micro);
    }

    #[test]
    fn units() {
        assert_eq!(
            unit_kind("nanoseconds"),
            UnitKind::Time {
                exp10_to_ms: -6,
                speedscope: "nanoseconds"
            }
        );
        assert_eq!(unit_kind("bytes"), UnitKind::Bytes);
        assert_eq!(unit_kind("ticks"), UnitKind::Other);
        assert_eq!(unit_kind("count"), UnitKind::Other);
    }
}
