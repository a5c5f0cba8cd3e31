//! Transforms on real perf captures: totals kept or shrunk as each transform must, results
//! valid, and a few transformed trees snapshotted (`tests/snapshots/transforms__*.snap`).

use profconv_conformance::{TreeTextConfig, profile_tree_text};
use profconv_folded::parse_folded;
use profconv_ir::transform::apply;
use profconv_ir::{CallTree, Fraction, Profile, Transform, TreeOrder, TreeTextOptions};
use profconv_plugin::{Context, Input};
use std::path::Path;

fn load(rel: &str) -> Profile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel);
    let bytes = std::fs::read(&path).unwrap();
    parse_folded(
        &mut Input::from_slice(&bytes),
        false,
        &mut Context::silent(),
    )
    .unwrap()
}

fn total(p: &Profile) -> i64 {
    let t = CallTree::build(&p.view()).unwrap();
    t.grand_total(0)
}

/// The heaviest path of `len` functions from the heaviest root (a target that exists).
fn heaviest_path(p: &Profile, len: usize) -> Vec<String> {
    let v = p.view();
    let t = CallTree::build(&v).unwrap();
    let heaviest = |nodes: Vec<u32>| {
        nodes
            .into_iter()
            .max_by_key(|&n| (t.total_values[0][n as usize], std::cmp::Reverse(n)))
    };
    let mut node = heaviest(t.roots.clone()).unwrap();
    let mut path = vec![v.func_name_str(t.func[node as usize]).to_string()];
    while path.len() < len {
        let Some(next) = heaviest(t.children(node).collect()) else {
            break;
        };
        node = next;
        path.push(v.func_name_str(t.func[node as usize]).to_string());
    }
    path
}

fn run(p: &Profile, t: &Transform) -> Profile {
    let (out, applied) = apply(&p.view(), t).unwrap();
    out.view().validate().unwrap();
    assert!(
        applied.matched > 0 || matches!(t, Transform::MinTotal(_)),
        "{t} matched nothing"
    );
    out
}

#[test]
fn every_transform_keeps_or_shrinks_the_total_as_it_must_on_perf_captures() {
    for rel in [
        "folded/perf/py.folded",
        "folded/perf/cargo.folded",
        "folded/perf/pyspy-native-threads.folded",
    ] {
        let p = load(rel);
        let before = total(&p);
        let path = heaviest_path(&p, 3);
        let deep = heaviest_path(&p, 6);
        let func = deep.last().unwrap().clone();
        let kept = [
            Transform::MergeCallNode(path.clone()),
            Transform::MergeCallNode(deep.clone()),
            Transform::MergeFunction(func.clone()),
            Transform::MergeSubtree(path.clone()),
            Transform::CollapseDirectRecursion(None),
            Transform::CollapseRecursion(None),
            Transform::Invert,
            Transform::MaxDepth(4),
            Transform::MinTotal(Fraction::decimal(1, 2).unwrap()),
        ];
        for t in &kept {
            assert_eq!(total(&run(&p, t)), before, "{rel}: {t} must keep the total");
        }
        let dropped = total(&run(&p, &Transform::Drop(path.clone())));
        let focused = total(&run(&p, &Transform::FocusSubtree(path.clone())));
        // Focus keeps exactly the samples through the node, drop exactly the others.
        let tree = CallTree::build(&p.view()).unwrap();
        let names: Vec<&str> = path.iter().map(String::as_str).collect();
        let node = tree
            .find_by_names(&p.view(), &names)
            .expect("the heaviest path names a node");
        let through = tree.total_values[0][node as usize];
        assert!(
            through > 0,
            "{rel}: the heaviest path {path:?} has a weight"
        );
        assert_eq!(focused, through, "{rel}: focus of {path:?}");
        assert_eq!(dropped, before - through, "{rel}: drop of {path:?}");
        let in_func = total(&run(&p, &Transform::FocusFunction(func.clone())));
        assert!(in_func > 0 && in_func <= before, "{rel}: focus-func {func}");
    }
}

/// The tree text, through the same helper profconv offers profiler authors for their snapshots
/// (`profconv_conformance::profile_tree_text`, docs/snapshot-testing.md).
fn tree(p: &Profile) -> String {
    let config = TreeTextConfig {
        tree: TreeTextOptions {
            order: TreeOrder::Total,
            ..Default::default()
        },
        ..Default::default()
    };
    profile_tree_text(&p.view(), &config).unwrap()
}

#[test]
fn transformed_trees_of_a_perf_capture() {
    let p = load("folded/perf/gzip.folded");
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s.bind(|| {
        let depth2 = run(&p, &Transform::MaxDepth(2));
        insta::assert_snapshot!("transforms__gzip_max_depth_2", tree(&depth2));
        let inverted = run(
            &run(&p, &Transform::MinTotal(Fraction::decimal(2, 2).unwrap())),
            &Transform::Invert,
        );
        insta::assert_snapshot!(
            "transforms__gzip_min_total_2pct_then_invert",
            tree(&inverted)
        );
        let kernel = run(&p, &Transform::FocusFunction("read".into()));
        insta::assert_snapshot!("transforms__gzip_focus_func_read", tree(&kernel));
    });
}

/// A transform that changes nothing (a name no function has, a depth above every stack, a
/// fraction no node is below) keeps a real capture or trace as it is, building nothing, and
/// that is exactly, column for column, the profile the rebuild gives.
#[test]
fn a_transform_that_changes_nothing_keeps_real_profiles_as_the_rebuild_gives_them() {
    use profconv_pvm::{ParseOptions, parse_pvm};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut profiles: Vec<(String, Profile)> = [
        "folded/perf/py.folded",
        "folded/perf/cargo.folded",
        "folded/perf/pyspy-native-threads.folded",
    ]
    .iter()
    .map(|rel| (rel.to_string(), load(rel)))
    .collect();
    let mut traces: Vec<_> = std::fs::read_dir(dir.join("pvm"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pvmtrace"))
        .collect();
    traces.sort();
    assert!(traces.len() >= 4);
    for path in traces {
        let bytes = std::fs::read(&path).unwrap();
        for aggregate in [false, true] {
            let opts = ParseOptions {
                aggregate,
                ..Default::default()
            };
            let Ok(p) = parse_pvm(
                &mut Input::from_slice(&bytes),
                &opts,
                &mut Context::silent(),
            ) else {
                continue;
            };
            profiles.push((format!("{} aggregate={aggregate}", path.display()), p));
        }
    }
    assert!(profiles.len() >= 3 + 8, "{} profiles", profiles.len());
    for (name, p) in &profiles {
        for spec in [
            "merge-func:nomatch",
            "merge:nomatch",
            "prune:nomatch",
            "drop:nomatch",
            "collapse-direct-rec:nomatch",
            "collapse-rec:nomatch",
            "max-depth:100000",
            "min-total:0",
        ] {
            eprintln!("{name}: {spec}");
            profconv_ir::testing::assert_kept_as_rebuilt(p, spec);
        }
    }
}
