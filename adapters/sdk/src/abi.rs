//! The C ABI between the profconv host and its plugins (ABI 1.5).
//!
//! Everything here is `#[repr(C)]`, integers, raw pointers and `extern "C"` function pointers:
//! nothing of Rust's unstable layout crosses the boundary. The rules:
//!
//! * One exported symbol, [`ENTRY_SYMBOL`], of type [`EntryFn`]. It always returns the plugin's
//!   [`PluginHeader`], whose layout never changes, so the host can name a plugin built for
//!   another ABI before refusing it.
//! * Within a major version, structs only grow at the end; `struct_size`/`descriptor_size`
//!   fields tell the reader which fields exist. Removing or retyping anything bumps the major.
//! * Anything passed into a call is borrowed for that call only. Ownership moves only through
//!   [`ProfileExport`], whose producer frees it through its `release` callback (the Arrow C data
//!   interface convention): each side frees what it allocated.
//! * Every plugin entry point catches panics; a panic becomes [`Status::PANIC`].
//! * Plugin libraries are never unloaded.

use std::ffi::c_void;

/// Identifies a profconv plugin header.
pub const MAGIC: [u8; 8] = *b"PRFCNVPL";
/// ABI major version: a plugin with another major is refused.
pub const ABI_MAJOR: u32 = 1;
/// ABI minor version: fields appended (or reserved ones given a meaning) within the major.
/// 1.1: [`HostCallbacks::threads`] (was a reserved zero in 1.0).
/// 1.2: [`FormatDesc::sniff_checked`] (appended), a sniffer that reports its panics.
/// 1.3: [`HostCallbacks::release_input`] (appended): a parser says which bytes of a whole input
/// it is done with, so a host that mapped the file can drop them from memory; the capability
/// [`caps::RELEASES_WHOLE_INPUT`] says a streaming parser does so.
/// 1.4: [`OptionDesc::phases`] (was a reserved zero): an option that applies only when the
/// format reads, or only when it writes ([`option_phase`]).
/// 1.5: [`FormatDesc::check_options`] (appended): the format checks its options' values before
/// the host reads any input, so `-O width=0` is refused at once, not after a long parse.
pub const ABI_MINOR: u32 = 5;
/// Name of the one symbol a plugin library exports.
pub const ENTRY_SYMBOL: &str = "profconv_plugin_entry";

/// The exported entry point. Must return a pointer to a `'static` [`PluginHeader`] that starts a
/// [`PluginDescriptor`], whatever `host` says.
pub type EntryFn = unsafe extern "C" fn(host: *const HostInfo) -> *const PluginHeader;

/// A borrowed UTF-8 string (not NUL-terminated). `ptr` may be null only when `len` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StrRef {
    /// First byte.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl StrRef {
    /// A reference to a static string, usable in `const` and `static` items.
    pub const fn from_static(s: &'static str) -> StrRef {
        StrRef {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// A reference to `s`, valid while `s` is.
    pub fn new(s: &str) -> StrRef {
        StrRef {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The empty string, with a null pointer: used to mean "absent" where the ABI says so.
    pub const fn null() -> StrRef {
        StrRef {
            ptr: std::ptr::null(),
            len: 0,
        }
    }

    /// True for [`StrRef::null`].
    pub fn is_null(&self) -> bool {
        self.ptr.is_null()
    }

    /// The bytes, or an empty slice for a null reference.
    ///
    /// # Safety
    /// `ptr` must point at `len` readable bytes that outlive `'a`.
    pub unsafe fn as_bytes<'a>(&self) -> &'a [u8] {
        if self.ptr.is_null() || self.len == 0 {
            return &[];
        }
        // SAFETY: the caller guarantees `len` readable bytes at `ptr` for `'a`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The string, with invalid UTF-8 replaced (text from the other side is never trusted).
    ///
    /// # Safety
    /// As [`StrRef::as_bytes`].
    pub unsafe fn to_string_lossy(&self) -> String {
        // SAFETY: forwarded to the caller.
        String::from_utf8_lossy(unsafe { self.as_bytes() }).into_owned()
    }
}

// SAFETY: a StrRef in a static points at immutable static data; sharing it between threads only
// shares reads.
unsafe impl Sync for StrRef {}
// SAFETY: as above; StrRef carries no ownership.
unsafe impl Send for StrRef {}

/// Result code of every ABI call.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub u32);

impl Status {
    /// Success.
    pub const OK: Status = Status(0);
    /// The input is malformed.
    pub const INVALID_INPUT: Status = Status(1);
    /// The operation or input variant is not supported.
    pub const UNSUPPORTED: Status = Status(2);
    /// Reading or writing failed.
    pub const IO: Status = Status(3);
    /// An option is unknown or has a bad value.
    pub const BAD_OPTIONS: Status = Status(4);
    /// The plugin panicked (and caught it).
    pub const PANIC: Status = Status(5);
    /// A bug in the plugin or host.
    pub const INTERNAL: Status = Status(6);
    /// The host asked to stop.
    pub const CANCELLED: Status = Status(7);

    /// A short upper-case name for messages.
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "OK",
            1 => "INVALID_INPUT",
            2 => "UNSUPPORTED",
            3 => "IO",
            4 => "BAD_OPTIONS",
            5 => "PANIC",
            6 => "INTERNAL",
            7 => "CANCELLED",
            _ => "UNKNOWN",
        }
    }
}

/// What the host tells the plugin about itself when calling the entry point.
#[repr(C)]
#[derive(Debug)]
pub struct HostInfo {
    /// The host's ABI major.
    pub abi_major: u32,
    /// The host's ABI minor.
    pub abi_minor: u32,
    /// The host's version.
    pub host_version: StrRef,
}

/// The first bytes of every plugin descriptor. **Frozen across all ABI majors.**
#[repr(C)]
#[derive(Debug)]
pub struct PluginHeader {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// ABI major the plugin was built for.
    pub abi_major: u32,
    /// ABI minor the plugin was built for.
    pub abi_minor: u32,
    /// Size in bytes of the whole descriptor this header starts.
    pub descriptor_size: u32,
    /// 1 when the plugin was built with `panic = "unwind"` (its panics can be caught).
    pub panic_unwind: u32,
    /// Plugin name.
    pub plugin_name: StrRef,
    /// Plugin version.
    pub plugin_version: StrRef,
    /// Version of the SDK the plugin was built with.
    pub sdk_version: StrRef,
}

/// The ABI-1 descriptor: the header, then the formats. Append-only within major 1.
#[repr(C)]
#[derive(Debug)]
pub struct PluginDescriptor {
    /// The frozen header.
    pub header: PluginHeader,
    /// `n_formats` format descriptors.
    pub formats: *const FormatDesc,
    /// Number of formats.
    pub n_formats: usize,
}

// SAFETY: descriptors are immutable statics of the plugin; shared reads only.
unsafe impl Sync for PluginDescriptor {}

/// Capability bits of a format.
pub mod caps {
    /// The format can be read into a profile.
    pub const PARSE: u32 = 1;
    /// A profile can be written in the format.
    pub const EMIT: u32 = 2;
    /// The format has a content sniffer.
    pub const SNIFF: u32 = 4;
    /// The parser reads its input as a stream; without it the host supplies the whole input.
    pub const STREAMING_INPUT: u32 = 8;
    /// ABI 1.3: a streaming parser that also reads a whole input in place, in order, and
    /// releases it behind it ([`HostCallbacks::release_input`](super::HostCallbacks::release_input)): the host may map a file and
    /// pass it as [`InputStream::whole`](super::InputStream::whole) instead of streaming it. Without this bit a streaming
    /// parser is always streamed to.
    pub const RELEASES_WHOLE_INPUT: u32 = 16;
}

/// Type of an option's value.
pub mod option_kind {
    /// Present or absent, no value (`-O flamechart`).
    pub const FLAG: u32 = 0;
    /// Any text.
    pub const STRING: u32 = 1;
    /// A signed integer.
    pub const INTEGER: u32 = 2;
    /// A decimal number.
    pub const NUMBER: u32 = 3;
}

/// When an option applies (ABI 1.4; a reserved zero before, which is [`option_phase::ANY`]).
pub mod option_phase {
    /// Whenever the format is used: the behaviour of plugins built before ABI 1.4.
    pub const ANY: u32 = 0;
    /// Only when the format reads (parse): the host refuses it for a format that writes.
    pub const PARSE: u32 = 1;
    /// Only when the format writes (emit): the host refuses it for a format that reads.
    pub const EMIT: u32 = 2;
}

/// An option a format declares (`-O KEY[=VALUE]`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OptionDesc {
    /// The key users type.
    pub key: StrRef,
    /// One of [`option_kind`].
    pub kind: u32,
    /// ABI 1.4: when it applies, one of [`option_phase`] (zero, [`option_phase::ANY`], in
    /// plugins built for 1.0–1.3, where this was a reserved zero).
    pub phases: u32,
    /// Default value as text (empty if none).
    pub default: StrRef,
    /// One-line help.
    pub help: StrRef,
}

// SAFETY: option descriptors are immutable statics.
unsafe impl Sync for OptionDesc {}

impl OptionDesc {
    const fn new(key: &'static str, kind: u32, default: &'static str, help: &'static str) -> Self {
        OptionDesc {
            key: StrRef::from_static(key),
            kind,
            phases: option_phase::ANY,
            default: StrRef::from_static(default),
            help: StrRef::from_static(help),
        }
    }
    /// A flag option.
    pub const fn flag(key: &'static str, help: &'static str) -> Self {
        Self::new(key, option_kind::FLAG, "", help)
    }
    /// A text option.
    pub const fn string(key: &'static str, default: &'static str, help: &'static str) -> Self {
        Self::new(key, option_kind::STRING, default, help)
    }
    /// An integer option.
    pub const fn integer(key: &'static str, default: &'static str, help: &'static str) -> Self {
        Self::new(key, option_kind::INTEGER, default, help)
    }
    /// A number option.
    pub const fn number(key: &'static str, default: &'static str, help: &'static str) -> Self {
        Self::new(key, option_kind::NUMBER, default, help)
    }
    /// The same option, applying only when the format reads: the host refuses it (a usage
    /// error) where the format writes, instead of passing an option that would do nothing.
    pub const fn parse_only(mut self) -> Self {
        self.phases = option_phase::PARSE;
        self
    }
    /// The same option, applying only when the format writes.
    pub const fn emit_only(mut self) -> Self {
        self.phases = option_phase::EMIT;
        self
    }
}

/// An option value passed to a call; `value` is null for a flag given without `=`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OptionValue {
    /// The key.
    pub key: StrRef,
    /// The value, or null.
    pub value: StrRef,
}

/// Sniffer: how likely (0..=100) are these leading bytes this format.
pub type SniffFn = unsafe extern "C" fn(head: *const u8, len: usize) -> u32;

/// Sniffer that reports panics (ABI 1.2): writes the confidence 0..=100 that `head` is this
/// format to `*score` and returns [`Status::OK`], or returns [`Status::PANIC`] (with `*score`
/// 0) when the format's sniffer panicked.
pub type SniffCheckedFn =
    unsafe extern "C" fn(head: *const u8, len: usize, score: *mut u32) -> Status;

/// Option check (ABI 1.5): whether `options` are values the format takes when it reads
/// (`phase` [`option_phase::PARSE`]) or writes ([`option_phase::EMIT`]), before any input is
/// read. Returns [`Status::OK`], or [`Status::BAD_OPTIONS`] with the message reported through
/// `host` as a parse or emit call would. Only what the options alone decide is checked (a
/// `value=NAME` naming a column the profile lacks is found by the call itself).
pub type CheckOptionsFn = unsafe extern "C" fn(
    options: *const OptionValue,
    n_options: usize,
    phase: u32,
    host: *const HostCallbacks,
) -> Status;

/// Parser: reads `input`, fills `out` on success.
pub type ParseFn = unsafe extern "C" fn(
    options: *const OptionValue,
    n_options: usize,
    input: *const InputStream,
    host: *const HostCallbacks,
    out: *mut ProfileExport,
) -> Status;
/// Emitter: writes `profile` to `output`.
pub type EmitFn = unsafe extern "C" fn(
    options: *const OptionValue,
    n_options: usize,
    profile: *const ProfileView,
    output: *const OutputStream,
    host: *const HostCallbacks,
) -> Status;

/// One format of a plugin: a tiny vtable.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FormatDesc {
    /// `size_of::<FormatDesc>()` as the plugin knows it.
    pub struct_size: u32,
    /// Bit set of [`caps`].
    pub caps: u32,
    /// Format id users type (`folded`).
    pub id: StrRef,
    /// One-line description.
    pub description: StrRef,
    /// Comma-separated file-name suffixes without the dot (`folded,collapsed`).
    pub extensions: StrRef,
    /// Declared options.
    pub options: *const OptionDesc,
    /// Number of options.
    pub n_options: usize,
    /// Sniffer, if [`caps::SNIFF`].
    pub sniff: Option<SniffFn>,
    /// Parser, if [`caps::PARSE`].
    pub parse: Option<ParseFn>,
    /// Emitter, if [`caps::EMIT`].
    pub emit: Option<EmitFn>,
    /// ABI 1.2: the sniffer again, reporting a panic instead of hiding it in a score of 0. A
    /// host reads it only when `struct_size` covers it, and then calls it instead of `sniff`.
    pub sniff_checked: Option<SniffCheckedFn>,
    /// ABI 1.5: checks option values before the input is read (null: the format checks them
    /// only in its calls). A host reads it only when `struct_size` covers it.
    pub check_options: Option<CheckOptionsFn>,
}

// SAFETY: format descriptors are immutable statics.
unsafe impl Sync for FormatDesc {}
// SAFETY: a copy only points at the plugin's immutable statics (strings, options, functions),
// which live as long as the process (libraries are never unloaded).
unsafe impl Send for FormatDesc {}

/// Host-owned input, pulled by the parser.
#[repr(C)]
#[derive(Debug)]
pub struct InputStream {
    /// Host context.
    pub ctx: *mut c_void,
    /// Reads up to `cap` bytes into `buf`, stores the count in `n_read` (0 = end of input).
    pub read: unsafe extern "C" fn(
        ctx: *mut c_void,
        buf: *mut u8,
        cap: usize,
        n_read: *mut usize,
    ) -> Status,
    /// The whole input when the host has it in memory (null otherwise).
    pub whole: StrRef,
    /// Input size if known, else `u64::MAX`.
    pub size_hint: u64,
    /// A name for the input (file path or `<stdin>`), for messages.
    pub name: StrRef,
}

/// Host-owned output, pushed by the emitter.
#[repr(C)]
#[derive(Debug)]
pub struct OutputStream {
    /// Host context.
    pub ctx: *mut c_void,
    /// Writes all of `buf`.
    pub write: unsafe extern "C" fn(ctx: *mut c_void, buf: *const u8, len: usize) -> Status,
}

/// Log levels for [`HostCallbacks::log`].
pub mod log_level {
    /// Something the user should know (skipped lines, lossy names).
    pub const WARN: u32 = 1;
    /// Progress information.
    pub const INFO: u32 = 2;
}

/// Callbacks the host lends a plugin during a call. The host copies what it receives.
/// Callbacks are called from the thread that made the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HostCallbacks {
    /// `size_of::<HostCallbacks>()` as the host knows it.
    pub struct_size: u32,
    /// Worker threads the plugin may use for this call (ABI 1.1; a 1.0 host leaves it 0, which
    /// means one: the plugin then runs on the calling thread only).
    pub threads: u32,
    /// Host context.
    pub ctx: *mut c_void,
    /// Reports an error; offsets and positions are `u64::MAX` when unknown.
    pub report_error: unsafe extern "C" fn(
        ctx: *mut c_void,
        code: Status,
        message: StrRef,
        byte_offset: u64,
        line: u64,
        column: u64,
    ),
    /// Logs a message.
    pub log: unsafe extern "C" fn(ctx: *mut c_void, level: u32, message: StrRef),
    /// ABI 1.3, may be null: the parser will not read the bytes of [`InputStream::whole`]
    /// before offset `upto` again soon. The host may drop them from memory (the pages of a
    /// mapped file); reading them again stays valid and gives the same bytes, only slower.
    pub release_input: Option<unsafe extern "C" fn(ctx: *mut c_void, upto: u64)>,
}

/// A profile as borrowed columns (see `profconv_ir::Profile` for the meaning of each).
///
/// Index columns are `u32` with `u32::MAX` for "none"; a pointer may be dangling or null when
/// its count is 0; `sample_time` is null when samples have no time.
#[repr(C)]
#[derive(Debug)]
pub struct ProfileView {
    /// `size_of::<ProfileView>()` as the producer knows it.
    pub struct_size: u32,
    /// Profile flags (`profconv_ir::flags`).
    pub flags: u32,
    /// Number of strings.
    pub n_strings: usize,
    /// `n_strings + 1` offsets into the blob.
    pub str_offsets: *const u64,
    /// UTF-8 blob.
    pub str_blob: *const u8,
    /// Blob length.
    pub str_blob_len: usize,
    /// Number of funcs.
    pub n_funcs: usize,
    /// Func names.
    pub func_name: *const u32,
    /// Func files.
    pub func_file: *const u32,
    /// Func lines.
    pub func_line: *const u32,
    /// Func resources.
    pub func_resource: *const u32,
    /// Number of frames.
    pub n_frames: usize,
    /// Frame funcs.
    pub frame_func: *const u32,
    /// Frame addresses.
    pub frame_address: *const u64,
    /// Frame lines.
    pub frame_line: *const u32,
    /// Number of stacks.
    pub n_stacks: usize,
    /// Stack prefixes.
    pub stack_prefix: *const u32,
    /// Stack frames.
    pub stack_frame: *const u32,
    /// Number of value types.
    pub n_value_types: usize,
    /// Value type names.
    pub value_type_name: *const u32,
    /// Value type units.
    pub value_type_unit: *const u32,
    /// Value type kinds (`profconv_ir::ValueKind`).
    pub value_type_kind: *const u32,
    /// Value type fixed-point decimals.
    pub value_type_decimals: *const u32,
    /// Number of samples.
    pub n_samples: usize,
    /// Sample stacks.
    pub sample_stack: *const u32,
    /// Sample times, or null.
    pub sample_time: *const i64,
    /// `n_value_types` pointers to columns of `n_samples` values.
    pub sample_values: *const *const i64,
    /// Number of metadata pairs.
    pub n_meta: usize,
    /// Metadata keys.
    pub meta_key: *const u32,
    /// Metadata values.
    pub meta_value: *const u32,
    /// Number of threads.
    pub n_threads: usize,
    /// Thread names.
    pub thread_name: *const u32,
    /// Sample threads, or null when the profile has no threads.
    pub sample_thread: *const u32,
}

/// An owned profile moving from a plugin to the host. The consumer calls `release` exactly once.
#[repr(C)]
#[derive(Debug)]
pub struct ProfileExport {
    /// The columns, valid until `release`.
    pub view: ProfileView,
    /// Frees the columns; set to `None` once called.
    pub release: Option<unsafe extern "C" fn(export: *mut ProfileExport)>,
    /// The producer's bookkeeping.
    pub private_data: *mut c_void,
}

/// Sizes of the ABI-1.0 structs: the smallest a reader of major 1 ever accepts. A later minor
/// may append fields, so readers compare against these, never against their own `size_of`.
pub mod min_size {
    /// `PluginDescriptor` in ABI 1.0.
    pub const PLUGIN_DESCRIPTOR: usize = 88;
    /// `FormatDesc` in ABI 1.0.
    pub const FORMAT_DESC: usize = 96;
    /// `HostCallbacks` in ABI 1.0.
    pub const HOST_CALLBACKS: usize = 32;
    /// `ProfileView` in ABI 1.0.
    pub const PROFILE_VIEW: usize = 256;
}

// Layout guards: an accidental change to the frozen header or the ABI-1 structs fails to compile.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<StrRef>() == 16);
    assert!(size_of::<PluginHeader>() == 72);
    assert!(offset_of!(PluginHeader, abi_major) == 8);
    assert!(offset_of!(PluginHeader, descriptor_size) == 16);
    assert!(offset_of!(PluginHeader, plugin_name) == 24);
    assert!(size_of::<PluginDescriptor>() == min_size::PLUGIN_DESCRIPTOR);
    assert!(offset_of!(FormatDesc, sniff_checked) == min_size::FORMAT_DESC);
    assert!(offset_of!(FormatDesc, check_options) == min_size::FORMAT_DESC + 8);
    assert!(size_of::<FormatDesc>() == min_size::FORMAT_DESC + 16);
    assert!(offset_of!(HostCallbacks, release_input) == min_size::HOST_CALLBACKS);
    assert!(size_of::<HostCallbacks>() == min_size::HOST_CALLBACKS + 8);
    assert!(size_of::<ProfileView>() == min_size::PROFILE_VIEW);
};
