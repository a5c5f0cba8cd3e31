//! The input's lines: the SDK's [`Lines`] (read in place from a whole input in memory, or in
//! blocks from a stream), with the SDK's bound on a line ([`MAX_LINE`]) and what a line of this format holds.

use profconv_plugin::Input;
pub(crate) use profconv_plugin::lines::{BLOCK, Line, Lines, MAX_LINE};
// Skipped at the start of the input.
pub(crate) use profconv_plugin::UTF8_BOM as BOM;

/// What a line longer than [`MAX_LINE`] is not.
const ONE_RECORD_PER_LINE: &str = "a PVM trace or profile has one record per line (is this one?)";

/// The lines of `input`.
pub(crate) fn lines<'i, 'a>(input: &'i mut Input<'a>) -> Lines<'i, 'a> {
    Lines::new(input, MAX_LINE, ONE_RECORD_PER_LINE)
}
