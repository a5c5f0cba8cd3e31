//! Time of each transform on a big folded input (they are one pass over the stack table plus
//! one over the samples, so they cost a fraction of parsing, whatever the input's line count).
//!
//! `PROFCONV_BENCH_INPUT=big.folded cargo bench -p profconv-cli --bench transforms`

use profconv_ir::transform::apply;
use profconv_ir::{CallTree, Fraction, Transform};
use profconv_plugin::{Context, Input};
use std::time::Instant;

fn main() {
    let Some(input) = std::env::var_os("PROFCONV_BENCH_INPUT") else {
        eprintln!("set PROFCONV_BENCH_INPUT to a folded file (bench/folded.sh generates one)");
        return;
    };
    let bytes = std::fs::metadata(&input).unwrap().len();
    let t = Instant::now();
    let mut f = std::fs::File::open(&input).unwrap();
    let p = profconv_folded::parse_folded(
        &mut Input::from_reader(&mut f),
        false,
        &mut Context::silent(),
    )
    .unwrap();
    let parse = t.elapsed().as_secs_f64();
    let v = p.view();
    println!(
        "input {:.1} MB: parse {parse:.3} s; {} stacks, {} samples",
        bytes as f64 / 1e6,
        v.n_stacks(),
        v.n_samples()
    );
    // Targets that exist: the heaviest root and its heaviest descendants.
    let tree = CallTree::build(&v).unwrap();
    let mut node = *tree
        .roots
        .iter()
        .max_by_key(|&&r| tree.total_values[0][r as usize])
        .unwrap();
    let mut path = vec![v.func_name_str(tree.func[node as usize]).to_string()];
    for _ in 0..3 {
        let Some(next) = tree
            .children(node)
            .max_by_key(|&c| tree.total_values[0][c as usize])
        else {
            break;
        };
        node = next;
        path.push(v.func_name_str(tree.func[node as usize]).to_string());
    }
    let func = path.last().unwrap().clone();
    let transforms = [
        Transform::MergeCallNode(path.clone()),
        Transform::MergeFunction(func.clone()),
        Transform::MergeSubtree(path.clone()),
        Transform::Drop(path.clone()),
        Transform::FocusSubtree(path.clone()),
        Transform::FocusFunction(func.clone()),
        Transform::CollapseDirectRecursion(None),
        Transform::CollapseRecursion(None),
        Transform::Invert,
        Transform::MaxDepth(10),
        Transform::MinTotal(Fraction::decimal(1, 4).unwrap()),
    ];
    for t in &transforms {
        let mut times = Vec::new();
        let mut out_stacks = 0;
        for _ in 0..3 {
            let start = Instant::now();
            let (out, _) = apply(&v, t).unwrap();
            times.push(start.elapsed().as_secs_f64());
            out_stacks = out.stacks.prefix.len();
        }
        times.sort_by(f64::total_cmp);
        let name = t.to_string();
        let name = if name.chars().count() > 40 {
            format!("{}…", name.chars().take(40).collect::<String>())
        } else {
            name
        };
        println!(
            "{name:<42} {:7.3} s  ({:4.1}% of parse)  → {out_stacks} stacks",
            times[1],
            100.0 * times[1] / parse
        );
    }
}
