//! `profconv`: convert profiles between formats through one call-tree IR, with every format
//! provided by a plugin loaded at run time.

mod discovery;
mod io;
mod registry;

use clap::{Args, Parser, Subcommand, ValueEnum};
use io::{OpenInput, Sink, is_broken_pipe};
use profconv_ir::{
    CallTree, Profile, ProfileRef, Transform, TreeOrder, TreeTextOptions, ValueKind, write_tree,
};
use profconv_plugin::Status;
use profconv_plugin::abi::{log_level, option_kind};
use profconv_plugin::host::{Blocking, CallError, FormatHandle, ParseInput};
use registry::Registry;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `profconv --version`: the program's version and the plugin ABI it speaks (a plugin author
/// asks which minor the host has: a 1.5 host checks option values before reading the input).
/// A test keeps it equal to the SDK's constants.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (plugin ABI 1.5)");

/// Convert profiles between profiler formats through one call-tree IR.
#[derive(Parser)]
#[command(name = "profconv", version = VERSION, about, long_about = None)]
struct Cli {
    /// Load a plugin library, or every plugin in a directory (repeatable; searched first).
    #[arg(long = "plugin", value_name = "PATH", global = true)]
    plugins: Vec<PathBuf>,
    /// Only load plugins from --plugin and PROFCONV_PLUGIN_PATH (pins discovery).
    #[arg(long, global = true)]
    no_default_plugins: bool,
    /// Do not print warnings, nor the progress bar.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Worker threads for parsers and emitters that split their work (folded stacks are parsed
    /// in parallel); the output is the same whatever the number. Default and most: every core.
    #[arg(long, short = 'j', value_name = "N", global = true, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert a profile: `profconv convert perf.folded -o perf.svg`.
    Convert(ConvertArgs),
    /// Print the call tree as text (one node per line, two spaces of indent per level).
    Tree(TreeArgs),
    /// Compare two profiles: `profconv diff before.folded after.folded -o diff.svg` draws a
    /// differential flamegraph (frames coloured by the growth or shrink of their self value);
    /// other output formats get the two profiles as `before` and `after` value types.
    Diff(DiffArgs),
    /// List the loaded plugins and their formats.
    Formats,
    /// Check a plugin library with the conformance kit (handshake, sniffing, round trips,
    /// determinism, malformed input, two threads, the thread count): `profconv plugin-check
    /// libprofconv_plugin_x.so sample.x`. Exits 1 if any check fails.
    PluginCheck {
        /// The plugin library (it need not be in a plugin directory).
        path: PathBuf,
        /// Sample files in the plugin's own formats (samples of the built-in formats are always
        /// used too).
        samples: Vec<PathBuf>,
    },
}

#[derive(Args)]
struct DiffArgs {
    /// The baseline profile.
    before: PathBuf,
    /// The profile to compare with it.
    after: PathBuf,
    /// Input format of both (default: detected for each).
    #[arg(long, short = 'f', value_name = "FMT")]
    from: Option<String>,
    /// Output file (`-` or absent for stdout); written atomically.
    #[arg(long, short = 'o', value_name = "OUT")]
    output: Option<PathBuf>,
    /// Output format (default: from the output file's name; `flamegraph` on stdout).
    #[arg(long, short = 't', value_name = "FMT")]
    to: Option<String>,
    /// The value type compared (default: the first weight of each profile).
    #[arg(long, value_name = "NAME")]
    value: Option<String>,
    /// A format option, `-O KEY[=VALUE]`, e.g. `-O normalize` (SVG output: scale before to
    /// after's total).
    #[arg(short = 'O', value_name = "KEY[=VALUE]")]
    options: Vec<String>,
    /// Transforms applied to the comparison, the two profiles combined (see `convert --help`;
    /// `min-total` keeps a node large on either side).
    #[arg(long = "transform", short = 'T', value_name = "SPEC", value_parser = parse_transform)]
    transforms: Vec<Transform>,
}

#[derive(Args)]
struct InputArgs {
    /// Input file (`-` for stdin); gzip-compressed input is decompressed.
    input: PathBuf,
    /// Input format (default: detected from the content, then the file name).
    #[arg(long, short = 'f', value_name = "FMT")]
    from: Option<String>,
    /// A format option, `-O KEY[=VALUE]` (repeatable; `profconv formats` lists them).
    #[arg(short = 'O', value_name = "KEY[=VALUE]")]
    options: Vec<String>,
    /// Reshape the call tree before output; repeatable, applied in order (a stack). SPEC is
    /// one of: merge:PATH, merge-func:NAME, prune:PATH, drop:PATH, focus:PATH,
    /// focus-func:NAME, collapse-direct-rec[:NAME], collapse-rec[:NAME], invert, max-depth:N,
    /// min-total:FRACTION|PERCENT%. PATH is NAME;NAME;... from a root; escape `;` and `\` in
    /// names with `\`. See docs/transforms.md.
    #[arg(long = "transform", short = 'T', value_name = "SPEC", value_parser = parse_transform)]
    transforms: Vec<Transform>,
}

fn parse_transform(spec: &str) -> Result<Transform, String> {
    spec.parse()
}

#[derive(Args)]
struct ConvertArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output file (`-` or absent for stdout); written atomically.
    #[arg(long, short = 'o', value_name = "OUT")]
    output: Option<PathBuf>,
    /// Output format (default: from the output file's name).
    #[arg(long, short = 't', value_name = "FMT")]
    to: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum OrderArg {
    /// Descending total, ties by name.
    Total,
    /// The order in which the input first reached each child.
    FirstSeen,
    /// By name.
    Name,
}

#[derive(Args)]
struct TreeArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Value type shown as self/total (default: the first weight, e.g. samples or ticks); a
    /// count (`calls`) is shown as NAME=N, the node's own.
    #[arg(long, value_name = "NAME")]
    value: Option<String>,
    /// Also print every other value type.
    #[arg(long)]
    all_values: bool,
    /// Sibling order.
    #[arg(long, value_enum, default_value = "total")]
    order: OrderArg,
}

/// Why a run failed; each class has its exit code.
enum Failure {
    /// Bad command line or options (exit 2).
    Usage(String),
    /// The input is malformed (exit 3).
    Input(String),
    /// Reading or writing failed (exit 4).
    Io(String),
    /// A plugin failed, panicked or could not be used (exit 5).
    Plugin(String),
    /// Stdout was closed by its reader: stop quietly (exit 0).
    BrokenPipe,
}

impl Failure {
    fn exit(self) -> ExitCode {
        let (code, msg) = match self {
            Failure::BrokenPipe => return ExitCode::SUCCESS,
            Failure::Usage(m) => (2, m),
            Failure::Input(m) => (3, m),
            Failure::Io(m) => (4, m),
            Failure::Plugin(m) => (5, m),
        };
        say("error", &msg);
        ExitCode::from(code)
    }

    /// An IR error about `context`: a result past a bound (`IrError::TooLarge`: choose other
    /// transforms or options) is a usage error (exit 2), like the emitters' size bounds; an
    /// overflow or an invalid profile comes from the input (exit 3).
    fn ir(context: &str, e: &profconv_ir::IrError) -> Failure {
        match e {
            profconv_ir::IrError::TooLarge(_) => Failure::Usage(format!("{context}: {e}")),
            _ => Failure::Input(format!("{context}: {e}")),
        }
    }

    /// Reading `place` failed: corrupt or truncated gzip data is malformed input (exit 3, at its
    /// compressed byte offset); anything else is an I/O error (exit 4).
    fn reading(place: &str, e: &std::io::Error) -> Failure {
        match io::corrupt_gzip(e) {
            Some(g) => Failure::Input(format!("{place}: byte {}: {}", g.offset, g.what())),
            None => Failure::Io(format!("{place}: {e}")),
        }
    }

    /// A parser's error, located in `place`, the input read. The offset of an error without a
    /// line, in a gzip input, is one of the decompressed data the parser read, not of the file:
    /// it says so, as the host's own errors about the gzip data give the compressed offset in
    /// the same form (`FILE: byte N: corrupt or truncated gzip data`).
    fn from_parse(mut e: CallError, place: &str, what: &str, gzip: bool) -> Failure {
        if gzip
            && e.line.is_none()
            && e.io.is_none()
            && let Some(at) = e.byte_offset.take()
        {
            e.message = format!("byte {at} of the decompressed data: {}", e.message);
        }
        Self::from_call(e, place, what)
    }

    /// A plugin call's error, located in `place` (the input being read or the output written).
    fn from_call(e: CallError, place: &str, what: &str) -> Failure {
        if let Some(io) = &e.io {
            if is_broken_pipe(io) {
                return Failure::BrokenPipe;
            }
            return Failure::reading(place, io);
        }
        let msg = match (e.line, e.byte_offset) {
            (Some(_), _) => format!("{place}:{e}"),
            (None, Some(_)) => format!("{place}: {e}"),
            (None, None) => format!("{place}: {}", e.message),
        };
        let msg = continued(&msg).into_owned();
        match e.status {
            Status::INVALID_INPUT => Failure::Input(msg),
            Status::BAD_OPTIONS => Failure::Usage(msg),
            Status::IO => Failure::Io(msg),
            Status::UNSUPPORTED => Failure::Usage(msg),
            // The host's text for a plugin that gave no message says who failed already.
            _ if e.message.starts_with(&format!("{what} failed (")) => Failure::Plugin(msg),
            _ => Failure::Plugin(format!("{what} failed ({}): {msg}", e.status.name())),
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A usage error quotes what was typed (a file name, a `-T` spec): printed uncoloured,
        // with control characters escaped as in profconv's own messages, so that an escape
        // sequence in an argument does not reach the terminal. Help and version print as clap
        // prints them.
        Err(e) if e.use_stderr() => {
            // clap's plain text drops control characters (a `-T` spec with an escape sequence
            // was quoted without it, as something not typed): the message is rendered again
            // by a command without styles, whose text keeps them, for `printable` to escape.
            let plain = <Cli as clap::CommandFactory>::command()
                .styles(clap::builder::Styles::plain())
                .try_get_matches_from(std::env::args_os());
            let text = match plain {
                Err(p) if p.kind() == e.kind() => p.render().ansi().to_string(),
                _ => e.render().to_string(),
            };
            let _ = write!(Blocking(std::io::stderr()), "{}", printable(&text));
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
        // Help and version go to stdout as clap prints them; a write that fails there (a full
        // disk, `> /dev/full`) fails the run as any output does, a closed pipe does not.
        Err(e) => {
            return match io::stdout_writable().and_then(|()| e.print()) {
                Err(err) if !is_broken_pipe(&err) => Failure::Io(format!("<stdout>: {err}")).exit(),
                _ => ExitCode::from(e.exit_code().clamp(0, 255) as u8),
            };
        }
    };
    // Ctrl-C, SIGTERM (`timeout`, `kill`) and SIGHUP (the terminal closed): remove the
    // half-written temp file, then end by the signal, as interrupted processes do (a shell
    // loop stops only when its command ended by SIGINT; 130 only where no signal was noted).
    // A signal the process was started ignoring (`nohup`, `cmd &`) stays ignored.
    profconv_plugin::host::handle_interrupts_unless_ignored(|| {
        let _ = ctrlc::set_handler(|| io::on_interrupt(130));
    });
    // Past `ulimit -f`, a write fails (exit 4, temp file removed) instead of a SIGXFSZ kill.
    profconv_plugin::host::ignore_file_size_signal();
    // A crash (SIGSEGV, SIGBUS) removes the pending temp file: its handler is put in place
    // before the plugins are loaded, so that a plugin's own (a runtime's) goes in front of it.
    profconv_plugin::host::handle_crashes();
    profconv_plugin::host::share_allocator_arenas_under_a_limit();
    if let Command::PluginCheck { path, samples } = &cli.command {
        // The plugin under test is loaded by the kit itself, not through discovery.
        let report = profconv_conformance::check_plugin(path, samples);
        io::end_if_interrupted();
        // A closed stdout (`| head`) is no failure; a full disk is (exit 4), as for `convert`.
        let mut out = Blocking(std::io::stdout().lock());
        if let Err(e) = io::stdout_writable()
            .and_then(|()| write!(out, "{report}"))
            .and_then(|()| out.flush())
        {
            return match is_broken_pipe(&e) {
                // `| head`: the report is cut, not the verdict, which the status still gives.
                true if !report.passed() => ExitCode::FAILURE,
                true => Failure::BrokenPipe.exit(),
                false => Failure::Io(format!("<stdout>: {e}")).exit(),
            };
        }
        return if report.passed() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    finish(run(&cli))
}

/// The run's exit status, unless an interrupt came during it: then the process ends by the
/// signal here, even when the thread that acts on interrupts has not run yet, as `convert`'s
/// output does not go in place after one ([`io::end_if_interrupted`]). A run often fails or ends
/// because of the interrupt: Ctrl-C ends the program piping the input too, and the parser then
/// finds the input empty or cut short; on a busy machine the error (exit 3) went out first, and
/// a shell loop went on (33 of 100 Ctrl-Cs). `tree` and `formats` write no output to put in
/// place, and end by the signal as the other thread would have.
fn finish(result: Result<(), Failure>) -> ExitCode {
    io::end_if_interrupted();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit(),
    }
}

fn run(cli: &Cli) -> Result<(), Failure> {
    let mut registry = Registry::load(discovery::candidates(&cli.plugins, !cli.no_default_plugins));
    registry.notes = discovery::dirs_without_plugins(&cli.plugins);
    // `formats` lists every plugin that failed to load (that is its job); other commands stop
    // on a plugin the user named, and warn about ones found in directories.
    if !matches!(cli.command, Command::Formats) {
        check_plugin_failures(&registry, cli.quiet)?;
    }
    let max_whole_stream = match cli.command {
        Command::Formats => MAX_WHOLE_STREAM,
        _ => max_whole_stream()?,
    };
    let run = Run {
        quiet: cli.quiet,
        max_whole_stream,
        threads: cli.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |n| n as usize,
        ),
    };
    match &cli.command {
        Command::Formats => list_formats(&registry, !cli.no_default_plugins),
        Command::Convert(args) => convert(&registry, args, run),
        Command::Tree(args) => tree(&registry, args, run),
        Command::Diff(args) => diff(&registry, args, run),
        Command::PluginCheck { .. } => unreachable!("handled in main, before discovery"),
    }
}

/// A plugin the user named as a file (`--plugin FILE`, a file in `PROFCONV_PLUGIN_PATH`) that
/// failed to load is an error (exit 5); one found by scanning a directory is a warning.
fn check_plugin_failures(registry: &Registry, quiet: bool) -> Result<(), Failure> {
    let named: Vec<String> = registry
        .explicit_failures()
        .map(|r| {
            // The reason names the file (every load error and refusal does): not twice.
            format!("{}: {}", r.candidate.source.label(), r.reason)
        })
        .collect();
    if !named.is_empty() {
        return Err(Failure::Plugin(named.join("\nprofconv: error: ")));
    }
    for n in &registry.notes {
        warn(quiet, n);
    }
    for r in registry.scanned_failures() {
        warn(
            quiet,
            &format!(
                "plugin not loaded ({}): {}",
                r.candidate.source.label(),
                r.reason
            ),
        );
    }
    Ok(())
}

/// Settings of this run that every step needs.
#[derive(Clone, Copy)]
struct Run {
    quiet: bool,
    /// Worker threads plugins may use (`--threads`).
    threads: usize,
    /// The most bytes a stream read whole may have (`PROFCONV_MAX_WHOLE_STREAM`).
    max_whole_stream: u64,
}

/// `PROFCONV_MAX_WHOLE_STREAM`, checked before anything is read, whether or not this run reads
/// a stream whole: a bad value is refused on every run alike, not only on the inputs it bounds.
fn max_whole_stream() -> Result<u64, Failure> {
    let Some(v) = std::env::var_os("PROFCONV_MAX_WHOLE_STREAM") else {
        return Ok(MAX_WHOLE_STREAM);
    };
    let t = v.to_str().map(str::trim).unwrap_or_default();
    match t.parse::<u64>() {
        Ok(n) => Ok(n),
        Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            Err(Failure::Usage(format!(
                "PROFCONV_MAX_WHOLE_STREAM={v:?}: too large, at most {} bytes",
                u64::MAX
            )))
        }
        Err(_) => Err(Failure::Usage(format!(
            "PROFCONV_MAX_WHOLE_STREAM={v:?}: expected a number of bytes (digits only)"
        ))),
    }
}

fn warn(quiet: bool, msg: &str) {
    if !quiet {
        io::above_progress(|| say("warning", msg));
    }
}

/// Writes `profconv: KIND: MSG` and its line break to stderr in one write: runs side by side
/// (`xargs -P`, `make -j`) share a stderr, and a message written in pieces (the prefix, the
/// text, the line break) was cut into by another run's. One write of at most `PIPE_BUF` (4 KiB)
/// is never cut, to a pipe or to a file opened for appending.
fn say(kind: &str, msg: &str) {
    let line = format!("profconv: {kind}: {}\n", printable(msg));
    let _ = Blocking(std::io::stderr()).write_all(line.as_bytes());
}

/// A plugin's message with its later lines indented: none of them can then pass for a line of
/// profconv's own (`profconv: error: …`).
fn continued(msg: &str) -> std::borrow::Cow<'_, str> {
    match msg.contains('\n') {
        true => msg.replace('\n', "\n  ").into(),
        false => msg.into(),
    }
}

/// A message as it may reach a terminal: control characters other than line breaks and tabs
/// (an escape sequence, a carriage return, a bell in a file name or a `-T` spec) escaped as
/// `\u{1b}`, `\r`, as the plugins' messages and the tree text escape theirs.
fn printable(msg: &str) -> std::borrow::Cow<'_, str> {
    use profconv_ir::text::is_bidi_control;
    if !msg.contains(|c: char| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)) {
        return msg.into();
    }
    let mut out = String::with_capacity(msg.len() + 16);
    for c in msg.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.extend(c.escape_debug()),
            // A bidirectional override (a file name's, a `-T` spec's) would draw the rest of
            // the line reversed.
            c if is_bidi_control(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out.into()
}

/// The most bytes read into memory from a stream (stdin, gzip) for a parser that reads its
/// input whole (Deep.data), unless `PROFCONV_MAX_WHOLE_STREAM` gives another; a regular file is
/// mapped instead, or read up to its size.
const MAX_WHOLE_STREAM: u64 = 1 << 30;

/// `(key, value)` option pairs for one format.
type OptionList = Vec<(String, Option<String>)>;

/// `-O KEY[=VALUE]` as its key and value.
fn option_item(item: &str) -> (&str, Option<String>) {
    match item.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.to_string())),
        None => (item.trim(), None),
    }
}

/// The emitter's own options, as [`split_options`] will route them, checked by the emitter
/// (ABI 1.5) before any input is opened: the emitter is known from `--to` or the output's name,
/// while the parser, which the rest of the options need, is known only from the input's head.
fn check_emit_options_early(
    raw: &[String],
    emitter: &FormatHandle,
    out_path: &Path,
    run: Run,
) -> Result<(), Failure> {
    let mut mine = Vec::new();
    for item in raw {
        let (key, value) = option_item(item);
        if let Some(decl) = emitter
            .options
            .iter()
            .find(|o| o.key == key && o.applies(false))
        {
            check_option_value(emitter, decl, value.as_deref())?;
            mine.push((key.to_string(), value));
        }
    }
    check_option_values(emitter, false, &mine, &output_name(out_path), run)
}

/// `-O KEY[=VALUE]` pairs, each routed to the formats that declare the key for what they do
/// here: `formats` pairs each format with `true` where it reads, `false` where it writes.
fn split_options(
    registry: &Registry,
    raw: &[String],
    formats: &[(&FormatHandle, bool)],
) -> Result<Vec<OptionList>, Failure> {
    split_options_read(registry, raw, formats, None)
}

/// [`split_options`] for a command whose input's reader was picked from its content
/// (`detected`: the input's name and that reader): an option of another reader then says so,
/// and how to read the input with that one.
fn split_options_read(
    registry: &Registry,
    raw: &[String],
    formats: &[(&FormatHandle, bool)],
    detected: Option<(&str, &FormatHandle)>,
) -> Result<Vec<OptionList>, Failure> {
    let mut per_format = vec![Vec::new(); formats.len()];
    for item in raw {
        let (key, value) = option_item(item);
        let mut used = false;
        // A format that declares the key for the other phase only (`-O max-nodes`, a
        // callgrind reader's option, when writing callgrind).
        let mut elsewhere = None;
        for (i, &(f, parse)) in formats.iter().enumerate() {
            let Some(decl) = f.options.iter().find(|o| o.key == key) else {
                continue;
            };
            if !decl.applies(parse) {
                elsewhere.get_or_insert((f, parse));
                continue;
            }
            check_option_value(f, decl, value.as_deref())?;
            per_format[i].push((key.to_string(), value.clone()));
            used = true;
        }
        if used {
            continue;
        }
        // `diff` reads two inputs, often of one format, and a format may also write: each
        // format is listed once, in order, with the keys that apply to what it does here.
        let mut ids: Vec<&str> = Vec::new();
        for (f, _) in formats {
            if !ids.contains(&f.id.as_str()) {
                ids.push(&f.id);
            }
        }
        let known: Vec<String> = ids
            .iter()
            .map(|&id| {
                let roles: Vec<_> = formats.iter().filter(|(f, _)| f.id == id).collect();
                let keys: Vec<&str> = roles[0]
                    .0
                    .options
                    .iter()
                    .filter(|o| roles.iter().any(|&&(_, parse)| o.applies(parse)))
                    .map(|o| o.key.as_str())
                    .collect();
                let keys = match keys.is_empty() {
                    true => "none".to_string(),
                    false => keys.join(", "),
                };
                format!("{id}: {keys}")
            })
            .collect();
        let raw_key = key;
        let key = profconv_plugin::quote_input(key.as_bytes(), 40);
        // Formats not used here that declare the key (`-O normalize`, the flame graph's, with
        // `--to folded`): say whose it is.
        let owners: Vec<String> = registry
            .formats
            .iter()
            .filter(|f| !ids.contains(&f.id.as_str()))
            .filter(|f| f.options.iter().any(|o| o.key == raw_key))
            .map(|f| format!("'{}'", f.id))
            .collect();
        let plural = if owners.len() > 1 { "s" } else { "" };
        let known = known.join("; ");
        // The known options too: `-O max-size` (the folded writer's) given when folded is read
        // and a flame graph written is about the output, which has no such option.
        return Err(Failure::Usage(match elsewhere {
            Some((f, parse)) => {
                let (applies, here) = match parse {
                    true => ("writes", "reads"),
                    false => ("reads", "writes"),
                };
                let also = match owners.is_empty() {
                    true => String::new(),
                    false => format!(
                        "; format{plural} {} also {}, not used by this command",
                        owners.join(", "),
                        if owners.len() > 1 {
                            "have it"
                        } else {
                            "has it"
                        }
                    ),
                };
                // `-O max-nodes` (callgrind's reader's) when writing callgrind from a file whose
                // content read as folded.
                let hint = match detected {
                    Some((input, parser)) if !parse && f.can_parse() => format!(
                        "; {input} was read as '{}', from its content: `--from {}` reads it \
                         with '{}'",
                        parser.id, f.id, f.id
                    ),
                    _ => String::new(),
                };
                format!(
                    "option '{key}' applies when format '{}' {applies} a profile; here it {here} \
                     one{also} (options here: {known}){hint}",
                    f.id,
                )
            }
            None => match owners.as_slice() {
                [] => format!("unknown option '{key}' (known options: {known})"),
                _ => {
                    // `-O variant=…` (pvm's) on a file whose content read as folded.
                    let reader = registry.formats.iter().find(|f| {
                        f.can_parse()
                            && !ids.contains(&f.id.as_str())
                            && f.options
                                .iter()
                                .any(|o| o.key == raw_key && o.applies(true))
                    });
                    let hint = match (detected, reader) {
                        (Some((input, parser)), Some(r)) => format!(
                            "; {input} was read as '{}', from its content: `--from {}` reads it \
                             with '{}'",
                            parser.id, r.id, r.id
                        ),
                        _ => String::new(),
                    };
                    format!(
                        "option '{key}' belongs to format{plural} {}, which this command does \
                         not use (options here: {known}){hint}",
                        owners.join(", ")
                    )
                }
            },
        }));
    }
    Ok(per_format)
}

fn check_option_value(
    f: &FormatHandle,
    decl: &profconv_plugin::host::OptionInfo,
    value: Option<&str>,
) -> Result<(), Failure> {
    let bad = |want: &str| {
        Failure::Usage(format!(
            "option '{}' of format '{}' takes {want}, got {}",
            decl.key,
            f.id,
            value.map_or("no value".to_string(), |v| format!(
                "'{}'",
                profconv_plugin::quote_input(v.as_bytes(), 40)
            ))
        ))
    };
    decl.check_value(value).map_err(bad)
}

/// How messages name an input before it is open (as [`OpenInput::open`] names it after).
fn input_name(path: &Path) -> String {
    match path == Path::new("-") {
        true => "<stdin>".to_string(),
        false => io::shown(path),
    }
}

/// With `--from`, the parser is known before its input is opened: its option values are
/// checked then (`true`), so a bad one is refused at once even on a pipe that has not yet
/// sent the 16 KiB head detection reads. Without it (`false`) they are checked once the head
/// has picked the parser.
fn check_input_options_early(
    registry: &Registry,
    from: Option<&str>,
    inputs: &[&Path],
    raw: &[String],
    emitter: Option<&FormatHandle>,
    run: Run,
) -> Result<bool, Failure> {
    let Some(id) = from else {
        return Ok(false);
    };
    let parser = registry.parser(id).map_err(Failure::Usage)?;
    let mut formats = vec![(parser, true)];
    formats.extend(emitter.map(|e| (e, false)));
    let opts = split_options(registry, raw, &formats)?;
    for input in inputs {
        check_option_values(parser, true, &opts[0], &input_name(input), run)?;
    }
    Ok(true)
}

/// Opens the input and picks its parser.
fn open_input<'r>(
    registry: &'r Registry,
    args: &InputArgs,
    quiet: bool,
) -> Result<(OpenInput, &'r FormatHandle), Failure> {
    let mut input =
        OpenInput::open(&args.input).map_err(|e| Failure::reading(&input_name(&args.input), &e))?;
    let parser = match &args.from {
        Some(id) => registry.parser(id).map_err(Failure::Usage)?,
        None => {
            let detected = registry.detect_input(&input.head, &input.path, &mut |m| warn(quiet, m));
            let (parser, by_name) = match detected {
                Ok(found) => found,
                // A corrupt gzip stream decompresses into garbage no format knows: the
                // corruption is the error.
                Err(_) if let Some(e) = input.gzip_corruption() => {
                    return Err(Failure::reading(&input.name, &e));
                }
                Err(m) => {
                    let msg = format!("{}: {m}", input.name);
                    // What the bytes are (compressed by another tool, UTF-16) is about the
                    // input, as the readers say it with `--from` (exit 3); the rest is usage.
                    return Err(match m.starts_with("the input is ") {
                        true => Failure::Input(msg),
                        false => Failure::Usage(msg),
                    });
                }
            };
            input.detected_by_content = !by_name;
            parser
        }
    };
    Ok((input, parser))
}

/// A plugin call's log callback: its warnings printed as profconv's, prefixed with `place`
/// (the input or output the call is about); other levels are not shown.
fn warnings_of(place: &str, run: Run) -> impl FnMut(u32, &str) + '_ {
    move |level: u32, msg: &str| {
        if level == log_level::WARN {
            warn(run.quiet, &format!("{place}: {}", continued(msg)));
        }
    }
}

/// Runs the parser; the returned profile is owned by the plugin until dropped.
fn parse(
    input: OpenInput,
    parser: &FormatHandle,
    options: &[(String, Option<String>)],
    run: Run,
) -> Result<(String, profconv_plugin::host::ForeignProfile), Failure> {
    let name = input.name.clone();
    let size_hint = input.size_hint;
    let mut log = warnings_of(&name, run);
    let streams = parser.streams_input();
    // A large regular file is mapped and given whole (no copy, no buffer) to a parser that
    // reads its input whole, or that releases a whole input behind it; otherwise a streaming
    // parser reads the stream, and the others get it read into memory.
    // A progress bar, if one is drawn, follows the parser's releases through a mapped file.
    let (mapped, mapped_bar) = match parser.takes_mapped_input() {
        true => input
            .mapped(parser.releases_whole_input(), !run.quiet)
            .map_or((None, None), |(m, bar)| (Some(m), bar)),
        false => (None, None),
    };
    if let Some(m) = &mapped {
        // Truncated under the parser, the mapping faults (SIGBUS): end with an error instead.
        // The output's temp file, made before the parse, is removed too: nothing is left.
        // The handler only writes bytes: a progress bar's line is cleared by them first.
        let clear_bar = if mapped_bar.is_some() {
            "\r\x1b[2K"
        } else {
            ""
        };
        m.on_truncation(
            &format!(
                "{clear_bar}profconv: error: {}: the file shrank while it was being read (another \
                 program truncated or rewrote it), or its device failed to read it; nothing was \
                 written\n",
                printable(&name)
            ),
            4,
        );
    }
    let (head_is_all, head) = (input.head.len() < io::HEAD, input.head.clone());
    let (gzip_file, detected_by_content) = (input.gzip_file, input.detected_by_content);
    let from_stdin = input.path.as_os_str() == "-";
    let mut reader = input.into_reader(mapped.is_none() && !run.quiet);
    let mut read = Vec::new();
    if !streams && mapped.is_none() {
        if !head_is_all && parser.sniff(&head) == Ok(0) && parser.sniffs() {
            refuse_by_head(&head, parser, options, &name, gzip_file)?;
        }
        // A stream (stdin, gzip) has no size to trust: a gzip bomb or an endless pipe stops at
        // a bound instead of filling memory. A regular file may be as large as it is.
        let bound = run.max_whole_stream;
        let limit = size_hint.unwrap_or(0).max(bound);
        let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
        io::read_bounded(&mut reader, cap, &mut read).map_err(|e| Failure::reading(&name, &e))?;
        if read.len() as u64 > limit {
            // What the input is, and what to give instead: a named pipe (`<(cmd)`, `mkfifo`)
            // is neither stdin nor gzip.
            let (what, instead) = match (gzip_file, from_stdin) {
                (true, _) => ("this gzip stream, decompressed,", "the uncompressed file"),
                (false, true) => ("this stream on stdin", "the file by its path"),
                (false, false) => ("this pipe (not a regular file)", "a regular file"),
            };
            return Err(Failure::Usage(format!(
                "{name}: format '{}' reads its input whole, and {what} is larger than {bound} \
                 bytes; give {instead} instead (it is mapped, not read into memory), or raise \
                 the bound: PROFCONV_MAX_WHOLE_STREAM=BYTES",
                parser.id
            )));
        }
    }
    let whole = match &mapped {
        Some(m) => Some(m.bytes()),
        None => (!streams).then_some(read.as_slice()),
    };
    // With `whole` lent, the host serves `read` from it.
    let mut empty: &[u8] = &[];
    let release = |upto: u64| {
        if let Some(m) = &mapped {
            m.release(upto);
        }
        if let Some(bar) = &mapped_bar {
            bar.set_position(upto);
        }
    };
    let req = ParseInput {
        reader: if whole.is_none() {
            &mut reader
        } else {
            &mut empty
        },
        whole,
        size_hint,
        name: &name,
        threads: run.threads,
        release: mapped.is_some().then_some(&release as &dyn Fn(u64)),
    };
    let parsed = parser.parse(req, options, &mut log);
    let profile = match parsed {
        Ok(profile) => profile,
        Err(mut e) => {
            // Data after the last whole gzip member spoils none of the lines before it: a
            // parser that read ahead to it (on threads) and failed on one of those lines
            // reports that line, as one thread does, failing before it reads that far.
            if e.status == Status::INVALID_INPUT
                && e.io
                    .as_ref()
                    .and_then(io::corrupt_gzip)
                    .is_some_and(|c| c.after_last_member)
            {
                e.io = None;
            }
            // A parser that read garbage from a corrupt gzip stream (and failed on it before
            // the stream's checksum) reports the corruption, as reading ahead on threads does.
            if gzip_file
                && e.io.is_none()
                && let Some(corrupt) = io::check_gzip_rest(&mut reader)
            {
                return Err(Failure::reading(&name, &corrupt));
            }
            // An error of the input's reading (a corrupt gzip stream, a failing device) is no
            // sign of a wrong format: no hint to choose another.
            let detected_by_content = detected_by_content && e.io.is_none();
            let failure = Failure::from_parse(
                e,
                &name,
                &format!("plugin '{}' reading '{}'", parser.plugin.name, parser.id),
                gzip_file,
            );
            return Err(match failure {
                Failure::Input(msg) if detected_by_content => Failure::Input(format!(
                    "{msg}\n  (read as '{}', the format its first {} KiB looked like; if it is \
                     in another format, choose that with --from)",
                    parser.id,
                    io::HEAD >> 10
                )),
                other => other,
            });
        }
    };
    check_totals(&profile.view(), &name)?;
    drop(log);
    Ok((name, profile))
}

/// The part of the head in which an error of the trial parse ([`refuse_by_head`]) is the
/// input's: a file of another format fails at its start, while an item cut by the head's end
/// may be reported where it starts, near that end, though the whole input holds all of it.
const TRIAL_ERROR_SPAN: u64 = 4 << 10;

/// A parser that takes the whole input in memory is given its first bytes alone when its own
/// sniffer does not recognise them: if that fails near their start (a file that is not of the
/// format fails there), that is the error, found before reading an input that may be endless
/// (`/dev/zero`) or a compressed bomb. Otherwise the whole input is read and parsed.
fn refuse_by_head(
    head: &[u8],
    parser: &FormatHandle,
    options: &[(String, Option<String>)],
    name: &str,
    gzip: bool,
) -> Result<(), Failure> {
    let mut empty: &[u8] = &[];
    let req = ParseInput {
        reader: &mut empty,
        whole: Some(head),
        size_hint: Some(head.len() as u64),
        name,
        threads: 1,
        release: None,
    };
    // Warnings of this trial parse are not the input's: they are dropped.
    let mut log = |_: u32, _: &str| {};
    match parser.parse(req, options, &mut log) {
        Err(e) if e.byte_offset.is_some_and(|at| at < TRIAL_ERROR_SPAN) => {
            Err(Failure::from_parse(
                e,
                name,
                &format!("plugin '{}' reading '{}'", parser.plugin.name, parser.id),
                gzip,
            ))
        }
        _ => Ok(()),
    }
}

/// Refuses a profile whose values add up to more than 64 bits hold, naming the input (every
/// call-tree total is bounded by the grand total when values are not negative, so emitters then
/// cannot overflow either).
fn check_totals(view: &ProfileRef<'_>, name: &str) -> Result<(), Failure> {
    for (c, col) in view.sample_values.iter().enumerate() {
        let (mut pos, mut neg) = (0i128, 0i128);
        for &v in col.iter() {
            if v >= 0 {
                pos += v as i128;
            } else {
                neg += v as i128;
            }
        }
        if pos > i64::MAX as i128 || neg < i64::MIN as i128 {
            return Err(Failure::Input(format!(
                "{name}: the values of '{}' add up to more than a 64-bit integer holds",
                view.value_type_name(c)
            )));
        }
    }
    Ok(())
}

/// For a transform that matched nothing, the profile's function names its names may have
/// meant, as a hint (empty when there is none): the name with an annotation suffix that a
/// flame graph does not show (`do_syscall_64_[k]` for `do_syscall_64`), or the same name in
/// other letter case. At most three, in the profile's order.
fn names_meant(view: &ProfileRef<'_>, t: &Transform) -> String {
    let wanted: Vec<&str> = match t {
        Transform::MergeCallNode(p)
        | Transform::MergeSubtree(p)
        | Transform::Drop(p)
        | Transform::FocusSubtree(p) => p.iter().map(String::as_str).collect(),
        Transform::MergeFunction(n)
        | Transform::FocusFunction(n)
        | Transform::CollapseDirectRecursion(Some(n))
        | Transform::CollapseRecursion(Some(n)) => vec![n.as_str()],
        _ => Vec::new(),
    };
    let meant = |have: &str, want: &str| {
        have != want
            && (have.eq_ignore_ascii_case(want)
                || have
                    .strip_prefix(want)
                    .and_then(|rest| rest.strip_prefix("_["))
                    .and_then(|rest| rest.strip_suffix(']'))
                    .is_some_and(|a| !a.is_empty() && a.bytes().all(|b| b.is_ascii_lowercase())))
    };
    // Only names the profile does not have as they are.
    let funcs = || (0..view.n_funcs() as u32).map(|f| view.func_name_str(f));
    let wanted: Vec<&str> = wanted
        .into_iter()
        .filter(|w| !funcs().any(|have| have == *w))
        .collect();
    if wanted.is_empty() {
        return String::new();
    }
    let mut found: Vec<&str> = Vec::new();
    for f in 0..view.n_funcs() as u32 {
        let have = view.func_name_str(f);
        if found.len() < 3 && !found.contains(&have) && wanted.iter().any(|w| meant(have, w)) {
            found.push(have);
        }
    }
    match found.as_slice() {
        [] => String::new(),
        names => {
            let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
            format!(" (the profile has {})", quoted.join(", "))
        }
    }
}

/// Applies the `--transform` stack; `None` when there is none, or when none changed anything
/// (the plugin's profile is used as it is, without a copy).
fn apply_transforms(
    view: &ProfileRef<'_>,
    transforms: &[Transform],
    name: &str,
    quiet: bool,
) -> Result<Option<Profile>, Failure> {
    let mut current: Option<Profile> = None;
    for t in transforms {
        let input = current.as_ref().map_or_else(|| view.clone(), Profile::view);
        let (next, applied) = profconv_ir::transform::apply_or_keep(&input, t)
            .map_err(|e| Failure::ir(&format!("{name}: transform {t}"), &e))?;
        if applied.matched == 0 && !matches!(t, Transform::MaxDepth(_) | Transform::MinTotal(_)) {
            let hint = names_meant(&input, t);
            warn(
                quiet,
                &format!("{name}: transform {t} matched nothing{hint}"),
            );
        }
        let removes = matches!(
            t,
            Transform::Drop(_) | Transform::FocusSubtree(_) | Transform::FocusFunction(_)
        );
        if applied.samples_removed > 0 && !removes {
            // Merging a root leaves its own samples without a stack.
            warn(
                quiet,
                &format!(
                    "{name}: transform {t} removed {} sample(s) whose stack became empty",
                    applied.samples_removed
                ),
            );
        }
        // A transform that changed nothing leaves the profile as it was, not a copy.
        if let Some(next) = next {
            current = Some(next);
        }
    }
    Ok(current)
}

/// The emitter for `--to`, or for the output file's name.
fn choose_emitter<'r>(
    registry: &'r Registry,
    to: Option<&str>,
    out_path: &Path,
) -> Result<&'r FormatHandle, Failure> {
    if let Some(id) = to {
        return registry.emitter(id).map_err(Failure::Usage);
    }
    if out_path == Path::new("-") {
        return Err(Failure::Usage(
            "writing to stdout needs --to FMT (the format cannot come from a file name)".into(),
        ));
    }
    // Lossy: a name that is not UTF-8 is still shown, and its (ASCII) extension still matches.
    let name = out_path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let shown = io::shown(Path::new(name.as_ref()));
    // `out.folded.gz`: the format of `out.folded`, written through gzip (see `gzip_by_name`;
    // `by_file_name` matches an extension with one more `.gz`).
    match registry
        .by_file_name(&name, FormatHandle::can_emit)
        .as_slice()
    {
        [only] => Ok(*only),
        // `--to` cannot help: nothing can write.
        [] if !registry.formats.iter().any(FormatHandle::can_emit) => Err(Failure::Usage(
            registry.with_notes(
                "no plugin that writes profiles is loaded, so no output can be written; see \
                 `profconv formats`"
                    .into(),
            ),
        )),
        [] => Err(Failure::Usage(registry.with_notes(format!(
            "cannot tell the output format from '{shown}'; choose one with --to (written \
             formats: {})",
            registry.emitter_ids()
        )))),
        many => {
            let ids: Vec<&str> = many.iter().map(|f| f.id.as_str()).collect();
            Err(Failure::Usage(format!(
                "'{shown}' could be {}; choose one with --to",
                ids.join(" or ")
            )))
        }
    }
}

/// What a descriptor is open on (stdin's or stdout's, which may be redirected from or to a
/// file).
#[cfg(unix)]
fn by_descriptor(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<std::fs::Metadata> {
    fd.try_clone_to_owned()
        .and_then(|fd| std::fs::File::from(fd).metadata())
}

/// An input's file (`-` is stdin's, by its descriptor), followed through links.
#[cfg(unix)]
fn input_metadata(input: &Path) -> std::io::Result<std::fs::Metadata> {
    use std::os::fd::AsFd;
    match input == Path::new("-") {
        true => by_descriptor(std::io::stdin().as_fd()),
        false => std::fs::metadata(input),
    }
}

/// Whether two inputs are one pipe, FIFO or socket under two names (`-` and `/dev/stdin`, a
/// FIFO named twice): reading one takes the other's bytes. One regular file twice is two reads
/// of the same bytes, and a device (`/dev/null`, a terminal) may be read twice too.
fn one_stream(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        match (input_metadata(a), input_metadata(b)) {
            (Ok(a), Ok(b)) => {
                let kind = a.file_type();
                (kind.is_fifo() || kind.is_socket()) && (a.dev(), a.ino()) == (b.dev(), b.ino())
            }
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Refuses an output that is one of the inputs: a path naming the same file, or stdout (`-`)
/// redirected to it (`>> in.folded`).
fn check_not_an_input(out_path: &Path, inputs: &[&Path]) -> Result<(), Failure> {
    let refuse = |input: &Path| {
        let input_name = match input == Path::new("-") {
            true => "<stdin>".to_string(),
            false => io::shown(input),
        };
        Err(Failure::Usage(if out_path == Path::new("-") {
            format!("refusing to write the output to stdout, which is the input {input_name}")
        } else if out_path == input {
            format!("refusing to overwrite the input {input_name} with the output")
        } else {
            format!(
                "refusing to overwrite the input {input_name} with the output {} (the same file)",
                io::shown(out_path)
            )
        }))
    };
    #[cfg(unix)]
    {
        // The same file is the same device and inode, whatever the names (links, hard links,
        // `..`); `-` is stdin or stdout, which may be redirected from or to the very file
        // (`< out.folded`, `>> in.folded`), and is compared by its descriptor, on every unix,
        // with or without `/dev/stdin`.
        use std::os::fd::AsFd;
        use std::os::unix::fs::MetadataExt;
        let out = match out_path == Path::new("-") {
            true => by_descriptor(std::io::stdout().as_fd()),
            false => std::fs::metadata(out_path),
        };
        // Not there yet, or a device or FIFO (`/dev/null` both in and out): no file to lose.
        let Ok(out) = out
            .map_err(drop)
            .and_then(|m| m.is_file().then_some(m).ok_or(()))
        else {
            return Ok(());
        };
        for input in inputs {
            if input_metadata(input).is_ok_and(|m| (m.dev(), m.ino()) == (out.dev(), out.ino())) {
                return refuse(input);
            }
        }
    }
    #[cfg(not(unix))]
    {
        let Ok(out) = out_path.canonicalize() else {
            return Ok(()); // does not exist yet (or is stdout)
        };
        if !out.is_file() {
            return Ok(());
        }
        for input in inputs {
            if **input != *Path::new("-") && input.canonicalize().is_ok_and(|i| i == out) {
                return refuse(input);
            }
        }
    }
    Ok(())
}

/// Where the output goes, opened before any input is read: a directory that does not exist or
/// cannot take the temp file, or a file that may not be replaced, is reported at once, not
/// after a long parse.
struct Output {
    sink: Sink,
    name: String,
    /// Compressed with gzip on the way (a `.gz` name whose format does not compress itself).
    gzip: bool,
}

/// Whether the output `out_path` is written through gzip: its name ends in `.gz` and the
/// emitter does not compress its files itself, as its own `.gz` extension says (`out.folded.gz`,
/// `out.svg.gz`, `out.gz` with `--to`; never the Firefox emitter's `.json.gz`, whatever the
/// name), as an input's `.gz` is decompressed. Never stdout: a pipe goes where its reader
/// wants.
fn gzip_by_name(emitter: &FormatHandle, out_path: &Path) -> bool {
    let name = out_path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    out_path != Path::new("-") && name.ends_with(".gz") && !compresses_itself(emitter)
}

/// Whether a format writes compressed bytes itself (Firefox's `.json.gz`): its extensions say so.
fn compresses_itself(emitter: &FormatHandle) -> bool {
    emitter
        .extensions
        .iter()
        .any(|e| e.to_ascii_lowercase().ends_with("gz"))
}

/// How messages name the output (`-` is stdout).
fn output_name(out_path: &Path) -> String {
    match out_path == Path::new("-") {
        true => "<stdout>".to_string(),
        false => io::shown(out_path),
    }
}

fn open_output(out_path: &Path, emitter: &FormatHandle) -> Result<Output, Failure> {
    let name = output_name(out_path);
    let gzip = gzip_by_name(emitter, out_path);
    // The same output through stdout, which names no format and compresses nothing.
    let by_stdout = format!(
        "--to {} -o -{} > FILE",
        emitter.id,
        if gzip { " | gzip" } else { "" }
    );
    let sink =
        Sink::create(out_path, &by_stdout).map_err(|e| Failure::Io(format!("{name}: {e}")))?;
    // As gzip does: compressed bytes on a terminal (`-`, `/dev/stdout`, `/dev/tty`) are
    // unreadable, and may hold escape sequences that drive it. Nothing was written yet.
    if (gzip || compresses_itself(emitter)) && sink.is_terminal() {
        return Err(Failure::Usage(format!(
            "{name}: format '{}' writes compressed bytes, which are not written to a terminal; \
             write them to a file (-o FILE) or a pipe",
            emitter.id
        )));
    }
    Ok(Output { sink, name, gzip })
}

/// The format's own check of its option values (ABI 1.5), before the input is read: `-O
/// width=0` on a gigabyte input is refused at once, not after the parse. `place` names the
/// input (`parse`) or the output the options are for, as the call's own error would.
fn check_option_values(
    format: &FormatHandle,
    parse: bool,
    options: &OptionList,
    place: &str,
    run: Run,
) -> Result<(), Failure> {
    let mut log = warnings_of(place, run);
    format.check_options(options, parse, &mut log).map_err(|e| {
        let what = format!(
            "plugin '{}' checking the options of '{}'",
            format.plugin.name, format.id
        );
        Failure::from_call(e, place, &what)
    })
}

/// Emits `view` into `out` (a temp file renamed when complete, or stdout).
fn write_output(
    emitter: &FormatHandle,
    view: &ProfileRef<'_>,
    out: Output,
    options: &OptionList,
    run: Run,
) -> Result<(), Failure> {
    let Output {
        mut sink,
        name: out_name,
        gzip,
    } = out;
    let mut log = warnings_of(&out_name, run);
    let what = format!("plugin '{}' writing '{}'", emitter.plugin.name, emitter.id);
    if gzip {
        // The gzip header holds no time nor name: the same input gives the same bytes.
        let mut gz = flate2::write::GzEncoder::new(sink.writer(), flate2::Compression::default());
        emitter
            .emit_with_threads(view, &mut gz, options, run.threads, &mut log)
            .map_err(|e| Failure::from_call(e, &out_name, &what))?;
        // The last bytes go out here: a reader that left before them (a FIFO's) is a closed
        // pipe, as in the emitter's own writes and in the final flush, not an I/O error.
        gz.finish().map_err(|e| match is_broken_pipe(&e) {
            true => Failure::BrokenPipe,
            false => Failure::Io(format!("{out_name}: {e}")),
        })?;
    } else {
        emitter
            .emit_with_threads(view, sink.writer(), options, run.threads, &mut log)
            .map_err(|e| Failure::from_call(e, &out_name, &what))?;
    }
    sink.commit().map_err(|e| {
        if is_broken_pipe(&e) {
            Failure::BrokenPipe
        } else {
            Failure::Io(format!("{out_name}: {e}"))
        }
    })
}

fn convert(registry: &Registry, args: &ConvertArgs, run: Run) -> Result<(), Failure> {
    let out_path = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let emitter = choose_emitter(registry, args.to.as_deref(), &out_path)?;
    check_not_an_input(&out_path, &[&args.input.input])?;
    // Usage errors first: the option values need no file (a bad one is not hidden behind a
    // missing output directory, nor waits for a FIFO's reader).
    check_emit_options_early(&args.input.options, emitter, &out_path, run)?;
    let checked = check_input_options_early(
        registry,
        args.input.from.as_deref(),
        &[&args.input.input],
        &args.input.options,
        Some(emitter),
        run,
    )?;
    let out = open_output(&out_path, emitter)?;
    let (read, emit_options) = read_input(registry, &args.input, Some(emitter), checked, run)?;
    write_output(emitter, &read.view(), out, &emit_options, run)
}

/// An input read and reshaped by its transforms.
struct ReadInput {
    /// The input's name, as messages show it.
    name: String,
    profile: profconv_plugin::host::ForeignProfile,
    /// The transforms' result; `None` when there were none or they changed nothing.
    transformed: Option<Profile>,
}

impl ReadInput {
    fn view(&self) -> ProfileRef<'_> {
        self.transformed
            .as_ref()
            .map_or_else(|| self.profile.view(), Profile::view)
    }
}

/// Opens `args`' input, splits `-O` between its reader and `emitter` (whose options are
/// returned), checks the reader's option values unless `checked` says that was done before
/// anything was opened, parses, and applies the transforms: what `convert` and `tree` share.
fn read_input(
    registry: &Registry,
    args: &InputArgs,
    emitter: Option<&FormatHandle>,
    checked: bool,
    run: Run,
) -> Result<(ReadInput, OptionList), Failure> {
    let (input, parser) = open_input(registry, args, run.quiet)?;
    let mut formats = vec![(parser, true)];
    formats.extend(emitter.map(|e| (e, false)));
    let mut opts = split_options_read(
        registry,
        &args.options,
        &formats,
        input
            .detected_by_content
            .then_some((input.name.as_str(), parser)),
    )?;
    let emit_options = if emitter.is_some() {
        opts.pop().unwrap_or_default()
    } else {
        Vec::new()
    };
    if !checked {
        check_option_values(parser, true, &opts[0], &input.name, run)?;
    }
    let (name, profile) = parse(input, parser, &opts[0], run)?;
    let transformed = apply_transforms(&profile.view(), &args.transforms, &name, run.quiet)?;
    let read = ReadInput {
        name,
        profile,
        transformed,
    };
    Ok((read, emit_options))
}

/// The value column `--value` names, or the first weight.
fn value_column(view: &ProfileRef<'_>, value: Option<&str>, name: &str) -> Result<usize, Failure> {
    let known = || {
        (0..view.value_types.len())
            .map(|i| view.value_type_name(i))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match value {
        Some(v) => view.value_type_index(v).ok_or_else(|| {
            Failure::Usage(format!(
                "{name}: no value type '{v}' (this profile has: {})",
                known()
            ))
        }),
        None => view
            .default_weight()
            .ok_or_else(|| Failure::Usage(format!("{name}: no weight to compare ({})", known()))),
    }
}

/// A differential profile compares costs: a count (`calls`: events of each node itself, never
/// summed into its callers) is an error, as [`profconv_ir::diff::combine`] says too, here named
/// with its file and the costs there are. Values in different units (ticks against samples) are
/// compared as plain numbers: a warning.
fn check_comparable(
    bv: &ProfileRef<'_>,
    bc: usize,
    before_name: &str,
    av: &ProfileRef<'_>,
    ac: usize,
    after_name: &str,
    quiet: bool,
) -> Result<(), Failure> {
    for (v, c, name) in [(bv, bc, before_name), (av, ac, after_name)] {
        if v.value_types[c].kind == ValueKind::Count {
            let costs: Vec<&str> = (0..v.value_types.len())
                .filter(|&i| v.value_types[i].kind == ValueKind::Weight)
                .map(|i| v.value_type_name(i))
                .collect();
            return Err(Failure::Usage(format!(
                "diff: '{}' of {name} counts events of each call node, not a cost: a \
                 differential profile compares costs (its totals add up everything below a \
                 node); choose one with --value ({name} has: {})",
                v.value_type_name(c),
                if costs.is_empty() {
                    "none".to_string()
                } else {
                    costs.join(", ")
                }
            )));
        }
    }
    let (ub, ua) = (bv.value_type_unit(bc), av.value_type_unit(ac));
    if ub != ua {
        warn(
            quiet,
            &format!(
                "diff: '{}' of {before_name} is in {} and '{}' of {after_name} in {}: the two \
                 are compared as plain numbers",
                bv.value_type_name(bc),
                unit_name(ub),
                av.value_type_name(ac),
                unit_name(ua),
            ),
        );
    }
    Ok(())
}

/// A unit as a message names it.
fn unit_name(unit: &str) -> &str {
    if unit.is_empty() { "no unit" } else { unit }
}

fn diff(registry: &Registry, args: &DiffArgs, run: Run) -> Result<(), Failure> {
    let out_path = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let to = args
        .to
        .as_deref()
        .or((out_path == Path::new("-")).then_some("flamegraph"));
    if args.before == Path::new("-") && args.after == Path::new("-") {
        return Err(Failure::Usage(
            "diff: `-` (stdin) can be only one of the two inputs: the first would read all of \
             stdin and leave the second empty; save one profile to a file"
                .into(),
        ));
    }
    if one_stream(&args.before, &args.after) {
        return Err(Failure::Usage(format!(
            "diff: {} and {} are one pipe: the first would read all of it and leave the second \
             empty; save one profile to a file",
            input_name(&args.before),
            input_name(&args.after)
        )));
    }
    let emitter = choose_emitter(registry, to, &out_path)?;
    check_not_an_input(&out_path, &[&args.before, &args.after])?;
    check_emit_options_early(&args.options, emitter, &out_path, run)?;
    let checked = check_input_options_early(
        registry,
        args.from.as_deref(),
        &[&args.before, &args.after],
        &args.options,
        Some(emitter),
        run,
    )?;
    let out = open_output(&out_path, emitter)?;
    let open = |path: &Path| {
        open_input(
            registry,
            &InputArgs {
                input: path.to_path_buf(),
                from: args.from.clone(),
                options: Vec::new(),
                transforms: Vec::new(),
            },
            run.quiet,
        )
    };
    let (before_in, before_parser) = open(&args.before)?;
    let (after_in, after_parser) = open(&args.after)?;
    let opts = split_options(
        registry,
        &args.options,
        &[
            (before_parser, true),
            (after_parser, true),
            (emitter, false),
        ],
    )?;
    if !checked {
        check_option_values(before_parser, true, &opts[0], &before_in.name, run)?;
        check_option_values(after_parser, true, &opts[1], &after_in.name, run)?;
    }
    let (before_name, before) = parse(before_in, before_parser, &opts[0], run)?;
    let (after_name, after) = parse(after_in, after_parser, &opts[1], run)?;
    let (bv, av) = (before.view(), after.view());
    let bc = value_column(&bv, args.value.as_deref(), &before_name)?;
    let ac = value_column(&av, args.value.as_deref(), &after_name)?;
    check_comparable(&bv, bc, &before_name, &av, ac, &after_name, run.quiet)?;
    let both = format!("{before_name} and {after_name}");
    let combined =
        profconv_ir::diff::combine(&bv, bc, &av, ac).map_err(|e| Failure::ir(&both, &e))?;
    // The two profiles are in the combined one: freed before the emitter builds its own
    // tables (a third of a large diff's peak memory).
    drop((bv, av));
    drop((before, after));
    // The transforms reshape the combined profile, not each side: `min-total` then measures
    // both columns together (a node small in `before` but grown in `after` stays on both
    // sides), where applied to each side alone it merged the node in `before` only and the
    // diff showed it as new, its parent as shrunk. The others act on call paths alone, so
    // combined or apart they give the same columns.
    let transformed = apply_transforms(&combined.view(), &args.transforms, &both, run.quiet)?;
    let view = transformed
        .as_ref()
        .map_or_else(|| combined.view(), Profile::view);
    write_output(emitter, &view, out, &opts[2], run)
}

fn tree(registry: &Registry, args: &TreeArgs, run: Run) -> Result<(), Failure> {
    // The tree goes to stdout, which must not be the input (`1<>in.folded`), and must be open
    // for writing.
    check_not_an_input(Path::new("-"), &[&args.input.input])?;
    io::stdout_writable().map_err(|e| Failure::Io(format!("<stdout>: {e}")))?;
    // `-O value=…` is the emitters' choice of column; the tree's is `--value` (unless a reader
    // takes a `value` option of its own).
    let read_value = |f: &FormatHandle| {
        f.can_parse()
            && f.options
                .iter()
                .any(|o| o.key == "value" && o.applies(true))
    };
    if args
        .input
        .options
        .iter()
        .any(|o| option_item(o).0 == "value")
        && !registry.formats.iter().any(read_value)
    {
        return Err(Failure::Usage(
            "`profconv tree` chooses the value column it shows with --value NAME, not -O value"
                .into(),
        ));
    }
    let checked = check_input_options_early(
        registry,
        args.input.from.as_deref(),
        &[&args.input.input],
        &args.input.options,
        None,
        run,
    )?;
    let (read, _) = read_input(registry, &args.input, None, checked, run)?;
    let (name, view) = (&read.name, read.view());
    // The renderer's default (no --value) is the first weight, as value_column's.
    let value = match &args.value {
        Some(v) => Some(value_column(&view, Some(v), name)?),
        None => None,
    };
    let call_tree = CallTree::build(&view).map_err(|e| Failure::ir(name, &e))?;
    let options = TreeTextOptions {
        value,
        all_values: args.all_values,
        order: match args.order {
            OrderArg::Total => TreeOrder::Total,
            OrderArg::FirstSeen => TreeOrder::FirstSeen,
            OrderArg::Name => TreeOrder::Name,
        },
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, Blocking(std::io::stdout().lock()));
    let result = write_tree(&view, &call_tree, &options, |line| {
        out.write_all(line.as_bytes()).map_err(TreeError::Io)
    })
    .and_then(|()| out.flush().map_err(TreeError::Io));
    match result {
        Ok(()) => Ok(()),
        Err(TreeError::Io(e)) if is_broken_pipe(&e) => Err(Failure::BrokenPipe),
        Err(TreeError::Io(e)) => Err(Failure::Io(format!("<stdout>: {e}"))),
        Err(TreeError::Ir(e)) => Err(Failure::ir(name, &e)),
    }
}

enum TreeError {
    Io(std::io::Error),
    Ir(profconv_ir::IrError),
}

impl From<profconv_ir::IrError> for TreeError {
    fn from(e: profconv_ir::IrError) -> Self {
        TreeError::Ir(e)
    }
}

fn caps_words(f: &FormatHandle) -> String {
    let mut w = Vec::new();
    if f.can_parse() {
        w.push("read");
    }
    if f.can_emit() {
        w.push("write");
    }
    if f.sniffs() {
        w.push("detect");
    }
    w.join(", ")
}

fn list_formats(registry: &Registry, defaults_searched: bool) -> Result<(), Failure> {
    let mut out = String::new();
    if registry.loaded.is_empty() {
        match defaults_searched {
            true => {
                // The directories themselves, and how plugins get there: a `cargo install`
                // gives profconv without its plugin libraries, and this was all it said.
                use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
                out.push_str("no plugins loaded (searched: --plugin, PROFCONV_PLUGIN_PATH, and these directories)\n");
                for (source, dir) in discovery::default_dirs() {
                    out.push_str(&format!("  {}: {}\n", source.label(), io::shown(&dir)));
                }
                out.push_str(&format!(
                    "profconv's formats are plugin libraries ({DLL_PREFIX}profconv_plugin_*{DLL_SUFFIX}), \
                     which `cargo install` does not install: from a checkout, `scripts/install.sh \
                     PREFIX` installs profconv with them, or copy them from the build's \
                     target/release/ into one of these directories\n"
                ));
            }
            false => out.push_str("no plugins loaded (searched: --plugin, PROFCONV_PLUGIN_PATH; --no-default-plugins skips the other places)\n"),
        }
    }
    for l in &registry.loaded {
        let i = &l.plugin.info;
        out.push_str(&format!(
            "plugin {} {} (plugin ABI {}.{}, SDK {})\n  from: {} [{}]\n",
            i.name,
            i.version,
            i.abi_major,
            i.abi_minor,
            i.sdk_version,
            i.origin,
            l.source.label()
        ));
        if !i.panic_unwind {
            out.push_str("  warning: built with panic=abort: a bug in it ends profconv\n");
        }
        for f in &l.plugin.formats {
            // File names as globs: `*.svg` for an extension, `callgrind.out*` for a prefix.
            let names: Vec<String> = f
                .extensions
                .iter()
                .map(|e| match e.ends_with('*') {
                    true => format!(" {e}"),
                    false => format!(" *.{e}"),
                })
                .collect();
            out.push_str(&format!(
                "  format {}: {} [{}]{}\n",
                f.id,
                f.description,
                caps_words(f),
                names.concat()
            ));
            for o in &f.options {
                let default = if o.default.is_empty() {
                    String::new()
                } else {
                    format!(" (default {})", o.default)
                };
                // Where it applies (ABI 1.4), as the help of older plugins wrote it.
                let phase = match (o.applies(true), o.applies(false)) {
                    (true, false) => "parse: ",
                    (false, true) => "emit: ",
                    _ => "",
                };
                // Not twice, where the help says it already.
                let phase = if o.help.starts_with(phase) { "" } else { phase };
                out.push_str(&format!(
                    "    -O {}{}: {phase}{}{}\n",
                    o.key,
                    if o.kind == option_kind::FLAG {
                        String::new()
                    } else {
                        format!("=<{}>", o.kind_name())
                    },
                    o.help,
                    default
                ));
            }
        }
    }
    for s in &registry.shadowed {
        out.push_str(&format!("shadowed: {s}\n"));
    }
    for n in &registry.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    for r in &registry.rejected {
        out.push_str(&format!(
            "rejected [{}]: {}\n",
            r.candidate.source.label(),
            r.reason
        ));
    }
    // Names, descriptions and help come from the plugins: control characters escaped, as in
    // every message.
    let out = printable(&out);
    let mut stdout = Blocking(std::io::stdout().lock());
    match io::stdout_writable()
        .and_then(|()| stdout.write_all(out.as_bytes()))
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if is_broken_pipe(&e) => Err(Failure::BrokenPipe),
        Err(e) => Err(Failure::Io(format!("<stdout>: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// A run that fails after an interrupt came (its input cut short by the Ctrl-C that ended
    /// the program piping it) ends by the signal, with no error message, even when the thread
    /// that acts on interrupts has not run by then (here it never does): the error (exit 3)
    /// went out first on a busy machine, and a shell loop of conversions went on. Runs itself
    /// as a child process (the ending is the process's).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_run_that_fails_after_an_interrupt_ends_by_the_signal_whatever_thread_acts_on_it() {
        use std::os::unix::process::ExitStatusExt;
        const CHILD: &str = "PROFCONV_TEST_FAILED_AFTER_INTERRUPT_CHILD";
        const NAME: &str = "tests::a_run_that_fails_after_an_interrupt_ends_by_the_signal_whatever_thread_acts_on_it";
        if std::env::var_os(CHILD).is_some() {
            io::tests::interrupt_that_no_thread_acts_on();
            let _ = finish(Err(Failure::Input(
                "<stdin>:1:1: the input is empty".into(),
            )));
            println!("went on");
            std::process::exit(0);
        }
        let out = io::tests::run_test_as_child(NAME, CHILD, "1".as_ref());
        let (said, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.signal(), Some(2), "{:?}: {said}", out.status);
        assert!(!err.contains("profconv: error"), "{err}");
    }

    /// A gzip output whose reader left before gzip's last bytes (written when it finishes) ends
    /// quietly, as a closed pipe anywhere else does (`| head`, a FIFO's reader gone): it was an
    /// I/O error, exit 4 (`Broken pipe`), only when the pipe closed at that moment.
    #[cfg(unix)]
    #[test]
    fn a_gzip_output_whose_reader_left_before_its_last_bytes_is_a_broken_pipe() {
        profconv_plugin::static_plugin!(
            folded_entry,
            name: "folded",
            version: "test",
            formats: [profconv_folded::Folded],
        );
        let plugin = profconv_plugin::host::load_static(folded_entry, "folded").unwrap();
        let emitter = &plugin.formats[0];
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let file = std::fs::File::from(std::os::fd::OwnedFd::from(writer));
        // Unbuffered: gzip's bytes reach the closed pipe when it finishes (the emitter writes
        // none before, for an empty profile), not in the final flush.
        let out = Output {
            sink: io::Sink::Direct(std::io::BufWriter::with_capacity(1, Blocking(file))),
            name: "p.folded.gz".into(),
            gzip: true,
        };
        let profile = profconv_ir::ProfileBuilder::new().finish();
        let run = Run {
            quiet: true,
            threads: 1,
            max_whole_stream: MAX_WHOLE_STREAM,
        };
        match write_output(emitter, &profile.view(), out, &Vec::new(), run) {
            Err(Failure::BrokenPipe) => {}
            Ok(()) => panic!("written to a closed pipe"),
            Err(Failure::Io(m) | Failure::Usage(m) | Failure::Input(m) | Failure::Plugin(m)) => {
                panic!("not a broken pipe: {m}")
            }
        }
    }

    /// `--version` names the plugin ABI the SDK speaks.
    #[test]
    fn the_version_names_the_plugin_abi() {
        use profconv_plugin::abi::{ABI_MAJOR, ABI_MINOR};
        assert!(
            VERSION.ends_with(&format!(" (plugin ABI {ABI_MAJOR}.{ABI_MINOR})")),
            "{VERSION}"
        );
        assert!(Cli::command().render_version().contains(VERSION));
    }

    /// `-T`'s help lists the transforms in its own words (clap takes doc comments, not
    /// constants): it must name every spec the IR's parser knows, as the parser's error lists
    /// them.
    #[test]
    fn the_transform_help_lists_what_the_parser_knows() {
        let cli = Cli::command();
        let convert = cli.find_subcommand("convert").expect("convert");
        let t = convert
            .get_arguments()
            .find(|a| a.get_id() == "transforms")
            .expect("-T");
        let help = t.get_help().expect("a help text").to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let specs = profconv_ir::transform::SPEC_HELP
            .split(';')
            .next()
            .expect("a list");
        for spec in specs.split(", ") {
            assert!(help.contains(spec), "-T's help lacks {spec}: {help}");
        }
    }
}
