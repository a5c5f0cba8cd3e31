//! The complete example of `docs/snapshot-testing.md`: a profiler's test snapshots the call tree
//! of what the profiler wrote, through a format profconv reads (folded stacks here).

use profconv_conformance::{TreeTextConfig, profile_tree_text, tree_text, tree_text_with};
use profconv_folded::Folded;
use profconv_ir::{Fraction, Transform, TreeOrder, TreeTextOptions};
use profconv_plugin::{Context, Format, Input, Options};

/// Stands in for the profiler under test: it would run a workload and return what it wrote.
fn run_my_profiler() -> Vec<u8> {
    b"main;load;read 12\n\
      main;load;parse;lex 30\n\
      main;load;parse;build 8\n\
      main;render 49\n\
      main;render;draw 1\n"
        .to_vec()
}

#[test]
fn whole_tree() {
    let text =
        tree_text::<Folded>(&run_my_profiler()).expect("the profiler wrote valid folded stacks");
    insta::assert_snapshot!("whole_tree", text);
}

#[test]
fn top_of_the_tree_only() {
    // Keep snapshots small and stable: two levels, nodes under 5% of the total folded into
    // their parent, siblings by name.
    let config = TreeTextConfig {
        transforms: vec![
            Transform::MaxDepth(2),
            Transform::MinTotal(Fraction::decimal(5, 2).unwrap()),
        ],
        tree: TreeTextOptions {
            order: TreeOrder::Name,
            ..Default::default()
        },
        ..Default::default()
    };
    let text = tree_text_with::<Folded>(&run_my_profiler(), &config).unwrap();
    insta::assert_snapshot!("top_of_the_tree", text);
}

#[test]
fn the_same_by_hand() {
    // What the helpers do, with the IR's own API.
    let bytes = run_my_profiler();
    let profile = Folded::parse(
        &mut Input::from_slice(&bytes),
        &Options::default(),
        &mut Context::silent(),
    )
    .unwrap();
    let view = profile.view();
    let (shallow, _applied) =
        profconv_ir::transform::apply(&view, &Transform::MaxDepth(2)).unwrap();
    let shallow = shallow.view();
    let tree = profconv_ir::CallTree::build(&shallow).unwrap();
    let by_hand = profconv_ir::render_tree(&shallow, &tree, &TreeTextOptions::default()).unwrap();

    let config = TreeTextConfig {
        transforms: vec![Transform::MaxDepth(2)],
        ..Default::default()
    };
    assert_eq!(by_hand, profile_tree_text(&view, &config).unwrap());
    assert_eq!(
        by_hand,
        "main self=0 total=100\n  load self=50 total=50\n  render self=50 total=50\n"
    );
}
