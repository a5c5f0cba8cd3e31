//! What every `cargo bench` target of the workspace measures with: CPU clocks, peak memory,
//! medians, a writer that only counts. Each bench includes this file as a module
//! (`#[path = "../../../bench/support.rs"] mod support;`), so the benches stay plain binaries
//! with no shared crate to publish.
#![allow(dead_code)] // each bench uses part of it

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// The file `PROFCONV_BENCH_INPUT` names, or `None` after saying what to set it to (`what`: the
/// kind of file and where to get one). cargo runs a bench in its crate's folder, so a relative
/// path is taken from there; one that is not found stops the bench with a message saying so.
pub fn bench_input(what: &str) -> Option<PathBuf> {
    let Some(path) = std::env::var_os("PROFCONV_BENCH_INPUT").map(PathBuf::from) else {
        eprintln!("set PROFCONV_BENCH_INPUT to {what}; nothing to measure");
        return None;
    };
    if !path.is_file() {
        let here = std::env::current_dir().unwrap_or_default();
        panic!(
            "PROFCONV_BENCH_INPUT={}: no such file from {} (cargo runs a bench in its crate's \
             folder: give an absolute path)",
            path.display(),
            here.display()
        );
    }
    Some(path)
}

/// CPU time (user + system) of this thread so far: the scheduler's nanosecond count
/// (`/proc/thread-self/schedstat`), else the process's (see [`process_cpu`]).
pub fn thread_cpu() -> Option<Duration> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .or_else(process_cpu)
}

/// CPU time (user + system) of the whole process so far, every thread, from `/proc/self/stat`
/// (in the kernel's 10 ms ticks: time runs long enough to be several of them).
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// [`thread_cpu`] in seconds, 0 when unknown.
pub fn thread_cpu_seconds() -> f64 {
    thread_cpu().map_or(0.0, |d| d.as_secs_f64())
}

/// [`process_cpu`] in seconds, 0 when unknown.
pub fn process_cpu_seconds() -> f64 {
    process_cpu().map_or(0.0, |d| d.as_secs_f64())
}

/// Peak resident memory of the process so far (Linux `VmHWM`), in KB.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Starts [`peak_rss_kb`] again from the current size (Linux 4.0+), so a stage's peak is its
/// own.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The median (the upper one of an even count).
pub fn median<T: PartialOrd + Copy>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

/// Runs per measurement: `PROFCONV_BENCH_RUNS`, else `default`.
pub fn runs(default: usize) -> usize {
    std::env::var("PROFCONV_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// A writer that counts the bytes and keeps none (an emitter's output, measured without I/O).
#[derive(Default)]
pub struct Counter(pub u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
