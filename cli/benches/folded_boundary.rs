//! Folded → IR throughput, in-process and through the real plugin boundary.
//!
//! `PROFCONV_BENCH_INPUT=big.folded cargo bench -p profconv-cli --bench folded_boundary`
//! (or `bench/folded.sh`, which generates the input). Prints, for each stage, the median wall
//! and CPU time of several runs and the throughput, then the share of the plugin path's time
//! spent at the boundary (read callbacks, export, validation): (plugin − library) / plugin.

use profconv_plugin::host::{self, ParseInput};
use profconv_plugin::{Context, Input};
use std::fs::File;
use std::io::Read;
use std::time::Instant;

#[path = "../../bench/support.rs"]
mod support;
use support::{median, process_cpu_seconds};

fn measure(name: &str, bytes: u64, runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm-up (page cache, allocator)
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (t, c) = (Instant::now(), process_cpu_seconds());
        f();
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(process_cpu_seconds() - c);
    }
    let (w, c) = (median(wall), median(cpu));
    println!(
        "{name:<34} wall {w:7.3} s   cpu {c:7.3} s   {:8.0} MB/s (wall)",
        bytes as f64 / 1e6 / w
    );
    (w, c)
}

fn main() {
    let Some(input) = support::bench_input("a folded file (bench/folded.sh generates one)") else {
        return;
    };
    let runs = support::runs(5);
    let bytes = std::fs::metadata(&input).expect("the input").len();
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().and_then(|d| d.parent()).unwrap();
    let lib = target.join(format!(
        "{}profconv_plugin_folded{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let plugin = host::load_library(&lib)
        .unwrap_or_else(|e| panic!("{e} (run cargo build --release first)"));
    let folded = plugin
        .formats
        .iter()
        .find(|f| f.id == "folded")
        .unwrap()
        .clone();
    println!(
        "input {} ({:.1} MB), median of {runs} runs",
        input.display(),
        bytes as f64 / 1e6
    );

    measure("read only (1 MiB blocks)", bytes, runs, || {
        let mut f = File::open(&input).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        while f.read(&mut buf).unwrap() > 0 {}
    });
    let (lib_wall, lib_cpu) = measure("parse, library call (no ABI)", bytes, runs, || {
        let mut f = File::open(&input).unwrap();
        let p = profconv_folded::parse_folded(
            &mut Input::from_reader(&mut f),
            false,
            &mut Context::silent(),
        )
        .unwrap();
        std::hint::black_box(p.stacks.prefix.len());
    });
    if std::env::var_os("PROFCONV_BENCH_ONLY_LIBRARY").is_some() {
        return; // for profiling the parser alone
    }
    let (plug_wall, plug_cpu) = measure("parse, plugin via dlopen + ABI", bytes, runs, || {
        let mut f = File::open(&input).unwrap();
        let req = ParseInput {
            reader: &mut f,
            whole: None,
            size_hint: Some(bytes),
            name: "bench",
            threads: 1,
            release: None,
        };
        let p = folded.parse(req, &[], &mut |_, _| {}).unwrap();
        std::hint::black_box(p.view().n_stacks());
    });
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    measure(
        &format!("parse, plugin via dlopen + ABI, {threads} threads"),
        bytes,
        runs,
        || {
            let mut f = File::open(&input).unwrap();
            let req = ParseInput {
                reader: &mut f,
                whole: None,
                size_hint: Some(bytes),
                name: "bench",
                threads,
                release: None,
            };
            let p = folded.parse(req, &[], &mut |_, _| {}).unwrap();
            std::hint::black_box(p.view().n_stacks());
        },
    );
    let mut f = File::open(&input).unwrap();
    let req = ParseInput {
        reader: &mut f,
        whole: None,
        size_hint: Some(bytes),
        name: "bench",
        threads: 1,
        release: None,
    };
    let profile = folded.parse(req, &[], &mut |_, _| {}).unwrap();
    let view = profile.view();
    println!(
        "profile: {} strings, {} funcs, {} stacks, {} samples",
        view.strings.len(),
        view.n_funcs(),
        view.n_stacks(),
        view.n_samples()
    );
    let (val_wall, _) = measure("  of which: host validation of IR", bytes, runs, || {
        // What the host runs on every profile a plugin returns (ProfileRef::validate).
        profile.view().validate().expect("valid");
    });
    measure("emit folded via plugin (to sink)", bytes, runs, || {
        folded
            .emit(&view, &mut std::io::sink(), &[], &mut |_, _| {})
            .unwrap();
    });
    println!(
        "boundary share of the plugin parse: {:.1}% wall, {:.1}% cpu (validation alone {:.1}%)",
        100.0 * (plug_wall - lib_wall).max(0.0) / plug_wall,
        100.0 * (plug_cpu - lib_cpu).max(0.0) / plug_cpu.max(1e-9),
        100.0 * val_wall / plug_wall
    );
}
