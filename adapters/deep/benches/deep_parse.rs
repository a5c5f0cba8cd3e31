//! Deep.data → IR throughput, on one core.
//!
//! `PROFCONV_BENCH_INPUT=big.data cargo bench -p profconv-deep --bench deep_parse` (or
//! `bench/deep.sh`, which generates the input with the `gen_deep` example). Prints, for each
//! stage, the median wall and CPU time of several runs (`PROFCONV_BENCH_RUNS`, default 5) and the
//! throughput in MB/s of input:
//!
//! * `read records`: the header and every record into the id-indexed tables, references checked;
//! * `+ tree`: and the proc-dynamic graph walked into the call tree;
//! * `+ IR (Format::parse)`: the whole parse as the host runs it (`Input::whole`), giving the
//!   IR profile;
//! * `+ call tree`: and the IR's call tree built from it (what `profconv tree` does next).

use profconv_deep::{Deep, build_tree, read_file};
use profconv_plugin::ir::CallTree;
use profconv_plugin::{Context, Format, Input, Options};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// Process CPU time (user + system) in seconds, from /proc (Linux), else 0.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn measure(name: &str, bytes: u64, runs: usize, mut f: impl FnMut()) {
    f(); // warm-up (page cache, allocator)
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (t, c) = (Instant::now(), cpu_seconds());
        f();
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
    }
    let (w, c) = (median(wall), median(cpu));
    println!(
        "{name:<26} wall {w:7.3} s   cpu {c:7.3} s   {:8.0} MB/s (wall)",
        bytes as f64 / 1e6 / w
    );
}

fn main() {
    let Some(input) = std::env::var_os("PROFCONV_BENCH_INPUT").map(PathBuf::from) else {
        eprintln!("set PROFCONV_BENCH_INPUT to a Deep.data file (bench/deep.sh generates one)");
        return;
    };
    let runs: usize = std::env::var("PROFCONV_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let data = std::fs::read(&input).expect("read the input");
    let bytes = data.len() as u64;
    let file = read_file(&data).expect("a valid Deep.data file");
    let h = &file.header;
    println!(
        "input {} ({:.1} MB): {} proc-dynamics, {} call-site-dynamics, {} proc-statics, {} call-site-statics; median of {runs} runs, one thread",
        input.display(),
        bytes as f64 / 1e6,
        h.n_pd,
        h.n_csd,
        h.n_ps,
        h.n_css
    );
    drop(file);

    measure("read records", bytes, runs, || {
        black_box(read_file(black_box(&data)).expect("read"));
    });
    measure("+ tree", bytes, runs, || {
        let f = read_file(black_box(&data)).expect("read");
        black_box(build_tree(&f).expect("tree"));
    });
    let parse = || {
        <Deep as Format>::parse(
            &mut Input::from_slice(black_box(&data)),
            &Options::default(),
            &mut Context::silent(),
        )
        .expect("parse")
    };
    measure("+ IR (Format::parse)", bytes, runs, || {
        black_box(parse());
    });
    measure("+ call tree", bytes, runs, || {
        let p = parse();
        black_box(CallTree::build(&p.view()).expect("call tree"));
    });
    let p = parse();
    let v = p.view();
    let tree = CallTree::build(&v).expect("call tree");
    println!(
        "IR: {} funcs, {} frames, {} stacks, {} samples; {} call nodes",
        v.n_funcs(),
        v.n_frames(),
        v.n_stacks(),
        v.n_samples(),
        tree.len()
    );
}
