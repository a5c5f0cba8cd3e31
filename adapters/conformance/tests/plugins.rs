//! The conformance kit on real plugin libraries: it passes on every built-in plugin and fails,
//! with a report naming the problem, on the broken fixture plugins (one panics, one emits
//! different bytes on each call, one is built for ABI 0.7).

use profconv_conformance::{Outcome, Report, check_plugin};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// `target/<profile>/`, beside this test binary's `deps/`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

/// Builds every workspace member once (`cargo test` does not build cdylibs), including the
/// test-only fixture plugins, which are not default members.
fn lib(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let dir = target_dir();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .args(["build", "--quiet", "--workspace"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build for the plugins");
        assert!(status.success(), "building the plugin libraries failed");
        dir
    });
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    dir.join(format!("{DLL_PREFIX}{name}{DLL_SUFFIX}"))
}

fn check(name: &str) -> Report {
    let report = check_plugin(&lib(name), &[]);
    println!("{report}");
    report
}

fn outcome(report: &Report, check: &str) -> Outcome {
    report
        .check(check)
        .unwrap_or_else(|| panic!("no check {check:?} in\n{report}"))
        .outcome
}

#[test]
fn every_builtin_plugin_passes() {
    for name in [
        "callgrind",
        "deep",
        "firefox",
        "flamegraph",
        "folded",
        "pvm",
    ] {
        let report = check(&format!("profconv_plugin_{name}"));
        assert!(
            report.passed(),
            "{name} fails the conformance kit:\n{report}"
        );
        assert_eq!(outcome(&report, "handshake"), Outcome::Pass);
    }
}

#[test]
fn readers_are_fully_exercised() {
    // Formats with a built-in sample run every parse check (none is skipped).
    for (lib_name, id) in [
        ("folded", "folded"),
        ("callgrind", "callgrind"),
        ("pvm", "pvm"),
        ("deep", "deep"),
    ] {
        let report = check(&format!("profconv_plugin_{lib_name}"));
        for c in [
            "sniff other formats",
            "sniff own samples",
            "parse -> folded -> parse",
            "malformed input",
            "two threads",
        ] {
            assert_eq!(
                outcome(&report, &format!("{id}: {c}")),
                Outcome::Pass,
                "{report}"
            );
        }
    }
}

#[test]
fn a_panicking_plugin_fails() {
    let report = check("profconv_testplugin_panicky");
    assert!(!report.passed(), "{report}");
    assert_eq!(outcome(&report, "panicky: malformed input"), Outcome::Fail);
    // Its sniffer panics on the short and broken inputs too, which detection gives it.
    let malformed = report.check("panicky: malformed input").unwrap();
    assert!(
        malformed
            .detail
            .contains("(a folded file): its content sniffer panicked"),
        "{report}"
    );
    assert_eq!(outcome(&report, "panicky: emit twice"), Outcome::Fail);
    let text = report.to_string();
    assert!(text.contains("plugin panicked"), "{text}");
    assert!(text.contains("(PANIC)"), "{text}");
    assert!(text.lines().last().unwrap().starts_with("FAIL: "), "{text}");
}

#[test]
fn a_nondeterministic_emitter_fails() {
    let report = check("profconv_testplugin_nondeterministic");
    assert!(!report.passed(), "{report}");
    let c = report
        .check("nondeterministic: emit twice")
        .expect("emit check");
    assert_eq!(c.outcome, Outcome::Fail, "{report}");
    assert!(
        c.detail.contains("the two outputs differ at byte"),
        "{report}"
    );
}

#[test]
fn a_plugin_for_another_abi_fails_the_handshake() {
    let report = check("profconv_testplugin_oldabi");
    assert!(!report.passed(), "{report}");
    assert_eq!(report.checks.len(), 1, "{report}");
    let c = &report.checks[0];
    assert_eq!((c.name.as_str(), c.outcome), ("handshake", Outcome::Fail));
    assert!(c.detail.contains("plugin ABI 0.7"), "{report}");
    assert!(c.detail.contains("rebuild"), "{report}");
}

#[test]
fn a_missing_library_and_a_missing_sample_fail() {
    let report = check_plugin(
        &PathBuf::from("/nonexistent/libprofconv_plugin_nothing.so"),
        &[PathBuf::from("/nonexistent/sample.folded")],
    );
    assert!(!report.passed());
    assert_eq!(
        outcome(&report, "sample /nonexistent/sample.folded"),
        Outcome::Fail
    );
    assert_eq!(outcome(&report, "handshake"), Outcome::Fail);
    // A device that never ends is not read into memory.
    let report = check_plugin(
        &PathBuf::from("/nonexistent/libprofconv_plugin_nothing.so"),
        &[PathBuf::from("/dev/zero")],
    );
    let c = report
        .checks
        .iter()
        .find(|c| c.name == "sample /dev/zero")
        .unwrap();
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.detail.contains("larger than 16 MiB"), "{report}");
}

/// A gzip sample is refused as such: plugin-check gives a sample to the plugin as it is, and
/// the plugin, which profconv gives decompressed input, said it was "gzip-compressed twice".
#[test]
fn a_gzip_sample_is_refused_saying_it_is_compressed() {
    let dir = std::env::temp_dir().join(format!("profconv-conformance-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gz = dir.join("sample.folded.gz");
    // `main;a 1\n`, gzip-compressed once.
    let bytes: [u8; 29] = [
        0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xcb, 0x4d, 0xcc, 0xcc, 0xb3, 0x4e, 0x54, 0x30, 0xe4,
        2, 0, 0xd9, 4, 0x1a, 0x30, 9, 0, 0, 0,
    ];
    std::fs::write(&gz, bytes).unwrap();
    let report = check_plugin(
        &PathBuf::from("/nonexistent/libprofconv_plugin_nothing.so"),
        std::slice::from_ref(&gz),
    );
    let c = report.check(&format!("sample {}", gz.display())).unwrap();
    assert_eq!(c.outcome, Outcome::Fail, "{report}");
    assert!(
        c.detail
            .contains("it is gzip-compressed, and plugin-check gives a sample"),
        "{report}"
    );
    assert!(!c.detail.contains("twice"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn user_samples_are_checked_too() {
    let dir = std::env::temp_dir().join(format!("profconv-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.folded");
    std::fs::write(&good, "main;a 1\nmain;b 2\n").unwrap();
    let bad = dir.join("bad.folded");
    std::fs::write(&bad, "this is not folded\n").unwrap();
    let report = check_plugin(&lib("profconv_plugin_folded"), &[good.clone(), bad.clone()]);
    println!("{report}");
    assert_eq!(
        outcome(&report, &format!("sample {}", good.display())),
        Outcome::Pass
    );
    let c = report.check(&format!("sample {}", bad.display())).unwrap();
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.detail.contains("line 1"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What folded stacks cannot hold is not held against a plugin: two functions of one name in
/// two files (C's static functions; callgrind keeps them apart) merge in folded stacks, and a
/// `;` in a name is written `:`. The round trip compares with the tree folded stacks can hold;
/// it failed the shipped callgrind plugin on a valid two-function file.
#[test]
fn the_folded_round_trip_allows_what_folded_stacks_cannot_hold() {
    let two_files = "# callgrind format\nversion: 1\nevents: Ir\n\nfl=a.c\nfn=main\n0 1\n\
                     cfl=a.c\ncfn=helper\ncalls=1 0\n0 5\ncfl=b.c\ncfn=helper\ncalls=1 0\n0 7\n\n\
                     fl=a.c\nfn=helper\n0 5\n\nfl=b.c\nfn=helper\n0 7\n\n\
                     fl=c.rs\nfn=<[u8; 32] as Debug>::fmt\n0 2\n";
    let report = profconv_conformance::check_plugin_with(
        &lib("profconv_plugin_callgrind"),
        &[("two.callgrind".to_string(), two_files.as_bytes().to_vec())],
    );
    println!("{report}");
    assert_eq!(
        outcome(&report, "callgrind: parse -> folded -> parse"),
        Outcome::Pass
    );
    assert!(report.passed(), "{report}");
}

/// A sample of deep stacks (8 000 nested calls never closed, 130 KB) is skipped by the folded
/// round trip, whose text would hold the square of the depth (200 MB here; 3.2 GB, and 24 GB
/// before the kernel stopped it, for 554 KB and 4.7 MB traces): the check wrote it all in
/// memory. The other samples (the given shallow one, the built-in one) are still checked.
#[test]
fn the_folded_round_trip_skips_a_sample_too_deep_to_write() {
    let mut deep = String::from("PVMTRACE 1\n");
    for i in 0..8_000 {
        deep.push_str(&format!("C {i} fn:f{i}\n"));
    }
    let shallow = "PVMTRACE 1\nC 0 fn:main\nC 1 fn:f\nE 5\nE 9\n";
    let samples = [
        ("deep.pvmtrace".to_string(), deep.into_bytes()),
        ("shallow.pvmtrace".to_string(), shallow.as_bytes().to_vec()),
    ];
    let report = profconv_conformance::check_plugin_with(&lib("profconv_plugin_pvm"), &samples);
    println!("{report}");
    let c = report.check("pvm: parse -> folded -> parse").unwrap();
    assert_eq!(c.outcome, Outcome::Pass, "{report}");
    assert!(
        c.detail.contains(
            "1 skipped, whose folded text would pass 64 MiB (each line holds its whole stack): deep.pvmtrace"
        ),
        "{report}"
    );
}

/// A sample given to a plugin that reads no format is not "read by this plugin".
#[test]
fn a_sample_for_a_plugin_that_reads_nothing_is_skipped_not_passed() {
    let report = profconv_conformance::check_plugin_with(
        &lib("profconv_plugin_firefox"),
        &[("garbage.txt".to_string(), b"garbage\n".to_vec())],
    );
    println!("{report}");
    let sample = report.check("sample garbage.txt").unwrap();
    assert_eq!(sample.outcome, Outcome::Skip, "{report}");
    assert!(sample.detail.contains("reads no format"), "{report}");
}
