//! callgrind profiles (valgrind's callgrind, KCachegrind, callgrind_annotate, gprof2dot).
//!
//! * **Emit** ([`emit_callgrind`]): one `events:` column per weight column of the IR (long names
//!   from the value type on `event:` lines; fixed-point columns are written as scaled integers
//!   with a note in the header), functions with their files and lines where the IR has them,
//!   call lines with exact call counts (a `calls` column), with counts estimated from the sample
//!   order (seed 003's rule, for `ORDERED` profiles), or with documented lower bounds
//!   (aggregated profiles). Inclusive costs on call lines charge each sample once per function
//!   on its stack, to the call into that function's outermost frame, so recursion never pushes
//!   a function's inclusive cost (the sum of its incoming calls, as callgrind_annotate and
//!   KCachegrind compute it) above the total. The output is sorted: the same profile always
//!   gives the same bytes.
//! * **Parse** ([`parse_callgrind`]): callgrind files as valgrind writes them (line and
//!   instruction positions, name compression, `fl=`/`fi=`/`fe=`, `cfi=`/`cfl=`, relative
//!   subpositions, several parts), read in one streaming pass into a call graph ([`Graph`]),
//!   then turned into a call tree by apportioning each function's costs over its callers in
//!   proportion to the inclusive costs of the call edges ([`build_profile`]). Self costs per
//!   function are exactly those of `callgrind_annotate`.
//!
//! See `docs/formats/callgrind.md` for the mapping and its limits.

mod emit;
mod graph;
mod lines;
mod parse;
mod tree;

/// The blanks readers skip after a compressed id `(N)`: callgrind_annotate's Perl `\s` (space,
/// tab, line feed, carriage return, form feed, vertical tab). The reader skips these, and the
/// writer takes a name's leading ones as lost, so both agree with the readers on which names
/// read back alike.
pub(crate) fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

use profconv_plugin::ir::{Profile, ProfileRef};
use profconv_plugin::{Context, Format, Input, OptionDesc, Options, Output, PluginError};

pub use emit::{
    EmitOptions, ROOT_CALLER, ROOT_CALLER_DESC, emit_callgrind, emit_callgrind_validated,
};
pub use graph::{Costs, Edge, Event, Func, Graph, Positions, SelfCost};
pub use parse::{CELLS_PER_BYTE, FREE_CELLS, MAX_EVENTS, parse_graph, sniff};
pub use tree::{BuildOptions, NODE_CELLS, WORK_PER_ITEM, WORK_PER_NODE, build_profile};

/// Default of `-O max-depth`: deepest call-tree node the parser reconstructs.
pub const DEFAULT_MAX_DEPTH: u32 = 1000;
/// Default of `-O max-nodes`: most call-tree nodes the parser reconstructs.
pub const DEFAULT_MAX_NODES: usize = 1_000_000;

/// Parses a callgrind file into a call-tree profile (`parse_graph` then `build_profile`).
pub fn parse_callgrind(
    input: &mut Input<'_>,
    options: &BuildOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut graph = parse_graph(input, cx)?;
    // In place: build_profile would merge a copy.
    graph
        .merge_positions(options.positions)
        .map_err(PluginError::invalid_input)?;
    build_profile(&graph, options, cx)
}

/// The callgrind format.
pub struct Callgrind;

/// The reader's options, checked.
fn build_options(options: &Options) -> Result<BuildOptions, PluginError> {
    Ok(BuildOptions {
        max_depth: options
            .parse_in("max-depth", 1..=u32::MAX, "a depth")?
            .unwrap_or(DEFAULT_MAX_DEPTH),
        max_nodes: options
            .parse_in("max-nodes", 1..=usize::MAX, "a number of nodes")?
            .unwrap_or(DEFAULT_MAX_NODES),
        positions: match options.get("positions").map(str::trim) {
            None | Some("") => Positions::Instr,
            Some(v) => Positions::NAMES
                .iter()
                .find(|(name, _)| *name == v)
                .map(|&(_, p)| p)
                .ok_or_else(|| {
                    PluginError::bad_option(format!(
                        "option positions={}: expected `instr`, `line` or `function`",
                        profconv_plugin::quote_input(v.as_bytes(), 40)
                    ))
                })?,
        },
    })
}

impl Format for Callgrind {
    const ID: &'static str = "callgrind";
    const DESCRIPTION: &'static str =
        "callgrind profiles (valgrind, KCachegrind, callgrind_annotate, gprof2dot)";
    const EXTENSIONS: &'static str = "callgrind,callgrind.out*";
    const OPTIONS: &'static [OptionDesc] = &[
        OptionDesc::string(
            "value",
            "",
            "write only this weight column as the event (default: every weight column)",
        )
        .emit_only(),
        OptionDesc::integer(
            "max-depth",
            "1000",
            "deepest call-tree node reconstructed from the call graph",
        )
        .parse_only(),
        OptionDesc::integer(
            "max-nodes",
            "1000000",
            "most call-tree nodes reconstructed from the call graph",
        )
        .parse_only(),
        OptionDesc::string(
            "positions",
            "instr",
            "positions the frames keep: `instr` (the file's: addresses and lines), `line` (a function's costs at the instructions of a line merged) or `function` (one frame per call-tree node; least memory, all a flame graph draws)",
        )
        .parse_only(),
    ];
    const CAN_PARSE: bool = true;
    const CAN_EMIT: bool = true;
    const CAN_SNIFF: bool = true;

    fn sniff(head: &[u8]) -> u32 {
        parse::sniff(head)
    }

    fn check_parse_options(options: &Options) -> Result<(), PluginError> {
        build_options(options).map(drop)
    }

    fn parse(
        input: &mut Input<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        parse_callgrind(input, &build_options(options)?, cx)
    }

    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        _cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        let opts = EmitOptions {
            value: options.get("value").filter(|v| !v.is_empty()),
        };
        // The SDK's entry point validated the profile (as the host did): no third pass.
        emit_callgrind_validated(profile, output, opts)
    }
}
