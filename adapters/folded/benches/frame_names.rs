//! The folded reader's frame loop alone, stage by stage, over a folded file held in memory, on
//! one core, with no IR:
//!
//! `PROFCONV_BENCH_INPUT=$PWD/big.folded cargo bench -p profconv-folded --bench frame_names`
//! (an absolute path: cargo runs a bench in its crate's folder), or `bench/folded.sh`.
//!
//! * `lines`: each line found and its count split off;
//! * `line hash`: and the line's stack text hashed for `RepeatedStacks` (instead of the stages
//!   below: a repeated line costs this and a probe);
//! * `+ scan`: and each frame name's end found and hashed (`names::scan`);
//! * `+ frame table`: and each name probed in the frame table and compared with its stored copy
//!   (`FrameNames::frame`; a new name's frame is a counter here, not an IR frame).
//!
//! Each stage prints its median CPU time of several runs (`PROFCONV_BENCH_RUNS`, default 5) and
//! per frame; a stage's cost is its time minus the one before. docs/performance.md has the
//! figures for the generated 1 GB file.

#[path = "../src/names.rs"]
#[allow(dead_code, unused_imports)]
mod names;
#[path = "../src/repeats.rs"]
#[allow(dead_code)]
mod repeats;
#[path = "../../../bench/support.rs"]
mod support;

use memchr::{memchr, memrchr2};
use names::FrameNames;
use std::hint::black_box;
use support::{median, runs, thread_cpu_seconds};

#[derive(Clone, Copy, PartialEq)]
enum Stage {
    Lines,
    LineHash,
    Scan,
    Table,
}

/// Runs `stage` over every line's stack text; returns the number of frames and a checksum.
fn run(data: &[u8], stage: Stage) -> (u64, u64) {
    let mut table = FrameNames::new();
    let seed = table.seed;
    let lines = repeats::RepeatedStacks::new(seed);
    let (mut frames, mut sum, mut made) = (0u64, 0u64, 0u32);
    let mut rest = data;
    while !rest.is_empty() {
        let end = memchr(b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        let Some(sp) = memrchr2(b' ', b'\t', line) else {
            continue;
        };
        let text = &line[..sp];
        if stage == Stage::LineHash {
            sum = sum.wrapping_add((black_box(lines.key(text)) == Default::default()) as u64);
            continue;
        }
        if stage == Stage::Lines {
            sum = sum.wrapping_add(text.len() as u64);
            continue;
        }
        let mut start = 0;
        loop {
            let (end, hash) = names::scan(text, start, seed);
            frames += 1;
            sum = sum.wrapping_add(match stage {
                Stage::Table => table.frame(&text[start..end], hash, || {
                    made += 1;
                    made
                }) as u64,
                _ => hash,
            });
            if end == text.len() {
                break;
            }
            start = end + 1;
        }
    }
    (frames, sum)
}

fn main() {
    let Some(path) = support::bench_input("a folded file (bench/folded.sh generates one)") else {
        return;
    };
    let data = std::fs::read(&path).expect("read the input");
    println!("{}: {} bytes", path.display(), data.len());
    let n = runs(5);
    let frames = run(&data, Stage::Scan).0;
    for (name, stage) in [
        ("lines", Stage::Lines),
        ("line hash", Stage::LineHash),
        ("+ scan", Stage::Scan),
        ("+ frame table", Stage::Table),
    ] {
        black_box(run(&data, stage)); // warm-up
        let cpu: Vec<f64> = (0..n)
            .map(|_| {
                let c = thread_cpu_seconds();
                black_box(run(&data, stage));
                thread_cpu_seconds() - c
            })
            .collect();
        let c = median(cpu);
        let per_frame = c * 1e9 / frames.max(1) as f64;
        println!("{name:<14} cpu {c:7.3} s  {per_frame:6.1} ns/frame");
    }
    println!("{frames} frames");
}
