//! Folded stacks: one line per stack, frames root first separated by `;`, then whitespace and a
//! count (`main;parse;read 42`), as written by inferno's and FlameGraph's collapsers, perf
//! scripts and py-spy.
//!
//! * Parse: streaming, one pass, no allocation per line; repeated stacks are summed; counts may
//!   be decimal (kept exactly as fixed point); CRLF and blank lines are fine; names that are not
//!   UTF-8 are replaced lossily with a warning; a UTF-8 byte-order mark starting a line is read
//!   as whitespace, and input starting with a UTF-16 one is an error saying so. A line without
//!   a count is an error naming the line, unless `-O skip-bad-lines` (inferno's behaviour: warn
//!   and skip). A file whose first data line has two counts is differential (inferno's `STACK
//!   BEFORE AFTER`): columns `before` and `after` and metadata `diff`, as `profconv diff` builds.
//! * Emit: one line per call node with a self value, siblings sorted by name, so the output is
//!   deterministic and folded → IR → folded gives the input's aggregation. A differential
//!   profile is written with both counts on each line.

mod emit;
mod names;
mod parse;
mod repeats;

use profconv_plugin::ir::{Profile, ProfileRef};
use profconv_plugin::{Context, Format, Input, OptionDesc, Options, Output, PluginError};

pub use emit::{EmitOptions, MAX_SIZE, emit_folded, written_names};
pub use parse::{
    BATCH_FROM_STACKS, BATCH_LINES, MAX_BATCH_LINES, PIECE_SIZE, ParseOptions, parse_folded,
    parse_folded_with,
};

/// The folded-stacks format.
pub struct Folded;

/// The writer's options, checked.
fn emit_options(options: &Options) -> Result<emit::EmitOptions<'_>, PluginError> {
    Ok(emit::EmitOptions {
        value: options.get("value").filter(|v| !v.is_empty()),
        per_thread: options.flag("per-thread"),
        flamechart: options.flag("flamechart"),
        max_size: options.max_output_size("max-size")?,
    })
}

/// Option `piece-size`, checked. Pieces of a few bytes are for tests (every line its own
/// piece); they work, slowly.
fn piece_size(options: &Options) -> Result<usize, PluginError> {
    Ok(options
        .parse_in("piece-size", 1..=parse::MAX_PIECE_SIZE, "a number of bytes")?
        .unwrap_or(parse::PIECE_SIZE))
}

impl Format for Folded {
    const ID: &'static str = "folded";
    const DESCRIPTION: &'static str = "folded stacks, one `frame;frame;frame count` per line";
    const EXTENSIONS: &'static str = "folded,collapsed";
    const OPTIONS: &'static [OptionDesc] = &[
        OptionDesc::flag(
            "skip-bad-lines",
            "skip lines without a valid count, with a warning, instead of failing",
        ).parse_only(),
        OptionDesc::integer(
            "piece-size",
            "8388608",
            "bytes of input per piece when parsing on several threads (--threads)",
        ).parse_only(),
        OptionDesc::string(
            "value",
            "",
            "the value type to write as the count (default: the first weight; both counts, `STACK BEFORE AFTER`, for a differential profile)",
        ).emit_only(),
        OptionDesc::flag(
            "flamechart",
            "time order, nothing merged: one line per call (traces) or per sample run",
        ).emit_only(),
        OptionDesc::flag(
            "per-thread",
            "one merged block per thread (kernel run, process), in thread order",
        ).emit_only(),
        OptionDesc::integer(
            "max-size",
            profconv_plugin::MAX_OUTPUT_SIZE_TEXT,
            "the most bytes to write (0: no bound); each line holds its whole stack, so deep recursion can make terabytes",
        ).emit_only(),
    ];
    const CAN_PARSE: bool = true;
    const CAN_EMIT: bool = true;
    const CAN_SNIFF: bool = true;
    // Given a mapped file whole, the reader goes through it in order and releases it behind.
    const RELEASES_WHOLE_INPUT: bool = true;

    fn sniff(head: &[u8]) -> u32 {
        parse::sniff(head)
    }

    fn check_parse_options(options: &Options) -> Result<(), PluginError> {
        piece_size(options).map(drop)
    }

    fn check_emit_options(options: &Options) -> Result<(), PluginError> {
        emit_options(options).map(drop)
    }

    fn parse(
        input: &mut Input<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        let piece_size = piece_size(options)?;
        let opts = parse::ParseOptions {
            skip_bad_lines: options.flag("skip-bad-lines"),
            threads: cx.threads(),
            piece_size,
            ..parse::ParseOptions::default()
        };
        parse::parse_folded_with(input, opts, cx)
    }

    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        let opts = emit_options(options)?;
        if opts.flamechart {
            if opts.per_thread {
                cx.warn("option per-thread does not apply with flamechart: the flame chart is one timeline of every thread");
            }
            if !profile.is_ordered() {
                cx.warn("this profile does not keep time order (it was aggregated): the flame chart writes its samples in stored order, which is not a timeline");
            }
        }
        let changed = emit::rewritten_names(profile);
        if changed > 0 {
            cx.warn(&format!(
                "{changed} function name(s) contain `;` (the folded frame separator) or line breaks, or whitespace that reads back otherwise (at either end, or before a number that ends the name); written with `:`, spaces and `_` instead"
            ));
        }
        let marked = emit::marked_roots(profile);
        if marked > 0 {
            cx.warn(&format!(
                "{marked} root function name(s) are `#` or start with `#` and whitespace, which folded readers skip as a comment line, are a number, which a line of its own reads as a count, or are empty; written with `_` before them on every line"
            ));
        }
        emit::emit_folded(profile, output, opts)
    }
}
