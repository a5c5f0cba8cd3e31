//! A plugin whose emitter writes different bytes on every call (a call counter in a comment
//! line): the conformance kit must report that emitting twice does not give identical bytes.
//! With `-O abort` it aborts the process once it has written its first line, as a plugin out of
//! memory does: the host must still remove its temp file. With `-O exit=N` it calls
//! `exit(N)` there instead, as a C library's error path may: the run must still fail. With
//! `-O say=TEXT` it warns `TEXT` and fails with `TEXT`, for the host's printing of what plugins
//! say; with `-O mute` it fails with no message at all. Its option `level`
//! declares a default (7) that its own check refuses (at most 5): the conformance kit must
//! report that a user copying the default gets an error.

use profconv_plugin::ir::{CallTree, ProfileRef};
use profconv_plugin::{Context, Format, OptionDesc, Options, Output, PluginError};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts emit calls (synchronized, as the threading rules ask; only the output is wrong).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Folded-like text with a `# run N` header that changes on every call.
pub struct Nondeterministic;

impl Format for Nondeterministic {
    const ID: &'static str = "nondeterministic";
    const DESCRIPTION: &'static str = "writes a call counter into its output (test fixture)";
    const EXTENSIONS: &'static str = "nondeterministic";
    const CAN_EMIT: bool = true;
    const OPTIONS: &'static [OptionDesc] = &[
        OptionDesc::flag(
            "abort",
            "abort the process after the first line (test fixture)",
        )
        .emit_only(),
        OptionDesc::integer(
            "exit",
            "",
            "call exit with this status after the first line (test fixture)",
        )
        .emit_only(),
        OptionDesc::string(
            "say",
            "",
            "warn this text, then fail with it (test fixture)",
        )
        .emit_only(),
        OptionDesc::flag("mute", "fail without a message (test fixture)").emit_only(),
        OptionDesc::integer(
            "level",
            "7",
            "from 0 to 5, though the default says 7 (test fixture)",
        )
        .emit_only(),
    ];

    fn check_emit_options(options: &Options) -> Result<(), PluginError> {
        options.parse_in("level", 0..=5u32, "a level").map(drop)
    }

    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        if let Some(text) = options.get("say") {
            cx.warn(text);
            return Err(PluginError::invalid_input(text.to_string()));
        }
        if options.flag("mute") {
            return Err(PluginError::internal(""));
        }
        let run = CALLS.fetch_add(1, Ordering::Relaxed);
        writeln!(output, "# run {run}")?;
        if options.flag("abort") {
            output.flush()?;
            std::process::abort();
        }
        if let Some(code) = options.parse::<i32>("exit")? {
            output.flush()?;
            std::process::exit(code);
        }
        let tree = CallTree::build(profile)?;
        writeln!(output, "# {} call nodes", tree.len())?;
        Ok(())
    }
}

profconv_plugin::export_plugin!(
    name: "nondeterministic",
    version: env!("CARGO_PKG_VERSION"),
    formats: [Nondeterministic],
);
