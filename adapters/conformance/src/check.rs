//! The conformance checks.

use crate::samples::{BUILTIN_SAMPLES, EMIT_SAMPLE};
use profconv_folded::{EmitOptions, emit_folded, parse_folded, written_names};
use profconv_ir::{
    CallTree, NONE, Profile, ProfileBuilder, ProfileRef, TreeOrder, TreeTextOptions, ValueKind,
    render_tree,
};
use profconv_plugin::Status;
use profconv_plugin::host::{CallError, FormatHandle, ParseInput, load_library};
use profconv_plugin::{Context, Input};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

/// A sniff score at or above this claims the input; other formats' samples must stay below.
const SNIFF_CLAIM: u32 = 50;
/// Longest a single parse or emit call may take before the kit calls it hung (shorter in this
/// crate's unit tests, which wait for it).
const CALL_TIMEOUT: Duration = Duration::from_secs(if cfg!(test) { 2 } else { 20 });
/// Failures listed per check line before "and N more".
const MAX_LISTED: usize = 4;

/// The most folded text the round trip writes for one sample (in memory): a line holds its
/// whole stack, so a sample of deep stacks writes the square of its depth (32 000 nested calls
/// of a 554 KB trace: 3.2 GB), and such a sample is skipped instead.
const ROUND_TRIP_MAX_FOLDED: u64 = 64 << 20;

/// The result of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The plugin behaves.
    Pass,
    /// The plugin misbehaves: `profconv plugin-check` exits non-zero.
    Fail,
    /// The check does not apply (for example no sample of the format to parse).
    Skip,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "SKIP",
        })
    }
}

/// One line of a [`Report`].
#[derive(Clone, Debug)]
pub struct CheckResult {
    /// What was checked (`folded: emit twice`).
    pub name: String,
    /// Pass, fail or skip.
    pub outcome: Outcome,
    /// What was found: on failure, what is wrong and with which input.
    pub detail: String,
}

/// Every check run on one plugin library. `Display` prints one line per check and a summary.
#[derive(Clone, Debug)]
pub struct Report {
    /// The library checked.
    pub path: PathBuf,
    /// The checks, in the order they ran.
    pub checks: Vec<CheckResult>,
}

impl Report {
    /// True when at least one check ran and none failed.
    pub fn passed(&self) -> bool {
        !self.checks.is_empty() && self.failures().next().is_none()
    }
    /// The failed checks.
    pub fn failures(&self) -> impl Iterator<Item = &CheckResult> {
        self.checks.iter().filter(|c| c.outcome == Outcome::Fail)
    }
    /// The check named `name`, if it ran.
    pub fn check(&self, name: &str) -> Option<&CheckResult> {
        self.checks.iter().find(|c| c.name == name)
    }
    fn push(&mut self, name: impl Into<String>, outcome: Outcome, detail: impl Into<String>) {
        self.checks.push(CheckResult {
            name: name.into(),
            outcome,
            detail: detail.into(),
        });
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plugin-check {}", shown(&self.path))?;
        let width = self.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for c in &self.checks {
            writeln!(f, "{}  {:width$}  {}", c.outcome, c.name, c.detail)?;
        }
        let count = |o| self.checks.iter().filter(|c| c.outcome == o).count();
        writeln!(
            f,
            "{}: {} passed, {} failed, {} skipped",
            if self.passed() { "PASS" } else { "FAIL" },
            count(Outcome::Pass),
            count(Outcome::Fail),
            count(Outcome::Skip)
        )
    }
}

/// An input for the checks.
#[derive(Clone)]
struct Sample {
    name: String,
    /// The format it is known to be in (built-in samples), or `None` (user samples).
    format: Option<String>,
    bytes: Arc<Vec<u8>>,
}

/// What one parse through the host gave.
struct Parsed {
    /// The profile, copied out of the plugin's export.
    profile: Profile,
    /// Its tree text (stable order).
    tree: String,
}

/// Loads the plugin library at `path` through the real host and runs every check on each of its
/// formats, with the built-in samples plus `samples` (files in the plugin's own formats).
pub fn check_plugin(path: &Path, samples: &[PathBuf]) -> Report {
    let mut report = Report {
        path: path.to_path_buf(),
        checks: Vec::new(),
    };
    let mut user = Vec::new();
    let mut unreadable = Vec::new();
    for s in samples {
        match read_sample(s) {
            Ok(bytes) => user.push((shown(s), bytes)),
            Err(why) => unreadable.push((format!("sample {}", shown(s)), why)),
        }
    }
    let mut rest = check_plugin_with(path, &user);
    // The handshake first, as for any plugin; then the samples that could not be read.
    let at = rest.checks.len().min(1);
    report.checks.extend(rest.checks.drain(..at));
    for (name, why) in unreadable {
        report.push(name, Outcome::Fail, why);
    }
    report.checks.append(&mut rest.checks);
    report
}

/// What is wrong with a format's option declarations: keys that cannot be typed as
/// `-O KEY[=VALUE]` or are declared twice, and defaults the option's kind cannot hold (the
/// default is only shown, but a user copies it).
fn option_problems(id: &str, options: &[profconv_plugin::host::OptionInfo]) -> Vec<String> {
    use profconv_plugin::abi::option_kind;
    let mut problems = Vec::new();
    for (i, o) in options.iter().enumerate() {
        let key = &o.key;
        if key.is_empty() || key.contains(|c: char| c.is_whitespace() || c == '=') {
            problems.push(format!(
                "{id}: option key '{key}' cannot be typed as -O KEY=VALUE (empty, or with whitespace or `=`)"
            ));
        }
        if options[..i].iter().any(|p| p.key == *key) {
            problems.push(format!("{id}: option '{key}' is declared twice"));
        }
        let default = o.default.as_str();
        // The host's own check of a value of that kind.
        let bad_default = !default.is_empty()
            && matches!(o.kind, option_kind::INTEGER | option_kind::NUMBER)
            && o.check_value(Some(default)).is_err();
        if bad_default {
            problems.push(format!(
                "{id}: option '{key}' is {} but its default `{default}` is not",
                match o.kind {
                    option_kind::INTEGER => "an integer",
                    _ => "a finite number",
                }
            ));
        }
    }
    problems
}

/// Option defaults the format's own check (ABI 1.5) refuses: no options at all, and each
/// option given its declared default where it applies, must be taken, or a user who copies
/// the default from `profconv formats` gets an error.
fn default_problems(f: &FormatHandle) -> Vec<String> {
    let mut problems = Vec::new();
    let phases = [(true, f.can_parse()), (false, f.can_emit())];
    for (parse, can) in phases {
        if !can {
            continue;
        }
        let phase = if parse { "reading" } else { "writing" };
        let mut check = |options: &[(String, Option<String>)], what: &str| {
            if let Err(e) = f.check_options(options, parse, &mut |_, _| {}) {
                problems.push(format!(
                    "{}: {what} is refused when {phase}: {}",
                    f.id, e.message
                ));
            }
        };
        check(&[], "no option");
        for o in f.options.iter().filter(|o| o.applies(parse)) {
            if o.default.is_empty() || o.kind == profconv_plugin::abi::option_kind::FLAG {
                continue;
            }
            let given = [(o.key.clone(), Some(o.default.clone()))];
            check(&given, &format!("the default {}={}", o.key, o.default));
        }
    }
    problems
}

/// The most bytes of a sample file: every check reads it several times over (round trips, two
/// threads, cuts), so a sample is a small file, and a device such as `/dev/zero` must not be read
/// into memory until it runs out.
pub const MAX_SAMPLE: u64 = 16 << 20;

/// A sample file's bytes, or why they cannot be used.
fn read_sample(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_SAMPLE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_SAMPLE {
        return Err(format!(
            "it is larger than {} MiB; give a small sample (every check reads it several times)",
            MAX_SAMPLE >> 20
        ));
    }
    // profconv takes a layer of gzip off its input before a plugin reads it, so a reader that
    // meets gzip's magic number says the file was compressed twice: a sample is given as it
    // is, and that would be a wrong word about it.
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(
            "it is gzip-compressed, and plugin-check gives a sample to the plugin as it \
                    is (profconv decompresses gzip input before a plugin reads it): give it \
                    decompressed (`gzip -dk FILE`)"
                .into(),
        );
    }
    Ok(bytes)
}

/// [`check_plugin`] with samples already in memory: `(name, bytes)` pairs.
pub fn check_plugin_with(path: &Path, samples: &[(String, Vec<u8>)]) -> Report {
    let mut report = Report {
        path: path.to_path_buf(),
        checks: Vec::new(),
    };
    let plugin = match load_library(path) {
        Ok(p) => p,
        Err(e) => {
            report.push("handshake", Outcome::Fail, e.to_string());
            return report;
        }
    };
    let info = &plugin.info;
    let ids: Vec<&str> = plugin.formats.iter().map(|f| f.id.as_str()).collect();
    let mut problems = Vec::new();
    if ids.is_empty() {
        problems.push("the plugin declares no format".to_string());
    }
    if !info.panic_unwind {
        problems.push(
            "panic_unwind is 0 (built with panic = \"abort\"): a panic in it would end \
             profconv; build with panic = \"unwind\" (a plugin in C, which has no panics, sets \
             it to 1)"
                .to_string(),
        );
    }
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            problems.push(format!("format id '{id}' is declared twice"));
        }
        if id.is_empty()
            || id.contains(|c: char| c.is_whitespace() || c.is_control() || c == ',' || c == '=')
        {
            problems.push(format!(
                "format id '{}' cannot be typed after --from/--to (empty, or with whitespace, a \
                 control character, `,` or `=`)",
                id.escape_debug()
            ));
        }
    }
    for f in &plugin.formats {
        problems.extend(option_problems(&f.id, &f.options));
        problems.extend(default_problems(f));
        for what in f.declared_without_function() {
            problems.push(format!(
                "format '{}' declares {what} (the host ignores the capability)",
                f.id
            ));
        }
    }
    let summary = format!(
        "plugin '{}' {} (ABI {}.{}, SDK {}), formats: {}",
        info.name,
        info.version,
        info.abi_major,
        info.abi_minor,
        info.sdk_version,
        ids.iter()
            .map(|id| id.escape_debug().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if problems.is_empty() {
        report.push("handshake", Outcome::Pass, summary);
    } else {
        report.push(
            "handshake",
            Outcome::Fail,
            format!("{summary}: {}", problems.join("; ")),
        );
    }
    // Its first panic would end this process, and the report with it: nothing is called.
    if !info.panic_unwind {
        report.push(
            "the other checks",
            Outcome::Skip,
            "not called: a plugin built with panic = \"abort\" would end the check at its \
             first panic, with no report"
                .to_string(),
        );
        return report;
    }

    let builtin: Vec<Sample> = BUILTIN_SAMPLES
        .iter()
        .map(|s| Sample {
            name: s.name.to_string(),
            format: Some(s.format.to_string()),
            bytes: Arc::new(s.bytes.to_vec()),
        })
        .collect();
    let user: Vec<Sample> = samples
        .iter()
        .map(|(name, bytes)| Sample {
            name: name.clone(),
            format: None,
            bytes: Arc::new(bytes.clone()),
        })
        .collect();

    // Each user sample belongs to the formats of this plugin that read it.
    let mut own: Vec<Vec<(Sample, Parsed)>> = plugin.formats.iter().map(|_| Vec::new()).collect();
    for s in &user {
        let mut errors = Vec::new();
        for (k, f) in plugin.formats.iter().enumerate() {
            if !f.can_parse() {
                continue;
            }
            match parse_timed(f, s) {
                Some(Ok(p)) => own[k].push((s.clone(), p)),
                Some(Err(e)) => errors.push(format!("{}: {}", f.id, describe(&e))),
                None => errors.push(format!("{}: no answer within {CALL_TIMEOUT:?}", f.id)),
            }
        }
        if own.iter().any(|o| o.iter().any(|(x, _)| x.name == s.name)) {
            report.push(
                format!("sample {}", s.name),
                Outcome::Pass,
                "read by this plugin",
            );
        } else if !plugin.formats.iter().any(FormatHandle::can_parse) {
            // Not read by anything: saying it was would be false.
            report.push(
                format!("sample {}", s.name),
                Outcome::Skip,
                "this plugin reads no format (samples are read by a parser; an emitter is \
                 checked on the built-in samples)",
            );
        } else {
            report.push(
                format!("sample {}", s.name),
                Outcome::Fail,
                format!("no format of this plugin reads it: {}", errors.join("; ")),
            );
        }
    }

    for (k, f) in plugin.formats.iter().enumerate() {
        let id = f.id.as_str();
        let mut mine = std::mem::take(&mut own[k]);
        let mut foreign = Vec::new();
        for s in &builtin {
            if s.format.as_deref() != Some(id) {
                foreign.push(s.clone());
            } else if f.can_parse() {
                match parse_timed(f, s) {
                    Some(Ok(p)) => mine.push((s.clone(), p)),
                    Some(Err(e)) => report.push(
                        format!("{id}: read built-in sample"),
                        Outcome::Fail,
                        format!("{}: {}", s.name, describe(&e)),
                    ),
                    None => report.push(
                        format!("{id}: read built-in sample"),
                        Outcome::Fail,
                        format!("{}: no answer within {CALL_TIMEOUT:?}", s.name),
                    ),
                }
            }
        }
        check_sniff(&mut report, f, &mine, &foreign);
        check_folded_round_trip(&mut report, f, &mine);
        let emit_ok = check_emit_twice(&mut report, f, &mine);
        check_bad_input(&mut report, f, &mine, &foreign);
        check_threads(&mut report, f, &mine, emit_ok);
        check_thread_count(&mut report, f, &mine, emit_ok);
    }
    report
}

/// `line L, column C: message (STATUS)`, or `byte N: …`: where, what and the status class.
fn describe(e: &CallError) -> String {
    let at = match (e.line, e.column, e.byte_offset) {
        (Some(l), Some(c), _) => format!("line {l}, column {c}: "),
        (Some(l), None, _) => format!("line {l}: "),
        (None, _, Some(o)) => format!("byte {o}: "),
        _ => String::new(),
    };
    format!("{at}{} ({})", e.message, status_name(e.status))
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::OK => "OK",
        Status::INVALID_INPUT => "INVALID_INPUT",
        Status::UNSUPPORTED => "UNSUPPORTED",
        Status::IO => "IO",
        Status::BAD_OPTIONS => "BAD_OPTIONS",
        Status::PANIC => "PANIC",
        Status::INTERNAL => "INTERNAL",
        Status::CANCELLED => "CANCELLED",
        _ => "UNKNOWN",
    }
}

/// Runs `f` on another thread; `None` when it does not finish within [`CALL_TIMEOUT`] (the
/// thread is left behind: a plugin call cannot be interrupted).
fn timed<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(CALL_TIMEOUT).ok()
}

/// The sniffer's score for the first 16 KiB of `bytes` (as detection gives it): `Err` with
/// what went wrong when it panicked or gave no answer within [`CALL_TIMEOUT`].
fn sniff_timed(f: &FormatHandle, bytes: &[u8]) -> Result<u32, String> {
    let (f, head) = (f.clone(), bytes[..bytes.len().min(16 * 1024)].to_vec());
    match timed(move || f.sniff(&head).map_err(|e| e.to_string())) {
        Some(r) => r,
        None => Err(format!(
            "the sniffer gave no answer within {CALL_TIMEOUT:?} (hang?)"
        )),
    }
}

/// Parses `bytes` as `profconv` does (whole input in memory unless the format streams). A
/// streaming format that takes a mapped file whole (`RELEASES_WHOLE_INPUT`) is parsed both ways
/// and must give one tree, releasing offsets in order within the input.
fn parse_now(f: &FormatHandle, bytes: &[u8], name: &str) -> Result<Parsed, CallError> {
    parse_with_threads(f, bytes, name, 1)
}

/// [`parse_now`] with `threads` worker threads allowed (`--threads`).
fn parse_with_threads(
    f: &FormatHandle,
    bytes: &[u8],
    name: &str,
    threads: usize,
) -> Result<Parsed, CallError> {
    let parsed = parse_once(f, bytes, name, !f.streams_input(), threads)?;
    if f.streams_input() && f.takes_mapped_input() {
        let whole = parse_once(f, bytes, name, true, threads)?;
        if whole.tree != parsed.tree {
            return Err(internal(
                "the parser gives another profile when given the input whole (it declares RELEASES_WHOLE_INPUT)".into(),
            ));
        }
    }
    Ok(parsed)
}

fn internal(message: String) -> CallError {
    CallError {
        status: Status::INTERNAL,
        message,
        byte_offset: None,
        line: None,
        column: None,
        io: None,
    }
}

/// One parse of `bytes`, streamed or `whole` (then with a release callback that checks the
/// offsets it is given).
fn parse_once(
    f: &FormatHandle,
    bytes: &[u8],
    name: &str,
    whole: bool,
    threads: usize,
) -> Result<Parsed, CallError> {
    let mut reader = bytes;
    let released = std::cell::Cell::new(Some(0u64));
    let release = |upto: u64| {
        let ok = released
            .get()
            .filter(|&r| upto >= r && upto <= bytes.len() as u64);
        released.set(ok.map(|_| upto));
    };
    let input = ParseInput {
        reader: &mut reader,
        whole: whole.then_some(bytes),
        size_hint: Some(bytes.len() as u64),
        name,
        threads,
        release: whole.then_some(&release as &dyn Fn(u64)),
    };
    let foreign = f.parse(input, &[], &mut |_, _| {})?;
    if released.get().is_none() {
        return Err(internal(
            "the parser released input offsets out of order or past the end".into(),
        ));
    }
    let view = foreign.view();
    let tree =
        stable_tree(&view).map_err(|e| internal(format!("the profile has no call tree: {e}")))?;
    Ok(Parsed {
        profile: view.to_owned_profile(),
        tree,
    })
}

fn parse_timed(f: &FormatHandle, s: &Sample) -> Option<Result<Parsed, CallError>> {
    let (f, s) = (f.clone(), s.clone());
    timed(move || parse_now(&f, &s.bytes, &s.name))
}

/// Tree text by name order, main weight only; `calls=` dropped (folded cannot carry it).
fn stable_tree(p: &ProfileRef<'_>) -> Result<String, profconv_ir::IrError> {
    let tree = CallTree::build(p)?;
    let opts = TreeTextOptions {
        order: TreeOrder::Name,
        ..Default::default()
    };
    let text = render_tree(p, &tree, &opts)?;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(line.rfind(" calls=").map_or(line, |i| &line[..i]));
        out.push('\n');
    }
    Ok(out)
}

/// The tree folded stacks can hold of `p`, as [`stable_tree`] prints it: each sample's stack by
/// the names the folded writer gives its functions ([`written_names`]: a `;` becomes `:`, ...),
/// functions of one name merged (a line of folded stacks has nothing else to tell them apart:
/// C's static functions of one name in two files), the column the writer writes.
fn folded_tree(p: &ProfileRef<'_>) -> Result<String, String> {
    let names = written_names(p);
    let mut b = ProfileBuilder::new();
    let col = p
        .default_weight()
        .or((!p.value_types.is_empty()).then_some(0));
    if let Some(c) = col {
        let out = b.add_value_type(
            p.value_type_name(c),
            p.value_type_unit(c),
            ValueKind::Weight,
        );
        b.rescale(out, p.value_types[c].decimals)
            .map_err(|e| e.to_string())?;
    }
    let mut path: Vec<&str> = Vec::new();
    for (i, &leaf) in p.sample_stack.iter().enumerate() {
        path.clear();
        let mut s = leaf;
        while s != NONE {
            path.push(&names[p.stack_func(s) as usize]);
            s = p.stack_prefix[s as usize];
        }
        path.reverse();
        let value = col.map(|c| p.sample_values[c][i]);
        b.add_stack(&path, value.as_slice())
            .map_err(|e| e.to_string())?;
    }
    stable_tree(&b.finish().view()).map_err(|e| e.to_string())
}

/// A path as the report shows it, control characters escaped.
fn shown(p: &Path) -> String {
    profconv_plugin::escape_controls(&p.display().to_string()).into_owned()
}

fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}: `{}` became `{}`", i + 1, x.trim(), y.trim());
        }
    }
    format!(
        "{} lines became {} lines",
        a.lines().count(),
        b.lines().count()
    )
}

fn listed(mut items: Vec<String>) -> String {
    let more = items.len().saturating_sub(MAX_LISTED);
    items.truncate(MAX_LISTED);
    let mut s = items.join("; ");
    if more > 0 {
        s.push_str(&format!("; and {more} more"));
    }
    s
}

fn check_sniff(
    report: &mut Report,
    f: &FormatHandle,
    mine: &[(Sample, Parsed)],
    foreign: &[Sample],
) {
    let id = &f.id;
    if !f.sniffs() {
        report.push(
            format!("{id}: sniff"),
            Outcome::Skip,
            "no content sniffer (detected by file name only)",
        );
        return;
    }
    let mut claimed = Vec::new();
    let mut max = (0, "");
    for s in foreign {
        let score = match sniff_timed(f, &s.bytes) {
            Ok(score) => score,
            Err(e) => {
                claimed.push(format!("{}: {e}", s.name));
                continue;
            }
        };
        // A sample of a kind this format names as its own and reads is not another format's to
        // it (a second reader of `.cpuprofile`, under an id of its own, claims the built-in
        // cpuprofile sample rightly); a lenient reader of other files still may not claim them.
        let named_own = f.extensions.iter().any(|e| {
            s.name
                .to_ascii_lowercase()
                .ends_with(&format!(".{}", e.to_ascii_lowercase()))
        });
        if score >= SNIFF_CLAIM && !(named_own && matches!(parse_timed(f, s), Some(Ok(_)))) {
            claimed.push(format!(
                "{} ({} sample) scores {score}",
                s.name,
                s.format.as_deref().unwrap_or("?")
            ));
        }
        if score >= max.0 {
            max = (score, s.name.as_str());
        }
    }
    if claimed.is_empty() {
        report.push(
            format!("{id}: sniff other formats"),
            Outcome::Pass,
            format!(
                "{} samples of other formats all score below {SNIFF_CLAIM} (highest {})",
                foreign.len(),
                max.0
            ),
        );
    } else {
        report.push(
            format!("{id}: sniff other formats"),
            Outcome::Fail,
            format!(
                "claims other formats' samples (score >= {SNIFF_CLAIM}), or its sniffer panicked on them: {}",
                listed(claimed)
            ),
        );
    }
    if mine.is_empty() {
        return;
    }
    let low: Vec<String> = mine
        .iter()
        .filter_map(|(s, _)| match sniff_timed(f, &s.bytes) {
            Ok(score) => (score < SNIFF_CLAIM).then(|| format!("{} scores {score}", s.name)),
            Err(e) => Some(format!("{}: {e}", s.name)),
        })
        .collect();
    if low.is_empty() {
        report.push(
            format!("{id}: sniff own samples"),
            Outcome::Pass,
            format!("{} samples score {SNIFF_CLAIM} or more", mine.len()),
        );
    } else {
        report.push(
            format!("{id}: sniff own samples"),
            Outcome::Fail,
            format!(
                "readable samples not recognized (score < {SNIFF_CLAIM}, or the sniffer panicked): {}",
                listed(low)
            ),
        );
    }
}

fn check_folded_round_trip(report: &mut Report, f: &FormatHandle, mine: &[(Sample, Parsed)]) {
    let name = format!("{}: parse -> folded -> parse", f.id);
    if !f.can_parse() {
        report.push(name, Outcome::Skip, "the format cannot be read");
        return;
    }
    if mine.is_empty() {
        report.push(
            name,
            Outcome::Skip,
            "no sample of this format: pass one (profconv plugin-check PATH SAMPLE...)",
        );
        return;
    }
    let (mut bad, mut too_deep) = (Vec::new(), Vec::new());
    let options = EmitOptions {
        max_size: Some(ROUND_TRIP_MAX_FOLDED),
        ..EmitOptions::default()
    };
    for (s, parsed) in mine {
        let mut folded = Vec::new();
        if let Err(e) = emit_folded(&parsed.profile.view(), &mut folded, options) {
            // Over the bound (the error says so before writing, or at the line that passes
            // it): the sample's stacks are too deep for this check, not wrong.
            if e.status == Status::UNSUPPORTED && e.message.contains("bound") {
                too_deep.push(s.name.clone());
            } else {
                bad.push(format!(
                    "{}: the folded emitter refused the profile: {e}",
                    s.name
                ));
            }
            continue;
        }
        let again = parse_folded(
            &mut Input::from_slice(&folded),
            false,
            &mut Context::silent(),
        );
        let tree = again
            .map_err(|e| e.to_string())
            .and_then(|p| stable_tree(&p.view()).map_err(|e| e.to_string()));
        let expected = match folded_tree(&parsed.profile.view()) {
            Ok(t) => t,
            Err(e) => {
                bad.push(format!("{}: the profile's stacks: {e}", s.name));
                continue;
            }
        };
        match tree {
            Ok(t) if t == expected => {}
            Ok(t) => bad.push(format!(
                "{}: the tree changed, {}",
                s.name,
                first_difference(&expected, &t)
            )),
            Err(e) => bad.push(format!("{}: the folded output does not parse: {e}", s.name)),
        }
    }
    let n_too_deep = too_deep.len();
    let skipped = match n_too_deep {
        0 => String::new(),
        n => format!(
            "; {n} skipped, whose folded text would pass {} MiB (each line holds its whole stack): {}",
            ROUND_TRIP_MAX_FOLDED >> 20,
            listed(too_deep)
        ),
    };
    if !bad.is_empty() {
        report.push(name, Outcome::Fail, format!("{}{skipped}", listed(bad)));
    } else if n_too_deep == mine.len() {
        report.push(
            name,
            Outcome::Skip,
            skipped.trim_start_matches("; ").to_string(),
        );
    } else {
        report.push(
            name,
            Outcome::Pass,
            format!("same tree for {} samples{skipped}", mine.len() - n_too_deep),
        );
    }
}

/// The profiles every emitter writes: the built-in folded sample, the plugin's own samples, and
/// an empty profile (what an empty folded file reads as: `profconv convert` hands it to the
/// emitter, as it does a profile that `-T` filters left without samples).
fn emit_inputs(mine: &[(Sample, Parsed)]) -> Vec<(String, Arc<Profile>)> {
    let s = &BUILTIN_SAMPLES[EMIT_SAMPLE];
    let mut v = Vec::new();
    if let Ok(p) = parse_folded(
        &mut Input::from_slice(s.bytes),
        false,
        &mut Context::silent(),
    ) {
        v.push((s.name.to_string(), Arc::new(p)));
    }
    for (s, parsed) in mine {
        v.push((s.name.clone(), Arc::new(parsed.profile.clone())));
    }
    if let Ok(p) = parse_folded(&mut Input::from_slice(b""), false, &mut Context::silent()) {
        v.push(("an empty profile (no samples)".to_string(), Arc::new(p)));
    }
    v
}

fn emit_timed(f: &FormatHandle, p: &Arc<Profile>) -> Option<Result<Vec<u8>, CallError>> {
    let (f, p) = (f.clone(), p.clone());
    timed(move || {
        let mut out = Vec::new();
        f.emit(&p.view(), &mut out, &[], &mut |_, _| {})
            .map(|()| out)
    })
}

/// Returns true when the emitter wrote identical bytes twice for every input it accepted.
fn check_emit_twice(report: &mut Report, f: &FormatHandle, mine: &[(Sample, Parsed)]) -> bool {
    let name = format!("{}: emit twice", f.id);
    if !f.can_emit() {
        report.push(name, Outcome::Skip, "the format cannot be written");
        return false;
    }
    let mut bad = Vec::new();
    let mut refused = Vec::new();
    let mut ok = 0;
    for (input, p) in emit_inputs(mine) {
        let (a, b) = match (emit_timed(f, &p), emit_timed(f, &p)) {
            (Some(Ok(a)), Some(Ok(b))) => (a, b),
            (Some(Err(e)), _) | (_, Some(Err(e))) => {
                if matches!(e.status, Status::INVALID_INPUT | Status::UNSUPPORTED) {
                    refused.push(format!("{input}: {}", describe(&e)));
                } else {
                    bad.push(format!("{input}: {}", describe(&e)));
                }
                continue;
            }
            _ => {
                bad.push(format!("{input}: no answer within {CALL_TIMEOUT:?}"));
                continue;
            }
        };
        if a == b {
            ok += 1;
        } else {
            let at = a
                .iter()
                .zip(&b)
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            let show = |v: &[u8]| {
                let end = (at + 24).min(v.len());
                String::from_utf8_lossy(&v[at..end])
                    .escape_debug()
                    .to_string()
            };
            bad.push(format!(
                "{input}: the two outputs differ at byte {at} (`{}` then `{}`; {} and {} bytes)",
                show(&a),
                show(&b),
                a.len(),
                b.len()
            ));
        }
    }
    if !bad.is_empty() {
        report.push(name, Outcome::Fail, listed(bad));
        false
    } else if ok == 0 {
        report.push(
            name,
            Outcome::Skip,
            format!("the emitter refused every input: {}", listed(refused)),
        );
        false
    } else {
        let mut detail = format!("identical bytes for {ok} profiles");
        if !refused.is_empty() {
            detail.push_str(&format!(" ({} refused with an error)", refused.len()));
        }
        report.push(name, Outcome::Pass, detail);
        true
    }
}

/// Malformed and truncated versions of `bytes`.
fn mutants(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let n = bytes.len();
    let mut v = Vec::new();
    for (what, cut) in [
        ("first third", n / 3),
        ("first half", n / 2),
        ("all but 1 byte", n.saturating_sub(1)),
    ] {
        if cut > 0 && cut < n {
            v.push((
                format!("truncated to its {what} ({cut} bytes)"),
                bytes[..cut].to_vec(),
            ));
        }
    }
    let garbage: &[u8] = b"\x00\xff{[\"@@ not a profile @@\"]}\xfe";
    let mid = n / 2;
    let mut m = bytes[..mid].to_vec();
    m.extend_from_slice(garbage);
    m.extend_from_slice(&bytes[mid..]);
    v.push((format!("garbage inserted at byte {mid}"), m));
    let mut m = bytes.to_vec();
    m.extend_from_slice(b"\n@@@ garbage line without structure @@@\n");
    v.push(("garbage line appended".to_string(), m));
    let mut m = bytes.to_vec();
    for b in m.iter_mut().skip(n / 4).step_by(7).take(64) {
        *b = b.wrapping_add(0x5f);
    }
    v.push(("bytes corrupted from the first quarter".to_string(), m));
    v
}

fn check_bad_input(
    report: &mut Report,
    f: &FormatHandle,
    mine: &[(Sample, Parsed)],
    foreign: &[Sample],
) {
    let name = format!("{}: malformed input", f.id);
    if !f.can_parse() {
        report.push(name, Outcome::Skip, "the format cannot be read");
        return;
    }
    // (what, bytes, another format's file)
    let mut inputs: Vec<(String, Arc<Vec<u8>>, bool)> = Vec::new();
    for (s, _) in mine {
        for (what, bytes) in mutants(&s.bytes) {
            inputs.push((format!("{} {what}", s.name), Arc::new(bytes), false));
        }
    }
    for s in foreign {
        inputs.push((
            format!("{} (a {} file)", s.name, s.format.as_deref().unwrap_or("?")),
            s.bytes.clone(),
            true,
        ));
    }
    inputs.push(("an empty input".to_string(), Arc::new(Vec::new()), false));
    let (mut rejected, mut accepted) = (0, 0);
    let mut bad = Vec::new();
    for (what, bytes, other_format) in &inputs {
        // Detection runs the sniffer on every input's head, short and broken ones too.
        if f.sniffs()
            && let Err(e) = sniff_timed(f, bytes)
        {
            bad.push(format!("{what}: {e}"));
        }
        let (fh, b, w) = (f.clone(), bytes.clone(), what.clone());
        match timed(move || parse_now(&fh, &b, &w).map(|p| p.profile.view().n_samples())) {
            None => bad.push(format!("{what}: no answer within {CALL_TIMEOUT:?} (hang?)")),
            // A non-empty file of another format read as a profile without samples, and
            // without an error: the parser skips what it does not understand, and a user who
            // gives it the wrong file (or `--from` the wrong format) gets an empty result.
            Some(Ok(0)) if *other_format && !bytes.is_empty() => bad.push(format!(
                "{what}: read as a profile with no samples, without an error (a file that is \
                 not in this format must be rejected)"
            )),
            Some(Ok(_)) => accepted += 1,
            Some(Err(e)) => match e.status {
                Status::INVALID_INPUT if e.line.is_none() && e.byte_offset.is_none() => {
                    bad.push(format!(
                        "{what}: error without a line or byte offset: {}",
                        describe(&e)
                    ))
                }
                Status::INVALID_INPUT | Status::UNSUPPORTED => rejected += 1,
                _ => bad.push(format!("{what}: {}", describe(&e))),
            },
        }
    }
    if bad.is_empty() {
        report.push(
            name,
            Outcome::Pass,
            format!(
                "{} inputs: {rejected} rejected with a located error, {accepted} read; no panic",
                inputs.len()
            ),
        );
    } else {
        report.push(name, Outcome::Fail, listed(bad));
    }
}

fn check_threads(report: &mut Report, f: &FormatHandle, mine: &[(Sample, Parsed)], emit_ok: bool) {
    let name = format!("{}: two threads", f.id);
    let mut bad = Vec::new();
    let mut done = Vec::new();
    if f.can_parse() {
        if let Some((s, parsed)) = mine.first() {
            let (bytes, sample) = (s.bytes.clone(), s.name.clone());
            let results = two_threads(f, move |fh| {
                parse_now(fh, &bytes, &sample).map(|p| p.tree.into_bytes())
            });
            compare_pair(&mut bad, "parse", &s.name, results, parsed.tree.as_bytes());
            done.push("parse");
        }
    }
    if f.can_emit() && emit_ok {
        if let Some((input, p)) = emit_inputs(mine).into_iter().next() {
            if let Some(Ok(expected)) = emit_timed(f, &p) {
                let results = two_threads(f, move |fh| {
                    let mut out = Vec::new();
                    fh.emit(&p.view(), &mut out, &[], &mut |_, _| {})
                        .map(|()| out)
                });
                compare_pair(&mut bad, "emit", &input, results, &expected);
                done.push("emit");
            }
        }
    }
    push_thread_outcome(
        report,
        name,
        bad,
        &done,
        "on two threads at once gives the single-thread result",
    );
}

/// A thread check's row: failed with what went wrong, skipped when nothing ran, else passed
/// for what ran (`parse and emit`) and `what` it showed.
fn push_thread_outcome(
    report: &mut Report,
    name: String,
    bad: Vec<String>,
    done: &[&str],
    what: &str,
) {
    if !bad.is_empty() {
        report.push(name, Outcome::Fail, listed(bad));
    } else if done.is_empty() {
        report.push(
            name,
            Outcome::Skip,
            "nothing to run: no sample of this format",
        );
    } else {
        report.push(
            name,
            Outcome::Pass,
            format!("{} {what}", done.join(" and ")),
        );
    }
}

/// Worker threads allowed in the thread-count check (`--threads 4`).
const MORE_THREADS: usize = 4;

/// Every sample parsed, and every profile emitted, with [`MORE_THREADS`] worker threads allowed
/// gives what one thread gives: `profconv` promises the same output whatever `--threads`, and a
/// format that splits its work (parallel parsing, compression beside the writing) can lose or
/// reorder a piece only there.
fn check_thread_count(
    report: &mut Report,
    f: &FormatHandle,
    mine: &[(Sample, Parsed)],
    emit_ok: bool,
) {
    let name = format!("{}: {MORE_THREADS} threads", f.id);
    let mut bad = Vec::new();
    let mut done = Vec::new();
    if f.can_parse() && !mine.is_empty() {
        for (s, parsed) in mine {
            let (fh, b, n) = (f.clone(), s.bytes.clone(), s.name.clone());
            match timed(move || parse_with_threads(&fh, &b, &n, MORE_THREADS)) {
                None => bad.push(format!(
                    "parse {}: no answer within {CALL_TIMEOUT:?}",
                    s.name
                )),
                Some(Err(e)) => bad.push(format!("parse {}: {}", s.name, describe(&e))),
                Some(Ok(p)) if p.tree != parsed.tree => bad.push(format!(
                    "parse {}: another profile than with one thread: {}",
                    s.name,
                    first_difference(&parsed.tree, &p.tree)
                )),
                Some(Ok(_)) => {}
            }
        }
        done.push("parse");
    }
    if f.can_emit() && emit_ok {
        for (input, p) in emit_inputs(mine) {
            let Some(Ok(one)) = emit_timed(f, &p) else {
                continue;
            };
            let fh = f.clone();
            let more = timed(move || {
                let mut out = Vec::new();
                fh.emit_with_threads(&p.view(), &mut out, &[], MORE_THREADS, &mut |_, _| {})
                    .map(|()| out)
            });
            match more {
                None => bad.push(format!("emit {input}: no answer within {CALL_TIMEOUT:?}")),
                Some(Err(e)) => bad.push(format!("emit {input}: {}", describe(&e))),
                Some(Ok(out)) if out != one => bad.push(format!(
                    "emit {input}: other bytes than with one thread ({} against {} bytes)",
                    out.len(),
                    one.len()
                )),
                Some(Ok(_)) => {}
            }
        }
        done.push("emit");
    }
    push_thread_outcome(
        report,
        name,
        bad,
        &done,
        &format!("with {MORE_THREADS} threads allowed gives the one-thread result"),
    );
}

type ThreadResult = Option<Result<Vec<u8>, CallError>>;

/// Runs `call` on two threads that start together; `None` for a thread that panicked. `None`
/// for both when they do not both finish within [`CALL_TIMEOUT`] (a plugin that deadlocks when
/// called twice at once): the threads are left behind, as [`timed`] leaves a hung call.
fn two_threads(
    f: &FormatHandle,
    call: impl Fn(&FormatHandle) -> Result<Vec<u8>, CallError> + Send + Sync + 'static,
) -> Option<[ThreadResult; 2]> {
    let f = f.clone();
    timed(move || {
        let barrier = Barrier::new(2);
        std::thread::scope(|scope| {
            let handles = [0, 1].map(|_| {
                let (barrier, call, f) = (&barrier, &call, &f);
                scope.spawn(move || {
                    barrier.wait();
                    call(f)
                })
            });
            handles.map(|h| h.join().ok())
        })
    })
}

fn compare_pair(
    bad: &mut Vec<String>,
    what: &str,
    input: &str,
    results: Option<[ThreadResult; 2]>,
    expected: &[u8],
) {
    let Some(results) = results else {
        bad.push(format!(
            "{what} {input}: no answer within {CALL_TIMEOUT:?} on two threads at once (a \
             deadlock?)"
        ));
        return;
    };
    for (i, r) in results.into_iter().enumerate() {
        match r {
            None => bad.push(format!("{what} {input}: thread {i} died")),
            Some(Err(e)) => bad.push(format!("{what} {input} on thread {i}: {}", describe(&e))),
            Some(Ok(out)) if out != expected => bad.push(format!(
                "{what} {input}: thread {i} got a different result than a single-threaded call"
            )),
            Some(Ok(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        CALL_TIMEOUT, Outcome, Report, Sample, check_bad_input, check_emit_twice,
        check_thread_count, check_threads, option_problems, parse_timed,
    };
    use crate::samples::BUILTIN_SAMPLES;
    use profconv_plugin::abi::option_kind;
    use profconv_plugin::host::OptionInfo;
    use profconv_plugin::ir::{Profile, ProfileBuilder, ValueKind};
    use profconv_plugin::{Context, Format, Input, Options, PluginError};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

    fn option(key: &str, kind: u32, default: &str) -> OptionInfo {
        OptionInfo {
            key: key.into(),
            kind,
            default: default.into(),
            help: String::new(),
            phases: 0,
        }
    }

    /// Declarations a user could not use are handshake problems: keys that cannot be typed or
    /// are declared twice, defaults the kind cannot hold; good ones are none.
    #[test]
    fn unusable_option_declarations_are_problems() {
        let good = [
            option("depth", option_kind::INTEGER, "100"),
            option("scale", option_kind::NUMBER, "0.5"),
            option("name", option_kind::STRING, "a b"),
            option("flag", option_kind::FLAG, ""),
        ];
        assert!(option_problems("x", &good).is_empty());
        let bad = [
            option("a=b", option_kind::STRING, ""),
            option("", option_kind::FLAG, ""),
            option("depth", option_kind::INTEGER, "abc"),
            option("depth", option_kind::INTEGER, "1"),
            option("scale", option_kind::NUMBER, "inf"),
        ];
        let problems = option_problems("x", &bad);
        for want in [
            "x: option key 'a=b' cannot be typed",
            "x: option key '' cannot be typed",
            "x: option 'depth' is an integer but its default `abc` is not",
            "x: option 'depth' is declared twice",
            "x: option 'scale' is a finite number but its default `inf` is not",
        ] {
            assert!(
                problems.iter().any(|p| p.starts_with(want)),
                "{want}: {problems:?}"
            );
        }
        assert_eq!(problems.len(), 5, "{problems:?}");
    }

    /// A parser that waits forever when it is entered while another call is inside it (a lock
    /// never released, as a plugin's deadlock under two threads).
    struct OneAtATime;

    static INSIDE: AtomicU32 = AtomicU32::new(0);
    /// Set once the single-thread call is done: from then on a call stays inside until the
    /// other thread's call has come in too, so that the two calls overlap whatever the
    /// scheduler does. A fixed pause (50 ms) only made the overlap likely: on a loaded machine
    /// the second thread sometimes entered after the first had left, both got an answer, and
    /// the check rightly passed (1 run in 60 with both cores busy).
    static PAIRED: AtomicBool = AtomicBool::new(false);

    impl Format for OneAtATime {
        const ID: &'static str = "one-at-a-time";
        const CAN_PARSE: bool = true;

        fn parse(
            _: &mut Input<'_>,
            _: &Options,
            _: &mut Context<'_>,
        ) -> Result<Profile, PluginError> {
            if INSIDE.fetch_add(1, Ordering::SeqCst) > 0 {
                loop {
                    std::thread::park();
                }
            }
            if PAIRED.load(Ordering::SeqCst) {
                // Holds the lock until the other call waits for it: neither returns.
                while INSIDE.load(Ordering::SeqCst) < 2 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                loop {
                    std::thread::park();
                }
            }
            INSIDE.fetch_sub(1, Ordering::SeqCst);
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_stack(&["main"], &[1])?;
            Ok(b.finish())
        }
    }

    profconv_plugin::static_plugin!(
        one_at_a_time_entry,
        name: "one-at-a-time",
        version: "test",
        formats: [OneAtATime],
    );

    /// A parser that deadlocks when two threads call it at once fails the two-threads check
    /// within the call timeout: the kit hung (printing nothing, as the report is printed at the
    /// end), though it promises no hang.
    #[test]
    fn a_parser_that_deadlocks_on_two_threads_fails_instead_of_hanging() {
        let plugin =
            profconv_plugin::host::load_static(one_at_a_time_entry, "one-at-a-time").unwrap();
        let f = plugin.formats[0].clone();
        let sample = one_byte_sample();
        let parsed = parse_timed(&f, &sample)
            .expect("an answer")
            .expect("a profile");
        PAIRED.store(true, Ordering::SeqCst);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut report = report();
            check_threads(&mut report, &f, &[(sample, parsed)], false);
            let _ = tx.send(report);
        });
        let report = rx
            .recv_timeout(CALL_TIMEOUT * 5)
            .expect("the two-threads check hung");
        let r = report
            .check("one-at-a-time: two threads")
            .expect("the check");
        assert_eq!(r.outcome, Outcome::Fail, "{report}");
        assert!(r.detail.contains("deadlock"), "{report}");
    }

    /// A parser that loses its first sample when allowed more than one thread (a piece lost
    /// in a parallel parse).
    struct LosesAPieceOnThreads;

    impl Format for LosesAPieceOnThreads {
        const ID: &'static str = "loses-a-piece";
        const CAN_PARSE: bool = true;

        fn parse(
            _: &mut Input<'_>,
            _: &Options,
            cx: &mut Context<'_>,
        ) -> Result<Profile, PluginError> {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            if cx.threads() == 1 {
                b.add_stack(&["main", "first"], &[1])?;
            }
            b.add_stack(&["main", "second"], &[1])?;
            Ok(b.finish())
        }
    }

    profconv_plugin::static_plugin!(
        loses_a_piece_entry,
        name: "loses-a-piece",
        version: "test",
        formats: [LosesAPieceOnThreads],
    );

    /// A parser whose profile changes with the threads allowed fails the thread-count check:
    /// the kit only ever parsed with one thread, and `--threads 2` lost samples unseen.
    #[test]
    fn a_parser_that_changes_with_the_thread_count_fails() {
        let plugin =
            profconv_plugin::host::load_static(loses_a_piece_entry, "loses-a-piece").unwrap();
        let f = plugin.formats[0].clone();
        let sample = one_byte_sample();
        let parsed = parse_timed(&f, &sample).unwrap().unwrap();
        let mut report = report();
        check_thread_count(&mut report, &f, &[(sample, parsed)], false);
        let r = report.check("loses-a-piece: 4 threads").unwrap();
        assert_eq!(r.outcome, Outcome::Fail, "{report}");
        assert!(
            r.detail.contains("another profile than with one thread"),
            "{report}"
        );
    }

    /// A parser that reads anything, skipping what it does not understand: every input is a
    /// profile, most of them without samples.
    struct ReadsAnything;

    impl Format for ReadsAnything {
        const ID: &'static str = "reads-anything";
        const CAN_PARSE: bool = true;

        fn parse(
            _: &mut Input<'_>,
            _: &Options,
            _: &mut Context<'_>,
        ) -> Result<Profile, PluginError> {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            Ok(b.finish())
        }
    }

    profconv_plugin::static_plugin!(
        reads_anything_entry,
        name: "reads-anything",
        version: "test",
        formats: [ReadsAnything],
    );

    /// A sample of one byte, of no built-in format.
    fn one_byte_sample() -> Sample {
        Sample {
            name: "x.sample".into(),
            format: None,
            bytes: Arc::new(b"x".to_vec()),
        }
    }

    fn report() -> Report {
        Report {
            path: "test".into(),
            checks: Vec::new(),
        }
    }

    /// Other formats' files read as empty profiles without an error fail the malformed-input
    /// check (it passed with "0 rejected with a located error, 12 read"): a user who gives such
    /// a parser the wrong file gets an empty result and no word of it.
    #[test]
    fn a_parser_reading_other_formats_files_as_empty_profiles_fails_malformed_input() {
        let plugin =
            profconv_plugin::host::load_static(reads_anything_entry, "reads-anything").unwrap();
        let f = plugin.formats[0].clone();
        let foreign: Vec<Sample> = BUILTIN_SAMPLES
            .iter()
            .map(|s| Sample {
                name: s.name.into(),
                format: Some(s.format.into()),
                bytes: Arc::new(s.bytes.to_vec()),
            })
            .collect();
        let mut report = report();
        check_bad_input(&mut report, &f, &[], &foreign);
        let r = report.check("reads-anything: malformed input").unwrap();
        assert_eq!(r.outcome, Outcome::Fail, "{report}");
        assert!(
            r.detail
                .contains("(a callgrind file): read as a profile with no samples"),
            "{report}"
        );
    }

    /// A writer that panics on a profile without samples.
    struct PanicsOnEmpty;

    impl Format for PanicsOnEmpty {
        const ID: &'static str = "panics-on-empty";
        const CAN_EMIT: bool = true;

        fn emit(
            p: &profconv_plugin::ir::ProfileRef<'_>,
            out: &mut profconv_plugin::Output<'_>,
            _: &Options,
            _: &mut Context<'_>,
        ) -> Result<(), PluginError> {
            use std::io::Write;
            let n = p.n_samples();
            writeln!(out, "{}", 100 / n)?;
            Ok(())
        }
    }

    profconv_plugin::static_plugin!(
        panics_on_empty_entry,
        name: "panics-on-empty",
        version: "test",
        formats: [PanicsOnEmpty],
    );

    /// An emitter is given an empty profile too (`profconv convert` of an empty file gives it
    /// one): a panic there fails emit twice.
    #[test]
    fn an_emitter_panicking_on_an_empty_profile_fails_emit_twice() {
        let plugin =
            profconv_plugin::host::load_static(panics_on_empty_entry, "panics-on-empty").unwrap();
        let f = plugin.formats[0].clone();
        let mut report = report();
        check_emit_twice(&mut report, &f, &[]);
        let r = report.check("panics-on-empty: emit twice").unwrap();
        assert_eq!(r.outcome, Outcome::Fail, "{report}");
        assert!(
            r.detail
                .contains("an empty profile (no samples): plugin panicked"),
            "{report}"
        );
    }
}
