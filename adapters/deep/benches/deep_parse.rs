//! Deep.data → IR throughput, on one core.
//!
//! `PROFCONV_BENCH_INPUT=big.data cargo bench -p profconv-deep --bench deep_parse` (or
//! `bench/deep.sh`, which generates the inputs with the `gen_deep` example). Prints the file's
//! shape (bytes per record kind, slots per proc-dynamic), then, for each stage, the median wall
//! and CPU time of several runs (`PROFCONV_BENCH_RUNS`, default 5) and the throughput in MB/s of
//! input per CPU second and per wall second (on a shared machine the CPU figure is the one to
//! compare; `PROFCONV_BENCH_ONLY=TEXT` runs only the stages whose name contains TEXT, for
//! `perf record`):
//!
//! * `read records`: the header and every record into the id-indexed tables, references checked;
//! * `+ tree`: and the proc-dynamic graph walked into the call tree;
//! * `+ IR (Format::parse)`: the whole parse as the host runs it (`Input::whole`), giving the
//!   IR profile;
//! * `+ call tree`: and the IR's call tree built from it (what `profconv tree` does next).

use profconv_deep::{Deep, DeepFile, build_tree, read_file};
use profconv_plugin::ir::CallTree;
use profconv_plugin::{Context, Format, Input, Options};
use std::hint::black_box;
use std::time::Instant;

#[path = "../../../bench/support.rs"]
mod support;
use support::{median, thread_cpu_seconds};

fn measure(name: &str, bytes: u64, runs: usize, mut f: impl FnMut()) {
    // PROFCONV_BENCH_ONLY=SUBSTRING runs only the stages whose name contains it (for profiling).
    if let Ok(only) = std::env::var("PROFCONV_BENCH_ONLY") {
        if !name.contains(only.as_str()) {
            return;
        }
    }
    f(); // warm-up (page cache, allocator)
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (t, c) = (Instant::now(), thread_cpu_seconds());
        f();
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(thread_cpu_seconds() - c);
    }
    let (w, c) = (median(wall), median(cpu));
    // The CPU clocks move in steps (scheduler ticks): too short a run has no CPU figure.
    let cpu_rate = if c >= 0.02 {
        format!("{:6.0}", bytes as f64 / 1e6 / c)
    } else {
        "     -".to_string()
    };
    println!(
        "{name:<26} wall {w:8.4} s   cpu {c:8.4} s   {cpu_rate} MB/s (cpu)  {:6.0} MB/s (wall)",
        bytes as f64 / 1e6 / w
    );
}

/// The file's shape: bytes per record kind (from the records' offsets) and the averages that
/// tell a generated file from a real one (compare with the real `mandelbrot.Deep.data`: 66 %
/// proc-statics of 96 bytes, 33 % call-site-statics of 19 bytes, 3.05 slots per proc-dynamic).
fn print_shape(f: &DeepFile<'_>, bytes: u64) {
    let mut at: Vec<(u64, usize)> = Vec::new();
    at.extend(f.pd.iter().skip(1).map(|r| (r.offset, 0)));
    at.extend(f.csd.iter().skip(1).map(|r| (r.offset, 1)));
    at.extend(f.ps.iter().skip(1).map(|r| (r.offset, 2)));
    at.extend(f.css.iter().skip(1).map(|r| (r.offset, 3)));
    at.sort_unstable();
    let end = f.end_token_at.unwrap_or(bytes);
    let (mut size, mut count) = ([0u64; 4], [0u64; 4]);
    for (k, &(o, kind)) in at.iter().enumerate() {
        size[kind] += at.get(k + 1).map_or(end, |n| n.0) - o;
        count[kind] += 1;
    }
    let part = |k: usize| {
        format!(
            "{:.1} % in {} records of {:.1} bytes",
            100.0 * size[k] as f64 / bytes as f64,
            count[k],
            size[k] as f64 / count[k].max(1) as f64
        )
    };
    println!(
        "shape: proc-dynamic {}; call-site-dynamic {}; proc-static {}; call-site-static {}",
        part(0),
        part(1),
        part(2),
        part(3)
    );
    let slots: u64 = f.pd.iter().map(|p| p.n_slots as u64).sum();
    println!(
        "       {:.2} slots and {:.2} call-site-dynamics per proc-dynamic, {:.2} call sites per proc-static, coverage {}",
        slots as f64 / count[0].max(1) as f64,
        f.refs.len() as f64 / count[0].max(1) as f64,
        f.ps_css.len() as f64 / count[2].max(1) as f64,
        f.header.coverage.name()
    );
}

fn main() {
    let Some(input) = support::bench_input("a Deep.data file (bench/deep.sh generates one)") else {
        return;
    };
    let runs = support::runs(5);
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
    print_shape(&file, bytes);
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
