//! Two profiles as one: the union of their call paths, with a `before` and an `after` column.
//!
//! `profconv diff` builds this and hands it to an emitter like any profile: the flamegraph
//! emitter draws a differential graph when metadata `diff` is [`DIFF_COLUMNS`]; other emitters
//! show two value types (callgrind writes two events). Functions match by name, file and
//! resource (by name alone when a side has neither, as folded stacks), not by line, and files
//! and resources by their last path component (or as many last components as keep two
//! functions of one name apart); frames by function: code moves between the two builds a diff
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
    // one side has in two files of one name (`net/util.c`, `disk/util.c`) takes as many last
    // components as tell them apart, on both sides (by the last one alone, the two were one
    // function, with the sum of both). A side without any
    // file or resource (folded stacks) matches the other by name alone. Frames match by
    // function: the line or address of a call moves too, and a diff compares functions, as
    // inferno's and flamegraph.pl's do.
    let opt = |p: &ProfileRef<'_>, s: u32| (s != NONE).then(|| p.strings.get(s).to_string());
    let located = |p: &ProfileRef<'_>| {
        (0..p.n_funcs()).any(|f| p.func_file[f] != NONE || p.func_resource[f] != NONE)
    };
    let by_name_only = !located(before) || !located(after);
    // Per name, how many trailing path components tell its functions apart on each side (the
    // last one, unless one side has two files of one name, `net/util.c` and `disk/util.c`).
    let depth = match by_name_only {
        true => std::collections::HashMap::new(),
        false => path_depths(&[before, after]),
    };
    let place = |p: &ProfileRef<'_>, s: u32, k: usize| {
        (s != NONE).then(|| path_tail(p.strings.get(s), k).to_string())
    };
    let mut by_key: std::collections::HashMap<(String, Option<String>, Option<String>), u32> =
        std::collections::HashMap::new();
    for (side, p, col, d, other) in [
        (0usize, before, before_col, vb.decimals, "after"),
        (1, after, after_col, va.decimals, "before"),
    ] {
        let funcs: Vec<u32> = (0..p.n_funcs())
            .map(|f| {
                let name = p.strings.get(p.func_name[f]).to_string();
                let key = match by_name_only {
                    true => (name, None, None),
                    false => {
                        let (kf, kr) = depth.get(name.as_str()).copied().unwrap_or((1, 1));
                        let file = place(p, p.func_file[f], kf);
                        (name, file, place(p, p.func_resource[f], kr))
                    }
                };
                *by_key.entry(key).or_insert_with_key(|(name, _, _)| {
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
        for (i, &s) in p.sample_stack.iter().enumerate() {
            let v = p.sample_values[col][i];
            row[side] = v.checked_mul(scale).ok_or_else(|| {
                // Both columns are kept at the larger number of decimals.
                IrError::Overflow(format!(
                    "a value of the {} profile does not fit in 64 bits at the {other} profile's \
                     {decimals} decimals (both sides are compared at one scale)",
                    ["before", "after"][side],
                ))
            })?;
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

/// Per function name that needs more than its files' and resources' last components, the
/// fewest trailing components of its files and of its resources that keep each side's
/// functions of that name apart (the same numbers for both sides, so that they still match
/// each other).
fn path_depths<'a>(
    sides: &[&'a ProfileRef<'a>],
) -> std::collections::HashMap<&'a str, (usize, usize)> {
    type Place<'a> = (Option<&'a str>, Option<&'a str>);
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
    let mut depth = std::collections::HashMap::new();
    for group in all.chunk_by(|a, b| a.0 == b.0) {
        let sides: Vec<&[(&str, usize, Place<'_>)]> = group.chunk_by(|a, b| a.1 == b.1).collect();
        if sides.iter().all(|side| side.len() < 2) {
            continue;
        }
        // Whether the last `kf` components of the files and `kr` of the resources of each
        // side's places are all different.
        let apart = |kf: usize, kr: usize| {
            sides.iter().all(|side| {
                let mut tails: Vec<Place<'_>> = side
                    .iter()
                    .map(|(_, _, (f, r))| {
                        (f.map(|f| path_tail(f, kf)), r.map(|r| path_tail(r, kr)))
                    })
                    .collect();
                tails.sort_unstable();
                tails.windows(2).all(|w| w[0] != w[1])
            })
        };
        // Whole paths are apart: past the deepest one, every tail is its whole path.
        let deepest = |resource: bool| {
            group
                .iter()
                .filter_map(|(_, _, (f, r))| if resource { *r } else { *f })
                .map(|p| p.matches(['/', '\\']).count() + 1)
                .max()
                .unwrap_or(1)
        };
        // The files' components first: the resources (the builds' objects, `build-old/prog`)
        // take more only where the files cannot tell the functions apart.
        let (files, resources) = (deepest(false), deepest(true));
        let found = (1..=resources)
            .flat_map(|kr| (1..=files).map(move |kf| (kf, kr)))
            .find(|&(kf, kr)| apart(kf, kr))
            .unwrap_or((files, resources));
        if found != (1, 1) {
            depth.insert(group[0].0, found);
        }
    }
    depth
}

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
