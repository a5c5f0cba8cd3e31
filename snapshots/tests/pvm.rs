//! PVM traces through the IR: every fixture under `fixtures/pvm/` (copied from the shared
//! fixture store with its README) is parsed by the pvm plugin's parser and checked against the
//! expected files the spec's reference reader produced:
//!
//! * `NAME.expected.txt`: `profconv tree --order first-seen --all-values` (via `render_tree`);
//! * `NAME.expected.flamechart.out`: the folded emitter with `flamechart` (one line per call);
//! * `NAME.expected.collapsed.out`: the folded emitter with `per-thread` (one merged, sorted
//!   block per kernel run), compared without the final newline;
//! * `NAME.expected.summary.txt`: the `pvm-summary` emitter;
//! * `octez-format/*.out`: the debugger's own outputs, detected, against their expected trees.
//!
//! Each fixture is also parsed streaming (small reads) and in memory, ordered and aggregated,
//! with the same tree. Snapshots (`tests/snapshots/pvm__*.snap`) record, per fixture, the
//! IR's shape, threads, metadata, warnings and tree, and the messages of malformed inputs.

use profconv_folded::{EmitOptions, emit_folded};
use profconv_ir::{CallTree, Profile, TreeOrder, TreeTextOptions, render_tree};
use profconv_plugin::{Context, Format, Input, Options, Output, PluginError};
use profconv_pvm::{ParseOptions, Pvm, PvmSummary, emit_summary, parse_pvm, sniff};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pvm")
}

fn read(rel: &str) -> Vec<u8> {
    let path = fixtures_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn read_opt(rel: &str) -> Option<String> {
    let path = fixtures_dir().join(rel);
    path.exists()
        .then(|| String::from_utf8(read(rel)).expect("expected files are UTF-8"))
}

/// Fixture names (file names relative to `fixtures/pvm/<dir>`) ending in `suffix`, sorted.
fn fixtures(dir: &str, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir().join(dir))
        .expect("fixture dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(suffix) && !n.contains(".expected."))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no {suffix} fixtures in {dir}");
    names
}

fn settings(input: Option<&Path>, description: &str) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s.set_description(description);
    if let Some(p) = input {
        s.set_input_file(p);
    }
    s
}

/// A reader that hands out at most 7 bytes per call, so every line straddles reads.
struct SmallReads<'a>(&'a [u8]);

impl std::io::Read for SmallReads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(7).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

struct Parsed {
    result: Result<Profile, PluginError>,
    messages: Vec<String>,
}

fn parse_with(bytes: &[u8], opts: ParseOptions, streaming: bool) -> Parsed {
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    let mut cx = Context::with_sink(&mut sink);
    let result = if streaming {
        let mut r = SmallReads(bytes);
        parse_pvm(&mut Input::from_reader(&mut r), &opts, &mut cx)
    } else {
        parse_pvm(&mut Input::from_slice(bytes), &opts, &mut cx)
    };
    Parsed { result, messages }
}

fn parse_ok(bytes: &[u8], opts: ParseOptions) -> (Profile, Vec<String>) {
    let p = parse_with(bytes, opts, false);
    let profile = p.result.unwrap_or_else(|e| panic!("parse failed: {e}"));
    profile
        .view()
        .validate()
        .expect("the parser's profile is valid");
    (profile, p.messages)
}

fn all_values_tree(p: &Profile) -> String {
    let tree = CallTree::build(&p.view()).expect("call tree");
    render_tree(
        &p.view(),
        &tree,
        &TreeTextOptions {
            order: TreeOrder::FirstSeen,
            all_values: true,
            ..Default::default()
        },
    )
    .expect("render_tree")
}

fn folded(p: &Profile, opts: EmitOptions<'_>) -> String {
    let mut out = Vec::new();
    emit_folded(&p.view(), &mut out, opts).expect("emit folded");
    String::from_utf8(out).expect("folded output is UTF-8")
}

fn flamechart(p: &Profile) -> String {
    folded(
        p,
        EmitOptions {
            flamechart: true,
            ..Default::default()
        },
    )
}

fn per_thread(p: &Profile) -> String {
    folded(
        p,
        EmitOptions {
            per_thread: true,
            ..Default::default()
        },
    )
}

/// The `pvm-summary` output, through the `Format` trait as the host calls it.
fn summary(p: &Profile) -> String {
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        <PvmSummary as Format>::emit(
            &p.view(),
            &mut out,
            &Options::default(),
            &mut Context::silent(),
        )
        .expect("pvm-summary");
        out.flush().expect("flush");
    }
    String::from_utf8(buf).expect("summary is UTF-8")
}

fn ordered() -> ParseOptions {
    ParseOptions::default()
}

fn aggregated() -> ParseOptions {
    ParseOptions {
        aggregate: true,
        ..Default::default()
    }
}

/// The IR's shape, metadata, threads and messages, then the tree: what a snapshot records.
fn describe(rel: &str, bytes: &[u8], p: &Profile, messages: &[String]) -> String {
    let v = p.view();
    let mut s = String::new();
    let w = &mut s;
    writeln!(w, "fixture: {rel} ({} bytes)", bytes.len()).unwrap();
    writeln!(w, "sniff: {}", sniff(bytes)).unwrap();
    writeln!(
        w,
        "ir: {} funcs, {} frames, {} stacks, {} samples, ordered: {}",
        v.n_funcs(),
        v.n_frames(),
        v.n_stacks(),
        v.n_samples(),
        v.is_ordered()
    )
    .unwrap();
    for i in 0..v.value_types.len() {
        writeln!(
            w,
            "value type {i}: {} ({}), {:?}",
            v.value_type_name(i),
            v.value_type_unit(i),
            v.value_types[i].kind
        )
        .unwrap();
    }
    for (k, val) in v.meta_key.iter().zip(&v.meta_value) {
        writeln!(w, "meta {} = {}", v.strings.get(*k), v.strings.get(*val)).unwrap();
    }
    for t in v.thread_name {
        writeln!(w, "thread: {}", v.strings.get(*t)).unwrap();
    }
    let kinds: Vec<String> = (0..v.n_funcs() as u32)
        .map(|f| {
            let r = v.func_resource[f as usize];
            let kind = if r == profconv_ir::NONE {
                "-"
            } else {
                v.strings.get(r)
            };
            format!("{} [{kind}]", v.func_name_str(f))
        })
        .collect();
    writeln!(w, "funcs: {}", kinds.join(", ")).unwrap();
    writeln!(w, "messages: {}", messages.len()).unwrap();
    for m in messages {
        writeln!(w, "  {m}").unwrap();
    }
    writeln!(w, "== tree (first-seen, all values) ==").unwrap();
    w.push_str(&all_values_tree(p));
    s
}

/// Every check on one `.pvmtrace` fixture.
fn check_trace(name: &str) {
    let stem = name.trim_end_matches(".pvmtrace");
    let bytes = read(name);
    let (p, messages) = parse_ok(&bytes, ordered());
    assert!(p.view().is_ordered());
    let tree = all_values_tree(&p);
    let expected = read_opt(&format!("{stem}.expected.txt")).expect("expected tree");
    assert_eq!(tree, expected, "{name}: tree");
    if let Some(exp) = read_opt(&format!("{stem}.expected.flamechart.out")) {
        assert_eq!(flamechart(&p), exp, "{name}: flame chart");
    }
    if let Some(exp) = read_opt(&format!("{stem}.expected.collapsed.out")) {
        assert_eq!(
            per_thread(&p).trim_end_matches('\n'),
            exp.trim_end_matches('\n'),
            "{name}: collapsed (per run)"
        );
    }
    if let Some(exp) = read_opt(&format!("{stem}.expected.summary.txt")) {
        assert_eq!(summary(&p), exp, "{name}: summary");
    }

    // Streaming with tiny reads: same tree, same messages.
    let streamed = parse_with(&bytes, ordered(), true);
    assert_eq!(streamed.messages, messages, "{name}: streaming messages");
    let sp = streamed.result.expect("streaming parse");
    assert_eq!(all_values_tree(&sp), tree, "{name}: streaming tree");

    // Aggregated: the same tree, the same per-run blocks and summary (in order of first call),
    // fewer samples, no time order.
    let (a, a_messages) = parse_ok(&bytes, aggregated());
    assert_eq!(a_messages, messages, "{name}: aggregated messages");
    assert!(!a.view().is_ordered());
    assert!(a.samples.stack.len() <= p.samples.stack.len());
    assert_eq!(all_values_tree(&a), tree, "{name}: aggregated tree");
    assert_eq!(per_thread(&a), per_thread(&p), "{name}: aggregated per-run");

    let snap = describe(name, &bytes, &p, &messages);
    let path = fixtures_dir().join(name);
    settings(
        Some(&path),
        &format!("pvm fixture {name}: the IR and its call tree"),
    )
    .bind(|| {
        insta::assert_snapshot!(format!("pvm__{stem}_tree"), snap);
    });
}

#[test]
fn every_trace_reproduces_its_expected_files() {
    let names = fixtures("", ".pvmtrace");
    assert_eq!(names.len(), 8, "{names:?}");
    for name in names {
        check_trace(&name);
    }
}

#[test]
fn every_debugger_output_reproduces_its_expected_tree() {
    for name in fixtures("octez-format", ".out") {
        let rel = format!("octez-format/{name}");
        let stem = name.trim_end_matches(".out");
        let bytes = read(&rel);
        assert!(
            sniff(&bytes) > 70,
            "{rel}: sniffed as pvm above folded's 70"
        );
        let (p, messages) = parse_ok(&bytes, ordered());
        let expected = read_opt(&format!("octez-format/{stem}.expected.txt")).unwrap();
        assert_eq!(all_values_tree(&p), expected, "{rel}: tree");
        let (a, _) = parse_ok(&bytes, aggregated());
        assert_eq!(all_values_tree(&a), expected, "{rel}: aggregated tree");
        let text = String::from_utf8(bytes.clone()).unwrap();
        if stem.ends_with("flamechart") {
            // One line per call in time order: written back exactly.
            assert_eq!(flamechart(&p), text, "{rel}: flame chart round trip");
        } else {
            // Runs guessed from the sort order: the per-run blocks come back, with the
            // newline between runs that the debugger leaves out.
            let repaired = text.replace(" 30%interpreter(", " 30\n%interpreter(");
            assert_eq!(
                per_thread(&p).trim_end(),
                repaired.trim_end(),
                "{rel}: per-run round trip"
            );
        }
        let snap = describe(&rel, &bytes, &p, &messages);
        let path = fixtures_dir().join(&rel);
        settings(
            Some(&path),
            &format!("debugger output {rel}: the IR and its call tree"),
        )
        .bind(|| {
            insta::assert_snapshot!(format!("pvm__octez_{}_tree", stem.replace('.', "_")), snap);
        });
    }
}

#[test]
fn seed_000_worked_example_f70_g60_h30_total_160() {
    let (p, messages) = parse_ok(&read("seed-example.pvmtrace"), ordered());
    assert!(messages.is_empty(), "{messages:?}");
    let tree = CallTree::build(&p.view()).unwrap();
    let view = p.view();
    let node = |name: &str| {
        (0..tree.len())
            .find(|&i| view.func_name_str(tree.func[i]) == name)
            .unwrap()
    };
    let (f, g, h) = (node("f"), node("g"), node("h"));
    assert_eq!(
        [f, g, h].map(|n| tree.self_values[0][n]),
        [70, 60, 30],
        "self ticks: f 10 + 60, g 20 + 40, h 30"
    );
    assert_eq!([f, g, h].map(|n| tree.total_values[0][n]), [160, 90, 30]);
    assert_eq!(tree.grand_total(0), 160);
    assert_eq!(flamechart(&p), "f 70\nf;g 60\nf;g;h 30\n");
    // Ordered: the five intervals of the seed, in time order.
    assert_eq!(p.samples.values[0], vec![10, 20, 30, 40, 60]);
    assert_eq!(p.samples.time.as_deref(), Some(&[0, 10, 30, 60, 100][..]));
}

#[test]
fn summary_matches_the_debugger_console_shape() {
    let (p, _) = parse_ok(&read("phases-kernel-run.pvmtrace"), ordered());
    let expected = read_opt("phases-kernel-run.expected.summary.txt").unwrap();
    assert_eq!(summary(&p), expected);
    let (a, _) = parse_ok(&read("phases-kernel-run.pvmtrace"), aggregated());
    assert_eq!(
        summary(&a),
        expected,
        "aggregated: one call per toplevel name and run"
    );
    // The real console summary's arithmetic (real/octez-docs-profile-console.txt), which the
    // emitter follows: each run's phase lines add up to its "Full execution" line.
    let real = String::from_utf8(read("real/octez-docs-profile-console.txt")).unwrap();
    let ticks_of = |rest: &str| -> Option<u64> { rest.split(" ticks").next()?.parse().ok() };
    let (mut sum, mut runs) = (0u64, 0);
    for line in real.lines() {
        if let Some(rest) = line.strip_prefix("Full execution: ") {
            assert_eq!(ticks_of(rest), Some(sum), "{line}");
            (sum, runs) = (0, runs + 1);
        } else if let Some(n) = line
            .split_once(": ")
            .filter(|(_, rest)| rest.ends_with(')'))
            .and_then(|(_, rest)| ticks_of(rest))
        {
            sum += n;
        }
    }
    assert_eq!(runs, 2);
    let summary_snap = summary(&p);
    settings(None, "pvm-summary of phases-kernel-run.pvmtrace").bind(|| {
        insta::assert_snapshot!("pvm__summary_phases_kernel_run", summary_snap);
    });
}

#[test]
fn debugger_compat_leaves_out_inconsistent_runs() {
    let compat = ParseOptions {
        compat: true,
        ..Default::default()
    };
    // trap: run 1 trapped (left out), run 2 clean.
    let (p, messages) = parse_ok(&read("trap.pvmtrace"), compat);
    assert_eq!(
        all_values_tree(&p),
        "kernel_run self=20 total=50 calls=1\n  function[3] self=30 total=30 calls=1\n"
    );
    assert_eq!(flamechart(&p), "kernel_run 20\nkernel_run;function[3] 30\n");
    assert_eq!(
        summary(&p),
        "run 2\nkernel_run: 50 ticks\nFull execution: 50 ticks\n"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("run 1 left out") && m.contains("trap")),
        "{messages:?}"
    );
    let (a, _) = parse_ok(
        &read("trap.pvmtrace"),
        ParseOptions {
            aggregate: true,
            ..compat
        },
    );
    assert_eq!(all_values_tree(&a), all_values_tree(&p));
    // truncated: the only run is left out, as the debugger never writes a partial run.
    let (t, _) = parse_ok(&read("truncated.pvmtrace"), compat);
    assert_eq!(all_values_tree(&t), "");
    assert_eq!(t.view().meta("dropped_runs"), Some("1"));
    // The first-seen order is that of the runs kept: `a`, first called in the run left out,
    // comes after `b` (found by a differential hunt against the reference reader).
    let trace = b"PVMTRACE 1\nC 0 a\nX 1\nR 2\nC 3 b\nE 4\nC 5 a\nE 6\n";
    for aggregate in [false, true] {
        let (d, _) = parse_ok(
            trace,
            ParseOptions {
                aggregate,
                ..compat
            },
        );
        assert_eq!(
            all_values_tree(&d),
            "b self=1 total=1 calls=1\na self=1 total=1 calls=1\n",
            "aggregate {aggregate}"
        );
    }
    // phases: nothing to leave out.
    let (ph, _) = parse_ok(&read("phases-kernel-run.pvmtrace"), compat);
    assert_eq!(
        all_values_tree(&ph),
        read_opt("phases-kernel-run.expected.txt").unwrap()
    );
}

/// Parses `input` in memory and streaming (which must agree); returns the result and messages.
fn check_both(input: &[u8], opts: ParseOptions) -> Parsed {
    let a = parse_with(input, opts, false);
    let b = parse_with(input, opts, true);
    assert_eq!(a.messages, b.messages);
    match (&a.result, &b.result) {
        (Ok(x), Ok(y)) => assert_eq!(all_values_tree(x), all_values_tree(y)),
        (Err(x), Err(y)) => assert_eq!(x, y),
        _ => panic!("in-memory and streaming parses disagree"),
    }
    a
}

/// One malformed input: its error or warnings, for the snapshot.
fn outcome(input: &[u8], opts: ParseOptions) -> String {
    let parsed = check_both(input, opts);
    let mut s = String::new();
    for m in &parsed.messages {
        writeln!(s, "warning: {m}").unwrap();
    }
    match parsed.result {
        Ok(p) => {
            writeln!(s, "ok").unwrap();
            s.push_str(&all_values_tree(&p));
        }
        Err(e) => {
            writeln!(s, "error: {e}").unwrap();
            let o = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| v.to_string());
            writeln!(
                s,
                "status: {}, line: {}, column: {}, byte offset: {}",
                e.status.name(),
                o(e.line),
                o(e.column),
                o(e.byte_offset)
            )
            .unwrap();
        }
    }
    s
}

fn strict() -> ParseOptions {
    ParseOptions {
        strict: true,
        ..Default::default()
    }
}

#[test]
fn malformed_inputs_name_the_line() {
    let cases: &[(&str, &[u8], ParseOptions, &str)] = &[
        (
            "unknown_record",
            b"PVMTRACE 1\nC 0 f\nQ 5 f\nE 9\n",
            ordered(),
            "line 3, column 1: unknown record `Q`",
        ),
        (
            "tick_backwards",
            b"PVMTRACE 1\nC 10 f\nC 5 g\nE 20\nE 30\n",
            ordered(),
            "line 3: tick 5 goes backwards",
        ),
        (
            "tick_backwards_strict",
            b"PVMTRACE 1\nC 10 f\nC 5 g\nE 20\nE 30\n",
            strict(),
            "line 3, column 3: tick 5 goes backwards",
        ),
        (
            // Named where the section left open began (it named the input's last line).
            "section_left_open_strict",
            b"PVMTRACE 1\nC 1 f\nSB 2 00\nSB 3 01\nSE 4 01\nE 5\nC 6 g\nE 7\n",
            strict(),
            "line 3, column 1: 1 section(s) begun (SB) and never ended (SE), the outermost here",
        ),
        (
            // A header typo is a bad header (spec B.8.1: the first meaningful line starts with
            // `PVMTRACE`), not a line of the debugger's output without a tick count.
            "header_typo",
            b"PVMTRACE1\nC 0 f\nE 1\n",
            ordered(),
            "line 1, column 1: expected the `PVMTRACE 1` header as the first line that is not \
             blank or a comment, found `PVMTRACE1`",
        ),
        (
            "end_wrong_function",
            b"PVMTRACE 1\nC 0 f\n  C 10 g\n  E 20 h\nE 30 f\n",
            ordered(),
            "line 4: end of `h` while `g` is open",
        ),
        (
            "end_wrong_function_strict",
            b"PVMTRACE 1\nC 0 f\n  C 10 g\n  E 20 h\nE 30 f\n",
            strict(),
            "line 4, column 3: end of `h` while `g` is open",
        ),
        (
            "name_defined_twice",
            b"PVMTRACE 1\nN 3 first\nN 3 second\nC 0 direct:3\nE 5\n",
            ordered(),
            "line 3: index 3 is named twice (`first`, then `second`)",
        ),
        (
            "name_defined_twice_strict",
            b"PVMTRACE 1\nN 3 first\nN 3 second\nC 0 direct:3\nE 5\n",
            strict(),
            "line 3, column 1: index 3 is named twice",
        ),
        (
            "truncated_line_no_identifier",
            b"PVMTRACE 1\nC 0 f\nC 12",
            ordered(),
            "line 3, column 5: missing identifier",
        ),
        (
            "truncated_line_no_tick",
            b"PVMTRACE 1\nC 0 f\nE",
            ordered(),
            "line 3, column 2: expected a tick",
        ),
        (
            "truncated_trace",
            b"PVMTRACE 1\nC 0 f\nC 5 g\n",
            ordered(),
            "line 3: 2 call(s) still open when the input ends",
        ),
        (
            "truncated_trace_strict",
            b"PVMTRACE 1\nC 0 f\nC 5 g\n",
            strict(),
            "line 3, column 1: 2 call(s) still open",
        ),
        (
            "run_end_with_open_calls",
            b"PVMTRACE 1\nC 0 kernel_run\nC 5 direct:1\nR 50 reboot\nC 60 kernel_run\nE 70\n",
            ordered(),
            "line 4: 2 call(s) still open at the end of the kernel run (R) at tick 50; closed there",
        ),
        (
            "bad_index",
            b"PVMTRACE 1\nC 0 direct:x1\n",
            ordered(),
            "line 2, column 5: bad function index in `direct:x1`",
        ),
        (
            "index_too_big",
            b"PVMTRACE 1\nC 0 ref:2147483648\n",
            ordered(),
            "line 2, column 5: bad table index",
        ),
        (
            "tick_overflow",
            b"PVMTRACE 1\nC 18446744073709551616 f\n",
            ordered(),
            "line 2, column 3: tick 18446744073709551616 is too large: at most 2^64-1",
        ),
        (
            "relative_tick_overflow",
            b"PVMTRACE 1\nC 18446744073709551615 f\nE +1\n",
            ordered(),
            "line 3, column 3: relative tick +1 is too large: at most +0 after",
        ),
        (
            "bad_timestamp",
            b"PVMTRACE 1\nC 0 @x f\n",
            ordered(),
            "line 2, column 5: expected a timestamp after `@`",
        ),
        (
            "partial_time",
            b"PVMTRACE 1\nC 0 @0 f\nE 10\n",
            ordered(),
            "line 3: some events have a timestamp and others not",
        ),
        (
            "time_backwards",
            b"PVMTRACE 1\nC 0 @100 f\nE 10 @50\n",
            ordered(),
            "line 3: timestamp 50 goes backwards",
        ),
        (
            "name_after_event",
            b"PVMTRACE 1\nC 0 f\nN 1 late\nE 5\n",
            ordered(),
            "line 3, column 1: a name record (N) after the first event",
        ),
        (
            "record_after_t",
            b"PVMTRACE 1\nC 0 f\nE 5\nT 9\nC 10 g\n",
            ordered(),
            "line 5, column 1: no record may follow the trace end record (T)",
        ),
        (
            "bad_version",
            b"# comment\nPVMTRACE 2\n",
            ordered(),
            "line 2, column 10: unsupported pvmtrace version `2`",
        ),
        (
            "bad_time_unit",
            b"PVMTRACE 1 time_unit=us\n",
            ordered(),
            "line 1, column 12: unsupported time_unit `us`",
        ),
        (
            "bad_hex_name",
            b"PVMTRACE 1\nC 0 fnx:7g\n",
            ordered(),
            "line 2, column 5: bad hex name",
        ),
        (
            "empty_hex_name",
            b"PVMTRACE 1\nC 0 fnx:\n",
            ordered(),
            "line 2, column 5: empty identifier `fnx:`",
        ),
        (
            "trap_nothing_open",
            b"PVMTRACE 1\nX 5 unreachable\n",
            ordered(),
            "line 2: trap at tick 5 with no open call",
        ),
        (
            "section_end_without_begin",
            b"PVMTRACE 1\nSE 5 00\n",
            ordered(),
            "line 2: section end (SE) without a section begin (SB)",
        ),
        (
            "random_bytes",
            b"\x8a\x01zq\xff\xfe;;\x07 \x00\x13\n\xc3\x28 9x\n",
            ordered(),
            "line 1, column 11: expected `<stack> <ticks>`",
        ),
        (
            "random_bytes_as_pvmtrace",
            b"PVMTRACE 1\n\x8a\x01zq\xff\xfe;;\x07 \x00\x13\n",
            ordered(),
            "line 2, column 1: unknown record",
        ),
        (
            "debugger_line_without_ticks",
            b"%interpreter(decode) 5\nkernel_run\n",
            ordered(),
            "line 2, column 11: expected `<stack> <ticks>`",
        ),
        (
            "debugger_flamechart_out_of_order",
            b"%interpreter(decode) 5\n%interpreter(link) 1\n%interpreter(init) 2\nkernel_run 3\nkernel_run;a;b 4\n",
            ordered(),
            "line 5, column 1: this line does not continue the call tree in pre-order",
        ),
        (
            "debugger_ticks_out_of_range",
            b"%interpreter(decode) 0\nkernel_run 9223372036854775808\n",
            ordered(),
            "line 2, column 12: tick count 9223372036854775808 is too large: at most 2^63-1",
        ),
    ];
    let mut all = String::new();
    for (name, input, opts, expect) in cases {
        let text = outcome(input, *opts);
        assert!(
            text.contains(expect),
            "{name}: expected `{expect}` in:\n{text}"
        );
        writeln!(all, "=== {name} (strict: {})", opts.strict).unwrap();
        writeln!(all, "input: {:?}", String::from_utf8_lossy(input)).unwrap();
        all.push_str(&text);
    }
    settings(
        None,
        "malformed PVM inputs: error or warnings, each with its line",
    )
    .bind(|| {
        insta::assert_snapshot!("pvm__malformed", all);
    });
}

/// xorshift64*: a small deterministic generator for the mutation test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes that matter to the parsers, so mutations hit interesting paths.
const ALPHABET: &[u8] = b"CEXRTNS@+:;# \t\n\r0123456789%()[]fnxdirectrefinternal\xff\x00";

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] = ALPHABET[rng.below(ALPHABET.len())];
            }
            1 => v.insert(at, ALPHABET[rng.below(ALPHABET.len())]),
            2 => {
                let end = (at + rng.below(12)).min(v.len());
                v.drain(at..end);
            }
            3 => {
                // Duplicate a line-sized slice somewhere else.
                let len = rng.below(30);
                let start = rng.below(v.len() + 1);
                let piece: Vec<u8> = v[start..(start + len).min(v.len())].to_vec();
                let to = rng.below(v.len() + 1);
                v.splice(to..to, piece);
            }
            4 => v.truncate(at),
            _ => v.insert(at, rng.next() as u8),
        }
    }
    v
}

#[test]
fn mutated_fixtures_never_panic() {
    let mut inputs: Vec<Vec<u8>> = fixtures("", ".pvmtrace").iter().map(|n| read(n)).collect();
    for n in fixtures("octez-format", ".out") {
        inputs.push(read(&format!("octez-format/{n}")));
    }
    let variants = [
        ParseOptions::default(),
        ParseOptions {
            aggregate: true,
            compat: true,
            ..Default::default()
        },
        ParseOptions {
            strict: true,
            ..Default::default()
        },
    ];
    let mut rng = Rng(0x5eed_0000_0000_0001);
    let (mut ok, mut err) = (0, 0);
    for round in 0..3000 {
        let base = &inputs[round % inputs.len()];
        let input = mutate(&mut rng, base);
        let opts = variants[round % variants.len()];
        let _ = sniff(&input);
        let parsed = parse_with(&input, opts, round % 2 == 0);
        match parsed.result {
            Ok(p) => {
                ok += 1;
                p.view().validate().expect("a valid profile");
                // Every consumer of the IR copes with what the parser built.
                let _ = all_values_tree(&p);
                let _ = flamechart(&p);
                let _ = per_thread(&p);
                let mut out = Vec::new();
                emit_summary(
                    &p.view(),
                    &mut out,
                    None,
                    &mut Context::with_sink(&mut |_, _| {}),
                )
                .expect("summary");
            }
            Err(e) => {
                err += 1;
                assert!(
                    e.line.is_some()
                        || e.message.contains("empty input")
                        || e.byte_offset.is_some(),
                    "an error without a place: {e}"
                );
            }
        }
    }
    assert!(ok > 300 && err > 300, "ok {ok}, err {err}");
}

#[test]
fn sniffing_tells_pvm_from_folded() {
    for name in fixtures("", ".pvmtrace") {
        assert_eq!(sniff(&read(&name)), 95, "{name}");
        assert_eq!(
            <profconv_folded::Folded as Format>::sniff(&read(&name)),
            0,
            "{name}"
        );
    }
    // The debugger's outputs beat folded's 70, even glued.
    assert_eq!(sniff(&read("octez-format/phases.collapsed-glued.out")), 85);
    assert_eq!(sniff(&read("octez-format/recursion.flamechart.out")), 75);
    // Folded stacks that do not look like the PVM stay folded.
    assert_eq!(sniff(b"main;parse;read 42\nmain;emit 3\n"), 0);
    assert_eq!(sniff(b"kernel_run;f 3\nmain;g 1\n"), 0);
    assert_eq!(sniff(b"\x00\x01"), 0);
    assert_eq!(<Pvm as Format>::sniff(b"# c\n\nPVMTRACE 1\n"), 95);
}
