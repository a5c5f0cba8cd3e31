//! The input's lines: the SDK's [`Lines`] (read in place from a whole input in memory, or in
//! blocks from a stream), with this format's bound on a line.

use profconv_plugin::Input;
pub(crate) use profconv_plugin::lines::{BLOCK, Line, Lines};
// Skipped at the start of the input.
pub(crate) use profconv_plugin::UTF8_BOM as BOM;

/// The longest line (256 MiB; trace lines are short, the debugger's profile lines hold one call
/// stack). Past that the input is not a PVM trace, and growing the buffer further would take
/// memory without bound.
pub(crate) const MAX_LINE: usize = 1 << 28;
/// What a line longer than [`MAX_LINE`] is not.
const ONE_RECORD_PER_LINE: &str = "a PVM trace or profile has one record per line (is this one?)";

/// The lines of `input`.
pub(crate) fn lines<'i, 'a>(input: &'i mut Input<'a>) -> Lines<'i, 'a> {
    Lines::new(input, MAX_LINE, ONE_RECORD_PER_LINE)
}
