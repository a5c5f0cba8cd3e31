//! A plugin written in C from docs/plugin-abi.md alone (`c-plugin/tabs.c`, its types in
//! `c-plugin/profconv_abi.h` with the doc's sizes and offsets checked at compile time), built
//! with the system's C compiler: the ABI as a plugin author in another language meets it.
//! Skipped, saying so, where no C compiler runs (`PROFCONV_REQUIRE_CC=1` makes that a failure).

#[path = "support/run.rs"]
mod run;
mod support;

use run::{profconv, run, temp_files, text, tmp, write};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use support::{SEED_001, SEED_001_TREE};

/// Builds `c-plugin/tabs.c` into `dir` as a plugin library, or `None` (said) without a compiler.
fn build_c_plugin(dir: &Path) -> Option<PathBuf> {
    build_c_plugin_with(dir, &[])
}

/// [`build_c_plugin`] with more compiler arguments (`-D` definitions).
fn build_c_plugin_with(dir: &Path, defines: &[&str]) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c-plugin/tabs.c");
    let lib = dir.join(format!(
        "{}profconv_plugin_ctabs{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = std::process::Command::new(&cc)
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC",
        ])
        .args(defines)
        .arg("-o")
        .arg(&lib)
        .arg(&src)
        .output();
    match built {
        Ok(out) if out.status.success() => Some(lib),
        Ok(out) => panic!(
            "{cc} could not build {}: {}",
            src.display(),
            text(&out.stderr)
        ),
        Err(e) => {
            assert!(
                std::env::var_os("PROFCONV_REQUIRE_CC").is_none(),
                "no C compiler ({cc}: {e})"
            );
            eprintln!("SKIP: no C compiler ({cc}: {e}): the C plugin's checks are skipped");
            None
        }
    }
}

/// A plugin that declares `panic_unwind = 0` (a Rust plugin built with `panic = "abort"`) is
/// not called by `plugin-check`: its first panic ended the checker (exit 134) with nothing of
/// the report printed, so the author never learned which check, or that the build was the
/// cause. The handshake fails saying so, and the rest is skipped.
#[test]
fn plugin_check_does_not_call_a_plugin_built_to_abort_at_a_panic() {
    let d = tmp();
    let Some(lib) = build_c_plugin_with(d.path(), &["-DCTABS_PANIC_UNWIND=0"]) else {
        return;
    };
    let sample = write(d.path(), "sample.tabs", b"main/a/b\t3\n");
    let out = profconv()
        .args([
            "plugin-check",
            lib.to_str().unwrap(),
            sample.to_str().unwrap(),
        ])
        .env("CTABS_ABORT_IN_SNIFF", "1")
        .output()
        .unwrap();
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}{}", text(&out.stderr));
    assert!(
        report.contains("FAIL") && report.contains("panic_unwind is 0"),
        "{report}"
    );
    assert!(
        report.contains("SKIP") && report.contains("not called"),
        "{report}"
    );
}

/// The C plugin loads, passes the conformance kit, and converts both ways with the built-in
/// formats: by its file name and, from a pipe, by its sniffer.
#[test]
fn a_plugin_written_in_c_converts_both_ways_and_passes_plugin_check() {
    let d = tmp();
    let Some(lib) = build_c_plugin(d.path()) else {
        return;
    };
    let lib = lib.to_str().unwrap();
    let out = run(&["--plugin", lib, "formats"]);
    let s = text(&out.stdout);
    assert!(
        s.contains("plugin ctabs 0.1.0 (plugin ABI 1.5, SDK c-handwritten)")
            && s.contains("format tabs: ")
            && s.contains("format jstacks: "),
        "{s}"
    );
    let sample = write(d.path(), "sample.tabs", b"main/a/b\t3\nmain/c\t2\n");
    let out = run(&["plugin-check", lib, sample.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let tabs = d.path().join("seed.tabs");
    let out = run(&[
        "--plugin",
        lib,
        "convert",
        input.to_str().unwrap(),
        "-o",
        tabs.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&tabs).unwrap(),
        "A/B/C/D/E\t1\nA/B/C/F/G\t1\nA/B/H/F\t1\n"
    );
    let out = run(&["--plugin", lib, "tree", tabs.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), SEED_001_TREE);
    // From a pipe: no name, the sniffer tells.
    let mut child = profconv()
        .args(["--plugin", lib, "tree", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&tabs).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), SEED_001_TREE);
    // Its option check: a message of its own, exit 2.
    let out = run(&[
        "--plugin",
        lib,
        "convert",
        input.to_str().unwrap(),
        "--to",
        "tabs",
        "-O",
        "sep=",
        "-o",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("option 'sep' must not be empty"),
        "{}",
        text(&out.stderr)
    );
}

/// Converts seed 001 to `work/out.tabs` (holding `old` first, if given) with the C plugin and
/// `-O option`, in a directory `work` of `dir` that holds nothing else; `None` without a C
/// compiler.
fn convert_seed_to_tabs(
    dir: &Path,
    option: &str,
    old: Option<&[u8]>,
) -> Option<(std::process::Output, PathBuf)> {
    let lib = build_c_plugin(dir)?;
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let input = write(&work, "seed.folded", SEED_001.as_bytes());
    let target = work.join("out.tabs");
    if let Some(old) = old {
        std::fs::write(&target, old).unwrap();
    }
    let out = run(&[
        "--plugin",
        lib.to_str().unwrap(),
        "convert",
        input.to_str().unwrap(),
        "-O",
        option,
        "-o",
        target.to_str().unwrap(),
    ]);
    Some((out, work))
}

/// A plugin that crashes (a store through a null pointer, in C) still ends profconv by the
/// signal, as it would have, but the half-written temp file beside the target is removed and
/// the target is untouched; the temp file used to be left behind.
#[cfg(unix)]
#[test]
fn a_plugin_that_crashes_leaves_no_temp_file() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmp();
    let Some((out, work)) = convert_seed_to_tabs(d.path(), "crash", Some(b"old\n")) else {
        return;
    };
    let target = work.join("out.tabs");
    assert_eq!(
        out.status.signal(),
        Some(libc_sigsegv()),
        "{:?}: {}",
        out.status,
        text(&out.stderr)
    );
    assert_eq!(temp_files(&work), Vec::<PathBuf>::new());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
}

/// A plugin whose runtime handles faults itself (Go, a JVM, a wasm engine: its handler,
/// installed when the library is loaded, recovers the faults it expects and hands the others
/// on) converts as it would without profconv's crash handler: a fault it recovers from is no
/// crash. profconv's handler, put in front of the runtime's once the output's temp file was
/// made, removed that file on the recovered fault, and the run failed (exit 4, "No such file
/// or directory") where it had written its output.
#[cfg(unix)]
#[test]
fn a_fault_a_plugin_recovers_from_is_no_crash() {
    let d = tmp();
    let Some((out, work)) = convert_seed_to_tabs(d.path(), "probe", None) else {
        return;
    };
    let target = work.join("out.tabs");
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "A/B/C/D/E\t1\nA/B/C/F/G\t1\nA/B/H/F\t1\n"
    );
    assert_eq!(temp_files(&work), Vec::<PathBuf>::new());
}

/// A plugin that calls `exit` while it is loaded (in its entry, or a library initialiser)
/// fails the run, named by its path, as in any other call: the process used to end with the
/// plugin's status, 0 for `exit(0)`, with nothing written and nothing said, in every command.
#[cfg(unix)]
#[test]
fn a_plugin_that_calls_exit_while_loaded_fails_the_run() {
    let d = tmp();
    let Some(lib) = build_c_plugin(d.path()) else {
        return;
    };
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let out = profconv()
        .args(["--plugin", lib.to_str().unwrap(), "tree"])
        .arg(&input)
        .env("CTABS_EXIT_AT_LOAD", "1")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains(&format!(
            "plugin '{}' ended the process (it called exit) while being loaded",
            lib.display()
        )),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// SIGSEGV's number (11 on every unix profconv builds for).
#[cfg(unix)]
fn libc_sigsegv() -> i32 {
    11
}
