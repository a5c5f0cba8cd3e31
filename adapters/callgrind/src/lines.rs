//! Line iteration over an [`Input`]: the SDK's [`Lines`] (read in place from a whole input in
//! memory, or in blocks from a stream), with the SDK's bound on a line ([`MAX_LINE`]) and what a line of this format holds.

use profconv_plugin::lines::{Lines, MAX_LINE};
use profconv_plugin::{Input, PluginError};

/// Calls `f(line, byte_offset)` for every line, without its `\n`. A final line without a newline
/// is passed too; an empty input has no line.
pub fn for_each_line(
    input: &mut Input<'_>,
    f: impl FnMut(&[u8], u64) -> Result<(), PluginError>,
) -> Result<(), PluginError> {
    for_each_line_up_to(input, MAX_LINE, f)
}

/// [`for_each_line`] with lines bounded by `max_line` bytes.
fn for_each_line_up_to(
    input: &mut Input<'_>,
    max_line: usize,
    mut f: impl FnMut(&[u8], u64) -> Result<(), PluginError>,
) -> Result<(), PluginError> {
    let mut lines = Lines::new(
        input,
        max_line,
        "a callgrind profile has one item per line (is this one?)",
    );
    while let Some(line) = lines.next_line()? {
        f(line.bytes, line.offset)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line longer than the bound is an error naming its line and first byte, streamed or
    /// whole; the lines before it are read.
    #[test]
    fn a_line_longer_than_the_bound_is_an_error() {
        let mut text = b"events: Ir\nfn=main\n".to_vec();
        text.extend(std::iter::repeat_n(b'1', 10_000));
        let mut r: &[u8] = &text;
        for mut input in [Input::from_reader(&mut r), Input::from_slice(&text)] {
            let mut seen = Vec::new();
            let e = for_each_line_up_to(&mut input, 4096, |l, off| {
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
}
