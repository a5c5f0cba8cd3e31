//! Folded parser: blocks of input, lines found with memchr, counts parsed with nom, frames
//! interned once, and each line's frames reusing the previous line's common prefix (inputs are
//! often sorted, and collapsers emit related stacks together), so shared leading frames cost a
//! byte comparison instead of a hash lookup. Lines are put in the profile in batches whose
//! walks down the stack index are interleaved (see `Parser_::flush`).

use memchr::{memchr, memrchr2};
use nom::Parser;
use nom::bytes::complete::tag;
use nom::character::complete::{digit0, digit1};
use nom::combinator::{all_consuming, opt};
use nom::sequence::preceded;
use profconv_plugin::ir::diff::DIFF_COLUMNS;
use profconv_plugin::ir::{NONE, PathStart, PieceMaps, Profile, ProfileBuilder, ValueKind};
use profconv_plugin::lines::Lines;
use profconv_plugin::{Context, Input, PluginError, grow_line_buffer, no_newline, read_some};
use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::sync::{Mutex, mpsc};

use crate::names::{self, FrameNames};
use crate::repeats::{RepeatedStacks, TextKey};

/// Bytes ahead of the line being read that [`Parser_::lines_at`] asks to load.
const INPUT_AHEAD: usize = 4096;
/// Most fractional digits kept exactly; more are truncated (with a warning).
const MAX_DECIMALS: u32 = 9;

/// The error of a count whose integer part is above `i64::MAX` (however many bits it needs).
const COUNT_TOO_LARGE: &str = "count is too large: at most 2^63-1 (9223372036854775807)";
/// Most lines whose stack lookups are interleaved ([`ParseOptions::batch_lines`]).
pub const MAX_BATCH_LINES: usize = 64;
/// Default lines per batch: measured on the 1 GB benchmark (one thread), 8 lines took 2.57 s of
/// CPU, 16 2.49 s, 32 2.40 s, 64 2.44 s (one at a time: 2.79 s).
pub const BATCH_LINES: usize = 32;
/// Default stacks below which lines are not batched ([`ParseOptions::batch_from_stacks`]): the
/// stack index of a profile this small (1 MiB) stays in the caches. Measured on 1 GB of 1 000
/// distinct stacks: batching there cost 10 % of CPU.
pub const BATCH_FROM_STACKS: usize = 1 << 16;
/// Bytes of whole lines read at a time on one thread.
const BLOCK: usize = profconv_plugin::lines::BLOCK;
// The longest line (256 MiB), the bound of every line-oriented reader: a line is one stack.
use profconv_plugin::lines::MAX_LINE;
/// The largest `piece-size` (64 MiB): each thread has a piece in flight, and one more is read.
pub const MAX_PIECE_SIZE: usize = 1 << 26;

/// A count's integer digits and, if any, its fraction digits.
type CountDigits<'a> = (&'a [u8], Option<&'a [u8]>);

/// A data line's stack text and counts (`[count, 0]`, or `[before, after]`).
type StackCounts<'a> = (&'a [u8], [i64; 2]);

// The byte-order mark reads like leading whitespace at the start of a line.
use profconv_plugin::UTF8_BOM as BOM;

/// `123` or `123.45` (inferno accepts decimal counts): one digit or more, then optionally a
/// point and any number of digits (`12.` too), and nothing else.
#[inline]
pub(crate) fn count(i: &[u8]) -> Option<CountDigits<'_>> {
    all_consuming((digit1, opt(preceded(tag(&b"."[..]), digit0))))
        .parse(i)
        .map_err(|_: nom::Err<nom::error::Error<&[u8]>>| ())
        .ok()
        .map(|(_, digits)| digits)
}

/// Where the last space or tab of `line` is. A line ends in its count, a few digits, so its
/// last 32 bytes are looked at one by one first (`memrchr2`'s set-up for a vector search cost
/// more than the search, twice a line); `memrchr2` takes the rest of a line with none there.
#[inline]
fn last_blank(line: &[u8]) -> Option<usize> {
    const NEAR: usize = 32;
    let from = line.len().saturating_sub(NEAR);
    match line[from..].iter().rposition(|&c| c == b' ' || c == b'\t') {
        Some(i) => Some(from + i),
        None => memrchr2(b' ', b'\t', &line[..from]),
    }
}

/// Something to tell the user about a line, kept until the piece of input it came from is put
/// in place (line numbers and offsets are relative to that piece until then).
enum Note {
    /// The first count without a stack.
    Stackless { line: u64 },
    /// The first line with names that are not UTF-8.
    Lossy { line: u64 },
    /// A line skipped under `skip-bad-lines` (the first five of a piece).
    Skipped(PluginError),
}

/// What a piece of input reports besides its profile. Bounded: counts, and at most seven notes
/// (the first count without a stack, the first line that is not UTF-8, five skipped lines).
#[derive(Default)]
struct Report {
    notes: Vec<Note>,
    skipped: u64,
    stackless: u64,
    lossy: u64,
    truncated_fraction: bool,
    /// Per value column, the most decimals a count of this piece needs and the first line
    /// (within the piece) that needs them: the absorber learns from it which line set the
    /// profile's scale, whatever the worker's own scale was.
    max_decimals: [(u32, u64); 2],
}

/// What a [`Report`] held at some line, to go back to when a later check fails for that line.
#[derive(Clone, Copy)]
struct ReportMark {
    notes: usize,
    skipped: u64,
    stackless: u64,
    lossy: u64,
    truncated_fraction: bool,
}

impl Report {
    fn mark(&self) -> ReportMark {
        ReportMark {
            notes: self.notes.len(),
            skipped: self.skipped,
            stackless: self.stackless,
            lossy: self.lossy,
            truncated_fraction: self.truncated_fraction,
        }
    }

    fn rewind(&mut self, m: ReportMark) {
        self.notes.truncate(m.notes);
        self.skipped = m.skipped;
        self.stackless = m.stackless;
        self.lossy = m.lossy;
        self.truncated_fraction = m.truncated_fraction;
    }
}

/// The user's view of the notes of every piece so far, in input order.
#[derive(Default)]
struct Reporter {
    warned_stackless: bool,
    warned_lossy: bool,
    warned_skipped: u64,
    skipped: u64,
    stackless: u64,
    truncated_fraction: bool,
}

impl Reporter {
    /// Passes on the notes of the piece starting after `lines` lines and `offset` bytes.
    fn take(&mut self, report: Report, lines: u64, offset: u64, cx: &mut Context<'_>) {
        for note in report.notes {
            match note {
                Note::Stackless { line } => {
                    if !std::mem::replace(&mut self.warned_stackless, true) {
                        cx.warn(&format!(
                            "line {}: a count without a stack was skipped",
                            lines + line
                        ));
                    }
                }
                Note::Lossy { line } => {
                    if !std::mem::replace(&mut self.warned_lossy, true) {
                        cx.warn(&format!(
                            "line {}: frame names that are not UTF-8; invalid bytes are replaced with U+FFFD (names that differ only there are read as one)",
                            lines + line
                        ));
                    }
                }
                Note::Skipped(e) => {
                    if self.warned_skipped < 5 {
                        self.warned_skipped += 1;
                        cx.warn(&format!("skipped {}", shifted(e, lines, offset)));
                    }
                }
            }
        }
        self.skipped += report.skipped;
        self.stackless += report.stackless;
        self.truncated_fraction |= report.truncated_fraction;
    }

    /// The closing summary warnings.
    fn finish(&self, cx: &mut Context<'_>) {
        if self.skipped > 0 {
            cx.warn(&format!(
                "skipped {} line(s) without a valid count",
                self.skipped
            ));
        }
        if self.stackless > 1 {
            cx.warn(&format!(
                "{} counts without a stack were skipped in all",
                self.stackless
            ));
        }
        if self.truncated_fraction {
            cx.warn(&format!(
                "counts with more than {MAX_DECIMALS} decimals were truncated"
            ));
        }
    }
}

/// `e` (positioned within a piece) positioned within the whole input.
fn shifted(mut e: PluginError, lines: u64, offset: u64) -> PluginError {
    if let Some(l) = &mut e.line {
        *l += lines;
    }
    if let Some(o) = &mut e.byte_offset {
        *o += offset;
    }
    e
}

struct Parser_ {
    b: ProfileBuilder,
    names: FrameNames,
    /// The leaf stack of every stack text put in the profile.
    repeats: RepeatedStacks,
    /// The current line's stack text (its place and length) and key, when
    /// [`Self::look_ahead`] hashed it while the line before was read.
    ahead: Option<(usize, usize, TextKey)>,
    /// The stack texts first seen in the batch being put in the profile, and their leaves.
    new_texts: Vec<(TextKey, u32)>,
    skip_bad_lines: bool,
    /// The longest line read from a stream.
    max_line: usize,
    /// The previous line's frames, root first (its text is not kept: the frames' names are in
    /// the profile's string table, and a line compares its text with them).
    prev_frames: Vec<u32>,
    /// Lines read but not yet in the profile, their frames back to back, and for each frame
    /// its stack once known.
    batch: Vec<Batched>,
    /// Lines per batch (1 to [`MAX_BATCH_LINES`]), once the profile has `batch_from_stacks`.
    batch_lines: usize,
    batch_from_stacks: usize,
    batch_frames: Vec<u32>,
    batch_stacks: Vec<u32>,
    /// Each batched line's path for [`ProfileBuilder::find_paths`].
    batch_paths: Vec<(PathStart, Range<usize>)>,
    /// The stacks of the last line put in the profile, root first.
    last_stacks: Vec<u32>,
    line_no: u64,
    /// Input offset of the current line after its leading whitespace, and that whitespace.
    line_offset: u64,
    lead: usize,
    /// Whether the first data line has been seen (or the mode was given): it decides
    /// `differential` and the value columns for the whole input.
    decided: bool,
    /// Every line is `STACK BEFORE AFTER` (inferno's differential format), read into the
    /// columns `before` and `after`.
    differential: bool,
    /// The first data line's number (in a differential file, for the error of a line with one
    /// count).
    first_data_line: u64,
    /// Lines of the input before the current piece, when this parser reads one again for the
    /// absorber (0 otherwise): `scale_from` numbers lines in the whole input.
    line_base: u64,
    /// Per value column, the line of the whole input that set its scale (the first count with
    /// that many decimals), for the error of a count that does not fit at that scale.
    scale_from: [u64; 2],
    /// A worker's: its scale is that of its own pieces (at most the profile's), so the error
    /// of a count too large at it cannot name the profile's scale; it fails the piece, even
    /// under `skip-bad-lines`, and the absorber reads the piece again at the profile's scale.
    worker: bool,
    /// Set by such an error, which the line does not skip.
    scale_overflowed: bool,
    /// Set when a batched line's sum overflowed ([`Self::flush`]): that error is the run's, also
    /// when the flush was made by reading a later line (a count with more decimals), which
    /// `skip-bad-lines` must not skip in its place.
    sum_overflowed: bool,
    report: Report,
    /// Frames whose name (some spelling of it) was not UTF-8, a bit each.
    lossy_frames: Vec<u64>,
}

impl Parser_ {
    /// An error at byte `idx` of the current line (after its leading whitespace).
    fn error(&self, idx: usize, msg: String) -> PluginError {
        PluginError::invalid_input(msg)
            .at_offset(self.line_offset + idx as u64)
            .at_line(self.line_no, (self.lead + idx) as u64 + 1)
    }

    fn new(opts: &ParseOptions) -> Self {
        let batch_lines = opts.batch_lines.clamp(1, MAX_BATCH_LINES);
        let mut b = ProfileBuilder::new();
        // The value columns are added once the first data line says which (`set_mode`); these
        // strings keep their ids of a profile that had `samples` from the start.
        b.intern("samples");
        b.intern("count");
        let names = FrameNames::new();
        Parser_ {
            b,
            repeats: match opts.repeated_stacks {
                true => RepeatedStacks::new(names.seed),
                false => RepeatedStacks::off(),
            },
            ahead: None,
            new_texts: Vec::new(),
            names,
            skip_bad_lines: opts.skip_bad_lines,
            max_line: opts.max_line,
            prev_frames: Vec::new(),
            batch: Vec::with_capacity(batch_lines),
            batch_lines,
            batch_from_stacks: opts.batch_from_stacks,
            batch_frames: Vec::new(),
            batch_stacks: Vec::new(),
            batch_paths: Vec::new(),
            last_stacks: Vec::new(),
            line_no: 0,
            line_offset: 0,
            lead: 0,
            decided: false,
            differential: false,
            first_data_line: 0,
            line_base: 0,
            scale_from: [0; 2],
            worker: false,
            scale_overflowed: false,
            sum_overflowed: false,
            report: Report::default(),
            lossy_frames: Vec::new(),
        }
    }

    /// Reads the input as differential (`STACK BEFORE AFTER`: columns `before` and `after`, and
    /// metadata `diff`, as `profconv diff` builds) or not (one column, `samples`).
    fn set_mode(&mut self, differential: bool) {
        debug_assert!(!self.decided);
        self.decided = true;
        self.differential = differential;
        if differential {
            self.b.add_value_type("before", "count", ValueKind::Weight);
            self.b.add_value_type("after", "count", ValueKind::Weight);
            self.b.add_meta("diff", DIFF_COLUMNS);
        } else {
            self.b.add_value_type("samples", "count", ValueKind::Weight);
        }
    }

    /// Value columns: 1, or 2 in a differential file.
    #[inline]
    fn n_cols(&self) -> usize {
        1 + self.differential as usize
    }

    /// The profile (with a `samples` column if no line said otherwise).
    fn finish(mut self) -> Profile {
        if !self.decided {
            self.set_mode(false);
        }
        // The reader's own tables are freed before the builder's finishing allocates.
        let Parser_ { b, .. } = self;
        b.finish()
    }

    /// The profile of the pieces read since the last call ([`ProfileBuilder::take_piece`]),
    /// leaving this parser ready for the next piece: its funcs, frames, names and scale stay,
    /// everything about stacks and lines starts again.
    fn take_piece(&mut self, opts: &ParseOptions) -> Profile {
        let part = self.b.take_piece();
        // Its leaves are the last piece's stacks.
        if opts.repeated_stacks {
            self.repeats = RepeatedStacks::new(self.names.seed);
        }
        self.ahead = None;
        self.new_texts.clear();
        self.prev_frames.clear();
        self.batch.clear();
        self.batch_frames.clear();
        self.last_stacks.clear();
        self.line_no = 0;
        part
    }

    /// Every line of `piece`, which ends in `\n` unless it ends the input; offsets and line
    /// numbers are relative to the piece.
    fn piece(&mut self, piece: &[u8]) -> Result<(), PluginError> {
        self.lines_at(piece, 0)?;
        self.flush()
    }

    /// The lines of `text` (whole lines; the last may lack its `\n`), whose first byte is at
    /// input offset `offset`; some may wait in the batch until [`Self::flush`].
    fn lines_at(&mut self, text: &[u8], mut offset: u64) -> Result<(), PluginError> {
        let mut rest = text;
        let mut end = memchr(b'\n', rest).unwrap_or(rest.len());
        self.ahead = self.look_ahead(&rest[..end]);
        while !rest.is_empty() {
            let next = rest.get(end + 1..).unwrap_or_default();
            // The input a few lines on starts loading (the hardware's own prefetch stops at
            // page ends).
            prefetch_index::prefetch_index(next, INPUT_AHEAD.min(next.len().saturating_sub(1)));
            let next_end = memchr(b'\n', next).unwrap_or(next.len());
            let ahead = self.look_ahead(&next[..next_end]);
            self.line(&rest[..end], offset)?;
            self.ahead = ahead;
            offset += end as u64 + 1;
            (rest, end) = (next, next_end);
        }
        self.ahead = None;
        Ok(())
    }

    /// The key of `line`'s stack text, where [`RepeatedStacks`] keeps it starting to load, so
    /// that the line finds it in the caches when its turn comes after the line before (the
    /// bitmap's and the slot's misses were 6 % of the 1 GB parse). The text is found as
    /// [`Self::counts`] finds it; [`Self::line`] takes the key only for that very slice, so a
    /// line that reads otherwise (a differential file, a bad count) is hashed again, never
    /// wrongly.
    #[inline]
    fn look_ahead(&self, line: &[u8]) -> Option<(usize, usize, TextKey)> {
        if !self.repeats.on() || self.differential {
            return None;
        }
        let (_, line) = trim_line(line);
        let Ok(Some(last)) = split_count(line) else {
            return None;
        };
        let text = &line[..last.stack_end];
        let key = self.repeats.key(text);
        self.repeats.prefetch(key);
        Some((text.as_ptr() as usize, text.len(), key))
    }

    /// One line without its `\n`; `offset` is the input offset of its first byte.
    fn line(&mut self, line: &[u8], offset: u64) -> Result<(), PluginError> {
        self.line_no += 1;
        let (lead, line) = trim_line(line);
        self.lead = lead;
        self.line_offset = offset + lead as u64;
        // Blank lines, and comment lines (austin writes its metadata as `# key: value`).
        if line.is_empty() || is_comment(line) {
            return Ok(());
        }
        let (stack_text, values) = match self.counts(line) {
            Ok(Some(v)) => v,
            Ok(None) => {
                // A count with no stack (py-spy writes these): nothing to attribute it to.
                self.report.stackless += 1;
                if self.report.stackless == 1 {
                    let line = self.line_no;
                    self.report.notes.push(Note::Stackless { line });
                }
                return Ok(());
            }
            Err(e)
                if self.skip_bad_lines
                    && !self.sum_overflowed
                    && !(self.worker && self.scale_overflowed) =>
            {
                self.report.skipped += 1;
                if self.report.skipped <= 5 {
                    self.report.notes.push(Note::Skipped(e));
                }
                return Ok(());
            }
            Err(e) => {
                // The lines before come first, with their own errors.
                self.flush()?;
                return Err(e);
            }
        };
        let (key, known) = match self.repeats.on() {
            true => {
                let key = match self.ahead {
                    Some((at, len, key))
                        if (at, len) == (stack_text.as_ptr() as usize, stack_text.len()) =>
                    {
                        key
                    }
                    _ => self.repeats.key(stack_text),
                };
                (key, self.repeats.get(key))
            }
            false => (TextKey::default(), NONE),
        };
        let small = self.b.profile().stacks.prefix.len() < self.batch_from_stacks;
        if known != NONE {
            // A stack seen before: its frames are not looked at, and the next line shares none.
            self.prev_frames.clear();
            if self.batch.is_empty() && small {
                self.last_stacks.clear();
                return self
                    .b
                    .add_to_stack(known, &values[..self.n_cols()])
                    .map_err(|e| self.error(0, format!("sum of counts: {e}")));
            }
        }
        let shared = match known {
            NONE => self.frames_of(stack_text),
            _ => 0,
        };
        if known == NONE && self.batch.is_empty() && small {
            // A small profile's stack index stays in the caches: there are no misses to
            // overlap, and the line goes in at once.
            let mut leaf = match shared {
                0 => NONE,
                k => self.last_stacks[k - 1],
            };
            self.last_stacks.truncate(shared);
            for &frame in &self.batch_frames[shared..] {
                leaf = self.b.stack(leaf, frame);
                self.last_stacks.push(leaf);
            }
            self.batch_frames.clear();
            self.repeats.insert(key, leaf);
            return self
                .b
                .add_to_stack(leaf, &values[..self.n_cols()])
                .map_err(|e| self.error(0, format!("sum of counts: {e}")));
        }
        self.batch.push(Batched {
            end: self.batch_frames.len(),
            shared,
            known,
            key,
            values,
            line_no: self.line_no,
            line_offset: self.line_offset,
            lead: self.lead,
            mark: self.report.mark(),
        });
        if self.batch.len() >= self.batch_lines {
            self.flush()?;
        }
        Ok(())
    }

    /// Puts the batched lines in the profile, in line order: their stacks, then their counts.
    ///
    /// Walking down the stack index from a root is a chain of dependent memory accesses, most
    /// of them cache misses on a large profile. The walks of different lines are independent,
    /// so [`ProfileBuilder::find_paths`] takes them in turns and their misses overlap
    /// (measured: −12 % CPU on the 1 GB benchmark). It only finds existing stacks; a line's new
    /// stacks are made afterwards, line after line, so stack ids are numbered as when reading
    /// one line at a time. The first line takes the stacks it shares with the previous batch's
    /// last line without looking them up (sorted inputs share long prefixes); a later line
    /// walks its shared frames again, which costs little, the line before loading the same
    /// entries at the same time (waiting for it instead chains the walks again: measured
    /// slower).
    fn flush(&mut self) -> Result<(), PluginError> {
        let n = self.batch.len();
        if n == 0 {
            return Ok(());
        }
        let n_cols = self.n_cols();
        let frames = &self.batch_frames;
        let stacks = &mut self.batch_stacks;
        stacks.clear();
        stacks.resize(frames.len(), NONE);
        // The first line takes the stacks it shares with the previous batch's last line from
        // that line; every other line walks from a root.
        let first = self.batch[0].shared;
        stacks[..first].copy_from_slice(&self.last_stacks[..first]);
        let paths = &mut self.batch_paths;
        paths.clear();
        let mut start = 0;
        for line in &self.batch {
            paths.push(if start == 0 && first > 0 {
                (PathStart::Stack(stacks[first - 1]), first..line.end)
            } else {
                (PathStart::Stack(NONE), start..line.end)
            });
            start = line.end;
        }
        self.b.find_paths(paths, |i| frames[i], stacks);
        // The sample rows of the stacks that exist are loaded together, before their counts
        // are added one line after another.
        for line in &self.batch {
            match (line.known, line.end.checked_sub(1).map(|i| stacks[i])) {
                (NONE, Some(NONE) | None) => {}
                (NONE, Some(leaf)) | (leaf, _) => self.b.prefetch_sample_of(leaf),
            }
        }
        let (mut start, mut last_start) = (0, 0);
        for i in 0..n {
            let line = &self.batch[i];
            last_start = start;
            let mut leaf = line.known;
            if leaf == NONE {
                // What was not found is new: made here, line after line.
                let mut at = start;
                while at < line.end {
                    if stacks[at] != NONE {
                        leaf = stacks[at];
                        at += 1;
                        continue;
                    }
                    let made = self.b.profile().stacks.prefix.len();
                    leaf = self.b.stack(leaf, frames[at]);
                    stacks[at] = leaf;
                    at += 1;
                    if leaf as usize == made {
                        // Made here (not by an earlier line of the batch): the rest of the
                        // line is new below it, made without lookups.
                        let end = line.end;
                        leaf = self
                            .b
                            .stacks_below(leaf, &frames[at..end], &mut stacks[at..end]);
                        at = end;
                    }
                }
                self.new_texts.push((line.key, leaf));
            }
            if let Err(e) = self.b.add_to_stack(leaf, &line.values[..n_cols]) {
                // As if reading had stopped at this line: what later lines noted is dropped.
                let line = &self.batch[i];
                let e = PluginError::invalid_input(format!("sum of counts: {e}"))
                    .at_offset(line.line_offset)
                    .at_line(line.line_no, line.lead as u64 + 1);
                self.report.rewind(line.mark);
                self.sum_overflowed = true;
                self.batch.clear();
                self.batch_frames.clear();
                self.new_texts.clear();
                return Err(e);
            }
            start = line.end;
        }
        // Their probes are independent: their slots are loaded together, then written.
        for &(key, _) in &self.new_texts {
            self.repeats.prefetch(key);
        }
        for &(key, leaf) in &self.new_texts {
            self.repeats.insert(key, leaf);
        }
        self.new_texts.clear();
        self.last_stacks.clear();
        self.last_stacks.extend_from_slice(&stacks[last_start..]);
        self.batch.clear();
        self.batch_frames.clear();
        Ok(())
    }

    /// The stack text of a trimmed data line and its counts as fixed point: `[count, 0]`, or
    /// `[before, after]` in a differential file; `None` for counts without a stack. The first
    /// data line decides whether the file is differential.
    fn counts<'l>(&mut self, line: &'l [u8]) -> Result<Option<StackCounts<'l>>, PluginError> {
        let last = match split_count(line) {
            Ok(Some(last)) => last,
            Ok(None) => return Ok(None),
            Err((idx, msg)) => return Err(self.error(idx, msg)),
        };
        if !self.decided {
            self.first_data_line = self.line_no;
            self.set_mode(looks_differential(&line[..last.stack_end]));
        }
        if !self.differential {
            let v = self.fixed(0, last.digits, last.col)?;
            return Ok(Some((&line[..last.stack_end], [v, 0])));
        }
        // `STACK BEFORE AFTER`: the before count ends the stack text.
        let before = match split_count(&line[..last.stack_end]) {
            Ok(Some(before)) => before,
            // Two counts and no stack (`3 5`).
            Ok(None) => return Ok(None),
            Err(_) => {
                return Err(self.error(
                    last.col,
                    format!(
                        "expected two counts, `STACK BEFORE AFTER`: the file is differential (its first data line, line {}, has two)",
                        self.first_data_line
                    ),
                ));
            }
        };
        let b = self.fixed(0, before.digits, before.col)?;
        let a = self.fixed(1, last.digits, last.col)?;
        Ok(Some((&line[..before.stack_end], [b, a])))
    }

    /// The count `digits` (at byte `col` of the line) as fixed point in column `c`, whose
    /// scale it raises if it has more decimals.
    fn fixed(&mut self, c: usize, digits: CountDigits<'_>, col: usize) -> Result<i64, PluginError> {
        let (int, frac) = digits;
        let mut frac = frac.unwrap_or(b"");
        while let [rest @ .., b'0'] = frac {
            frac = rest;
        }
        if frac.len() as u32 > MAX_DECIMALS {
            frac = &frac[..MAX_DECIMALS as usize];
            self.report.truncated_fraction = true;
            // What is kept can end in zeros too (`0.30000000000000004` keeps `300000000`):
            // they set no scale either.
            while let [rest @ .., b'0'] = frac {
                frac = rest;
            }
        }
        let want = frac.len() as u32;
        if want > self.b.decimals(c) {
            // The counts read so far are at the old scale: add them before changing it.
            self.flush()?;
            // The message names no value: it must not depend on how the input was split.
            self.b.rescale(c, want).map_err(|_| {
                self.error(
                    col,
                    format!("this count needs {want} decimals, and the counts so far do not fit in 64 bits at that scale"),
                )
            })?;
            self.scale_from[c] = self.line_base + self.line_no;
        }
        // Only a scale that was taken: a line whose rescaling failed (skipped under
        // `skip-bad-lines`) set none, and must not be named as the one that did.
        if want > self.report.max_decimals[c].0 {
            self.report.max_decimals[c] = (want, self.line_no);
        }
        let decimals = self.b.decimals(c);
        // Counts are kept as signed 64-bit values: `9223372036854775808` fits in 64 bits
        // unsigned, so the message says the limit (as the PVM and callgrind readers do).
        let overflow = || self.error(col, COUNT_TOO_LARGE.into());
        let mut v: i64 = 0;
        for &d in int {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add((d - b'0') as i64))
                .ok_or_else(overflow)?;
        }
        for k in 0..decimals as usize {
            let d = frac.get(k).map_or(0, |d| (d - b'0') as i64);
            match v.checked_mul(10).and_then(|v| v.checked_add(d)) {
                Some(next) => v = next,
                None => return Err(self.scale_overflow(c, col)),
            }
        }
        Ok(v)
    }

    /// The error of a count at byte `col` whose integer part fits in 64 bits but not once
    /// scaled to column `c`'s decimals: it names them and the line that set them.
    #[cold]
    fn scale_overflow(&mut self, c: usize, col: usize) -> PluginError {
        self.scale_overflowed = true;
        let (decimals, from) = (self.b.decimals(c), self.scale_from[c]);
        let msg = if from == self.line_base + self.line_no {
            format!("count does not fit in 64 bits with its {decimals} decimals")
        } else {
            format!(
                "count does not fit in 64 bits at {decimals} decimals, the scale line {from} set \
                 (every count is kept with as many decimals as the most precise count so far)"
            )
        };
        self.error(col, msg)
    }

    /// Appends the frames of `text[start..]`; true if a name first seen here is not UTF-8
    /// (read lossily).
    ///
    /// Only a name seen for the first time is checked: a name found in [`FrameNames`] has the
    /// bytes of one checked before (checking the new part of every line was 2.4 % of the parse).
    fn push_frames(&mut self, text: &[u8], mut start: usize) -> bool {
        let mut lossy = false;
        loop {
            let (end, hash) = names::scan(text, start, self.names.seed);
            let raw = &text[start..end];
            let b = &mut self.b;
            let mut new_lossy = false;
            let frame = self.names.frame(raw, hash, || {
                let func = match std::str::from_utf8(raw) {
                    Ok(name) => b.func(name),
                    Err(_) => {
                        new_lossy = true;
                        b.func(&String::from_utf8_lossy(raw))
                    }
                };
                b.frame(func)
            });
            let (w, bit) = (frame as usize / 64, 1u64 << (frame % 64));
            if new_lossy {
                lossy = true;
                if self.lossy_frames.len() <= w {
                    self.lossy_frames.resize(w + 1, 0);
                }
                self.lossy_frames[w] |= bit;
            } else if !self.lossy_frames.is_empty()
                && !lossy
                && self.report.lossy == 0
                && self.lossy_frames.get(w).is_some_and(|&x| x & bit != 0)
                && std::str::from_utf8(raw).is_err()
            {
                // A name this parser met in an earlier piece, on a line the profile may not
                // have taken (the absorber parsed that piece again and skipped the line): the
                // piece still notes it, as a one-thread parse would if it is the first.
                lossy = true;
            }
            self.batch_frames.push(frame);
            if end == text.len() {
                return lossy;
            }
            start = end + 1;
        }
    }

    /// Appends the frames of `text` (`a;b;c`) to the batch, reusing the previous line's frames
    /// it starts with; returns how many it shares.
    ///
    /// The shared frames are found by comparing the text with the names of the previous line's
    /// frames, so no copy of that line is kept (on unsorted input, where lines share little,
    /// copying each line was 3 % of the parse).
    fn frames_of(&mut self, text: &[u8]) -> usize {
        let p = self.b.profile();
        let mut keep = 0;
        // Where the next frame starts; `None` once the text is used up.
        let mut pos = Some(0);
        for &frame in &self.prev_frames {
            let Some(at) = pos else { break };
            let name = p
                .strings
                .get(p.funcs.name[p.frames.func[frame as usize] as usize]);
            let end = at + name.len();
            if !text[at..].starts_with(name.as_bytes()) {
                break;
            }
            pos = match text.get(end) {
                None => None,
                Some(b';') => Some(end + 1),
                Some(_) => break,
            };
            keep += 1;
        }
        self.batch_frames
            .extend_from_slice(&self.prev_frames[..keep]);
        self.prev_frames.truncate(keep);
        let Some(pos) = pos else { return keep };
        let new = self.batch_frames.len();
        let lossy = self.push_frames(text, pos);
        // The line's new frames, for the next line (one copy, not a second push per frame).
        self.prev_frames
            .extend_from_slice(&self.batch_frames[new..]);
        // The first line with a name that is not UTF-8 is noted (a later line with the same
        // name finds it remembered).
        if lossy {
            self.report.lossy += 1;
            if self.report.lossy == 1 {
                let line = self.line_no;
                self.report.notes.push(Note::Lossy { line });
            }
        }
        keep
    }
}

/// True for a comment line (trimmed): `#` alone or followed by whitespace, as
/// austin's `# key: value` metadata. A root name may start with `#` (`#1 worker;run 3`): inferno
/// and flamegraph.pl read such a line as a stack, and so does this reader; the folded emitter
/// writes a root that would look like a comment with a `_` before it.
pub(crate) fn is_comment(line: &[u8]) -> bool {
    line.first() == Some(&b'#') && line.get(1).is_none_or(|c| c.is_ascii_whitespace())
}

/// A line read but not yet in the profile.
struct Batched {
    /// End of its frames in `batch_frames`.
    end: usize,
    /// Number of leading frames it shares with the line before (taken from that line's stacks
    /// when that line was in the batch before).
    shared: usize,
    /// Its leaf stack if its stack text was seen before (it then has no frames in the batch),
    /// else `NONE`.
    known: u32,
    /// Its stack text's key in [`RepeatedStacks`].
    key: TextKey,
    /// Its counts (the first [`Parser_::n_cols`]).
    values: [i64; 2],
    /// Where it is, for an error found when its count is added.
    line_no: u64,
    line_offset: u64,
    lead: usize,
    /// The report after this line's notes.
    mark: ReportMark,
}

/// True when the text before a line's last count ends in ` NUMBER`, the first of two counts
/// (inferno's differential folded format, `stack before after`), or is a count: two counts and
/// no stack (` 3 5`: a differential file of py-spy's stackless lines starts so, the empty stack
/// sorting first).
fn looks_differential(stack: &[u8]) -> bool {
    match memrchr2(b' ', b'\t', stack) {
        Some(sp) => count(&stack[sp + 1..]).is_some(),
        None => count(stack).is_some(),
    }
}

/// A line without its leading and trailing whitespace, and the length of what was removed
/// before it. A byte-order mark at the start of a line is removed as whitespace (an editor
/// or a Windows tool may write one at the start of the file; on any line, a line reads the
/// same wherever the input is cut into pieces).
#[inline]
fn trim_line(line: &[u8]) -> (usize, &[u8]) {
    let end = line
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    let line = &line[..end];
    let mut lead = 0;
    while let Some(&c) = line.get(lead) {
        if c.is_ascii_whitespace() {
            lead += 1;
        } else if c == BOM[0] && line[lead..].starts_with(BOM) {
            lead += BOM.len();
        } else {
            break;
        }
    }
    (lead, &line[lead..])
}

/// A trimmed line's last count: where the stack text before it ends, where it starts, and its
/// digits.
struct LastCount<'a> {
    stack_end: usize,
    col: usize,
    digits: CountDigits<'a>,
}

/// Splits a trimmed line `STACK COUNT` at its last count; `None` for a count with no stack; an
/// error is the byte it points at and its message.
#[inline]
fn split_count(line: &[u8]) -> Result<Option<LastCount<'_>>, (usize, String)> {
    let (stack_end, col) = match last_blank(line) {
        Some(sp) => {
            let stack_end = line[..sp]
                .iter()
                .rposition(|c| !c.is_ascii_whitespace())
                .map_or(0, |p| p + 1);
            (stack_end, sp + 1)
        }
        None if count(line).is_some() => return Ok(None),
        None => {
            return Err((
                line.len(),
                "expected `STACK COUNT`: the line has no count after the stack".into(),
            ));
        }
    };
    let token = &line[col..];
    let Some(digits) = count(token) else {
        return Err((
            col,
            format!(
                "expected a count (digits, optionally with a decimal point) at the end of the line, found `{}`",
                profconv_plugin::quote_input(token, 40)
            ),
        ));
    };
    if stack_end == 0 {
        return Ok(None);
    }
    Ok(Some(LastCount {
        stack_end,
        col,
        digits,
    }))
}

/// Whether the first data line of `text` (whole lines) is differential (two counts); `None` if
/// `text` has no data line. [`Parser_::counts`] decides at the same line, with the same
/// trimming and splitting: the first line that is not blank, not a comment and not one count
/// without a stack, and ends in a count (a bad line before it is an error, or skipped).
fn first_data_line_is_differential(text: &[u8]) -> Option<bool> {
    text.split(|&c| c == b'\n').find_map(|line| {
        let (_, line) = trim_line(line);
        if line.is_empty() || is_comment(line) {
            return None;
        }
        match split_count(line) {
            Ok(Some(last)) => Some(looks_differential(&line[..last.stack_end])),
            _ => None,
        }
    })
}

/// How to read folded stacks.
#[derive(Clone, Copy, Debug)]
pub struct ParseOptions {
    /// Warn about and skip lines without a valid count instead of failing (inferno's way).
    pub skip_bad_lines: bool,
    /// Worker threads; above 1 the input is cut into pieces at line ends, parsed in parallel
    /// and put back together in input order: the profile is the same whatever the number.
    pub threads: usize,
    /// Bytes per piece when parsing in parallel.
    pub piece_size: usize,
    /// Lines whose stack lookups are interleaved (1 to [`MAX_BATCH_LINES`]; 1 reads one line
    /// at a time). The profile, warnings and errors are the same whatever the number.
    pub batch_lines: usize,
    /// Lines are batched once the profile has this many stacks; before, they go in one at a
    /// time (a small stack index stays in the caches: there are no misses to overlap).
    pub batch_from_stacks: usize,
    /// The longest line read from a stream (`MAX_LINE`, 256 MiB; smaller in tests).
    pub max_line: usize,
    /// Remember the leaf stack of each stack text, so that a line repeating an earlier line's
    /// stack skips its frames (it stops by itself where few lines repeat). The profile is the
    /// same either way; off is for tests and measurements.
    pub repeated_stacks: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            skip_bad_lines: false,
            threads: 1,
            piece_size: PIECE_SIZE,
            batch_lines: BATCH_LINES,
            batch_from_stacks: BATCH_FROM_STACKS,
            max_line: MAX_LINE,
            repeated_stacks: true,
        }
    }
}

/// Default bytes of input per parallel piece. Larger pieces share more stacks within themselves,
/// so less is left to absorb, but hold more memory in flight: measured on the 1 GB benchmark
/// with 2 threads (thirteenth session, pieces read in place), 4 MiB pieces took 1.64 s wall,
/// 2.61 s CPU and 234 MB, 8 MiB 1.53 s, 2.52 s and 249 MB, 16 MiB 1.45 s, 2.48 s and 278 MB
/// (one thread: 1.7 s, 232 MB); the 1 000-stack file 23, 35 and 55 MB. 8 MiB keeps the peak
/// well under a fifth of inferno's.
pub const PIECE_SIZE: usize = 8 << 20;

/// Parses folded stacks from `input` on the calling thread.
pub fn parse_folded(
    input: &mut Input<'_>,
    skip_bad_lines: bool,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let opts = ParseOptions {
        skip_bad_lines,
        ..ParseOptions::default()
    };
    parse_folded_with(input, opts, cx)
}

/// Parses folded stacks from `input` as `opts` say.
pub fn parse_folded_with(
    input: &mut Input<'_>,
    opts: ParseOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut p = Parser_::new(&opts);
    p.b.add_meta("source_format", "folded");
    if let Some(whole) = input.whole() {
        if opts.threads > 1 && whole.len() > opts.piece_size {
            let mut r: &[u8] = whole;
            let release = |upto: u64| input.release(upto as usize);
            return parse_parallel(&mut r, Some(whole), &release, p, opts, cx);
        }
    } else if opts.threads > 1 {
        return parse_parallel(input, None, &|_| {}, p, opts, cx);
    }
    let parsed = parse_serial(input, &mut p);
    finish_serial(parsed, p, cx)
}

/// Parses `input` on this thread into `p`, a block of whole lines at a time ([`Lines`]: a whole
/// input in memory is read in place and released behind the reader, so a mapped file's pages
/// are dropped and memory follows the profile, not the input; a stream is read through a buffer
/// that grows only for a long line, up to `p.max_line`).
fn parse_serial(input: &mut Input<'_>, p: &mut Parser_) -> Result<(), PluginError> {
    let mut lines = Lines::new(input, p.max_line, ONE_STACK_PER_LINE);
    refuse_non_text(lines.peek(16)?.0)?;
    while let Some(block) = lines.whole_lines(BLOCK)? {
        let (len, before) = (block.bytes.len(), p.line_no);
        p.lines_at(block.bytes, block.offset)?;
        lines.consume(len, p.line_no - before);
    }
    p.flush()
}

/// An error if `head`, the start of the input, is UTF-16 or compressed by another tool than gzip,
/// which would otherwise be read as a line without a count.
fn refuse_non_text(head: &[u8]) -> Result<(), PluginError> {
    match profconv_plugin::not_text_error(head, "folded stacks") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The profile of a parse on this thread, or its error, with their warnings (the notes of the
/// lines before an error are given too).
fn finish_serial(
    parsed: Result<(), PluginError>,
    mut p: Parser_,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut reporter = Reporter::default();
    reporter.take(std::mem::take(&mut p.report), 0, 0, cx);
    parsed?;
    reporter.finish(cx);
    Ok(p.finish())
}

/// Doubles `buf`, which holds the start of a line (at input offset `line_start`) and no newline,
/// up to `max_line` bytes; an error past that, or when the memory cannot be had.
fn grow_for_line(buf: &mut Vec<u8>, line_start: u64, max_line: usize) -> Result<(), PluginError> {
    grow_line_buffer(buf, max_line, ONE_STACK_PER_LINE).map_err(|e| e.at_offset(line_start))
}

/// What a line longer than the bound is not.
const ONE_STACK_PER_LINE: &str = "folded stacks have one stack per line, each ending in a newline (is this a folded-stacks file?)";

/// The error of a line of `max_line` bytes or more in an input in memory: the one a stream
/// gives when its buffer cannot grow ([`grow_for_line`]).
fn line_too_long(line_start: u64, max_line: usize) -> PluginError {
    no_newline(max_line, ONE_STACK_PER_LINE).at_offset(line_start)
}

/// A piece of input: whole lines (the last one of the input may lack its `\n`).
struct Piece<'w> {
    buf: Vec<u8>,
    len: usize,
    /// The piece's bytes when the input is in memory (then `buf` is not used: nothing is
    /// copied).
    mapped: Option<&'w [u8]>,
}

impl Piece<'_> {
    fn bytes(&self) -> &[u8] {
        self.mapped.unwrap_or(&self.buf[..self.len])
    }
}

/// Cuts the input into pieces of about `size` bytes at line ends.
struct Pieces<'r, 'w> {
    input: &'r mut dyn Read,
    /// The input, when it is in memory: pieces are cut from it, not read.
    whole: Option<&'w [u8]>,
    size: usize,
    /// The start of a line the previous piece cut.
    carry: Vec<u8>,
    /// Input offset of the next piece (of `carry`'s first byte).
    offset: u64,
    max_line: usize,
    eof: bool,
    /// A read error met after some whole lines: reported once they are parsed.
    failed: Option<PluginError>,
}

impl<'w> Pieces<'_, 'w> {
    /// The next piece, in `buf` (a recycled buffer), or `None` at the end of the input.
    fn next(&mut self, mut buf: Vec<u8>) -> Result<Option<Piece<'w>>, PluginError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        if let Some(whole) = self.whole {
            // Up to the last line end within `size` bytes; a longer line goes whole, within
            // the bound a stream has (the same error at the line's start).
            let start = self.offset as usize;
            let limit = (start + self.size).min(whole.len());
            let end = match memchr::memrchr(b'\n', &whole[start..limit]) {
                _ if limit == whole.len() => limit,
                Some(i) => start + i + 1,
                None => {
                    // Searched no further than a line may be long: the rest of a large file
                    // without newlines is not read to say so.
                    let cap = whole.len().min(start.saturating_add(self.max_line));
                    let from = limit.min(cap);
                    let nl = match memchr(b'\n', &whole[from..cap]) {
                        Some(i) => from + i,
                        None if cap < whole.len() => {
                            return Err(line_too_long(start as u64, self.max_line));
                        }
                        None => whole.len(),
                    };
                    if nl - start >= self.max_line {
                        return Err(line_too_long(start as u64, self.max_line));
                    }
                    (nl + 1).min(whole.len())
                }
            };
            self.eof = end == whole.len();
            self.offset = end as u64;
            return Ok((end > start).then_some(Piece {
                buf,
                len: 0,
                mapped: Some(&whole[start..end]),
            }));
        }
        let mut len = self.carry.len();
        // Room for the carried line start and as much again (no more than a line may take).
        let want = self.size.max((2 * len).min(self.max_line)).max(len + 1);
        if buf.is_empty() {
            // Zeroed pages from the allocator (`calloc`, fresh pages for a buffer this size):
            // only those the input fills are touched. Zeroing the first piece's 8 MiB by hand
            // was two thirds of the CPU of a conversion of a small file.
            buf = vec![0; want];
        } else if buf.len() < want {
            buf.resize(want, 0);
        }
        buf[..len].copy_from_slice(&self.carry);
        self.carry.clear();
        loop {
            while !self.eof && len < buf.len() {
                let n = match read_some(self.input, &mut buf[len..]) {
                    Ok(n) => n,
                    Err(e) => match memchr::memrchr(b'\n', &buf[..len]) {
                        // The whole lines read before the error (a corrupt gzip stream) are
                        // parsed first, with their warnings, as one thread parses them.
                        Some(i) => {
                            self.failed = Some(e.into());
                            self.offset += i as u64 + 1;
                            return Ok(Some(Piece {
                                buf,
                                len: i + 1,
                                mapped: None,
                            }));
                        }
                        None => return Err(e.into()),
                    },
                };
                self.eof = n == 0;
                len += n;
            }
            if self.eof {
                return Ok((len > 0).then_some(Piece {
                    buf,
                    len,
                    mapped: None,
                }));
            }
            match memchr::memrchr(b'\n', &buf[..len]) {
                Some(i) => {
                    self.carry.extend_from_slice(&buf[i + 1..len]);
                    self.offset += i as u64 + 1;
                    return Ok(Some(Piece {
                        buf,
                        len: i + 1,
                        mapped: None,
                    }));
                }
                // A line longer than a piece: grow (bounded by the line, not the input).
                None => grow_for_line(&mut buf, self.offset, self.max_line)?,
            }
        }
    }
}

/// A parsed piece: its notes (up to its error, if any), and its line count and profile, or the
/// error that stopped it.
type PieceResult = (Report, Result<(u64, Profile), PluginError>);

/// A piece for a worker, numbered in input order.
type Job<'w> = (usize, Piece<'w>);

/// A piece back from a worker: its number, the worker's, the piece (whose buffer is read into
/// again) and what came of it.
type Done<'w> = (usize, usize, Piece<'w>, PieceResult);

/// Parses pieces of `input` on `opts.threads` workers while this thread reads the input and an
/// absorber thread puts the finished pieces into `main`'s builder in input order (so ids, rows,
/// warnings and the first error are those of a one-thread parse). At most one piece per worker
/// plus one are in flight (and one read ahead), so memory is bounded whatever the input size.
/// What limits the speed-up is absorbing: one lookup in the whole profile's stack index per
/// stack a piece made (on the 1 GB benchmark, 2 threads: 1.76 s wall against 2.40 s on one;
/// 1.87 s when this thread also absorbed).
///
/// Every piece is read in the mode its first data line decides (see [`Parser_::counts`]); the
/// workers parse single-count pieces. When the first piece shows a differential file, or has
/// no data line, this thread reads the whole input as one thread would (`whole` is the input
/// when it is in memory).
fn parse_parallel(
    input: &mut dyn Read,
    whole: Option<&[u8]>,
    release: &dyn Fn(u64),
    mut main: Parser_,
    opts: ParseOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut pieces = Pieces {
        input,
        whole,
        size: opts.piece_size.clamp(1, MAX_PIECE_SIZE),
        carry: Vec::new(),
        offset: 0,
        max_line: opts.max_line,
        eof: false,
        failed: None,
    };
    // A line too long to read is an error on its line: the first, or the one after the lines
    // of the pieces before it.
    let Some(first) = pieces.next(Vec::new()).map_err(|e| e.at_line(1, 1))? else {
        // An empty input: no lines, so no notes.
        return finish_serial(Ok(()), main, cx);
    };
    // The first piece holds the input's first line, whose first bytes are the input's.
    refuse_non_text(first.bytes())?;
    if pieces.eof && pieces.carry.is_empty() {
        // One piece is the whole input: nothing to share out.
        let parsed = main.piece(first.bytes());
        return finish_serial(parsed, main, cx);
    }
    match first_data_line_is_differential(first.bytes()) {
        Some(false) => main.set_mode(false),
        // A differential file (a worker's piece would not know the mode its first line
        // decides), or no data line yet.
        _ => return parse_on_this_thread(first, &mut pieces, release, main, cx),
    }
    match parse_on_threads(first, &mut pieces, release, main, opts, cx) {
        Ok(parsed) => parsed,
        // Not one thread to be had: this one reads it all.
        Err(kept) => {
            let (first, main) = *kept;
            parse_on_this_thread(first, &mut pieces, release, main, cx)
        }
    }
}

/// Parses the whole input on this thread, as one thread does, for an input whose pieces cannot
/// go to workers: it reads from the start, the first piece and the start of a line it cut
/// before the rest of the input.
fn parse_on_this_thread(
    first: Piece<'_>,
    pieces: &mut Pieces<'_, '_>,
    release: &dyn Fn(u64),
    mut main: Parser_,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let parsed = match pieces.whole {
        Some(whole) => {
            let release = |upto: usize| release(upto as u64);
            parse_serial(
                &mut Input::from_slice(whole).with_release(&release),
                &mut main,
            )
        }
        // The read failed after the first piece's whole lines: they are parsed, then the
        // error is the run's (the reader need not fail again, nor keep what it cut).
        None if pieces.failed.is_some() => {
            let failed = pieces.failed.take().map_or(Ok(()), Err);
            parse_serial(&mut Input::from_slice(first.bytes()), &mut main).and(failed)
        }
        None => {
            let mut rest = first
                .bytes()
                .chain(&pieces.carry[..])
                .chain(&mut *pieces.input);
            parse_serial(&mut Input::from_reader(&mut rest), &mut main)
        }
    };
    finish_serial(parsed, main, cx)
}

/// Starts the workers and the absorber and runs this thread's part, [`read_on_threads`]:
/// `first` is the input's first piece, and `main` is in its mode. `Err` gives them back when
/// the system will not start a worker or the absorber, for this thread to read it all.
fn parse_on_threads<'w>(
    first: Piece<'w>,
    pieces: &mut Pieces<'_, 'w>,
    release: &dyn Fn(u64),
    main: Parser_,
    opts: ParseOptions,
    cx: &mut Context<'_>,
) -> Result<Result<Profile, PluginError>, Box<(Piece<'w>, Parser_)>> {
    let threads = opts.threads.max(1);
    let (work_tx, work_rx) = mpsc::sync_channel::<Job>(threads);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let (main_tx, main_rx) = mpsc::channel::<Parser_>();
    std::thread::scope(|scope| {
        // Owned by this closure: however it returns, the work channel closes and the workers
        // stop before the scope joins them.
        let (work_tx, done_rx) = (work_tx, done_rx);
        let workers = spawn_workers(scope, threads, &work_rx, done_tx, opts);
        // The absorber puts finished pieces into `main`'s profile in input order, so that this
        // thread only reads and hands out pieces (reading and absorbing on one thread made it
        // the bottleneck). What each piece reported comes back here in order: the context is
        // this thread's. It gets `main` once it runs, so a thread not given keeps it here.
        let (absorbed_tx, absorbed_rx) = mpsc::channel::<Absorbed>();
        let absorber = match workers {
            0 => None,
            _ => std::thread::Builder::new()
                .spawn_scoped(scope, move || {
                    main_rx
                        .recv()
                        .ok()
                        .map(|main| absorb_in_order(main, done_rx, absorbed_tx))
                })
                .ok(),
        };
        let Some(absorber) = absorber else {
            return Err(Box::new((first, main)));
        };
        if main_tx.send(main).is_err() {
            return Ok(Err(thread_gone()));
        }
        let handout = Handout {
            work_tx,
            absorbed_rx,
            window: workers + 1,
        };
        let parsed = read_on_threads(first, pieces, handout, absorber, release, cx);
        Ok(parsed)
    })
}

/// Starts up to `threads` workers in `scope` and says how many started. Threads the system will
/// not give (a process limit, as in a container's pids.max) are done without: fewer workers, or
/// none and this thread alone.
fn spawn_workers<'scope, 'w: 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    threads: usize,
    work_rx: &'scope Mutex<mpsc::Receiver<Job<'w>>>,
    done_tx: mpsc::Sender<Done<'w>>,
    opts: ParseOptions,
) -> usize {
    let mut workers = 0;
    for worker in 0..threads {
        let done_tx = done_tx.clone();
        let spawned = std::thread::Builder::new()
            .spawn_scoped(scope, move || parse_pieces(worker, work_rx, done_tx, opts));
        match spawned {
            Ok(_) => workers += 1,
            Err(_) => break,
        }
    }
    workers
}

/// A worker: parses the pieces it takes from `work_rx` and sends each, with what came of it, to
/// the absorber, until either channel closes.
fn parse_pieces<'w>(
    worker: usize,
    work_rx: &Mutex<mpsc::Receiver<Job<'w>>>,
    done_tx: mpsc::Sender<Done<'w>>,
    opts: ParseOptions,
) {
    // One parser for all of this worker's pieces: its funcs and frames (and names) stay, so a
    // piece interns only the names new to this worker, and the absorber maps only those
    // (measured, 1 GB on two threads: 2.27 -> 2.13 s of CPU).
    let mut p = worker_parser(&opts);
    loop {
        // The lock is held only while taking a piece.
        let job = match work_rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok((index, piece)) = job else { return };
        let parsed = p.piece(piece.bytes());
        let report = std::mem::take(&mut p.report);
        let result = match parsed {
            Ok(()) => (report, Ok((p.line_no, p.take_piece(&opts)))),
            Err(e) => {
                // Its tables may hold what the failed line began: the next piece starts from
                // new ones (and the absorber's maps for this worker too).
                p = worker_parser(&opts);
                (report, Err(e))
            }
        };
        if done_tx.send((index, worker, piece, result)).is_err() {
            return;
        }
    }
}

/// A new parser for a worker: it reads single-count pieces only, and fails a piece with a
/// count too large at its own scale, for the absorber to read again ([`Parser_::worker`]).
fn worker_parser(opts: &ParseOptions) -> Parser_ {
    let mut p = Parser_::new(opts);
    p.worker = true;
    p.set_mode(false);
    p
}

/// The error when a thread of a threaded parse is gone before its work is done.
fn thread_gone() -> PluginError {
    PluginError::internal("a folded parser thread stopped")
}

/// This thread's ends of a threaded parse's channels.
struct Handout<'w> {
    /// Pieces to the workers.
    work_tx: mpsc::SyncSender<Job<'w>>,
    /// What the absorber made of each piece, in input order.
    absorbed_rx: mpsc::Receiver<Absorbed>,
    /// Pieces in flight at most: one per worker plus one.
    window: usize,
}

/// This thread's part of a threaded parse: hands out the pieces ([`hand_out_pieces`]), then
/// stops the workers and takes the profile back from the absorber.
fn read_on_threads<'w>(
    first: Piece<'w>,
    pieces: &mut Pieces<'_, 'w>,
    handout: Handout<'w>,
    absorber: std::thread::ScopedJoinHandle<'_, Option<Parser_>>,
    release: &dyn Fn(u64),
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut reporter = Reporter::default();
    hand_out_pieces(first, pieces, &handout, release, &mut reporter, cx)?;
    // The workers stop, then the absorber, which gives the profile back.
    drop(handout.work_tx);
    let main = absorber.join().ok().flatten().ok_or_else(thread_gone)?;
    reporter.finish(cx);
    Ok(main.finish())
}

/// Hands `first` and the pieces after it to the workers as they are read, no more than the
/// window in flight, and passes on what each reported as the absorber puts it in the profile
/// (in input order); done when every piece is in, or at the first error. The bytes of an input
/// in memory are released up to the end of each piece absorbed.
fn hand_out_pieces<'w>(
    first: Piece<'w>,
    pieces: &mut Pieces<'_, 'w>,
    handout: &Handout<'w>,
    release: &dyn Fn(u64),
    reporter: &mut Reporter,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let mut next = Some(first);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let (mut sent, mut returned) = (0usize, 0usize);
    // A piece that could not be read (a line too long) is reported once the pieces before it
    // are in, whose own errors come first, as on one thread; `lines_in` is their lines.
    let (mut unread, mut lines_in) = (None, 0u64);
    // Where each piece in flight ends: an input in memory is done with up to there once the
    // piece is back (its bytes are read in place, not copied).
    let (mut ends, mut end) = (std::collections::VecDeque::new(), 0u64);
    loop {
        while unread.is_none() && sent - returned < handout.window {
            let Some(piece) = next.take() else { break };
            end += piece.bytes().len() as u64;
            ends.push_back(end);
            handout
                .work_tx
                .send((sent, piece))
                .map_err(|_| thread_gone())?;
            sent += 1;
            match pieces.next(pool.pop().unwrap_or_default()) {
                Ok(piece) => next = piece,
                Err(e) => unread = Some(e),
            }
        }
        if returned == sent {
            return match unread {
                Some(e) => Err(e.at_line(lines_in + 1, 1)),
                None => Ok(()),
            };
        }
        match handout.absorbed_rx.recv().map_err(|_| thread_gone())? {
            Absorbed::Piece {
                report,
                lines,
                piece_lines,
                offset,
                buf,
            } => {
                reporter.take(report, lines, offset, cx);
                lines_in = lines + piece_lines;
                pool.push(buf);
                returned += 1;
                if let Some(end) = ends.pop_front() {
                    release(end);
                }
            }
            Absorbed::Failed {
                report,
                lines,
                offset,
                error,
            } => {
                reporter.take(report, lines, offset, cx);
                return Err(error);
            }
        }
    }
}

/// What the absorber tells the reading thread about a piece, in input order.
enum Absorbed {
    /// The piece is in the profile: what it reported, the lines and bytes before it, its
    /// lines, and its buffer to read into again.
    Piece {
        report: Report,
        lines: u64,
        piece_lines: u64,
        offset: u64,
        buf: Vec<u8>,
    },
    /// Reading stops at this piece: what it reported up to the error, and the error.
    Failed {
        report: Report,
        lines: u64,
        offset: u64,
        error: PluginError,
    },
}

/// Puts the pieces parsed by the workers into `main`'s profile in input order (so ids, rows,
/// warnings and the first error are those of a one-thread parse); returns `main` when the
/// workers are done or a piece failed.
fn absorb_in_order(
    mut main: Parser_,
    done_rx: mpsc::Receiver<Done<'_>>,
    out: mpsc::Sender<Absorbed>,
) -> Parser_ {
    let mut finished = BTreeMap::new();
    let mut merged = 0usize;
    let (mut lines, mut offset) = (0u64, 0u64);
    // An upper bound of every sum so far (counts are never negative), at the profile's scale:
    // while absorbing a piece cannot overflow, its lines get exactly the checks they would get
    // on one thread.
    let mut bound = 0i128;
    // Each worker's funcs and frames in `main`, as far as its pieces absorbed so far have them.
    let mut maps: Vec<PieceMaps> = Vec::new();
    while let Ok((index, worker, piece, result)) = done_rx.recv() {
        finished.insert(index, (worker, piece, result));
        while let Some((worker, piece, result)) = finished.remove(&merged) {
            if maps.len() <= worker {
                maps.resize_with(worker + 1, PieceMaps::default);
            }
            let maps = &mut maps[worker];
            merged += 1;
            let piece_len = piece.bytes().len() as u64;
            let (report, parsed) = result;
            let absorbable = match &parsed {
                Ok((n_lines, part)) => {
                    absorb_bound(&main.b, bound, part).map(|b| (b, *n_lines, part))
                }
                Err(_) => None,
            };
            let (report, failed, n_lines) = if let Some((new_bound, n_lines, part)) = absorbable {
                bound = new_bound;
                // The piece's most precise count sets the profile's scale if it is more
                // precise than every count before the piece.
                let (most, at) = report.max_decimals[0];
                if most > main.b.decimals(0) {
                    main.scale_from[0] = lines + at;
                }
                (
                    report,
                    main.b.absorb_piece(part, maps).err().map(PluginError::from),
                    n_lines,
                )
            } else {
                // The piece failed, or a sum could overflow at the profile's scale: parse it
                // again here, into the profile itself, so that every line gets the checks (and
                // the error) it gets on one thread, whose scale and sums depend on the lines
                // before the piece. Rare: bad input.
                main.line_no = 0;
                main.line_base = lines;
                main.prev_frames.clear();
                let again = main.piece(piece.bytes());
                match &parsed {
                    // The worker's next piece has new tables.
                    Err(_) => *maps = PieceMaps::default(),
                    // Its next pieces bring only the names this one did not.
                    Ok((_, part)) => maps.take_tables(part),
                }
                bound = main.b.profile().samples.values[0]
                    .iter()
                    .map(|&v| i128::from(v))
                    .max()
                    .unwrap_or(0);
                let report = std::mem::take(&mut main.report);
                (
                    report,
                    again.err().map(|e| shifted(e, lines, offset)),
                    main.line_no,
                )
            };
            let message = match failed {
                Some(error) => Absorbed::Failed {
                    report,
                    lines,
                    offset,
                    error,
                },
                None => Absorbed::Piece {
                    report,
                    lines,
                    piece_lines: n_lines,
                    offset,
                    buf: piece.buf,
                },
            };
            let stop = matches!(message, Absorbed::Failed { .. });
            lines += n_lines;
            offset += piece_len;
            if out.send(message).is_err() || stop {
                return main;
            }
        }
    }
    main
}

/// The bound of every sum after absorbing `part` into `b` (whose sums are at most `bound`), or
/// `None` if some sum might not fit in 64 bits. Counts are never negative, so the sum of a
/// piece's rows bounds each of them.
fn absorb_bound(b: &ProfileBuilder, bound: i128, part: &Profile) -> Option<i128> {
    let (ours, theirs) = (b.decimals(0), part.value_types[0].decimals);
    let scale = ours.max(theirs);
    let part_sum: i128 = part.samples.values[0].iter().map(|&v| i128::from(v)).sum();
    let new = bound * 10i128.pow(scale - ours) + part_sum * 10i128.pow(scale - theirs);
    (new <= i128::from(i64::MAX)).then_some(new)
}

/// Confidence that `head`, 4 KiB or more without a line end (the start of a line longer than
/// the head, or a whole input without a final newline), is folded stacks: a deep stack
/// (thousands of frames), or a few frames of long names (C++ templates demangled to kilobytes
/// each), is a line longer than any head a host reads. Text without control characters but
/// tabs (bytes that are not UTF-8 are read lossily, as the parser reads them), not a `#`
/// comment, with a `;` is a weak 5, read as folded only when no other format knows the input;
/// then the parser reads the whole line and says what is wrong with it, if anything (other
/// long text with a `;`, such as minified code, then gets the parser's error instead of
/// "cannot tell the input's format"). JSON is not: a profile of another tool written on one
/// line (Firefox's `"oscpu":"X11; Linux x86_64"`) failed at a blank inside one of its strings.
fn long_first_line(head: &[u8]) -> u32 {
    let text = head.trim_ascii_start();
    if text.starts_with(b"#") || profconv_plugin::starts_as_json(text) {
        return 0;
    }
    let plain = !head.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f);
    if plain && memchr(b';', head).is_some() {
        5
    } else {
        0
    }
}

/// Confidence that `head` is folded stacks: every complete line ends in a count.
pub fn sniff(head: &[u8]) -> u32 {
    // A byte-order mark before the content is read as whitespace, as the parser does.
    let head = head.strip_prefix(BOM).unwrap_or(head);
    if head.is_empty() || memchr(0, head).is_some() {
        return 0;
    }
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..i],
        None if head.len() < 4096 => head,
        None => return long_first_line(head),
    };
    let (mut good, mut with_semicolon, mut bad) = (0, 0, 0);
    // The first 64 data lines: blank and comment lines are skipped before counting, so a long
    // comment block at the top (metadata) does not hide the stacks below it.
    let data = complete
        .split(|&c| c == b'\n')
        .map(|line| trim_line(line).1)
        .filter(|line| !line.is_empty() && !is_comment(line))
        .take(64);
    for line in data {
        let Some(sp) = memrchr2(b' ', b'\t', line) else {
            if count(line).is_none() {
                bad += 1;
            } // else a count without a stack (py-spy): the parser skips it too
            continue;
        };
        if count(&line[sp + 1..]).is_none() || line[..sp].trim_ascii().is_empty() {
            bad += 1;
            continue;
        }
        good += 1;
        if memchr(b';', &line[..sp]).is_some() {
            with_semicolon += 1;
        }
    }
    match (good, with_semicolon, bad) {
        (0, _, _) => 0,
        (_, 0, 0) => 30,
        (_, _, 0) => 70,
        // Stacks with a bad line among them (a truncated or hand-edited file): a weak score, so
        // that with nothing else recognising the input it is read as folded, and the parser
        // says which line is bad (or skips it, with `-O skip-bad-lines`).
        (good, with_semicolon, bad) if with_semicolon >= 4 && bad * 10 <= good => 10,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::testing::first_seen_tree;

    fn parse(text: &[u8], skip: bool) -> Result<Profile, PluginError> {
        parse_folded(&mut Input::from_slice(text), skip, &mut Context::silent())
    }

    /// The count grammar (inferno's): one digit or more, then optionally a point and any
    /// digits; and the last blank of a line, near its end or far from it, as `memrchr2` finds it.
    #[test]
    fn counts_and_their_blank_are_read_as_the_grammar_says() {
        let int_frac = |t: &'static [u8]| count(t).map(|(i, f)| (i, f.map(<[u8]>::to_vec)));
        assert_eq!(int_frac(b"0"), Some((&b"0"[..], None)));
        assert_eq!(int_frac(b"42"), Some((&b"42"[..], None)));
        assert_eq!(int_frac(b"12."), Some((&b"12"[..], Some(vec![]))));
        assert_eq!(int_frac(b"12.50"), Some((&b"12"[..], Some(b"50".to_vec()))));
        assert_eq!(int_frac(b"007.0"), Some((&b"007"[..], Some(b"0".to_vec()))));
        for bad in [
            &b""[..],
            b".5",
            b".",
            b"1.2.3",
            b"1e5",
            b"-1",
            b"+1",
            b"1 ",
            b" 1",
            b"12a",
            b"1,5",
            b"\xd9\xa3",
            b"1.5x",
        ] {
            assert_eq!(count(bad), None, "{bad:?}");
        }
        let mut lines: Vec<Vec<u8>> = vec![b"".to_vec(), b"a".to_vec(), b" ".to_vec()];
        for far in [0, 1, 31, 32, 33, 64, 100] {
            for blank in [b' ', b'\t'] {
                let mut l = b"a;b".to_vec();
                l.push(blank);
                l.extend(std::iter::repeat_n(b'7', far));
                lines.push(l.clone());
                l.insert(1, if blank == b' ' { b'\t' } else { b' ' });
                lines.push(l);
            }
            lines.push(vec![b'x'; far]);
        }
        for l in &lines {
            assert_eq!(last_blank(l), memrchr2(b' ', b'\t', l), "{l:?}");
        }
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
        first_seen_tree(&p.view(), false)
    }

    /// Both columns of every node (`self_before=` is `self=`).
    fn diff_tree(p: &Profile) -> String {
        first_seen_tree(&p.view(), true)
    }

    /// The parse's profile, or its error, and its warnings.
    fn parse_warned(text: &[u8], skip: bool) -> (Result<Profile, PluginError>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let p = parse_folded(
            &mut Input::from_slice(text),
            skip,
            &mut Context::with_sink(&mut sink),
        );
        (p, warnings)
    }

    /// inferno's differential format: the first data line's two counts make every line
    /// `STACK BEFORE AFTER`, read into columns `before` and `after` with metadata `diff`, as
    /// `profconv diff` builds. Blank lines and comments before it decide nothing; two counts
    /// without a stack (` 3 4`: diffed py-spy files start so) decide, and are skipped.
    #[test]
    fn differential_files_read_before_and_after_columns() {
        let text =
            b"# diff\n\n 3 4\nmain;a 10 20\nmain;b\t5  0\nmain;a 1 2\nmain 0 7\nmain;a;c 0 3\n";
        let (p, warnings) = parse_warned(text, false);
        let p = p.unwrap();
        let v = p.view();
        assert_eq!(v.meta("diff"), Some(DIFF_COLUMNS));
        assert_eq!(v.meta("source_format"), Some("folded"));
        let cols: Vec<_> = (0..v.value_types.len())
            .map(|c| {
                (
                    v.value_type_name(c),
                    v.value_type_unit(c),
                    v.value_types[c].kind,
                )
            })
            .collect();
        assert_eq!(
            cols,
            [
                ("before", "count", ValueKind::Weight),
                ("after", "count", ValueKind::Weight)
            ]
        );
        let want = "main self=0 total=16 self_after=7 total_after=32\n  a self=11 total=11 self_after=22 total_after=25\n    c self=0 total=0 self_after=3 total_after=3\n  b self=5 total=5 self_after=0 total_after=0\n";
        assert_eq!(diff_tree(&p), want);
        assert_eq!(
            warnings,
            ["line 3: a count without a stack was skipped"],
            "no warning about the two counts"
        );
        assert_eq!(diff_tree(&parse_streaming(text).unwrap()), want);
        // Streamed through blocks of every size and across the 1 MiB block boundary.
        let mut big = Vec::new();
        for i in 0..100_000 {
            big.extend_from_slice(
                format!("root;f{};g{} {} {}\n", i % 13, i % 7, i % 5, i % 3).as_bytes(),
            );
        }
        big.extend_from_slice(b"root;last 9 8"); // no final newline
        let a = diff_tree(&parse(&big, false).unwrap());
        assert_eq!(a, diff_tree(&parse_streaming(&big).unwrap()));
        assert!(
            a.contains("last self=9 total=9 self_after=8 total_after=8"),
            "{a}"
        );
        // Two counts and no stack, after the first data line: skipped like one count.
        let (p, warnings) = parse_warned(b"a 1 2\n 3 4\n5 6\n", false);
        assert_eq!(
            diff_tree(&p.unwrap()),
            "a self=1 total=1 self_after=2 total_after=2\n"
        );
        assert_eq!(
            warnings,
            [
                "line 2: a count without a stack was skipped",
                "2 counts without a stack were skipped in all"
            ]
        );
    }

    /// Each column keeps its own decimals: the before counts' do not scale the after counts.
    #[test]
    fn differential_columns_keep_their_own_decimals() {
        let text = b"a;b 1.5 2\na;c 0.25 3\na 1 4.125\n";
        let p = parse(text, false).unwrap();
        assert_eq!(
            (p.value_types[0].decimals, p.value_types[1].decimals),
            (2, 3)
        );
        assert_eq!(
            diff_tree(&p),
            "a self=1.00 total=2.75 self_after=4.125 total_after=9.125\n  b self=1.50 total=1.50 self_after=2.000 total_after=2.000\n  c self=0.25 total=0.25 self_after=3.000 total_after=3.000\n"
        );
        assert_eq!(diff_tree(&parse_streaming(text).unwrap()), diff_tree(&p));
        let same = ParseOptions::default();
        same_in_batches(text, same);
        // A count that does not fit once its column is rescaled: only its column's counts
        // matter.
        for (ok, tree) in [
            (
                &b"a 10000000000 1\nb 1 0.000000001\n"[..],
                "a self=10000000000 total=10000000000 self_after=1.000000000 total_after=1.000000000\n\
                 b self=1 total=1 self_after=0.000000001 total_after=0.000000001\n",
            ),
            (
                b"a 1 10000000000\nb 0.000000001 1\n",
                "a self=1.000000000 total=1.000000000 self_after=10000000000 total_after=10000000000\n\
                 b self=0.000000001 total=0.000000001 self_after=1 total_after=1\n",
            ),
        ] {
            assert_eq!(diff_tree(&parse(ok, false).unwrap()), tree);
        }
        let e = parse(b"a 1 10000000000\nb 1 0.000000001\n", false).unwrap_err();
        assert!(e.message.contains("needs 9 decimals"), "{e}");
        assert_eq!((e.line, e.column), (Some(2), Some(5)));
        let e = parse(b"a 10000000000 1\nb 0.000000001 1\n", false).unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(3)));
    }

    /// In a differential file a line with one count is bad: an error at its count naming the
    /// first data line, or with `skip-bad-lines` a skipped line like any other.
    #[test]
    fn a_single_count_in_a_differential_file_is_a_bad_line() {
        let text = b"# c\nmain;a 1 2\nmain;b 3 4\n  main;c 5\nmain;d x 6\nmain;e 7 8\n";
        let e = parse(text, false).unwrap_err();
        assert_eq!(
            (e.line, e.column, e.byte_offset),
            (Some(4), Some(10), Some(35)),
            "{e}"
        );
        assert_eq!(
            e.message,
            "expected two counts, `STACK BEFORE AFTER`: the file is differential (its first data line, line 2, has two)"
        );
        assert_eq!(parse_streaming(text).unwrap_err(), e);
        let (p, warnings) = parse_warned(text, true);
        assert_eq!(
            diff_tree(&p.unwrap()),
            "main self=0 total=11 self_after=0 total_after=14\n  a self=1 total=1 self_after=2 total_after=2\n  b self=3 total=3 self_after=4 total_after=4\n  e self=7 total=7 self_after=8 total_after=8\n"
        );
        assert_eq!(
            warnings,
            [
                "skipped line 4, column 10: expected two counts, `STACK BEFORE AFTER`: the file is differential (its first data line, line 2, has two)",
                "skipped line 5, column 10: expected two counts, `STACK BEFORE AFTER`: the file is differential (its first data line, line 2, has two)",
                "skipped 2 line(s) without a valid count"
            ]
        );
        // A last token that is not a count is the usual error, at that token.
        let e = parse(b"a 1 2\nb 3 x\n", false).unwrap_err();
        assert!(e.message.contains("found `x`"), "{e}");
        assert_eq!((e.line, e.column), (Some(2), Some(5)));
    }

    /// A file whose first data line has one count reads as it always did: a later line with
    /// two counts keeps its first in the leaf's name.
    #[test]
    fn single_count_files_are_not_differential() {
        let (p, warnings) = parse_warned(b"a;b 1\na;c 2 3\n", false);
        let p = p.unwrap();
        assert_eq!(p.view().meta("diff"), None);
        assert_eq!(p.value_types.len(), 1);
        assert_eq!(p.view().value_type_name(0), "samples");
        assert_eq!(
            tree(&p),
            "a self=0 total=4\n  b self=1 total=1\n  c 2 self=3 total=3\n"
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        // No data line at all: one `samples` column, as before.
        for text in [&b""[..], b"# only\n", b" 5\n"] {
            let p = parse(text, false).unwrap();
            assert_eq!(p.value_types.len(), 1);
            assert_eq!(p.view().value_type_name(0), "samples");
        }
    }

    /// A UTF-8 byte-order mark is leading whitespace, on the first line or any other: before a
    /// stack, a comment or a count; error columns count its three bytes.
    #[test]
    fn a_byte_order_mark_reads_as_leading_whitespace() {
        let text = b"\xef\xbb\xbfa;b 1\na;c 2\n";
        let p = parse(text, false).unwrap();
        assert_eq!(
            tree(&p),
            "a self=0 total=3\n  b self=1 total=1\n  c self=2 total=2\n"
        );
        assert_eq!(tree(&parse_streaming(text).unwrap()), tree(&p));
        let (p, warnings) = parse_warned(b"\xef\xbb\xbf# austin: 3\n# mode: wall\na;b 1\n", false);
        assert_eq!(tree(&p.unwrap()), "a self=0 total=1\n  b self=1 total=1\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        // Only a mark, marks and blanks, a mark on a later line, a mark before a differential
        // first line.
        assert_eq!(
            parse(b"\xef\xbb\xbf", false).unwrap().samples.stack.len(),
            0
        );
        let p = parse(
            b" \xef\xbb\xbf \xef\xbb\xbf\ta 1\nb 2\n\xef\xbb\xbfb 3\n",
            false,
        )
        .unwrap();
        assert_eq!(tree(&p), "a self=1 total=1\nb self=5 total=5\n");
        let p = parse(b"\xef\xbb\xbfa 1 2\n", false).unwrap();
        assert_eq!(
            diff_tree(&p),
            "a self=1 total=1 self_after=2 total_after=2\n"
        );
        // A mark inside a name is part of it.
        let p = parse(b"a;\xef\xbb\xbfb 1\n", false).unwrap();
        assert_eq!(tree(&p), "a self=0 total=1\n  \u{feff}b self=1 total=1\n");
        let e = parse(b"\xef\xbb\xbfa;b x\n", false).unwrap_err();
        assert_eq!(
            (e.line, e.column, e.byte_offset),
            (Some(1), Some(8), Some(7))
        );
    }

    #[test]
    fn sums_repeats_and_reuses_prefixes() {
        let p = parse(b"a;b;c 1\na;b;d 2\r\n\n  \na;b;c 3\na 4\nx;b 1\n", false).unwrap();
        assert_eq!(
            tree(&p),
            "a self=4 total=10\n  b self=0 total=6\n    c self=4 total=4\n    d self=2 total=2\nx self=0 total=1\n  b self=1 total=1\n"
        );
        assert_eq!(p.stacks.prefix.len(), 6);
    }

    /// `#` and whitespace starts a comment (austin's metadata); a `#` before anything else is
    /// the start of a root name, as inferno and flamegraph.pl read it.
    #[test]
    fn comments_are_hash_and_whitespace_and_hash_names_are_frames() {
        let text = b"# austin: 3.3.0\n#\n\t#\tmode: wall\n#1 worker;run 3\n#;a 2\n#x 1\n";
        let p = parse(text, false).unwrap();
        assert_eq!(
            tree(&p),
            "#1 worker self=0 total=3\n  run self=3 total=3\n# self=0 total=2\n  a self=2 total=2\n#x self=1 total=1\n"
        );
        assert_eq!(tree(&parse_streaming(text).unwrap()), tree(&p));
        assert!(sniff(b"# austin: 3.3.0\n#1 worker;run 3\n") >= 50);
        assert_eq!(
            sniff(b"# duration: 23873\n"),
            0,
            "only a comment: no stack seen"
        );
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

    /// A float's noise past nine decimals (`0.30000000000000004`, as Python prints it) is cut,
    /// and what is left after the cut ends in zeros that set no scale: the column takes one
    /// decimal, so a large count beside it still fits.
    #[test]
    fn zeros_left_by_cutting_a_fraction_set_no_scale() {
        let (p, warnings) =
            parse_warned(b"main;a 0.30000000000000004\nmain;b 17179869184\n", false);
        let p = p.unwrap();
        assert_eq!(p.value_types[0].decimals, 1);
        assert_eq!(
            tree(&p),
            "main self=0.0 total=17179869184.3\n  a self=0.3 total=0.3\n  b self=17179869184.0 total=17179869184.0\n"
        );
        assert_eq!(
            warnings,
            ["counts with more than 9 decimals were truncated"]
        );
        let p = parse(b"a 1.1000000000000001\nb 3\n", false).unwrap();
        assert_eq!(p.value_types[0].decimals, 1);
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
        assert!(e.message.contains("too large"), "{e}");
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
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("line 1: frame names that are not UTF-8"))
        );
        // Valid names after an invalid one on a line, an invalid name seen again, and one
        // whose replacement is a name already seen: each the frame a lossy reading gives.
        let text = b"a;b 1\na;\xffc;d 2\na;\xffc;d 4\n\xef\xbf\xbdc;d 8\na;b;\xff 16\n";
        let (mut first, mut streamed) = (Vec::new(), Vec::new());
        let p = parse_folded(
            &mut Input::from_slice(text),
            false,
            &mut Context::with_sink(&mut |_: u32, m: &str| first.push(m.to_string())),
        )
        .unwrap();
        let q = parse_folded(
            &mut Input::from_reader(&mut &text[..]),
            false,
            &mut Context::with_sink(&mut |_: u32, m: &str| streamed.push(m.to_string())),
        )
        .unwrap();
        let want = "a self=0 total=23\n  b self=1 total=17\n    \u{fffd} self=16 total=16\n  \u{fffd}c self=0 total=6\n    d self=6 total=6\n\u{fffd}c self=0 total=8\n  d self=8 total=8\n";
        assert_eq!(tree(&p), want);
        // a, b, \u{fffd}, \u{fffd}c (from two spellings) and d.
        assert_eq!(p.frames.func.len(), 5);
        assert_eq!(tree(&q), want);
        assert_eq!(
            first,
            [
                "line 2: frame names that are not UTF-8; invalid bytes are replaced with U+FFFD (names that differ only there are read as one)"
            ]
        );
        assert_eq!(streamed, first);
    }

    #[test]
    fn sniffing() {
        // 70 with `;`, 30 without: the PVM sniffer's 75 and 85 for PVM-shaped folded files
        // rely on these.
        assert_eq!(sniff(b"a;b;c 1\nd;e 2\n"), 70);
        assert_eq!(sniff(b"main 10\n"), 30);
        assert_eq!(sniff(b"PVMTRACE 1\nC 0 f\n"), 0);
        assert_eq!(sniff(b"\x00\x01\x02"), 0);
        assert!(
            sniff(b"main;f (x.py:3) 5\n 3\nmain;g 1\n") >= 50,
            "py-spy's stackless line"
        );
        assert_eq!(sniff(b"events: Ir\nfn=main\n"), 0);
        // A byte-order mark before the content, or at the start of a later line.
        assert!(sniff(b"\xef\xbb\xbfa;b;c 1\nd;e 2\n") >= 50);
        assert!(sniff(b"\xef\xbb\xbf# austin: 3\na;b 1\n\xef\xbb\xbfa;c 2\n") >= 50);
        assert_eq!(sniff(b"\xef\xbb\xbf"), 0);
        assert_eq!(sniff(b"\xef\xbb\xbfevents: Ir\n"), 0);
        // Differential files are folded stacks too.
        assert!(sniff(b"a;b 1 2\nc;d 3 4\n") >= 50);
        // A bad line among ten good ones (four with `;`) is a weak 10, so that the parser can
        // say where it is; more bad lines, or fewer stacks, say nothing.
        let mut text: Vec<u8> = (0..10)
            .flat_map(|i| format!("main;f{i} {i}\n").into_bytes())
            .collect();
        text.extend_from_slice(b"main;truncated\n");
        assert_eq!(sniff(&text), 10);
        text.extend_from_slice(b"another bad line\n");
        assert_eq!(sniff(&text), 0);
        assert_eq!(sniff(b"a;b 1\nc;d 2\ne;f 3\nbad\n"), 0);
        assert_eq!(sniff(b"events: Ir\nfn=main\n1 5\n"), 0);
        // A first line longer than the head (a stack thousands of frames deep): a weak 5 when
        // it reads as frames, nothing for other long text.
        let deep: String = (0..5000).map(|i| format!("frame_{i};")).collect();
        assert_eq!(sniff(&deep.as_bytes()[..16 * 1024]), 5);
        assert_eq!(sniff(&deep.as_bytes()[..16 * 1024 - 1]), 5);
        let cut = "é;".repeat(9000);
        assert_eq!(
            sniff(&cut.as_bytes()[..16 * 1024 + 1]),
            5,
            "cut inside a character"
        );
        assert_eq!(sniff(&[b'x'; 16 * 1024]), 0);
        // A few frames of long names (C++ templates demangled to kilobytes), and names that
        // are not UTF-8 (perf writes them): 64 `;` were needed, and valid UTF-8.
        let templates: String = (0..30)
            .map(|i| {
                format!(
                    "std::function<void (boost::{}{i})>::operator();",
                    "x".repeat(600)
                )
            })
            .collect();
        assert_eq!(sniff(&templates.as_bytes()[..16 * 1024]), 5);
        let latin1 = [b"caf\xe9;".repeat(2), vec![b'y'; 16 * 1024]].concat();
        assert_eq!(sniff(&latin1[..16 * 1024]), 5);
        // Lines ended by a carriage return alone (old Mac text) are no long line of frames.
        let cr: String = (0..3000).map(|i| format!("main;f{i} {i}\r")).collect();
        assert_eq!(sniff(&cr.as_bytes()[..16 * 1024]), 0);
        assert_eq!(
            sniff(format!("# {deep}").as_bytes().get(..16 * 1024).unwrap()),
            0,
            "a comment"
        );
        assert_eq!(
            sniff(
                deep.replace(';', "\x01")
                    .as_bytes()
                    .get(..16 * 1024)
                    .unwrap()
            ),
            0
        );
    }

    /// A profile of another tool in JSON on one line (a Firefox Profiler profile, whose
    /// `meta.oscpu` is `X11; Linux x86_64`; a Chrome `.cpuprofile` with a `data:...;base64`
    /// URL) is no line of frames, though it has a `;`: it was read as folded and failed at a
    /// blank inside one of its strings, hundreds of KiB in. A deep stack still is one.
    #[test]
    fn one_line_json_with_a_semicolon_is_not_a_long_line_of_frames() {
        let firefox = format!(
            r#"{{"meta":{{"version":24,"product":"Firefox","oscpu":"X11; Linux x86_64"}},"threads":[{}]}}"#,
            r#"{"name":"GeckoMain","stringArray":["main","a b"]},"#.repeat(500)
        );
        let cpuprofile = format!(
            r#"  [ {{"nodes":[{}]}}]"#,
            r#"{"callFrame":{"functionName":"f","url":"data:text/javascript;base64,AA"}},"#
                .repeat(300)
        );
        for json in [&firefox, &cpuprofile] {
            let head = &json.as_bytes()[..16 * 1024];
            assert_eq!(sniff(head), 0, "{}", &json[..40]);
            assert_eq!(sniff(&[BOM, head].concat()[..16 * 1024]), 0);
        }
        // Stacks whose first frames start with a brace or a bracket are still stacks.
        for root in ["[unknown]", "{closure}", "[\"x\"]", "[{closure}]", "[{1}]"] {
            let deep: String = (0..3000).map(|i| format!("{root};frame_{i};")).collect();
            assert_eq!(sniff(&deep.as_bytes()[..16 * 1024]), 5, "{root}");
        }
    }

    /// Blank and comment lines at the top do not count against the 64 lines the sniffer reads:
    /// stacks below 64 or more of them (a metadata block) are still recognised, within the
    /// 16 KiB head; the 64 lines it reads are data lines.
    #[test]
    fn sniffing_skips_comments_before_counting_64_lines() {
        let file = |comments: usize, blanks: usize| {
            let mut text = String::new();
            for i in 1..=comments {
                text += &format!("# meta {i}: value\n");
                if i <= blanks {
                    text += "\n";
                }
            }
            text + "main;a 3\n"
        };
        for (comments, blanks) in [(63, 0), (64, 0), (100, 0), (40, 40), (300, 300)] {
            let text = file(comments, blanks);
            assert!(text.len() <= 16 * 1024);
            assert_eq!(
                sniff(text.as_bytes()),
                70,
                "{comments} comments, {blanks} blanks"
            );
        }
        // At most 64 data lines are read: a bad 65th line is not seen, a bad 64th is.
        let stacks = |n: usize| -> String { (0..n).map(|i| format!("main;f{i} {i}\n")).collect() };
        let comments = "# c\n".repeat(100);
        assert_eq!(
            sniff(format!("{comments}{}bad\n", stacks(64)).as_bytes()),
            70
        );
        assert_eq!(
            sniff(format!("{comments}{}bad\n", stacks(63)).as_bytes()),
            10
        );
    }

    /// A streamed line longer than the bound is an error at the byte where it starts, on one
    /// thread or several, instead of a buffer that grows with the input; lines up to the bound
    /// are read.
    #[test]
    fn a_line_longer_than_the_bound_is_an_error_at_its_start() {
        let mut text = b"a;b 1\nc 2\n".to_vec();
        let long_at = text.len();
        text.extend(std::iter::repeat_n(b'x', 5000));
        text.extend_from_slice(b" 3\nd 4\n");
        // Streamed or in memory (a mapped file: the same bound, the same error), on one thread
        // or cut into pieces.
        for threads in [1, 2] {
            for streaming in [true, false] {
                let opts = |max_line| ParseOptions {
                    threads,
                    piece_size: 100,
                    max_line,
                    ..ParseOptions::default()
                };
                let err = outcome(&text, opts(4096), streaming);
                assert!(
                    err.starts_with(&format!(
                        "error line 3, column 1: no newline in 4096 bytes: folded stacks have one stack per line, each ending in a newline (is this a folded-stacks file?) at offset Some({long_at})"
                    )),
                    "{threads} threads, streaming {streaming}: {err}"
                );
                let ok = outcome(&text, opts(8192), streaming);
                assert!(!ok.starts_with("error"), "{threads} threads: {ok}");
                // A bad line before it is the error, as the lines before an error come first.
                let bad = [&b"ok 1\nbad\n"[..], &text].concat();
                let err = outcome(&bad, opts(4096), streaming);
                assert!(
                    err.starts_with("error line 2, column 4: expected `STACK COUNT`"),
                    "{threads} threads, streaming {streaming}: {err}"
                );
            }
        }
    }

    /// A read that fails after some whole lines (a corrupt gzip stream) is the run's error on
    /// any number of threads, after those lines' warnings, even from a reader that reports the
    /// end of its input afterwards instead of failing again: the lines read before the error
    /// were dropped on several threads, and a differential file then went on to read nothing
    /// more and end without an error.
    #[test]
    fn a_read_error_after_whole_lines_is_the_error_on_any_thread_count() {
        /// `text`, then one failure, then the end of the input.
        struct FailsOnce<'t>(&'t [u8], bool);
        impl std::io::Read for FailsOnce<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if !self.0.is_empty() {
                    let n = buf.len().min(self.0.len());
                    buf[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    return Ok(n);
                }
                if !self.1 {
                    self.1 = true;
                    return Err(std::io::Error::other("the stream is corrupt"));
                }
                Ok(0)
            }
        }
        let texts: [&[u8]; 2] = [
            b"caf\xe9 1\nb 1\nb 1\nb 1\nb 1\nc;d",
            b"caf\xe9 1 2\nb 1 2\nb 1 2\nb 1 2\nc;d",
        ];
        for text in texts {
            let mut seen = Vec::new();
            for threads in [1, 2] {
                let mut warnings = Vec::new();
                let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
                let mut cx = Context::with_sink(&mut sink).with_threads(threads);
                let mut r = FailsOnce(text, false);
                let opts = ParseOptions {
                    threads,
                    piece_size: 1 << 20,
                    ..ParseOptions::default()
                };
                let e = parse_folded_with(&mut Input::from_reader(&mut r), opts, &mut cx)
                    .expect_err("the read error");
                assert!(e.message.contains("the stream is corrupt"), "{}", e.message);
                seen.push((warnings, e.message));
            }
            assert_eq!(seen[0], seen[1], "{:?}", String::from_utf8_lossy(text));
            assert!(
                seen[0].0.iter().any(|w| w.contains("not UTF-8")),
                "{seen:?}"
            );
        }
    }

    /// Everything a parse yields: the tables, the warnings, or the error with its position.
    fn outcome(text: &[u8], opts: ParseOptions, streaming: bool) -> String {
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let mut cx = Context::with_sink(&mut sink).with_threads(opts.threads);
        let mut r: &[u8] = text;
        let mut input = if streaming {
            Input::from_reader(&mut r)
        } else {
            Input::from_slice(text)
        };
        let result = match parse_folded_with(&mut input, opts, &mut cx) {
            // Every table (no hash maps inside: the text is deterministic).
            Ok(p) => format!("{p:?}"),
            Err(e) => format!("error {e} at offset {:?}", e.byte_offset),
        };
        format!("{result}\nwarnings {warnings:?}")
    }

    /// A count that fits in 64 bits on its own but not at the scale an earlier line set says
    /// so, naming the decimals and the first line that needs them (it said only "count does
    /// not fit in 64 bits"), however the input is cut into pieces and threads.
    #[test]
    fn a_count_too_large_at_the_scale_names_the_scale_and_its_line() {
        let short = b"a 0.000000001\nb 9223372037\n";
        assert_eq!(
            outcome(short, ParseOptions::default(), true),
            "error line 2, column 3: count does not fit in 64 bits at 9 decimals, the scale line 1 \
             set (every count is kept with as many decimals as the most precise count so far) at \
             offset Some(16)\nwarnings []"
        );
        // The scale rises at line 1, then at line 4: line 4 set the scale line 6 overflows at.
        let later = b"x 0.5\ny 1\n# c\na 0.000000001\nc 0.000000002\nb 9223372037\nd 1\n";
        let e = outcome(later, ParseOptions::default(), true);
        assert!(
            e.contains("line 6, column 3: count does not fit in 64 bits at 9 decimals, the scale line 4 set"),
            "{e}"
        );
        same_with_threads(later, false);
        same_with_threads(later, true);
        same_with_threads(short, false);
        same_with_threads(short, true);
        // A count that needs the decimals itself.
        let own = b"a 1\nb 9223372037.000000001\n";
        let e = outcome(own, ParseOptions::default(), true);
        assert!(
            e.contains("line 2, column 3: count does not fit in 64 bits with its 9 decimals"),
            "{e}"
        );
        same_with_threads(own, false);
        same_with_threads(own, true);
        // A line whose rescaling failed and was skipped set no scale: a worker's piece that
        // held it named it as the line that set the scale.
        let skipped = b"a 0.1\nb 92233720368\nc 0.000000001\nd 922337203685477581\n";
        same_with_threads(skipped, true);
        // An integer part too large for 64 bits is too large at any scale.
        let e = outcome(
            b"a 0.1\nb 99999999999999999999\n",
            ParseOptions::default(),
            true,
        );
        assert!(
            e.contains(
                "column 3: count is too large: at most 2^63-1 (9223372036854775807) at offset"
            ),
            "{e}"
        );
    }

    /// A count from 2^63 to 2^64-1 fits in 64 bits unsigned, so "does not fit in 64 bits"
    /// misled: the message names the limit, 2^63-1, which is still accepted, and reads as the
    /// other readers' numbers too large do.
    #[test]
    fn a_count_above_i64_max_names_the_limit() {
        for count in [
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
        ] {
            let input = format!("a 1\nb {count}\n");
            let e = outcome(input.as_bytes(), ParseOptions::default(), true);
            assert!(
                e.contains(
                    "line 2, column 3: count is too large: at most 2^63-1 (9223372036854775807)"
                ),
                "{e}"
            );
            same_with_threads(input.as_bytes(), false);
        }
        let max = outcome(b"a 9223372036854775807\n", ParseOptions::default(), true);
        assert!(!max.starts_with("error"), "{max}");
    }

    /// `text` as UTF-16 LE and BE, each after its byte-order mark, with the encoding's name.
    fn utf16_with_marks(text: &str) -> [(Vec<u8>, &'static str); 2] {
        let encode = |mark: [u8; 2], unit: fn(u16) -> [u8; 2]| -> Vec<u8> {
            mark.into_iter()
                .chain(text.encode_utf16().flat_map(unit))
                .collect()
        };
        [
            (encode([0xFF, 0xFE], u16::to_le_bytes), "UTF-16 LE"),
            (encode([0xFE, 0xFF], u16::to_be_bytes), "UTF-16 BE"),
        ]
    }

    /// UTF-16 text with its byte-order mark (PowerShell 5.1's `>` writes UTF-16 LE) is an error
    /// at the start of the input saying so and how to convert it, on one thread or several (it
    /// was `1:20: expected a count ..., found ...`); a UTF-8 byte-order mark is still skipped.
    #[test]
    fn utf16_input_is_an_error_that_says_so() {
        let text = "main;a;b 3\r\nmain;a;c 4\r\n";
        for (bytes, encoding) in utf16_with_marks(text) {
            let e = parse(&bytes, false).unwrap_err();
            assert_eq!(
                e.message,
                format!(
                    "the input is {encoding} text (it starts with a UTF-16 byte-order mark): folded stacks are UTF-8 (or ASCII); convert it first (e.g. `iconv -f UTF-16 -t UTF-8`)"
                )
            );
            assert_eq!(
                (e.line, e.column, e.byte_offset),
                (Some(1), Some(1), Some(0))
            );
            assert!(
                parse_streaming(&bytes)
                    .unwrap_err()
                    .message
                    .contains(encoding)
            );
            assert!(parse(&bytes, true).unwrap_err().message.contains(encoding));
            same_with_threads(&bytes, false);
            same_with_threads(&bytes, true);
        }
        let utf8 = [b"\xef\xbb\xbf".as_slice(), text.as_bytes()].concat();
        assert_eq!(
            tree(&parse(&utf8, false).unwrap()),
            tree(&parse(text.as_bytes(), false).unwrap())
        );
        // A Latin-1 name that starts with `ÿþ` (bytes FF FE) is no UTF-16: it is read, lossily.
        assert_eq!(
            tree(&parse(b"\xff\xfemain;a 3\n", false).unwrap()),
            "\u{fffd}\u{fffd}main self=0 total=3\n  a self=3 total=3\n"
        );
    }

    /// UTF-16 whose first frame name starts with a character that is not ASCII (`Ωmain`, `中文`)
    /// is the same error: it was read as UTF-8 and failed with `1:18: expected a count ...,
    /// found `\01\0``, as the UTF-16 of an ASCII start did before it was recognised.
    #[test]
    fn utf16_input_starting_with_a_non_ascii_name_is_an_error_that_says_so() {
        for text in [
            "\u{3a9}main;a 1\n",
            "\u{4e2d}\u{6587};a 1\n",
            "\u{e9};a 1\n",
        ] {
            for (bytes, encoding) in utf16_with_marks(text) {
                let e = parse(&bytes, false).unwrap_err();
                assert!(e.message.contains(encoding), "{text:?}: {}", e.message);
                assert_eq!((e.line, e.column), (Some(1), Some(1)));
                same_with_threads(&bytes, false);
            }
        }
        // Latin-1 names after `ÿþ`, with or without other non-ASCII bytes, have no NUL: text.
        assert!(parse(b"\xff\xfe\xe9t\xe9;a 3\n", false).is_ok());
    }

    /// Cut into pieces of every size from one byte up, on 2 and 3 threads, streamed or whole,
    /// the input gives the one-thread profile, warnings and errors exactly.
    fn same_with_threads(text: &[u8], skip_bad_lines: bool) {
        let one = ParseOptions {
            skip_bad_lines,
            ..ParseOptions::default()
        };
        let expected = same_in_batches(text, one);
        for threads in [2, 3] {
            for piece_size in (1..=text.len() + 1).step_by(7).chain([2, 3, 5]) {
                let opts = ParseOptions {
                    threads,
                    piece_size,
                    ..one
                };
                for streaming in [true, false] {
                    assert_eq!(
                        outcome(text, opts, streaming),
                        expected,
                        "{threads} threads, pieces of {piece_size} bytes, streaming {streaming}"
                    );
                }
            }
        }
    }

    /// Read one line at a time or in batches of any size, streamed or whole, the input gives
    /// the same profile, warnings and errors; returns them.
    fn same_in_batches(text: &[u8], opts: ParseOptions) -> String {
        let one_at_a_time = ParseOptions {
            batch_lines: 1,
            ..opts
        };
        let expected = outcome(text, one_at_a_time, true);
        let unremembered = ParseOptions {
            repeated_stacks: false,
            ..one_at_a_time
        };
        assert_eq!(
            outcome(text, unremembered, true),
            expected,
            "repeated stacks found by their text or by their frames"
        );
        for batch_lines in [2, 3, 5, BATCH_LINES, MAX_BATCH_LINES, MAX_BATCH_LINES + 1] {
            for (streaming, batch_from_stacks) in [(true, 0), (false, 0), (true, 4), (false, 9)] {
                let opts = ParseOptions {
                    batch_lines,
                    batch_from_stacks,
                    ..opts
                };
                assert_eq!(
                    outcome(text, opts, streaming),
                    expected,
                    "batches of {batch_lines} lines from {batch_from_stacks} stacks, streaming {streaming}"
                );
            }
        }
        expected
    }

    /// The next line's stack text is hashed ahead, before the first data line has decided
    /// whether the file is differential: the first line's guess (`a;b 1`) is the third line's
    /// real text, so taking the guessed key for the first line would give the third its stack.
    #[test]
    fn a_stack_text_hashed_ahead_is_only_taken_for_the_same_text() {
        let text = b"a;b 1 2\nc 3 4\na;b 1 5 6\n";
        same_in_batches(text, ParseOptions::default());
        let (p, _) = parse_warned(text, false);
        assert_eq!(
            diff_tree(&p.unwrap()),
            "a self=0 total=6 self_after=0 total_after=8\n  b self=1 total=1 self_after=2 total_after=2\n  b 1 self=5 total=5 self_after=6 total_after=6\nc self=3 total=3 self_after=4 total_after=4\n"
        );
    }

    #[test]
    fn batches_give_the_line_by_line_profile_warnings_and_errors() {
        // Shared prefixes within and across batches, repeated lines, a new root.
        let text = b"a;b;c 1\na;b;d 2\na;b;c 3\na;e 4\nf;b;c 5\na;b;c;g 6\na 7\n";
        let p = same_in_batches(text, ParseOptions::default());
        assert!(p.starts_with("Profile"), "{p}");
        // A sum that overflows at line 3: the lines after it noted a non-UTF-8 name, a count
        // without a stack and a bad line; reading stops at line 3, so none of that is said.
        let overflow = b"a 9223372036854775807\nb 1\na 1\nx;\xff 1\n 5\nbad\nc 1\n";
        let opts = ParseOptions {
            skip_bad_lines: true,
            ..ParseOptions::default()
        };
        let e = same_in_batches(overflow, opts);
        assert!(
            e.starts_with("error line 3, column 1: sum of counts") && e.ends_with("warnings []"),
            "{e}"
        );
        // A count with decimals changes the scale of the counts before it in the batch.
        let scaled = b"a 1\nb 2\nc 0.5\na 1\nb 0.25\n";
        let p = same_in_batches(scaled, ParseOptions::default());
        assert!(p.contains("decimals: 2"), "{p}");
        // A bad line ends the batch before it: the first error is the first bad line's.
        let bad = b"a 9223372036854775807\na 1\nb x\n";
        let e = same_in_batches(bad, ParseOptions::default());
        assert!(
            e.starts_with("error line 2, column 1: sum of counts"),
            "{e}"
        );
    }

    /// Past a window of lines, on input that repeats its stacks (the table stays on) and on
    /// input that does not until late (it turns off first): the profile of reading every
    /// line's frames.
    #[test]
    fn repeated_stacks_give_the_profile_of_their_frames() {
        let mut repeating = Vec::new();
        let mut late = Vec::new();
        for i in 0..70_000u32 {
            let s = format!("main;f{};g{};h{} {}\n", i % 7, i % 13, i % 101, i % 5 + 1);
            repeating.extend_from_slice(s.as_bytes());
            let s = format!("main;u{};v{} 1\n", i / 300, i % 300);
            late.extend_from_slice(s.as_bytes());
        }
        late.extend_from_slice(&repeating);
        for text in [&repeating, &late] {
            for batch_from_stacks in [0, BATCH_FROM_STACKS] {
                let on = ParseOptions {
                    batch_from_stacks,
                    ..ParseOptions::default()
                };
                let off = ParseOptions {
                    repeated_stacks: false,
                    ..on
                };
                let expected = outcome(text, off, false);
                assert!(expected.starts_with("Profile"), "{expected}");
                assert_eq!(outcome(text, on, false), expected);
            }
        }
    }

    /// A piece whose sums could overflow is parsed again by the absorbing thread, not absorbed;
    /// the names its worker made there are still taken in, so that the worker's later pieces,
    /// which bring only names new to it, are read with them.
    #[test]
    fn a_piece_parsed_again_still_brings_its_names() {
        let text = b"a;x 5000000000000000000\na;y 5000000000000000000\nb;y 1\nb;x 1\nc;y 1\nc;z 1\nd;y 2\n";
        same_with_threads(text, false);
    }

    /// A name that is not UTF-8 is checked when a parser first meets it. A worker met `q\xff`
    /// on line 2 in a piece the absorbing thread then parsed again (its count overflows at the
    /// profile's scale) and skipped, so the piece's notes were dropped; the worker's next piece
    /// found the name known and noted nothing, and the warning named line 4 or no line at all.
    /// A frame read lossily is remembered, and a piece notes it again. The long first line
    /// keeps the first worker busy, so that the second takes line 2 before the scale is known.
    #[test]
    fn a_non_utf8_name_on_a_skipped_line_is_still_reported_on_its_next_line() {
        let mut text: Vec<u8> = (0..200_000)
            .map(|i| format!("n{i}"))
            .collect::<Vec<_>>()
            .join(";")
            .into_bytes();
        // `q\xff` after another frame: its remembered bit is not the first of its word.
        text.extend_from_slice(b" 0.000000001\np;q\xff 1000000000000000000\nz;q\xff 1\nr\xfe 1\n");
        let one = ParseOptions {
            skip_bad_lines: true,
            ..ParseOptions::default()
        };
        let expected = outcome(&text, one, false);
        assert!(
            expected.contains("line 3: frame names that are not UTF-8"),
            "{expected}"
        );
        for piece_size in [26, 1] {
            for threads in [2, 3] {
                let opts = ParseOptions {
                    threads,
                    piece_size,
                    ..one
                };
                let got = outcome(&text, opts, false);
                // The warnings apart: the profile has 200 000 names.
                let warnings = |o: &str| o[o.rfind("\nwarnings").unwrap_or(0)..].to_string();
                assert_eq!(
                    warnings(&got),
                    warnings(&expected),
                    "{threads} threads, pieces of {piece_size} bytes"
                );
                assert!(
                    got == expected,
                    "{threads} threads, pieces of {piece_size} bytes"
                );
            }
        }
    }

    #[test]
    fn threads_give_the_one_thread_profile_warnings_and_errors() {
        let text = b"# comment\nmain;a;b 3 4\nmain;c 1\r\n\n 7\nother;b 2.5\nmain;a;b 2\nmain;\xff;x 1\n 2\nmain;c;a;b 4\nother 7\nz;y;x 0.125";
        // Differential (its first data line has two counts): an error at line 3, or lines
        // skipped.
        assert!(outcome(text, ParseOptions::default(), true).starts_with("error line 3"));
        same_with_threads(text, false);
        same_with_threads(text, true);
        // Single counts (a later line with two keeps its first in the name).
        let single = b"# comment\nmain;c 1\r\nmain;a;b 3 4\n\n 7\nother;b 2.5\nmain;a;b 2\nmain;\xff;x 1\n 2\nmain;c;a;b 4\nother 7\nz;y;x 0.125";
        same_with_threads(single, false);
        // Differential throughout, with decimals in each column, counts without a stack, a
        // comment, a mark and CRLF; after a first piece without a data line.
        let diff = b"\xef\xbb\xbf# c\n\n 3\n\nmain;a;b 3 4\nmain;c 1 0.5\r\n\n 7 8\nother;b 2.5 1\nmain;a;b 2 2\n\xef\xbb\xbfmain;\xff;x 1 0\nmain;c;a;b 4 4.25\nother 7 0\nz;y;x 0.125 9";
        let d = outcome(diff, ParseOptions::default(), true);
        assert!(d.contains("before") && d.contains("after"), "{d}");
        same_with_threads(diff, false);
        let bad_diff = b"main;a 1 2\nmain;b 3 4\nmain;c 5\nmain;d 6 7\nmain;e x\nmain;f 8 9\n";
        same_with_threads(bad_diff, false);
        same_with_threads(bad_diff, true);
        let late_single = b"# c\n\n\n\n\n\n\n\n\n\n\n\na 1\nb 2\nc 3 4\nd 5\n";
        same_with_threads(late_single, false);
        let bad = b"main;a 1\nmain;b 2\nmain;c 3\nmain;d x\nmain;e 1\nmain;f y\n";
        let e = outcome(bad, ParseOptions::default(), true);
        assert!(e.starts_with("error line 4, column 8"), "{e}");
        same_with_threads(bad, false);
        same_with_threads(bad, true);
        // Whether a count or a sum fits depends on the lines before it (their scale, their
        // sums): a piece that fits on its own but not in the profile is parsed again in place.
        let scaled = b"a 0.001\nb 9300000000000000\nc 1\nd 2.5\n";
        assert!(
            outcome(scaled, ParseOptions::default(), true)
                .contains("line 2, column 3: count does not fit")
        );
        same_with_threads(scaled, false);
        same_with_threads(scaled, true);
        let sums = b"a 5000000000000000000\nb 1\na 5000000000000000000\nc 1\n";
        assert!(outcome(sums, ParseOptions::default(), true).contains("line 3"));
        same_with_threads(sums, false);
        same_with_threads(sums, true);
        // Warnings about the lines before an error are given too (found by the fuzzer).
        let warned = b"main;\xff 1\n 2\nmain;b 2\nmain;c x\n";
        let e = outcome(warned, ParseOptions::default(), true);
        assert!(
            e.contains("not UTF-8") && e.contains("without a stack"),
            "{e}"
        );
        same_with_threads(warned, false);
        let mut many_bad = Vec::new();
        for i in 0..40 {
            many_bad.extend_from_slice(format!("a;b{} {}\nbad line {i}x\n", i % 3, i).as_bytes());
        }
        same_with_threads(&many_bad, true);
        for edge in [
            &b""[..],
            b"\n",
            b"\n\n\n",
            b"a 1",
            b"a;b 1\r\n\r\n",
            b"# only a comment\n",
            b"\xef\xbb\xbf",
            b"\xef\xbb\xbf# only a comment\n",
            b"a 1 2",
            b" 1 2\n",
        ] {
            same_with_threads(edge, false);
        }
    }

    /// Under `skip-bad-lines` a sum that overflows is still an error. Batched lines' sums are
    /// added when the batch is put in the profile, which a later count with more decimals
    /// does first: that overflow was taken for the later line's bad count, skipped in its
    /// place (exit 0, the overflowing line named as skipped), and the batched lines after the
    /// overflowing one were lost with it.
    #[test]
    fn an_overflowing_sum_stays_an_error_under_skip_bad_lines_in_batches() {
        let text = b"big 9000000000000000000\nbig 9000000000000000000\nafter;x 5\nc 0.5\nd 1\n";
        let skip = ParseOptions {
            skip_bad_lines: true,
            ..ParseOptions::default()
        };
        let batched = ParseOptions {
            batch_from_stacks: 0,
            ..skip
        };
        let e = outcome(text, batched, true);
        assert!(
            e.starts_with("error line 2, column 1: sum of counts: value overflow"),
            "{e}"
        );
        same_in_batches(text, skip);
        same_with_threads(text, true);
    }

    /// The parallel reader decides whether a file is differential at its first data line, as
    /// one thread does: blank lines and comments before it do not count, even a comment that
    /// ends in two numbers (which read as a stack would look differential).
    #[test]
    fn the_first_data_line_skips_comments_ending_in_numbers() {
        assert_eq!(
            first_data_line_is_differential(b"# austin 3 4\n\n  \nmain;f 3\n"),
            Some(false)
        );
        assert_eq!(
            first_data_line_is_differential(b"# a 1\n#\nmain;f 3 4\n"),
            Some(true)
        );
        assert_eq!(first_data_line_is_differential(b"# only 1 2\n\n"), None);
    }

    /// Stacks with one bad line among many (a truncated or hand-edited file) sniff weakly as
    /// folded, so the parser can name the bad line; a few lines with a bad one, or many bad
    /// ones, are not taken for stacks.
    #[test]
    fn stacks_with_a_rare_bad_line_sniff_weakly_as_folded() {
        let mut many = String::new();
        for i in 0..20 {
            many += &format!("main;f{i} {i}\n");
        }
        assert_eq!(sniff(format!("{many}main;g x\n").as_bytes()), 10);
        // Single frames with counts (any `word N` text) and a bad line: not taken for stacks.
        let single = "main 1\n".repeat(12);
        assert_eq!(sniff(format!("{single}main x\n").as_bytes()), 0);
        // One bad line in three.
        assert_eq!(
            sniff(format!("{many}{}", "bad line\n".repeat(10)).as_bytes()),
            0
        );
    }

    /// A NUL byte anywhere in the head is binary data, not stacks, however well the lines
    /// around it end in counts.
    #[test]
    fn a_head_with_a_nul_byte_is_not_folded() {
        assert_eq!(sniff(b"a;b 1\nc;d 2\n"), 70);
        assert_eq!(sniff(b"a;b 1\nc\x00;d 2\n"), 0);
        assert_eq!(sniff(b"a;b 1\nc;d 2\n\x00"), 0);
    }
}
