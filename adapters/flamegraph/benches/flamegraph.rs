//! Emitter throughput: folded input → SVG flame graph, split into the folded parse and the
//! flamegraph emit (the part this crate owns), and the same emit through the IR's call tree.
//!
//! ```sh
//! PROFCONV_BENCH_INPUT=bench/out/flamegraph-seed42-200M.folded \
//!     cargo bench -p profconv-flamegraph --bench flamegraph
//! ```
//!
//! `PROFCONV_BENCH_RUNS` (default 5) sets the number of runs; each figure is the median.
//! CPU time is this thread's time on a CPU (Linux `/proc/thread-self/schedstat`; wall time
//! elsewhere). MB/s are input megabytes (10^6 bytes) per CPU second.

use profconv_flamegraph::attrs::SortOrder;
use profconv_flamegraph::{FlameOptions, emit_flamegraph, merge};
use profconv_plugin::ir::CallTree;
use profconv_plugin::{Context, Input};
use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "../../../bench/support.rs"]
mod support;
use support::thread_cpu;

/// Runs `f` `runs` times; returns the median wall and CPU times.
fn measure(runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let mut wall = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (c0, t0) = (thread_cpu(), Instant::now());
        f();
        let w = t0.elapsed();
        wall.push(w);
        cpu.push(match (c0, thread_cpu()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => w,
        });
    }
    wall.sort();
    cpu.sort();
    (wall[runs / 2], cpu[runs / 2])
}

/// Peak resident memory so far (Linux `VmHWM`), for information.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn report(what: &str, bytes: usize, (wall, cpu): (Duration, Duration)) {
    let mbs = bytes as f64 / 1e6 / cpu.as_secs_f64().max(1e-9);
    println!(
        "{what:<38} wall {:>8.3} s   cpu {:>8.3} s   {mbs:>8.1} MB/s",
        wall.as_secs_f64(),
        cpu.as_secs_f64()
    );
}

fn main() {
    let Some(path) = support::bench_input("a folded file (bench/flamegraph.sh generates one)")
    else {
        return;
    };
    let runs = support::runs(5);
    let data = std::fs::read(&path).expect("read the input");
    println!(
        "input {} ({} bytes), median of {runs} runs",
        path.display(),
        data.len()
    );

    let parse = || {
        profconv_folded::parse_folded(&mut Input::from_slice(&data), false, &mut Context::silent())
            .expect("a folded file")
    };
    report(
        "parse (folded plugin)",
        data.len(),
        measure(runs, || drop(black_box(parse()))),
    );
    let profile = parse();
    let view = profile.view();

    let opts = FlameOptions::default();
    let mut svg = Vec::new();
    let emit = measure(runs, || {
        svg.clear();
        emit_flamegraph(&view, &mut svg, &opts, &mut Context::silent()).expect("emit");
    });
    report("emit (flamegraph, default options)", data.len(), emit);
    println!("  SVG: {} bytes", svg.len());

    let min = |total: i64| opts.min_value(total);
    let fast = measure(runs, || {
        black_box(merge::merged_from_stacks(
            &view,
            Some(0),
            min,
            SortOrder::Name,
        ));
    });
    report("  layout from the stack table", data.len(), fast);
    let tree_build = measure(runs, || {
        drop(black_box(CallTree::build(&view).expect("tree")))
    });
    report("  CallTree::build (the other path)", data.len(), tree_build);
    let tree = CallTree::build(&view).expect("tree");
    let slow = measure(runs, || {
        let (w, _) = merge::node_widths(&view, &tree, Some(0));
        let total = merge::total_of_roots(&tree, &w);
        black_box(merge::merged(
            &view,
            &tree,
            &w,
            opts.min_value(total),
            SortOrder::Name,
        ));
    });
    report("  layout from the call tree", data.len(), slow);
    println!("peak RSS of this process: {}", peak_rss());
}
