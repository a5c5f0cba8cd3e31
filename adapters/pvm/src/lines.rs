//! Lines of the input, read in blocks through `Input` as `Read` (or straight from memory when
//! the host already holds the whole input). A line longer than the buffer grows it, bounded by
//! that line, never by the input, and by [`MAX_LINE`].

use memchr::memchr;
use profconv_plugin::{Input, PluginError, grow_line_buffer};
use std::io::{self, Read};

/// Bytes asked of the input per read.
pub(crate) const BLOCK: usize = 1 << 20;
/// The buffer's first size.
const FIRST_BLOCK: usize = 1 << 14;
/// The longest line read from a stream (256 MiB; trace lines are short, the debugger's profile
/// lines hold one call stack). Past that the input is not a PVM trace, and growing the buffer
/// further would take memory without bound.
pub(crate) const MAX_LINE: usize = 1 << 28;
// Skipped at the start of the input.
pub(crate) use profconv_plugin::UTF8_BOM as BOM;
/// What a line longer than [`MAX_LINE`] is not.
const ONE_RECORD_PER_LINE: &str = "a PVM trace or profile has one record per line (is this one?)";

/// One line, without its `\n`.
pub(crate) struct Line<'a> {
    pub bytes: &'a [u8],
    /// 1-based line number.
    pub no: u64,
    /// Input offset of the line's first byte.
    pub offset: u64,
    /// Bytes of the line before `bytes`: the byte-order mark skipped on line 1 (else 0). Columns
    /// count them, so that a column is `offset - line start + 1` on every line.
    pub col0: u64,
}

/// A line splitter over a streamed or in-memory input.
pub(crate) struct Lines<'i, 'a> {
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
    line_no: u64,
    /// The longest line ([`MAX_LINE`]; smaller in tests).
    max_line: usize,
    /// Bytes of the byte-order mark skipped at the start (0 or 3).
    bom: u64,
    /// When `start` reaches this, the whole input's bytes before it are released to the host
    /// ([`Input::release`]); never for a stream.
    release_at: usize,
}

impl<'i, 'a> Lines<'i, 'a> {
    pub(crate) fn new(input: &'i mut Input<'a>) -> Self {
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
            max_line: MAX_LINE,
            bom: 0,
            release_at: if whole.is_some() { BLOCK } else { usize::MAX },
        }
    }

    /// Releases the whole input's bytes before the next line, a block at a time.
    #[inline]
    fn done_with_read(&mut self) {
        if self.start >= self.release_at {
            self.input.release(self.start);
            self.release_at = self.start + BLOCK;
        }
    }

    /// Skips a UTF-8 byte-order mark at the very start of the input (to be called before any
    /// line is read; the check is done once per input). Its bytes still count in the byte
    /// offsets and in line 1's columns ([`Line::col0`]).
    pub(crate) fn skip_bom(&mut self) -> Result<(), PluginError> {
        debug_assert!(self.offset == 0 && self.line_no == 0);
        let (head, _) = self.peek(BOM.len())?;
        if head.starts_with(BOM) {
            self.consume(BOM.len(), 0);
            self.bom = BOM.len() as u64;
        }
        Ok(())
    }

    /// Bytes before the next line's first byte that its columns count (the skipped
    /// byte-order mark, on line 1).
    #[inline]
    fn next_col0(&self) -> u64 {
        if self.line_no == 0 { self.bom } else { 0 }
    }

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
            self.buf.resize(FIRST_BLOCK, 0);
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scan -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() || self.buf.len() < BLOCK {
                // Start small (most inputs are small), grow to BLOCK-sized reads; past that,
                // only a line longer than the buffer grows it (bounded by the line).
                self.grow()?;
            }
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Grows the buffer (an error past `max_line` bytes, when it holds the start of one line only).
    fn grow(&mut self) -> Result<(), PluginError> {
        grow_line_buffer(&mut self.buf, self.max_line, ONE_RECORD_PER_LINE).map_err(|e| {
            e.at_offset(self.offset)
                .at_line(self.line_no + 1, self.next_col0() + 1)
        })
    }

    /// In a whole input, the error a stream gives for the next line when its buffer cannot
    /// grow: the line (from `start`, ending at `end`) has `max_line` bytes or more.
    fn check_length(&self, end: usize) -> Result<(), PluginError> {
        if self.whole.is_none() || end - self.start < self.max_line {
            return Ok(());
        }
        Err(PluginError::invalid_input(format!(
            "no newline in {} bytes: {ONE_RECORD_PER_LINE}",
            self.max_line
        ))
        .at_offset(self.offset)
        .at_line(self.line_no + 1, self.next_col0() + 1))
    }

    /// The unread input from the next line on, reading until it holds at least `min` bytes or
    /// the input ends. Does not consume anything. The second value is true when this is
    /// everything that is left.
    pub(crate) fn peek(&mut self, min: usize) -> Result<(&[u8], bool), PluginError> {
        while self.end - self.start < min && self.fill()? {}
        let eof = self.eof;
        Ok((&self.data()[self.start..self.end], eof))
    }

    /// The bytes read but not yet consumed (from the next line on, possibly ending in a partial
    /// line), the next line's number and its input offset. Reads nothing.
    #[inline]
    pub(crate) fn buffered(&self) -> (&[u8], u64, u64) {
        (
            &self.data()[self.start..self.end],
            self.line_no + 1,
            self.offset,
        )
    }

    /// Consumes `bytes` bytes of [`Self::buffered`], which hold `lines` whole lines with their
    /// `\n`.
    #[inline]
    pub(crate) fn consume(&mut self, bytes: usize, lines: u64) {
        debug_assert!(bytes <= self.end - self.start);
        self.start += bytes;
        self.offset += bytes as u64;
        self.line_no += lines;
        self.done_with_read();
    }

    /// The next line, or `None` at the end of the input. A final line without `\n` counts.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line<'_>>, PluginError> {
        if self.scan < self.start {
            self.scan = self.start;
        }
        loop {
            if let Some(i) = memchr(b'\n', &self.data()[self.scan..self.end]) {
                let nl = self.scan + i;
                self.check_length(nl)?;
                let (s, off, col0) = (self.start, self.offset, self.next_col0());
                self.offset += (nl + 1 - s) as u64;
                self.start = nl + 1;
                self.scan = self.start;
                self.line_no += 1;
                // The line returned is still read (a block behind is released, not this).
                if s >= self.release_at {
                    self.input.release(s);
                    self.release_at = s + BLOCK;
                }
                return Ok(Some(Line {
                    bytes: &self.data()[s..nl],
                    no: self.line_no,
                    offset: off,
                    col0,
                }));
            }
            self.scan = self.end;
            if !self.fill()? {
                if self.start < self.end {
                    self.check_length(self.end)?;
                    let (s, e, off, col0) = (self.start, self.end, self.offset, self.next_col0());
                    self.offset += (e - s) as u64;
                    self.start = e;
                    self.scan = e;
                    self.line_no += 1;
                    return Ok(Some(Line {
                        bytes: &self.data()[s..e],
                        no: self.line_no,
                        offset: off,
                        col0,
                    }));
                }
                return Ok(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn collect(input: &mut Input<'_>) -> Vec<(Vec<u8>, u64, u64)> {
        let mut lines = Lines::new(input);
        let mut out = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            out.push((l.bytes.to_vec(), l.no, l.offset));
        }
        out
    }

    /// A streamed line longer than the bound is an error naming its line and first byte, not a
    /// buffer that grows with the input.
    #[test]
    fn a_line_longer_than_the_bound_is_an_error() {
        let mut text = b"PVMTRACE 1\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 5 * FIRST_BLOCK));
        // Streamed (the buffer cannot grow) and whole (a mapped file: the same bound, the same
        // error), with and without a newline after the long line.
        for newline in [false, true] {
            let text = [&text[..], if newline { b"\n" } else { b"" }].concat();
            let mut r: &[u8] = &text;
            for mut input in [Input::from_reader(&mut r), Input::from_slice(&text)] {
                let mut lines = Lines::new(&mut input);
                lines.max_line = 2 * FIRST_BLOCK;
                assert_eq!(lines.next_line().unwrap().unwrap().bytes, b"PVMTRACE 1");
                let e = lines.next_line().err().unwrap();
                assert_eq!((e.line, e.byte_offset), (Some(2), Some(11)));
                assert!(e.message.starts_with("no newline in 32768 bytes"), "{e}");
            }
        }
    }

    #[test]
    fn streamed_and_whole_agree_with_long_lines_and_no_final_newline() {
        let mut text = Vec::new();
        for i in 0..5000 {
            text.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        text.extend(std::iter::repeat_n(b'x', 3 * BLOCK));
        text.extend_from_slice(b"\n\nlast");
        let a = collect(&mut Input::from_slice(&text));
        let mut r = Small(&text, 7777);
        let b = collect(&mut Input::from_reader(&mut r));
        assert_eq!(a.len(), 5003);
        assert!(a == b);
        assert_eq!(a[5002].0, b"last");
        assert_eq!(a[5000].0.len(), 3 * BLOCK);
        assert_eq!(a[1].2, 7);
    }

    #[test]
    fn peek_does_not_consume() {
        let text = b"a 1\nb 2\nc 3";
        let mut r = Small(text, 2);
        let mut input = Input::from_reader(&mut r);
        let mut lines = Lines::new(&mut input);
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
}
