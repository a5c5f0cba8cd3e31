//! Folded → IR → callgrind throughput, the SVG flame graph emit on the same IR for comparison,
//! and callgrind → IR.
//!
//! `PROFCONV_BENCH_INPUT=big.folded cargo bench -p profconv-callgrind --bench callgrind` (or
//! `bench/callgrind.sh`, which generates the input). Prints, per stage, the median wall and CPU
//! time of several runs (`PROFCONV_BENCH_RUNS`, default 5) and the throughput in input MB/s.
//! CPU time is this thread's (Linux `/proc/thread-self/schedstat`, nanoseconds; else the
//! process's user + system time from `/proc/self/stat`). Peak memory is measured end to end by
//! `bench/callgrind.sh` (`/usr/bin/time` on the CLI), where the input is streamed.
//!
//! The two emitters compared (callgrind, and the flame graph with the CLI's default options)
//! read the same parsed profile, so their difference is the emit alone; the folded parse both
//! conversions share is timed separately.

use profconv_callgrind::{
    BuildOptions, EmitOptions, emit_callgrind, emit_callgrind_validated, parse_callgrind,
};
use profconv_flamegraph::{FlameOptions, emit_flamegraph};
use profconv_folded::parse_folded;
use profconv_plugin::{Context, Input, Options};
use std::io::Write;
use std::time::Instant;

#[path = "../../../bench/support.rs"]
mod support;
use support::{Counter, median, thread_cpu_seconds};

fn measure(name: &str, bytes: u64, runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm-up (page cache, allocator)
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (t, c) = (Instant::now(), thread_cpu_seconds());
        f();
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(thread_cpu_seconds() - c);
    }
    let (w, c) = (median(wall), median(cpu));
    println!(
        "{name:<40} wall {w:7.3} s   cpu {c:7.3} s   {:8.0} MB/s (cpu, of {:.1} MB)",
        bytes as f64 / 1e6 / c.max(1e-9),
        bytes as f64 / 1e6
    );
    (w, c)
}

fn main() {
    let Some(input) = support::bench_input("a folded file (bench/callgrind.sh generates one)")
    else {
        return;
    };
    let runs = support::runs(5);
    let bytes = std::fs::read(&input).expect("read the input");
    let n = bytes.len() as u64;
    println!(
        "input {} ({:.1} MB), median of {runs} runs",
        input.display(),
        n as f64 / 1e6
    );

    let parse = || {
        parse_folded(
            &mut Input::from_slice(&bytes),
            false,
            &mut Context::silent(),
        )
        .expect("folded parse")
    };
    let profile = parse();
    let v = profile.view();
    println!(
        "profile: {} funcs, {} stacks, {} samples",
        v.n_funcs(),
        v.n_stacks(),
        v.n_samples()
    );
    let (_, parse_cpu) = measure("folded parse (reference)", n, runs, || {
        std::hint::black_box(parse());
    });
    // As the plugin runs it: the SDK has validated the profile (timed apart below).
    let out_len = std::cell::Cell::new(0u64);
    let emit_cg = || {
        let mut sink = std::io::BufWriter::with_capacity(1 << 16, Counter(0));
        emit_callgrind_validated(&profile.view(), &mut sink, EmitOptions::default()).expect("emit");
        sink.flush().unwrap();
        out_len.set(sink.get_ref().0);
    };
    let (_, emit_cpu) = measure("callgrind emit", n, runs, emit_cg);
    measure("  profile validation (SDK, host)", n, runs, || {
        profile.view().validate().expect("valid");
    });
    // The flame graph emitter with the CLI's default options (`-o out.svg`), same profile.
    let flame_opts = FlameOptions::from_options(&Options::new(Vec::new())).expect("options");
    let svg_len = std::cell::Cell::new(0u64);
    let emit_svg = || {
        let mut sink = Counter(0);
        emit_flamegraph(
            &profile.view(),
            &mut sink,
            &flame_opts,
            &mut Context::silent(),
        )
        .expect("flamegraph emit");
        svg_len.set(sink.0);
    };
    let (_, svg_cpu) = measure("flamegraph (SVG) emit, for comparison", n, runs, emit_svg);
    println!(
        "emit CPU: callgrind {emit_cpu:.3} s, SVG {svg_cpu:.3} s (callgrind/SVG {:.2}); outputs {:.1} MB / {:.1} MB",
        emit_cpu / svg_cpu.max(1e-9),
        out_len.get() as f64 / 1e6,
        svg_len.get() as f64 / 1e6
    );
    measure("folded parse + callgrind emit", n, runs, || {
        let p = parse();
        let mut sink = std::io::BufWriter::with_capacity(1 << 16, Counter(0));
        emit_callgrind(&p.view(), &mut sink, EmitOptions::default()).expect("emit");
        sink.flush().unwrap();
    });
    println!(
        "callgrind output: {:.1} MB; folded → callgrind CPU {:.3} s (parse {:.3} + emit {:.3})",
        out_len.get() as f64 / 1e6,
        parse_cpu + emit_cpu,
        parse_cpu,
        emit_cpu
    );

    let mut text = Vec::new();
    emit_callgrind(&profile.view(), &mut text, EmitOptions::default()).expect("emit");
    measure(
        "callgrind parse (graph + tree)",
        text.len() as u64,
        runs,
        || {
            let p = parse_callgrind(
                &mut Input::from_slice(&text),
                &BuildOptions::default(),
                &mut Context::silent(),
            )
            .expect("callgrind parse");
            std::hint::black_box(p);
        },
    );
}
