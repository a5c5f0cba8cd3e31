//! A plugin whose every entry point panics: the host must turn each panic into an error and
//! carry on.

use profconv_plugin::ir::{Profile, ProfileRef};
use profconv_plugin::{Context, Format, Input, Options, Output, PluginError};

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

profconv_plugin::export_plugin!(
    name: "panicky",
    version: env!("CARGO_PKG_VERSION"),
    formats: [Panicky],
);
