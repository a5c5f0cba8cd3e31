//! The plugin author's side: [`Format`], its inputs and outputs, and the trampolines the
//! `export_plugin!` macro wires into the C ABI.

use crate::abi::{
    self, FormatDesc, HostCallbacks, InputStream, OptionDesc, OptionValue, OutputStream,
    ProfileExport, ProfileView, Status, StrRef, caps,
};
use profconv_ir::{Profile, ProfileRef};
use std::fmt;
use std::io::{self, BufWriter, Read, Write};
use std::mem::size_of;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A format: what a plugin implements. All items but `ID` have defaults.
///
/// ```
/// use profconv_plugin::{Context, Format, Input, Options, PluginError};
/// use profconv_plugin::ir::{Profile, ProfileBuilder, ValueKind};
///
/// /// One function name per line, each line one sample.
/// pub struct Lines;
///
/// impl Format for Lines {
///     const ID: &'static str = "lines";
///     const DESCRIPTION: &'static str = "one function name per line";
///     const EXTENSIONS: &'static str = "lines";
///     const CAN_PARSE: bool = true;
///
///     fn parse(input: &mut Input<'_>, _: &Options, _: &mut Context<'_>) -> Result<Profile, PluginError> {
///         // Bytes, not `read_to_string`: text that is not UTF-8 then gets its line and column.
///         let mut bytes = Vec::new();
///         input.read_to_end(&mut bytes)?;
///         let mut b = ProfileBuilder::new();
///         b.add_value_type("samples", "count", ValueKind::Weight);
///         for (i, raw) in bytes.split(|&c| c == b'\n').enumerate() {
///             let line = std::str::from_utf8(raw).map_err(|e| {
///                 PluginError::invalid_input("not UTF-8").at_line(i as u64 + 1, e.valid_up_to() as u64 + 1)
///             })?;
///             if !line.is_empty() {
///                 b.add_stack(&[line], &[1]).map_err(PluginError::from)?;
///             }
///         }
///         Ok(b.finish())
///     }
/// }
/// use std::io::Read;
/// # fn main() {}
/// ```
pub trait Format: 'static {
    /// Format id users type (`folded`).
    const ID: &'static str;
    /// One-line description for `profconv formats`.
    const DESCRIPTION: &'static str = "";
    /// Comma-separated file-name suffixes, without dots (`folded,collapsed`).
    const EXTENSIONS: &'static str = "";
    /// Options the format accepts (`-O KEY[=VALUE]`).
    const OPTIONS: &'static [OptionDesc] = &[];
    /// Implements [`Format::parse`].
    const CAN_PARSE: bool = false;
    /// Implements [`Format::emit`].
    const CAN_EMIT: bool = false;
    /// Implements [`Format::sniff`].
    const CAN_SNIFF: bool = false;
    /// Reads input as a stream (otherwise the host hands over the whole input in memory).
    const STREAMING_INPUT: bool = true;
    /// A streaming parser that, given [`Input::whole`], reads it in place from start to end
    /// and calls [`Input::release`] behind it (reading `Input` as `Read` does): the host may
    /// then map a large file instead of streaming it. Leave `false` for a parser that keeps
    /// slices of its input, or reads `whole` without releasing it.
    const RELEASES_WHOLE_INPUT: bool = false;

    /// Confidence 0..=100 that `head` (the input's first bytes) is this format.
    fn sniff(head: &[u8]) -> u32 {
        let _ = head;
        0
    }

    /// Reads a profile.
    fn parse(
        input: &mut Input<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        let _ = (input, options, cx);
        Err(PluginError::unsupported(format!(
            "{} cannot parse",
            Self::ID
        )))
    }

    /// Writes a profile.
    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        let _ = (profile, output, options, cx);
        Err(PluginError::unsupported(format!(
            "{} cannot emit",
            Self::ID
        )))
    }

    /// Checks the values of the options [`Format::parse`] will be given, before the host reads
    /// any input (ABI 1.5), so that a bad one is refused at once: return the error `parse`
    /// would give for it. Check only what the options alone decide. The default takes all.
    fn check_parse_options(options: &Options) -> Result<(), PluginError> {
        let _ = options;
        Ok(())
    }

    /// As [`Format::check_parse_options`], for the options [`Format::emit`] will be given,
    /// before the input is read (a `value=NAME` the profile lacks is for `emit` to find).
    fn check_emit_options(options: &Options) -> Result<(), PluginError> {
        let _ = options;
        Ok(())
    }
}

/// An error from a plugin, with where in the input it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginError {
    /// Error class.
    pub status: Status,
    /// What is wrong and what was expected.
    pub message: String,
    /// Byte offset in the input.
    pub byte_offset: Option<u64>,
    /// 1-based line.
    pub line: Option<u64>,
    /// 1-based column.
    pub column: Option<u64>,
}

impl PluginError {
    fn new(status: Status, message: impl Into<String>) -> Self {
        PluginError {
            status,
            message: message.into(),
            byte_offset: None,
            line: None,
            column: None,
        }
    }
    /// Malformed input.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(Status::INVALID_INPUT, message)
    }
    /// Not supported.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(Status::UNSUPPORTED, message)
    }
    /// A bad option value.
    pub fn bad_option(message: impl Into<String>) -> Self {
        Self::new(Status::BAD_OPTIONS, message)
    }
    /// A plugin bug.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Status::INTERNAL, message)
    }
    /// Sets the byte offset.
    pub fn at_offset(mut self, byte_offset: u64) -> Self {
        self.byte_offset = Some(byte_offset);
        self
    }
    /// Sets the 1-based line and column.
    pub fn at_line(mut self, line: u64, column: u64) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.line {
            write!(f, "line {l}")?;
            if let Some(c) = self.column {
                write!(f, ", column {c}")?;
            }
            f.write_str(": ")?;
        } else if let Some(o) = self.byte_offset {
            write!(f, "byte {o}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for PluginError {}

impl From<io::Error> for PluginError {
    /// An I/O error, except `InvalidData`, which std's text readers (`read_to_string`,
    /// `read_line`) give for input that is not UTF-8: that is malformed input (its position is
    /// the plugin's to add). A failure of the host's own reading is reported by the host as it is.
    fn from(e: io::Error) -> Self {
        let status = match e.kind() {
            io::ErrorKind::InvalidData => Status::INVALID_INPUT,
            _ => Status::IO,
        };
        PluginError::new(status, e.to_string())
    }
}

impl From<profconv_ir::IrError> for PluginError {
    /// A result past a bound is `UNSUPPORTED` (as the emitters' size bounds: other options may
    /// do), an overflow or an invalid profile `INVALID_INPUT`.
    fn from(e: profconv_ir::IrError) -> Self {
        match e {
            profconv_ir::IrError::TooLarge(_) => PluginError::unsupported(e.to_string()),
            _ => PluginError::invalid_input(e.to_string()),
        }
    }
}

/// Option values of one call, as the user gave them (the host checked the keys).
#[derive(Clone, Debug, Default)]
pub struct Options {
    values: Vec<(String, Option<String>)>,
}

impl Options {
    /// Options from `(key, value)` pairs.
    pub fn new(values: Vec<(String, Option<String>)>) -> Self {
        Options { values }
    }
    /// True when the flag `key` was given (and not `=false`/`=0`/`=no`).
    pub fn flag(&self, key: &str) -> bool {
        self.values
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .is_some_and(|(_, v)| !matches!(v.as_deref(), Some("false" | "0" | "no" | "off")))
    }
    /// The last value given for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }
    /// The value of `key` parsed as `T`, or a [`Status::BAD_OPTIONS`] error naming it.
    pub fn parse<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, PluginError>
    where
        T::Err: fmt::Display,
    {
        self.get(key)
            .map(|v| {
                v.parse::<T>().map_err(|e| {
                    let v = crate::quote_input(v.as_bytes(), 40);
                    // Say what was expected, not only what the standard parser disliked.
                    let whole = |max: u64| Some(format!("a whole number from 0 to {max}"));
                    let expected = match std::any::type_name::<T>() {
                        "u8" => whole(u8::MAX.into()),
                        "u16" => whole(u16::MAX.into()),
                        "u32" => whole(u32::MAX.into()),
                        "u64" | "usize" => whole(u64::MAX),
                        "i8" | "i16" | "i32" | "i64" | "isize" => Some("a whole number".into()),
                        "f32" | "f64" => Some("a number".into()),
                        "bool" => Some("`true` or `false`".into()),
                        _ => None,
                    };
                    PluginError::bad_option(match expected {
                        Some(x) => format!("option {key}={v}: expected {x} ({e})"),
                        None => format!("option {key}={v}: {e}"),
                    })
                })
            })
            .transpose()
    }
    /// Option `key` parsed as a `T` within `range`; `what` names what it is (`a width in
    /// pixels`). A value that does not parse or is out of range is a bad option that says
    /// `option KEY=TEXT: expected WHAT from LOW to HIGH`, quoting the text as given.
    pub fn parse_in<T>(
        &self,
        key: &str,
        range: std::ops::RangeInclusive<T>,
        what: &str,
    ) -> Result<Option<T>, PluginError>
    where
        T: std::str::FromStr + PartialOrd + fmt::Display,
    {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.trim().parse::<T>() {
            Ok(x) if range.contains(&x) => Ok(Some(x)),
            _ => Err(PluginError::bad_option(format!(
                "option {key}={}: expected {what} from {} to {}",
                crate::quote_input(v.as_bytes(), 40),
                range.start(),
                range.end()
            ))),
        }
    }

    /// A bound on the output's size from option `key` (bytes; `0`: none), [`MAX_OUTPUT_SIZE`]
    /// when the option is not given. For emitters whose output can grow faster than the
    /// profile (formats that repeat each line's whole stack).
    pub fn max_output_size(&self, key: &str) -> Result<Option<u64>, PluginError> {
        self.max_output_size_or(key, MAX_OUTPUT_SIZE)
    }

    /// [`Self::max_output_size`] with another default (a format whose readers stop well below
    /// [`MAX_OUTPUT_SIZE`]).
    pub fn max_output_size_or(&self, key: &str, default: u64) -> Result<Option<u64>, PluginError> {
        Ok(match self.parse::<u64>(key)? {
            None => Some(default),
            Some(0) => None,
            Some(n) => Some(n),
        })
    }
    /// Every pair, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_deref()))
    }

    /// # Safety
    /// `ptr` must point at `n` option values whose strings are readable for this call.
    unsafe fn from_abi(ptr: *const OptionValue, n: usize) -> Options {
        if ptr.is_null() || n == 0 {
            return Options::default();
        }
        // SAFETY: the caller guarantees `n` readable values.
        let raw = unsafe { std::slice::from_raw_parts(ptr, n) };
        let values = raw
            .iter()
            .map(|o| {
                // SAFETY: the strings are borrowed for this call (caller's contract).
                unsafe {
                    let key = o.key.to_string_lossy();
                    let value = (!o.value.is_null()).then(|| o.value.to_string_lossy());
                    (key, value)
                }
            })
            .collect();
        Options { values }
    }
}

/// A message sink: `(level, message)`.
type LogSink<'a> = &'a mut dyn FnMut(u32, &str);

/// Where a plugin's warnings go (the host shows them on stderr, after the input's name).
pub struct Context<'a> {
    host: Option<&'a HostCallbacks>,
    sink: Option<LogSink<'a>>,
    threads: usize,
}

impl<'a> Context<'a> {
    /// A context that collects messages through `sink(level, message)` (for tests).
    pub fn with_sink(sink: &'a mut dyn FnMut(u32, &str)) -> Self {
        Context {
            host: None,
            sink: Some(sink),
            threads: 1,
        }
    }
    /// A context that drops every message.
    pub fn silent() -> Self {
        Context {
            host: None,
            sink: None,
            threads: 1,
        }
    }
    /// The same context allowing `threads` worker threads (tests, in-process callers).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }
    /// Worker threads this call may use (at least 1), as the host's `--threads` says, but no
    /// more than the machine's cores. A parser or emitter that can split its work uses up to
    /// this many; 1 means the calling thread only.
    pub fn threads(&self) -> usize {
        self.threads
    }
    fn from_host(host: Option<&'a HostCallbacks>) -> Self {
        // More threads than cores gains nothing, and a host passing any `u32` must not make a
        // plugin start billions of threads or size its queues by them.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Context {
            host,
            sink: None,
            threads: host.map_or(1, |h| (h.threads as usize).clamp(1, cores)),
        }
    }
    /// A warning for the user (for example a skipped line).
    pub fn warn(&mut self, message: &str) {
        self.log(abi::log_level::WARN, message);
    }
    /// An informational message.
    pub fn info(&mut self, message: &str) {
        self.log(abi::log_level::INFO, message);
    }
    fn log(&mut self, level: u32, message: &str) {
        if let Some(sink) = &mut self.sink {
            sink(level, message);
        }
        if let Some(h) = self.host {
            // SAFETY: the host lent these callbacks for the duration of this call; the message
            // is borrowed only while the callback runs (the host copies it).
            unsafe { (h.log)(h.ctx, level, StrRef::new(message)) };
        }
    }
}

/// `input.read(buf)`, again when a signal interrupted it (`ErrorKind::Interrupted`): what a
/// reader calls where `read_exact` does not fit (the last read of a stream is short).
pub fn read_some(input: &mut dyn io::Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match input.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// `2^63-1 (9223372036854775807)`: the largest value a profile holds (`i64::MAX`), as a
/// [`too_large`] message names it.
pub const MAX_VALUE: &str = "2^63-1 (9223372036854775807)";

/// The message of a number in the input above what the reader can hold, worded alike in every
/// reader: `{what} is too large: at most {limit}`, where `what` names the number and shows it
/// as written (`call count 9223372036854775808`) and `limit` is the largest it may be (often
/// [`MAX_VALUE`]). The same whether the number fits in 64 bits or not; the reader adds where
/// it is.
pub fn too_large(what: impl fmt::Display, limit: impl fmt::Display) -> String {
    format!("{what} is too large: at most {limit}")
}

/// The error of a line of `max_line` bytes or more, `no newline in MAX_LINE bytes: {what}`
/// (the reader adds where the line starts): the same whether the line was streamed
/// ([`grow_line_buffer`]) or found in an input in memory.
pub fn no_newline(max_line: usize, what: &str) -> PluginError {
    PluginError::invalid_input(format!("no newline in {max_line} bytes: {what}"))
}

/// Grows `buf`, a line reader's buffer that holds the start of one line and no newline, for
/// a line longer than itself: doubles it (at least to 64 KiB), up to `max_line` bytes. Past that
/// the line is an error, `no newline in MAX_LINE bytes: {what}` (the reader adds where the line
/// starts), so a file without newlines cannot take memory without bound; memory that cannot be
/// had is an I/O error, not an abort.
pub fn grow_line_buffer(buf: &mut Vec<u8>, max_line: usize, what: &str) -> Result<(), PluginError> {
    if buf.len() >= max_line {
        return Err(no_newline(max_line, what));
    }
    let want = (buf.len() * 2).max(1 << 16).min(max_line);
    if buf.try_reserve_exact(want - buf.len()).is_err() {
        return Err(io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!("out of memory for a line of more than {} bytes", buf.len()),
        )
        .into());
    }
    buf.resize(want, 0);
    Ok(())
}

/// The parser's input: a byte stream (`Read`), and the whole input when the host has it.
pub struct Input<'a> {
    source: InputSource<'a>,
    whole: Option<&'a [u8]>,
    size_hint: Option<u64>,
    name: String,
    /// The host's callbacks (for [`Input::release`]).
    host: Option<&'a HostCallbacks>,
    /// What [`Input::release`] calls without a host (see [`Input::with_release`]).
    release_hook: Option<&'a dyn Fn(usize)>,
    /// Bytes of a whole input read as `Read` and released.
    released: usize,
}

/// Reading an [`Input`] as `Read` over a whole input releases it in steps of this many bytes.
const RELEASE_BLOCK: usize = 1 << 20;

enum InputSource<'a> {
    Slice(&'a [u8]),
    Host(&'a InputStream),
    Reader(&'a mut dyn Read),
}

impl<'a> Input<'a> {
    /// Input from memory (tests, or a format that wants everything at once).
    pub fn from_slice(data: &'a [u8]) -> Self {
        Input {
            source: InputSource::Slice(data),
            whole: Some(data),
            size_hint: Some(data.len() as u64),
            name: "<memory>".into(),
            host: None,
            release_hook: None,
            released: 0,
        }
    }
    /// Input from any reader.
    pub fn from_reader(reader: &'a mut dyn Read) -> Self {
        Input {
            source: InputSource::Reader(reader),
            whole: None,
            size_hint: None,
            name: "<reader>".into(),
            host: None,
            release_hook: None,
            released: 0,
        }
    }
    /// The whole input, when the host has it in memory (parsers may use it instead of reading).
    pub fn whole(&self) -> Option<&'a [u8]> {
        self.whole
    }
    /// The input's size, when known.
    pub fn size_hint(&self) -> Option<u64> {
        self.size_hint
    }
    /// A name for the input (file path), for messages.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Calls `hook` with what [`Self::release`] releases (for tests of a parser's releases).
    pub fn with_release(mut self, hook: &'a dyn Fn(usize)) -> Self {
        self.release_hook = Some(hook);
        self
    }
    /// Tells the host that the parser will not read the bytes of [`Self::whole`] before offset
    /// `upto` again soon: a host that mapped the file drops those pages, so memory follows what
    /// the parser keeps, not the input's size. Reading them again stays valid (and gives the
    /// same bytes), only slower. Reading the input as a stream (`Read`) releases what it read.
    /// Nothing happens without a whole input or with a host older than ABI 1.3.
    pub fn release(&self, upto: usize) {
        if self.whole.is_none() {
            return;
        }
        if let Some(hook) = self.release_hook {
            hook(upto);
        }
        if let Some(h) = self.host
            && let Some(release) = h.release_input
        {
            // SAFETY: the host lent the callback and its context for this call, on this thread.
            unsafe { release(h.ctx, upto as u64) };
        }
    }
}

impl Read for Input<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.source {
            InputSource::Slice(s) => {
                let n = s.read(buf)?;
                let read = self.whole.map_or(0, |w| w.len() - s.len());
                // A block at a time, not a host call per small read.
                if read >= self.released + RELEASE_BLOCK || (n == 0 && read > self.released) {
                    self.released = read;
                    self.release(read);
                }
                Ok(n)
            }
            InputSource::Reader(r) => r.read(buf),
            InputSource::Host(h) => {
                let mut n = 0usize;
                // SAFETY: the host lent the stream for this call; `buf` is writable for its
                // length and `n` is a valid out-pointer.
                let status = unsafe { (h.read)(h.ctx, buf.as_mut_ptr(), buf.len(), &mut n) };
                if status != Status::OK {
                    return Err(io::Error::other("the host could not read the input"));
                }
                Ok(n.min(buf.len()))
            }
        }
    }
}

/// Bytes an emitter's [`Output`] gathers before each host call.
pub const EMIT_BUFFER: usize = 1 << 16;

/// The emitter's output: a buffered `Write` ([`EMIT_BUFFER`] bytes per host call).
pub struct Output<'a> {
    inner: BufWriter<OutputSink<'a>>,
}

enum OutputSink<'a> {
    Host(&'a OutputStream),
    Writer(&'a mut dyn Write),
}

impl Write for OutputSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            OutputSink::Writer(w) => w.write(buf),
            OutputSink::Host(h) => {
                // SAFETY: the host lent the stream for this call; `buf` is readable.
                let status = unsafe { (h.write)(h.ctx, buf.as_ptr(), buf.len()) };
                if status != Status::OK {
                    return Err(io::Error::other("the host could not write the output"));
                }
                Ok(buf.len())
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            OutputSink::Writer(w) => w.flush(),
            OutputSink::Host(_) => Ok(()),
        }
    }
}

impl<'a> Output<'a> {
    /// Output into any writer (tests).
    pub fn from_writer(writer: &'a mut dyn Write) -> Self {
        Output {
            inner: BufWriter::with_capacity(EMIT_BUFFER, OutputSink::Writer(writer)),
        }
    }
}

impl Write for Output<'_> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

fn report(host: Option<&HostCallbacks>, e: &PluginError) {
    if let Some(h) = host {
        let u = |v: Option<u64>| v.unwrap_or(u64::MAX);
        // SAFETY: the host lent its callbacks for this call; the message is borrowed only
        // while the callback runs.
        unsafe {
            (h.report_error)(
                h.ctx,
                e.status,
                StrRef::new(&e.message),
                u(e.byte_offset),
                u(e.line),
                u(e.column),
            )
        };
    }
}

/// The host's callbacks, copied: fields a host of an older minor does not have are null (its
/// `struct_size` says how many bytes it lent), and nothing past them is read.
///
/// # Safety
/// `host` is null or points at callbacks valid for this call, of at least ABI-1.0 size.
unsafe fn host_callbacks(host: *const HostCallbacks) -> Option<HostCallbacks> {
    if host.is_null() {
        return None;
    }
    // SAFETY: non-null and valid for the call (caller's contract); the first field is in every
    // version.
    let lent = unsafe { (*host).struct_size } as usize;
    if lent < abi::min_size::HOST_CALLBACKS {
        return None;
    }
    let mut copy = std::mem::MaybeUninit::<HostCallbacks>::zeroed();
    // SAFETY: the host lent `lent` readable bytes; at most the size of `HostCallbacks` is copied
    // into the zeroed copy. Every field is valid zeroed except the two 1.0 callbacks, which the
    // 1.0 prefix (copied whole) sets; a zeroed `Option` of a function pointer is `None`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            host as *const u8,
            copy.as_mut_ptr() as *mut u8,
            lent.min(size_of::<HostCallbacks>()),
        );
        Some(copy.assume_init())
    }
}

/// Runs `f`, turning an error or a panic into a status reported to the host.
fn guarded(host: Option<&HostCallbacks>, f: impl FnOnce() -> Result<(), PluginError>) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Status::OK,
        Ok(Err(mut e)) => {
            // `status` is a public field: an error that says OK would read as a success (an
            // emitter's partial output put in place, exit 0, its message dropped).
            if e.status == Status::OK {
                e.status = Status::INTERNAL;
            }
            report(host, &e);
            e.status
        }
        Err(payload) => {
            let e = PluginError::new(
                Status::PANIC,
                format!("plugin panicked: {}", panic_message(&*payload)),
            );
            report(host, &e);
            Status::PANIC
        }
    }
}

unsafe extern "C" fn sniff_trampoline<F: Format>(head: *const u8, len: usize) -> u32 {
    // SAFETY: the host passes `len` readable bytes (or null) for this call.
    let head = unsafe { sniff_head(head, len) };
    catch_unwind(|| F::sniff(head).min(100)).unwrap_or(0)
}

/// ABI 1.2's sniffer: the same score, or [`Status::PANIC`] when `F::sniff` panicked.
unsafe extern "C" fn sniff_checked_trampoline<F: Format>(
    head: *const u8,
    len: usize,
    score: *mut u32,
) -> Status {
    // SAFETY: the host passes `len` readable bytes (or null) for this call.
    let head = unsafe { sniff_head(head, len) };
    let (value, status) = match catch_unwind(|| F::sniff(head).min(100)) {
        Ok(v) => (v, Status::OK),
        Err(_) => (0, Status::PANIC),
    };
    if !score.is_null() {
        // SAFETY: the host lends a writable `u32` for this call.
        unsafe { *score = value };
    }
    status
}

/// The `len` bytes at `head`, or nothing for a null pointer or zero length.
///
/// # Safety
/// `head`, when not null, must point at `len` readable bytes that outlive the returned slice.
unsafe fn sniff_head<'a>(head: *const u8, len: usize) -> &'a [u8] {
    if head.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `len` readable bytes at `head`.
        unsafe { std::slice::from_raw_parts(head, len) }
    }
}

unsafe extern "C" fn parse_trampoline<F: Format>(
    options: *const OptionValue,
    n_options: usize,
    input: *const InputStream,
    host: *const HostCallbacks,
    out: *mut ProfileExport,
) -> Status {
    // SAFETY: the host lends valid callbacks (or null) for this call.
    let host = unsafe { host_callbacks(host) };
    let host = host.as_ref();
    if input.is_null() || out.is_null() {
        return Status::INTERNAL;
    }
    guarded(host, || {
        // SAFETY: option values and the input stream are valid for this call (ABI contract).
        let (options, stream) = unsafe { (Options::from_abi(options, n_options), &*input) };
        // SAFETY: `whole` and `name`, when set, are readable for this call.
        let (whole, name) = unsafe {
            let w = (!stream.whole.is_null()).then(|| stream.whole.as_bytes());
            (w, stream.name.to_string_lossy())
        };
        let mut input = Input {
            source: match whole {
                Some(w) => InputSource::Slice(w),
                None => InputSource::Host(stream),
            },
            whole,
            size_hint: (stream.size_hint != u64::MAX).then_some(stream.size_hint),
            name,
            host,
            release_hook: None,
            released: 0,
        };
        let mut cx = Context::from_host(host);
        let profile = F::parse(&mut input, &options, &mut cx)?;
        // The host's view of each table takes its length from one column and checks the rest
        // against it: a shorter column, which safe code can build (the fields are public),
        // would be read past its end. The host validates everything else.
        profile
            .view()
            .check_column_lengths()
            .map_err(|e| PluginError::internal(format!("parse returned an {e}")))?;
        // SAFETY: `out` is a valid, writable export slot; the host takes ownership.
        unsafe { out.write(crate::view::export_profile(profile)) };
        Ok(())
    })
}

unsafe extern "C" fn emit_trampoline<F: Format>(
    options: *const OptionValue,
    n_options: usize,
    profile: *const ProfileView,
    output: *const OutputStream,
    host: *const HostCallbacks,
) -> Status {
    // SAFETY: the host lends valid callbacks (or null) for this call.
    let host = unsafe { host_callbacks(host) };
    let host = host.as_ref();
    if profile.is_null() || output.is_null() {
        return Status::INTERNAL;
    }
    guarded(host, || {
        // SAFETY: options, view and stream are valid for this call (ABI contract); the view's
        // columns are validated before use.
        let (options, view, stream) =
            unsafe { (Options::from_abi(options, n_options), &*profile, &*output) };
        // SAFETY: the host keeps the view's columns alive for this call.
        let p = unsafe { crate::view::profile_ref_from_view(view, crate::view::Check::Full) }
            .map_err(|e| PluginError::internal(format!("host passed a bad profile: {e}")))?;
        let mut out = Output {
            inner: BufWriter::with_capacity(EMIT_BUFFER, OutputSink::Host(stream)),
        };
        let mut cx = Context::from_host(host);
        F::emit(&p, &mut out, &options, &mut cx)?;
        out.flush()?;
        Ok(())
    })
}

/// ABI 1.5's option check: [`Format::check_parse_options`] or [`Format::check_emit_options`],
/// as `phase` says; an error is reported to the host like a call's.
unsafe extern "C" fn check_options_trampoline<F: Format>(
    options: *const OptionValue,
    n_options: usize,
    phase: u32,
    host: *const HostCallbacks,
) -> Status {
    // SAFETY: the host lends valid callbacks (or null) for this call.
    let host = unsafe { host_callbacks(host) };
    let host = host.as_ref();
    guarded(host, || {
        // SAFETY: option values are valid for this call (ABI contract).
        let options = unsafe { Options::from_abi(options, n_options) };
        match phase {
            abi::option_phase::PARSE => F::check_parse_options(&options),
            abi::option_phase::EMIT => F::check_emit_options(&options),
            _ => Err(PluginError::internal(format!(
                "option check for an unknown phase {phase}"
            ))),
        }
    })
}

/// The ABI descriptor of format `F` (used by [`export_plugin!`](crate::export_plugin)).
pub const fn format_desc<F: Format>() -> FormatDesc {
    let mut c = 0;
    if F::CAN_PARSE {
        c |= caps::PARSE;
    }
    if F::CAN_EMIT {
        c |= caps::EMIT;
    }
    if F::CAN_SNIFF {
        c |= caps::SNIFF;
    }
    if F::STREAMING_INPUT {
        c |= caps::STREAMING_INPUT;
    }
    if F::RELEASES_WHOLE_INPUT {
        c |= caps::RELEASES_WHOLE_INPUT;
    }
    FormatDesc {
        struct_size: size_of::<FormatDesc>() as u32,
        caps: c,
        id: StrRef::from_static(F::ID),
        description: StrRef::from_static(F::DESCRIPTION),
        extensions: StrRef::from_static(F::EXTENSIONS),
        options: F::OPTIONS.as_ptr(),
        n_options: F::OPTIONS.len(),
        sniff: if F::CAN_SNIFF {
            Some(sniff_trampoline::<F>)
        } else {
            None
        },
        parse: if F::CAN_PARSE {
            Some(parse_trampoline::<F> as abi::ParseFn)
        } else {
            None
        },
        emit: if F::CAN_EMIT {
            Some(emit_trampoline::<F> as abi::EmitFn)
        } else {
            None
        },
        sniff_checked: if F::CAN_SNIFF {
            Some(sniff_checked_trampoline::<F> as abi::SniffCheckedFn)
        } else {
            None
        },
        check_options: Some(check_options_trampoline::<F> as abi::CheckOptionsFn),
    }
}

/// Installs, once, a panic hook in the plugin's own std that stays quiet unless
/// `PROFCONV_PLUGIN_DEBUG` is set: the host reports the panic as an error instead. In a plugin
/// built with `panic = "abort"` nothing reports it (the process ends at once), so the hook says
/// which plugin panicked and why.
#[doc(hidden)]
pub fn install_quiet_panic_hook(plugin: &'static str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::env::var_os("PROFCONV_PLUGIN_DEBUG").is_some() {
                default(info);
            } else if cfg!(panic = "abort") {
                let message = panic_message(info.payload());
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let message = crate::text::quote_input(message.as_bytes(), 2000);
                say_abort_panic(&mut io::stderr(), plugin, &at, &message);
            }
        }));
    });
}

/// Writes the message of a panic in a plugin built with `panic = "abort"` to `w` in one write,
/// as profconv writes its own: runs side by side (`xargs -P`) share a stderr, and a message
/// written in pieces (`writeln!` to the unbuffered stderr makes a write per piece of the
/// format: seven here) was cut into by another run's.
fn say_abort_panic(w: &mut dyn Write, plugin: &str, at: &str, message: &str) {
    let line = format!(
        "profconv: error: plugin '{plugin}' panicked{at}: {message}; it was built with panic = \
         \"abort\", so profconv ends here (rebuild it with panic = \"unwind\")\n"
    );
    let _ = w.write_all(line.as_bytes());
}

/// Default bound on an output whose size can grow with the square of the stacks' depth (every
/// folded line and every speedscope sample holds its whole stack): 16 GiB. A trace that recursed
/// a million calls deep would take terabytes, and a 2 MB trace of 120 000 nested calls 49 GB
/// (hours of writing, then a full disk); real profiles stay far below (the benchmark's 10
/// M-event PVM trace makes 2.9 GB of folded stacks), and the readers of such files hold them in
/// memory (inferno about 1.5 times the file, flamegraph.pl 4.5 times): past 16 GiB they are
/// not drawn on common machines.
pub const MAX_OUTPUT_SIZE: u64 = 1 << 34;

/// [`MAX_OUTPUT_SIZE`] as an option's documented default (`OptionDesc::integer`).
pub const MAX_OUTPUT_SIZE_TEXT: &str = "17179869184";

/// The value column an emitter writes: the one named by `name` (the `-O value=NAME` option; an
/// empty name counts as unset), else the profile's first weight column, else its first column;
/// `None` when the profile has no value column. A name the profile does not have is a bad
/// option ([`unknown_value_type`]).
pub fn value_column(p: &ProfileRef<'_>, name: Option<&str>) -> Result<Option<usize>, PluginError> {
    match name.filter(|n| !n.is_empty()) {
        Some(name) => p
            .value_type_index(name)
            .map(Some)
            .ok_or_else(|| unknown_value_type(p, name)),
        None => Ok(p
            .default_weight()
            .or((!p.value_types.is_empty()).then_some(0))),
    }
}

/// [`value_column`] for an emitter that writes one value column. Of a differential profile
/// (`profconv diff`: metadata `diff` = [`DIFF_COLUMNS`](crate::ir::diff::DIFF_COLUMNS)) with no
/// column named, that is the `after` column (the profile as it is now, whose shape the
/// differential flame graph draws), with a warning that `before` is left out. A `Count` column
/// is warned about as [`warn_if_counts`] says (for emitters that show totals).
pub fn one_value_column(
    p: &ProfileRef<'_>,
    name: Option<&str>,
    cx: &mut Context<'_>,
) -> Result<Option<usize>, PluginError> {
    let unnamed = name.is_none_or(str::is_empty);
    if unnamed && p.meta("diff") == Some(crate::ir::diff::DIFF_COLUMNS) {
        if let Some(after) = p.value_type_index("after") {
            cx.warn(
                "a differential profile (profconv diff) has two value types and this format shows one: writing `after` (`-O value=before` writes the other)",
            );
            return Ok(Some(after));
        }
    }
    let col = value_column(p, name)?;
    warn_if_counts(p, col, cx);
    Ok(col)
}

/// Warns when `col` is a `Count` column (`calls`, `exits`…: events of each call node itself,
/// never summed into its parent): an emitter that shows totals (a flame graph's widths, the
/// Firefox Profiler's and speedscope's running time) adds a node's descendants into it, so
/// those totals count the events at or below each node, not the node's own.
pub fn warn_if_counts(p: &ProfileRef<'_>, col: Option<usize>, cx: &mut Context<'_>) {
    if let Some(c) = col.filter(|&c| p.value_types[c].kind == profconv_ir::ValueKind::Count) {
        let name = p.value_type_name(c);
        cx.warn(&format!(
            "`{name}` counts events of each call node, not a cost: the totals shown here add up the {name} of every node below each one"
        ));
    }
}

/// `option value=NAME: no value type 'NAME' in this profile (it has: …)`, a bad option.
pub fn unknown_value_type(p: &ProfileRef<'_>, name: &str) -> PluginError {
    let known: Vec<&str> = (0..p.value_types.len())
        .map(|i| p.value_type_name(i))
        .collect();
    let name = crate::quote_input(name.as_bytes(), 40);
    // A differential profile's columns are the two sides: the value type compared is chosen
    // when the two profiles are combined.
    let hint = match p.meta("diff") == Some(profconv_ir::diff::DIFF_COLUMNS) {
        true => "; with `profconv diff`, --value NAME chooses the value type compared",
        false => "",
    };
    PluginError::bad_option(format!(
        "option value={name}: no value type '{name}' in this profile (it has: {}){hint}",
        if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        }
    ))
}

/// `18 bytes`, `1.5 TB (1500003500000 bytes)`: a size for messages.
pub fn human_bytes(n: u128) -> String {
    let units = ["bytes", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = n as f64;
    let mut u = 0;
    // 999.95 and up is printed `1000.0` with one decimal: the next unit's `1.0` then.
    while v >= 999.95 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {} ({n} bytes)", units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    /// A host of ABI 1.2 or older lends 32 bytes of callbacks: the plugin reads no further, so
    /// it sees no `release_input` (and `Input::release` does nothing); a 1.3 host's is seen.
    #[test]
    fn callbacks_past_the_host_s_struct_size_are_not_read() {
        unsafe extern "C" fn report(_: *mut c_void, _: Status, _: StrRef, _: u64, _: u64, _: u64) {}
        unsafe extern "C" fn log(_: *mut c_void, _: u32, _: StrRef) {}
        unsafe extern "C" fn release(ctx: *mut c_void, upto: u64) {
            // SAFETY: the test passes a `u64` as the context.
            unsafe { *(ctx as *mut u64) = upto };
        }
        let mut released = 0u64;
        let mut lent = HostCallbacks {
            struct_size: abi::min_size::HOST_CALLBACKS as u32,
            threads: 1,
            ctx: &mut released as *mut u64 as *mut c_void,
            report_error: report,
            log,
            release_input: Some(release),
        };
        // SAFETY: `lent` is valid for the call.
        let old = unsafe { host_callbacks(&lent) }.unwrap();
        assert!(old.release_input.is_none());
        let data = [0u8; 8];
        let mut input = Input::from_slice(&data);
        input.host = Some(&old);
        input.release(5);
        assert_eq!(released, 0);
        lent.struct_size = size_of::<HostCallbacks>() as u32;
        // SAFETY: as above.
        let new = unsafe { host_callbacks(&lent) }.unwrap();
        input.host = Some(&new);
        input.release(5);
        assert_eq!(released, 5);
    }

    /// An error whose status was set to OK is still a failure, reported with its message: it
    /// made an emitter's partial output the run's result, with exit 0 and the message dropped.
    #[test]
    fn an_error_with_status_ok_is_not_a_success() {
        unsafe extern "C" fn report(
            ctx: *mut c_void,
            code: Status,
            m: StrRef,
            _: u64,
            _: u64,
            _: u64,
        ) {
            // SAFETY: the test passes a `(Status, String)` as the context; `m` is valid here.
            unsafe { *(ctx as *mut (Status, String)) = (code, m.to_string_lossy()) };
        }
        unsafe extern "C" fn log(_: *mut c_void, _: u32, _: StrRef) {}
        let mut got = (Status::OK, String::new());
        let host = HostCallbacks {
            struct_size: size_of::<HostCallbacks>() as u32,
            threads: 1,
            ctx: &mut got as *mut (Status, String) as *mut c_void,
            report_error: report,
            log,
            release_input: None,
        };
        let status = guarded(Some(&host), || {
            let mut e = PluginError::invalid_input("half written");
            e.status = Status::OK;
            Err(e)
        });
        assert_eq!(status, Status::INTERNAL);
        assert_eq!(got, (Status::INTERNAL, "half written".to_string()));
    }

    /// Text that is not UTF-8, as std's `read_to_string` reports it, is malformed input; other
    /// I/O errors stay I/O errors.
    #[test]
    fn invalid_data_is_malformed_input() {
        let mut text = String::new();
        let e = std::io::Read::read_to_string(&mut &b"a\xffb"[..], &mut text).unwrap_err();
        assert_eq!(PluginError::from(e).status, Status::INVALID_INPUT);
        let e = io::Error::new(io::ErrorKind::UnexpectedEof, "cut");
        assert_eq!(PluginError::from(e).status, Status::IO);
    }

    /// `-O value=NAME` picks a column by name; unset or empty, the first weight, else the first
    /// column, else none; an unknown name is a bad option listing the columns.
    #[test]
    fn value_column_by_name_or_default() {
        use profconv_ir::{ProfileBuilder, ValueKind};
        let mut b = ProfileBuilder::new();
        b.add_value_type("calls", "count", ValueKind::Count);
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let p = b.finish();
        let v = p.view();
        assert_eq!(value_column(&v, Some("calls")), Ok(Some(0)));
        assert_eq!(value_column(&v, None), Ok(Some(1)));
        assert_eq!(value_column(&v, Some("")), Ok(Some(1)));
        let e = value_column(&v, Some("time")).unwrap_err();
        assert_eq!(e.status, Status::BAD_OPTIONS);
        assert_eq!(
            e.message,
            "option value=time: no value type 'time' in this profile (it has: calls, ticks)"
        );
        let mut b = ProfileBuilder::new();
        b.add_value_type("calls", "count", ValueKind::Count);
        assert_eq!(value_column(&b.finish().view(), None), Ok(Some(0)));
        let empty = ProfileBuilder::new().finish();
        assert_eq!(value_column(&empty.view(), None), Ok(None));
        assert!(
            value_column(&empty.view(), Some("x"))
                .unwrap_err()
                .message
                .ends_with("(it has: none)")
        );
        // A differential profile (`profconv diff`) points at `--value`, which chooses the
        // value type compared (the message named only the two sides).
        let mut b = ProfileBuilder::new();
        b.add_value_type("before", "count", ValueKind::Weight);
        b.add_value_type("after", "count", ValueKind::Weight);
        b.add_meta("diff", profconv_ir::diff::DIFF_COLUMNS);
        assert_eq!(
            value_column(&b.finish().view(), Some("samples"))
                .unwrap_err()
                .message,
            "option value=samples: no value type 'samples' in this profile (it has: before, \
             after); with `profconv diff`, --value NAME chooses the value type compared"
        );
    }

    #[test]
    fn a_count_column_shown_as_totals_is_warned_about() {
        use profconv_ir::{ProfileBuilder, ValueKind};
        let mut b = ProfileBuilder::new();
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        b.add_value_type("calls", "calls", ValueKind::Count);
        let p = b.finish();
        let warnings = |name: Option<&str>| {
            let mut messages = Vec::new();
            let mut sink = |_: u32, m: &str| messages.push(m.to_string());
            let col = one_value_column(&p.view(), name, &mut Context::with_sink(&mut sink));
            (col, messages)
        };
        assert_eq!(warnings(None), (Ok(Some(0)), vec![]));
        assert_eq!(warnings(Some("ticks")), (Ok(Some(0)), vec![]));
        let (col, messages) = warnings(Some("calls"));
        assert_eq!(col, Ok(Some(1)));
        assert_eq!(messages.len(), 1);
        assert!(messages[0].starts_with("`calls` counts events of each call node"));
    }

    #[test]
    fn one_value_column_of_a_differential_profile_is_after_with_a_warning() {
        use profconv_ir::{ProfileBuilder, ValueKind, diff::DIFF_COLUMNS};
        let mut b = ProfileBuilder::new();
        b.add_value_type("before", "count", ValueKind::Weight);
        b.add_value_type("after", "count", ValueKind::Weight);
        b.add_meta("diff", DIFF_COLUMNS);
        let p = b.finish();
        let mut messages = Vec::new();
        let mut sink = |_: u32, m: &str| messages.push(m.to_string());
        let mut cx = Context::with_sink(&mut sink);
        assert_eq!(one_value_column(&p.view(), None, &mut cx), Ok(Some(1)));
        assert_eq!(one_value_column(&p.view(), Some(""), &mut cx), Ok(Some(1)));
        // Named: as asked, and nothing to warn about.
        assert_eq!(
            one_value_column(&p.view(), Some("before"), &mut cx),
            Ok(Some(0))
        );
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("writing `after`"), "{messages:?}");
        // Not differential: the first weight, silently.
        let mut b = ProfileBuilder::new();
        b.add_value_type("before", "count", ValueKind::Weight);
        b.add_value_type("after", "count", ValueKind::Weight);
        let p = b.finish();
        let mut cx = Context::silent();
        assert_eq!(one_value_column(&p.view(), None, &mut cx), Ok(Some(0)));
    }

    #[test]
    fn output_size_bound_text_and_option() {
        assert_eq!(MAX_OUTPUT_SIZE_TEXT, MAX_OUTPUT_SIZE.to_string());
        let opts = |v: &str| Options::new(vec![("max-size".into(), Some(v.into()))]);
        let none = Options::new(Vec::new());
        assert_eq!(
            none.max_output_size("max-size").unwrap(),
            Some(MAX_OUTPUT_SIZE)
        );
        assert_eq!(opts("0").max_output_size("max-size").unwrap(), None);
        assert_eq!(opts("123").max_output_size("max-size").unwrap(), Some(123));
        for bad in ["", "-3", "1e9", "12 kB"] {
            let e = opts(bad).max_output_size("max-size").unwrap_err();
            assert_eq!(e.status, Status::BAD_OPTIONS, "{bad}");
            assert!(
                e.message.contains("expected a whole number"),
                "{}",
                e.message
            );
        }
        assert_eq!(human_bytes(18), "18 bytes");
        assert_eq!(human_bytes(999), "999 bytes");
        assert_eq!(
            human_bytes(1_500_003_500_000),
            "1.5 TB (1500003500000 bytes)"
        );
    }

    /// The message of a panic in a plugin built with `panic = "abort"` is one write, whole:
    /// `writeln!` to stderr wrote it in seven pieces, which a parallel run's message cut into.
    #[test]
    fn an_abort_panic_message_is_one_write() {
        struct Writes(Vec<Vec<u8>>);
        impl Write for Writes {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0.push(buf.to_vec());
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = Writes(Vec::new());
        say_abort_panic(&mut w, "x", " at src/lib.rs:3", "boom");
        assert_eq!(w.0.len(), 1, "{:?}", w.0);
        assert_eq!(
            String::from_utf8_lossy(&w.0[0]),
            "profconv: error: plugin 'x' panicked at src/lib.rs:3: boom; it was built with \
             panic = \"abort\", so profconv ends here (rebuild it with panic = \"unwind\")\n"
        );
    }

    /// A size that rounds up to 1000 of a unit is said in the next one (it was `1000.0 kB`).
    #[test]
    fn human_bytes_rounding_to_1000_takes_the_next_unit() {
        assert_eq!(human_bytes(999_993), "1.0 MB (999993 bytes)");
        assert_eq!(human_bytes(999_949), "999.9 kB (999949 bytes)");
        assert_eq!(human_bytes(999_999_999), "1.0 GB (999999999 bytes)");
        assert_eq!(human_bytes(1_000_000), "1.0 MB (1000000 bytes)");
    }

    #[test]
    fn read_some_retries_an_interrupted_read_and_returns_other_errors() {
        /// Interrupted `n` times, then one byte.
        struct Interrupted(u32);
        impl io::Read for Interrupted {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0 > 0 {
                    self.0 -= 1;
                    return Err(io::ErrorKind::Interrupted.into());
                }
                buf[0] = b'x';
                Ok(1)
            }
        }
        struct Broken;
        impl io::Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("the disk went away"))
            }
        }
        let mut buf = [0u8; 4];
        let mut input = Interrupted(3);
        assert_eq!(read_some(&mut input, &mut buf).unwrap(), 1);
        assert_eq!((buf[0], input.0), (b'x', 0));
        let e = read_some(&mut Broken, &mut buf).unwrap_err();
        assert_eq!(e.to_string(), "the disk went away");
    }
}
