//! The `profconv` binary end to end, with plugins discovered next to it.

#[path = "support/run.rs"]
mod run;
mod support;

use run::{many_stacks, profconv, run, spawn_piped, text, tmp, write};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use support::{SEED_001, SEED_001_TREE, built_plugins, lib_path};

#[test]
fn formats_lists_the_folded_plugin_from_its_shared_library() {
    let out = run(&["formats"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(s.contains("plugin folded"), "{s}");
    assert!(s.contains("format folded"), "{s}");
    let lib = std::fs::canonicalize(lib_path("profconv_plugin_folded")).unwrap();
    assert!(
        s.contains(&lib.display().to_string()),
        "path of the library missing: {s}"
    );
    assert!(s.contains("-O skip-bad-lines"), "{s}");
    assert!(
        !s.contains("ancient") && !s.contains("panicky"),
        "fixtures must not be discovered: {s}"
    );
}

#[test]
fn tree_prints_seed_001() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let out = run(&["tree", input.to_str().unwrap(), "--order", "first-seen"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), SEED_001_TREE);
}

#[test]
fn convert_detects_formats_and_reads_stdin() {
    let d = tmp();
    let out_path = d.path().join("out.collapsed");
    let mut child = profconv()
        .args(["convert", "-", "-o", out_path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"x;y 2\nx 1\nx;y 3\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "x 1\nx;y 5\n");
}

/// An output named with one more `.gz` is written through gzip, as a `.gz` input is read
/// (it was plain text under a `.gz` name, or "cannot tell the output format"); the bytes are
/// the same on every run (no time or name in the header). `.json.gz` is the Firefox
/// emitter's own, compressed once.
#[test]
fn gzip_output_by_name_is_compressed_once() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let i = input.to_str().unwrap();
    let gunzip = |path: &Path| {
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        text
    };
    for (name, to) in [
        ("out.folded.gz", None),
        ("out.gz", Some("folded")),
        ("OUT.FOLDED.GZ", None),
    ] {
        let out_path = d.path().join(name);
        let mut args = vec!["convert", i, "-o", out_path.to_str().unwrap()];
        if let Some(to) = to {
            args.extend(["--to", to]);
        }
        let out = run(&args);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert_eq!(gunzip(&out_path), SEED_001, "{name}");
        let first = std::fs::read(&out_path).unwrap();
        assert!(run(&args).status.success());
        assert_eq!(
            std::fs::read(&out_path).unwrap(),
            first,
            "{name}: same bytes"
        );
    }
    let svgz = d.path().join("flame.svg.gz");
    assert!(
        run(&["convert", i, "-o", svgz.to_str().unwrap()])
            .status
            .success()
    );
    assert!(gunzip(&svgz).starts_with("<?xml"));
    let firefox = d.path().join("p.json.gz");
    assert!(
        run(&["convert", i, "-o", firefox.to_str().unwrap()])
            .status
            .success()
    );
    assert!(gunzip(&firefox).starts_with("{\"meta\""));
    // Whatever the name, a format that compresses itself is not compressed again.
    let any = d.path().join("prof.gz");
    let out = run(&["convert", i, "--to", "firefox", "-o", any.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(gunzip(&any).starts_with("{\"meta\""));
    // An extension and one more `.gz` is a longer match than `json.gz`: speedscope, gzipped.
    let speedscope = d.path().join("p.speedscope.json.gz");
    let out = run(&["convert", i, "-o", speedscope.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(gunzip(&speedscope).contains("speedscope.app/file-format-schema.json"));
}

#[test]
fn gzip_input_is_decompressed() {
    let d = tmp();
    let gz = d.path().join("seed.folded.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(SEED_001.as_bytes()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let out = run(&["convert", gz.to_str().unwrap(), "--to", "folded"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), SEED_001);
    // Detection by name looks through `.gz`: an input whose content says nothing (empty) is
    // read as the format its name gives, as it is uncompressed.
    let empty = d.path().join("empty.folded.gz");
    let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::fs::write(&empty, enc.finish().unwrap()).unwrap();
    let out = run(&["convert", empty.to_str().unwrap(), "--to", "folded"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
}

/// A gzip file whose data is corrupt but still decompresses (its checksum, at the end, is
/// wrong) is reported as corrupt gzip whatever the thread count: one thread used to fail first
/// on the garbage (`expected a count` at some line), where the reader thread of two, reading
/// ahead, found the checksum.
#[test]
fn a_corrupt_gzip_file_is_reported_as_such_whatever_the_thread_count() {
    let d = tmp();
    let stacks = "a;b 1\n".repeat(500_000);
    // Stored blocks: the data is in the file as it is, so changing a byte changes the text.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    enc.write_all(stacks.as_bytes()).unwrap();
    let mut gz = enc.finish().unwrap();
    let at = 100_000
        + gz[100_000..]
            .windows(6)
            .position(|w| w == b"a;b 1\n")
            .unwrap();
    gz[at + 4] = b'x';
    let path = d.path().join("corrupt.folded.gz");
    std::fs::write(&path, &gz).unwrap();
    for threads in ["1", "2"] {
        let out = run(&[
            "-j",
            threads,
            "convert",
            path.to_str().unwrap(),
            "--to",
            "folded",
        ]);
        assert_eq!(out.status.code(), Some(3), "-j {threads}");
        let err = text(&out.stderr);
        assert!(
            err.contains("corrupt or truncated gzip data") && !err.contains("expected a count"),
            "-j {threads}: {err}"
        );
        // The same bytes on stdin: the same error (stdin was not read on, on one thread).
        let mut child = spawn_piped(&[
            "-j", threads, "convert", "-", "--from", "folded", "--to", "folded",
        ]);
        let mut stdin = child.stdin.take().unwrap();
        let bytes = gz.clone();
        let feed = std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        let out = child.wait_with_output().unwrap();
        feed.join().unwrap();
        assert_eq!(out.status.code(), Some(3), "stdin -j {threads}");
        let err = text(&out.stderr);
        assert!(
            err.contains("<stdin>: byte ") && err.contains("corrupt or truncated gzip data"),
            "stdin -j {threads}: {err}"
        );
    }
    // A stream cut short after a line that warns: the warning, then the error, on any number
    // of threads (the parallel reader dropped the lines it had read before the error).
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(b"a\xff 1\n").unwrap();
    enc.write_all("b 1\n".repeat(10_000).as_bytes()).unwrap();
    let cut = enc.finish().unwrap();
    let cut_path = d.path().join("cut.gz");
    std::fs::write(&cut_path, &cut[..cut.len() - 4]).unwrap();
    let stderr_with = |threads: &str| {
        let out = run(&[
            "-j",
            threads,
            "tree",
            "-f",
            "folded",
            cut_path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(3), "-j {threads}");
        text(&out.stderr)
    };
    let one = stderr_with("1");
    assert!(
        one.contains("line 1: frame names that are not UTF-8")
            && one.contains("corrupt or truncated gzip data"),
        "{one}"
    );
    assert_eq!(stderr_with("2"), one);
    // Corrupt within the head detection reads: the corruption, not "cannot tell the format";
    // a stream cut short is no sign of a wrong format (no hint to choose another).
    let mut head_corrupt = gz.clone();
    let at = head_corrupt
        .windows(6)
        .position(|w| w == b"a;b 1\n")
        .unwrap();
    head_corrupt[at + 4] = b'x';
    for (what, bytes) in [
        ("corrupt head", head_corrupt),
        ("cut", gz[..50_000].to_vec()),
    ] {
        let path = d.path().join("x.gz");
        std::fs::write(&path, &bytes).unwrap();
        let out = run(&["tree", path.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{what}: {err}");
        assert!(
            err.contains("corrupt or truncated gzip data") && !err.contains("--from"),
            "{what}: {err}"
        );
    }
}

#[test]
fn bad_input_names_file_and_line_and_leaves_no_output() {
    let d = tmp();
    let input = write(
        d.path(),
        "bad.folded",
        b"a;b 1\na;b;c 2\nTHIS IS A BAD LINE\n",
    );
    let target = d.path().join("out.folded");
    std::fs::write(&target, "previous content").unwrap();
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("{}:3:15:", input.display())), "{err}");
    assert!(err.contains("expected a count"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "previous content"
    );
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".profconv-"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    let missing = d.path().join("new.folded");
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!missing.exists());
}

/// A transform whose result would pass its bound (inverting a deep chain of distinct calls
/// makes the square of its depth in stacks) is refused as a usage error (exit 2), as the
/// emitters' size bounds are: other transforms or options will do, the input is fine. The
/// flame graph's `-O reverse`, the same inversion, likewise.
#[test]
fn a_result_past_a_bound_is_a_usage_error() {
    let d = tmp();
    let mut trace = String::from("PVMTRACE 1\n");
    for i in 0..3000 {
        trace.push_str(&format!("C +1 f{i}\n"));
    }
    for _ in 0..3000 {
        trace.push_str("E +1\n");
    }
    let input = write(d.path(), "deep.pvmtrace", trace.as_bytes());
    let input = input.to_str().unwrap();
    let svg = d.path().join("deep.svg");
    for args in [
        vec!["tree", input, "-T", "invert"],
        vec![
            "convert",
            input,
            "-o",
            svg.to_str().unwrap(),
            "-O",
            "reverse",
        ],
    ] {
        let out = run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("too large: the inverted tree has more than"),
            "{err}"
        );
    }
    assert!(!svg.exists());
}

/// An option a format declares for reading only (or writing only) is refused where the format
/// does the other: `-O max-nodes` when writing callgrind would do nothing. The same option
/// reading callgrind applies, and the listing of known options names only what applies.
#[test]
fn an_option_for_the_other_phase_of_a_format_is_a_usage_error() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let (input, grind, svg) = (
        input.to_str().unwrap(),
        d.path().join("seed.callgrind"),
        d.path().join("seed.svg"),
    );
    let (grind, svg) = (grind.to_str().unwrap(), svg.to_str().unwrap());
    let convert = |args: &[&str]| {
        let mut all = vec!["convert"];
        all.extend_from_slice(args);
        run(&all)
    };
    let works = |args: &[&str]| {
        let out = convert(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
    };
    let refused = |args: &[&str], want: &str| {
        let out = convert(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    };
    refused(
        &[input, "-o", grind, "-O", "max-nodes=5"],
        "option 'max-nodes' applies when format 'callgrind' reads a profile; here it writes one",
    );
    assert!(!Path::new(grind).exists());
    works(&[
        input,
        "--to",
        "folded",
        "-O",
        "per-thread",
        "-O",
        "skip-bad-lines",
    ]);
    works(&[input, "-o", grind]);
    works(&[grind, "-o", svg, "-O", "max-nodes=1000"]);
    // `per-thread` writes folded stacks; the flame graph does not declare it.
    refused(
        &[input, "-o", svg, "-O", "per-thread"],
        "option 'per-thread' applies when format 'folded' writes a profile; here it reads one",
    );
    // The output's options are listed too: the user meant callgrind's, which has none; and
    // the formats not used here that have one (speedscope, flamegraph) are named.
    refused(
        &[input, "-o", grind, "-O", "max-size=5"],
        "here it reads one; formats 'speedscope', 'flamegraph' also have it, not used by this \
         command (options here: folded: skip-bad-lines, piece-size; callgrind: value)",
    );
    // The tree's column is `--value`; `-O value` is the emitters'.
    let out = run(&["tree", input, "-O", "value=samples"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("chooses the value column it shows with --value NAME"),
        "{}",
        text(&out.stderr)
    );
    // A key or value of any length is quoted in 40 bytes.
    let long = "k".repeat(100_000);
    let out = convert(&[input, "-o", svg, "-O", &long]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).len() < 1000, "{}", text(&out.stderr));
    let out = convert(&[input, "-o", svg, "-O", &format!("fontsize={long}")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).len() < 1000, "{}", text(&out.stderr));
    // An unsigned option reaches 2^64 - 1; a bound names its option.
    works(&[
        input,
        "--to",
        "folded",
        "-O",
        "max-size=18446744073709551615",
    ]);
    refused(
        &[grind, "-o", svg, "-O", "max-depth=0"],
        "option max-depth=0: expected a depth from 1 to 4294967295",
    );
    // Only the reader's options of callgrind are listed.
    refused(
        &[grind, "-o", svg, "-O", "nope"],
        "(known options: callgrind: max-depth, max-nodes, positions; flamegraph: ",
    );
    // The host's own checks of a value: a number must be finite; a flag's values are listed.
    for (opt, want) in [
        ("fontsize=nan", "takes a finite number, got 'nan'"),
        ("fontsize=1e400", "takes a finite number, got '1e400'"),
        (
            "inverted=maybe",
            "one of true, false, 1, 0, yes, no, on, off",
        ),
    ] {
        refused(&[input, "-o", svg, "-O", opt], want);
    }
}

#[test]
fn usage_errors_list_what_is_known() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "folded",
        "-O",
        "nope=1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown option 'nope'") && err.contains("skip-bad-lines"),
        "{err}"
    );
    // Read and written by one format: its options are listed once.
    assert_eq!(err.matches("folded: ").count(), 1, "{err}");
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        d.path().join("x.unknownext").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--to"));
    let out = run(&["convert", input.to_str().unwrap(), "--to", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("available: ") && err.contains("folded"),
        "{err}"
    );
    let out = run(&["tree", input.to_str().unwrap(), "--value", "ticks"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("samples"));
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        input.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "never overwrite the input");
    assert_eq!(std::fs::read_to_string(&input).unwrap(), SEED_001);
}

#[test]
fn missing_input_is_an_io_error() {
    let out = run(&["tree", "/nonexistent/profile.folded"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stderr).contains("/nonexistent/profile.folded"));
}

#[test]
fn discovery_can_be_pinned_and_refused_plugins_are_explained() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let out = run(&["--no-default-plugins", "tree", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = profconv()
        .args(["--no-default-plugins", "tree", input.to_str().unwrap()])
        .env("PROFCONV_PLUGIN_PATH", built_plugins())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let old = lib_path("profconv_testplugin_oldabi");
    let out = run(&["--plugin", old.to_str().unwrap(), "formats"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(
        s.contains("rejected") && s.contains("'ancient' 0.3.1") && s.contains("ABI 0.7"),
        "{s}"
    );
    let out = run(&[
        "--plugin",
        old.to_str().unwrap(),
        "--no-default-plugins",
        "tree",
        "--from",
        "ancient",
        input.to_str().unwrap(),
    ]);
    // A plugin named with --plugin that cannot be used stops the run (a plugin failure).
    assert_eq!(out.status.code(), Some(5));
    assert!(
        text(&out.stderr).contains("'ancient' 0.3.1"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_panicking_plugin_is_an_error_not_a_crash() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let panicky = lib_path("profconv_testplugin_panicky");
    // Sniffing runs the panicking sniffer too: detection still picks folded, and the panic is
    // reported (ABI 1.2's `sniff_checked` says PANIC where 1.0's `sniff` could only score 0).
    let out = run(&[
        "--plugin",
        panicky.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning") && err.contains("panicky") && err.contains("sniffer panicked"),
        "{err}"
    );
    let out = run(&[
        "--plugin",
        panicky.to_str().unwrap(),
        "tree",
        "--from",
        "panicky",
        input.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(5));
    let err = text(&out.stderr);
    assert!(
        err.contains("PANIC") && err.contains("index out of bounds"),
        "{err}"
    );
    // What a plugin says of itself is printed with its control characters escaped.
    let out = run(&["--plugin", panicky.to_str().unwrap(), "formats"]);
    let listed = text(&out.stdout);
    assert!(
        listed.contains("(test fixture) \\u{1b}[31m") && !listed.contains('\x1b'),
        "{listed}"
    );
}

/// A plugin can build, in safe code, a profile whose columns differ in length (the fields are
/// public). The host's view takes each table's length from one column: it read past the end of
/// the shorter one (a crash, or heap bytes drawn as counts with exit 0). The plugin's side now
/// refuses it, and every such profile is an error that says which column.
#[test]
fn a_plugin_profile_with_a_column_cut_short_is_an_error() {
    let d = tmp();
    let panicky = lib_path("profconv_testplugin_panicky");
    for (case, says) in [
        ("funcs", "func columns differ in length"),
        ("frames", "frame columns differ in length"),
        ("stacks", "stack columns differ in length"),
        ("values", "a sample value column has the wrong length"),
        ("value-types", "one value column per value type is required"),
        ("time", "sample time column has the wrong length"),
        ("threads", "sample thread column has the wrong length"),
    ] {
        let input = write(d.path(), "p.ragged", format!("{case}\n").as_bytes());
        for args in [
            vec!["tree", input.to_str().unwrap()],
            vec![
                "convert",
                input.to_str().unwrap(),
                "--to",
                "callgrind",
                "-o",
                "-",
            ],
        ] {
            let mut all = vec!["--plugin", panicky.to_str().unwrap()];
            all.extend(args);
            let out = run(&all);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(5), "{case}: {err}");
            assert!(out.stdout.is_empty(), "{case}");
            assert!(
                err.contains("parse returned an invalid profile") && err.contains(says),
                "{case}: {err}"
            );
        }
    }
    // The same profile with every column whole is read.
    let input = write(d.path(), "p.ragged", b"whole\n");
    let out = run(&[
        "--plugin",
        panicky.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "main self=0 total=3\n  g self=2 total=2\n  f self=1 total=1\n"
    );
}

/// A name that two readers claim (`.panicky`: panicky and ragged) is not taken by a weak
/// content guess of a third (folded's, for a line with a count and no `;`), and no claimant
/// is chosen at random: the error names both, as for an output name. `--from` picks.
#[test]
fn a_name_two_readers_claim_is_said() {
    let d = tmp();
    let panicky = lib_path("profconv_testplugin_panicky");
    let input = write(d.path(), "x.panicky", b"main>x 1\n");
    let out = run(&[
        "--plugin",
        panicky.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'x.panicky' could be panicky or ragged by its name")
            && err.contains("choose one with --from"),
        "{err}"
    );
    let out = run(&[
        "--plugin",
        panicky.to_str().unwrap(),
        "tree",
        "--from",
        "ragged",
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[cfg(target_os = "linux")]
/// A `--plugin` directory whose library is not named as a plugin file (as `cargo build` names
/// a crate's) is said, with how to load it; it was skipped without a word, and the run only
/// missed the format ("no plugin can read format 'panicky'").
#[test]
fn a_plugin_directory_without_a_plugin_file_is_said() {
    let d = tmp();
    let dir = d.path().join("plugins");
    std::fs::create_dir(&dir).unwrap();
    let lib = lib_path("profconv_testplugin_panicky");
    let copy = dir.join(lib.file_name().unwrap());
    std::fs::copy(&lib, &copy).unwrap();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let out = run(&[
        "--plugin",
        dir.to_str().unwrap(),
        "tree",
        "--from",
        "panicky",
        input.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let said = format!(
        "--plugin {}: no plugin file in this directory (plugin files are named libprofconv_plugin_NAME.so); libprofconv_testplugin_panicky.so is named otherwise: give it as a file, `--plugin {}`",
        dir.display(),
        copy.display()
    );
    assert!(err.contains(&format!("warning: {said}")), "{err}");
    assert!(err.contains(&format!("note: {said}")), "{err}");
    // An empty directory too, without the hint; listed by `formats`.
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&["--plugin", empty.to_str().unwrap(), "formats"]);
    assert!(
        text(&out.stdout).contains(&format!(
            "note: --plugin {}: no plugin file in this directory (plugin files are named libprofconv_plugin_NAME.so)\n",
            empty.display()
        )),
        "{}",
        text(&out.stdout)
    );
    // Nor does a directory named like a plugin file, or a broken link so named: scanning
    // finds no plugin there either. A directory named twice is said once.
    let odd = d.path().join("odd");
    std::fs::create_dir_all(odd.join("libprofconv_plugin_x.so")).unwrap();
    std::os::unix::fs::symlink("/nonexistent", odd.join("libprofconv_plugin_y.so")).unwrap();
    let out = run(&[
        "--plugin",
        odd.to_str().unwrap(),
        "--plugin",
        odd.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(
        err.matches(&format!(
            "warning: --plugin {}: no plugin file",
            odd.display()
        ))
        .count(),
        1,
        "{err}"
    );
    // A directory with a plugin file says nothing.
    let out = run(&[
        "--plugin",
        lib_path("profconv_plugin_folded")
            .parent()
            .unwrap()
            .to_str()
            .unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(
        !text(&out.stderr).contains("no plugin file"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let d = tmp();
    let input = write(d.path(), "big.folded", &many_stacks(200_000));
    for args in [
        vec!["tree", input.to_str().unwrap()],
        vec!["convert", input.to_str().unwrap(), "--to", "folded"],
    ] {
        let mut child = profconv()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.is_empty());
        // stdout is dropped here: the reader went away, like `| head -1`.
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(err.is_empty(), "{args:?}: stderr not quiet: {err}");
    }
}

/// A format that is missing because a plugin was shadowed (a user's plugin named like a
/// shipped one hides all of the shipped one's formats) says so where the format is missing,
/// not only in `profconv formats`; and a `profconv` without plugins (as `cargo install`
/// leaves it) says that no plugin writes, not "choose one with --to".
#[test]
fn missing_formats_name_shadowed_plugins_and_a_lone_binary_says_it_has_none() {
    let d = tmp();
    let extra = d.path().join("extra");
    std::fs::create_dir(&extra).unwrap();
    let folded = lib_path("profconv_plugin_folded");
    std::fs::copy(&folded, extra.join(folded.file_name().unwrap())).unwrap();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let i = input.to_str().unwrap();
    for args in [
        &["tree", i, "--from", "nosuch"][..],
        &["convert", i, "-o", "out.nosuch"],
        &["convert", i, "--to", "nosuch", "-o", "-"],
    ] {
        let out = profconv()
            .args(args)
            .env("PROFCONV_PLUGIN_PATH", &extra)
            .current_dir(d.path())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("note: plugin 'folded' at ") && err.contains("is shadowed by"),
            "{args:?}: {err}"
        );
    }
    let lone = d.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    let exe = lone.join("profconv");
    std::fs::copy(env!("CARGO_BIN_EXE_profconv"), &exe).unwrap();
    let out = Command::new(&exe)
        .args(["convert", i, "-o", "out.svg"])
        .env_remove("PROFCONV_PLUGIN_PATH")
        .env("XDG_DATA_HOME", "/nonexistent-profconv-test")
        .env("HOME", "/nonexistent-profconv-test")
        .current_dir(d.path())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no plugin that writes profiles is loaded"),
        "{err}"
    );
}

/// `formats` of a `profconv` without plugins (as `cargo install` leaves it) names the
/// directories it searched and how the plugin libraries get there: it named the places only
/// as words ("next to profconv"), and nothing said that `cargo install` leaves them out.
#[test]
fn formats_of_a_lone_binary_names_the_directories_searched_and_the_install_script() {
    let d = tmp();
    let lone = d.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    let exe = lone.join("profconv");
    std::fs::copy(env!("CARGO_BIN_EXE_profconv"), &exe).unwrap();
    let out = formats_of(&exe);
    let s = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dir = lone.canonicalize().unwrap();
    for part in [
        "no plugins loaded".to_string(),
        "user plugin directory: /nonexistent-profconv-test/profconv/plugins\n".into(),
        format!("next to profconv: {}\n", dir.display()),
        format!(
            "installed plugins: {}/../lib/profconv/plugins\n",
            dir.display()
        ),
        "`cargo install` does not install".into(),
        "scripts/install.sh".into(),
    ] {
        assert!(s.contains(&part), "{part:?} missing from: {s}");
    }
}

/// `exe formats`, with only the plugin places of `exe` itself (no `PROFCONV_PLUGIN_PATH`, no
/// user plugin directory).
fn formats_of(exe: &std::path::Path) -> std::process::Output {
    Command::new(exe)
        .arg("formats")
        .env_remove("PROFCONV_PLUGIN_PATH")
        .env("XDG_DATA_HOME", "/nonexistent-profconv-test")
        .output()
        .unwrap()
}

#[test]
fn the_install_script_gives_a_profconv_that_finds_every_plugin() {
    let target = built_plugins();
    let profile = target.file_name().unwrap().to_str().unwrap().to_string();
    let prefix = tmp();
    let status = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/install.sh"
        ))
        .arg(prefix.path())
        .args(["--profile", &profile, "--no-build"])
        .env("CARGO_TARGET_DIR", target.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let out = formats_of(&prefix.path().join("bin/profconv"));
    let s = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for plugin in [
        "folded",
        "pvm",
        "deep",
        "callgrind",
        "flamegraph",
        "firefox",
    ] {
        assert!(
            s.contains(&format!("plugin {plugin} ")),
            "{plugin} missing: {s}"
        );
    }
    assert!(s.contains("[installed plugins]"), "{s}");
    assert!(!s.contains("testplugin") && !s.contains("ancient"), "{s}");
}

/// Without CARGO_TARGET_DIR, the script installs from where cargo builds: a cargo config's
/// `build.target-dir` (here CARGO_BUILD_TARGET_DIR, its environment form) moves the build out
/// of `./target`, and the script looked there all the same (it said to build first, just after
/// building, or installed an older build left in `./target`).
#[cfg(unix)]
#[test]
fn the_install_script_installs_from_the_target_dir_of_cargo_config() {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let target = built_plugins();
    let profile = target.file_name().unwrap().to_str().unwrap().to_string();
    let d = tmp();
    // A build of its own: profconv and one plugin.
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join(&profile)).unwrap();
    let folded = format!("{DLL_PREFIX}profconv_plugin_folded{DLL_SUFFIX}");
    for file in ["profconv", folded.as_str()] {
        std::fs::copy(target.join(file), elsewhere.join(&profile).join(file)).unwrap();
    }
    let prefix = d.path().join("prefix");
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/install.sh"
        ))
        .arg(&prefix)
        .args(["--profile", &profile, "--no-build"])
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_BUILD_TARGET_DIR", &elsewhere)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let installed: Vec<String> = std::fs::read_dir(prefix.join("lib/profconv/plugins"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(installed, [folded]);
}

/// A relative PREFIX and CARGO_TARGET_DIR are the caller's (they were taken from the checkout,
/// where the script builds), and a umask of 000 leaves no directory others may write (the
/// install then loaded no plugin: discovery refuses such a directory).
#[cfg(unix)]
#[test]
fn the_install_script_takes_relative_paths_from_the_caller_and_ignores_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let target = built_plugins();
    let profile = target.file_name().unwrap().to_str().unwrap().to_string();
    let d = tmp();
    std::os::unix::fs::symlink(target.parent().unwrap(), d.path().join("tgt")).unwrap();
    let out = Command::new("bash")
        .args(["-c", "umask 000 && exec bash \"$@\"", "bash"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/install.sh"
        ))
        .args(["--prefix=my prefix", "--profile", &profile, "--no-build"])
        .env("CARGO_TARGET_DIR", "tgt")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let prefix = d.path().join("my prefix");
    for dir in ["bin", "lib/profconv", "lib/profconv/plugins"] {
        let mode = std::fs::metadata(prefix.join(dir))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755, "{dir}: {mode:o}");
    }
    let out = formats_of(&prefix.join("bin/profconv"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("plugin folded "));
    // A plugins directory others may write to, sticky or not, is refused (discovery would
    // refuse every plugin in it); one reached through a link is judged by what it links to.
    let install = |prefix: &str| {
        Command::new("bash")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../scripts/install.sh"
            ))
            .args([prefix, "--profile", &profile, "--no-build"])
            .env("CARGO_TARGET_DIR", "tgt")
            .current_dir(d.path())
            .output()
            .unwrap()
    };
    for (dir, mode) in [("sticky", 0o1777), ("open", 0o777)] {
        let plugins = d.path().join(dir).join("lib/profconv/plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::set_permissions(&plugins, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = install(dir);
        assert_eq!(out.status.code(), Some(1), "{dir}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("writable by all users"), "{dir}");
    }
    let real = d.path().join("real-plugins");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(d.path().join("linked/lib/profconv")).unwrap();
    std::os::unix::fs::symlink(&real, d.path().join("linked/lib/profconv/plugins")).unwrap();
    let out = install("linked");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A `~` the shell did not expand (after `--prefix=`) is refused, not made a directory.
    let out = install("--prefix=~/x");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!d.path().join("~").exists());
    // An unknown option is refused, not taken as the prefix.
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/install.sh"
        ))
        .args(["--perfix", "x", "--no-build"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!d.path().join("--perfix").exists() && !d.path().join("x").exists());
}

#[test]
fn diff_draws_a_differential_flamegraph_and_gives_other_formats_both_columns() {
    let d = tmp();
    let before = write(d.path(), "before.folded", b"main;a 3\nmain;b 1\n");
    let after = write(d.path(), "after.folded", b"main;b 5\nmain;c 2\n");
    let svg = d.path().join("diff.svg");
    let out = run(&[
        "diff",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("Differential"), "not a differential graph");
    let out = run(&[
        "diff",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
        "--to",
        "folded",
        "-O",
        "value=before",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "main;a 3\nmain;b 1\nmain;c 0\n");
    let out = run(&[
        "diff",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
        "--to",
        "folded",
    ]);
    assert_eq!(
        text(&out.stdout),
        "main;a 3 0\nmain;b 1 5\nmain;c 0 2\n",
        "inferno's differential folded format: `STACK BEFORE AFTER`"
    );
}

/// `diff -T min-total` measures the comparison, both columns, as `min-total` does on a
/// differential profile read back: a node small in `before` but grown in `after` stays on both
/// sides. Applied to each side alone it was merged in `before` only, and the diff showed the
/// node as new (`main;mid 0 6`) and its caller as shrunk (`main 4 0`).
#[test]
fn diff_min_total_keeps_a_node_large_on_either_side() {
    let d = tmp();
    let before = write(
        d.path(),
        "before.folded",
        b"main;big 96\nmain;mid 4\nmain;tiny 1\n",
    );
    let after = write(
        d.path(),
        "after.folded",
        b"main;big 94\nmain;mid 6\nmain;tiny 1\n",
    );
    let (b, a) = (before.to_str().unwrap(), after.to_str().unwrap());
    let out = run(&["diff", b, a, "-T", "min-total:5%", "--to", "folded"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // `tiny` is small on both sides: merged into `main` on both.
    assert_eq!(
        text(&out.stdout),
        "main 1 1\nmain;big 96 94\nmain;mid 4 6\n"
    );
    // The same as the diff written and then transformed.
    let diff = run(&["diff", b, a, "--to", "folded"]);
    let combined = write(d.path(), "diff.folded", &diff.stdout);
    let again = run(&[
        "convert",
        combined.to_str().unwrap(),
        "-T",
        "min-total:5%",
        "--to",
        "folded",
    ]);
    assert_eq!(text(&again.stdout), text(&out.stdout));
}

/// Each column keeps its unit: ticks against samples is a warning (compared as numbers); a count
/// (calls into each node, never summed into its callers) is no cost to compare and is refused.
#[test]
fn diff_keeps_each_side_s_unit_and_refuses_counts() {
    let d = tmp();
    let trace = write(
        d.path(),
        "seed.pvmtrace",
        b"PVMTRACE 1\nC 0 f\nC 10 g\nC 30 h\nE 60 h\nE 100 g\nE 160 f\n",
    );
    let folded = write(d.path(), "after.folded", b"f;g 3\n");
    let (trace, folded) = (trace.to_str().unwrap(), folded.to_str().unwrap());
    let out = run(&["diff", trace, folded, "--to", "callgrind", "-o", "-"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let grind = text(&out.stdout);
    assert!(
        grind.contains("event: before : before (ticks)")
            && grind.contains("\nevents: before after\n")
            // a count under its own name needs no long name (read back as a count)
            && !grind.contains("event: after "),
        "{grind}"
    );
    assert!(
        text(&out.stderr).contains("is in ticks and 'samples' of")
            && text(&out.stderr).contains("compared as plain numbers"),
        "{}",
        text(&out.stderr)
    );
    // The same units: no warning.
    let out = run(&["diff", folded, folded, "--to", "folded", "-o", "-"]);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        text(&out.stderr)
    );
    // A callgrind event named `calls` is a cost; the trace's `calls` a count.
    let grind = write(d.path(), "calls.callgrind", b"events: calls\nfn=f\n1 5\n");
    let out = run(&[
        "diff",
        grind.to_str().unwrap(),
        trace,
        "--value",
        "calls",
        "-o",
        d.path().join("d.svg").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!(
            "diff: 'calls' of {trace} counts events of each call node, not a cost"
        )) && text(&out.stderr).contains("choose one with --value")
            && text(&out.stderr).contains("has: ticks"),
        "{}",
        text(&out.stderr)
    );
    assert!(!d.path().join("d.svg").exists());
    // Two counts: refused the same way, whatever the output.
    for to in ["callgrind", "folded", "flamegraph"] {
        let out = run(&[
            "diff", trace, trace, "--value", "calls", "--to", to, "-o", "-",
        ]);
        assert_eq!(out.status.code(), Some(2), "{to}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("counts events of each call node, not a cost"),
            "{to}: {}",
            text(&out.stderr)
        );
    }
    // `-O value` does not choose a diff's column: `--value` does.
    let out = run(&[
        "diff",
        trace,
        trace,
        "-O",
        "value=before",
        "-o",
        d.path().join("v.svg").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("with `profconv diff`, --value NAME chooses the value type compared"),
        "{}",
        text(&out.stderr)
    );
}

/// Options that do not apply together are said so, not silently ignored.
#[test]
fn options_that_do_not_apply_together_are_warned_about() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let input = input.to_str().unwrap();
    let out = run(&[
        "convert",
        input,
        "--to",
        "folded",
        "-O",
        "flamechart",
        "-O",
        "per-thread",
        "-o",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("option per-thread does not apply with flamechart")
            && err.contains("does not keep time order"),
        "{err}"
    );
    let svg = d.path().join("chart.svg");
    let out = run(&[
        "convert",
        input,
        "-O",
        "flamechart",
        "-O",
        "sort=weight",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("option sort=weight does not apply to a flame chart"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn plugin_check_passes_real_plugins_and_fails_broken_ones() {
    let folded = lib_path("profconv_plugin_folded");
    let out = run(&["plugin-check", folded.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("PASS  handshake"));
    for (lib, why) in [
        ("profconv_testplugin_panicky", "PANIC"),
        ("profconv_testplugin_nondeterministic", "differ"),
        ("profconv_testplugin_oldabi", "ABI 0.7"),
    ] {
        let out = run(&["plugin-check", lib_path(lib).to_str().unwrap()]);
        let report = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{lib}: {report}");
        assert!(
            report.contains("FAIL") && report.contains(why),
            "{lib}: {report}"
        );
    }
    // A declared default that the format's own option check refuses.
    let out = run(&[
        "plugin-check",
        lib_path("profconv_testplugin_nondeterministic")
            .to_str()
            .unwrap(),
    ]);
    let report = text(&out.stdout);
    assert!(
        report.contains("FAIL  handshake")
            && report.contains(
                "nondeterministic: the default level=7 is refused when writing: option level=7: \
                 expected a level from 0 to 5"
            ),
        "{report}"
    );
}

/// The report goes to stdout like any output: a reader that closes it early is no failure, a
/// full disk is an I/O error (exit 4); neither is a panic (exit 101).
#[cfg(target_os = "linux")]
#[test]
fn plugin_check_report_survives_a_closed_or_full_stdout() {
    let folded = lib_path("profconv_plugin_folded");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = profconv()
        .args(["plugin-check", folded.to_str().unwrap()])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("No space left"),
        "{}",
        text(&out.stderr)
    );
    let mut child = profconv()
        .args(["plugin-check", folded.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"));
}

/// A process that aborts (a plugin out of memory: Rust's allocation-failure handler aborts)
/// runs no destructors, yet leaves no temp file: the host's SIGABRT handler removes it, and the
/// process still ends as aborted. An existing output stays as it was.
#[cfg(unix)]
#[test]
fn an_abort_while_writing_leaves_no_temp_file() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let target = write(d.path(), "out.nondeterministic", b"old\n");
    let plugin = lib_path("profconv_testplugin_nondeterministic");
    let out = run(&[
        "--plugin",
        plugin.to_str().unwrap(),
        "convert",
        input.to_str().unwrap(),
        "-O",
        "abort",
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.signal(), Some(6), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
    let mut left: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["out.nondeterministic", "seed.folded"]);
}

/// A plugin that calls `exit` in a call (a C library's error path) fails the run: exit 5 naming
/// the plugin, no temp file left, an existing output as it was. The process used to end with
/// the plugin's status, 0 for `exit(0)`: a success with no output written.
#[cfg(unix)]
#[test]
fn a_plugin_that_calls_exit_fails_the_run_and_leaves_no_temp_file() {
    for code in ["0", "3"] {
        let d = tmp();
        let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
        let target = write(d.path(), "out.nondeterministic", b"old\n");
        let plugin = lib_path("profconv_testplugin_nondeterministic");
        let out = run(&[
            "--plugin",
            plugin.to_str().unwrap(),
            "convert",
            input.to_str().unwrap(),
            "-O",
            &format!("exit={code}"),
            "-o",
            target.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "exit({code}): {err}");
        assert!(
            err.contains(
                "plugin 'nondeterministic' ended the process (it called exit) while writing \
                 format 'nondeterministic'"
            ),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["out.nondeterministic", "seed.folded"],
            "exit({code})"
        );
    }
}

/// A transform that matched nothing names the functions it may have meant: the name with the
/// annotation a flame graph hides (`do_syscall_64_[k]`, from `inferno-collapse-perf --all`),
/// or in other letter case. It said only "matched nothing", with an empty result.
#[test]
fn a_transform_that_matched_nothing_names_what_it_may_have_meant() {
    let d = tmp();
    let input = write(
        d.path(),
        "k.folded",
        b"main;do_syscall_64_[k];x 3\nmain;y 2\nMain;z 1\n",
    );
    let input = input.to_str().unwrap();
    for (t, hint) in [
        (
            "focus-func:do_syscall_64",
            " (the profile has 'do_syscall_64_[k]')",
        ),
        // `main` is there as it is: only `Y` is meant otherwise.
        ("drop:main;Y", " (the profile has 'y')"),
        ("merge-func:nothing_like_it", ""),
    ] {
        let out = run(&["tree", input, "-T", t]);
        assert!(out.status.success(), "{t}");
        assert_eq!(
            text(&out.stderr),
            format!("profconv: warning: {input}: transform {t} matched nothing{hint}\n"),
            "{t}"
        );
    }
}

/// A plugin that fails with no message is named once: the host's own text for it already says
/// who failed doing what (it used to be said twice, the second time after the file name).
#[test]
fn a_plugin_failing_without_a_message_is_named_once() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let plugin = lib_path("profconv_testplugin_nondeterministic");
    let out = run(&[
        "--plugin",
        plugin.to_str().unwrap(),
        "convert",
        input.to_str().unwrap(),
        "-O",
        "mute",
        "-o",
        "-",
        "--to",
        "nondeterministic",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert_eq!(
        err,
        "profconv: error: <stdout>: plugin 'nondeterministic' writing 'nondeterministic' failed \
         (INTERNAL) without a message\n"
    );
}

/// What a plugin says (a warning, an error) keeps each of its later lines indented, so none
/// of them can pass for a line of profconv's own.
#[test]
fn a_plugin_message_of_several_lines_cannot_pass_for_profconv_s_own() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let plugin = lib_path("profconv_testplugin_nondeterministic");
    let out = run(&[
        "--plugin",
        plugin.to_str().unwrap(),
        "convert",
        input.to_str().unwrap(),
        "-O",
        "say=first\nprofconv: error: not mine",
        "--to",
        "nondeterministic",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(
        lines[0].starts_with("profconv: warning: <stdout>: first"),
        "{err}"
    );
    assert!(
        lines[2].starts_with("profconv: error: <stdout>: first"),
        "{err}"
    );
    for l in [lines[1], lines[3]] {
        assert_eq!(l, "  profconv: error: not mine", "{err}");
    }
}

#[test]
fn output_to_devices_and_symlinks_writes_through_them() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    // A device is written in place: renaming over it would replace /dev/null with a file.
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "folded",
        "-o",
        "/dev/null",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::metadata("/dev/null").unwrap();
        assert!(
            meta.file_type().is_char_device(),
            "/dev/null is no longer a device"
        );
        let real = write(d.path(), "real.folded", b"old\n");
        let link = d.path().join("link.folded");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let out = run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            link.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), SEED_001);
        // A link to a file not made yet (relative, through a second link): the file is made
        // where the links point, and the links stay links.
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let first = d.path().join("first.folded");
        std::os::unix::fs::symlink("second.folded", &first).unwrap();
        std::os::unix::fs::symlink("sub/new.folded", d.path().join("second.folded")).unwrap();
        let out = run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            first.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(std::fs::symlink_metadata(&first).unwrap().is_symlink());
        let made = d.path().join("sub/new.folded");
        assert_eq!(std::fs::read_to_string(&made).unwrap(), SEED_001);
        // A loop of links is an error naming the output, and nothing is written.
        let (a, b) = (d.path().join("a.folded"), d.path().join("b.folded"));
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let out = run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            a.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(
            err.contains("a.folded") && err.contains("symbolic links"),
            "{err}"
        );
        assert!(std::fs::symlink_metadata(&a).unwrap().is_symlink());
    }
}

#[test]
fn totals_that_overflow_name_the_input() {
    let d = tmp();
    let input = write(
        d.path(),
        "big.folded",
        b"main;a 9223372036854775807\nmain;b 9223372036854775807\n",
    );
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        d.path().join("x.svg").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains("big.folded") && err.contains("64-bit"),
        "{err}"
    );
    assert!(!d.path().join("x.svg").exists());
}

/// `--threads` changes how fast folded stacks are read, never what comes out: a real perf
/// capture cut into 4 KiB pieces and parsed on 1, 2 and 4 threads gives byte-identical output
/// in every format and the same warnings.
#[test]
fn output_is_identical_whatever_the_thread_count() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let input = root.join("snapshots/fixtures/folded/perf/cargo.folded");
    let dir = tmp();
    // A line without a count and a stackless count, so warnings are compared too.
    let mut bytes = std::fs::read(&input).unwrap();
    bytes.extend_from_slice(b" 12\nmain;oops\n");
    let input = write(dir.path(), "cargo.folded", &bytes);
    let input = input.to_str().unwrap();
    for ext in ["svg", "callgrind", "folded", "json.gz"] {
        let mut outputs = Vec::new();
        for threads in ["1", "2", "4"] {
            let out = dir.path().join(format!("t{threads}.{ext}"));
            let r = run(&[
                "convert",
                input,
                "-o",
                out.to_str().unwrap(),
                "--threads",
                threads,
                "-O",
                "skip-bad-lines",
                "-O",
                "piece-size=4096",
            ]);
            assert!(
                r.status.success(),
                "{ext}, {threads} threads: {}",
                text(&r.stderr)
            );
            outputs.push((threads, std::fs::read(&out).unwrap(), text(&r.stderr)));
        }
        let (_, first, warnings) = &outputs[0];
        assert!(
            warnings.contains("line 4053") && warnings.contains("line 4054"),
            "{warnings}"
        );
        for (threads, bytes, w) in &outputs[1..] {
            assert!(bytes == first, "{ext}: {threads} threads differ from 1");
            assert_eq!(w, warnings, "{ext}: warnings with {threads} threads");
        }
    }
    let skip = ["-O", "skip-bad-lines", "-q"];
    let r = run(&[
        &["tree", input, "-j", "3", "-O", "piece-size=1000"][..],
        &skip,
    ]
    .concat());
    let one = run(&[&["tree", input, "-j", "1"][..], &skip].concat());
    assert!(r.status.success() && one.status.success());
    assert_eq!(text(&r.stdout), text(&one.stdout));
}

/// A file of at least a mebibyte is mapped, not read (folded and PVM release it behind them;
/// callgrind, which does not, is still streamed); its output is the one read from a pipe, on
/// one thread and on two (folded: in parallel pieces, and a differential file on one thread),
/// and an error keeps its position.
#[test]
fn a_large_file_is_mapped_and_converts_as_from_a_pipe() {
    let d = tmp();
    let (mut folded, mut differential) = (Vec::new(), Vec::new());
    let mut pvm = String::from("PVMTRACE 1\n");
    let mut callgrind = String::from("events: Ir\n");
    for i in 0..400_000u32 {
        let stack = format!("main;f{};g{}", i % 13, i % 7);
        folded.extend_from_slice(format!("{stack} {}\n", 1 + i % 5).as_bytes());
        differential.extend_from_slice(format!("{stack} {} {}\n", i % 5, i % 3).as_bytes());
        if i < 100_000 {
            pvm.push_str(&format!("C {} fn:f{}\nE {}\n", 10 * i, i % 9, 10 * i + 4));
            callgrind.push_str(&format!("fn=f{}\n{} {}\n", i % 11, 1 + i % 40, 1 + i % 3));
        }
    }
    let mut bad = folded.clone();
    bad.extend_from_slice(b"main;no-count\n");
    for (name, bytes, from) in [
        ("big.folded", folded, "folded"),
        ("differential.folded", differential, "folded"),
        ("big.pvmtrace", pvm.into_bytes(), "pvm"),
        ("big.callgrind", callgrind.into_bytes(), "callgrind"),
        ("bad.folded", bad, "folded"),
    ] {
        assert!(bytes.len() >= 1 << 20, "{name} is mapped");
        let file = write(d.path(), name, &bytes);
        let bytes = std::sync::Arc::new(bytes);
        for threads in ["1", "2"] {
            let path = file.to_str().unwrap();
            let mapped = run(&["convert", path, "--to", "folded", "-j", threads]);
            let args = [
                "convert", "-", "--from", from, "--to", "folded", "-j", threads,
            ];
            let mut child = spawn_piped(&args);
            let mut stdin = child.stdin.take().unwrap();
            let bytes = bytes.clone();
            let writer = std::thread::spawn(move || stdin.write_all(&bytes));
            let piped = child.wait_with_output().unwrap();
            writer.join().unwrap().unwrap();
            let what = format!("{name} -j {threads}");
            assert_eq!(mapped.status.code(), piped.status.code(), "{what}");
            assert_eq!(text(&mapped.stdout), text(&piped.stdout), "{what}");
            let named = text(&mapped.stderr).replace(path, "<stdin>");
            assert_eq!(named, text(&piped.stderr), "{what}");
            let ok = mapped.status.success();
            assert!(
                ok != (name == "bad.folded"),
                "{what}: {}",
                text(&mapped.stderr)
            );
        }
    }
}

/// An input no reader recognises is said as what it is when that is plain: empty (the command
/// writing a pipe failed), or JSON, a profile of another tool (a Firefox Profiler profile,
/// whose `meta.oscpu` has a `;`, was read as one long line of folded stacks and failed at a
/// blank inside one of its strings, hundreds of KiB in, "read as 'folded'").
#[test]
fn an_empty_or_json_input_is_said_as_such() {
    let d = tmp();
    let threads = r#"{"name":"GeckoMain","stringArray":["main","a b"]},"#.repeat(2000);
    let firefox = format!(
        r#"{{"meta":{{"version":24,"product":"Firefox","oscpu":"X11; Linux x86_64"}},"threads":[{threads}{{}}]}}"#
    );
    for (name, content, said) in [
        (
            "empty",
            &b""[..],
            "cannot tell the format of an empty input (no bytes)",
        ),
        (
            "profile.json",
            firefox.as_bytes(),
            "it is JSON (a Firefox Profiler",
        ),
    ] {
        let input = write(d.path(), name, content);
        let out = run(&["tree", input.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(said)
                && err.contains("choose one with --from")
                && !err.contains("read as"),
            "{err}"
        );
    }
}

/// `perf script` text (the step before folding) is said as such, with the command that folds
/// it, instead of "cannot tell the input's format".
#[test]
fn perf_script_output_says_how_to_fold_it() {
    let d = tmp();
    let script = "python3  6425 47241.517232:     500000 cpu-clock: \n\
                  \t           12cbe _dl_cache_libcmp+0xe (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)\n\
                  \t            cc17 [unknown] ([unknown])\n\
                  \n\
                  python3  6425 47241.517731:     500000 cpu-clock: \n\
                  \tffffffff815d4e66 vma_interval_tree_insert+0x36 ([kernel.kallsyms])\n\
                  \t          1019b3 __mmap+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\n";
    let input = write(d.path(), "perf.txt", script.as_bytes());
    let out = run(&["tree", input.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("looks like `perf script` output") && err.contains("inferno-collapse-perf"),
        "{err}"
    );
    // Indented lines alone (no sample line) are not taken for it.
    let indented = write(
        d.path(),
        "indented.txt",
        b"\t 12cbe f (x)\n\t 12cbf g (y)\n",
    );
    let err = text(&run(&["tree", indented.to_str().unwrap()]).stderr);
    assert!(err.contains("cannot tell the input's format"), "{err}");
}
