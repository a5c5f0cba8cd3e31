//! PVM trace → IR → folded throughput, in both parse modes.
//!
//! ```sh
//! PROFCONV_BENCH_INPUT=big.pvmtrace cargo bench -p profconv-pvm --bench pvm
//! ```
//!
//! For each mode (`ordered`, the default, and `-O aggregate`) the input is parsed from a file
//! through `Input` as `Read` (as the host streams it) and emitted as folded stacks into a sink,
//! `PROFCONV_BENCH_RUNS` times (default 5). Prints the median wall and CPU time of the parse and
//! of parse + emit, the parse throughput in MB/s, the IR's size, and the peak RSS of the mode
//! (Linux: reset through `/proc/self/clear_refs` before each mode, read from `VmHWM`).
//!
//! `PROFCONV_BENCH_MODE=ordered` (or `aggregate`) runs one mode only, and
//! `PROFCONV_BENCH_EMIT=0` skips the emit (for profiling the parse alone with `perf record`).
//! `PROFCONV_BENCH_WHOLE=1` reads the file into memory first and parses it from there (as the
//! host does when it holds the input: the parser then knows the input's size and sizes the
//! IR's columns from it).

use profconv_plugin::{Context, Input};
use profconv_pvm::{ParseOptions, parse_pvm};
use std::io::BufReader;
use std::time::{Duration, Instant};

#[path = "../../../bench/support.rs"]
mod support;
use support::{median, peak_rss_kb, reset_peak_rss, thread_cpu};

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn main() {
    let Some(path) = support::bench_input("a pvmtrace file (see bench/pvm.sh)") else {
        return;
    };
    let runs = support::runs(5);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "input: {} ({:.1} MB), {runs} runs per mode",
        path.display(),
        size as f64 / 1e6
    );
    let only = std::env::var("PROFCONV_BENCH_MODE").unwrap_or_default();
    let emit = std::env::var("PROFCONV_BENCH_EMIT").map_or(true, |v| v != "0");
    let whole = std::env::var("PROFCONV_BENCH_WHOLE").is_ok_and(|v| v == "1");
    let data = if whole {
        std::fs::read(&path).expect("read input")
    } else {
        Vec::new()
    };
    for (mode, aggregate) in [("ordered (default)", false), ("aggregate", true)] {
        if !only.is_empty() && !mode.starts_with(only.as_str()) {
            continue;
        }
        let opts = ParseOptions {
            aggregate,
            ..Default::default()
        };
        reset_peak_rss();
        let (mut parse_wall, mut parse_cpu, mut all_wall, mut all_cpu) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut shape = String::new();
        for _ in 0..runs {
            let file = std::fs::File::open(&path).expect("open input");
            let mut reader = BufReader::with_capacity(1 << 16, file);
            let (w0, c0) = (Instant::now(), thread_cpu());
            let mut input = if whole {
                Input::from_slice(&data)
            } else {
                Input::from_reader(&mut reader)
            };
            let p = parse_pvm(&mut input, &opts, &mut Context::silent()).expect("parse");
            let (w1, c1) = (Instant::now(), thread_cpu());
            if emit {
                profconv_folded::emit_folded(
                    &p.view(),
                    &mut std::io::sink(),
                    profconv_folded::EmitOptions::default(),
                )
                .expect("emit");
            }
            let (w2, c2) = (Instant::now(), thread_cpu());
            parse_wall.push(w1 - w0);
            all_wall.push(w2 - w0);
            if let (Some(c0), Some(c1), Some(c2)) = (c0, c1, c2) {
                parse_cpu.push(c1 - c0);
                all_cpu.push(c2 - c0);
            }
            shape = format!(
                "{} samples, {} stacks, {} funcs, {} threads",
                p.samples.stack.len(),
                p.stacks.prefix.len(),
                p.funcs.name.len(),
                p.threads.len()
            );
        }
        let pw = median(parse_wall);
        println!("{mode}: {shape}");
        println!(
            "  parse:        wall {} (median), {:.0} MB/s{}",
            secs(pw),
            size as f64 / 1e6 / pw.as_secs_f64(),
            if parse_cpu.is_empty() {
                String::new()
            } else {
                format!(", CPU {}", secs(median(parse_cpu)))
            }
        );
        println!(
            "  parse + emit: wall {}{}",
            secs(median(all_wall)),
            if all_cpu.is_empty() {
                String::new()
            } else {
                format!(", CPU {}", secs(median(all_cpu)))
            }
        );
        if let Some(kb) = peak_rss_kb() {
            println!("  peak RSS: {:.0} MB", kb as f64 / 1024.0);
        }
    }
}
