//! Folded parser: blocks of input, lines found with memchr, counts parsed with nom, frames
//! interned once, and each line's stack reusing the previous line's common prefix (inputs are
//! often sorted, and collapsers emit related stacks together), so shared leading frames cost a
//! byte comparison instead of a hash lookup.

use memchr::{memchr, memrchr2};
use nom::bytes::complete::tag;
use nom::character::complete::{digit0, digit1};
use nom::combinator::{all_consuming, opt};
use nom::sequence::preceded;
use nom::{IResult, Parser};
use profconv_plugin::ir::{NONE, Profile, ProfileBuilder, ValueKind};
use profconv_plugin::{Context, Input, PluginError};
use std::io::Read;

/// Most fractional digits kept exactly; more are truncated (with a warning).
const MAX_DECIMALS: u32 = 9;
/// Bytes asked of the input per read.
const BLOCK: usize = 1 << 20;

/// A count's integer digits and, if any, its fraction digits.
type CountDigits<'a> = (&'a [u8], Option<&'a [u8]>);

/// `123` or `123.45` (inferno accepts decimal counts).
fn count(i: &[u8]) -> IResult<&[u8], CountDigits<'_>> {
    all_consuming((digit1, opt(preceded(tag(&b"."[..]), digit0)))).parse(i)
}

struct Parser_ {
    b: ProfileBuilder,
    skip_bad_lines: bool,
    /// The previous line's stack text, and for each of its frames (end offset, stack id).
    prev: Vec<u8>,
    prev_frames: Vec<(usize, u32)>,
    line_no: u64,
    /// Input offset of the current line after its leading whitespace, and that whitespace.
    line_offset: u64,
    lead: usize,
    seen_data: bool,
    skipped: u64,
    stackless: u64,
    lossy: u64,
    truncated_fraction: bool,
}

impl Parser_ {
    /// An error at byte `idx` of the current line (after its leading whitespace).
    fn error(&self, idx: usize, msg: String) -> PluginError {
        PluginError::invalid_input(msg)
            .at_offset(self.line_offset + idx as u64)
            .at_line(self.line_no, (self.lead + idx) as u64 + 1)
    }

    /// One line without its `\n`; `offset` is the input offset of its first byte.
    fn line(
        &mut self,
        mut line: &[u8],
        offset: u64,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        self.line_no += 1;
        let end = line
            .iter()
            .rposition(|c| !c.is_ascii_whitespace())
            .map_or(0, |p| p + 1);
        line = &line[..end];
        self.lead = line
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .unwrap_or(line.len());
        line = &line[self.lead..];
        self.line_offset = offset + self.lead as u64;
        // Blank lines, and `#` comment lines (austin and other tools write metadata so).
        if line.is_empty() || line[0] == b'#' {
            return Ok(());
        }
        let (stack_text, value) = match self.split_count(line) {
            Ok(Some(v)) => v,
            Ok(None) => {
                // A count with no stack (py-spy writes these): nothing to attribute it to.
                self.stackless += 1;
                if self.stackless == 1 {
                    cx.warn(&format!(
                        "line {}: a count without a stack was skipped",
                        self.line_no
                    ));
                }
                return Ok(());
            }
            Err(e) if self.skip_bad_lines => {
                self.skipped += 1;
                if self.skipped <= 5 {
                    cx.warn(&format!("skipped {e}"));
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if !std::mem::replace(&mut self.seen_data, true) && looks_differential(stack_text) {
            cx.warn(&format!(
                "line {}: this looks like a differential file (two counts per line); only the last count is read",
                self.line_no
            ));
        }
        let stack = self.stack(stack_text, cx);
        self.b
            .add_to_stack(stack, &[value])
            .map_err(|e| self.error(0, format!("sum of counts: {e}")))
    }

    /// Splits `STACK COUNT` into the stack text and the count as fixed point; `None` for a
    /// count with no stack.
    fn split_count<'l>(&mut self, line: &'l [u8]) -> Result<Option<(&'l [u8], i64)>, PluginError> {
        let (stack_end, col) = match memrchr2(b' ', b'\t', line) {
            Some(sp) => {
                let stack_end = line[..sp]
                    .iter()
                    .rposition(|c| !c.is_ascii_whitespace())
                    .map_or(0, |p| p + 1);
                (stack_end, sp + 1)
            }
            None if count(line).is_ok() => return Ok(None),
            None => {
                return Err(self.error(
                    line.len(),
                    "expected `STACK COUNT`: the line has no count after the stack".into(),
                ));
            }
        };
        let token = &line[col..];
        let Ok((_, (int, frac))) = count(token) else {
            return Err(self.error(
                col,
                format!(
                    "expected a count (digits, optionally with a decimal point) at the end of the line, found `{}`",
                    String::from_utf8_lossy(&token[..token.len().min(40)])
                ),
            ));
        };
        if stack_end == 0 {
            return Ok(None);
        }
        let mut frac = frac.unwrap_or(b"");
        while let [rest @ .., b'0'] = frac {
            frac = rest;
        }
        if frac.len() as u32 > MAX_DECIMALS {
            frac = &frac[..MAX_DECIMALS as usize];
            self.truncated_fraction = true;
        }
        let want = frac.len() as u32;
        if want > self.b.decimals(0) {
            self.b.rescale(0, want).map_err(|e| {
                self.error(
                    col,
                    format!("this count needs {want} decimals, and the counts so far do not fit in 64 bits at that scale: {e}"),
                )
            })?;
        }
        let decimals = self.b.decimals(0);
        let overflow = || self.error(col, "count does not fit in 64 bits".into());
        let mut v: i64 = 0;
        for &d in int {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add((d - b'0') as i64))
                .ok_or_else(overflow)?;
        }
        for k in 0..decimals as usize {
            let d = frac.get(k).map_or(0, |d| (d - b'0') as i64);
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(d))
                .ok_or_else(overflow)?;
        }
        Ok(Some((&line[..stack_end], v)))
    }

    /// Adds the frames of `rest` (which starts at offset `pos` of the line) under `stack`.
    fn push_frames(&mut self, rest: &str, pos: usize, mut stack: u32) -> u32 {
        let bytes = rest.as_bytes();
        let mut start = 0;
        loop {
            let end = memchr(b';', &bytes[start..]).map_or(bytes.len(), |i| start + i);
            // `;` is ASCII, so these are character boundaries.
            let func = self.b.func(&rest[start..end]);
            let frame = self.b.frame(func);
            stack = self.b.stack(stack, frame);
            self.prev_frames.push((pos + end, stack));
            if end == bytes.len() {
                return stack;
            }
            start = end + 1;
        }
    }

    /// The stack id of `text` (`a;b;c`), reusing the previous line's frames it shares.
    fn stack(&mut self, text: &[u8], cx: &mut Context<'_>) -> u32 {
        let common = common_prefix(&self.prev, text);
        let mut keep = 0;
        for &(end, _) in &self.prev_frames {
            if end <= common && (end == text.len() || text[end] == b';') {
                keep += 1;
            } else {
                break;
            }
        }
        self.prev_frames.truncate(keep);
        let (mut stack, pos) = match self.prev_frames.last() {
            Some(&(end, s)) => (s, end + 1),
            None => (NONE, 0),
        };
        if pos <= text.len() {
            // Validate the new part of the line once rather than frame by frame.
            match std::str::from_utf8(&text[pos..]) {
                Ok(rest) => stack = self.push_frames(rest, pos, stack),
                Err(_) => {
                    self.lossy += 1;
                    if self.lossy == 1 {
                        cx.warn(&format!(
                            "line {}: frame names that are not UTF-8; invalid bytes are replaced with U+FFFD",
                            self.line_no
                        ));
                    }
                    // Split the raw bytes so frame offsets still match `text`.
                    let mut at = pos;
                    for raw in text[pos..].split(|&c| c == b';') {
                        let name = String::from_utf8_lossy(raw);
                        let frame = {
                            let f = self.b.func(&name);
                            self.b.frame(f)
                        };
                        stack = self.b.stack(stack, frame);
                        at += raw.len();
                        self.prev_frames.push((at, stack));
                        at += 1;
                    }
                }
            }
        }
        self.prev.clear();
        self.prev.extend_from_slice(text);
        stack
    }
}

/// True when the stack text ends in ` NUMBER`: the first of two counts (inferno's differential
/// folded format, `stack before after`).
fn looks_differential(stack: &[u8]) -> bool {
    match memrchr2(b' ', b'\t', stack) {
        Some(sp) => count(&stack[sp + 1..]).is_ok(),
        None => false,
    }
}

/// Length of the common prefix of `a` and `b`, eight bytes at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_ne_bytes(a[i..i + 8].try_into().unwrap_or([0; 8]));
        let y = u64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if x != y {
            break;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Parses folded stacks from `input`.
pub fn parse_folded(
    input: &mut Input<'_>,
    skip_bad_lines: bool,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_meta("source_format", "folded");
    let mut p = Parser_ {
        b,
        skip_bad_lines,
        prev: Vec::new(),
        prev_frames: Vec::new(),
        line_no: 0,
        line_offset: 0,
        lead: 0,
        seen_data: false,
        skipped: 0,
        stackless: 0,
        lossy: 0,
        truncated_fraction: false,
    };
    if let Some(whole) = input.whole() {
        let mut offset = 0u64;
        for line in whole.split(|&c| c == b'\n') {
            p.line(line, offset, cx)?;
            offset += line.len() as u64 + 1;
        }
        // `split` yields one empty piece after a final newline: it was counted as a line.
        if whole.last() == Some(&b'\n') {
            p.line_no -= 1;
        }
    } else {
        let mut buf = vec![0u8; BLOCK];
        let (mut start, mut end) = (0usize, 0usize);
        let mut offset = 0u64; // input offset of buf[start]
        loop {
            if end == buf.len() {
                if start > 0 {
                    buf.copy_within(start..end, 0);
                    end -= start;
                    start = 0;
                } else {
                    // A line longer than the buffer: grow (bounded by the line, not the input).
                    buf.resize(buf.len() * 2, 0);
                }
            }
            let n = input.read(&mut buf[end..])?;
            if n == 0 {
                if start < end {
                    let line = &buf[start..end];
                    p.line(line, offset, cx)?;
                }
                break;
            }
            let scan_from = end;
            end += n;
            let mut search = scan_from;
            while let Some(i) = memchr(b'\n', &buf[search..end]) {
                let nl = search + i;
                p.line(&buf[start..nl], offset, cx)?;
                offset += (nl + 1 - start) as u64;
                start = nl + 1;
                search = start;
            }
        }
    }
    if p.skipped > 0 {
        cx.warn(&format!(
            "skipped {} line(s) without a valid count",
            p.skipped
        ));
    }
    if p.stackless > 1 {
        cx.warn(&format!(
            "{} counts without a stack were skipped in all",
            p.stackless
        ));
    }
    if p.truncated_fraction {
        cx.warn(&format!(
            "counts with more than {MAX_DECIMALS} decimals were truncated"
        ));
    }
    Ok(p.b.finish())
}

/// Confidence that `head` is folded stacks: every complete line ends in a count.
pub fn sniff(head: &[u8]) -> u32 {
    if head.is_empty() || memchr(0, head).is_some() {
        return 0;
    }
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..i],
        None if head.len() < 4096 => head,
        None => return 0,
    };
    let (mut good, mut with_semicolon) = (0, 0);
    for line in complete.split(|&c| c == b'\n').take(64) {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let Some(sp) = memrchr2(b' ', b'\t', line) else {
            if count(line).is_ok() {
                continue; // a count without a stack (py-spy): the parser skips it too
            }
            return 0;
        };
        if count(&line[sp + 1..]).is_err() || line[..sp].trim_ascii().is_empty() {
            return 0;
        }
        good += 1;
        if memchr(b';', &line[..sp]).is_some() {
            with_semicolon += 1;
        }
    }
    match (good, with_semicolon) {
        (0, _) => 0,
        (_, 0) => 30,
        _ => 70,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::{CallTree, TreeOrder, TreeTextOptions, render_tree};

    fn parse(text: &[u8], skip: bool) -> Result<Profile, PluginError> {
        parse_folded(&mut Input::from_slice(text), skip, &mut Context::silent())
    }

    fn parse_streaming(text: &[u8]) -> Result<Profile, PluginError> {
        let mut r: &[u8] = text;
        parse_folded(
            &mut Input::from_reader(&mut r),
            false,
            &mut Context::silent(),
        )
    }

    fn tree(p: &Profile) -> String {
        let t = CallTree::build(&p.view()).unwrap();
        render_tree(
            &p.view(),
            &t,
            &TreeTextOptions {
                order: TreeOrder::FirstSeen,
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn sums_repeats_and_reuses_prefixes() {
        let p = parse(b"a;b;c 1\na;b;d 2\r\n\n  \na;b;c 3\na 4\nx;b 1\n", false).unwrap();
        assert_eq!(
            tree(&p),
            "a self=4 total=10\n  b self=0 total=6\n    c self=0 total=4\n    d self=0 total=2\nx self=0 total=1\n  b self=0 total=1\n"
                .replace("c self=0 total=4", "c self=4 total=4")
                .replace("d self=0 total=2", "d self=2 total=2")
                .replace("  b self=0 total=1", "  b self=1 total=1")
        );
        assert_eq!(p.stacks.prefix.len(), 6);
    }

    #[test]
    fn prefix_reuse_respects_frame_boundaries() {
        // `ab` shares the bytes of `a` but is another frame.
        let p = parse(b"a;b 1\nab;b 1\na 1\na;bc 1\n", false).unwrap();
        assert_eq!(
            tree(&p),
            "a self=1 total=3\n  b self=1 total=1\n  bc self=1 total=1\nab self=0 total=1\n  b self=1 total=1\n"
        );
    }

    #[test]
    fn streaming_and_whole_input_agree_across_block_boundaries() {
        let mut text = Vec::new();
        for i in 0..200_000 {
            text.extend_from_slice(format!("root;f{};g{} {}\n", i % 13, i % 7, i % 5).as_bytes());
        }
        text.extend_from_slice(b"root;last 9"); // no final newline
        let a = tree(&parse(&text, false).unwrap());
        let b = tree(&parse_streaming(&text).unwrap());
        assert_eq!(a, b);
        assert!(a.contains("last self=9"));
    }

    #[test]
    fn decimal_counts_are_exact_fixed_point() {
        let p = parse(b"a;b 31.23\na;c 6.1\na;b 1.4\na 2.0\n", false).unwrap();
        assert_eq!(p.value_types[0].decimals, 2);
        assert_eq!(
            tree(&p),
            "a self=2.00 total=40.73\n  b self=32.63 total=32.63\n  c self=6.10 total=6.10\n"
        );
    }

    #[test]
    fn errors_name_line_column_and_offset() {
        let e = parse(b"a;b 1\nTHIS IS A BAD LINE\n", false).unwrap_err();
        assert_eq!(e.line, Some(2));
        assert_eq!(e.column, Some(15), "the column of the token `LINE`");
        assert_eq!(e.byte_offset, Some(20));
        assert!(e.message.contains("expected a count"), "{e}");
        let e = parse(b"a;b 1\na;b;c\n", false).unwrap_err();
        assert!(e.message.contains("no count"), "{e}");
        assert_eq!(
            (e.line, e.column, e.byte_offset),
            (Some(2), Some(6), Some(11))
        );
        let e = parse(b"  x;y 1\n  bad\n", false).unwrap_err();
        assert_eq!(
            (e.line, e.column, e.byte_offset),
            (Some(2), Some(6), Some(13))
        );
        let e = parse(b"a 99999999999999999999\n", false).unwrap_err();
        assert!(e.message.contains("64 bits"), "{e}");
        let e = parse(b"a 9223372036854775807\na 1\n", false).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let p = parse_folded(
            &mut Input::from_slice(b"a 1\n   5\n  b 2\n"),
            false,
            &mut Context::with_sink(&mut sink),
        )
        .unwrap();
        assert_eq!(
            tree(&p),
            "a self=1 total=1\nb self=2 total=2\n",
            "leading blanks trimmed"
        );
        assert!(
            warnings[0].contains("line 2: a count without a stack"),
            "{warnings:?}"
        );
        let e = parse_streaming(b"ok 1\nbad -1\n").unwrap_err();
        assert_eq!((e.line, e.byte_offset), (Some(2), Some(9)));
    }

    #[test]
    fn skip_bad_lines_warns_instead() {
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let p = parse_folded(
            &mut Input::from_slice(b"a 1\nBAD LINE\nb 2\n"),
            true,
            &mut Context::with_sink(&mut sink),
        )
        .unwrap();
        assert_eq!(p.samples.stack.len(), 2);
        assert!(
            warnings.iter().any(|w| w.contains("line 2")),
            "{warnings:?}"
        );
    }

    #[test]
    fn non_utf8_names_are_lossy_with_a_warning() {
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let p = parse_folded(
            &mut Input::from_slice(b"a;\xff\xfeb 1\n"),
            false,
            &mut Context::with_sink(&mut sink),
        )
        .unwrap();
        assert!(tree(&p).contains("\u{fffd}\u{fffd}b self=1"));
        assert!(warnings.iter().any(|w| w.contains("not UTF-8")));
    }

    #[test]
    fn sniffing() {
        assert!(sniff(b"a;b;c 1\nd;e 2\n") >= 50);
        assert!(sniff(b"main 10\n") > 0);
        assert_eq!(sniff(b"PVMTRACE 1\nC 0 f\n"), 0);
        assert_eq!(sniff(b"\x00\x01\x02"), 0);
        assert!(
            sniff(b"main;f (x.py:3) 5\n 3\nmain;g 1\n") >= 50,
            "py-spy's stackless line"
        );
        assert_eq!(sniff(b"events: Ir\nfn=main\n"), 0);
    }
}
