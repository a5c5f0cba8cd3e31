//! Emitters for two profile viewers:
//!
//! * [`Firefox`] (`firefox`, `*.json.gz`): the Firefox Profiler's **processed** profile format,
//!   pinned at version 55, gzip-compressed with a fixed header (no mtime) and a fixed level. Open
//!   it at profiler.firefox.com ("Load a profile from file", or drag and drop).
//! * [`Speedscope`] (`speedscope`, `*.speedscope.json`): speedscope's JSON file format; evented
//!   profiles for ordered traces with exact calls, sampled profiles otherwise.
//!
//! Both write one thread (profile) per IR thread, take the sample weight from `-O value=NAME` or
//! the first `Weight` column, and produce the same bytes for the same input every time.
//! See `docs/formats/firefox.md`.

mod categories;
pub mod check;
mod common;
mod compact;
mod firefox;
mod speedscope;

pub use categories::{Categories, Category, ModuleClass, categorize, mercury_module_class};
pub use common::DEFAULT_THREAD_NAME;
pub use firefox::{
    FirefoxOptions, GECKO_VERSION, GZIP_LEVEL, INTERVAL_MS, PROCESSED_PROFILE_VERSION,
    emit_firefox, firefox_json_pretty,
};
pub use speedscope::{
    MAX_SIZE as SPEEDSCOPE_MAX_SIZE, SCHEMA, SpeedscopeOptions, emit_speedscope,
    speedscope_json_pretty,
};

use profconv_plugin::ir::ProfileRef;
use profconv_plugin::{Context, Format, OptionDesc, Options, Output, PluginError};

/// The Firefox Profiler format (emit only).
pub struct Firefox;

impl Format for Firefox {
    const ID: &'static str = "firefox";
    const DESCRIPTION: &'static str =
        "Firefox Profiler processed profile (version 55), gzip-compressed JSON (emit only)";
    const EXTENSIONS: &'static str = "json.gz";
    const OPTIONS: &'static [OptionDesc] = &[OptionDesc::string(
        "value",
        "",
        "the value type used as the sample weight (default: the first weight)",
    )
    .emit_only()];
    const CAN_EMIT: bool = true;

    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        let opts = FirefoxOptions {
            value: options.get("value"),
        };
        emit_firefox(profile, output, opts, cx)
    }
}

/// speedscope's JSON format (emit only).
pub struct Speedscope;

impl Format for Speedscope {
    const ID: &'static str = "speedscope";
    const DESCRIPTION: &'static str =
        "speedscope JSON (evented for traces with exact calls, else sampled; emit only)";
    const EXTENSIONS: &'static str = "speedscope.json";
    const OPTIONS: &'static [OptionDesc] = &[
        OptionDesc::string(
            "value",
            "",
            "the value type used as the weight (default: the first weight)",
        ).emit_only(),
        OptionDesc::integer(
            "max-size",
            speedscope::MAX_SIZE_TEXT,
            "the most bytes the sampled profiles' stacks may take (0: no bound; the default, 2 GiB, is the most speedscope opens); each sample holds its whole stack, so deep recursion can make terabytes",
        ).emit_only(),
    ];
    const CAN_EMIT: bool = true;

    fn check_emit_options(options: &Options) -> Result<(), PluginError> {
        speedscope_options(options).map(drop)
    }

    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        emit_speedscope(profile, output, speedscope_options(options)?, cx)
    }
}

/// The speedscope writer's options, checked.
fn speedscope_options(options: &Options) -> Result<SpeedscopeOptions<'_>, PluginError> {
    Ok(SpeedscopeOptions {
        value: options.get("value"),
        max_size: options.max_output_size_or("max-size", speedscope::MAX_SIZE)?,
    })
}

#[cfg(test)]
mod tests;
