//! Folded stacks through the IR: every fixture under `fixtures/folded/` is parsed by the folded
//! plugin's parser, turned into a call tree and rendered as text (snapshotted); small fixtures
//! also snapshot the folded emitter's output. For every fixture the test asserts:
//!
//! * the grand total equals the sum of the counts in the file, computed here independently
//!   (for a differential file, `STACK BEFORE AFTER`, each column's);
//! * parse → emit → parse → emit is byte-identical, and the re-parsed tree equals the original;
//! * the streaming parser (`Input::from_reader`) and the in-memory one agree, and so does the
//!   host's path (`Format::parse` with `-O skip-bad-lines`).
//!
//! Fixtures with bad lines are parsed with skip-bad-lines (their warnings are in the snapshot);
//! their error without it is snapshotted by the `error_*` tests.
//!
//! Snapshot files are `tests/snapshots/folded__<fixture>_{tree,emit}.snap`.

use profconv_folded::{Folded, parse_folded};
use profconv_ir::{CallTree, Profile, TreeOrder, TreeTextOptions, format_fixed, render_tree};
use profconv_plugin::{Context, Format, Input, Options, Output, PluginError};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Trees with more call nodes than this are snapshotted as a summary plus their first lines.
const MAX_TREE_LINES: usize = 3000;
/// Lines of a summarised tree kept in its snapshot (in total order).
const SUMMARY_TREE_LINES: usize = 200;
/// Children listed per root in a summarised tree.
const SUMMARY_CHILDREN: usize = 10;
/// Fixtures up to this size also snapshot their folded emit output.
const MAX_EMIT_SNAPSHOT_BYTES: usize = 16 * 1024;
/// Fixed-point scale of the independent count sum (the parser keeps at most 9 decimals).
const CHECK_DECIMALS: u32 = 9;

/// The project's fixture directory (`snapshots/fixtures/`).
fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn read_fixture(rel: &str) -> Vec<u8> {
    let path = fixtures_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Snapshot settings: file names `<name>.snap` (the names already start with `folded__`), the
/// fixture recorded as input file, and a description for reviewers.
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

/// A parse result with the messages the parser logged.
struct Parsed {
    result: Result<Profile, PluginError>,
    messages: Vec<String>,
}

fn level_name(level: u32) -> &'static str {
    match level {
        profconv_plugin::abi::log_level::WARN => "warn",
        profconv_plugin::abi::log_level::INFO => "info",
        _ => "log",
    }
}

/// Parses `bytes` from memory (`streaming == false`) or through a `Read` in small pieces.
fn parse(bytes: &[u8], skip_bad_lines: bool, streaming: bool) -> Parsed {
    let mut messages = Vec::new();
    let mut sink = |level: u32, m: &str| messages.push(format!("[{}] {m}", level_name(level)));
    let mut cx = Context::with_sink(&mut sink);
    let result = if streaming {
        let mut reader = SmallReads(bytes);
        parse_folded(
            &mut Input::from_reader(&mut reader),
            skip_bad_lines,
            &mut cx,
        )
    } else {
        parse_folded(&mut Input::from_slice(bytes), skip_bad_lines, &mut cx)
    };
    Parsed { result, messages }
}

/// A reader that hands out at most 4093 bytes per call, so lines straddle reads.
struct SmallReads<'a>(&'a [u8]);

impl std::io::Read for SmallReads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(4093).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Emits `profile` as folded stacks through the `Format` trait, as the host would.
fn emit(profile: &Profile) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        <Folded as Format>::emit(
            &profile.view(),
            &mut out,
            &Options::default(),
            &mut Context::silent(),
        )
        .expect("emit");
        out.flush().expect("flush");
    }
    buf
}

/// The tree with every value column (a differential file has two).
fn tree_text(profile: &Profile, tree: &CallTree, order: TreeOrder) -> String {
    render_tree(
        &profile.view(),
        tree,
        &TreeTextOptions {
            order,
            all_values: true,
            ..Default::default()
        },
    )
    .expect("render_tree")
}

/// The counts of a folded file, computed without the parser: for each non-blank line that is
/// not a `#` comment (inferno's convention; austin writes metadata so), the last
/// whitespace-separated token parsed as a decimal (`DIGITS[.DIGITS]`); in a differential file
/// (`STACK BEFORE AFTER`), the last token is the after count and the one before it the before
/// count.
struct CountSum {
    /// Sum scaled by 10^CHECK_DECIMALS (of the after counts in a differential file).
    scaled: i128,
    /// Sum of the before counts of a differential file, scaled by 10^CHECK_DECIMALS.
    before: i128,
    /// Lines whose last token is a count (and that have a stack before it).
    counted: usize,
    /// Non-blank lines without such a count.
    bad: usize,
}

fn independent_sum(bytes: &[u8], differential: bool) -> CountSum {
    let mut sum = CountSum {
        scaled: 0,
        before: 0,
        counted: 0,
        bad: 0,
    };
    // Counts that end a line; a stack is something before them.
    let counts = if differential { 2 } else { 1 };
    for line in bytes.split(|&c| c == b'\n') {
        if line.first() == Some(&b'#') {
            continue;
        }
        let tokens: Vec<&[u8]> = line
            .split(|c| c.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
            .collect();
        if tokens.is_empty() {
            continue;
        }
        let values: Vec<Option<i128>> = tokens
            .iter()
            .rev()
            .take(counts)
            .map(|t| decimal(t))
            .collect();
        if tokens.len() <= counts && values.iter().all(Option::is_some) {
            continue; // counts without a stack: the parser skips them with a warning
        }
        match (tokens.len() > counts)
            .then(|| values.iter().copied().collect::<Option<Vec<i128>>>())
            .flatten()
        {
            Some(v) => {
                sum.scaled += v[0];
                sum.before += v.get(1).copied().unwrap_or(0);
                sum.counted += 1;
            }
            None => sum.bad += 1,
        }
    }
    sum
}

/// `DIGITS[.DIGITS]` scaled by 10^CHECK_DECIMALS, or `None`.
fn decimal(token: &[u8]) -> Option<i128> {
    let s = std::str::from_utf8(token).ok()?;
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() || !int.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    assert!(
        frac.len() <= CHECK_DECIMALS as usize,
        "fixture count {s} has more decimals than this check handles"
    );
    let mut v: i128 = int.parse().ok()?;
    for k in 0..CHECK_DECIMALS as usize {
        v = v * 10 + frac.as_bytes().get(k).map_or(0, |d| (d - b'0') as i128);
    }
    Some(v)
}

/// Runs every check on one fixture and snapshots its tree (and, when small, its emit output).
fn check_fixture(stem: &str, rel: &str, skip_bad_lines: bool) {
    let path = fixtures_dir().join(rel);
    let bytes = read_fixture(rel);
    let parsed = parse(&bytes, skip_bad_lines, false);
    let profile = match parsed.result {
        Ok(p) => p,
        Err(e) => panic!("{rel}: {e}"),
    };
    profile
        .view()
        .validate()
        .expect("the parser's profile is valid");
    let tree = CallTree::build(&profile.view()).expect("call tree");

    // The streaming parser agrees with the in-memory one (tree and messages).
    let streamed = parse(&bytes, skip_bad_lines, true);
    let streamed_profile = streamed.result.expect("streaming parse");
    let streamed_tree = CallTree::build(&streamed_profile.view()).expect("call tree");
    assert_eq!(
        tree_text(&profile, &tree, TreeOrder::FirstSeen),
        tree_text(&streamed_profile, &streamed_tree, TreeOrder::FirstSeen),
        "{rel}: streaming and in-memory parses differ"
    );
    assert_eq!(parsed.messages, streamed.messages, "{rel}: messages differ");

    // The host's path, `Format::parse` with `-O skip-bad-lines`, gives the same profile.
    let options = if skip_bad_lines {
        Options::new(vec![("skip-bad-lines".to_string(), None)])
    } else {
        Options::default()
    };
    let via_trait = <Folded as Format>::parse(
        &mut Input::from_slice(&bytes),
        &options,
        &mut Context::silent(),
    )
    .expect("Format::parse");
    let via_trait_tree = CallTree::build(&via_trait.view()).expect("call tree");
    assert_eq!(
        tree_text(&profile, &tree, TreeOrder::FirstSeen),
        tree_text(&via_trait, &via_trait_tree, TreeOrder::FirstSeen),
        "{rel}: Format::parse and parse_folded differ"
    );

    // The grand total is the sum of the file's counts (each column's in a differential file).
    let differential = profile.view().meta("diff").is_some();
    let sum = independent_sum(&bytes, differential);
    let decimals = profile.value_types.first().map_or(0, |v| v.decimals);
    assert!(decimals <= CHECK_DECIMALS);
    let total = tree.grand_total(0);
    let columns = if differential {
        vec![(0, sum.before), (1, sum.scaled)]
    } else {
        vec![(0, sum.scaled)]
    };
    for (col, expected) in columns {
        let d = profile.value_types[col].decimals;
        let t = tree.grand_total(col);
        assert_eq!(
            t as i128 * 10i128.pow(CHECK_DECIMALS - d),
            expected,
            "{rel}: grand total {} of column {col} differs from the sum of the file's counts",
            format_fixed(t, d)
        );
    }
    assert_eq!(
        profile.samples.values.first().map_or(0, |c| c.len()),
        profile.samples.stack.len()
    );
    if !skip_bad_lines {
        assert_eq!(sum.bad, 0, "{rel}: bad lines parsed without skip-bad-lines");
    }

    // parse → emit → parse → emit is stable, and the re-parsed tree is the same tree.
    let emitted = emit(&profile);
    let reparsed = parse(&emitted, false, false);
    // Re-reading our own output warns of nothing (a differential file's is differential too).
    assert!(reparsed.messages.is_empty(), "{:?}", reparsed.messages);
    let reparsed = reparsed.result.expect("re-parse of emitted folded");
    let emitted_again = emit(&reparsed);
    assert!(
        emitted == emitted_again,
        "{rel}: parse → emit → parse → emit is not byte-identical"
    );
    let retree = CallTree::build(&reparsed.view()).expect("call tree");
    assert_eq!(
        tree_text(&profile, &tree, TreeOrder::Name),
        tree_text(&reparsed, &retree, TreeOrder::Name),
        "{rel}: the re-parsed emit output gives another tree"
    );

    // The snapshot: a header, the parser's messages, then the tree (or its beginning).
    let view = profile.view();
    let mut text = String::new();
    let w = &mut text;
    writeln!(w, "fixture: {rel}").unwrap();
    writeln!(w, "skip-bad-lines: {skip_bad_lines}").unwrap();
    writeln!(
        w,
        "input: {} bytes, {} lines with a count, {} bad lines",
        bytes.len(),
        sum.counted,
        sum.bad
    )
    .unwrap();
    writeln!(
        w,
        "ir: {} funcs, {} frames, {} stacks, {} samples (distinct stacks with a count), {} call nodes",
        view.n_funcs(),
        view.n_frames(),
        view.n_stacks(),
        view.n_samples(),
        tree.len()
    )
    .unwrap();
    for i in 0..view.value_types.len() {
        let vt = &view.value_types[i];
        writeln!(
            w,
            "value type {i}: {} ({}), {:?}, {} decimals",
            view.value_type_name(i),
            view.value_type_unit(i),
            vt.kind,
            vt.decimals
        )
        .unwrap();
    }
    if differential {
        let after = tree.grand_total(1);
        let d = view.value_types[1].decimals;
        writeln!(
            w,
            "grand total: before {}, after {}",
            format_fixed(total, decimals),
            format_fixed(after, d)
        )
        .unwrap();
    } else {
        writeln!(w, "grand total: {}", format_fixed(total, decimals)).unwrap();
    }
    writeln!(
        w,
        "max depth: {}",
        tree.depth.iter().max().map_or(0, |d| d + 1)
    )
    .unwrap();
    writeln!(w, "messages: {}", parsed.messages.len()).unwrap();
    for m in &parsed.messages {
        writeln!(w, "  {m}").unwrap();
    }
    if tree.len() > MAX_TREE_LINES {
        writeln!(w, "== roots and their heaviest children, total order ==").unwrap();
        for root in by_total(&profile, &tree, tree.roots.iter().copied()) {
            writeln!(w, "{}", node_line(&profile, &tree, root)).unwrap();
            let children = by_total(&profile, &tree, tree.children(root));
            for &child in children.iter().take(SUMMARY_CHILDREN) {
                writeln!(w, "  {}", node_line(&profile, &tree, child)).unwrap();
            }
            if children.len() > SUMMARY_CHILDREN {
                let more = children.len() - SUMMARY_CHILDREN;
                writeln!(w, "  ... {more} more children").unwrap();
            }
        }
        let full = tree_text(&profile, &tree, TreeOrder::Total);
        writeln!(
            w,
            "== tree: first {SUMMARY_TREE_LINES} of {} lines, total order ==",
            tree.len()
        )
        .unwrap();
        for line in full.lines().take(SUMMARY_TREE_LINES) {
            writeln!(w, "{line}").unwrap();
        }
    } else {
        writeln!(w, "== tree: first-seen order ==").unwrap();
        w.push_str(&tree_text(&profile, &tree, TreeOrder::FirstSeen));
    }
    let description = format!("folded fixture {rel} through the IR: summary and call tree");
    settings(Some(&path), &description).bind(|| {
        insta::assert_snapshot!(format!("folded__{stem}_tree"), text);
    });

    if bytes.len() <= MAX_EMIT_SNAPSHOT_BYTES {
        let emitted = String::from_utf8(emitted).expect("emit output is UTF-8");
        let description = format!("folded fixture {rel}: parse, then emit as folded");
        settings(Some(&path), &description).bind(|| {
            insta::assert_snapshot!(format!("folded__{stem}_emit"), emitted);
        });
    }
}

/// Call nodes by descending total, ties by name (the order of `TreeOrder::Total`).
fn by_total(profile: &Profile, tree: &CallTree, nodes: impl Iterator<Item = u32>) -> Vec<u32> {
    let view = profile.view();
    let mut nodes: Vec<u32> = nodes.collect();
    nodes.sort_by(|&a, &b| {
        let (ta, tb) = (
            tree.total_values[0][a as usize],
            tree.total_values[0][b as usize],
        );
        tb.cmp(&ta).then_with(|| {
            view.func_name_str(tree.func[a as usize])
                .cmp(view.func_name_str(tree.func[b as usize]))
        })
    });
    nodes
}

/// `NAME self=S total=T` of one node, as `render_tree` writes it.
fn node_line(profile: &Profile, tree: &CallTree, node: u32) -> String {
    let view = profile.view();
    let d = view.value_types[0].decimals;
    let i = node as usize;
    format!(
        "{} self={} total={}",
        view.func_name_str(tree.func[i]),
        format_fixed(tree.self_values[0][i], d),
        format_fixed(tree.total_values[0][i], d)
    )
}

/// Snapshots the error of a parse that must fail (in memory and streaming alike).
fn check_error(stem: &str, input: &[u8], input_file: Option<&Path>, what: &str) {
    let parsed = parse(input, false, false);
    let Err(e) = parsed.result else {
        panic!("{stem}: parse unexpectedly succeeded");
    };
    let streamed = parse(input, false, true);
    assert_eq!(
        streamed.result.as_ref().err(),
        Some(&e),
        "{stem}: streaming error differs"
    );
    let mut text = String::new();
    let w = &mut text;
    if input_file.is_none() {
        writeln!(w, "input: {:?}", String::from_utf8_lossy(input)).unwrap();
    }
    writeln!(w, "error: {e}").unwrap();
    writeln!(w, "status: {}", e.status.name()).unwrap();
    let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    writeln!(w, "line: {}", opt(e.line)).unwrap();
    writeln!(w, "column: {}", opt(e.column)).unwrap();
    writeln!(w, "byte offset: {}", opt(e.byte_offset)).unwrap();
    writeln!(w, "messages: {}", parsed.messages.len()).unwrap();
    for m in &parsed.messages {
        writeln!(w, "  {m}").unwrap();
    }
    settings(input_file, what).bind(|| {
        insta::assert_snapshot!(format!("folded__{stem}"), text);
    });
}

macro_rules! fixture_tests {
    ($($stem:ident: $path:literal $(, skip = $skip:literal)?;)*) => {
        $(
            #[test]
            fn $stem() {
                check_fixture(stringify!($stem), $path, false $(|| $skip)?);
            }
        )*
    };
}

fixture_tests! {
    // Own captures (perf + inferno-collapse-perf, py-spy).
    perf_gzip: "folded/perf/gzip.folded";
    // py-spy writes a sample with no Python frame as a line with an empty stack (` 3`): it is
    // skipped with a warning.
    perf_pyspy: "folded/perf/pyspy.folded";
    perf_py: "folded/perf/py.folded";
    perf_pyspy_native_threads: "folded/perf/pyspy-native-threads.folded";
    perf_cargo: "folded/perf/cargo.folded";
    // inferno's flamegraph inputs.
    inferno_bad_lines: "folded/inferno/flamegraph/bad-lines/bad-lines.txt", skip = true;
    inferno_empty: "folded/inferno/flamegraph/empty/empty.txt";
    inferno_fractional: "folded/inferno/flamegraph/fractional-samples/fractional.txt";
    inferno_no_fractionals: "folded/inferno/flamegraph/fractional-samples/no-fractionals.txt";
    inferno_zero_fractionals: "folded/inferno/flamegraph/fractional-samples/zero-fractionals.txt";
    inferno_tricky_stack: "folded/inferno/flamegraph/fractional-samples/tricky-stack.txt";
    inferno_with_space: "folded/inferno/flamegraph/fractional-samples/with-space.txt";
    // austin writes `# key: value` metadata lines: comments, not stacks.
    inferno_austin: "folded/inferno/flamegraph/austin/flames.txt";
    inferno_grey_frames: "folded/inferno/flamegraph/grey-frames/grey-frames.txt";
    inferno_narrow_blocks: "folded/inferno/flamegraph/narrow-blocks/narrow-blocks.txt";
    inferno_differential: "folded/inferno/flamegraph/differential/perf-cycles-instructions-01-collapsed-all-diff.txt";
    // inferno's collapser outputs.
    inferno_ghcprof_utf8: "folded/inferno/collapse-ghcprof/results/utf8.txt";
    inferno_ghcprof_utf8_bytes: "folded/inferno/collapse-ghcprof/results/utf8_bytes.txt";
    inferno_perf_single_line_stacks: "folded/inferno/collapse-perf/results/single-line-stacks-collapsed.txt";
    inferno_perf_go_stacks: "folded/inferno/collapse-perf/results/go-stacks-collapsed.txt";
    inferno_perf_java_inline: "folded/inferno/collapse-perf/results/java-inline-collapsed.txt";
    inferno_perf_cpp_std_function: "folded/inferno/collapse-perf/results/cpp-stacks-std-function-collapsed.txt";
    inferno_perf_no_events: "folded/inferno/collapse-perf/results/no-events-collapsed.txt";
    inferno_dtrace_rust_names: "folded/inferno/collapse-dtrace/results/rust-names.txt";
    inferno_dtrace_hex_addresses: "folded/inferno/collapse-dtrace/results/hex-addresses.txt";
    inferno_recursive_basic: "folded/inferno/collapse-recursive/results/basic-collapsed.txt";
    inferno_xctrace_basic: "folded/inferno/collapse-xctrace/results/basic.folded";
    inferno_sample_default: "folded/inferno/collapse-sample/results/sample-default.txt";
    inferno_diff_bad_before: "folded/inferno/diff-folded/bad_before.txt", skip = true;
    // Brendan Gregg's FlameGraph test inputs.
    flamegraph_pl_perf_js: "folded/flamegraph-pl/test/results/perf-js-stacks-01-collapsed-all.txt";
    flamegraph_pl_perf_cycles: "folded/flamegraph-pl/test/results/perf-cycles-instructions-01-collapsed-all.txt";
}

/// Seed 001's example: running and self times in first-seen order.
#[test]
fn seed_001() {
    let input = b"A;B;C;D;E 1\nA;B;C;F;G 1\nA;B;H;F 1\n";
    let parsed = parse(input, false, false);
    assert!(parsed.messages.is_empty());
    let profile = parsed.result.expect("parse");
    let tree = CallTree::build(&profile.view()).expect("call tree");
    assert_eq!(tree.grand_total(0), 3);
    let text = tree_text(&profile, &tree, TreeOrder::FirstSeen);
    insta::assert_snapshot!(text, @r"
    A self=0 total=3
      B self=0 total=3
        C self=0 total=2
          D self=0 total=1
            E self=1 total=1
          F self=0 total=1
            G self=1 total=1
        H self=0 total=1
          F self=1 total=1
    ");
}

/// Warnings of an input that parses: lossy UTF-8, truncated decimals, many skipped lines.
#[test]
fn inline_warnings() {
    let input: &[u8] =
        b"ok;\xff\xfename 1\r\nok;\xff\xfename;x 2\nok;\xff\xfename;y;\xc3 3\nok;\xff\xfe 4\n\
        bad1\nbad2 x\nbad3 -1\nbad4 1e3\nbad5 +5\nbad6 0x10\n\
        frac 0.1234567891239\n";
    let parsed = parse(input, true, false);
    let streamed = parse(input, true, true);
    assert_eq!(parsed.messages, streamed.messages);
    let profile = parsed.result.expect("parse");
    let tree = CallTree::build(&profile.view()).expect("call tree");
    let mut text = String::new();
    writeln!(text, "input: {:?}", String::from_utf8_lossy(input)).unwrap();
    writeln!(text, "messages: {}", parsed.messages.len()).unwrap();
    for m in &parsed.messages {
        writeln!(text, "  {m}").unwrap();
    }
    writeln!(text, "== tree: first-seen order ==").unwrap();
    text.push_str(&tree_text(&profile, &tree, TreeOrder::FirstSeen));
    settings(
        None,
        "skip-bad-lines warnings, lossy names, truncated decimals",
    )
    .bind(|| {
        insta::assert_snapshot!("folded__inline_warnings", text);
    });
}

#[test]
fn error_bad_lines_without_skip() {
    let rel = "folded/inferno/flamegraph/bad-lines/bad-lines.txt";
    check_error(
        "error_inferno_bad_lines",
        &read_fixture(rel),
        Some(&fixtures_dir().join(rel)),
        "bad-lines.txt parsed without skip-bad-lines",
    );
}

#[test]
fn error_diff_bad_before_without_skip() {
    let rel = "folded/inferno/diff-folded/bad_before.txt";
    check_error(
        "error_inferno_diff_bad_before",
        &read_fixture(rel),
        Some(&fixtures_dir().join(rel)),
        "a line without any count, parsed without skip-bad-lines",
    );
}

#[test]
fn error_no_count() {
    check_error(
        "error_no_count",
        b"a;b 1\na;b;c\n",
        None,
        "a line without a count",
    );
}

#[test]
fn error_count_not_a_number() {
    check_error(
        "error_count_not_a_number",
        b"a;b 1\nTHIS IS A BAD FRACTIONAL LINE 12V.43\n",
        None,
        "a last token that is not a count",
    );
}

#[test]
fn error_negative_count() {
    check_error(
        "error_negative_count",
        b"a;b 1\r\na;b -1\r\n",
        None,
        "a negative count",
    );
}

#[test]
fn error_count_overflow() {
    check_error(
        "error_count_overflow",
        b"a 1\nb;c 99999999999999999999\n",
        None,
        "a count that does not fit in 64 bits",
    );
}

#[test]
fn error_sum_overflow() {
    check_error(
        "error_sum_overflow",
        b"a 9223372036854775807\nb 1\na 1\n",
        None,
        "two counts of one stack whose sum does not fit in 64 bits",
    );
}

#[test]
fn error_decimal_overflow() {
    check_error(
        "error_decimal_overflow",
        b"a 10000000000\nb 0.000000001\n",
        None,
        "a count that no longer fits once rescaled to 9 decimals",
    );
}

#[test]
fn error_single_count_in_a_differential_file() {
    check_error(
        "error_single_count_in_differential",
        b"main;a 3 5\nmain;b 1 0\nmain;c 2\n",
        None,
        "a line with one count in a file whose first data line has two (inferno's differential format)",
    );
}

#[test]
fn count_without_stack_is_skipped_with_a_warning() {
    let parsed = parse(b"a 1\n   5\n", false, false);
    assert_eq!(parsed.result.expect("parses").samples.stack.len(), 1);
    assert_eq!(
        parsed.messages,
        vec!["[warn] line 2: a count without a stack was skipped".to_string()]
    );
}
