//! Property tests: on random trees, every transform keeps the grand total where it must (merge,
//! merge function, prune, collapse, invert, max depth, min total) and shrinks it where it must
//! (drop, focus), and always yields a valid profile.

use profconv_ir::transform::apply;
use profconv_ir::{CallTree, Fraction, Profile, ProfileBuilder, Transform, ValueKind};
use proptest::prelude::*;

const ROOTS: [&str; 2] = ["r1", "r2"];
const NAMES: [&str; 4] = ["a", "b", "c", "d"];

type Stacks = Vec<(Vec<usize>, usize, i64)>;

/// Random stacks: a root, then 0..8 frames from a small alphabet (so recursion is common).
fn stacks() -> impl Strategy<Value = Stacks> {
    prop::collection::vec(
        (
            prop::collection::vec(0..NAMES.len(), 0..8),
            0..ROOTS.len(),
            0i64..50,
        ),
        1..40,
    )
}

fn build(stacks: &Stacks) -> Profile {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_value_type("calls", "count", ValueKind::Count);
    for (frames, root, w) in stacks {
        let mut names = vec![ROOTS[*root]];
        names.extend(frames.iter().map(|&f| NAMES[f]));
        b.add_stack(&names, &[*w, 1]).unwrap();
    }
    b.finish()
}

/// The grand total of the weight column (0 for a tree without nodes).
fn total(p: &Profile) -> i64 {
    CallTree::build(&p.view()).unwrap().grand_total(0)
}

/// A path of names taken from one of the input's stacks (so it usually exists), of length ≥ 2
/// so merging it never empties a stack.
fn path_of(stacks: &Stacks, pick: usize, len: usize) -> Vec<String> {
    let (frames, root, _) = &stacks[pick % stacks.len()];
    let mut names = vec![ROOTS[*root].to_string()];
    names.extend(frames.iter().map(|&f| NAMES[f].to_string()));
    names.truncate(len.max(2));
    if names.len() < 2 {
        names.push("a".into());
    }
    names
}

fn check(p: &Profile, t: &Transform) -> Profile {
    let (out, _) = apply(&p.view(), t).unwrap();
    out.view().validate().unwrap();
    out
}

/// Every (path, self) pair of nodes with a self value.
fn leaf_weights(p: &Profile) -> Vec<(Vec<String>, i64)> {
    let v = p.view();
    let t = CallTree::build(&v).unwrap();
    let mut out: Vec<(Vec<String>, i64)> = (0..t.len() as u32)
        .filter(|&n| t.self_values[0][n as usize] != 0)
        .map(|n| {
            let path = t
                .path(n)
                .into_iter()
                .map(|f| v.func_name_str(f).to_string());
            (path.collect(), t.self_values[0][n as usize])
        })
        .collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn preserving_transforms_keep_the_grand_total(
        s in stacks(), pick in 0usize..40, len in 0usize..9, depth in 1u32..6,
        f in 0..NAMES.len(), frac in 0u64..5000,
    ) {
        let p = build(&s);
        let before = total(&p);
        prop_assert_eq!(before, s.iter().map(|(_, _, w)| w).sum::<i64>());
        let path = path_of(&s, pick, len);
        let name = NAMES[f].to_string();
        for t in [
            Transform::MergeCallNode(path.clone()),
            Transform::MergeFunction(name.clone()),
            Transform::MergeSubtree(path.clone()),
            Transform::CollapseDirectRecursion(None),
            Transform::CollapseDirectRecursion(Some(name.clone())),
            Transform::CollapseRecursion(None),
            Transform::CollapseRecursion(Some(name.clone())),
            Transform::Invert,
            Transform::MaxDepth(depth),
            Transform::MinTotal(Fraction::decimal(frac, 4).unwrap()),
        ] {
            prop_assert_eq!(total(&check(&p, &t)), before, "{}", t);
        }
    }

    #[test]
    fn drop_and_focus_split_the_total(
        s in stacks(), pick in 0usize..40, len in 0usize..9, f in 0..NAMES.len(),
    ) {
        let p = build(&s);
        let before = total(&p);
        prop_assert_eq!(before, s.iter().map(|(_, _, w)| w).sum::<i64>());
        let path = path_of(&s, pick, len);
        let dropped = total(&check(&p, &Transform::Drop(path.clone())));
        let focused = total(&check(&p, &Transform::FocusSubtree(path)));
        prop_assert!(dropped <= before && focused <= before);
        prop_assert_eq!(dropped + focused, before, "what drop hides is what focus keeps");
        let name = NAMES[f].to_string();
        prop_assert!(total(&check(&p, &Transform::FocusFunction(name))) <= before);
    }

    #[test]
    fn collapsed_trees_have_no_recursion_left(s in stacks()) {
        let out = check(&build(&s), &Transform::CollapseRecursion(None));
        let v = out.view();
        let tree = CallTree::build(&v).unwrap();
        for node in 0..tree.len() as u32 {
            let mut names: Vec<&str> = tree.path(node).iter().map(|&f| v.func_name_str(f)).collect();
            let n = names.len();
            names.sort_unstable();
            names.dedup();
            prop_assert_eq!(names.len(), n, "a function repeats on a path");
        }
    }

    #[test]
    fn inverting_twice_gives_every_sampled_stack_back(s in stacks()) {
        let p = build(&s);
        let twice = check(&check(&p, &Transform::Invert), &Transform::Invert);
        prop_assert_eq!(leaf_weights(&p), leaf_weights(&twice));
    }
}
