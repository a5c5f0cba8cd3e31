//! A plugin whose every entry point panics: the host must turn each panic into an error and
//! carry on. Its second format, `ragged`, builds in safe code a profile one of whose columns
//! is shorter than its table (the input's first word says which): the host must get an error,
//! not read past the column's end. It also claims the extension `.panicky`: a name that two
//! readers claim.

use profconv_plugin::ir::{Profile, ProfileBuilder, ProfileRef, ValueKind};
use profconv_plugin::{Context, Format, Input, Options, Output, PluginError};
use std::io::Read;

/// A format that panics when used.
pub struct Panicky;

impl Format for Panicky {
    const ID: &'static str = "panicky";
    // With an escape sequence, which `profconv formats` must not send to the terminal.
    const DESCRIPTION: &'static str = "panics in sniff, parse and emit (test fixture) \x1b[31m";
    const EXTENSIONS: &'static str = "panicky";
    const CAN_PARSE: bool = true;
    const CAN_EMIT: bool = true;
    const CAN_SNIFF: bool = true;

    fn sniff(_: &[u8]) -> u32 {
        panic!("sniff exploded")
    }

    fn parse(_: &mut Input<'_>, _: &Options, _: &mut Context<'_>) -> Result<Profile, PluginError> {
        let v: Vec<u32> = Vec::new();
        let i = v.len() + 3;
        Ok(Profile {
            flags: v[i],
            ..Default::default()
        })
    }

    fn emit(
        _: &ProfileRef<'_>,
        _: &mut Output<'_>,
        _: &Options,
        _: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        panic!("emit exploded")
    }
}

/// A parser whose profile has one column cut short: `funcs`, `frames`, `stacks`, `values`,
/// `value-types`, `time` or `threads`, by the input's first word.
pub struct Ragged;

impl Format for Ragged {
    const ID: &'static str = "ragged";
    const DESCRIPTION: &'static str = "builds profiles with a column cut short (test fixture)";
    const EXTENSIONS: &'static str = "ragged,panicky";
    const CAN_PARSE: bool = true;

    fn parse(
        input: &mut Input<'_>,
        _: &Options,
        _: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        let mut text = Vec::new();
        input.read_to_end(&mut text).map_err(PluginError::from)?;
        let case = String::from_utf8_lossy(&text).trim().to_string();
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", "f"], &[1])?;
        b.add_stack(&["main", "g"], &[2])?;
        let mut p = b.finish();
        match case.as_str() {
            "funcs" => p.funcs.file.clear(),
            "frames" => p.frames.address.clear(),
            "stacks" => p.stacks.frame.truncate(1),
            "values" => p.samples.values[0].truncate(1),
            "value-types" => p.value_types.push(p.value_types[0]),
            "time" => p.samples.time = Some(vec![5]),
            "threads" => p.samples.thread = Some(Vec::new()),
            _ => {}
        }
        Ok(p)
    }
}

profconv_plugin::export_plugin!(
    name: "panicky",
    version: env!("CARGO_PKG_VERSION"),
    formats: [Panicky, Ragged],
);
