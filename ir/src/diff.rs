//! Two profiles as one: the union of their call paths, with a `before` and an `after` column.
//!
//! `profconv diff` builds this and hands it to an emitter like any profile: the flamegraph
//! emitter draws a differential graph when metadata `diff` is [`DIFF_COLUMNS`]; other emitters
//! show two value types (callgrind writes two events). Functions match by name, file and
//! resource (by name alone when a side has neither, as folded stacks), not by line, and files
//! and resources by their last path component (functions of one name in several places pair
//! by the most trailing components in common; a name in one place on each side pairs too
//! when one side lacks the file, a build without debug information);
//! frames by function: code moves between the two builds a diff
//! compares, and so do the builds' directories.

use crate::builder::ProfileBuilder;
use crate::profile::{IrError, NONE, Profile, ProfileRef, ValueKind};

/// The `diff` metadata value naming the two columns, in order.
pub const DIFF_COLUMNS: &str = "before,after";
/// The metadata key naming what both columns count, when the two sides name it alike.
pub const DIFF_VALUE: &str = "diff_value";

/// Combines value column `before_col` of `before` and `after_col` of `after`, two costs
/// ([`ValueKind::Weight`]; a count is an error). Each column keeps its own unit (`profconv
/// diff` warns when they differ).
pub fn combine(
    before: &ProfileRef<'_>,
    before_col: usize,
    after: &ProfileRef<'_>,
    after_col: usize,
) -> Result<Profile, IrError> {
    let (vb, va) = (before.value_types[before_col], after.value_types[after_col]);
    for (side, p, c) in [("before", before, before_col), ("after", after, after_col)] {
        if p.value_types[c].kind != ValueKind::Weight {
            return Err(IrError::Invalid(format!(
                "{side}'s '{}' counts events of each call node, not a cost: a differential \
                 profile compares costs",
                p.value_type_name(c)
            )));
        }
    }
    let mut b = ProfileBuilder::new();
    b.add_value_type(
        "before",
        before.value_type_unit(before_col),
        ValueKind::Weight,
    );
    b.add_value_type("after", after.value_type_unit(after_col), ValueKind::Weight);
    let decimals = vb.decimals.max(va.decimals);
    b.rescale(0, decimals)?;
    b.rescale(1, decimals)?;
    b.add_meta("diff", DIFF_COLUMNS);
    // What the columns count, when both sides count one thing (`Ir`): the emitters' name for
    // it (the columns themselves are `before` and `after`).
    let value_name = before.value_type_name(before_col);
    if value_name == after.value_type_name(after_col) {
        b.add_meta(DIFF_VALUE, value_name);
    }
    // Functions match by name, file and resource: not by line, since the code of two builds
    // moves (a function one line further down was "new", and everything under it). Files and
    // resources match by their last path component: two builds sit in two directories
    // (`build-old/prog` and `build-new/prog`, callgrind's `ob=` and `fl=`), and by full path
    // every function of one was "gone" and every one of the other "new"; a function name that
    // one side has in two places (`net/util.c`, `disk/util.c`, `util.c`) pairs each with the
    // other side's place that shares the most trailing components with it (by the last one
    // alone, the two were one function, with the sum of both). A side without any file or
    // resource (folded stacks) matches the other by name alone. Frames match by
    // function: the line or address of a call moves too, and a diff compares functions, as
    // inferno's and flamegraph.pl's do.
    let opt = |p: &ProfileRef<'_>, s: u32| (s != NONE).then(|| p.strings.get(s).to_string());
    let located = |p: &ProfileRef<'_>| {
        (0..p.n_funcs()).any(|f| p.func_file[f] != NONE || p.func_resource[f] != NONE)
    };
    let by_name_only = !located(before) || !located(after);
    // The functions of a name that one side has in two places or more (`util.c` and
    // `net/util.c`), paired across the sides by the trailing components their files and
    // resources share: each pair, and each place left unpaired, has an id of its own.
    let namesakes = match by_name_only {
        true => std::collections::HashMap::new(),
        false => namesake_matches(&[before, after]),
    };
    let place = |p: &ProfileRef<'_>, s: u32| {
        (s != NONE).then(|| path_tail(p.strings.get(s), 1).to_string())
    };
    type Key = (String, Option<String>, Option<String>, Option<u32>);
    let mut by_key: std::collections::HashMap<Key, u32> = std::collections::HashMap::new();
    for (side, p, col, d, other) in [
        (0usize, before, before_col, vb.decimals, "after"),
        (1, after, after_col, va.decimals, "before"),
    ] {
        let funcs: Vec<u32> = (0..p.n_funcs())
            .map(|f| {
                let name = p.strings.get(p.func_name[f]).to_string();
                let key = match by_name_only {
                    true => (name, None, None, None),
                    false => {
                        let path = |s: u32| (s != NONE).then(|| p.strings.get(s));
                        let at = (path(p.func_file[f]), path(p.func_resource[f]));
                        match namesakes.get(&(side, name.as_str(), at)) {
                            Some(&id) => (name, None, None, Some(id)),
                            None => {
                                let file = place(p, p.func_file[f]);
                                (name, file, place(p, p.func_resource[f]), None)
                            }
                        }
                    }
                };
                *by_key.entry(key).or_insert_with_key(|(name, _, _, _)| {
                    // The first side's file, line and resource stay with the function.
                    b.func_with(
                        name,
                        opt(p, p.func_file[f]).as_deref(),
                        (p.func_line[f] != NONE).then_some(p.func_line[f]),
                        opt(p, p.func_resource[f]).as_deref(),
                    )
                })
            })
            .collect();
        let frames: Vec<u32> = (0..p.n_frames())
            .map(|fr| b.frame(funcs[p.frame_func[fr] as usize]))
            .collect();
        let mut stacks = Vec::with_capacity(p.n_stacks());
        for s in 0..p.n_stacks() {
            let prefix = p.stack_prefix[s];
            let parent = if prefix == NONE {
                NONE
            } else {
                stacks[prefix as usize]
            };
            stacks.push(b.stack(parent, frames[p.stack_frame[s] as usize]));
        }
        let scale = 10i64.pow(decimals - d);
        let mut row = [0i64; 2];
        // The side's values at the common scale, summed as the host sums an input's: each one
        // fitting is not enough, every total below the root must fit too (the emitters count
        // on it, and a flame graph failed with "5000000000000000000 + 5000000000000000000").
        let (mut pos, mut neg) = (0i128, 0i128);
        let side_name = ["before", "after"][side];
        for (i, &s) in p.sample_stack.iter().enumerate() {
            let v = p.sample_values[col][i];
            row[side] = v.checked_mul(scale).ok_or_else(|| {
                // Both columns are kept at the larger number of decimals.
                IrError::Overflow(format!(
                    "a value of the {side_name} profile does not fit in 64 bits at the {other} \
                     profile's {decimals} decimals (both sides are compared at one scale)",
                ))
            })?;
            match row[side] >= 0 {
                true => pos += i128::from(row[side]),
                false => neg += i128::from(row[side]),
            }
            if pos > i128::from(i64::MAX) || neg < i128::from(i64::MIN) {
                return Err(IrError::Overflow(format!(
                    "the values of the {side_name} profile add up to more than 64 bits hold at \
                     the {other} profile's {decimals} decimals (both sides are compared at one \
                     scale)",
                )));
            }
            row[1 - side] = 0;
            b.add_to_stack(stacks[s as usize], &row)?;
        }
    }
    Ok(b.finish())
}

/// The last `k` components of `path` (`/` or `\\` between them), or all of it.
fn path_tail(path: &str, k: usize) -> &str {
    let mut cut = path.len();
    for _ in 0..k {
        match path[..cut].rfind(['/', '\\']) {
            Some(i) => cut = i,
            None => return path,
        }
    }
    &path[cut + 1..]
}

/// Trailing path components (`/` or `\\` between them) that two optional paths share: both
/// absent count as one (they agree), one absent as none.
fn common_tail(a: Option<&str>, b: Option<&str>) -> usize {
    match (a, b) {
        (None, None) => 1,
        (Some(a), Some(b)) => a
            .rsplit(['/', '\\'])
            .zip(b.rsplit(['/', '\\']))
            .take_while(|(x, y)| x == y)
            .count(),
        _ => 0,
    }
}

/// The number of components of an optional path.
fn components(a: Option<&str>) -> usize {
    a.map_or(0, |p| p.split(['/', '\\']).count())
}

/// Pairs of places of one last component beyond which every pair is not scored (each place
/// then has one candidate, [`pairs_by_tails`]).
const PAIRS_SEARCHED: usize = 1 << 16;

#[cfg(test)]
thread_local! {
    /// The places' tails cut by [`pairs_by_tails`], a side at a time (tests bound it).
    static TAILS_CUT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The candidate pairs of many places of one last component: by the fewest trailing
/// components (of files and resources alike) that tell each side's places apart, the places
/// of the two sides whose tails are equal (`m7/util.c` of `/old` and of `/new`), as indices
/// into `before` and `after`. A tail that two places of one side share pairs neither.
fn pairs_by_tails(before: &[Place<'_>], after: &[Place<'_>]) -> Vec<(usize, usize)> {
    let tails = |places: &[Place<'_>], k: usize| -> Vec<(Option<String>, Option<String>)> {
        #[cfg(test)]
        TAILS_CUT.with(|c| c.set(c.get() + 1));
        places
            .iter()
            .map(|(f, r)| {
                let cut = |p: Option<&str>| p.map(|p| path_tail(p, k).to_string());
                (cut(*f), cut(*r))
            })
            .collect()
    };
    let apart = |t: &[(Option<String>, Option<String>)]| {
        let mut sorted: Vec<_> = t.iter().collect();
        sorted.sort_unstable();
        sorted.windows(2).all(|w| w[0] != w[1])
    };
    let deepest = before
        .iter()
        .chain(after)
        .map(|(f, r)| components(*f).max(components(*r)))
        .max()
        .unwrap_or(1);
    // The fewest components (up to the deepest path's) that tell each side's places apart, by
    // a binary search: places whose last k + 1 components are equal have equal last k, so
    // places apart at k are apart at every larger k (trying every k from 1 cut every path
    // once per depth: quadratic in the paths' depth).
    let enough = |k: usize| k >= deepest || (apart(&tails(before, k)) && apart(&tails(after, k)));
    let (mut k, mut hi) = (1, deepest.max(1));
    while k < hi {
        let mid = k + (hi - k) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            k = mid + 1;
        }
    }
    let (tb, ta) = (tails(before, k), tails(after, k));
    type Tail = (Option<String>, Option<String>);
    fn count(t: &[Tail]) -> std::collections::HashMap<&Tail, u32> {
        let mut n = std::collections::HashMap::new();
        for x in t {
            *n.entry(x).or_default() += 1;
        }
        n
    }
    let (nb, na) = (count(&tb), count(&ta));
    let at: std::collections::HashMap<&(Option<String>, Option<String>), usize> =
        ta.iter().enumerate().map(|(j, t)| (t, j)).collect();
    tb.iter()
        .enumerate()
        .filter(|(_, t)| nb[t] == 1 && na.get(t) == Some(&1))
        .map(|(i, t)| (i, at[t]))
        .collect()
}

/// For each function name that a side has in two places or more (a static `init` in
/// `util.c` and in `net/util.c`), an id per (side, name, place): a place of before and one of
/// after with one id are one function. A before place and an after place pair when their
/// files' and resources' last components are equal, and nothing pairs better with either:
/// more trailing components of the files in common, then of the resources, then the nearer
/// depths (two builds in two directories of one depth, `/home/u/old` and `/home/u/new`).
/// By the fewest trailing components that tell a side's places apart, `old/util.c` and
/// `net/util.c`, the first matched nothing of `new/util.c`.
fn namesake_matches<'a>(
    sides: &[&'a ProfileRef<'a>],
) -> std::collections::HashMap<(usize, &'a str, Place<'a>), u32> {
    // Every function as (name, side, file, resource), sorted: a name's places are together,
    // and a name with one place on each side (nearly all) costs no more than the sort.
    let mut all: Vec<(&'a str, usize, Place<'a>)> = Vec::new();
    for (side, p) in sides.iter().enumerate() {
        let path = |s: u32| (s != NONE).then(|| p.strings.get(s));
        all.extend((0..p.n_funcs()).map(|f| {
            let place = (path(p.func_file[f]), path(p.func_resource[f]));
            (p.strings.get(p.func_name[f]), side, place)
        }));
    }
    all.sort_unstable();
    all.dedup();
    let mut ids = std::collections::HashMap::new();
    for group in all.chunk_by(|a, b| a.0 == b.0) {
        let name = group[0].0;
        let of = |side: usize| -> Vec<Place<'a>> {
            group.iter().filter(|g| g.1 == side).map(|g| g.2).collect()
        };
        let (before, after) = (of(0), of(1));
        let last = |(f, r): Place<'a>| (f.map(|f| path_tail(f, 1)), r.map(|r| path_tail(r, 1)));
        if before.len() < 2 && after.len() < 2 {
            // A name in one place on each side: the places' last components match (the key
            // does that), or one side lacks the file (a build without debug information,
            // callgrind's `fl=???`) in an object of one name. Without a file on either side,
            // the object alone tells functions apart (libc's `memcpy` and a copy linked into
            // the program).
            if let ([b], [a]) = (&before[..], &after[..]) {
                let ((bf, br), (af, ar)) = (last(*b), last(*a));
                if br == ar && bf != af && (bf.is_none() || af.is_none()) {
                    ids.insert((0, name, *b), 0);
                    ids.insert((1, name, *a), 0);
                }
            }
            continue;
        }
        // Candidate pairs: equal last components (as a name with one place per side matches).
        // Every pair of a bucket is scored; a bucket too large for that (hundreds of places of
        // one last component on each side) has one candidate per place, by the fewest trailing
        // components that tell each side's places apart ([`pairs_by_tails`]).
        let mut buckets: std::collections::BTreeMap<_, (Vec<usize>, Vec<usize>)> =
            std::collections::BTreeMap::new();
        for (i, &b) in before.iter().enumerate() {
            buckets.entry(last(b)).or_default().0.push(i);
        }
        for (j, &a) in after.iter().enumerate() {
            buckets.entry(last(a)).or_default().1.push(j);
        }
        let score = |b: Place<'a>, a: Place<'a>| {
            let gap = |x: Option<&str>, y: Option<&str>| {
                std::cmp::Reverse(components(x).abs_diff(components(y)))
            };
            std::cmp::Reverse((
                common_tail(b.0, a.0),
                common_tail(b.1, a.1),
                gap(b.0, a.0),
                gap(b.1, a.1),
            ))
        };
        let mut pairs = Vec::new();
        for (is, js) in buckets.values() {
            if is.len().saturating_mul(js.len()) <= PAIRS_SEARCHED {
                for &i in is {
                    for &j in js {
                        pairs.push((score(before[i], after[j]), i, j));
                    }
                }
            } else {
                let bs: Vec<Place<'a>> = is.iter().map(|&i| before[i]).collect();
                let as_: Vec<Place<'a>> = js.iter().map(|&j| after[j]).collect();
                for (x, y) in pairs_by_tails(&bs, &as_) {
                    let (i, j) = (is[x], js[y]);
                    pairs.push((score(before[i], after[j]), i, j));
                }
            }
        }
        pairs.sort_unstable();
        // Best scores first; at each score, a pair whose places have no other pair left of
        // that score (a tie pairs neither).
        let (mut used_b, mut used_a) = (vec![false; before.len()], vec![false; after.len()]);
        // How many open pairs of the level each place is in (counted, not searched: a level
        // can hold thousands of pairs of one score).
        let (mut in_b, mut in_a) = (vec![0u32; before.len()], vec![0u32; after.len()]);
        let mut next = 0u32;
        for level in pairs.chunk_by(|x, y| x.0 == y.0) {
            let open: Vec<(usize, usize)> = level
                .iter()
                .filter(|(_, i, j)| !used_b[*i] && !used_a[*j])
                .map(|&(_, i, j)| (i, j))
                .collect();
            for &(i, j) in &open {
                in_b[i] += 1;
                in_a[j] += 1;
            }
            for &(i, j) in &open {
                if in_b[i] == 1 && in_a[j] == 1 {
                    (used_b[i], used_a[j]) = (true, true);
                    ids.insert((0, name, before[i]), next);
                    ids.insert((1, name, after[j]), next);
                    next += 1;
                }
            }
            // A place in a tie stays unpaired: paired at a later level, with a place that
            // shares fewer components with it, `net/util.c` took `util.c` while two other
            // `net/util.c` tied for it.
            for &(i, j) in &open {
                (in_b[i], in_a[j]) = (0, 0);
                if !used_b[i] {
                    used_b[i] = true;
                    ids.insert((0, name, before[i]), next);
                    next += 1;
                }
                if !used_a[j] {
                    used_a[j] = true;
                    ids.insert((1, name, after[j]), next);
                    next += 1;
                }
            }
        }
        for (side, places, used) in [(0, &before, &used_b), (1, &after, &used_a)] {
            for (k, &place) in places.iter().enumerate() {
                if !used[k] {
                    ids.insert((side, name, place), next);
                    next += 1;
                }
            }
        }
    }
    ids
}

type Place<'a> = (Option<&'a str>, Option<&'a str>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallTree, render_tree};

    /// The combined profile's tree, first-seen order, both columns.
    fn shown(d: &Profile) -> String {
        let t = CallTree::build(&d.view()).unwrap();
        let opts = crate::TreeTextOptions {
            all_values: true,
            order: crate::TreeOrder::FirstSeen,
            ..Default::default()
        };
        render_tree(&d.view(), &t, &opts).unwrap()
    }

    #[test]
    fn union_of_paths_with_both_columns() {
        let x = crate::testing::stacks(&[(&["main", "a"], 3), (&["main", "b"], 1)]);
        let y = crate::testing::stacks(&[(&["main", "b"], 5), (&["main", "c"], 2)]);
        let d = combine(&x.view(), 0, &y.view(), 0).unwrap();
        assert_eq!(d.view().meta("diff"), Some(DIFF_COLUMNS));
        assert_eq!(
            shown(&d),
            "main self=0 total=4 self_after=0 total_after=7\n  a self=3 total=3 self_after=0 total_after=0\n  b self=1 total=1 self_after=5 total_after=5\n  c self=0 total=0 self_after=2 total_after=2\n"
        );
    }

    /// Code moves between the two builds a diff compares: a function one line further down,
    /// called from one line further down, is the same function on the same path (it was two,
    /// one gone and one new, everything under it unmatched). Two functions of one name in two
    /// files stay two; a side without files (folded stacks) matches by name.
    #[test]
    fn functions_match_whatever_their_lines() {
        let side = |line: u32| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let main = b.func_with("main", Some("x.c"), Some(1), None);
            let f = b.func_with("f", Some("x.c"), Some(line), None);
            let g = b.func_with("f", Some("y.c"), Some(3), None);
            let caller = b.frame_at(main, None, Some(line - 4));
            let root = b.stack(NONE, caller);
            let (f_frame, g_frame) = (b.frame_at(f, None, Some(line)), b.frame(g));
            let leaf = b.stack(root, f_frame);
            b.add_to_stack(leaf, &[100]).unwrap();
            let other = b.stack(root, g_frame);
            b.add_to_stack(other, &[line as i64]).unwrap();
            b.finish()
        };
        let (a, b) = (side(10), side(11));
        let d = combine(&a.view(), 0, &b.view(), 0).unwrap();
        assert_eq!(
            shown(&d),
            "main self=0 total=110 self_after=0 total_after=111\n  f self=100 total=100 self_after=100 total_after=100\n  f self=10 total=10 self_after=11 total_after=11\n"
        );
        // By name against folded stacks: the two `f` are then one, as folded stacks know it.
        let folded = crate::testing::stacks(&[(&["main", "f"], 7)]);
        let d = combine(&a.view(), 0, &folded.view(), 0).unwrap();
        assert_eq!(
            shown(&d),
            "main self=0 total=110 self_after=0 total_after=7\n  f self=110 total=110 self_after=7 total_after=7\n"
        );
    }

    /// Two builds of one program in two directories (callgrind's `ob=/tmp/build-old/demo` and
    /// `ob=/tmp/build-new/demo`, its files under them): their functions are the same ones. By
    /// full path nothing matched, and the whole of before was "gone", the whole of after "new".
    #[test]
    fn functions_match_across_build_directories() {
        let side = |dir: &str, fib: i64| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let (file, object) = (format!("/tmp/{dir}/demo.c"), format!("/tmp/{dir}/demo"));
            let main = b.func_with("main", Some(&file), Some(30), Some(&object));
            let f = b.func_with("fib", Some(&file), Some(6), Some(&object));
            let libc = b.func_with("memcpy", None, None, Some("/usr/lib/libc.so.6"));
            let (main, f, libc) = (b.frame(main), b.frame(f), b.frame(libc));
            let root = b.stack(NONE, main);
            let leaf = b.stack(root, f);
            b.add_to_stack(leaf, &[fib]).unwrap();
            let copy = b.stack(root, libc);
            b.add_to_stack(copy, &[5]).unwrap();
            b.finish()
        };
        let d = combine(
            &side("build-old", 100).view(),
            0,
            &side("build-new", 300).view(),
            0,
        )
        .unwrap();
        assert_eq!(
            shown(&d),
            "main self=0 total=105 self_after=0 total_after=305\n  fib self=100 total=100 self_after=300 total_after=300\n  memcpy self=5 total=5 self_after=5 total_after=5\n"
        );
    }

    /// Two functions of one name in two files of one name in two directories (a static `init`
    /// in `net/util.c` and in `disk/util.c`) stay two functions, each matched with itself in
    /// the other build's directory; by their files' last components they were one, with the
    /// sum of both.
    #[test]
    fn functions_in_files_of_one_name_stay_apart() {
        let side = |dir: &str, disk: i64| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let prog = format!("/{dir}/prog");
            let main = b.func_with("main", Some(&format!("/{dir}/main.c")), None, Some(&prog));
            let net = b.func_with(
                "init",
                Some(&format!("/{dir}/net/util.c")),
                None,
                Some(&prog),
            );
            let dsk = b.func_with(
                "init",
                Some(&format!("/{dir}/disk/util.c")),
                None,
                Some(&prog),
            );
            let (main, net, dsk) = (b.frame(main), b.frame(net), b.frame(dsk));
            let root = b.stack(NONE, main);
            let n = b.stack(root, net);
            b.add_to_stack(n, &[100]).unwrap();
            let d = b.stack(root, dsk);
            b.add_to_stack(d, &[disk]).unwrap();
            b.finish()
        };
        let d = combine(&side("old", 5).view(), 0, &side("new", 50).view(), 0).unwrap();
        assert_eq!(
            shown(&d),
            "main self=0 total=105 self_after=0 total_after=150\n  init self=100 total=100 self_after=100 total_after=100\n  init self=5 total=5 self_after=50 total_after=50\n"
        );
    }

    /// A function in a file at the root of its build directory keeps its match when a namesake
    /// sits in a subdirectory (`/old/util.c` and `/old/net/util.c`, both with a static `init`),
    /// on both sides or only in the new build: the fewest components that tell the two apart
    /// (`old/util.c` and `net/util.c`) took in the build directory, and the first `init` was
    /// "gone" from before and "new" in after.
    #[test]
    fn a_namesake_in_a_subdirectory_keeps_the_root_file_matched() {
        let side = |dir: &str, net: bool, root: i64| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let prog = format!("/home/u/{dir}/prog");
            let file = |f: &str| format!("/home/u/{dir}/{f}");
            let main = b.func_with("main", Some(&file("main.c")), None, Some(&prog));
            let init = b.func_with("init", Some(&file("util.c")), None, Some(&prog));
            let (main, init) = (b.frame(main), b.frame(init));
            let top = b.stack(NONE, main);
            let s = b.stack(top, init);
            b.add_to_stack(s, &[root]).unwrap();
            if net {
                let other = b.func_with("init", Some(&file("net/util.c")), None, Some(&prog));
                let other = b.frame(other);
                let s = b.stack(top, other);
                b.add_to_stack(s, &[7]).unwrap();
            }
            b.finish()
        };
        for before_net in [true, false] {
            let before = side("old", before_net, 100);
            let d = combine(&before.view(), 0, &side("new", true, 90).view(), 0).unwrap();
            let net_before = if before_net { 7 } else { 0 };
            assert_eq!(
                shown(&d),
                format!(
                    "main self=0 total={} self_after=0 total_after=97\n  init self=100 total=100 self_after=90 total_after=90\n  init self={net_before} total={net_before} self_after=7 total_after=7\n",
                    100 + net_before
                ),
                "net/util.c in before: {before_net}"
            );
        }
    }

    /// A name in more than 256 files of one last component on each side (a static `init` in
    /// `m1/util.c` … `m300/util.c`), two builds in two directories: each pairs with its
    /// namesake by `mK/util.c`, as it did before `namesake_matches` (past PAIRS_SEARCHED only
    /// identical paths paired, and all 300 were "gone" and "new").
    #[test]
    fn many_namesakes_of_one_last_component_still_pair_across_build_directories() {
        let side = |dir: &str| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let main = b.func_with("main", Some("/main.c"), None, Some("prog"));
            let main = b.frame(main);
            let top = b.stack(NONE, main);
            for k in 1..=300 {
                let f = b.func_with(
                    "init",
                    Some(&format!("/{dir}/m{k}/util.c")),
                    None,
                    Some("prog"),
                );
                let f = b.frame(f);
                let s = b.stack(top, f);
                b.add_to_stack(s, &[k]).unwrap();
            }
            b.finish()
        };
        let d = combine(&side("old").view(), 0, &side("new").view(), 0).unwrap();
        assert_eq!(shown(&d).lines().count(), 301, "{}", shown(&d));
    }

    /// Namesakes told apart only by a component far from the end (300 `init` in
    /// `/old/mK/x/x/…/x/util.c`, 400 `x/` deep) are paired with the tails of a few depths cut,
    /// not of every depth up to the one that tells them apart (each a pass over every place's
    /// path: quadratic in the paths' depth, 12 s for two 4.8 MB files of 4 000 components).
    #[test]
    fn namesakes_told_apart_deep_in_their_paths_are_paired_in_few_passes() {
        let side = |dir: &str| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let main = b.func_with("main", Some("/main.c"), None, Some("prog"));
            let main = b.frame(main);
            let top = b.stack(NONE, main);
            let deep = "x/".repeat(400);
            for k in 1..=300 {
                let file = format!("/{dir}/m{k}/{deep}util.c");
                let f = b.func_with("init", Some(&file), None, Some("prog"));
                let f = b.frame(f);
                let s = b.stack(top, f);
                b.add_to_stack(s, &[k]).unwrap();
            }
            b.finish()
        };
        TAILS_CUT.with(|c| c.set(0));
        let d = combine(&side("old").view(), 0, &side("new").view(), 0).unwrap();
        let cut = TAILS_CUT.with(|c| c.get());
        assert!(cut <= 40, "the tails were cut {cut} times");
        // Each pairs with its namesake by `mK/x/…/util.c`.
        assert_eq!(shown(&d).lines().count(), 301, "{}", shown(&d));
    }

    /// A place that ties for two places of the other side stays unpaired: it was paired at a
    /// later level with a place sharing fewer components (`vendor/net/util.c` with `r/util.c`,
    /// while `p/net/util.c` and `q/net/util.c` tied for it).
    #[test]
    fn a_namesake_in_a_tie_is_not_paired_with_a_worse_match() {
        let side = |places: &[(&str, i64)]| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let main = b.func_with("main", Some("/main.c"), None, Some("prog"));
            let main = b.frame(main);
            let top = b.stack(NONE, main);
            for (file, v) in places {
                let f = b.func_with("init", Some(file), None, Some("prog"));
                let f = b.frame(f);
                let s = b.stack(top, f);
                b.add_to_stack(s, &[*v]).unwrap();
            }
            b.finish()
        };
        let before = side(&[("/o/vendor/net/util.c", 10)]);
        let after = side(&[
            ("/n/p/net/util.c", 20),
            ("/n/q/net/util.c", 30),
            ("/n/r/util.c", 40),
        ]);
        let d = combine(&before.view(), 0, &after.view(), 0).unwrap();
        let paired = shown(&d)
            .lines()
            .filter(|l| l.contains("init self=10") && !l.contains("self_after=0 "))
            .count();
        assert_eq!(paired, 0, "{}", shown(&d));
    }

    /// A function that each side has in one place matches across a build with debug
    /// information and one without (callgrind's `fl=???`: no file on one side): by name, file
    /// and resource nothing of the program matched, and the whole of `main` was "gone" from
    /// before and "new" in after. Functions without files in two different objects (`memcpy`
    /// of libc and a copy linked into the program) stay two.
    #[test]
    fn a_function_in_one_place_per_side_matches_when_one_side_lacks_its_file() {
        let side = |object: &str, file: Option<&str>, work: i64, copy_in: &str| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("Ir", "count", ValueKind::Weight);
            let main = b.func_with("main", file, None, Some(object));
            let f = b.func_with("work", file, None, Some(object));
            let copy = b.func_with("memcpy", None, None, Some(copy_in));
            let (main, f, copy) = (b.frame(main), b.frame(f), b.frame(copy));
            let root = b.stack(NONE, main);
            let leaf = b.stack(root, f);
            b.add_to_stack(leaf, &[work]).unwrap();
            let copy = b.stack(root, copy);
            b.add_to_stack(copy, &[5]).unwrap();
            b.finish()
        };
        let libc = "/usr/lib/libc.so.6";
        let expected = "main self=0 total=105 self_after=0 total_after=305\n  work self=100 total=100 self_after=300 total_after=300\n  memcpy self=5 total=5 self_after=5 total_after=5\n";
        // Without debug information before, with it after.
        let (no_debug, debug) = (
            side("/tmp/old/prog", None, 100, libc),
            side("/tmp/new/prog", Some("/tmp/src/prog.c"), 300, libc),
        );
        let d = combine(&no_debug.view(), 0, &debug.view(), 0).unwrap();
        assert_eq!(shown(&d), expected);
        // A function without a file is told apart by its object alone: libc's memcpy and a
        // copy linked into the program stay two.
        let statically = side("/tmp/new/prog", None, 300, "/tmp/new/prog");
        let d = combine(&no_debug.view(), 0, &statically.view(), 0).unwrap();
        assert_eq!(
            shown(&d),
            "main self=0 total=105 self_after=0 total_after=305\n  work self=100 total=100 self_after=300 total_after=300\n  memcpy self=5 total=5 self_after=0 total_after=0\n  memcpy self=0 total=0 self_after=5 total_after=5\n"
        );
    }

    /// A side whose values do not fit at the other side's decimals names itself and the scale
    /// (it said "value overflow: 100000000000000000 × 1000").
    #[test]
    fn a_side_too_large_at_the_others_scale_says_so() {
        let big = crate::testing::stacks(&[(&["a"], 100_000_000_000_000_000)]);
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.rescale(0, 3).unwrap();
        b.add_stack(&["a"], &[1]).unwrap();
        let fine = b.finish();
        let e = combine(&big.view(), 0, &fine.view(), 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "value overflow: a value of the before profile does not fit in 64 bits at the after \
             profile's 3 decimals (both sides are compared at one scale)"
        );
    }

    /// A side whose values each fit at the other side's decimals but whose sum does not is
    /// refused as well, naming itself and the scale: the flame graph and callgrind emitters
    /// failed on it with "value overflow: 5000000000000000000 + 5000000000000000000 does not fit
    /// in 64 bits", and the others wrote totals past 64 bits.
    #[test]
    fn a_side_whose_sum_is_too_large_at_the_others_scale_says_so() {
        let big = crate::testing::stacks(&[(&["a"], 5_000_000_000), (&["b"], 5_000_000_000)]);
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.rescale(0, 9).unwrap();
        b.add_stack(&["a"], &[1]).unwrap();
        let fine = b.finish();
        let e = combine(&big.view(), 0, &fine.view(), 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "value overflow: the values of the before profile add up to more than 64 bits hold \
             at the after profile's 9 decimals (both sides are compared at one scale)"
        );
        // One of them alone fits.
        let one = crate::testing::stacks(&[(&["a"], 5_000_000_000)]);
        assert!(combine(&one.view(), 0, &fine.view(), 0).is_ok());
    }

    /// Each column keeps its side's unit; a count is no cost to compare.
    #[test]
    fn units_are_kept_and_counts_refused() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        b.add_value_type("calls", "count", ValueKind::Count);
        b.add_stack(&["f"], &[7, 1]).unwrap();
        let trace = b.finish();
        let folded = crate::testing::stacks(&[(&["f"], 3)]);
        let d = combine(&trace.view(), 0, &folded.view(), 0).unwrap();
        let v = d.view();
        assert_eq!(
            (v.value_type_unit(0), v.value_type_unit(1)),
            ("ticks", folded.view().value_type_unit(0))
        );
        for (before, after) in [(&trace, &folded), (&folded, &trace)] {
            let (bc, ac) = match std::ptr::eq(before, &trace) {
                true => (1, 0),
                false => (0, 1),
            };
            let e = combine(&before.view(), bc, &after.view(), ac).unwrap_err();
            assert!(
                e.to_string()
                    .contains("'calls' counts events of each call node"),
                "{e}"
            );
        }
    }
}
