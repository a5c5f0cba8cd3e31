//! The files the Octez debugger's `profile` command writes (spec A.2, B.8): `<stack> <ticks>`
//! lines, either one per call in time order (the default, a flame chart) or merged per run and
//! sorted (`--collapsed`, with no newline between runs). The variant is told from the first
//! megabyte of lines; the whole input is then read in one streaming pass.

use crate::ParseOptions;
use crate::lines::Lines;
use crate::model::{At, Cols, Diag, Kind, Model, Warn, latin1_or_utf8};
use memchr::memmem;
use nom::Parser;
use nom::character::complete::digit1;
use nom::combinator::all_consuming;
use profconv_plugin::ir::{NONE, Profile, ValueKind};
use profconv_plugin::{Context, MAX_VALUE, PluginError, too_large};

/// Bytes of input looked at to tell the variant.
const CLASSIFY_BYTES: usize = 1 << 20;
/// The debugger's hard-coded `max_depth` is 100, so a line has at most 101 frames.
const DEBUGGER_MAX_FRAMES: usize = 101;

/// Which debugger output a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Default `profile` output: one line per call, in time order (pre-order per run).
    Flamechart,
    /// `profile --collapsed`: per run, stacks merged and sorted; runs glued together.
    Collapsed,
    /// Folded stacks in no particular order (read like collapsed; no runs guessed).
    Folded,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Flamechart => "octez-flamechart",
            Variant::Collapsed => "octez-collapsed",
            Variant::Folded => "folded",
        }
    }
}

const INTERPRETER: &[u8] = b"%interpreter(";

/// Splits a line where the debugger's `--collapsed` output glued two runs together: after
/// ` <digits>` directly followed by `%interpreter(` (spec B.8 step 2). Appends the pieces'
/// start offsets to `cuts` (the first piece starts at 0).
pub(crate) fn glue_cuts(line: &[u8], cuts: &mut Vec<usize>) {
    cuts.clear();
    cuts.push(0);
    for p in memmem::find_iter(line, INTERPRETER) {
        let mut q = p;
        while q > 0 && line[q - 1].is_ascii_digit() {
            q -= 1;
        }
        if q < p && q > 0 && line[q - 1] == b' ' {
            cuts.push(p);
        }
    }
}

/// `<stack> <ticks>`: split at the last space; ticks are decimal digits.
pub(crate) fn entry(piece: &[u8]) -> Option<(&[u8], u64)> {
    let sp = memchr::memrchr(b' ', piece)?;
    let (stack, ticks) = (&piece[..sp], &piece[sp + 1..]);
    if stack.is_empty() {
        return None;
    }
    let (_, digits) = all_consuming(digit1::<&[u8], ()>).parse(ticks).ok()?;
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some((stack, v))
}

/// Whether `line` starts like a pvmtrace record: a record name, blanks, then a tick (digits or
/// `+digits`).
fn looks_like_record(line: &[u8]) -> bool {
    let Some(sp) = line.iter().position(|&c| c == b' ' || c == b'\t') else {
        return false;
    };
    let rest = line[sp..].trim_ascii_start();
    let rest = rest.strip_prefix(b"+").unwrap_or(rest);
    matches!(
        &line[..sp],
        b"N" | b"C" | b"E" | b"X" | b"R" | b"T" | b"SB" | b"SE"
    ) && rest.first().is_some_and(u8::is_ascii_digit)
}

/// Trailing spaces, tabs and CR removed.
pub(crate) fn trim_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b' ' | b'\t' | b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// True when the stack `text` has the previous line's stack as its caller chain: every frame
/// but its last is the previous line's first frames (spec B.8 step 3).
fn continues(prev: &[u8], text: &[u8]) -> bool {
    match memchr::memrchr(b';', text) {
        None => true,
        Some(i) => {
            let parent = &text[..i];
            prev.len() >= parent.len()
                && &prev[..parent.len()] == parent
                && (prev.len() == parent.len() || prev[parent.len()] == b';')
        }
    }
}

/// Tells the variant from complete lines (spec B.8 step 3).
pub(crate) fn classify(text: &[u8]) -> Variant {
    let mut cuts = Vec::new();
    let (mut link, mut init) = (None, None);
    let (mut sorted, mut preorder) = (true, true);
    let mut prev: &[u8] = &[];
    let mut n = 0usize;
    for line in text.split(|&c| c == b'\n') {
        let line = trim_end(line);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        glue_cuts(line, &mut cuts);
        for k in 0..cuts.len() {
            let piece = &line[cuts[k]..cuts.get(k + 1).copied().unwrap_or(line.len())];
            let Some((stack, _)) = entry(trim_end(piece)) else {
                continue;
            };
            if stack == b"%interpreter(link)" {
                link.get_or_insert(n);
            } else if stack == b"%interpreter(init)" {
                init.get_or_insert(n);
            }
            if n > 0 {
                sorted &= prev <= stack;
                preorder &= continues(prev, stack);
            } else {
                preorder &= memchr::memchr(b';', stack).is_none();
            }
            prev = stack;
            n += 1;
        }
    }
    match (link, init) {
        (Some(l), Some(i)) if l < i => Variant::Flamechart,
        (Some(_), Some(_)) => Variant::Collapsed,
        _ if sorted => Variant::Collapsed,
        _ if preorder => Variant::Flamechart,
        _ => Variant::Folded,
    }
}

struct Reader {
    m: Model,
    diag: Diag,
    variant: Variant,
    /// The variant was given (`-O variant=`), not told from the first lines.
    forced: bool,
    cols: Cols,
    /// The previous entry's stack text, and per frame of it (end offset, stack id).
    prev: Vec<u8>,
    prev_frames: Vec<(usize, u32)>,
    /// Ordered mode: ticks before the current line (the flame chart's x axis).
    elapsed: i64,
    entries: u64,
    row: Vec<i64>,
    warned_depth: bool,
}

impl Reader {
    fn err(&self, no: u64, offset: u64, col: usize, msg: impl Into<String>) -> PluginError {
        PluginError::invalid_input(msg)
            .at_offset(offset + col as u64)
            .at_line(no, col as u64 + 1)
    }

    /// One `<stack> <ticks>` entry that starts at column `col` of line `no`.
    fn entry(
        &mut self,
        piece: &[u8],
        no: u64,
        offset: u64,
        col: usize,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        let Some((text, ticks)) = entry(piece) else {
            // A pvmtrace without its header (`C 0 kernel_run` as the first line) is told
            // apart only by that header: say so rather than only what a debugger line is.
            let hint = if self.entries == 0 && looks_like_record(piece) {
                "; if this is a pvmtrace, its first line that is not blank or a comment must be \
                 the `PVMTRACE 1` header"
            } else {
                ""
            };
            let (why, at) = match memchr::memrchr(b' ', piece) {
                None => ("no space before the tick count", piece.len()),
                Some(0) => ("an empty stack", 0),
                // Digits past 64 bits: a count too large, as one past 2^63-1 is.
                Some(sp)
                    if sp + 1 < piece.len() && piece[sp + 1..].iter().all(u8::is_ascii_digit) =>
                {
                    let count = String::from_utf8_lossy(&piece[sp + 1..]);
                    let msg = too_large(format_args!("tick count {count}"), MAX_VALUE);
                    return Err(self.err(no, offset, col + sp + 1, format!("{msg}{hint}")));
                }
                Some(sp) => (
                    "the text after the last space is not a tick count (decimal digits that fit in 64 bits)",
                    sp + 1,
                ),
            };
            return Err(self.err(
                no,
                offset,
                col + at,
                format!("expected `<stack> <ticks>` (the debugger's profile output): {why}{hint}"),
            ));
        };
        let ticks = i64::try_from(ticks).map_err(|_| {
            // At the count: after the entry's last space.
            let at = memchr::memrchr(b' ', piece).map_or(0, |sp| sp + 1);
            self.err(
                no,
                offset,
                col + at,
                too_large(format_args!("tick count {ticks}"), MAX_VALUE),
            )
        })?;
        let flamechart = self.variant == Variant::Flamechart;
        // The first line has no caller to continue: it is a toplevel call (spec B.8 step 4: the
        // chain is popped to the line's depth - 1, which must be there).
        if flamechart && !continues(&self.prev, text) {
            let what = if self.entries == 0 {
                "the first line of a flame chart is a toplevel call (one frame), not a callee of calls the file does not have"
            } else {
                "this line does not continue the call tree in pre-order (its callers are not the previous line's)"
            };
            return Err(self.err(
                no,
                offset,
                col,
                format!(
                    "{what}; the input was read as the debugger's flame chart output {}: use -O variant=folded to read it as merged stacks",
                    if self.forced { "(-O variant=flamechart)" } else { "from its first lines" }
                ),
            ));
        }
        let is_top = memchr::memchr(b';', text).is_none();
        if self.entries > 0 {
            let new_run = match self.variant {
                Variant::Flamechart => is_top && text == b"%interpreter(decode)",
                Variant::Collapsed => text < self.prev.as_slice(),
                Variant::Folded => false,
            };
            if new_run {
                self.m.runs.push(Default::default());
            }
        }
        self.m.ensure_thread();
        let stack = self.stack(text, no, offset, cx)?;
        let frames = self.prev_frames.len();
        if frames == DEBUGGER_MAX_FRAMES && !self.warned_depth {
            self.warned_depth = true;
            self.diag.warn(cx, Warn::MaxDepth, At::line(no, offset), || {
                (format!("a stack of exactly {DEBUGGER_MAX_FRAMES} frames: the debugger leaves out calls deeper than 100 levels (with their ticks)"), "some may be missing".into())
            })?;
        }
        self.row[self.cols.ticks] = ticks;
        let run = self.m.run();
        self.m.runs[run].calls += 1;
        let b = &mut self.m.b;
        if let Some(c) = self.cols.calls {
            self.row[c] = 1;
        }
        if self.m.ordered {
            b.push_sample(stack, Some(self.elapsed), &self.row);
            self.elapsed = self.elapsed.checked_add(ticks).ok_or_else(|| {
                PluginError::invalid_input("the sum of the tick counts does not fit in 64 bits")
                    .at_line(no, col as u64 + 1)
            })?;
        } else {
            b.add_to_stack(stack, &self.row)
                .map_err(|e| self.err(no, offset, col, format!("sum of tick counts: {e}")))?;
        }
        self.entries += 1;
        Ok(())
    }

    /// The stack id of `text` (`a;b;c`), reusing the previous entry's frames it shares.
    fn stack(
        &mut self,
        text: &[u8],
        no: u64,
        offset: u64,
        cx: &mut Context<'_>,
    ) -> Result<u32, PluginError> {
        let common = text
            .iter()
            .zip(&self.prev)
            .take_while(|(a, b)| a == b)
            .count();
        let mut keep = 0;
        for &(end, _) in &self.prev_frames {
            if end <= common && (end == text.len() || text[end] == b';') {
                keep += 1;
            } else {
                break;
            }
        }
        self.prev_frames.truncate(keep);
        let (mut stack, mut pos) = match self.prev_frames.last() {
            Some(&(end, s)) => (s, end + 1),
            None => (NONE, 0),
        };
        while pos <= text.len() {
            let end = memchr::memchr(b';', &text[pos..]).map_or(text.len(), |i| pos + i);
            let (name, lossy) = latin1_or_utf8(&text[pos..end]);
            if lossy {
                self.diag
                    .warn(cx, Warn::NotUtf8, At::line(no, offset), || {
                        (
                            "a frame name that is not UTF-8".into(),
                            "read as Latin-1, as the debugger writes names".into(),
                        )
                    })?;
            }
            let kind = Kind::of_display(&name);
            let frame = self.m.frames.named(&mut self.m.b, &name, kind);
            stack = self.m.b.stack(stack, frame);
            self.prev_frames.push((end, stack));
            pos = end + 1;
        }
        self.prev.clear();
        self.prev.extend_from_slice(text);
        Ok(stack)
    }
}

/// Reads a debugger output file from `lines`.
pub(crate) fn parse_octez(
    lines: &mut Lines<'_, '_>,
    forced: Option<Variant>,
    opts: &ParseOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let variant = match forced {
        Some(v) => v,
        None => {
            // One byte more than is classified: a stream holding exactly that much must look for its
            // end, as a mapped input knows it, or its last line would be taken for a cut one.
            let (peeked, eof) = lines.peek(CLASSIFY_BYTES + 1)?;
            // `peek` gives a whole input held in memory (a mapped file) at once: only its first
            // MiB is read, as of a stream, so a file, a pipe and a `.gz` of the same bytes are
            // read alike, and a large file is not read twice (nor held whole in memory).
            let head = &peeked[..peeked.len().min(CLASSIFY_BYTES)];
            let complete = if eof && head.len() == peeked.len() {
                head
            } else {
                match memchr::memrchr(b'\n', head) {
                    Some(i) => &head[..i],
                    None => head,
                }
            };
            classify(complete)
        }
    };
    let ordered = variant == Variant::Flamechart && !opts.aggregate;
    let mut m = Model::new(ordered);
    let ticks = m.b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = (variant == Variant::Flamechart)
        .then(|| m.b.add_value_type("calls", "count", ValueKind::Count));
    m.meta.push(("source_format".into(), "pvm".into()));
    m.meta.push(("pvm_variant".into(), variant.name().into()));
    if calls.is_none() {
        // Merged stacks: calls happened, but how many is lost.
        m.meta.push(("calls".into(), "unknown".into()));
    }
    let n = m.b.n_value_types();
    let mut r = Reader {
        m,
        diag: Diag::new(opts.strict),
        variant,
        forced: forced.is_some(),
        cols: Cols {
            ticks,
            calls,
            time: None,
        },
        prev: Vec::new(),
        prev_frames: Vec::new(),
        elapsed: 0,
        entries: 0,
        row: vec![0; n],
        warned_depth: false,
    };
    let mut cuts = Vec::new();
    let mut glued = 0u64;
    let mut first_glued = 0;
    while let Some(line) = lines.next_line()? {
        let text = trim_end(line.bytes);
        if text.is_empty() || text[0] == b'#' {
            continue;
        }
        glue_cuts(text, &mut cuts);
        if cuts.len() > 1 {
            if glued == 0 {
                first_glued = line.no;
            }
            glued += cuts.len() as u64 - 1;
        }
        // Offsets and columns from the line's start, a byte-order mark skipped before line 1's
        // bytes included.
        let (line_start, col0) = (line.offset - line.col0, line.col0 as usize);
        for k in 0..cuts.len() {
            let start = cuts[k];
            let end = cuts.get(k + 1).copied().unwrap_or(text.len());
            r.entry(
                trim_end(&text[start..end]),
                line.no,
                line_start,
                col0 + start,
                cx,
            )?;
        }
    }
    if glued > 0 {
        // The normal layout of the real debugger's --collapsed output with several runs: a
        // note, not a warning.
        cx.info(&format!(
            "line {}: {glued} line(s) held two runs glued together (the debugger's --collapsed output has no newline between runs); split after the tick count",
            first_glued
        ));
    }
    let cols = r.cols;
    r.diag.summarize(cx);
    let mut diag = r.diag;
    r.m.finish(Some(cols), false, false, &mut diag, cx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glued_runs_are_cut_after_the_digits() {
        let mut cuts = Vec::new();
        let line = b"kernel_run;kernel_loop;write_debug 30%interpreter(decode) 35948";
        glue_cuts(line, &mut cuts);
        assert_eq!(cuts, vec![0, 37]);
        assert_eq!(
            entry(&line[37..]),
            Some((&b"%interpreter(decode)"[..], 35948))
        );
        glue_cuts(b"a;%interpreter(x) 5", &mut cuts);
        assert_eq!(cuts, vec![0], "not after ` <digits>`");
        glue_cuts(b"f 1%interpreter(a) 2%interpreter(b) 3", &mut cuts);
        assert_eq!(cuts, vec![0, 3, 20]);
    }

    #[test]
    fn entries_split_at_the_last_space() {
        assert_eq!(entry(b"a b;c 12"), Some((&b"a b;c"[..], 12)));
        assert_eq!(entry(b"a 1x"), None);
        assert_eq!(entry(b" 5"), None);
        assert_eq!(entry(b"a"), None);
        assert_eq!(entry(b"a 99999999999999999999999"), None);
    }

    #[test]
    fn variants() {
        let chart =
            b"%interpreter(decode) 1\n%interpreter(link) 1\n%interpreter(init) 1\nkernel_run 1\n";
        assert_eq!(classify(chart), Variant::Flamechart);
        let coll =
            b"%interpreter(decode) 1\n%interpreter(init) 1\n%interpreter(link) 1\nkernel_run 1\n";
        assert_eq!(classify(coll), Variant::Collapsed);
        assert_eq!(classify(b"a 1\na;b 2\na;c 3\n"), Variant::Collapsed);
        assert_eq!(
            classify(b"k 1\nk;f 2\nk;f;f 3\nk;f 1\nk 1\n"),
            Variant::Flamechart
        );
        assert_eq!(classify(b"k 1\nk;f;g 2\nb 1\n"), Variant::Folded);
    }
}
