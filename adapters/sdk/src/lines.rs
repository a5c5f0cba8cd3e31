//! [`Lines`]: the lines of an [`Input`], for line-oriented formats (folded stacks, callgrind,
//! PVM traces).
//!
//! A whole input in memory (a mapped file) is read in place and released to the host behind
//! the reader, a block at a time; a stream is read in blocks into one buffer that grows only for
//! a line longer than itself, up to a bound, so a file without newlines cannot take memory
//! without bound. Both give the same lines, offsets and errors.
//!
//! A reader takes lines one at a time ([`Lines::next_line`]), or many at once
//! ([`Lines::whole_lines`], [`Lines::buffered`]) and says how many it used
//! ([`Lines::consume`]).

use crate::{Input, PluginError, grow_line_buffer, no_newline};
use memchr::{memchr, memrchr};

/// Bytes asked of a stream per read, and between two releases of a whole input.
pub const BLOCK: usize = 1 << 20;
/// The longest line the bundled line-oriented readers (folded, callgrind, PVM) take: 256 MiB, the
/// `max_line` they pass to [`Lines::new`] (and folded to its own piece reader). It bounds the
/// memory one line can take: a line of this many bytes without a newline is an error (`no newline
/// in 268435456 bytes: …`), so an input with no newlines (binary data, another format) cannot grow
/// a line buffer without bound. No real line comes near it (the longest are folded stacks: a
/// million frames of 256-byte names fit), and it is small enough to be had where such profiles
/// are read.
pub const MAX_LINE: usize = 1 << 28;
/// The buffer's first size (most inputs are small).
const FIRST_BLOCK: usize = 1 << 14;

/// One line, without its `\n`.
#[derive(Debug)]
pub struct Line<'a> {
    /// The line's bytes.
    pub bytes: &'a [u8],
    /// 1-based line number.
    pub no: u64,
    /// Input offset of the line's first byte.
    pub offset: u64,
    /// Bytes of the line before `bytes`: the byte-order mark skipped on line 1 (else 0). Columns
    /// count them, so that a column is `offset - line start + 1` on every line.
    pub col0: u64,
}

/// Whole lines taken at once ([`Lines::whole_lines`]).
#[derive(Debug)]
pub struct LineBlock<'a> {
    /// The lines, each with its `\n` except the input's last if it has none.
    pub bytes: &'a [u8],
    /// The first line's number (1-based).
    pub no: u64,
    /// Input offset of `bytes[0]`.
    pub offset: u64,
}

/// A line splitter over a streamed or in-memory [`Input`].
pub struct Lines<'i, 'a> {
    input: &'i mut Input<'a>,
    whole: Option<&'a [u8]>,
    buf: Vec<u8>,
    /// First byte of the next line in `data()`.
    start: usize,
    /// End of valid bytes in `data()`.
    end: usize,
    /// Where the next `\n` search starts (bytes before it, from `start`, hold none).
    scan: usize,
    eof: bool,
    /// Input offset of `data()[start]`.
    offset: u64,
    /// Lines consumed so far.
    line_no: u64,
    /// The longest line.
    max_line: usize,
    /// What the input is, for the error of a line of `max_line` bytes or more: `no newline in
    /// N bytes: {what}`.
    what: &'static str,
    /// Bytes of the byte-order mark skipped at the start (0 or 3).
    bom: u64,
    /// When `start` reaches this, the whole input's bytes before it are released to the host
    /// ([`Input::release`]); never for a stream.
    release_at: usize,
}

impl<'i, 'a> Lines<'i, 'a> {
    /// Lines of `input`, none longer than `max_line` bytes; a longer one is an error, `no newline
    /// in {max_line} bytes: {what}` (say what one line of the format holds, and ask whether the
    /// input is of the format at all).
    pub fn new(input: &'i mut Input<'a>, max_line: usize, what: &'static str) -> Self {
        let whole = input.whole();
        let (end, eof) = match whole {
            Some(w) => (w.len(), true),
            None => (0, false),
        };
        Lines {
            input,
            whole,
            buf: Vec::new(),
            start: 0,
            end,
            scan: 0,
            eof,
            offset: 0,
            line_no: 0,
            max_line: max_line.max(1),
            what,
            bom: 0,
            release_at: if whole.is_some() { BLOCK } else { usize::MAX },
        }
    }

    /// Skips a UTF-8 byte-order mark at the very start of the input (to be called before any
    /// line is read). Its bytes still count in the byte offsets and in line 1's columns
    /// ([`Line::col0`]).
    pub fn skip_bom(&mut self) -> Result<(), PluginError> {
        debug_assert!(self.offset == 0 && self.line_no == 0);
        let bom = crate::UTF8_BOM;
        let (head, _) = self.peek(bom.len())?;
        if head.starts_with(bom) {
            self.consume(bom.len(), 0);
            self.bom = bom.len() as u64;
        }
        Ok(())
    }

    /// Bytes before the next line's first byte that its columns count (the skipped
    /// byte-order mark, on line 1).
    #[inline]
    fn next_col0(&self) -> u64 {
        if self.line_no == 0 { self.bom } else { 0 }
    }

    #[inline]
    fn data(&self) -> &[u8] {
        match self.whole {
            Some(w) => w,
            None => &self.buf,
        }
    }

    /// Reads more input into the buffer; false at the end of the input.
    fn fill(&mut self) -> Result<bool, PluginError> {
        if self.eof {
            return Ok(false);
        }
        if self.buf.is_empty() {
            self.buf.resize(FIRST_BLOCK.min(self.max_line), 0);
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scan -= self.start.min(self.scan);
                self.start = 0;
            }
            if self.end == self.buf.len() || self.buf.len() < BLOCK.min(self.max_line) {
                // Small at first, then BLOCK-sized reads; past that, only a line longer than the
                // buffer grows it (bounded by the line).
                self.grow()?;
            }
        }
        match crate::read_some(self.input, &mut self.buf[self.end..])? {
            0 => {
                self.eof = true;
                Ok(false)
            }
            n => {
                self.end += n;
                Ok(true)
            }
        }
    }

    /// The error of the next line: it has `max_line` bytes or more.
    fn too_long(&self, e: PluginError) -> PluginError {
        e.at_offset(self.offset)
            .at_line(self.line_no + 1, self.next_col0() + 1)
    }

    /// Grows the buffer (an error past `max_line` bytes, when it holds the start of one line).
    fn grow(&mut self) -> Result<(), PluginError> {
        grow_line_buffer(&mut self.buf, self.max_line, self.what).map_err(|e| self.too_long(e))
    }

    /// In a whole input, the error a stream gives for the next line when its buffer cannot
    /// grow: the line (from `start`, ending at `end`) has `max_line` bytes or more.
    #[inline]
    fn check_length(&self, end: usize) -> Result<(), PluginError> {
        if self.whole.is_none() || end - self.start < self.max_line {
            return Ok(());
        }
        Err(self.too_long(self.no_newline()))
    }

    /// The error of a line of `max_line` bytes or more.
    fn no_newline(&self) -> PluginError {
        no_newline(self.max_line, self.what)
    }

    /// Where a search for the next line's end stops: in a whole input, `max_line` bytes past
    /// its start (a line that long is an error, and the rest of a large file without newlines
    /// need not be read to say so); in a stream, the buffer's end (itself bounded).
    #[inline]
    fn search_end(&self) -> usize {
        match self.whole {
            Some(_) => self.end.min(self.start.saturating_add(self.max_line)),
            None => self.end,
        }
    }

    /// The unread input from the next line on, reading until it holds at least `min` bytes or
    /// the input ends. Does not consume anything. The second value is true when this is
    /// everything that is left.
    pub fn peek(&mut self, min: usize) -> Result<(&[u8], bool), PluginError> {
        while self.end - self.start < min && self.fill()? {}
        let eof = self.eof;
        Ok((&self.data()[self.start..self.end], eof))
    }

    /// The bytes read but not yet consumed (from the next line on, possibly ending in a partial
    /// line), the next line's number and its input offset. Reads nothing.
    #[inline]
    pub fn buffered(&self) -> (&[u8], u64, u64) {
        (
            &self.data()[self.start..self.end],
            self.line_no + 1,
            self.offset,
        )
    }

    /// Consumes `bytes` bytes of what [`Self::buffered`] or [`Self::whole_lines`] gave, which
    /// hold `lines` whole lines with their `\n` (the input's last line may lack it).
    #[inline]
    pub fn consume(&mut self, bytes: usize, lines: u64) {
        debug_assert!(bytes <= self.end - self.start);
        self.start += bytes;
        self.offset += bytes as u64;
        self.line_no += lines;
        self.release_before(self.start);
    }

    /// Releases a whole input's bytes before `upto` to the host, a [`BLOCK`] or more at a time.
    #[inline]
    fn release_before(&mut self, upto: usize) {
        if upto >= self.release_at {
            self.input.release(upto);
            self.release_at = upto + BLOCK;
        }
    }

    /// Consumes the next line, which ends at `end` and is followed by the next one at `next`
    /// (after its `\n`, or at the end of the input), and returns it.
    #[inline]
    fn take_line(&mut self, end: usize, next: usize) -> Line<'_> {
        let (s, off, col0) = (self.start, self.offset, self.next_col0());
        self.offset += (next - s) as u64;
        self.start = next;
        self.scan = next;
        self.line_no += 1;
        // The line returned is still read (a block behind is released, not this).
        self.release_before(s);
        Line {
            bytes: &self.data()[s..end],
            no: self.line_no,
            offset: off,
            col0,
        }
    }

    /// The whole lines from the next one on, as many as end within about `max` bytes (at least
    /// one, however long, within the bound), or `None` at the end of the input. Nothing is
    /// consumed: [`Self::consume`] says how much was used (whole lines).
    pub fn whole_lines(&mut self, max: usize) -> Result<Option<LineBlock<'_>>, PluginError> {
        // Never more than a line may hold: every line of a block is then within the bound, as
        // in a stream's buffer.
        let max = max.clamp(1, self.max_line);
        loop {
            let from = self.scan.max(self.start);
            let limit = self.end.min(self.start.saturating_add(max));
            // The last line end within `max`, else the first one after (a line longer than
            // `max`).
            let cap = self.search_end();
            let past = limit.max(from).min(cap);
            let nl = match memrchr(b'\n', &self.data()[from.min(limit)..limit]) {
                Some(i) => Some(from + i),
                None => memchr(b'\n', &self.data()[past..cap]).map(|i| past + i),
            };
            let stop = match nl {
                Some(nl) => nl + 1,
                None if cap < self.end => return Err(self.too_long(self.no_newline())),
                None => {
                    self.scan = self.end;
                    if self.fill()? {
                        continue;
                    }
                    if self.start == self.end {
                        return Ok(None);
                    }
                    self.end
                }
            };
            self.check_length(stop - usize::from(nl.is_some()))?;
            return Ok(Some(LineBlock {
                bytes: &self.data()[self.start..stop],
                no: self.line_no + 1,
                offset: self.offset,
            }));
        }
    }

    /// The next line, or `None` at the end of the input. A final line without `\n` counts.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>, PluginError> {
        if self.scan < self.start {
            self.scan = self.start;
        }
        loop {
            let cap = self.search_end();
            let from = self.scan.min(cap);
            if let Some(i) = memchr(b'\n', &self.data()[from..cap]) {
                let nl = from + i;
                self.check_length(nl)?;
                return Ok(Some(self.take_line(nl, nl + 1)));
            }
            if cap < self.end {
                return Err(self.too_long(self.no_newline()));
            }
            self.scan = self.end;
            if !self.fill()? {
                if self.start < self.end {
                    self.check_length(self.end)?;
                    return Ok(Some(self.take_line(self.end, self.end)));
                }
                return Ok(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{self, Read};

    const WHAT: &str = "a test file has one record per line (is this one?)";

    /// Hands out at most `n` bytes per read.
    struct Small<'a>(&'a [u8], usize);
    impl Read for Small<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Every line with its number and offset, one at a time.
    fn one_by_one(input: &mut Input<'_>) -> Vec<(Vec<u8>, u64, u64)> {
        let mut lines = Lines::new(input, 1 << 28, WHAT);
        let mut out = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            out.push((l.bytes.to_vec(), l.no, l.offset));
        }
        out
    }

    /// Every line with its number and offset, from blocks of about `max` bytes.
    fn by_blocks(input: &mut Input<'_>, max: usize) -> Vec<(Vec<u8>, u64, u64)> {
        let mut lines = Lines::new(input, 1 << 28, WHAT);
        let mut out = Vec::new();
        while let Some(block) = lines.whole_lines(max).unwrap() {
            let (bytes, mut no, mut offset) = (block.bytes.to_vec(), block.no, block.offset);
            assert!(!bytes.is_empty());
            let mut n = 0;
            for line in bytes.split_inclusive(|&b| b == b'\n') {
                out.push((
                    line.strip_suffix(b"\n").unwrap_or(line).to_vec(),
                    no,
                    offset,
                ));
                (no, offset, n) = (no + 1, offset + line.len() as u64, n + 1);
            }
            // Several lines only if they fit in `max`; the last one may lack its newline only
            // at the end of the input.
            assert!(
                n == 1 || bytes.len() <= max,
                "{n} lines in {} bytes",
                bytes.len()
            );
            lines.consume(bytes.len(), n);
        }
        out
    }

    /// A streamed line longer than the bound is an error naming its line and first byte, not a
    /// buffer that grows with the input; a whole input gives the same error.
    #[test]
    fn a_line_longer_than_the_bound_is_an_error() {
        let mut text = b"HEADER 1\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 5 * FIRST_BLOCK));
        for newline in [false, true] {
            let text = [&text[..], if newline { b"\n" } else { b"" }].concat();
            for blocks in [false, true] {
                let mut r: &[u8] = &text;
                for mut input in [Input::from_reader(&mut r), Input::from_slice(&text)] {
                    let mut lines = Lines::new(&mut input, 2 * FIRST_BLOCK, WHAT);
                    let e = if blocks {
                        let first = lines.whole_lines(4).unwrap().unwrap();
                        assert_eq!(
                            (first.bytes, first.no, first.offset),
                            (&b"HEADER 1\n"[..], 1, 0)
                        );
                        lines.consume(9, 1);
                        lines.whole_lines(1 << 20).err().unwrap()
                    } else {
                        assert_eq!(lines.next_line().unwrap().unwrap().bytes, b"HEADER 1");
                        lines.next_line().err().unwrap()
                    };
                    assert_eq!((e.line, e.byte_offset), (Some(2), Some(9)));
                    assert_eq!(
                        e.message,
                        format!("no newline in {} bytes: {WHAT}", 2 * FIRST_BLOCK)
                    );
                }
            }
        }
    }

    /// Streamed in small reads or whole, one at a time or in blocks of any size: the same lines,
    /// numbers and offsets, across long lines, empty lines and a last line without newline.
    #[test]
    fn streamed_and_whole_one_by_one_and_in_blocks_agree() {
        let mut text = Vec::new();
        for i in 0..5000 {
            text.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        text.extend(std::iter::repeat_n(b'x', 3 * BLOCK));
        text.extend_from_slice(b"\n\nlast");
        let a = one_by_one(&mut Input::from_slice(&text));
        assert_eq!(a.len(), 5003);
        assert_eq!(a[5002].0, b"last");
        assert_eq!(a[5000].0.len(), 3 * BLOCK);
        assert_eq!(a[1].2, 7);
        let mut r = Small(&text, 7777);
        assert!(a == one_by_one(&mut Input::from_reader(&mut r)));
        for max in [1, 5, 64, 1000, BLOCK, 8 * BLOCK] {
            assert!(
                a == by_blocks(&mut Input::from_slice(&text), max),
                "max {max}"
            );
            let mut r = Small(&text, 7777);
            assert!(
                a == by_blocks(&mut Input::from_reader(&mut r), max),
                "max {max}"
            );
        }
        // Ending in a newline: no empty last line.
        let text = b"a\n\nb\n";
        let want = vec![(b"a".to_vec(), 1, 0), (vec![], 2, 2), (b"b".to_vec(), 3, 3)];
        assert_eq!(one_by_one(&mut Input::from_slice(text)), want);
        assert_eq!(by_blocks(&mut Input::from_slice(text), 3), want);
        assert!(by_blocks(&mut Input::from_slice(b""), 10).is_empty());
    }

    /// A whole input is released behind the reader, a block at a time, never ahead of it.
    #[test]
    fn a_whole_input_is_released_behind_the_reader() {
        let mut text = Vec::new();
        while text.len() < 3 * BLOCK + 1000 {
            text.extend_from_slice(b"some line of text\n");
        }
        let released = std::cell::RefCell::new(Vec::new());
        let hook = |upto: usize| released.borrow_mut().push(upto);
        let mut input = Input::from_slice(&text).with_release(&hook);
        let mut lines = Lines::new(&mut input, 1 << 28, WHAT);
        let mut read = 0;
        while let Some(block) = lines.whole_lines(4096).unwrap() {
            let n = block.bytes.len();
            assert!(
                released
                    .borrow()
                    .iter()
                    .all(|&r| r <= block.offset as usize)
            );
            read += n;
            lines.consume(n, (n / 18) as u64);
        }
        assert_eq!(read, text.len());
        let released = released.into_inner();
        // Every block behind the reader, one call each (the last block stays mapped).
        assert_eq!(released.len(), 2, "{released:?}");
        assert!(released[0] >= BLOCK);
        assert!(released.windows(2).all(|w| w[1] >= w[0] + BLOCK));
        assert!(released[1] + BLOCK + 4096 >= text.len(), "{released:?}");
    }

    #[test]
    fn peek_does_not_consume() {
        let text = b"a 1\nb 2\nc 3";
        let mut r = Small(text, 2);
        let mut input = Input::from_reader(&mut r);
        let mut lines = Lines::new(&mut input, 1 << 28, WHAT);
        let (head, eof) = lines.peek(6).unwrap();
        assert!(head.len() >= 6 && head.starts_with(b"a 1\nb "));
        assert!(!eof);
        let first = lines.next_line().unwrap().unwrap();
        assert_eq!(first.bytes, b"a 1");
        let (rest, eof) = lines.peek(100).unwrap();
        assert_eq!(rest, b"b 2\nc 3");
        assert!(eof);
        let mut n = 1;
        while lines.next_line().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_counted() {
        let text = b"\xEF\xBB\xBFfirst\nsecond\n";
        let mut input = Input::from_slice(text);
        let mut lines = Lines::new(&mut input, 1 << 28, WHAT);
        lines.skip_bom().unwrap();
        let l = lines.next_line().unwrap().unwrap();
        assert_eq!((l.bytes, l.no, l.offset, l.col0), (&b"first"[..], 1, 3, 3));
        let l = lines.next_line().unwrap().unwrap();
        assert_eq!((l.bytes, l.no, l.offset, l.col0), (&b"second"[..], 2, 9, 0));
    }
}
