//! Tezos smart-rollup WASM PVM profiles: the `PVMTRACE 1` event format and the files the Octez
//! WASM debugger's `profile` command writes (see `docs/formats/pvm.md` and the spec
//! `shared/formats/pvm-trace.md`).
//!
//! * `pvm` (parse, sniff): a pvmtrace (name table, call/end events with absolute or relative
//!   ticks and optional timestamps, traps, run ends, trace end, sections) is folded into the IR
//!   as it streams, with seed 000's algorithm (`TraceBuilder`); the debugger's own output (one
//!   line per call in time order, or `--collapsed`, glued runs included) is detected and read
//!   too. Value columns: `ticks`, `calls`, `time_ns` (when the trace has time), `unfinished`,
//!   `trapped` (when some call is); one IR thread per kernel run.
//! * `pvm-summary` (emit): the debugger's per-run console summary.
//!
//! A UTF-8 byte-order mark at the start of the input is skipped, by the parser and the sniffer
//! (its 3 bytes still count in byte offsets and line 1's columns); UTF-16 input is an error.
//! Text quoted from the input in messages is escaped (`\0`, `\u{feff}`, `\xNN`).

mod lines;
mod model;
mod octez;
mod summary;
mod trace;

use memchr::memchr;
use profconv_plugin::ir::{Profile, ProfileRef};
use profconv_plugin::{Context, Format, Input, OptionDesc, Options, Output, PluginError};

pub use octez::Variant as DebuggerVariant;
pub use summary::emit_summary;

/// What the input is, when not detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputVariant {
    /// `PVMTRACE 1` events.
    Pvmtrace,
    /// One of the debugger's outputs.
    Debugger(DebuggerVariant),
}

/// Parser options (`-O` keys of the `pvm` format).
#[derive(Clone, Copy, Debug, Default)]
pub struct ParseOptions {
    /// `aggregate`: sum per stack (memory bounded by distinct stacks); no time order.
    pub aggregate: bool,
    /// `debugger-compat`: leave out the runs the debugger reports as inconsistent.
    pub compat: bool,
    /// `strict`: the spec's warnings about the event stream are errors.
    pub strict: bool,
    /// `variant`: the input's variant; `None` detects it.
    pub variant: Option<InputVariant>,
}

impl ParseOptions {
    /// Reads the `-O` options.
    pub fn from_options(o: &Options) -> Result<Self, PluginError> {
        let variant = match o.get("variant").unwrap_or("auto") {
            "auto" | "" => None,
            "pvmtrace" => Some(InputVariant::Pvmtrace),
            "flamechart" => Some(InputVariant::Debugger(DebuggerVariant::Flamechart)),
            "collapsed" => Some(InputVariant::Debugger(DebuggerVariant::Collapsed)),
            "folded" => Some(InputVariant::Debugger(DebuggerVariant::Folded)),
            other => {
                return Err(PluginError::bad_option(format!(
                    "option variant={}: expected `auto`, `pvmtrace`, `flamechart`, `collapsed` or \
                     `folded`",
                    profconv_plugin::quote_input(other.as_bytes(), 40)
                )));
            }
        };
        Ok(ParseOptions {
            aggregate: o.flag("aggregate"),
            compat: o.flag("debugger-compat"),
            strict: o.flag("strict"),
            variant,
        })
    }
}

/// Bytes of a stream looked at, at most, to find the first meaningful line; and the longest
/// line looked through for its end (a mapped input is given whole: a large file without
/// newlines is not read to its end, while comment lines before the header are skipped however
/// many they are).
const FIRST_LINE_LIMIT: usize = 1 << 20;

/// The first line that is neither blank nor a comment, if `head` holds it completely (or the
/// input ends). `Err(())` when more input is needed. A line longer than [`FIRST_LINE_LIMIT`]
/// is judged by its start.
fn first_meaningful(head: &[u8], eof: bool) -> Result<Option<&[u8]>, ()> {
    let mut rest = head;
    loop {
        let look = &rest[..rest.len().min(FIRST_LINE_LIMIT)];
        let (line, next, complete) = match memchr(b'\n', look) {
            Some(i) => (&rest[..i], &rest[i + 1..], true),
            // Too long to look through: what it starts with says enough.
            None if look.len() < rest.len() => (look, &rest[rest.len()..], true),
            None => (rest, &rest[rest.len()..], eof),
        };
        let t = line.trim_ascii();
        if !t.is_empty() && t[0] != b'#' {
            // `PVMTRACE` is recognised from the line's start, complete or not.
            return if complete || t.len() >= 8 {
                Ok(Some(t))
            } else {
                Err(())
            };
        }
        if !complete {
            return if eof { Ok(None) } else { Err(()) };
        }
        if next.is_empty() {
            return if eof { Ok(None) } else { Err(()) };
        }
        rest = next;
    }
}

/// A first meaningful line that starts with `PVMTRACE` (spec B.8.1), whatever follows: a
/// header typo (`PVMTRACE1`) is then a bad header, not a line of the debugger's output.
fn starts_pvmtrace(line: &[u8]) -> bool {
    line.starts_with(b"PVMTRACE")
}

/// Reads a PVM trace or a debugger output file (detected unless `opts.variant` says).
pub fn parse_pvm(
    input: &mut Input<'_>,
    opts: &ParseOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let size_hint = input.size_hint();
    let mut lines = lines::lines(input);
    let (head, _) = lines.peek(16)?;
    if let Some(e) = profconv_plugin::not_text_error(head, "PVM traces and the debugger's profiles")
    {
        return Err(e);
    }
    // A UTF-8 byte-order mark (as Windows editors write) is not part of the first line.
    lines.skip_bom()?;
    let pvmtrace = match opts.variant {
        Some(v) => v == InputVariant::Pvmtrace,
        // A pvmtrace says so on its first meaningful line; anything else is the debugger's
        // output, whose variant `parse_octez` tells.
        None => {
            // Blank and comment lines before it are consumed here (both readers skip them),
            // however many: a file, a pipe and a `.gz` of the same bytes read alike, and only
            // one line at a time is held.
            let mut want = 1 << 16;
            loop {
                let (head, eof) = lines.peek(want)?;
                // A comment line is looked through to its end however long, within the bound
                // of any line (the reader's error then says the line is too long); another
                // line is judged by its first MiB.
                let comment =
                    head.iter().find(|&&b| !matches!(b, b' ' | b'\t' | b'\r')) == Some(&b'#');
                let limit = if comment {
                    lines::MAX_LINE
                } else {
                    FIRST_LINE_LIMIT
                };
                let look = &head[..head.len().min(limit)];
                let Some(nl) = memchr(b'\n', look) else {
                    if !eof && want < limit && look.len() == head.len() {
                        want = want.saturating_mul(2).min(limit);
                        continue;
                    }
                    // The last line, or one too long to look through: judged by its start.
                    break !comment && starts_pvmtrace(look.trim_ascii_start());
                };
                let t = head[..nl].trim_ascii();
                if t.is_empty() || t[0] == b'#' {
                    lines.consume(nl + 1, 1);
                    want = 1 << 16;
                    continue;
                }
                break starts_pvmtrace(t);
            }
        }
    };
    if pvmtrace {
        return trace::parse_trace(&mut lines, size_hint, opts, cx);
    }
    let forced = match opts.variant {
        Some(InputVariant::Debugger(v)) => Some(v),
        _ => None,
    };
    octez::parse_octez(&mut lines, forced, opts, cx)
}

/// Confidence that `head` is a pvmtrace or a debugger output file.
///
/// A UTF-8 byte-order mark at the start is skipped, as the parser does.
///
/// * `PVMTRACE` as the first meaningful line: 95.
/// * `<stack> <ticks>` lines (glued runs repaired) whose toplevel frames are the PVM's phases
///   (`%interpreter(...)`) and `kernel_run`, at least one phase: 85; all `kernel_run`: 75.
///   The folded sniffer gives folded stacks 70 (30 without `;`), so these PVM-shaped files go
///   to `pvm`, which knows their calls and runs, and any other folded file stays `folded`.
pub fn sniff(head: &[u8]) -> u32 {
    let head = head.strip_prefix(lines::BOM).unwrap_or(head);
    if head.is_empty() || memchr(0, head).is_some() {
        return 0;
    }
    if let Ok(Some(first)) = first_meaningful(head, true) {
        if starts_pvmtrace(first) {
            return 95;
        }
    }
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..i],
        None if head.len() < 4096 => head,
        // A first line longer than the head (a call 90 levels deep of long names): its first
        // frame still tells, a weak 6, above the folded sniffer's 5 for such a line.
        None => {
            return if pvm_toplevel(first_frame(head)) {
                6
            } else {
                0
            };
        }
    };
    let mut cuts = Vec::new();
    let (mut lines, mut phases) = (0u32, 0u32);
    for line in complete.split(|&c| c == b'\n').take(2000) {
        let line = octez::trim_end(line);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        octez::glue_cuts(line, &mut cuts);
        for k in 0..cuts.len() {
            let piece = &line[cuts[k]..cuts.get(k + 1).copied().unwrap_or(line.len())];
            let Some((stack, _)) = octez::entry(octez::trim_end(piece)) else {
                return 0;
            };
            let root = first_frame(stack);
            if is_phase(root) {
                phases += 1;
            } else if root != b"kernel_run" {
                return 0;
            }
            lines += 1;
        }
    }
    match (lines, phases) {
        (0, _) => 0,
        (_, 0) => 75,
        _ => 85,
    }
}

/// A stack's first (toplevel) frame.
fn first_frame(stack: &[u8]) -> &[u8] {
    stack.split(|&c| c == b';').next().unwrap_or(stack)
}

/// Whether `frame` is one of the PVM's phases, `%interpreter(...)`.
fn is_phase(frame: &[u8]) -> bool {
    frame.starts_with(b"%interpreter(") && frame.ends_with(b")")
}

/// Whether `frame` is a toplevel frame of the debugger's files: a phase or `kernel_run`, with a
/// callee after it (the head holds no line end, so the line goes on).
fn pvm_toplevel(frame: &[u8]) -> bool {
    is_phase(frame) || frame == b"kernel_run"
}

/// The `pvm` format: parse and sniff.
pub struct Pvm;

impl Format for Pvm {
    const ID: &'static str = "pvm";
    const DESCRIPTION: &'static str = "Tezos WASM PVM profiles: PVMTRACE 1 event traces, and the Octez debugger's profile output (flame chart or --collapsed)";
    const EXTENSIONS: &'static str = "pvmtrace,wasm-debugger-profiling-*";
    const OPTIONS: &'static [OptionDesc] = &[
        OptionDesc::flag(
            "aggregate",
            "sum ticks per stack instead of keeping time order: memory grows with distinct stacks, not events (no flame chart)",
        ).parse_only(),
        OptionDesc::flag(
            "debugger-compat",
            "leave out kernel runs the Octez debugger reports as inconsistent (a trap, calls left open), as its own output does",
        ).parse_only(),
        OptionDesc::flag(
            "strict",
            "the pvmtrace warnings (tick going backwards, wrong end, name defined twice, calls left open, partial time) are errors",
        ).parse_only(),
        OptionDesc::string(
            "variant",
            "auto",
            "auto, pvmtrace, flamechart, collapsed or folded (debugger outputs are detected by default)",
        ).parse_only(),
    ];
    const CAN_PARSE: bool = true;
    const CAN_SNIFF: bool = true;
    const STREAMING_INPUT: bool = true;
    // Given a mapped file whole, the reader goes through it in order and releases it behind.
    const RELEASES_WHOLE_INPUT: bool = true;

    fn sniff(head: &[u8]) -> u32 {
        sniff(head)
    }

    fn check_parse_options(options: &Options) -> Result<(), PluginError> {
        ParseOptions::from_options(options).map(drop)
    }

    fn parse(
        input: &mut Input<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        parse_pvm(input, &ParseOptions::from_options(options)?, cx)
    }
}

/// The `pvm-summary` format: the debugger's per-run console summary (emit only).
pub struct PvmSummary;

impl Format for PvmSummary {
    const ID: &'static str = "pvm-summary";
    const DESCRIPTION: &'static str = "per kernel run, the ticks (and time) of each toplevel call, like the Octez debugger's console summary";
    const OPTIONS: &'static [OptionDesc] = &[OptionDesc::string(
        "value",
        "",
        "the value type summed (default: ticks, else the first weight; of a profconv diff profile, after)",
    )
    .emit_only()];
    const CAN_EMIT: bool = true;

    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        emit_summary(profile, output, options.get("value"), cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::testing::first_seen_tree;

    fn parse_opts(text: &str, opts: ParseOptions) -> (Result<Profile, PluginError>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let r = parse_pvm(
            &mut Input::from_slice(text.as_bytes()),
            &opts,
            &mut Context::with_sink(&mut sink),
        );
        (r, warnings)
    }

    fn tree_of(p: &Profile) -> String {
        p.view().validate().unwrap();
        first_seen_tree(&p.view(), true)
    }

    fn tree(text: &str) -> String {
        tree_of(&parse_opts(text, ParseOptions::default()).0.unwrap())
    }

    fn summary(p: &Profile) -> String {
        let mut out = Vec::new();
        emit_summary(
            &p.view(),
            &mut out,
            None,
            &mut Context::with_sink(&mut |_, _| {}),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    const SEED: &str = "PVMTRACE 1\nC 0 f\n C 10 g\n  C 30 h\n  E 60 h\n E 100 g\nE 160 f\n";

    /// `-O value=NAME` picks the column summed; of a `profconv diff` profile the summary, like
    /// every emitter that shows one column, sums `after` and warns that `before` is left out.
    #[test]
    fn summary_sums_the_named_column_and_after_of_a_diff() {
        use profconv_plugin::ir::{diff, testing::stacks};
        let run = |p: &Profile, value: Option<&str>| {
            let mut warnings = Vec::new();
            let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
            let mut out = Vec::new();
            let r = emit_summary(
                &p.view(),
                &mut out,
                value,
                &mut Context::with_sink(&mut sink),
            );
            (r.map(|()| String::from_utf8(out).unwrap()), warnings)
        };
        let before = stacks(&[(&["main", "a"], 10), (&["main", "b"], 5)]);
        let after = stacks(&[(&["main", "a"], 12), (&["main", "c"], 3)]);
        let d = diff::combine(&before.view(), 0, &after.view(), 0).unwrap();
        let (out, warnings) = run(&d, None);
        assert_eq!(
            out.unwrap(),
            "run 1\nmain: 15 after\nFull execution: 15 after\n"
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("`-O value=before`"), "{warnings:?}");
        let (out, warnings) = run(&d, Some("before"));
        assert_eq!(
            out.unwrap(),
            "run 1\nmain: 15 before\nFull execution: 15 before\n"
        );
        assert!(warnings.is_empty());
        let (out, _) = run(&d, Some("ticks"));
        assert!(out.unwrap_err().message.contains("it has: before, after"));
        // A trace: ticks by default, another weight when named, never a count.
        let p = parse_opts(SEED, ParseOptions::default()).0.unwrap();
        assert_eq!(
            run(&p, None).0.unwrap(),
            "run 1\nf: 160 ticks\nFull execution: 160 ticks\n"
        );
        assert_eq!(run(&p, Some("ticks")).0.unwrap(), run(&p, None).0.unwrap());
        let e = run(&p, Some("calls")).0.unwrap_err();
        assert!(e.message.contains("'calls' counts events"), "{e}");
    }

    /// Spec B.7: the summary has a line per toplevel call. Read in time order, each call is
    /// its own line in call order, also two back-to-back calls of one function; aggregated
    /// (`-O aggregate`), the calls of one name are one line, in first-seen order, even when
    /// another function's call came between them.
    #[test]
    fn summary_lists_each_toplevel_call_in_order_or_merges_them_aggregated() {
        let trace =
            "PVMTRACE 1\nC 0 f\nE 10\nC 10 f\nE 12\nC 12 g\nE 17\nC 17 f\nC 18 h\nE 19\nE 20\n";
        let p = parse_opts(trace, ParseOptions::default()).0.unwrap();
        assert_eq!(
            summary(&p),
            "run 1\nf: 10 ticks\nf: 2 ticks\ng: 5 ticks\nf: 3 ticks\nFull execution: 20 ticks\n"
        );
        let aggregated = ParseOptions {
            aggregate: true,
            ..Default::default()
        };
        let a = parse_opts(trace, aggregated).0.unwrap();
        assert_eq!(
            summary(&a),
            "run 1\nf: 15 ticks\ng: 5 ticks\nFull execution: 20 ticks\n"
        );
    }

    /// Spec B.7 compat mode: the debugger writes nothing for a run it reports as inconsistent,
    /// so a trace whose only run is left out has an empty summary (not a `run 1` of 0 ticks).
    #[test]
    fn summary_of_a_trace_whose_every_run_is_left_out_is_empty() {
        let compat = ParseOptions {
            compat: true,
            ..Default::default()
        };
        let p = parse_opts("PVMTRACE 1\nC 0 f\nX 5 boom\n", compat)
            .0
            .unwrap();
        assert_eq!(summary(&p), "");
    }

    /// Timestamps on some events only: the warning names the first event whose timestamp
    /// presence differs from the first event's (line 3 here), not a later one (line 4).
    #[test]
    fn partial_time_is_named_at_the_first_event_that_differs() {
        let trace = "PVMTRACE 1\nC 0 @0 f\nC 5 g\nE 6\nE 9 @20\n";
        let (r, warnings) = parse_opts(trace, ParseOptions::default());
        assert_eq!(
            tree_of(&r.unwrap()),
            "f self=8 total=9 calls=1\n  g self=1 total=1 calls=1\n"
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("line 3: some events have a timestamp and others not")),
            "{warnings:?}"
        );
    }

    /// A name with a line break or an escape byte stays on its line, escaped as `profconv tree`
    /// shows it.
    #[test]
    fn summary_names_keep_to_their_lines() {
        let p = parse_opts(
            "PVMTRACE 1\nC 0 fnx:780a79\nE 5\nC 5 fnx:1b5b306d\nE 7\n",
            ParseOptions::default(),
        )
        .0
        .unwrap();
        assert_eq!(
            summary(&p),
            "run 1\nx\\ny: 5 ticks\n\\u{1b}[0m: 2 ticks\nFull execution: 7 ticks\n"
        );
    }

    /// The summed column's name comes from the input too (a callgrind `events:` line can name
    /// an event `Ir\x1b[2J\u{202e}`): it is escaped like the names, not written raw to the
    /// terminal, which it cleared.
    #[test]
    fn summary_escapes_the_column_name() {
        let mut b = profconv_plugin::ir::ProfileBuilder::new();
        b.add_value_type(
            "Ir\u{1b}[2J\u{202e}",
            "count",
            profconv_plugin::ir::ValueKind::Weight,
        );
        b.add_stack(&["a"], &[1]).unwrap();
        assert_eq!(
            summary(&b.finish()),
            "run 1\na: 1 Ir\\u{1b}[2J\\u{202e}\nFull execution: 1 Ir\\u{1b}[2J\\u{202e}\n"
        );
    }

    /// `SB`/`SE <tick> [@<time>] <hex>`: the section's data is required and is bytes in hex, as
    /// the spec's grammar says (they were read up to the tick, so `SB 5 zz` and `SB 7` passed
    /// silently); the error names the line and the column of the data, or of the line's end.
    #[test]
    fn section_records_need_their_hex_data() {
        let ok = "PVMTRACE 1\nC 1 f\nSB 2 0aFF\nSB 3 @+0 00\nSE +1 \t abcdef01\nSE 5 00\nE 9\n";
        let (r, warnings) = parse_opts(ok, ParseOptions::default());
        assert_eq!(tree_of(&r.unwrap()), "f self=8 total=8 calls=1\n");
        assert_eq!(warnings, Vec::<String>::new());
        let cases = [
            (
                "PVMTRACE 1\nSB 5 zz\nSE 6 zz\n",
                "line 2, column 6: bad hex data `zz` in a section begin: expected an even number of hex digits",
            ),
            (
                "PVMTRACE 1\nSB 7\nSE 8\n",
                "line 2, column 5: expected the section begin's data in hex after the tick (`SB <tick> [@<time>] <hex>`)",
            ),
            (
                "PVMTRACE 1\nSB 7 00\nSE 8 @9\n",
                "line 3, column 8: expected the section end's data in hex after the tick (`SE <tick> [@<time>] <hex>`)",
            ),
            (
                "PVMTRACE 1\nSB 5 abc\n",
                "line 2, column 6: bad hex data `abc` in a section begin: expected an even number of hex digits",
            ),
            (
                "PVMTRACE 1\nSB 5 ab cd\n",
                "line 2, column 6: bad hex data `ab cd` in a section begin: expected an even number of hex digits",
            ),
            (
                "PVMTRACE 1\nSB 5 0x00\n",
                "line 2, column 6: bad hex data `0x00` in a section begin: expected an even number of hex digits",
            ),
        ];
        for (text, want) in cases {
            for strict in [false, true] {
                let opts = ParseOptions {
                    strict,
                    ..ParseOptions::default()
                };
                let (r, _) = both_paths(text, opts);
                assert_eq!(r, format!("error: {want}"), "{text}");
            }
        }
    }

    /// An input is read past any number of comment lines to its header, mapped or streamed:
    /// only a line longer than the first-line limit is judged by its start. Looking at its
    /// first MiB alone (for a file without newlines) read a trace with 1.1 MB of comments
    /// before `PVMTRACE 1` as the debugger's output, and refused it.
    #[test]
    fn a_header_after_a_long_comment_block_is_found_in_a_whole_input() {
        // Whole (mapped) and streamed (a pipe, a `.gz`: it stopped looking after 1 MiB).
        let both = |text: &str| {
            let streamed = parse_pvm(
                &mut Input::from_reader(&mut text.as_bytes()),
                &ParseOptions::default(),
                &mut Context::silent(),
            )
            .unwrap();
            [tree(text), tree_of(&streamed)]
        };
        let f10 = "f self=10 total=10 calls=1\n";
        let text = format!(
            "{}PVMTRACE 1\nC 0 f\nE 10 f\n",
            format!("# {}\n", "c".repeat(1000)).repeat(1100)
        );
        assert_eq!(both(&text), [f10, f10]);
        // One comment line longer than the first-line limit is skipped too (it was judged by
        // its start, and the trace read as the debugger's output).
        let text = format!("# {}\nPVMTRACE 1\nC 0 f\nE 10 f\n", "c".repeat(2 << 20));
        assert_eq!(both(&text), [f10, f10]);
        // A first line of more than the limit without a newline is judged by its start.
        let long = format!("PVMTRACE 1 {}", " ".repeat(FIRST_LINE_LIMIT + 10));
        assert!(starts_pvmtrace(
            first_meaningful(long.as_bytes(), true).unwrap().unwrap()
        ));
        let comment = format!("#{}", "x".repeat(FIRST_LINE_LIMIT + 10));
        assert_eq!(first_meaningful(comment.as_bytes(), true), Ok(None));
    }

    /// The debugger's variant is told from the first MiB of the input, whether it is held in
    /// memory (a mapped file) or streamed: a mapped file used to be classified on all of it, so
    /// a line past the first MiB that breaks pre-order made it read as plain folded stacks
    /// (exit 0) where the same bytes streamed were an error, and a large file was read twice.
    #[test]
    fn the_variant_is_told_from_the_first_mib_however_the_input_is_read() {
        let mut text = "kernel_run 3\nkernel_run;g1 2\n".repeat(60_000);
        assert!(text.len() > 1 << 20);
        text.push_str("kernel_run;a;b 5\n");
        let (r, _) = both_paths(&text, ParseOptions::default());
        assert!(
            r.starts_with("error: line 120001, column 1:") && r.contains("pre-order"),
            "{}",
            &r[..r.len().min(300)]
        );
    }

    /// Past the first ten warnings of a kind, one line counts the rest and names their kind
    /// (the warning shown just before it may be of another kind).
    #[test]
    fn warnings_not_shown_are_counted_by_kind() {
        let mut text = String::from("PVMTRACE 1\nC 100 f\n");
        for _ in 0..13 {
            text.push_str("C 50 g\nE 100 g\n");
        }
        text.push_str("E 200 f\nSE 200 00\n");
        let (r, warnings) = parse_opts(&text, ParseOptions::default());
        r.unwrap();
        let backwards = warnings.iter().filter(|w| w.contains("goes backwards"));
        assert_eq!(backwards.count(), 10, "{warnings:?}");
        assert!(
            warnings.contains(&"3 more warnings about ticks going backwards were not shown".into()),
            "{warnings:?}"
        );
    }

    /// Parses `text` from memory (the fast path reads most event lines) and streamed 7 bytes
    /// at a time (lines reach the fast path only when a read ends right after them, so the nom
    /// grammar reads most of them): the profile and the messages must be the same.
    fn both_paths(text: &str, opts: ParseOptions) -> (String, Vec<String>) {
        struct Small<'a>(&'a [u8]);
        impl std::io::Read for Small<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(7).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let describe = |r: Result<Profile, PluginError>| match r {
            Ok(p) => format!(
                "{}stacks {:?} {:?}\nsamples {:?} {:?} {:?}\nmeta {:?}",
                tree_of(&p),
                p.stacks.prefix,
                p.stacks.frame,
                p.samples.stack,
                p.samples.time,
                p.samples.values,
                p.meta
            ),
            Err(e) => format!("error: {e}"),
        };
        let (whole, w1) = parse_opts(text, opts);
        let mut w2 = Vec::new();
        let mut sink = |_: u32, m: &str| w2.push(m.to_string());
        let mut small = Small(text.as_bytes());
        let streamed = parse_pvm(
            &mut Input::from_reader(&mut small),
            &opts,
            &mut Context::with_sink(&mut sink),
        );
        let (a, b) = (describe(whole), describe(streamed));
        assert_eq!(a, b, "{text}");
        assert_eq!(w1, w2, "{text}");
        (a, w1)
    }

    #[test]
    fn the_fast_path_reads_timestamps_as_the_grammar_does() {
        let text = "PVMTRACE 1 time_unit=ns\nN 1 one\nC 5 @100 direct:1\nC 7 @+10 direct:1\n\
                    E 9 @120\nC 10 @119 direct:1\nE 11 @+0\nE 12 @130 direct:1\n\
                    C 13 @131 kernel_run\nC 14 @132 direct:1\nE 15\nE 16 @+1\n\
                    C 17 @+5 direct:1\nE 18 @+1\nE 19 @1000\n";
        for aggregate in [false, true] {
            let opts = ParseOptions {
                aggregate,
                ..Default::default()
            };
            let (out, warnings) = both_paths(text, opts);
            assert!(!out.contains("self_time_ns"), "time dropped: {out}");
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains("timestamp 119 goes backwards")),
                "{warnings:?}"
            );
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains("some events have a timestamp and others not")),
                "{warnings:?}"
            );
            // Without the line lacking a time: the time column stays, on both paths.
            let (out, warnings) = both_paths(&text.replace("E 15\n", "E 15 @133\n"), opts);
            assert!(out.contains("self_time_ns"), "{out} {warnings:?}");
        }
    }

    #[test]
    fn the_fast_path_reads_event_lines_as_the_grammar_does() {
        let mut text = String::from("PVMTRACE 1\nN 1 one\nN 2 two\n");
        // Every shape near the fast path's edges: relative ticks, ref calls, unknown and
        // known indices, end names (matching or not), a tick going backwards, an end with
        // nothing open, CR, blanks, 19- and 20-digit ticks, comments, indices of 10 digits, a
        // run end.
        for (k, line) in [
            "C 5 direct:1",
            "C 7 direct:2",
            "E 9",
            "C +3 direct:2",
            "C +0 ref:0",
            "E 20",
            "E 21 direct:2",
            "E 22 direct:1",
            "E 23",
            "C 24 direct:1",
            "C 24 ref:0",
            "E 25 ref:0",
            "E 26 direct:2",
            "E 27 ref:7",
            "E 28",
            "C 30 direct:3",
            "C 31 ref:0",
            "C 32 direct:3",
            "E 29",
            "E 40\r",
            "E  41",
            "E 42 ",
            "C 50 direct:1",
            "C 51 direct:0000000001",
            "C 52 direct:2147483647",
            "# a comment",
            "C 53 ref:1",
            "E 54",
            "E 1000000000000000000",
            "E 1000000000000000001",
            "E 01000000000000000001",
            "E +1",
            "E 1000000000000000002",
            "E 1000000000000000003",
            "C 1000000000000000004 direct:1",
            "E 1000000000000000005",
        ]
        .iter()
        .enumerate()
        {
            text.push_str(line);
            text.push('\n');
            if k == 31 {
                text.push_str("R 1000000000000000002 reboot\nC +1 direct:1\n");
            }
        }
        for aggregate in [false, true] {
            let opts = ParseOptions {
                aggregate,
                ..Default::default()
            };
            let (_, warnings) = both_paths(&text, opts);
            assert!(
                warnings.iter().any(|w| w.contains("goes backwards")),
                "{warnings:?}"
            );
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains("line 16: end of `two` while `one` is open")),
                "{warnings:?}"
            );
            // The error (20 digits) names its line either way.
            let (out, _) = both_paths(
                &text.replace("E 54\n", "E 54\nE 99999999999999999999\n"),
                opts,
            );
            assert!(out.contains("line 32"), "{out}");
        }
        // Strict: the first warning is an error, on its line, on both paths.
        let strict = ParseOptions {
            strict: true,
            ..Default::default()
        };
        let (out, _) = both_paths(&text, strict);
        assert!(out.starts_with("error:"), "{out}");
    }

    /// An `E` naming a `ref:<i>` call (spec B.4): the open call's own index closes it quietly,
    /// another index is an end mismatch. Read by the grammar (two spaces keep the lines off the
    /// fast path) and by the fast path alike.
    #[test]
    fn an_end_naming_a_ref_call_is_checked_against_the_open_call() {
        let mismatch = "line 4: end of `function_ref[1]` while `function_ref[2]` is open";
        for sep in [" ", "  "] {
            let text = format!("PVMTRACE 1\nC 0 ref:1\nC 1 ref:2\nE 2{sep}ref:1\nE 3{sep}ref:1\n");
            let (out, warnings) = both_paths(&text, ParseOptions::default());
            assert!(
                out.starts_with(
                    "function_ref[1] self=2 total=3 calls=1\n  function_ref[2] self=1 total=1 calls=1\n"
                ),
                "{out}"
            );
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].starts_with(mismatch), "{warnings:?}");
        }
    }

    #[test]
    fn seed_000_worked_example() {
        assert_eq!(
            tree(SEED),
            "f self=70 total=160 calls=1\n  g self=60 total=90 calls=1\n    h self=30 total=30 calls=1\n"
        );
        let agg = ParseOptions {
            aggregate: true,
            ..Default::default()
        };
        let (p, _) = parse_opts(SEED, agg);
        let p = p.unwrap();
        assert_eq!(tree_of(&p), tree(SEED));
        assert_eq!(p.samples.stack.len(), 3, "one row per stack");
        assert!(!p.view().is_ordered());
    }

    #[test]
    fn relative_ticks_and_times_and_crlf() {
        let rel = "PVMTRACE 1\r\nC +5 @+100 f\r\nC +10 @+50 g\r\nE +20 @+20\r\nE +5 @+5\r\n";
        assert_eq!(
            tree(rel),
            "f self=15 total=35 calls=1 self_time_ns=55 total_time_ns=75\n  g self=20 total=20 calls=1 self_time_ns=20 total_time_ns=20\n"
        );
    }

    #[test]
    fn runs_are_threads_and_an_r_at_the_end_opens_none() {
        let (p, _) = parse_opts(
            "PVMTRACE 1\nC 0 k\nE 5\nR 9 reboot\nR 10\nC 11 k\nE 12\nR 20 yield\n",
            ParseOptions::default(),
        );
        let p = p.unwrap();
        let v = p.view();
        let names: Vec<&str> = v.thread_name.iter().map(|&t| v.strings.get(t)).collect();
        assert_eq!(names, ["run 1 (reboot)", "run 2", "run 3 (yield)"]);
        assert_eq!(
            summary(&p),
            "run 1 (reboot)\nk: 5 ticks\nFull execution: 5 ticks\nrun 2\nFull execution: 0 ticks\nrun 3 (yield)\nk: 1 ticks\nFull execution: 1 ticks\n"
        );
        // One run: no thread column, one thread name.
        let (p, _) = parse_opts(SEED, ParseOptions::default());
        let p = p.unwrap();
        assert!(p.samples.thread.is_none());
        assert_eq!(p.threads.len(), 1);
    }

    #[test]
    fn ends_with_nothing_open_are_ignored_and_counted() {
        let (p, w) = parse_opts(
            "PVMTRACE 1\nE 1\nC 2 f\nE 4 f\nE 5 anything at all\n",
            ParseOptions::default(),
        );
        let p = p.unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(p.view().meta("ignored_ends"), Some("2"));
        assert_eq!(p.view().meta("unattributed_ticks"), Some("2"));
    }

    #[test]
    fn huge_ticks_are_rebased_on_the_first() {
        let (p, _) = parse_opts(
            "PVMTRACE 1\nC 18446744073709551000 f\nE 18446744073709551615\n",
            ParseOptions::default(),
        );
        let p = p.unwrap();
        assert_eq!(tree_of(&p), "f self=615 total=615 calls=1\n");
        assert_eq!(p.view().meta("tick_base"), Some("18446744073709551000"));
    }

    /// Timestamps too, from the first event's when it is huge: nanoseconds since the epoch
    /// near 2^64 read as 615 ns, not as out of range.
    #[test]
    fn huge_timestamps_are_rebased_on_the_first() {
        let (p, _) = parse_opts(
            "PVMTRACE 1\nC 0 @18446744073709551000 f\nE 5 @18446744073709551615\n",
            ParseOptions::default(),
        );
        assert_eq!(
            tree_of(&p.unwrap()),
            "f self=5 total=5 calls=1 self_time_ns=615 total_time_ns=615\n"
        );
    }

    /// Once an event without a timestamp has been read, time is dropped for the whole trace
    /// (with a warning): a later timestamp too large to count from the first is then ignored,
    /// not an error.
    #[test]
    fn an_out_of_range_timestamp_is_ignored_once_time_is_dropped() {
        let (p, warnings) = parse_opts(
            "PVMTRACE 1\nC 0 @0 f\nC 1 g\nE 2 @18446744073709551615\nE 3 @18446744073709551615\n",
            ParseOptions::default(),
        );
        let p = p.unwrap();
        assert_eq!(
            tree_of(&p),
            "f self=2 total=3 calls=1\n  g self=1 total=1 calls=1\n"
        );
        assert_eq!(p.view().value_type_index("time_ns"), None);
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("some events have a timestamp and others not")),
            "{warnings:?}"
        );
    }

    #[test]
    fn latin1_names_from_the_debugger_and_fnx() {
        let input = b"kernel_run 1\nkernel_run;caf\xe9 2\n".to_vec();
        let (p, w) = {
            let mut warnings = Vec::new();
            let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
            let r = parse_pvm(
                &mut Input::from_slice(&input),
                &ParseOptions::default(),
                &mut Context::with_sink(&mut sink),
            );
            (r.unwrap(), warnings)
        };
        assert!(tree_of(&p).contains("  café self=2"), "{}", tree_of(&p));
        assert!(w.iter().any(|m| m.contains("Latin-1")), "{w:?}");
        // An internal phase's name too (it was read as Latin-1 without a warning).
        let input = b"PVMTRACE 1\nC 0 internal:d\xe9code\nE 1\n".to_vec();
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let p = parse_pvm(
            &mut Input::from_slice(&input),
            &ParseOptions::default(),
            &mut Context::with_sink(&mut sink),
        )
        .unwrap();
        assert_eq!(tree_of(&p), "%interpreter(décode) self=1 total=1 calls=1\n");
        assert!(
            warnings.iter().any(|m| m.contains("Latin-1")),
            "{warnings:?}"
        );
        assert_eq!(
            tree("PVMTRACE 1\nC 0 fnx:636166e9\nE 1\n"),
            "café self=1 total=1 calls=1\n"
        );
    }

    #[test]
    fn kinds_are_kept_as_the_func_resource() {
        let (p, _) = parse_opts(
            "PVMTRACE 1\nN 1 named\nC 0 internal:init\nE 1\nC 1 direct:1\nC 2 direct:2\nC 3 ref:0\nE 4\nE 5\nE 6\n",
            ParseOptions::default(),
        );
        let p = p.unwrap();
        let v = p.view();
        let kinds: Vec<(&str, &str)> = (0..v.n_funcs())
            .map(|f| (v.func_name_str(f as u32), v.strings.get(v.func_resource[f])))
            .collect();
        assert_eq!(
            kinds,
            [
                ("%interpreter(init)", "internal"),
                ("named", "function"),
                ("function[2]", "direct"),
                ("function_ref[0]", "ref"),
            ]
        );
    }

    #[test]
    fn options_and_forced_variants() {
        let o = Options::new(vec![
            ("variant".into(), Some("collapsed".into())),
            ("aggregate".into(), None),
        ]);
        let opts = ParseOptions::from_options(&o).unwrap();
        assert!(opts.aggregate && !opts.compat && !opts.strict);
        assert_eq!(
            opts.variant,
            Some(InputVariant::Debugger(DebuggerVariant::Collapsed))
        );
        let bad = Options::new(vec![("variant".into(), Some("svg".into()))]);
        let e = ParseOptions::from_options(&bad).unwrap_err();
        assert_eq!(e.status, profconv_plugin::Status::BAD_OPTIONS);
        assert_eq!(
            e.message,
            "option variant=svg: expected `auto`, `pvmtrace`, `flamechart`, `collapsed` or `folded`"
        );
        // A value of any length, with a line break, is quoted in 40 bytes on one line.
        let long = Options::new(vec![(
            "variant".into(),
            Some(format!("x\ny{}", "y".repeat(300))),
        )]);
        let e = ParseOptions::from_options(&long).unwrap_err();
        assert!(
            !e.message.contains('\n') && e.message.len() < 150,
            "{}",
            e.message
        );
        // A flame chart read as collapsed: calls unknown, same ticks.
        let chart = "k 1\nk;f 2\nk 3\n";
        let (p, _) = parse_opts(chart, opts);
        assert_eq!(
            tree_of(&p.unwrap()),
            "k self=4 total=6 calls=?\n  f self=2 total=2 calls=?\n"
        );
        let (p, _) = parse_opts(chart, ParseOptions::default());
        assert_eq!(
            tree_of(&p.unwrap()),
            "k self=4 total=6 calls=2\n  f self=2 total=2 calls=1\n"
        );
        // A pvmtrace forced on other text is a header error.
        let forced = ParseOptions {
            variant: Some(InputVariant::Pvmtrace),
            ..Default::default()
        };
        let e = parse_opts("k 1\n", forced).0.unwrap_err();
        assert_eq!((e.line, e.column), (Some(1), Some(1)));
        let e = parse_opts("", forced).0.unwrap_err();
        assert!(e.message.contains("empty input"), "{e}");
        // Empty input, detected: an empty profile.
        assert_eq!(
            tree_of(&parse_opts("\n\n", ParseOptions::default()).0.unwrap()),
            ""
        );
    }

    /// A flame chart's first line is a toplevel call: a file that starts inside a call (cut at
    /// its head) is not one (spec B.8: at most one frame more than the previous line, and
    /// the chain popped to the line's depth - 1, checking the names), whether forced or told
    /// from its toplevel `link` before `init`. It was read with a caller of `calls=0`.
    #[test]
    fn a_flame_chart_that_starts_inside_a_call_is_an_error() {
        let forced = ParseOptions {
            variant: Some(InputVariant::Debugger(DebuggerVariant::Flamechart)),
            ..Default::default()
        };
        let e = parse_opts("k;f 5\nk;f;g 3\n", forced).0.unwrap_err();
        assert_eq!((e.line, e.column), (Some(1), Some(1)), "{e}");
        assert!(e.message.contains("first line"), "{e}");
        let cut = "kernel_run;kernel_loop 120\n%interpreter(decode) 3\n%interpreter(link) 6\n\
                   %interpreter(init) 2\nkernel_run 108\n";
        let e = parse_opts(cut, ParseOptions::default()).0.unwrap_err();
        assert_eq!((e.line, e.column), (Some(1), Some(1)), "{e}");
        // A toplevel first line is read as before.
        assert_eq!(
            tree(&cut["kernel_run;kernel_loop 120\n".len()..]),
            "%interpreter(decode) self=3 total=3 calls=1\n%interpreter(link) self=6 total=6 calls=1\n\
             %interpreter(init) self=2 total=2 calls=1\nkernel_run self=108 total=108 calls=1\n"
        );
    }

    /// A trace whose `PVMTRACE 1` header is missing is read as the debugger's output (spec
    /// B.8), whose message named only `<stack> <ticks>`: it names the header too, when the first
    /// line is shaped like a pvmtrace record (and only then).
    #[test]
    fn a_trace_without_its_header_names_the_header() {
        for text in [
            "C 0 kernel_run\nE 5\n",
            "# c\nN 1 foo\nC 0 direct:1\n",
            "C\t+0 f\n",
        ] {
            let e = parse_opts(text, ParseOptions::default()).0.unwrap_err();
            assert!(e.message.contains("`PVMTRACE 1` header"), "{text:?}: {e}");
        }
        let e = parse_opts("kernel_run 5\nkernel_run x\n", ParseOptions::default())
            .0
            .unwrap_err();
        assert!(!e.message.contains("PVMTRACE"), "{e}");
        let e = parse_opts("kernel_run x\n", ParseOptions::default())
            .0
            .unwrap_err();
        assert!(!e.message.contains("PVMTRACE"), "{e}");
    }

    /// A flame chart's pre-order error says how the variant was chosen: given with
    /// `-O variant=flamechart`, not told "from its first lines", which nothing was.
    #[test]
    fn a_forced_flame_chart_says_it_was_forced() {
        let text = "kernel_run 5\nkernel_run;a;b 3\n";
        let forced = ParseOptions {
            variant: Some(InputVariant::Debugger(DebuggerVariant::Flamechart)),
            ..ParseOptions::default()
        };
        let e = parse_opts(text, forced).0.unwrap_err();
        assert!(e.message.contains("(-O variant=flamechart)"), "{e}");
        assert!(!e.message.contains("from its first lines"), "{e}");
    }

    /// A tick or time that cannot be held says against which base: stored as they are, a
    /// trace starting at tick 5 cannot hold 2^63 (the message said "more than 2^63-1 ticks
    /// after the first event", which 2^63 - 5 is not); stored from a first tick above 2^62,
    /// the message names that tick.
    #[test]
    fn a_tick_out_of_range_names_the_base_it_is_counted_from() {
        let (r, _) = parse_opts(
            "PVMTRACE 1\nC 5 f\nE 9223372036854775808 f\n",
            ParseOptions::default(),
        );
        let e = r.unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(
            e.message.contains(
                "tick 9223372036854775808 is too large: at most 2^63-1 (9223372036854775807; the \
                 trace's first tick is at most 2^62"
            ),
            "{e}"
        );
        let first = (1u64 << 62) + 1;
        let (r, _) = parse_opts(
            &format!("PVMTRACE 1\nC {first} f\nE {} f\n", u64::MAX),
            ParseOptions::default(),
        );
        let e = r.unwrap_err();
        assert!(
            e.message.contains(&format!(
                "tick {} is too large: at most {} (2^63-1 ticks after the trace's first tick, \
                 {first})",
                u64::MAX,
                first + i64::MAX as u64
            )),
            "{e}"
        );
        let (r, _) = parse_opts(
            "PVMTRACE 1\nC 5 @5 f\nE 6 @9223372036854775808 f\n",
            ParseOptions::default(),
        );
        let e = r.unwrap_err();
        assert!(
            e.message
                .contains("the trace's first timestamp is at most 2^62"),
            "{e}"
        );
    }

    /// A number too large reads as in the other readers, `{what} {number} is too large: at
    /// most {limit}`, with the number as written and the limit that applies, also past 64 bits
    /// (the message said "tick does not fit in 64 bits", with neither) and for a relative tick
    /// (the limit after the previous one).
    #[test]
    fn a_number_too_large_names_itself_and_the_limit() {
        let big = "18446744073709551616";
        let err = |text: &str| {
            let (r, _) = parse_opts(text, ParseOptions::default());
            r.unwrap_err().to_string()
        };
        // The first event is its own base: any 64-bit tick.
        assert_eq!(
            err(&format!("PVMTRACE 1\nC {big} f\n")),
            format!(
                "line 2, column 3: tick {big} is too large: at most 2^64-1 (18446744073709551615)"
            )
        );
        // Later ones: 2^63-1 from base 0.
        let e = err(&format!("PVMTRACE 1\nC 0 f\nE {big} f\n"));
        assert!(
            e.starts_with(&format!(
                "line 3, column 3: tick {big} is too large: at most 2^63-1 (9223372036854775807; the trace's \
                 first tick is at most 2^62"
            )),
            "{e}"
        );
        assert_eq!(
            err(&format!("PVMTRACE 1\nC 5 f\nE +{big} f\n")),
            format!(
                "line 3, column 3: relative tick +{big} is too large: at most +9223372036854775802 after 5 (the \
                 previous tick; a tick is at most 2^63-1 (9223372036854775807; the trace's first \
                 tick is at most 2^62, so its values are kept as they are, and profile values are \
                 64-bit signed))"
            )
        );
        let e = err("PVMTRACE 1\nC 5 @5 f\nE 6 @99999999999999999999 f\n");
        assert!(
            e.starts_with(
                "line 3, column 5: timestamp 99999999999999999999 is too large: at most 2^63-1 \
                 (9223372036854775807; the trace's first timestamp is at most 2^62"
            ),
            "{e}"
        );
        // The debugger's output: past 2^63-1 and past 64 bits alike.
        for count in ["9223372036854775808", big] {
            assert_eq!(
                err(&format!("f;g 5\nf {count}\n")),
                format!(
                    "line 2, column 3: tick count {count} is too large: at most 2^63-1 (9223372036854775807)"
                )
            );
        }
    }

    /// The header's `time_unit` key is `ns` or an error (spec B.2), also when it has no value
    /// at all (`time_unit` alone was ignored, while `time_unit=` was an error); other keys
    /// without a value are ignored like any unknown key.
    #[test]
    fn a_time_unit_without_a_value_is_an_error() {
        for header in [
            "PVMTRACE 1 time_unit",
            "PVMTRACE 1 time_unit=",
            "PVMTRACE 1 source=x time_unit",
        ] {
            let (r, _) = parse_opts(
                &format!("{header}\nC 0 @0 f\nE 5 @9\n"),
                ParseOptions::default(),
            );
            let e = r.unwrap_err();
            assert!(e.message.contains("unsupported time_unit"), "{header}: {e}");
            assert_eq!(e.line, Some(1), "{header}");
        }
        for header in [
            "PVMTRACE 1 time_unit=ns",
            "PVMTRACE 1 source",
            "PVMTRACE 1 time_units",
        ] {
            let text = format!("{header}\nC 0 @0 f\nE 5 @9\n");
            assert_eq!(
                tree(&text),
                "f self=5 total=5 calls=1 self_time_ns=9 total_time_ns=9\n",
                "{header}"
            );
        }
    }

    #[test]
    fn warnings_are_limited_and_counted() {
        let mut text = String::from("PVMTRACE 1\nC 100 f\n");
        for _ in 0..25 {
            text.push_str("C 50 g\nE 50 h\n");
        }
        text.push_str("E 200\n");
        let (p, w) = parse_opts(&text, ParseOptions::default());
        p.unwrap();
        assert_eq!(w.len(), 10 + 10 + 2, "{w:#?}");
        assert!(w.iter().any(|m| m.contains("15 more warnings")));
        assert!(w.iter().any(|m| m.contains("40 more warnings")));
    }

    /// An input in memory is read a block at a time (and released behind): lines cut at a
    /// block's end take the general path; the profile is the streamed one's.
    #[test]
    fn a_whole_input_of_several_blocks_reads_as_streamed() {
        let mut text = String::from("PVMTRACE 1\nN 0 f\nN 1 g\n");
        let mut tick = 0u64;
        while text.len() < 2 * lines::BLOCK + 1000 {
            let f = (tick / 4) % 50;
            text.push_str(&format!(
                "C {tick} fn:f{f}\nC {} direct:1\nE {}\nE {}\n",
                tick + 1,
                tick + 3,
                tick + 7
            ));
            tick += 10;
        }
        for aggregate in [false, true] {
            let opts = ParseOptions {
                aggregate,
                ..Default::default()
            };
            let (described, _) = both_paths(&text, opts);
            assert!(described.starts_with("f0 self="), "{}", &described[..200]);
            // Released behind the reader, a block at a time, up to the last block read.
            let released = std::cell::RefCell::new(Vec::new());
            let hook = |upto: usize| released.borrow_mut().push(upto);
            let mut input = Input::from_slice(text.as_bytes()).with_release(&hook);
            parse_pvm(&mut input, &opts, &mut Context::silent()).unwrap();
            let released = released.into_inner();
            assert!(released.len() >= 2, "{released:?}");
            assert!(
                released.windows(2).all(|w| w[1] >= w[0] + lines::BLOCK),
                "{released:?}"
            );
            assert!(
                *released.last().unwrap() + lines::BLOCK >= text.len(),
                "{released:?}"
            );
        }
    }

    /// A debugger file of exactly the bytes its variant is told from (1 MiB) and no final
    /// newline reads alike streamed and whole: the stream looked no further than that MiB, did
    /// not know it had ended, and dropped the last line as a cut one, which made the file
    /// `collapsed` streamed and a flame chart whole.
    #[test]
    fn a_debugger_file_of_exactly_the_classified_size_reads_as_streamed() {
        let mut text = "kernel_run 1\n".repeat(80_656);
        text.push_str(&"kernel_run 10\n".repeat(2));
        text.push_str("%interpreter(link) 1");
        assert_eq!(text.len(), 1 << 20);
        let (described, _) = both_paths(&text, ParseOptions::default());
        assert!(
            described.starts_with("kernel_run self=80676 total=80676 calls=80658\n"),
            "{}",
            &described[..200]
        );
    }

    const BOM: &str = "\u{feff}";

    /// Parses `bytes` read `n` bytes at a time (the host's stdin: no whole input).
    fn streamed_bytes(
        bytes: &[u8],
        n: usize,
        opts: ParseOptions,
    ) -> (Result<Profile, PluginError>, Vec<String>) {
        struct Small<'a>(&'a [u8], usize);
        impl std::io::Read for Small<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(self.1).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let mut r = Small(bytes, n);
        let p = parse_pvm(
            &mut Input::from_reader(&mut r),
            &opts,
            &mut Context::with_sink(&mut sink),
        );
        (p, warnings)
    }

    /// A UTF-8 byte-order mark at the start is skipped: the same profile and messages as
    /// without it, whole or streamed (1 and 7 bytes per read), detected or forced, for a
    /// pvmtrace and for the debugger's outputs.
    #[test]
    fn a_byte_order_mark_at_the_start_is_skipped() {
        let chart = "%interpreter(decode) 5\n%interpreter(link) 1\n%interpreter(init) 2\nkernel_run 3\nkernel_run;f 4\n";
        let collapsed =
            "kernel_run 3\nkernel_run;f 4\n%interpreter(decode) 5\n%interpreter(init) 2\n";
        let with_warnings = "PVMTRACE 1\nC 100 f\nC 50 g\nE 60 h\n";
        let comment_first = "# a comment\n\nPVMTRACE 1 time_unit=ns\nC 0 @0 f\nE 5 @10\n";
        for text in [
            SEED,
            chart,
            collapsed,
            with_warnings,
            comment_first,
            "PVMTRACE 1\n",
            "",
        ] {
            let bom = format!("{BOM}{text}");
            for opts in [
                ParseOptions::default(),
                ParseOptions {
                    aggregate: true,
                    ..Default::default()
                },
            ] {
                assert_eq!(both_paths(&bom, opts), both_paths(text, opts), "{text}");
                for n in [1, 2, 3, 4] {
                    let (p, w) = streamed_bytes(bom.as_bytes(), n, opts);
                    let (q, v) = parse_opts(text, opts);
                    assert_eq!(p.map(|p| tree_of(&p)), q.map(|q| tree_of(&q)), "{text}");
                    assert_eq!(w, v, "{text}");
                }
            }
        }
        let detected = |text: &str| {
            parse_opts(text, ParseOptions::default())
                .0
                .unwrap()
                .view()
                .meta("pvm_variant")
                .map(str::to_owned)
        };
        assert_eq!(
            detected(&format!("{BOM}{SEED}")).as_deref(),
            Some("pvmtrace")
        );
        assert_eq!(
            detected(&format!("{BOM}{chart}")).as_deref(),
            Some("octez-flamechart")
        );
        // Forced variants skip it too.
        for (text, variant) in [
            (SEED, InputVariant::Pvmtrace),
            (chart, InputVariant::Debugger(DebuggerVariant::Flamechart)),
            (
                collapsed,
                InputVariant::Debugger(DebuggerVariant::Collapsed),
            ),
        ] {
            let opts = ParseOptions {
                variant: Some(variant),
                ..Default::default()
            };
            assert_eq!(
                both_paths(&format!("{BOM}{text}"), opts),
                both_paths(text, opts)
            );
        }
    }

    /// After a skipped byte-order mark, byte offsets count its 3 bytes, and so do line 1's
    /// columns (bytes from the start of the file); later lines' columns and all line numbers
    /// are unchanged.
    #[test]
    fn positions_after_a_byte_order_mark_count_its_bytes() {
        let at = |text: &str, opts: ParseOptions| {
            let e = parse_opts(text, opts).0.unwrap_err();
            let n = streamed_bytes(text.as_bytes(), 1, opts).0.unwrap_err();
            assert_eq!(e, n, "{text}");
            (e.line, e.column, e.byte_offset)
        };
        let forced = ParseOptions {
            variant: Some(InputVariant::Pvmtrace),
            ..Default::default()
        };
        for (text, opts) in [
            ("PVMTRACE 2\n", ParseOptions::default()),
            ("  PVMTRACE 1 time_unit=s\n", ParseOptions::default()),
            ("PVMTRACE 1\nC x f\n", ParseOptions::default()),
            ("PVMTRACE 1\n  C 1 direct:x\n", ParseOptions::default()),
            ("kernel_run 1x\n", ParseOptions::default()),
            ("kernel_run 1\nkernel_run;f x\n", ParseOptions::default()),
            ("kernel_run 1\n", forced),
        ] {
            let (line, col, off) = at(text, opts);
            let (b_line, b_col, b_off) = at(&format!("{BOM}{text}"), opts);
            assert_eq!(b_line, line, "{text}");
            assert_eq!(b_off, off.map(|o| o + 3), "{text}");
            let want_col = if line == Some(1) {
                col.map(|c| c + 3)
            } else {
                col
            };
            assert_eq!(b_col, want_col, "{text}");
        }
        // Strict mode: a warning made an error, at its line, offset and column.
        let strict = ParseOptions {
            strict: true,
            ..Default::default()
        };
        let text = "PVMTRACE 1\nC 10 f\nC 5 g\n";
        let (line, col, off) = at(text, strict);
        assert_eq!(
            at(&format!("{BOM}{text}"), strict),
            (line, col, off.map(|o| o + 3))
        );
    }

    /// Only the byte-order mark at the very start is skipped: elsewhere it is an error, shown
    /// escaped.
    #[test]
    fn a_byte_order_mark_elsewhere_is_an_error_shown_escaped() {
        for text in [
            format!("PVMTRACE 1\n{BOM}C 0 f\n"),
            format!("{BOM}{BOM}PVMTRACE 1\n"),
        ] {
            let e = parse_opts(
                &text,
                ParseOptions {
                    variant: Some(InputVariant::Pvmtrace),
                    ..Default::default()
                },
            )
            .0
            .unwrap_err();
            assert!(e.message.contains("`\\u{feff}"), "{e}");
            assert!(!e.to_string().contains(BOM), "{e}");
        }
        // Detected: a second mark makes the first line something else than the header, so
        // the input is read as the debugger's output, and fails there.
        let (r, _) = parse_opts(&format!("{BOM}{BOM}{SEED}"), ParseOptions::default());
        let e = r.unwrap_err();
        assert_eq!(
            (e.line, e.column, e.byte_offset),
            (Some(2), Some(5), Some(21))
        );
        assert!(
            e.message
                .starts_with("expected `<stack> <ticks>` (the debugger's profile output)"),
            "{e}"
        );
    }

    /// UTF-16 text (with or without its byte-order mark) is an error whose message holds no
    /// raw NUL or control byte.
    #[test]
    fn utf16_input_is_an_error_without_raw_nuls() {
        let utf16 = |text: &str, bom: bool| -> Vec<u8> {
            let mut out = if bom { vec![0xFF, 0xFE] } else { Vec::new() };
            out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            out
        };
        let forced = ParseOptions {
            variant: Some(InputVariant::Pvmtrace),
            ..Default::default()
        };
        let chart = "kernel_run 1\nkernel_run;f 2\n";
        for input in [
            utf16(SEED, true),
            utf16(SEED, false),
            utf16(chart, true),
            utf16(chart, false),
        ] {
            for opts in [ParseOptions::default(), forced] {
                for e in [
                    parse_pvm(
                        &mut Input::from_slice(&input),
                        &opts,
                        &mut Context::silent(),
                    )
                    .unwrap_err(),
                    streamed_bytes(&input, 3, opts).0.unwrap_err(),
                ] {
                    let msg = e.to_string();
                    assert!(!msg.chars().any(|c| c.is_control()), "{msg:?}");
                    if input.starts_with(&[0xFF, 0xFE]) {
                        assert!(msg.contains("UTF-16 LE"), "{msg}");
                        assert_eq!(
                            (e.line, e.column, e.byte_offset),
                            (Some(1), Some(1), Some(0))
                        );
                    }
                }
            }
        }
        // Without the mark, forced: the header error quotes the line with its NULs escaped.
        let e = parse_pvm(
            &mut Input::from_slice(&utf16(SEED, false)),
            &forced,
            &mut Context::silent(),
        )
        .unwrap_err();
        assert!(e.message.contains("`P\\0V\\0M\\0"), "{e}");
        assert_eq!(sniff(&utf16(SEED, true)), 0);
        assert_eq!(sniff(&utf16(SEED, false)), 0);
    }

    #[test]
    fn sniffing_skips_a_byte_order_mark() {
        let bom = |text: &str| format!("{BOM}{text}");
        assert_eq!(sniff(bom("PVMTRACE 1\n").as_bytes()), 95);
        assert_eq!(sniff(bom("# c\nPVMTRACE 1\nC 0 f\n").as_bytes()), 95);
        assert_eq!(
            sniff(bom("%interpreter(decode) 1\n%interpreter(init) 2\nkernel_run;a 3\n").as_bytes()),
            85
        );
        assert_eq!(sniff(bom("kernel_run 1\nkernel_run;f 2\n").as_bytes()), 75);
        assert_eq!(sniff(bom("main;f 1\n").as_bytes()), 0);
        assert_eq!(sniff(BOM.as_bytes()), 0);
        // A head cut inside the mark, or a mark that is not at the start: not a trace.
        assert_eq!(sniff(b"\xEF\xBBPVMTRACE 1\n"), 0);
        assert_eq!(sniff(bom(&bom("PVMTRACE 1\n")).as_bytes()), 0);
    }

    #[test]
    fn sniff_scores() {
        assert_eq!(sniff(b"PVMTRACE 1\n"), 95);
        assert_eq!(sniff(b"  # c\n\nPVMTRACE 1 source=x\n"), 95);
        // Spec B.8.1: a first meaningful line that starts with `PVMTRACE` is a trace; a typo in
        // the rest of the header is the header's error (it read as the debugger's output).
        assert_eq!(sniff(b"PVMTRACEX\n"), 95);
        assert_eq!(
            sniff(b"%interpreter(decode) 1\n%interpreter(init) 2\nkernel_run;a 3\n"),
            85
        );
        assert_eq!(sniff(b"kernel_run 1\nkernel_run;f 2\n"), 75);
        assert_eq!(sniff(b"main;f 1\n"), 0);
        assert_eq!(sniff(b"kernel_run 1\nnot a line\n"), 0);
        assert_eq!(sniff(b""), 0);
        // A glued collapsed line is repaired before it is judged.
        assert_eq!(sniff(b"kernel_run;w 30%interpreter(decode) 35948\n"), 85);
    }

    /// A first line longer than the head (a call 90 levels deep of 200-byte names) is judged by
    /// its first frame: a weak 6 for the PVM's toplevel frames, above the folded sniffer's 5
    /// for any long line with a `;` (it was read as plain folded, its calls and runs lost).
    #[test]
    fn a_first_line_longer_than_the_head_is_judged_by_its_first_frame() {
        let deep = |root: &str| {
            let frames: String = (0..90)
                .map(|i| format!(";{}{i}", "f".repeat(200)))
                .collect();
            format!("{root}{frames} 5\n").into_bytes()[..16 * 1024].to_vec()
        };
        assert_eq!(sniff(&deep("kernel_run")), 6);
        assert_eq!(sniff(&deep("%interpreter(decode)")), 6);
        assert_eq!(sniff(&deep("main")), 0);
        assert_eq!(sniff(&deep("kernel_run_x")), 0);
    }
}
