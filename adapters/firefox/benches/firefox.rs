//! Folded stacks → Firefox Profiler processed profile (gzip) and → speedscope JSON throughput.
//!
//! ```sh
//! PROFCONV_BENCH_INPUT=big.folded cargo bench -p profconv-firefox --bench firefox
//! ```
//!
//! Reads the input file once into memory, then per run: parse (folded plugin's parser), emit
//! Firefox gzip JSON into a byte counter, and separately emit speedscope JSON. Prints the median
//! wall and CPU time (user + system of this process, from `/proc/self/stat`) of
//! `PROFCONV_BENCH_RUNS` runs (default 3), MB/s of input, the output sizes, and peak RSS.

use profconv_firefox::{FirefoxOptions, SpeedscopeOptions, emit_firefox, emit_speedscope};
use profconv_plugin::{Context, Input};
use std::time::{Duration, Instant};

#[path = "../../../bench/support.rs"]
mod support;
use support::{Counter, median, peak_rss_kb, process_cpu};

fn measure<T>(f: impl FnOnce() -> T) -> (T, Duration, Option<Duration>) {
    let c0 = process_cpu();
    let t0 = Instant::now();
    let r = f();
    let wall = t0.elapsed();
    let cpu = match (c0, process_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    (r, wall, cpu)
}

fn main() {
    let Some(path) = support::bench_input("a folded file (see bench/firefox.sh)") else {
        return;
    };
    let runs = support::runs(3);
    let data = std::fs::read(&path).expect("read the input");
    let mb = data.len() as f64 / 1e6;
    println!("input {}: {:.1} MB, {runs} runs", path.display(), mb);
    let mut parse_t = (Vec::new(), Vec::new());
    let mut fx_t = (Vec::new(), Vec::new());
    let mut ss_t = (Vec::new(), Vec::new());
    let (mut fx_bytes, mut ss_bytes) = (0, 0);
    let mut shape = String::new();
    for _ in 0..runs {
        let (p, wall, cpu) = measure(|| {
            profconv_folded::parse_folded(
                &mut Input::from_slice(&data),
                false,
                &mut Context::silent(),
            )
            .expect("parse")
        });
        parse_t.0.push(wall);
        parse_t.1.push(cpu.unwrap_or(wall));
        let v = p.view();
        shape = format!(
            "{} funcs, {} stacks, {} samples",
            v.n_funcs(),
            v.n_stacks(),
            v.n_samples()
        );
        let (n, wall, cpu) = measure(|| {
            let mut c = Counter(0);
            emit_firefox(
                &v,
                &mut c,
                FirefoxOptions::default(),
                &mut Context::silent(),
            )
            .expect("emit firefox");
            c.0
        });
        fx_bytes = n;
        fx_t.0.push(wall);
        fx_t.1.push(cpu.unwrap_or(wall));
        let (n, wall, cpu) = measure(|| {
            let mut c = Counter(0);
            emit_speedscope(
                &v,
                &mut c,
                SpeedscopeOptions::default(),
                &mut Context::silent(),
            )
            .expect("emit speedscope");
            c.0
        });
        ss_bytes = n;
        ss_t.0.push(wall);
        ss_t.1.push(cpu.unwrap_or(wall));
    }
    println!("profile: {shape}");
    let report = |what: &str, t: (Vec<Duration>, Vec<Duration>)| {
        let (w, c) = (median(t.0), median(t.1));
        println!(
            "{what:<34} median wall {:>7.2} s, CPU {:>7.2} s, {:>7.1} MB/s of input (CPU)",
            w.as_secs_f64(),
            c.as_secs_f64(),
            mb / c.as_secs_f64().max(1e-9)
        );
        c
    };
    let p = report("parse folded", parse_t);
    let f = report("emit firefox (json.gz)", fx_t);
    report("emit speedscope (json)", ss_t);
    println!(
        "{:<34} CPU {:>7.2} s, {:.1} MB/s of input",
        "parse + emit firefox",
        (p + f).as_secs_f64(),
        mb / (p + f).as_secs_f64().max(1e-9)
    );
    println!(
        "output: firefox {:.1} MB gzip, speedscope {:.1} MB",
        fx_bytes as f64 / 1e6,
        ss_bytes as f64 / 1e6
    );
    if let Some(kb) = peak_rss_kb() {
        println!(
            "peak RSS {:.0} MB (input held in memory: {:.0} MB)",
            kb as f64 / 1e3,
            mb
        );
    }
}
