//! The `PVMTRACE 1` event format (spec part B): one event per line, parsed with nom, folded
//! into the IR by `TraceBuilder` (seed 000's algorithm written with intervals) as it streams.

use crate::ParseOptions;
use crate::lines::{Line, Lines};
use crate::model::{At, Cols, Diag, IndexCache, Kind, Mark, Model, Warn, latin1_or_utf8, quote};
use nom::bytes::complete::{tag, take_till1, take_while};
use nom::combinator::{all_consuming, opt};
use nom::error::ErrorKind;
use nom::{IResult, Parser};
use profconv_plugin::ir::{NONE, Profile, TraceBuilder, ValueKind};
use profconv_plugin::{Context, PluginError, too_large};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Largest function or table index (exclusive): 2^31.
const MAX_INDEX: u64 = 1 << 31;
/// Most stacks or sample rows reserved from the input's size (16 M: at most about 450 MB of
/// address space per table, for inputs of 256 MB and more).
const RESERVE_CAP: u64 = 1 << 24;
/// First clock value above which values are stored relative to the first event's.
const REBASE_ABOVE: u64 = 1 << 62;

#[inline]
fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// Zero or more spaces and tabs.
fn blanks(i: &[u8]) -> IResult<&[u8], &[u8]> {
    take_while(is_blank).parse(i)
}

/// A field: everything up to the next space or tab.
fn field(i: &[u8]) -> IResult<&[u8], &[u8]> {
    take_till1(is_blank).parse(i)
}

/// Decimal digits and their value in one pass (`None` when it does not fit in 64 bits).
#[inline]
fn decimal(i: &[u8]) -> IResult<&[u8], Option<u64>> {
    let (v, n) = small_decimal(i);
    if n == 0 {
        return Err(nom::Err::Error(nom::error::Error::new(i, ErrorKind::Digit)));
    }
    // Up to 19 digits cannot overflow; longer runs are checked.
    let v = if n <= 19 { Some(v) } else { to_u64(&i[..n]) };
    Ok((&i[n..], v))
}

/// Leading decimal digits (at most 19 are meaningful: callers reject more) and how many.
#[inline(always)]
fn small_decimal(i: &[u8]) -> (u64, usize) {
    let mut v: u64 = 0;
    let mut n = 0;
    while let Some(&c) = i.get(n) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        n += 1;
    }
    (v, n)
}

/// 10^k for k in 0..=8.
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of the 8 bytes of `chunk` (little-endian: the first byte lowest) are ASCII digits
/// before the first one that is not.
#[inline(always)]
fn digit_run(chunk: u64) -> usize {
    const HI: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    // Per byte: high nibble 3, and adding 6 leaves it 3, exactly for b'0'..=b'9'. A carry out
    // of a byte (from 0xFA..) only reaches later bytes, after a byte that is not a digit.
    let t = ((chunk & HI) | ((chunk.wrapping_add(0x0606_0606_0606_0606) & HI) >> 4))
        ^ 0x3333_3333_3333_3333;
    (t.trailing_zeros() / 8) as usize
}

/// The value of the first `n` (1..=8) bytes of `chunk`, all ASCII digits (first digit in the
/// lowest byte): eight digits combined in three multiplications.
#[inline(always)]
fn eight_digits(chunk: u64, n: usize) -> u64 {
    // Digit values, shifted so the missing digits are leading zeros.
    let v = (chunk & 0x0F0F_0F0F_0F0F_0F0F) << (8 * (8 - n));
    let v = (v.wrapping_mul(10 * 256 + 1) >> 8) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100 * 65536 + 1) >> 16) & 0x0000_FFFF_0000_FFFF;
    v.wrapping_mul(10000 * (1 << 32) + 1) >> 32
}

/// A clock reading at the start of `body` as the fast path takes it: `N`, or `+N` after `prev`,
/// of 1 to 18 digits and not before `prev`. Returns the reading and the bytes it took; `None`
/// leaves the line to the nom grammar (which gives any message).
/// `lead`: the clock's last eight leading digits ([`Lead`]).
#[inline(always)]
fn fast_clock(body: &[u8], prev: u64, lead: &mut Lead) -> Option<(u64, usize)> {
    let (relative, digits) = match body {
        [b'+', d @ ..] => (true, d),
        d => (false, d),
    };
    let (v, n) = swar_decimal_after(digits, lead);
    if n == 0 || n > 18 {
        return None;
    }
    let reading = if relative { prev.checked_add(v)? } else { v };
    (reading >= prev).then_some((reading, usize::from(relative) + n))
}

/// Leading decimal digits of `b`, eight at a time where eight bytes can be loaded: their
/// value and count. Stops after 24 digits; the value is meaningful for at most 19 (callers
/// reject longer runs).
#[inline(always)]
fn swar_decimal(b: &[u8]) -> (u64, usize) {
    swar_decimal_after(b, &mut Lead::default())
}

/// Eight leading digits of a reading (as loaded, the first in the lowest byte) and their
/// value. Absolute ticks (11 digits and more in a real trace) mostly share their first eight
/// with the reading before, so [`swar_decimal_after`] decodes those again only when they
/// change.
#[derive(Clone, Copy)]
struct Lead {
    chunk: u64,
    value: u64,
}

impl Default for Lead {
    fn default() -> Self {
        Lead {
            chunk: u64::from_le_bytes(*b"00000000"),
            value: 0,
        }
    }
}

/// [`swar_decimal`], with `lead` the eight digits last read this way: equal bytes are the
/// same eight digits, their value known; eight new digits are kept in `lead`.
#[inline(always)]
fn swar_decimal_after(b: &[u8], lead: &mut Lead) -> (u64, usize) {
    // The first two chunks unrolled (indices and ticks up to 16 digits), the rest in a loop.
    let Some(c0) = b.first_chunk::<8>() else {
        return tail_decimal(0, b);
    };
    let c0 = u64::from_le_bytes(*c0);
    let mut v = lead.value;
    if c0 != lead.chunk {
        let m0 = digit_run(c0);
        if m0 < 8 {
            return if m0 == 0 {
                (0, 0)
            } else {
                (eight_digits(c0, m0), m0)
            };
        }
        v = eight_digits(c0, 8);
        *lead = Lead {
            chunk: c0,
            value: v,
        };
    }
    let mut n = 8;
    while n < 24 {
        let Some(chunk) = b.get(n..).and_then(|r| r.first_chunk::<8>()) else {
            let (w, m) = tail_decimal(v, b.get(n..).unwrap_or_default());
            return (w, n + m);
        };
        let chunk = u64::from_le_bytes(*chunk);
        let m = digit_run(chunk);
        if m == 0 {
            break;
        }
        v = v
            .wrapping_mul(POW10[m])
            .wrapping_add(eight_digits(chunk, m));
        n += m;
        if m < 8 {
            break;
        }
    }
    (v, n)
}

/// `v` followed by the leading digits of `b` (fewer than eight bytes), and how many.
#[inline]
fn tail_decimal(v: u64, b: &[u8]) -> (u64, usize) {
    let (w, m) = small_decimal(b);
    let m = m.min(8);
    (v.wrapping_mul(POW10[m]).wrapping_add(w), m)
}

/// A tick or a time: `digits` or `+digits`: whether it is relative, and its value.
#[inline]
fn clock(i: &[u8]) -> IResult<&[u8], (bool, Option<u64>)> {
    (opt(tag(&b"+"[..])).map(|p| p.is_some()), decimal).parse(i)
}

/// Decimal digits as u64, `None` on overflow (checked digit by digit: the slow path of
/// [`decimal`] for more than 19 digits).
fn to_u64(digits: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(v)
}

/// A function or table index: decimal digits below 2^31.
#[inline]
fn index(body: &[u8]) -> Option<u32> {
    let (_, v) = all_consuming(decimal).parse(body).ok()?;
    v.filter(|&v| v < MAX_INDEX).map(|v| v as u32)
}

/// Hex digits as bytes (an even number of them).
fn hex(body: &[u8]) -> Option<Vec<u8>> {
    if body.is_empty() || body.len() % 2 != 0 {
        return None;
    }
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    body.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// Whether `body` is bytes in hex (an even number of hex digits, at least two), as [`hex`]
/// reads them, without making them.
fn is_hex(body: &[u8]) -> bool {
    !body.is_empty() && body.len() % 2 == 0 && body.iter().all(u8::is_ascii_hexdigit)
}

/// Where the current line is, for messages.
#[derive(Clone, Copy)]
struct Loc {
    no: u64,
    /// Input offset of the trimmed line's first byte.
    offset: u64,
    /// Bytes before the trimmed line: leading blanks (and, on line 1, a byte-order mark).
    lead: usize,
    /// Length of the trimmed line.
    len: usize,
}

impl Loc {
    /// The record's place, for warnings.
    fn at(&self) -> At {
        At {
            line: self.no,
            offset: self.offset,
            col: self.lead as u64 + 1,
        }
    }

    /// The place of `at`, a suffix of the trimmed line, for warnings about one field.
    fn at_field(&self, at: &[u8]) -> At {
        let idx = self.len - at.len().min(self.len);
        At {
            line: self.no,
            offset: self.offset + idx as u64,
            col: (self.lead + idx) as u64 + 1,
        }
    }

    /// An error about the whole record (at its first column).
    fn record_err(&self, msg: impl Into<String>) -> PluginError {
        PluginError::invalid_input(msg)
            .at_offset(self.offset)
            .at_line(self.no, self.lead as u64 + 1)
    }

    /// An error at `at`, a suffix of the trimmed line.
    fn err(&self, at: &[u8], msg: impl Into<String>) -> PluginError {
        let place = self.at_field(at);
        PluginError::invalid_input(msg)
            .at_offset(place.offset)
            .at_line(place.line, place.col)
    }
}

/// An event's tick, its timestamp with the field it was read from (for messages), and the
/// rest of the line.
type Stamp<'t> = (u64, Option<(u64, &'t [u8])>, &'t [u8]);

/// A parsed identifier (spec B.4).
enum Id<'t> {
    Direct(u32),
    Ref(u32),
    /// A display name, its kind, and whether the input bytes were not UTF-8 (read as Latin-1).
    Name(Cow<'t, str>, Kind, bool),
}

/// Input text for messages: at most 60 bytes, invisible and control characters escaped.
fn shown(b: &[u8]) -> String {
    quote(b, 60)
}

struct Reader {
    m: Model,
    diag: Diag,
    compat: bool,
    header_seen: bool,
    /// The `N` records: function index → name.
    names: BTreeMap<u32, String>,
    direct: IndexCache,
    refs: IndexCache,
    t: Option<TraceBuilder>,
    cols: Option<Cols>,
    /// Clock columns: 1 (ticks) or 2 (ticks, time).
    n_clocks: usize,
    zeros: Vec<i64>,
    /// Frames of the open calls, outermost first.
    open: Vec<u32>,
    prev_tick: Option<u64>,
    prev_time: Option<u64>,
    /// The last leading digits of ticks and of times read by the fast path.
    tick_lead: Lead,
    time_lead: Lead,
    tick_base: u64,
    time_base: u64,
    /// The clock values last given to the trace builder (ticks, time).
    now: [i64; 2],
    time_seen: bool,
    time_missing: bool,
    /// First event line whose time presence differs from the first event's.
    time_mismatch_line: u64,
    seen_event: bool,
    seen_end: bool,
    sections: u64,
    /// Where the outermost section still open began (meaningful while `sections > 0`).
    section_begun: At,
    unattributed: u64,
    ignored_ends: u64,
    /// The last record's place (for what is found at the end of the input).
    last: At,
    /// The input's size, when the host knows it: sizes the IR's columns at the first event.
    size_hint: Option<u64>,
}

impl Reader {
    fn new(opts: &ParseOptions) -> Self {
        Reader {
            m: Model::new(!opts.aggregate),
            diag: Diag::new(opts.strict),
            compat: opts.compat,
            header_seen: false,
            names: BTreeMap::new(),
            direct: IndexCache::default(),
            refs: IndexCache::default(),
            t: None,
            cols: None,
            n_clocks: 1,
            zeros: Vec::new(),
            open: Vec::new(),
            prev_tick: None,
            prev_time: None,
            tick_lead: Lead::default(),
            time_lead: Lead::default(),
            tick_base: 0,
            time_base: 0,
            now: [0, 0],
            time_seen: false,
            time_missing: false,
            time_mismatch_line: 0,
            seen_event: false,
            seen_end: false,
            sections: 0,
            section_begun: At::line(0, 0),
            unattributed: 0,
            ignored_ends: 0,
            last: At::default(),
            size_hint: None,
        }
    }

    #[inline]
    fn line(&mut self, line: &Line<'_>, cx: &mut Context<'_>) -> Result<(), PluginError> {
        let raw = line.bytes;
        let mut end = raw.len();
        while end > 0 && matches!(raw[end - 1], b' ' | b'\t' | b'\r') {
            end -= 1;
        }
        let mut lead = 0;
        while lead < end && is_blank(raw[lead]) {
            lead += 1;
        }
        let text = &raw[lead..end];
        if text.is_empty() || text[0] == b'#' {
            return Ok(());
        }
        let loc = Loc {
            no: line.no,
            offset: line.offset + lead as u64,
            // Columns count a byte-order mark skipped before line 1's bytes.
            lead: lead + line.col0 as usize,
            len: text.len(),
        };
        self.last = loc.at();
        // The hot path: a call or an end after the header.
        if self.header_seen && !self.seen_end && text.len() > 1 && is_blank(text[1]) {
            if let op @ (b'C' | b'E') = text[0] {
                let (rest, _) = blanks(&text[1..]).unwrap_or((text, &[]));
                return self.event(op, rest, loc, cx);
            }
        }
        // `text` is not empty and does not start with a blank: there is a first field.
        let Ok((rest, op)) = field(text) else {
            return Err(loc.err(text, "expected a record"));
        };
        let (rest, _) = blanks(rest).unwrap_or((rest, &[]));
        if !self.header_seen {
            return self.header(op, rest, text, loc);
        }
        if self.seen_end {
            return Err(loc.err(
                text,
                "no record may follow the trace end record (T), which must be the last",
            ));
        }
        match op {
            b"C" | b"E" | b"X" | b"R" | b"T" => self.event(op[0], rest, loc, cx),
            b"N" => self.name(rest, text, loc, cx),
            b"SB" | b"SE" => self.section(op, rest, loc, cx),
            _ => Err(loc.err(
                text,
                format!(
                    "unknown record `{}`: expected N, C, E, X, R, T, SB or SE",
                    shown(op)
                ),
            )),
        }
    }

    /// Whether [`Self::fast_lines`] may read the next lines: after the first event, before
    /// any `T`.
    #[inline]
    fn fast_ready(&self) -> bool {
        self.seen_event && !self.seen_end
    }

    /// Reads the common event lines at the start of `buf` (whose first line is line `no`, at
    /// input offset `offset`) without the grammar, up to the first line that is not one of
    /// them or is not complete in `buf`; returns the bytes and lines read. The lines taken are
    /// `C <tick> direct:<i>` and `C <tick> ref:<i>` with an index already seen, and `E <tick>`
    /// with a call open, or `E <tick> direct:<i>` / `ref:<i>` naming the open call's index:
    /// ticks absolute or `+`relative, at most 18 digits, not going backwards, followed by
    /// `@<time>` or `@+<time>` (likewise) exactly when the trace has timestamps, single spaces,
    /// nothing else on the line (no `\r`). Any other line is left to
    /// [`Self::line`] (the nom grammar and its messages). For the lines it takes, this does
    /// exactly what the general path does (`stamp`, `advance`, `event`).
    #[inline]
    fn fast_lines(
        &mut self,
        buf: &[u8],
        no: u64,
        offset: u64,
    ) -> Result<(usize, u64), PluginError> {
        let mut pos = 0;
        let mut k = 0;
        let mut line_start = 0;
        while let Some(len) = self.fast_line(&buf[pos..], no + k, offset + pos as u64)? {
            line_start = pos;
            pos += len + 1;
            k += 1;
        }
        if k > 0 {
            self.last = At {
                line: no + k - 1,
                offset: offset + line_start as u64,
                col: 1,
            };
        }
        Ok((pos, k))
    }

    /// One line of [`Self::fast_lines`] at the start of `buf`: its length without the `\n`,
    /// or `None` (nothing changed) when it is not one of the lines taken or its `\n` is not in
    /// `buf`. Digits are read eight at a time past the line's end when `buf` has the bytes
    /// (the `\n` ends them).
    #[inline(always)]
    fn fast_line(
        &mut self,
        buf: &[u8],
        no: u64,
        offset: u64,
    ) -> Result<Option<usize>, PluginError> {
        let [op @ (b'C' | b'E'), b' ', rest @ ..] = buf else {
            return Ok(None);
        };
        let Some(prev) = self.prev_tick else {
            return Ok(None);
        };
        let Some((tick, took)) = fast_clock(rest, prev, &mut self.tick_lead) else {
            return Ok(None);
        };
        let Ok(now) = i64::try_from(tick - self.tick_base) else {
            return Ok(None);
        };
        let mut after = &rest[took..];
        let mut end = 2 + took;
        // The timestamp, exactly when the trace has them (the first event had one).
        let time = if self.n_clocks == 2 {
            let Some(body) = after.strip_prefix(b" @") else {
                return Ok(None);
            };
            let Some(prev_time) = self.prev_time else {
                return Ok(None);
            };
            let Some((t, took)) = fast_clock(body, prev_time, &mut self.time_lead) else {
                return Ok(None);
            };
            let Some(v) = t
                .checked_sub(self.time_base)
                .and_then(|d| i64::try_from(d).ok())
            else {
                return Ok(None);
            };
            after = &body[took..];
            end += 2 + took;
            Some((t, v))
        } else {
            None
        };
        // The identifier, if any: ` direct:<i>` or ` ref:<i>` with an index already seen.
        let (ident, len) = if after.first() == Some(&b'\n') {
            (None, end)
        } else {
            let (cache, body, skip) = if after.starts_with(b" direct:") {
                (&self.direct, &after[8..], 8)
            } else if after.starts_with(b" ref:") {
                (&self.refs, &after[5..], 5)
            } else {
                return Ok(None);
            };
            let (i, m) = swar_decimal(body);
            if m == 0 || m > 10 || i >= MAX_INDEX || body.get(m) != Some(&b'\n') {
                return Ok(None);
            }
            match cache.get(i as u32) {
                Some(f) => (Some(f), end + skip + m),
                None => return Ok(None),
            }
        };
        let frame = if *op == b'C' {
            if ident.is_none() {
                return Ok(None);
            }
            ident
        } else {
            // An end: of the open call (an end naming another one is warned about by the
            // general path).
            match self.open.last() {
                Some(&top) if ident.is_none_or(|f| f == top) => None,
                _ => return Ok(None),
            }
        };
        // What `advance` does for clocks that do not go backwards, a timestamp exactly when
        // the trace has them.
        if self.open.is_empty() {
            self.unattributed = self.unattributed.saturating_add(tick - prev);
        }
        match time {
            Some((t, v)) => {
                self.time_seen = true;
                self.prev_time = Some(t);
                if v >= self.now[1] {
                    self.now[1] = v;
                }
            }
            None => {
                self.time_missing = true;
                self.prev_time = None;
            }
        }
        self.prev_tick = Some(tick);
        self.now[0] = now;
        let n_clocks = self.n_clocks;
        let Some(t) = self.t.as_mut() else {
            return Err(PluginError::internal("no trace builder"));
        };
        let ir = |e: profconv_plugin::ir::IrError| {
            PluginError::invalid_input(e.to_string())
                .at_offset(offset)
                .at_line(no, 1)
        };
        match frame {
            Some(frame) => {
                if self.m.runs.len() > 1 {
                    self.m.ensure_thread();
                }
                t.enter(&mut self.m.b, frame, &self.now[..n_clocks])
                    .map_err(ir)?;
                self.open.push(frame);
                if let Some(run) = self.m.runs.last_mut() {
                    run.calls += 1;
                }
            }
            None => {
                t.exit(&mut self.m.b, &self.now[..n_clocks]).map_err(ir)?;
                self.open.pop();
            }
        }
        Ok(Some(len))
    }

    fn header(&mut self, op: &[u8], rest: &[u8], text: &[u8], loc: Loc) -> Result<(), PluginError> {
        if op != b"PVMTRACE" {
            return Err(loc.err(
                text,
                format!(
                    "expected the `PVMTRACE 1` header as the first line that is not blank or a comment, found `{}`",
                    shown(text)
                ),
            ));
        }
        let Ok((mut items, version)) = field(rest) else {
            return Err(loc.err(rest, "expected the version after PVMTRACE (`PVMTRACE 1`)"));
        };
        if version != b"1" {
            return Err(loc.err(
                rest,
                format!(
                    "unsupported pvmtrace version `{}`: this reader knows version 1",
                    shown(version)
                ),
            ));
        }
        loop {
            (items, _) = blanks(items).unwrap_or((items, &[]));
            let Ok((next, item)) = field(items) else {
                break;
            };
            // `time_unit` alone gives the key no value, which is not `ns` either.
            let unit = if item == b"time_unit" {
                Some(&b""[..])
            } else {
                item.strip_prefix(b"time_unit=")
            };
            if let Some(unit) = unit {
                if unit != b"ns" {
                    return Err(loc.err(
                        items,
                        format!(
                            "unsupported time_unit `{}`: pvmtrace v1 defines only `ns`",
                            shown(unit)
                        ),
                    ));
                }
            }
            items = next;
        }
        self.header_seen = true;
        Ok(())
    }

    fn name(
        &mut self,
        rest: &[u8],
        text: &[u8],
        loc: Loc,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        if self.seen_event {
            return Err(loc.err(
                text,
                "a name record (N) after the first event: the name table must come first",
            ));
        }
        let (after, idx) = match field(rest) {
            Ok((after, tok)) => (after, index(tok)),
            Err(_) => (rest, None),
        };
        let Some(idx) = idx else {
            return Err(loc.err(
                rest,
                "expected `N <index> <name>`: a function index (decimal, below 2^31)",
            ));
        };
        let (name, _) = blanks(after).unwrap_or((after, &[]));
        if name.is_empty() {
            return Err(loc.err(name, "expected a name after the function index"));
        }
        let (name, lossy) = latin1_or_utf8(name);
        if lossy {
            self.diag.warn(cx, Warn::NotUtf8, loc.at(), || {
                ("a name that is not UTF-8".into(), "read as Latin-1".into())
            })?;
        }
        if let Some(old) = self.names.insert(idx, name.clone().into_owned()) {
            self.diag.warn(cx, Warn::DuplicateName, loc.at(), || {
                (
                    format!(
                        "index {idx} is named twice (`{}`, then `{}`)",
                        quote(old.as_bytes(), usize::MAX),
                        quote(name.as_bytes(), usize::MAX)
                    ),
                    "the later name is used".into(),
                )
            })?;
        }
        Ok(())
    }

    /// `<tick> [@<time>]` and what follows.
    #[inline]
    fn stamp<'t>(&self, rest: &'t [u8], loc: Loc) -> Result<Stamp<'t>, PluginError> {
        let Ok((r, (plus, v))) = clock(rest) else {
            return Err(loc.err(
                rest,
                "expected a tick: decimal digits, or +digits relative to the previous event",
            ));
        };
        if r.first().is_some_and(|&c| !is_blank(c)) {
            return Err(loc.err(r, "expected a space after the tick"));
        }
        let tick = self.clock_value(Clock::Tick, plus, v).ok_or_else(|| {
            let (prev, limit) = (self.prev_tick, self.clock_limit(Clock::Tick));
            loc.err(
                rest,
                clock_too_large(Clock::Tick, plus, written(rest, r), prev, limit),
            )
        })?;
        let (r, _) = blanks(r).unwrap_or((r, &[]));
        let Some(body) = r.strip_prefix(b"@") else {
            return Ok((tick, None, r));
        };
        let Ok((after, (plus, v))) = clock(body) else {
            return Err(loc.err(
                r,
                "expected a timestamp after `@`: nanoseconds as digits, or @+digits (a name starting with `@` is written `fn:@...`)",
            ));
        };
        if after.first().is_some_and(|&c| !is_blank(c)) {
            return Err(loc.err(after, "expected a space after the timestamp"));
        }
        let time = self.clock_value(Clock::Time, plus, v).ok_or_else(|| {
            let (prev, limit) = (self.prev_time, self.clock_limit(Clock::Time));
            loc.err(
                r,
                clock_too_large(Clock::Time, plus, written(body, after), prev, limit),
            )
        })?;
        let (after, _) = blanks(after).unwrap_or((after, &[]));
        Ok((tick, Some((time, r)), after))
    }

    /// A tick or timestamp as written (`v`, `None` past 64 bits), made absolute when relative
    /// (`plus`) from the previous event's; `None` when it does not fit in 64 bits.
    fn clock_value(&self, which: Clock, plus: bool, v: Option<u64>) -> Option<u64> {
        let prev = match which {
            Clock::Tick => self.prev_tick,
            Clock::Time => self.prev_time,
        };
        match (plus, v) {
            (false, v) => v,
            (true, Some(v)) => prev.unwrap_or(0).checked_add(v),
            (true, None) => None,
        }
    }

    /// The clocks at an event: clamps what goes backwards, counts unattributed ticks, and
    /// creates the value columns and the trace builder at the first event.
    #[inline]
    fn advance(
        &mut self,
        (tick, tick_field): (u64, &[u8]),
        time: Option<(u64, &[u8])>,
        loc: Loc,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        // Warnings and errors about a clock name its field (`C 5 f`: column 3).
        let (time, time_field) = match time {
            Some((t, field)) => (Some(t), field),
            None => (None, tick_field),
        };
        if !self.seen_event {
            self.seen_event = true;
            self.start(tick, time);
        }
        let prev = self.prev_tick.unwrap_or(tick);
        let tick = if tick < prev {
            self.diag
                .warn(cx, Warn::TickBackwards, loc.at_field(tick_field), || {
                    (
                        format!("tick {tick} goes backwards (previous event at tick {prev})"),
                        format!("clamped to {prev}"),
                    )
                })?;
            prev
        } else {
            tick
        };
        if self.open.is_empty() {
            self.unattributed = self.unattributed.saturating_add(tick - prev);
        }
        if time.is_some() {
            self.time_seen = true;
        } else {
            self.time_missing = true;
        }
        let has_time_col = self.n_clocks == 2;
        if self.time_mismatch_line == 0 && time.is_some() != has_time_col {
            self.time_mismatch_line = loc.no;
        }
        let time = match (time, self.prev_time) {
            (Some(t), Some(p)) if t < p => {
                self.diag
                    .warn(cx, Warn::TimeBackwards, loc.at_field(time_field), || {
                        (
                            format!("timestamp {t} goes backwards (previous {p})"),
                            format!("clamped to {p}"),
                        )
                    })?;
                Some(p)
            }
            (t, _) => t,
        };
        self.prev_tick = Some(tick);
        self.prev_time = time;
        self.now[0] = i64::try_from(tick - self.tick_base).map_err(|_| {
            let limit = self.clock_limit(Clock::Tick);
            loc.err(tick_field, too_large(format_args!("tick {tick}"), limit.1))
        })?;
        if has_time_col {
            if let Some(t) = time {
                match t
                    .checked_sub(self.time_base)
                    .and_then(|d| i64::try_from(d).ok())
                {
                    Some(v) if v >= self.now[1] => self.now[1] = v,
                    Some(_) => {}
                    None if self.time_missing => {}
                    None => {
                        let limit = self.clock_limit(Clock::Time);
                        return Err(loc.err(
                            time_field,
                            too_large(format_args!("timestamp {t}"), limit.1),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Value columns and the trace builder, once the first event says whether there is time.
    fn start(&mut self, tick: u64, time: Option<u64>) {
        if tick > REBASE_ABOVE {
            self.tick_base = tick;
            self.m.meta.push(("tick_base".into(), tick.to_string()));
        }
        let b = &mut self.m.b;
        let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let calls = b.add_value_type("calls", "count", ValueKind::Count);
        let time_col = time.map(|t| {
            if t > REBASE_ABOVE {
                self.time_base = t;
            }
            b.add_value_type("time_ns", "nanoseconds", ValueKind::Weight)
        });
        let mut clocks = vec![ticks];
        clocks.extend(time_col);
        self.n_clocks = clocks.len();
        self.t = Some(TraceBuilder::new(b, clocks, Some(calls), self.m.ordered));
        self.zeros = vec![0; b.n_value_types()];
        if let (Some(size), true) = (self.size_hint, self.m.ordered) {
            // Ordered samples grow with the events, so their columns (and the stacks) get
            // capacity from the input's size (the host's, not a claim of the input) and do
            // not grow by reallocation: an event line is rarely under 16 bytes, and a call with
            // its end under 32, so these are about the most rows and stacks the input makes.
            // Capacity never written costs address space, not memory; it is capped all the
            // same. Aggregated mode reserves nothing: its memory follows the distinct stacks.
            // Measured: 3 % less parse CPU on the 190 MB benchmark, 4 % less peak memory.
            let cap = |n: u64| n.min(RESERVE_CAP) as usize;
            b.reserve_stacks(cap(size / 32));
            b.reserve_samples(cap(size / 16));
        }
        self.cols = Some(Cols {
            ticks,
            calls: Some(calls),
            time: time_col,
        });
    }

    fn event(
        &mut self,
        op: u8,
        rest: &[u8],
        loc: Loc,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        let (tick, time, after) = self.stamp(rest, loc)?;
        self.advance((tick, rest), time, loc, cx)?;
        let rest = after;
        let tick = self.prev_tick.unwrap_or(tick);
        let ir = |e: profconv_plugin::ir::IrError| loc.record_err(e.to_string());
        match op {
            b'C' => {
                if rest.is_empty() {
                    return Err(loc.err(
                        rest,
                        "missing identifier after the tick (`C <tick> [@<time>] <identifier>`)",
                    ));
                }
                // The common case first: a direct call already seen.
                let cached = rest
                    .strip_prefix(b"direct:")
                    .and_then(index)
                    .and_then(|i| self.direct.get(i));
                let frame = match cached {
                    Some(f) => f,
                    None => {
                        let id = parse_id(rest).map_err(|(at, msg)| loc.err(at, msg))?;
                        if let Id::Name(_, _, true) = id {
                            self.diag.warn(cx, Warn::NotUtf8, loc.at(), || {
                                ("a name that is not UTF-8".into(), "read as Latin-1".into())
                            })?;
                        }
                        self.frame_of(id)
                    }
                };
                self.m.ensure_thread();
                let t = self
                    .t
                    .as_mut()
                    .ok_or_else(|| PluginError::internal("no trace builder"))?;
                t.enter(&mut self.m.b, frame, &self.now[..self.n_clocks])
                    .map_err(ir)?;
                self.open.push(frame);
                let run = self.m.run();
                self.m.runs[run].calls += 1;
            }
            b'E' => {
                let Some(&top) = self.open.last() else {
                    // The end of a frame the profiler never saw start (the evaluation's
                    // outer frame after kernel_run, spec A.3): ignored and counted.
                    self.ignored_ends += 1;
                    return Ok(());
                };
                if !rest.is_empty() {
                    let id = parse_id(rest).map_err(|(at, msg)| loc.err(at, msg))?;
                    if let Some(name) = self.mismatch(id, top) {
                        let open = self.frame_name(top).to_owned();
                        self.diag.warn(cx, Warn::EndMismatch, loc.at(), || {
                            (
                                format!(
                                    "end of `{}` while `{}` is open",
                                    quote(name.as_bytes(), usize::MAX),
                                    quote(open.as_bytes(), usize::MAX)
                                ),
                                format!("`{}` is closed", quote(open.as_bytes(), usize::MAX)),
                            )
                        })?;
                    }
                }
                let t = self
                    .t
                    .as_mut()
                    .ok_or_else(|| PluginError::internal("no trace builder"))?;
                t.exit(&mut self.m.b, &self.now[..self.n_clocks])
                    .map_err(ir)?;
                self.open.pop();
            }
            b'X' => {
                if self.open.is_empty() {
                    self.diag.warn(cx, Warn::TrapNothingOpen, loc.at(), || {
                        (
                            format!("trap at tick {tick} with no open call"),
                            "ignored".into(),
                        )
                    })?;
                } else {
                    let run = self.m.run();
                    let what = quote(rest, usize::MAX);
                    self.m.runs[run].inconsistent.get_or_insert_with(|| {
                        if what.is_empty() {
                            format!("a trap at tick {tick} (line {})", loc.no)
                        } else {
                            format!("a trap at tick {tick} (line {}: {what})", loc.no)
                        }
                    });
                    self.close_all(Mark::Trapped, loc)?;
                }
            }
            b'R' => {
                if !self.open.is_empty() {
                    let n = self.open.len();
                    self.diag.warn(cx, Warn::OpenAtRunEnd, loc.at(), || {
                        (format!("{n} call(s) still open at the end of the kernel run (R) at tick {tick}"), "closed there, marked unfinished".into())
                    })?;
                    let run = self.m.run();
                    self.m.runs[run].inconsistent.get_or_insert_with(|| {
                        format!("{n} call(s) still open at its end (line {})", loc.no)
                    });
                    self.close_all(Mark::Unfinished, loc)?;
                }
                let run = self.m.run();
                if !rest.is_empty() {
                    let (reason, _) = latin1_or_utf8(rest);
                    self.m.runs[run].reason = Some(reason.into_owned());
                }
                self.m.runs.push(Default::default());
            }
            _ => {
                self.seen_end = true;
            }
        }
        Ok(())
    }

    /// Closes every open call at the current clocks, innermost first, with `mark`.
    fn close_all(&mut self, mark: Mark, loc: Loc) -> Result<(), PluginError> {
        let mut stacks = Vec::with_capacity(self.open.len());
        let mut s = NONE;
        for &f in &self.open {
            s = self.m.b.stack(s, f);
            stacks.push(s);
        }
        let n_clocks = self.n_clocks;
        let now = self.now;
        let t = self
            .t
            .as_mut()
            .ok_or_else(|| PluginError::internal("no trace builder"))?;
        while let Some(stack) = stacks.pop() {
            t.exit(&mut self.m.b, &now[..n_clocks])
                .map_err(|e| loc.record_err(e.to_string()))?;
            self.open.pop();
            self.m.mark(stack, now[0], &self.zeros, mark);
        }
        Ok(())
    }

    fn section(
        &mut self,
        op: &[u8],
        rest: &[u8],
        loc: Loc,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        // Sections are checked for nesting only; they do not move the clock (spec B.3).
        let (_, _, data) = self.stamp(rest, loc)?;
        // Their data is never used, but the spec's grammar requires it (`<hex>`): a record
        // without it, or with other text, is not what a pvmtrace writer writes.
        let what = if op == b"SB" { "begin" } else { "end" };
        if data.is_empty() {
            return Err(loc.err(
                data,
                format!(
                    "expected the section {what}'s data in hex after the tick (`{} <tick> [@<time>] <hex>`)",
                    shown(op)
                ),
            ));
        }
        if !is_hex(data) {
            return Err(loc.err(
                data,
                format!(
                    "bad hex data `{}` in a section {what}: expected an even number of hex digits",
                    shown(data)
                ),
            ));
        }
        if op == b"SB" {
            if self.sections == 0 {
                self.section_begun = loc.at();
            }
            self.sections += 1;
        } else if self.sections == 0 {
            self.diag.warn(cx, Warn::Section, loc.at(), || {
                (
                    "section end (SE) without a section begin (SB)".into(),
                    "ignored".into(),
                )
            })?;
        } else {
            self.sections -= 1;
        }
        Ok(())
    }

    /// The display name of a frame.
    fn frame_name(&self, frame: u32) -> &str {
        let p = self.m.b.profile();
        p.strings
            .get(p.funcs.name[p.frames.func[frame as usize] as usize])
    }

    fn frame_of(&mut self, id: Id<'_>) -> u32 {
        let b = &mut self.m.b;
        let frames = &mut self.m.frames;
        match id {
            Id::Direct(i) => match self.direct.get(i) {
                Some(f) => f,
                None => {
                    let f = match self.names.get(&i) {
                        Some(name) => frames.named(b, name, Kind::Function),
                        None => frames.named(b, &format!("function[{i}]"), Kind::Direct),
                    };
                    self.direct.set(i, f);
                    f
                }
            },
            Id::Ref(i) => match self.refs.get(i) {
                Some(f) => f,
                None => {
                    let f = frames.named(b, &format!("function_ref[{i}]"), Kind::Ref);
                    self.refs.set(i, f);
                    f
                }
            },
            Id::Name(name, kind, _) => frames.named(b, &name, kind),
        }
    }

    /// `Some(display name)` when the identifier of an `E` differs from the open call's.
    fn mismatch(&self, id: Id<'_>, top: u32) -> Option<String> {
        let name: Cow<'_, str> = match id {
            Id::Direct(i) => {
                if let Some(f) = self.direct.get(i) {
                    return (f != top).then(|| self.frame_name(f).to_owned());
                }
                match self.names.get(&i) {
                    Some(n) => n.as_str().into(),
                    None => format!("function[{i}]").into(),
                }
            }
            Id::Ref(i) => {
                if let Some(f) = self.refs.get(i) {
                    return (f != top).then(|| self.frame_name(f).to_owned());
                }
                format!("function_ref[{i}]").into()
            }
            Id::Name(n, _, _) => n,
        };
        (name != self.frame_name(top)).then(|| name.into_owned())
    }

    fn finish(mut self, cx: &mut Context<'_>) -> Result<Profile, PluginError> {
        if !self.header_seen {
            return Err(PluginError::invalid_input(
                "empty input: no `PVMTRACE 1` header",
            ));
        }
        let last = self.last;
        if !self.open.is_empty() {
            let n = self.open.len();
            let tick = self.prev_tick.unwrap_or(0);
            let why = if self.seen_end {
                "the trace ends (T)"
            } else {
                "the input ends (truncated trace)"
            };
            self.diag.warn(cx, Warn::Truncated, last, || {
                (
                    format!("{n} call(s) still open when {why}"),
                    format!("closed at tick {tick}, marked unfinished"),
                )
            })?;
            let run = self.m.run();
            self.m.runs[run]
                .inconsistent
                .get_or_insert_with(|| format!("{n} call(s) still open at the end of the trace"));
            let loc = Loc {
                no: last.line,
                offset: last.offset,
                lead: last.col.saturating_sub(1) as usize,
                len: 0,
            };
            self.close_all(Mark::Unfinished, loc)?;
        }
        if self.sections > 0 {
            // Named where the outermost one left open began (the input's last line said
            // nothing about it).
            let n = self.sections;
            self.diag.warn(cx, Warn::Section, self.section_begun, || {
                (
                    format!("{n} section(s) begun (SB) and never ended (SE), the outermost here"),
                    String::new(),
                )
            })?;
        }
        let partial_time = self.time_seen && self.time_missing;
        if partial_time {
            let at = self.time_mismatch_line;
            self.diag.warn(cx, Warn::PartialTime, At::line(at, 0), || {
                (
                    "some events have a timestamp and others not".into(),
                    "time is ignored for the whole trace".into(),
                )
            })?;
        }
        if self.m.runs.len() > 1 && self.m.runs.last().is_some_and(|r| r.calls == 0) {
            // An `R` as the last event does not open a run.
            self.m.runs.pop();
        }
        if self.cols.is_none() {
            let b = &mut self.m.b;
            let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
            let calls = b.add_value_type("calls", "count", ValueKind::Count);
            self.cols = Some(Cols {
                ticks,
                calls: Some(calls),
                time: None,
            });
        }
        self.m
            .meta
            .insert(0, ("source_format".into(), "pvm".into()));
        self.m
            .meta
            .insert(1, ("pvm_variant".into(), "pvmtrace".into()));
        if self.unattributed > 0 {
            self.m
                .meta
                .push(("unattributed_ticks".into(), self.unattributed.to_string()));
        }
        if self.ignored_ends > 0 {
            self.m
                .meta
                .push(("ignored_ends".into(), self.ignored_ends.to_string()));
        }
        self.diag.summarize(cx);
        let cols = self.cols;
        self.m
            .finish(cols, partial_time, self.compat, &mut self.diag, cx)
    }
}

/// Parses an identifier (spec B.4); on error, where in `text` and what was expected.
fn parse_id(text: &[u8]) -> Result<Id<'_>, (&[u8], String)> {
    let bad_index = |what: &str| {
        (
            text,
            format!(
                "bad {what} in `{}`: expected decimal digits below 2^31",
                shown(text)
            ),
        )
    };
    if let Some(body) = text.strip_prefix(b"direct:") {
        return index(body)
            .map(Id::Direct)
            .ok_or_else(|| bad_index("function index"));
    }
    if let Some(body) = text.strip_prefix(b"ref:") {
        return index(body)
            .map(Id::Ref)
            .ok_or_else(|| bad_index("table index"));
    }
    let empty = || (text, format!("empty identifier `{}`", shown(text)));
    if let Some(body) = text.strip_prefix(b"internal:") {
        if body.is_empty() {
            return Err(empty());
        }
        let (phase, lossy) = latin1_or_utf8(body);
        return Ok(Id::Name(
            format!("%interpreter({phase})").into(),
            Kind::Internal,
            lossy,
        ));
    }
    if let Some(body) = text.strip_prefix(b"fnx:") {
        if body.is_empty() {
            return Err(empty());
        }
        let bytes = hex(body).ok_or_else(|| {
            (
                text,
                format!(
                    "bad hex name in `{}`: expected an even number of hex digits",
                    shown(text)
                ),
            )
        })?;
        let (name, _) = latin1_or_utf8(&bytes);
        return Ok(Id::Name(name.into_owned().into(), Kind::Function, false));
    }
    let body = text.strip_prefix(b"fn:").unwrap_or(text);
    if body.is_empty() {
        return Err(empty());
    }
    let (name, lossy) = latin1_or_utf8(body);
    Ok(Id::Name(name, Kind::Function, lossy))
}

/// Reads a pvmtrace from `lines` into a profile.
pub(crate) fn parse_trace(
    lines: &mut Lines<'_, '_>,
    size_hint: Option<u64>,
    opts: &ParseOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut r = Reader::new(opts);
    r.size_hint = size_hint;
    loop {
        if r.fast_ready() {
            let (buf, no, offset) = lines.buffered();
            // A block at a time: a whole input in memory is released behind the reader (a line
            // cut at the block's end takes the general path, as at a stream buffer's end).
            let buf = &buf[..buf.len().min(crate::lines::BLOCK)];
            let (bytes, n) = r.fast_lines(buf, no, offset)?;
            lines.consume(bytes, n);
        }
        let Some(line) = lines.next_line()? else {
            break;
        };
        r.line(&line, cx)?;
    }
    r.finish(cx)
}

/// One of an event's clocks, for the messages of a value too large.
#[derive(Clone, Copy)]
enum Clock {
    Tick,
    Time,
}

impl Clock {
    /// Its name in messages.
    fn name(self) -> &'static str {
        match self {
            Clock::Tick => "tick",
            Clock::Time => "timestamp",
        }
    }
    /// Its unit in messages.
    fn unit(self) -> &'static str {
        match self {
            Clock::Tick => "ticks",
            Clock::Time => "ns",
        }
    }
}

impl Reader {
    /// The largest value `clock` can have, and the limit as a message says it, by the base the
    /// trace is stored from: values are stored as they are when the first one is at most 2^62
    /// (base 0), else from the first one ([`Reader::start`]). Before the first event (whose
    /// value is its own base), and for timestamps in a trace without a time column, any 64-bit
    /// value is read.
    #[cold]
    fn clock_limit(&self, clock: Clock) -> (u64, String) {
        let base = match clock {
            _ if !self.seen_event => None,
            Clock::Tick => Some(self.tick_base),
            Clock::Time if self.n_clocks == 2 => Some(self.time_base),
            Clock::Time => None,
        };
        let (what, unit) = (clock.name(), clock.unit());
        match base.map(|b| (b, b.checked_add(i64::MAX as u64))) {
            Some((0, _)) => (
                i64::MAX as u64,
                format!(
                    "2^63-1 (9223372036854775807; the trace's first {what} is at most 2^62, so \
                     its values are kept as they are, and profile values are 64-bit signed)"
                ),
            ),
            Some((b, Some(l))) => (
                l,
                format!("{l} (2^63-1 {unit} after the trace's first {what}, {b})"),
            ),
            _ => (u64::MAX, "2^64-1 (18446744073709551615)".into()),
        }
    }
}

/// The digits of a clock field as written, between its start `field` (after any `+`) and the
/// `rest` of the line after them.
fn written<'t>(field: &'t [u8], rest: &[u8]) -> &'t [u8] {
    let digits = &field[..field.len() - rest.len()];
    digits.strip_prefix(b"+").unwrap_or(digits)
}

/// The message of a clock field too large to read, `digits` as written: the value itself, or
/// (`plus`) the value after the previous one, `prev` (0 when there is none), with the clock's
/// `limit` ([`Reader::clock_limit`]).
#[cold]
fn clock_too_large(
    clock: Clock,
    plus: bool,
    digits: &[u8],
    prev: Option<u64>,
    limit: (u64, String),
) -> String {
    let (what, digits) = (clock.name(), String::from_utf8_lossy(digits));
    if !plus {
        return too_large(format_args!("{what} {digits}"), limit.1);
    }
    let (from, which) = match prev {
        Some(p) => (p, format!("the previous {what}")),
        None => (0, format!("no {what} before it")),
    };
    too_large(
        format_args!("relative {what} +{digits}"),
        format_args!(
            "+{} after {from} ({which}; a {what} is at most {})",
            limit.0.saturating_sub(from),
            limit.1
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_in_one_pass() {
        for text in [
            "0",
            "7",
            "12345678",
            "123456789",
            "11000237782",
            "18446744073709551615",
            "0000000000000000000042",
            "99999999",
            "100000000",
        ] {
            let (rest, v) = decimal(text.as_bytes()).unwrap();
            assert!(rest.is_empty());
            assert_eq!(v, text.parse::<u64>().ok(), "{text}");
        }
        assert_eq!(decimal(b"18446744073709551616").unwrap().1, None);
        assert_eq!(decimal(b"123456789012345678901").unwrap().1, None);
        let (rest, v) = decimal(b"1234567/9 x").unwrap();
        assert_eq!((rest, v), (&b"/9 x"[..], Some(1234567)));
        let (rest, v) = decimal(b"12345678:0").unwrap();
        assert_eq!((rest, v), (&b":0"[..], Some(12345678)));
        assert!(decimal(b"x1").is_err());
        assert!(decimal(b"").is_err());
    }

    #[test]
    fn swar_decimals_agree_with_the_scalar_reading() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for text in [
            "",
            "x",
            "0",
            "7",
            "42 x",
            "1234567",
            "12345678",
            "123456789",
            "11046898376\nC",
            "11046898376",
            "000000000000000001",
            "999999999999999999",
            "1234567890123456789",
            "12345678/9",
            "1234567:",
            "9\u{ff}",
            "123 456",
            "12345678901234567890123456789",
        ] {
            cases.push(text.as_bytes().to_vec());
        }
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let case: Vec<u8> = (0..len)
                .map(|k| {
                    let r = (x >> (k * 2 % 60)) as u8;
                    if r % 7 == 0 {
                        b" :/\n\xff"[(r as usize / 7) % 5]
                    } else {
                        b'0' + r % 10
                    }
                })
                .collect();
            cases.push(case);
        }
        for case in cases {
            let (v, n) = swar_decimal(&case);
            let (w, m) = small_decimal(&case);
            assert_eq!(n, m.min(24), "{case:?}");
            if n <= 19 {
                assert_eq!(v, w, "{case:?}");
            }
        }
    }

    /// Readings that share their first eight bytes with the one before (digits or not) read
    /// as they read alone, whatever came before.
    #[test]
    fn readings_after_others_read_as_alone() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut lead = Lead::default();
        let mut last = b"00000000000".to_vec();
        for _ in 0..20_000 {
            let mut case = last.clone();
            match next(6) {
                // The same leading bytes, another tail (digits or not).
                0..=2 => {
                    case.truncate(8 + next(12) as usize);
                    for b in case.iter_mut().skip(8) {
                        *b = b"0123456789 \n:+"[next(14) as usize];
                    }
                }
                // A change within the first eight bytes.
                3..=4 => {
                    let at = next(case.len().max(1) as u64) as usize;
                    if let Some(b) = case.get_mut(at) {
                        *b = b"0123456789x\n"[next(12) as usize];
                    }
                }
                // Something short, or all zeros (the lead's first value).
                _ => {
                    case = [&b"00000000"[..], b"0", b"7", b"", b"1234567", b"00000000 "]
                        [next(6) as usize]
                        .to_vec();
                }
            }
            let alone = swar_decimal(&case);
            assert_eq!(swar_decimal_after(&case, &mut lead), alone, "{case:?}");
            last = case;
            if last.len() < 8 {
                last = b"11046898376".to_vec();
            }
        }
    }
}
