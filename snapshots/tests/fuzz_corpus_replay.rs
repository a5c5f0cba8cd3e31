//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) and every crash the fuzzer
//! found (`fuzz/regressions/<target>/`) through the same checks the fuzz targets run
//! (`fuzz/src/lib.rs`, included below), so the normal test suite keeps them: every parser must
//! return `Ok` or `Err` on each file, never panic; a profile a parser returns must validate,
//! build a call tree and render; random plugin results (`host_profile`) must be refused by
//! `ProfileRef::validate` or go through every emitter without a panic.
//!
//! A failure names every file that panicked.

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod fuzz_logic;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Files of `fuzz/corpus/<target>` and `fuzz/regressions/<target>`, sorted.
fn inputs(target: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_file() && !name.to_string_lossy().starts_with('.') && name != "README.md" {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

fn replay(target: &str, check: fn(&[u8])) {
    let files = inputs(target);
    assert!(
        !files.is_empty(),
        "no corpus for fuzz target {target} under {}",
        fuzz_dir().display()
    );
    let mut panicked = Vec::new();
    for f in &files {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
        if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
            panicked.push(f.display().to_string());
        }
    }
    assert!(
        panicked.is_empty(),
        "fuzz target {target}: {} of {} inputs panicked:\n  {}",
        panicked.len(),
        files.len(),
        panicked.join("\n  ")
    );
}

#[test]
fn replay_folded() {
    replay(
        "folded",
        fuzz_logic::parse_and_check::<profconv_folded::Folded>,
    );
}

/// The same corpus, parsed on three threads in small pieces, gives the one-thread result.
#[test]
fn replay_folded_on_threads() {
    replay("folded", fuzz_logic::folded_threads_agree);
}

#[test]
fn replay_pvm() {
    replay("pvm", fuzz_logic::parse_and_check::<profconv_pvm::Pvm>);
}

#[test]
fn replay_deep() {
    replay("deep", fuzz_logic::parse_and_check::<profconv_deep::Deep>);
}

#[test]
fn replay_callgrind() {
    replay(
        "callgrind",
        fuzz_logic::parse_and_check::<profconv_callgrind::Callgrind>,
    );
}

#[test]
fn replay_host_profile() {
    replay("host_profile", fuzz_logic::host_profile);
}
