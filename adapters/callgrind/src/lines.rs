//! Line iteration over an [`Input`]: the whole input when the host has it in memory, else
//! 1 MiB reads into one buffer that grows only for a line longer than itself, up to
//! [`MAX_LINE`].

use memchr::memchr;
use profconv_plugin::{Input, PluginError, grow_line_buffer};
use std::io::Read;

/// Bytes asked of the input per read.
const BLOCK: usize = 1 << 20;
/// The longest line read from a stream (256 MiB; callgrind lines are short). Past that the
/// input is not a callgrind profile, and growing the buffer further would take memory without
/// bound.
pub const MAX_LINE: usize = 1 << 28;

/// Calls `f(line, byte_offset)` for every line, without its `\n`. A final line without a newline
/// is passed too; an empty input has no line.
pub fn for_each_line(
    input: &mut Input<'_>,
    f: impl FnMut(&[u8], u64) -> Result<(), PluginError>,
) -> Result<(), PluginError> {
    for_each_line_up_to(input, MAX_LINE, f)
}

/// [`for_each_line`] with lines of a streamed input bounded by `max_line` bytes.
fn for_each_line_up_to(
    input: &mut Input<'_>,
    max_line: usize,
    mut f: impl FnMut(&[u8], u64) -> Result<(), PluginError>,
) -> Result<(), PluginError> {
    if let Some(whole) = input.whole() {
        let mut offset = 0usize;
        while offset < whole.len() {
            let end = memchr(b'\n', &whole[offset..]).map_or(whole.len(), |i| offset + i);
            f(&whole[offset..end], offset as u64)?;
            offset = end + 1;
        }
        return Ok(());
    }
    let mut buf = vec![0u8; BLOCK.min(max_line)];
    let (mut start, mut end) = (0usize, 0usize);
    let mut offset = 0u64; // input offset of buf[start]
    let mut line_no = 1u64; // of the line at buf[start]
    loop {
        if end == buf.len() {
            if start > 0 {
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
            } else {
                grow_line_buffer(
                    &mut buf,
                    max_line,
                    "a callgrind profile has one item per line (is this one?)",
                )
                .map_err(|e| e.at_offset(offset).at_line(line_no, 1))?;
            }
        }
        let n = input.read(&mut buf[end..])?;
        if n == 0 {
            if start < end {
                f(&buf[start..end], offset)?;
            }
            return Ok(());
        }
        let mut search = end;
        end += n;
        while let Some(i) = memchr(b'\n', &buf[search..end]) {
            let nl = search + i;
            f(&buf[start..nl], offset)?;
            offset += (nl + 1 - start) as u64;
            line_no += 1;
            start = nl + 1;
            search = start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A streamed line longer than the bound is an error naming its line and first byte; the
    /// lines before it are read.
    #[test]
    fn a_line_longer_than_the_bound_is_an_error() {
        let mut text = b"events: Ir\nfn=main\n".to_vec();
        text.extend(std::iter::repeat_n(b'1', 10_000));
        let mut r: &[u8] = &text;
        let mut seen = Vec::new();
        let e = for_each_line_up_to(&mut Input::from_reader(&mut r), 4096, |l, off| {
            seen.push((l.to_vec(), off));
            Ok(())
        })
        .unwrap_err();
        assert_eq!(
            seen,
            vec![(b"events: Ir".to_vec(), 0), (b"fn=main".to_vec(), 11)]
        );
        assert_eq!((e.line, e.byte_offset), (Some(3), Some(19)));
        assert!(e.message.starts_with("no newline in 4096 bytes"), "{e}");
    }
}
