//! The host side: loading plugin libraries, the handshake, and safe calls into formats.
//!
//! Libraries are never unloaded (thread-local destructors and `dlclose` do not mix; see
//! `docs/plugin-abi.md`). Every call lends the plugin host callbacks whose bodies catch panics,
//! and every profile a plugin returns is validated before anyone reads it.

use crate::abi::{
    self, ABI_MAJOR, ABI_MINOR, ENTRY_SYMBOL, EntryFn, FormatDesc, HostCallbacks, HostInfo,
    InputStream, MAGIC, OptionDesc, OptionValue, OutputStream, PluginDescriptor, PluginHeader,
    ProfileExport, Status, StrRef, caps,
};
use crate::view::{Check, ViewStorage, profile_ref_from_view};
use profconv_ir::ProfileRef;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::fmt;
use std::io::{self, Read, Seek, Write};
use std::mem::size_of;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod replace;
pub use replace::{
    Unreplaceable, access_acl, acl_group_bits, replacing_forbidden_by, set_access_acl,
};

/// The largest `FormatDesc` a plugin may declare (far above any version's).
const MAX_FORMAT_DESC: usize = 4096;

/// Where a plugin came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginOrigin {
    /// A shared library file.
    File(PathBuf),
    /// Linked into the host (tests).
    Static(String),
}

impl fmt::Display for PluginOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginOrigin::File(p) => write!(f, "{}", shown(p)),
            PluginOrigin::Static(s) => write!(f, "<static {s}>"),
        }
    }
}

/// A path as messages show it, control characters escaped ([`crate::escape_controls`]).
fn shown(p: &Path) -> String {
    crate::escape_controls(&p.display().to_string()).into_owned()
}

/// A plugin's identity, from its header.
#[derive(Clone, Debug)]
pub struct PluginInfo {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// SDK version it was built with.
    pub sdk_version: String,
    /// ABI major.
    pub abi_major: u32,
    /// ABI minor.
    pub abi_minor: u32,
    /// Built with `panic = "unwind"`.
    pub panic_unwind: bool,
    /// Where it was loaded from.
    pub origin: PluginOrigin,
}

/// Why a library could not be used as a plugin.
#[derive(Debug)]
pub enum LoadError {
    /// The library could not be opened.
    Open(PathBuf, String),
    /// No `profconv_plugin_entry` symbol: not a profconv plugin.
    NoEntry(PathBuf),
    /// The entry returned something without the profconv magic.
    BadMagic(PluginOrigin),
    /// Built for another ABI major (any minor of this major loads: a newer one's fields are
    /// ignored).
    AbiMismatch(Box<PluginInfo>),
    /// The descriptor is inconsistent.
    Malformed(PluginOrigin, String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Open(p, e) => {
                write!(f, "cannot load {}: {}", shown(p), crate::escape_controls(e))
            }
            LoadError::NoEntry(p) => write!(
                f,
                "{} is not a profconv plugin (no `{ENTRY_SYMBOL}` symbol)",
                shown(p)
            ),
            LoadError::BadMagic(o) => write!(f, "{o} is not a profconv plugin (bad magic)"),
            LoadError::AbiMismatch(i) => write!(
                f,
                "plugin '{}' {} at {} was built with profconv-plugin SDK {} (plugin ABI {}.{}); \
                 this profconv supports plugin ABI {ABI_MAJOR}.x (up to {ABI_MAJOR}.{ABI_MINOR}) \
                 — {}",
                i.name,
                i.version,
                i.origin,
                i.sdk_version,
                i.abi_major,
                i.abi_minor,
                // A plugin of a later major needs a later profconv, not a rebuild.
                match i.abi_major > ABI_MAJOR {
                    true =>
                        "it needs a newer profconv: upgrade profconv, or rebuild the plugin \
                             against this profconv's SDK",
                    false => "rebuild the plugin against a compatible SDK",
                }
            ),
            LoadError::Malformed(o, m) => write!(f, "plugin at {o} is malformed: {m}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// An option a format declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionInfo {
    /// Key.
    pub key: String,
    /// One of [`abi::option_kind`].
    pub kind: u32,
    /// Default, as text.
    pub default: String,
    /// Help.
    pub help: String,
    /// When it applies: one of [`abi::option_phase`] (any other value reads as
    /// [`abi::option_phase::ANY`]).
    pub phases: u32,
}

impl OptionInfo {
    /// Whether the option applies where its format reads (`parse` true) or writes.
    pub fn applies(&self, parse: bool) -> bool {
        match self.phases {
            abi::option_phase::PARSE => parse,
            abi::option_phase::EMIT => !parse,
            _ => true,
        }
    }

    /// Whether the host passes `value` (`None`: `-O KEY` without `=`) for this option's kind:
    /// a flag takes no value or a yes/no word, the others a value, an integer one that parses
    /// as `i64` or `u64`, a number a finite `f64`. The format checks its own ranges. `Err`
    /// says what the kind takes.
    pub fn check_value(&self, value: Option<&str>) -> Result<(), &'static str> {
        match (self.kind, value) {
            (abi::option_kind::FLAG, None) => Ok(()),
            (abi::option_kind::FLAG, Some(v)) => {
                match matches!(
                    v,
                    "true" | "false" | "1" | "0" | "yes" | "no" | "on" | "off"
                ) {
                    true => Ok(()),
                    false => Err("no value (or one of true, false, 1, 0, yes, no, on, off)"),
                }
            }
            (_, None) => Err("a value (KEY=VALUE)"),
            (abi::option_kind::INTEGER, Some(v)) => {
                match v.parse::<i64>().is_ok() || v.parse::<u64>().is_ok() {
                    true => Ok(()),
                    // The format's own range, if any, is in its message, not this one.
                    false => Err("a whole number"),
                }
            }
            // `nan`, `inf` and `1e400` (infinite) parse as f64 but are no setting's value.
            (abi::option_kind::NUMBER, Some(v)) => match v.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(()),
                _ => Err("a finite number"),
            },
            _ => Ok(()),
        }
    }

    /// The kind as a word (`flag`, `string`, `integer`, `number`).
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            abi::option_kind::FLAG => "flag",
            abi::option_kind::STRING => "string",
            abi::option_kind::INTEGER => "integer",
            abi::option_kind::NUMBER => "number",
            _ => "unknown",
        }
    }
}

/// A format's content sniffer panicked (the host goes on as if it scored 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnifferPanicked;

impl fmt::Display for SnifferPanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("its content sniffer panicked")
    }
}

impl std::error::Error for SnifferPanicked {}

/// One format of a loaded plugin, callable safely.
#[derive(Clone)]
pub struct FormatHandle {
    /// The plugin's descriptor, copied: fields of a later minor than the plugin's are zero.
    desc: FormatDesc,
    /// The plugin that provides it.
    pub plugin: Arc<PluginInfo>,
    /// Format id.
    pub id: String,
    /// Description.
    pub description: String,
    /// File-name suffixes.
    pub extensions: Vec<String>,
    /// Capability bits ([`abi::caps`]).
    pub caps: u32,
    /// Declared options.
    pub options: Vec<OptionInfo>,
}

impl fmt::Debug for FormatHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FormatHandle")
            .field("id", &self.id)
            .field("plugin", &self.plugin.name)
            .field("caps", &self.caps)
            .finish()
    }
}

/// A loaded plugin.
#[derive(Clone, Debug)]
pub struct LoadedPlugin {
    /// Identity.
    pub info: Arc<PluginInfo>,
    /// Its formats.
    pub formats: Vec<FormatHandle>,
}

/// Opens a plugin library and runs the handshake. The library is never unloaded.
pub fn load_library(path: &Path) -> Result<LoadedPlugin, LoadError> {
    // The system loader searches its library path for a bare file name (`libx.so`), not the
    // current directory: a plain name is the file here, as everywhere else on the command line.
    let relative;
    let path = if path.components().count() == 1 && path.is_relative() {
        relative = Path::new(".").join(path);
        relative.as_path()
    } else {
        path
    };
    // The system loader opens whatever it is given: a FIFO would block it forever, holding the
    // loader's lock (so that even exiting on a signal waits), and a device is no library.
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(LoadError::Open(
                path.to_path_buf(),
                "not a regular file (a shared library is one)".into(),
            ));
        }
        _ => {} // a missing file gets the loader's own message
    }
    // The system loader maps a library's segments without checking that the file holds them,
    // and touching a page past its end is a SIGBUS: a plugin cut short (an interrupted copy, a
    // full disk) in a plugin directory ended every command, `formats` too, with "Bus error".
    if let Some(why) = truncated_elf(path) {
        return Err(LoadError::Open(path.to_path_buf(), why));
    }
    // Its initialisers and its entry run in the call, as any call into a plugin does: one
    // that calls `exit` there fails the run (it ended it with its own status, 0 for `exit(0)`,
    // in every command, whatever the formats it was asked for).
    let _loading = PluginCall::enter(&path.display().to_string(), format_args!("being loaded"));
    // SAFETY: loading runs the library's initialisers. Only files the host chose (matching the
    // plugin naming pattern in plugin directories, or named explicitly by the user) get here.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
        // libloading's text is "dlopen failed"; the system's reason is its source, which
        // glibc starts with the path (already in the message: not twice).
        let reason = match std::error::Error::source(&e) {
            Some(why) => {
                let why = why.to_string();
                let named = format!("{}: ", path.display());
                why.strip_prefix(&named).unwrap_or(&why).to_string()
            }
            None => e.to_string(),
        };
        LoadError::Open(path.to_path_buf(), reason)
    })?;
    // SAFETY: the symbol, if present, is a profconv entry point of type `EntryFn` (checked
    // afterwards by the header's magic and ABI version before anything else is read).
    let entry: EntryFn = match unsafe { lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) } {
        Ok(sym) => *sym,
        Err(_) => return Err(LoadError::NoEntry(path.to_path_buf())),
    };
    // Never unload: the function pointers we keep must stay valid for the process's life.
    std::mem::forget(lib);
    load_entry(entry, PluginOrigin::File(path.to_path_buf()))
}

/// Why an ELF file is too short for what its program headers say it holds (the header table,
/// or a loadable segment's bytes), or `None`: not ELF, unreadable (the loader says why), or
/// whole.
fn truncated_elf(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut head = [0u8; 64];
    file.read_exact(&mut head).ok()?;
    if head[..4] != *b"\x7fELF" {
        return None;
    }
    let big = match head[5] {
        1 => false,
        2 => true,
        _ => return None,
    };
    // An unsigned field in the file's byte order.
    let int = |b: &[u8]| {
        let add = |v: u64, x: &u8| (v << 8) | u64::from(*x);
        match big {
            true => b.iter().fold(0, add),
            false => b.iter().rev().fold(0, add),
        }
    };
    // (e_phoff, e_phentsize, e_phnum; each header's p_offset and p_filesz) by class.
    let (phoff, phentsize, phnum, offset, filesz) = match head[4] {
        1 => (
            int(&head[0x1c..0x20]),
            int(&head[0x2a..0x2c]),
            int(&head[0x2c..0x2e]),
            4..8,
            16..20,
        ),
        2 => (
            int(&head[0x20..0x28]),
            int(&head[0x36..0x38]),
            int(&head[0x38..0x3a]),
            8..16,
            32..40,
        ),
        _ => return None,
    };
    let table = phentsize.checked_mul(phnum)?;
    // An entry smaller than its fields, or a table of more than 64 KiB, is no valid ELF: the
    // loader says so.
    if phentsize < filesz.end as u64 || table > 65536 {
        return None;
    }
    let said = |need: u64, what: &str| {
        format!(
            "the file is cut short ({len} bytes; {what} reaches byte {need}): an interrupted \
             copy or build? copy or build it again"
        )
    };
    let end = phoff.checked_add(table)?;
    if end > len {
        return Some(said(end, "its program header table"));
    }
    let mut headers = vec![0u8; table as usize];
    file.seek(io::SeekFrom::Start(phoff)).ok()?;
    file.read_exact(&mut headers).ok()?;
    const PT_LOAD: u64 = 1;
    // A segment of no file bytes (`.bss` alone, p_filesz 0) holds nothing of the file: its
    // p_offset may lie past the end of a whole file, which the loader loads, and a cut shows
    // in the segments that hold bytes.
    let need = headers
        .chunks_exact(phentsize as usize)
        .filter(|h| int(&h[0..4]) == PT_LOAD && int(&h[filesz.clone()]) > 0)
        .filter_map(|h| int(&h[offset.clone()]).checked_add(int(&h[filesz.clone()])))
        .max()?;
    (need > len).then(|| said(need, "a loadable segment"))
}

/// Runs the handshake on an entry point linked into this binary (see `static_plugin!`).
pub fn load_static(entry: EntryFn, name: &str) -> Result<LoadedPlugin, LoadError> {
    load_entry(entry, PluginOrigin::Static(name.to_string()))
}

/// The handshake: call the entry, check the header's magic, read the plugin's identity, check
/// its ABI major, then its descriptor, its format table, and each format in turn. The checks
/// run in that order, and the first that fails is the error: nothing is read from the plugin
/// before what says it may be.
fn load_entry(entry: EntryFn, origin: PluginOrigin) -> Result<LoadedPlugin, LoadError> {
    let header_ptr = call_entry(entry, &origin)?;
    let header = checked_header(header_ptr, &origin)?;
    let info = Arc::new(plugin_info(header, &origin));
    check_abi_major(&info)?;
    // SAFETY: the header's magic and major are checked just above.
    let desc = unsafe { checked_descriptor(header_ptr, header, &origin)? };
    // SAFETY: `desc` is a checked plugin's descriptor (above).
    let stride = unsafe { format_stride(desc, &origin)? };
    // Every element is copied (the table is checked) before any is checked on its own.
    // SAFETY: `stride` is `format_stride`'s for this `desc` (above).
    let formats = unsafe { copy_format_descs(desc, stride) }
        .into_iter()
        .map(|d| format_handle(d, &info, &origin))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LoadedPlugin { info, formats })
}

/// Calls the plugin's entry with this host's ABI version and returns its header pointer, not
/// null (a null one is no plugin's answer, and nothing can be read through it).
fn call_entry(entry: EntryFn, origin: &PluginOrigin) -> Result<*const PluginHeader, LoadError> {
    let host_version = env!("CARGO_PKG_VERSION");
    let info = HostInfo {
        abi_major: ABI_MAJOR,
        abi_minor: ABI_MINOR,
        host_version: StrRef::new(host_version),
    };
    // SAFETY: `entry` is a plugin entry point; `info` lives across the call. (It is `extern
    // "C"`: a panic escaping it would abort, which is why the SDK's entry does nothing that
    // can panic.)
    let header_ptr = unsafe { entry(&info) };
    if header_ptr.is_null() {
        return Err(LoadError::Malformed(
            origin.clone(),
            "entry returned null".into(),
        ));
    }
    Ok(header_ptr)
}

/// The header behind `header_ptr`, if it has the profconv magic: the one check that says the
/// library is a profconv plugin at all, made before any other field is trusted.
fn checked_header(
    header_ptr: *const PluginHeader,
    origin: &PluginOrigin,
) -> Result<&'static PluginHeader, LoadError> {
    // SAFETY: `header_ptr` is not null (`call_entry`); the entry returns a pointer to a
    // static header, whose first 72 bytes are frozen across every ABI version, so reading them
    // is valid whatever the plugin's ABI.
    let header: &'static PluginHeader = unsafe { &*header_ptr };
    if header.magic != MAGIC {
        return Err(LoadError::BadMagic(origin.clone()));
    }
    Ok(header)
}

/// The plugin's identity from its header, read before the ABI major is checked so that a
/// mismatch can name the plugin, its version and its SDK.
fn plugin_info(header: &'static PluginHeader, origin: &PluginOrigin) -> PluginInfo {
    // SAFETY: the header's strings point at the plugin's static data.
    let (name, version, sdk_version) = unsafe {
        (
            header.plugin_name.to_string_lossy(),
            header.plugin_version.to_string_lossy(),
            header.sdk_version.to_string_lossy(),
        )
    };
    PluginInfo {
        name,
        version,
        sdk_version,
        abi_major: header.abi_major,
        abi_minor: header.abi_minor,
        panic_unwind: header.panic_unwind != 0,
        origin: origin.clone(),
    }
}

/// Refuses a plugin built for another ABI major: past the header's frozen prefix its layout is
/// not this host's (any minor of this major loads: a newer one's fields are ignored).
fn check_abi_major(info: &PluginInfo) -> Result<(), LoadError> {
    if info.abi_major != ABI_MAJOR {
        return Err(LoadError::AbiMismatch(Box::new(info.clone())));
    }
    Ok(())
}

/// The plugin's descriptor, which the header starts, once its declared size says it holds
/// every field of ABI 1.0 (so that reading them stays within the plugin's data).
///
/// # Safety
/// `header_ptr` is the entry's header pointer (`call_entry`) and `header` that header, whose
/// magic ([`checked_header`]) and ABI major ([`check_abi_major`]) passed.
unsafe fn checked_descriptor(
    header_ptr: *const PluginHeader,
    header: &'static PluginHeader,
    origin: &PluginOrigin,
) -> Result<&'static PluginDescriptor, LoadError> {
    if (header.descriptor_size as usize) < abi::min_size::PLUGIN_DESCRIPTOR {
        return Err(LoadError::Malformed(
            origin.clone(),
            format!(
                "descriptor of {} bytes is too small",
                header.descriptor_size
            ),
        ));
    }
    // SAFETY: `header_ptr` is the header's own pointer (not null, `call_entry`), and its
    // magic (`checked_header`), major (`check_abi_major`) and size (above) say the header
    // starts an ABI-1 `PluginDescriptor`.
    Ok(unsafe { &*(header_ptr as *const PluginDescriptor) })
}

/// The stride of the descriptor's format table (0 for an empty one): the plugin's
/// `FormatDesc` size, which a later minor may have grown. The table's count, pointer and
/// stride are checked before any element is read, since the elements are found at this
/// stride: a wild one would read far past the table.
///
/// # Safety
/// `desc` is a checked plugin's descriptor ([`checked_descriptor`]): `formats` points at
/// `n_formats` elements in the plugin's static data (or is null).
unsafe fn format_stride(
    desc: &'static PluginDescriptor,
    origin: &PluginOrigin,
) -> Result<usize, LoadError> {
    check_table("format", desc.n_formats, desc.formats, origin)?;
    // The fields of ABI 1.0 sit at the start of each element.
    let stride = if desc.n_formats == 0 {
        0
    } else {
        // SAFETY: the first element exists (`n_formats` > 0, `formats` not null, both checked
        // above, and the table is the plugin's: this function's contract); its first field
        // (u32 struct_size) is in every version of `FormatDesc`.
        unsafe { (*desc.formats).struct_size as usize }
    };
    if desc.n_formats > 0 && stride < abi::min_size::FORMAT_DESC {
        return Err(LoadError::Malformed(
            origin.clone(),
            format!(
                "format descriptor too small ({stride} bytes; at least {})",
                abi::min_size::FORMAT_DESC
            ),
        ));
    }
    if desc.n_formats > 0 && stride % std::mem::align_of::<FormatDesc>() != 0 {
        return Err(LoadError::Malformed(
            origin.clone(),
            format!(
                "format descriptor size {stride} is not a multiple of {} (its alignment)",
                std::mem::align_of::<FormatDesc>()
            ),
        ));
    }
    // A size no version will reach.
    if stride > MAX_FORMAT_DESC {
        return Err(LoadError::Malformed(
            origin.clone(),
            format!("format descriptor too large ({stride} bytes; at most {MAX_FORMAT_DESC})"),
        ));
    }
    Ok(stride)
}

/// A plugin's table of `n` `what`s at `ptr` (formats, a format's options), checked before any
/// element is read: at most 4096 of them (no plugin needs more, and a wild count would read far
/// past the table), and not at a null pointer unless empty.
fn check_table<T>(
    what: &str,
    n: usize,
    ptr: *const T,
    origin: &PluginOrigin,
) -> Result<(), LoadError> {
    let bad = |why: String| {
        Err(LoadError::Malformed(
            origin.clone(),
            format!("bad {what} table: {n} {what}s {why}"),
        ))
    };
    if n > 4096 {
        return bad("(at most 4096)".into());
    }
    if n > 0 && ptr.is_null() {
        return bad("at a null pointer".into());
    }
    Ok(())
}

/// Copies each element of the format table (checked by [`format_stride`]) into this host's
/// `FormatDesc`: an older plugin's element is shorter, and its missing tail stays zero (null:
/// the function is not there); the fields past the plugin's own size are cleared, since its
/// minor does not have them.
///
/// # Safety
/// `desc` is a checked plugin's descriptor ([`checked_descriptor`]) and `stride` the one
/// [`format_stride`] gave for it.
unsafe fn copy_format_descs(desc: &'static PluginDescriptor, stride: usize) -> Vec<FormatDesc> {
    (0..desc.n_formats)
        .map(|i| {
            // The element holds `stride` bytes.
            let n = stride.min(size_of::<FormatDesc>());
            let mut copy = std::mem::MaybeUninit::<FormatDesc>::zeroed();
            // SAFETY: `n_formats` elements of `stride` bytes each, each starting with an ABI-1.0
            // `FormatDesc`, in the plugin's static data (count, pointer and stride checked by
            // `format_stride`); `n` bytes fit in both. All-zero bytes are a valid
            // `FormatDesc` (integers, null pointers, `None` functions), and so is any prefix of
            // a plugin's descriptor completed with zeros.
            let mut d = unsafe {
                let src = (desc.formats as *const u8).add(i * stride);
                std::ptr::copy_nonoverlapping(src, copy.as_mut_ptr() as *mut u8, n);
                copy.assume_init()
            };
            // Fields past the plugin's own size are not its (its minor does not have them).
            let has = |end: usize| d.struct_size as usize >= end;
            if !has(std::mem::offset_of!(FormatDesc, sniff_checked) + 8) {
                d.sniff_checked = None;
            }
            if !has(std::mem::offset_of!(FormatDesc, check_options) + 8) {
                d.check_options = None;
            }
            d
        })
        .collect()
}

/// One format of the plugin, callable safely, once its own size and option table are checked
/// (before its strings and options are read through them), and then its id and its options'
/// kinds (which the host relies on to pass values).
fn format_handle(
    d: FormatDesc,
    info: &Arc<PluginInfo>,
    origin: &PluginOrigin,
) -> Result<FormatHandle, LoadError> {
    if (d.struct_size as usize) < abi::min_size::FORMAT_DESC {
        return Err(LoadError::Malformed(
            origin.clone(),
            format!(
                "format descriptor too small ({} bytes; at least {})",
                d.struct_size,
                abi::min_size::FORMAT_DESC
            ),
        ));
    }
    check_table("option", d.n_options, d.options, origin)?;
    let opts: &[OptionDesc] = if d.n_options == 0 {
        &[]
    } else {
        // SAFETY: `n_options` static option descriptors (count and pointer checked above).
        unsafe { std::slice::from_raw_parts(d.options, d.n_options) }
    };
    // SAFETY: all strings of a descriptor point at the plugin's static data.
    let handle = unsafe {
        FormatHandle {
            desc: d,
            plugin: info.clone(),
            id: d.id.to_string_lossy(),
            description: d.description.to_string_lossy(),
            extensions: d
                .extensions
                .to_string_lossy()
                .split(',')
                .map(|e| e.trim().trim_start_matches('.').to_string())
                .filter(|e| !e.is_empty())
                .collect(),
            caps: d.caps,
            options: opts
                .iter()
                .map(|o| OptionInfo {
                    key: o.key.to_string_lossy(),
                    kind: o.kind,
                    default: o.default.to_string_lossy(),
                    help: o.help.to_string_lossy(),
                    // A reserved word before 1.4: whatever a plugin left there, its
                    // options apply everywhere, as they did.
                    phases: if info.abi_minor >= 4 { o.phases } else { 0 },
                })
                .collect(),
        }
    };
    if handle.id.is_empty() {
        return Err(LoadError::Malformed(
            origin.clone(),
            "a format has an empty id".into(),
        ));
    }
    // A kind is part of the major version (a new one bumps it): a code this host does not
    // know is a malformed descriptor, not an option to pass along unchecked.
    if let Some(o) = handle
        .options
        .iter()
        .find(|o| o.kind > abi::option_kind::NUMBER)
    {
        return Err(LoadError::Malformed(
            origin.clone(),
            format!(
                "option '{}' of format '{}' has kind {}, which ABI 1 does not define (0 \
                 flag, 1 string, 2 integer, 3 number)",
                o.key, handle.id, o.kind
            ),
        ));
    }
    Ok(handle)
}

/// A failed call into a plugin.
#[derive(Debug)]
pub struct CallError {
    /// Error class.
    pub status: Status,
    /// Message.
    pub message: String,
    /// Byte offset in the input.
    pub byte_offset: Option<u64>,
    /// 1-based line.
    pub line: Option<u64>,
    /// 1-based column.
    pub column: Option<u64>,
    /// The host's own I/O error, when reading or writing failed on the host side.
    pub io: Option<io::Error>,
}

impl CallError {
    fn new(status: Status, message: impl Into<String>) -> Self {
        CallError {
            status,
            message: message.into(),
            byte_offset: None,
            line: None,
            column: None,
            io: None,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column, self.byte_offset) {
            (Some(l), Some(c), _) => write!(f, "{l}:{c}: ")?,
            (Some(l), None, _) => write!(f, "{l}: ")?,
            (None, _, Some(o)) => write!(f, "byte {o}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for CallError {}

/// What a lent context is, so that one passed to the wrong callback is refused too.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CtxKind {
    Call,
    Read,
    Write,
}

/// One context lent to a call under way: where it is, and whether it still is (locked while a
/// callback uses it, so the call's end waits for a callback still running on another thread).
struct LentEntry {
    addr: usize,
    kind: CtxKind,
    live: std::sync::Arc<std::sync::RwLock<bool>>,
}

/// The contexts lent to calls into plugins that are under way, by token. A plugin is given a
/// token, never an address: a callback whose token is not here was kept past its call (copied
/// by value and called from a `release`, from a later call, or from a thread still running
/// after the call returned), so it does nothing and fails. Tokens are never reused, so a later
/// call whose context has the same address does not take a kept callback (addresses were
/// compared: a kept `read` read the next input's bytes).
static LENT: std::sync::Mutex<BTreeMap<u64, LentEntry>> = std::sync::Mutex::new(BTreeMap::new());

/// The next token ([`LENT`]); 0 is never one.
static NEXT_TOKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The contexts of one call: lent until it is dropped.
#[derive(Default)]
struct LentContexts(Vec<(u64, std::sync::Arc<std::sync::RwLock<bool>>)>);

impl LentContexts {
    /// Lends the context at `addr` for this call: the token to give the plugin as its `ctx`.
    fn lend<T>(&mut self, addr: *mut T, kind: CtxKind) -> *mut c_void {
        let token = NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let live = std::sync::Arc::new(std::sync::RwLock::new(true));
        LENT.lock().unwrap_or_else(|p| p.into_inner()).insert(
            token,
            LentEntry {
                addr: addr as usize,
                kind,
                live: live.clone(),
            },
        );
        self.0.push((token, live));
        token as usize as *mut c_void
    }
}

impl Drop for LentContexts {
    fn drop(&mut self) {
        let mut lent = LENT.lock().unwrap_or_else(|p| p.into_inner());
        for (token, _) in &self.0 {
            lent.remove(token);
        }
        drop(lent);
        // Waits for a callback still using a context (on another thread) to return.
        for (_, live) in &self.0 {
            *live.write().unwrap_or_else(|p| p.into_inner()) = false;
        }
    }
}

/// Runs `f` on the context behind `token` if it is lent to a call under way as a `kind`
/// ([`LENT`]); `None` if not (kept past its call, or passed to the wrong callback).
fn with_lent<R>(token: *mut c_void, kind: CtxKind, f: impl FnOnce(usize) -> R) -> Option<R> {
    let (addr, live) = {
        let lent = LENT.lock().unwrap_or_else(|p| p.into_inner());
        let e = lent.get(&(token as usize as u64))?;
        (e.kind == kind).then(|| (e.addr, e.live.clone()))?
    };
    // Locked for writing, not reading: each callback takes the context as `&mut`, so callbacks
    // that a plugin calls from several threads at once (against the contract) take turns
    // instead of racing on it.
    let guard = live.write().unwrap_or_else(|p| p.into_inner());
    guard.then(|| f(addr))
}

/// State behind [`HostCallbacks::ctx`] during one call.
struct CallCtx<'a> {
    first_error: Option<CallError>,
    log: &'a mut dyn FnMut(u32, &str),
    /// What the parser's [`HostCallbacks::release_input`] calls (none for an emit).
    release: Option<&'a dyn Fn(u64)>,
}

unsafe extern "C" fn host_release_input(token: *mut c_void, upto: u64) {
    with_lent(token, CtxKind::Call, |ctx| {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: `ctx` is the `CallCtx` this host lent for the ongoing call.
            let cx = unsafe { &*(ctx as *const CallCtx<'_>) };
            if let Some(release) = cx.release {
                release(upto);
            }
        }));
    });
}

/// The most bytes of a plugin's error or warning message the host keeps: a message is for a
/// person to read, and a plugin's enormous one must not take the host's memory (each copy of a
/// 256 MiB message did).
const MAX_MESSAGE: usize = 64 << 10;

/// A plugin's message, at most [`MAX_MESSAGE`] bytes of it (cut at a character), then how much
/// was left out.
///
/// # Safety
/// As [`StrRef::as_bytes`].
unsafe fn bounded_message(message: &StrRef) -> String {
    // SAFETY: forwarded to the caller.
    let bytes = unsafe { message.as_bytes() };
    if bytes.len() <= MAX_MESSAGE {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut cut = MAX_MESSAGE;
    // Back to the start of a character (at most three continuation bytes).
    while cut > MAX_MESSAGE - 3 && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    format!(
        "{}… ({} more bytes of the plugin's message left out)",
        String::from_utf8_lossy(&bytes[..cut]),
        bytes.len() - cut
    )
}

unsafe extern "C" fn host_report_error(
    token: *mut c_void,
    code: Status,
    message: StrRef,
    byte_offset: u64,
    line: u64,
    column: u64,
) {
    with_lent(token, CtxKind::Call, |ctx| {
        report_error(ctx, code, message, (byte_offset, line, column))
    });
}

fn report_error(
    ctx: usize,
    code: Status,
    message: StrRef,
    (byte_offset, line, column): (u64, u64, u64),
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `ctx` is the `CallCtx` this host lent for the ongoing call.
        let cx = unsafe { &mut *(ctx as *mut CallCtx<'_>) };
        if cx.first_error.is_none() {
            // SAFETY: the message is readable for the duration of this callback and copied
            // here.
            let message = unsafe { bounded_message(&message) };
            let opt = |v: u64| (v != u64::MAX).then_some(v);
            cx.first_error = Some(CallError {
                status: code,
                message,
                byte_offset: opt(byte_offset),
                line: opt(line),
                column: opt(column),
                io: None,
            });
        }
    }));
}

unsafe extern "C" fn host_log(token: *mut c_void, level: u32, message: StrRef) {
    with_lent(token, CtxKind::Call, |ctx| {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: as in `report_error`.
            let (cx, message) =
                unsafe { (&mut *(ctx as *mut CallCtx<'_>), bounded_message(&message)) };
            (cx.log)(level, &message);
        }));
    });
}

struct ReadCtx<'a> {
    reader: &'a mut dyn Read,
    error: Option<io::Error>,
    /// The plugin called `read` with a null pointer: the call fails whatever it returns.
    breach: bool,
}

unsafe extern "C" fn host_read(
    token: *mut c_void,
    buf: *mut u8,
    cap: usize,
    n_read: *mut usize,
) -> Status {
    with_lent(token, CtxKind::Read, |ctx| read(ctx, buf, cap, n_read)).unwrap_or(Status::INTERNAL)
}

fn read(ctx: usize, buf: *mut u8, cap: usize, n_read: *mut usize) -> Status {
    // A plugin that breaks the contract this plainly gets a failed read, not a crash (nor,
    // for a null buffer, a read of nothing it would take for the end of the input).
    if n_read.is_null() || (buf.is_null() && cap > 0) {
        // SAFETY: `ctx` is the `ReadCtx` lent for this call.
        unsafe { (*(ctx as *mut ReadCtx<'_>)).breach = true };
        return Status::INTERNAL;
    }
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `ctx` is the `ReadCtx` lent for this call; `buf` has `cap` writable bytes and
        // `n_read` is writable (the plugin's contract).
        let (cx, buf) = unsafe {
            (
                &mut *(ctx as *mut ReadCtx<'_>),
                if cap == 0 || buf.is_null() {
                    &mut [][..]
                } else {
                    std::slice::from_raw_parts_mut(buf, cap)
                },
            )
        };
        match crate::read_some(cx.reader, buf) {
            Ok(n) => {
                // SAFETY: see above.
                unsafe { n_read.write(n) };
                Status::OK
            }
            Err(e) => {
                cx.error = Some(e);
                Status::IO
            }
        }
    }));
    r.unwrap_or(Status::INTERNAL)
}

struct WriteCtx<'a> {
    writer: &'a mut dyn Write,
    error: Option<io::Error>,
    /// The plugin called `write` with a null buffer: the call fails whatever it returns.
    breach: bool,
}

unsafe extern "C" fn host_write(token: *mut c_void, buf: *const u8, len: usize) -> Status {
    with_lent(token, CtxKind::Write, |ctx| write(ctx, buf, len)).unwrap_or(Status::INTERNAL)
}

fn write(ctx: usize, buf: *const u8, len: usize) -> Status {
    if buf.is_null() && len > 0 {
        // SAFETY: `ctx` is the `WriteCtx` lent for this call.
        unsafe { (*(ctx as *mut WriteCtx<'_>)).breach = true };
        return Status::INTERNAL;
    }
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `ctx` is the `WriteCtx` lent for this call; `buf` has `len` readable bytes.
        let (cx, data) = unsafe {
            (
                &mut *(ctx as *mut WriteCtx<'_>),
                if len == 0 || buf.is_null() {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(buf, len)
                },
            )
        };
        if cx.error.is_some() {
            return Status::IO;
        }
        match cx.writer.write_all(data) {
            Ok(()) => Status::OK,
            Err(e) => {
                cx.error = Some(e);
                Status::IO
            }
        }
    }));
    r.unwrap_or(Status::INTERNAL)
}

fn abi_options(options: &[(String, Option<String>)]) -> Vec<OptionValue> {
    options
        .iter()
        .map(|(k, v)| OptionValue {
            key: StrRef::new(k),
            value: v.as_deref().map_or(StrRef::null(), StrRef::new),
        })
        .collect()
}

/// Makes a write past the process's file-size limit (`ulimit -f`, `RLIMIT_FSIZE`) fail with
/// `EFBIG` ("File too large"), an I/O error the host reports and cleans up after, instead of
/// the default of SIGXFSZ, which ends the process at once and leaves its temp file behind.
/// Call it once, early in `main`; on systems without the signal it does nothing.
pub fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: `signal` with `SIG_IGN` installs no handler code, only the kernel's "ignore"
    // disposition for SIGXFSZ, which nothing else in the process relies on; its return value
    // (the previous disposition, or SIG_ERR) needs no handling.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// The signals the host's interrupt handler serves: Ctrl-C, `kill` and `timeout`, and the
/// terminal closing.
#[cfg(unix)]
pub const INTERRUPT_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Runs `install`, which sets a handler for the [`INTERRUPT_SIGNALS`], then ignores again each
/// of them the process was started ignoring: `nohup` ignores SIGHUP and a shell's `cmd &`
/// SIGINT, and a handler put over that would end a run its user had protected from them.
/// In front of the handler `install` set for each of the others, it puts one that notes which
/// signal came first, for [`end_by_interrupt`].
pub fn handle_interrupts_unless_ignored(install: impl FnOnce()) {
    #[cfg(unix)]
    {
        // The signals are held back on this thread until the handlers are all in place (and
        // a thread `install` starts keeps them held back: the others take them). One that came
        // in between went to `install`'s handler alone, noted by nobody (the process exited
        // 130, as 15 of 400 runs sent SIGINT in their first 6 ms did, and a shell loop went
        // on), or, for one the process was started ignoring, ended a `nohup` run; it now
        // waits, then goes to `note_interrupt`, or is dropped by "ignore" put back.
        // SAFETY: zeroed `sigset_t`s are valid values; `sigemptyset` initialises `held` before
        // it is read, `pthread_sigmask` writes `mask` (read below) and only changes this
        // thread's mask, put back as it was below.
        let mask = unsafe {
            let mut held: libc::sigset_t = std::mem::zeroed();
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut held);
            for signal in INTERRUPT_SIGNALS {
                libc::sigaddset(&mut held, signal);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &held, &mut mask);
            mask
        };
        let mut ignored = [false; INTERRUPT_SIGNALS.len()];
        for (signal, ignored) in INTERRUPT_SIGNALS.into_iter().zip(&mut ignored) {
            // SAFETY: a zeroed `sigaction` is a valid value to be written; with a null new
            // action `sigaction` only writes the current one into `old`, on this frame.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) == 0 {
                    *ignored = old.sa_sigaction == libc::SIG_IGN;
                }
            }
        }
        install();
        for (k, (signal, ignored)) in INTERRUPT_SIGNALS.into_iter().zip(ignored).enumerate() {
            if ignored {
                // SAFETY: `signal` with `SIG_IGN` installs no handler code; the handler just
                // installed for it is then never called.
                unsafe {
                    libc::signal(signal, libc::SIG_IGN);
                }
                continue;
            }
            // SAFETY: `sigaction` reads a fully initialised action and writes the old one into a
            // zeroed local. `note_interrupt` stores into an atomic, then calls the handler that
            // was in place with the arguments its flags say it takes; that handler is set in
            // `INTERRUPT_NEXT` before `note_interrupt` is installed, and only a real handler
            // (not the default action or "ignore") is put behind it.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_DFL
                    || old.sa_sigaction == libc::SIG_IGN
                    || INTERRUPT_NEXT[k].set(old).is_err()
                {
                    continue;
                }
                let mut new = old;
                new.sa_sigaction = note_interrupt as *const () as libc::sighandler_t;
                new.sa_flags = old.sa_flags | libc::SA_SIGINFO;
                libc::sigaction(signal, &new, std::ptr::null_mut());
            }
        }
        // SAFETY: `mask` is the mask `pthread_sigmask` wrote above. A signal held back is
        // delivered now, to the handlers just set.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
        }
    }
    #[cfg(not(unix))]
    install();
}

/// Whether one of the [`INTERRUPT_SIGNALS`] has arrived (noted by the handler put in front of
/// the host's), whether or not the host's handler has acted on it yet: the thread of a deferred
/// handler (the `ctrlc` crate's) may not have run by the time the output is put in place.
pub fn interrupted() -> bool {
    #[cfg(unix)]
    return INTERRUPTED_BY.load(std::sync::atomic::Ordering::SeqCst) != 0;
    #[cfg(not(unix))]
    false
}

/// The first of the [`INTERRUPT_SIGNALS`] that arrived, or 0.
#[cfg(unix)]
static INTERRUPTED_BY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The handlers [`note_interrupt`] hands each of the [`INTERRUPT_SIGNALS`] on to.
#[cfg(unix)]
static INTERRUPT_NEXT: [std::sync::OnceLock<libc::sigaction>; INTERRUPT_SIGNALS.len()] =
    [const { std::sync::OnceLock::new() }; INTERRUPT_SIGNALS.len()];

/// Notes the interrupt signal (the first one wins), then calls the handler
/// [`handle_interrupts_unless_ignored`] found in place for it.
#[cfg(unix)]
extern "C" fn note_interrupt(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut c_void,
) {
    use std::sync::atomic::Ordering;
    let _ = INTERRUPTED_BY.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let Some(k) = INTERRUPT_SIGNALS.iter().position(|&s| s == signal) else {
        return;
    };
    let Some(next) = INTERRUPT_NEXT[k].get() else {
        return;
    };
    // SAFETY: `next` is the disposition in place before this handler, a real handler (checked
    // when it was stored), whose flags say which of the two signatures it has.
    unsafe {
        if next.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                std::mem::transmute(next.sa_sigaction);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(next.sa_sigaction);
            f(signal);
        }
    }
}

/// Ends the process after an interrupt (its pending output removed): by the signal that came,
/// with its default action, as gzip and sort end, so that the shell or program that started
/// profconv sees it was interrupted and stops too (bash goes on with a `for` loop after a
/// command that exited, whatever its status, and stops it only after one that Ctrl-C ended);
/// a shell shows 128 + N (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP). Exits with `code`
/// where no signal was noted (not unix, or the signal came before the handlers were set).
pub fn end_by_interrupt(code: i32) -> ! {
    #[cfg(unix)]
    {
        let signal = INTERRUPTED_BY.load(std::sync::atomic::Ordering::SeqCst);
        if signal != 0 {
            // SAFETY: back to the default action, unblocked on this thread, then the signal
            // again: its default action ends the process; `sigset_t` is written by
            // `sigemptyset` before it is read.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::raise(signal);
            }
        }
    }
    std::process::exit(code)
}

/// The signals [`remove_on_abort`] removes the temp file on: an abort, and the other signals
/// whose default action ends the process and that nothing else here handles (SIGINT, SIGTERM
/// and SIGHUP go to the host's Ctrl-C handler; SIGPIPE is ignored by the Rust runtime; SIGXFSZ
/// is ignored so that a write past `ulimit -f` fails instead). SIGXCPU is what a CPU-time
/// limit (`ulimit -t`, a batch system's) sends first. Not SIGTRAP or SIGSYS: a debugger's and
/// seccomp's, raised by an instruction, not sent; nor SIGPROF or SIGVTALRM, the timers of
/// sampling profilers, which a profiler preloaded into profconv handles itself.
#[cfg(unix)]
pub const ENDING_SIGNALS: &[libc::c_int] = &[
    libc::SIGABRT,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGXCPU,
    #[cfg(target_os = "linux")]
    libc::SIGPWR,
    #[cfg(target_os = "linux")]
    libc::SIGIO,
    #[cfg(target_os = "linux")]
    libc::SIGSTKFLT,
];

/// The file [`remove_on_abort`] names, as a C string that is never freed (a handler on another
/// thread may be reading it), or null.
#[cfg(unix)]
static REMOVE_ON_ABORT: std::sync::atomic::AtomicPtr<libc::c_char> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Removes `path` (a half-written temp file) if the process aborts before the next call, which
/// gives the next file or `None` once it is renamed or removed. An abort runs no destructors
/// and no Ctrl-C handler: a failed allocation in the host or in a plugin (Rust's
/// out-of-memory handler aborts), or a panic in a plugin built with `panic = "abort"`. A
/// handler, installed on the first call, unlinks the file (`unlink` is safe in a signal
/// handler), then raises the signal again with its default action, so the process still ends
/// as it would have (exit status 134 in a shell for SIGABRT). It serves the other signals
/// whose default ends the process and that the host does not handle otherwise
/// ([`ENDING_SIGNALS`]: Ctrl-\ sends SIGQUIT). Each call leaks its path's few bytes.
pub fn remove_on_abort(path: Option<&Path>) {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        use std::sync::atomic::Ordering;
        static INSTALL: std::sync::Once = std::sync::Once::new();
        INSTALL.call_once(|| {
            let handler = on_abort as extern "C" fn(libc::c_int);
            for &signal in ENDING_SIGNALS {
                // SAFETY: `sigaction` with a null new action only writes the old one into a
                // zeroed local. The handler only reads an atomic pointer, calls `unlink`
                // (async-signal-safe) and restores the default action before raising the
                // signal again; it is installed only where the default action is in place. A
                // signal the process was started ignoring (`cmd &` ignores SIGQUIT;
                // supervisors, SIGUSR1) stays ignored, so it still does not end the process,
                // and one that something in the process handles keeps its handler.
                unsafe {
                    // The disposition is read first and left alone unless it is the default:
                    // installing, then putting back, lost a handler's flags (`SA_SIGINFO`) and
                    // let a signal arriving in between end the process.
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                        && old.sa_sigaction == libc::SIG_DFL
                    {
                        libc::signal(signal, handler as libc::sighandler_t);
                    }
                }
            }
            install_fault_handlers();
        });
        let new = path
            .and_then(|p| std::ffi::CString::new(p.as_os_str().as_bytes()).ok())
            .map_or(std::ptr::null_mut(), std::ffi::CString::into_raw);
        REMOVE_ON_ABORT.store(new, Ordering::SeqCst);
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// The signal handler of [`remove_on_abort`].
#[cfg(unix)]
extern "C" fn on_abort(signal: libc::c_int) {
    let path = REMOVE_ON_ABORT.load(std::sync::atomic::Ordering::SeqCst);
    if !path.is_null() {
        // SAFETY: `path` came from `CString::into_raw` and is never freed; `unlink` only reads
        // it.
        unsafe {
            libc::unlink(path);
        }
    }
    // SAFETY: back to the default action (end the process, core dump as configured), then the
    // same signal again, as `abort` does when a handler returns.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// The signals of a faulting instruction (a plugin that dereferences a bad pointer), whose
/// handlers [`install_fault_handlers`] puts in front of the ones in place (the Rust runtime's,
/// which reports a stack overflow).
#[cfg(unix)]
const FAULT_SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// The dispositions [`on_fault`] hands each of [`FAULT_SIGNALS`] back to, once set.
#[cfg(unix)]
static FAULT_PREVIOUS: [std::sync::OnceLock<libc::sigaction>; 2] =
    [std::sync::OnceLock::new(), std::sync::OnceLock::new()];

/// Puts the crash handler of [`remove_on_abort`] (SIGSEGV, SIGBUS: it removes the pending temp
/// file, then hands the fault on) in front of the Rust runtime's now. Call it once, early in
/// `main`, before any plugin is loaded: a plugin whose runtime handles faults itself (Go, a JVM,
/// a wasm engine, which recover the faults they expect and hand the others to the handler in
/// place before) installs its handler when loaded, in front of this one. Installed later, on
/// the first [`remove_on_abort`], the crash handler went in front of the runtime's, took a
/// fault the runtime recovers from for a crash, and removed the temp file of a run that went
/// on (and then failed: the file to rename was gone).
pub fn handle_crashes() {
    #[cfg(unix)]
    install_fault_handlers();
}

/// Puts [`on_fault`] in front of the handlers of [`FAULT_SIGNALS`]: a crash in a plugin (or in
/// profconv) removes the pending temp file too, then ends the process as it would have. Once:
/// a second call leaves the handlers as they are.
#[cfg(unix)]
fn install_fault_handlers() {
    for (k, &signal) in FAULT_SIGNALS.iter().enumerate() {
        // SAFETY: `sigaction` reads a fully initialised action and writes the old one into a
        // zeroed local. The handler runs on the alternate signal stack where the thread has one
        // (the Rust runtime gives its threads one, for stack overflows), makes only
        // async-signal-safe calls (`unlink`, `sigaction`, `raise`) and reads a `OnceLock` that
        // is set before the handler is installed.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
                || FAULT_PREVIOUS[k].set(old).is_err()
            {
                continue;
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_fault as *const () as libc::sighandler_t;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(signal, &new, std::ptr::null_mut());
        }
    }
}

/// The handler of [`FAULT_SIGNALS`]: removes the temp file of [`remove_on_abort`] and gives
/// the signal back to the disposition that was in place. A fault (a bad load or store) returns
/// to the instruction, which faults again into that disposition (the Rust runtime's: a stack
/// overflow's report, else the default action, the process ended by the signal as before). A
/// signal sent by another process (`kill -SEGV`, `kill -BUS`) ends the process by its default
/// action, as every other ending signal does ([`end_by_sent_signal`]): handed to the runtime's
/// handler, which only knows faults, it was dropped, and the run went on.
#[cfg(unix)]
extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut c_void) {
    // SAFETY: `info` is the kernel's for this signal (or null).
    if info.is_null() || unsafe { (*info).si_code } <= 0 {
        end_by_sent_signal(signal);
        return;
    }
    let path = REMOVE_ON_ABORT.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `path` came from `CString::into_raw` and is never freed; the previous action was
    // set before this handler was installed (or the default action is put back); `unlink` and
    // `sigaction` are async-signal-safe.
    unsafe {
        if !path.is_null() {
            libc::unlink(path);
        }
        let k = FAULT_SIGNALS.iter().position(|&s| s == signal).unwrap_or(0);
        match FAULT_PREVIOUS[k].get() {
            Some(previous) => {
                libc::sigaction(signal, previous, std::ptr::null_mut());
            }
            None => {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

/// A SIGSEGV or SIGBUS sent by another process, not raised by a fault: removes the pending
/// temp file, then raises the signal again with its default action (it is blocked in the
/// handler, so the process ends by it once the handler returns), as [`on_abort`] does for the
/// other ending signals. Only async-signal-safe calls.
#[cfg(unix)]
fn end_by_sent_signal(signal: libc::c_int) {
    let path = REMOVE_ON_ABORT.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `path` came from `CString::into_raw` and is never freed; `unlink`, `signal` and
    // `raise` are async-signal-safe.
    unsafe {
        if !path.is_null() {
            libc::unlink(path);
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

#[cfg(unix)]
std::thread_local! {
    /// The plugin call under way on this thread, as the line an `exit` inside it prints (the
    /// pointer and length of a [`PluginCall`]'s message, alive while the call is), or none.
    static IN_PLUGIN_CALL: std::cell::Cell<Option<(*const u8, usize)>> =
        const { std::cell::Cell::new(None) };
}

/// Marks a call into a plugin on this thread, so that a plugin that ends the process with
/// `exit` during it (a C library's error path, a stray `std::process::exit`) fails the run:
/// the `atexit` handler [`exit_during_a_plugin_call`] removes the pending temp file, says which
/// plugin ended the process, and exits 5, where the process used to end with the plugin's
/// status (0 for `exit(0)`, with no output written and the temp file left behind).
struct PluginCall {
    #[cfg(unix)]
    message: String,
    #[cfg(unix)]
    outer: Option<(*const u8, usize)>,
}

impl PluginCall {
    /// `doing` what, e.g. `reading format 'x'`, for the message.
    fn enter(plugin: &str, doing: std::fmt::Arguments<'_>) -> PluginCall {
        #[cfg(unix)]
        {
            static INSTALL: std::sync::Once = std::sync::Once::new();
            // Miri has no `atexit` (the ABI's pointer code is checked under it without it).
            #[cfg(not(miri))]
            INSTALL.call_once(|| {
                // SAFETY: registers a handler that only reads a thread-local and makes
                // async-signal-safe calls; a failure to register only loses the check.
                unsafe {
                    libc::atexit(exit_during_a_plugin_call);
                }
            });
            let message = format!(
                "profconv: error: plugin '{}' ended the process (it called exit) while \
                 {doing}; the run failed\n",
                crate::escape_controls(plugin)
            );
            let outer = IN_PLUGIN_CALL.with(|c| c.replace(Some((message.as_ptr(), message.len()))));
            PluginCall { message, outer }
        }
        #[cfg(not(unix))]
        {
            let _ = (plugin, doing);
            PluginCall {}
        }
    }
}

impl Drop for PluginCall {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            let _ = &self.message;
            IN_PLUGIN_CALL.with(|c| c.set(self.outer));
        }
    }
}

/// The `atexit` handler of [`PluginCall`]: `exit` called on a thread that is inside a call
/// into a plugin. The host's own exits (the end of `main`, an interrupt's handler thread) are
/// never inside one, and pass.
#[cfg(unix)]
extern "C" fn exit_during_a_plugin_call() {
    let Ok(Some((ptr, len))) = IN_PLUGIN_CALL.try_with(|c| c.get()) else {
        return;
    };
    let temp = REMOVE_ON_ABORT.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `ptr`/`len` are the message of the `PluginCall` still alive on this thread's
    // stack (`exit` does not unwind); a non-null `temp` came from `CString::into_raw` and is
    // never freed; `unlink`, `write` and `_exit` are async-signal-safe.
    unsafe {
        if !temp.is_null() {
            libc::unlink(temp);
        }
        libc::write(2, ptr.cast(), len);
        libc::_exit(5);
    }
}

/// The effective user id of this process: whose files it may trust as its own.
#[cfg(unix)]
pub fn effective_uid() -> u32 {
    // SAFETY: `geteuid` takes no argument, cannot fail and touches no memory of the process.
    unsafe { libc::geteuid() }
}

/// Whether this process may write the file at `path`, by its effective user and groups
/// (`faccessat` with `AT_EACCESS`): asked without opening it, which would tell file watchers
/// it was written. True where the system cannot say (not unix, a name with a NUL byte).
pub fn may_write(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
            return true;
        };
        // SAFETY: `c` is a valid NUL-terminated string that outlives the call; `faccessat`
        // only reads it and touches no other memory of the process.
        let r =
            unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
        let e = std::io::Error::last_os_error().raw_os_error();
        // EPERM: an immutable file (`chflags uchg`) off Linux. On Linux the attributes are
        // asked apart ([`replacing_forbidden_by`]), and an older container's seccomp profile
        // answers glibc's `faccessat2` with EPERM for every file.
        let immutable = cfg!(not(target_os = "linux")) && e == Some(libc::EPERM);
        r == 0 || !(e == Some(libc::EACCES) || immutable)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        true
    }
}

/// Whether descriptor `n` is open for reading only (`1<file`, `7</dev/null`): a write to it
/// fails with EBADF, which Rust's stdout takes for success, so output sent there would vanish
/// with exit 0. False when it is not open, or open for writing.
#[cfg(unix)]
pub fn read_only_descriptor(n: u32) -> bool {
    access_mode(n) == Some(libc::O_RDONLY)
}

/// Whether descriptor `n` is open for writing only (`0>file`): a read of it fails with EBADF,
/// which Rust's stdin takes for the end of the input, so stdin read so would be an empty input
/// with exit 0. False when it is not open, or open for reading.
#[cfg(unix)]
pub fn write_only_descriptor(n: u32) -> bool {
    access_mode(n) == Some(libc::O_WRONLY)
}

/// The access mode (`O_RDONLY`, `O_WRONLY`, `O_RDWR`) descriptor `n` is open with; `None` when
/// it is not open.
#[cfg(unix)]
fn access_mode(n: u32) -> Option<libc::c_int> {
    let n = libc::c_int::try_from(n).ok()?;
    // SAFETY: `fcntl(F_GETFL)` reads and writes no memory of the process; given a descriptor
    // that is not open it fails with EBADF (-1).
    let flags = unsafe { libc::fcntl(n, libc::F_GETFL) };
    (flags >= 0).then_some(flags & libc::O_ACCMODE)
}

/// Whether descriptor `n` is a terminal whose foreground is another process group than this
/// process's: a job run with `&` from an interactive shell, or stopped and resumed with `bg`.
/// What such a process draws on the terminal lands on the shell's prompt and on what the user
/// types there (and with `stty tostop` the write stops the process). False for a descriptor
/// that is not a terminal, or not this process's controlling terminal.
#[cfg(unix)]
pub fn in_background_of(n: u32) -> bool {
    let Ok(n) = libc::c_int::try_from(n) else {
        return false;
    };
    // SAFETY: `tcgetpgrp` reads and writes no memory of the process; given a descriptor that
    // is not the controlling terminal, it fails (-1).
    let foreground = unsafe { libc::tcgetpgrp(n) };
    // SAFETY: `getpgrp` takes nothing and cannot fail.
    foreground > 0 && foreground != unsafe { libc::getpgrp() }
}

/// Descriptor `n` of this process as a file of its own: a duplicate (`F_DUPFD_CLOEXEC`) that
/// shares the open file, its position and its flags with `n`, so that writes to it land where
/// the process's other writes to `n` land, as the shell's `> /dev/fd/N` writes (opening
/// `/dev/fd/N` again would give a new position, or fail for a socket). An error (`EBADF`) if `n`
/// is not open.
#[cfg(unix)]
pub fn duplicate_descriptor(n: u32) -> io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let n = libc::c_int::try_from(n).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` reads and writes no memory of the process; given a
    // descriptor that is not open it fails with EBADF.
    let fd = unsafe { libc::fcntl(n, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just made by `fcntl` and nothing else owns it; the file closes it.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// A reader or writer on a descriptor that another process may have left non-blocking
/// (`O_NONBLOCK` belongs to the open file, shared with the shell, a terminal or the program at
/// the pipe's other end, some of which set it): where a read or write would block, it waits
/// for the descriptor with `poll` and tries again, as a blocking descriptor would, instead of
/// failing the conversion with `EAGAIN` ("Resource temporarily unavailable") part-way.
pub struct Blocking<T>(pub T);

#[cfg(unix)]
impl<T: std::os::fd::AsFd> Blocking<T> {
    fn wait(&self, events: libc::c_short) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut poll = libc::pollfd {
            fd: self.0.as_fd().as_raw_fd(),
            events,
            revents: 0,
        };
        loop {
            // SAFETY: `poll` reads and writes the one `pollfd` it is given (count 1), which
            // lives on this stack frame for the call; the descriptor is borrowed from `self.0`,
            // so it stays open meanwhile.
            let n = unsafe { libc::poll(&mut poll, 1, -1) };
            if n >= 0 {
                // Ready, or an error or hang-up the retried call itself reports.
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

#[cfg(unix)]
impl<T: Write + std::os::fd::AsFd> Write for Blocking<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.0.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait(libc::POLLOUT)?,
                r => return r,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        loop {
            match self.0.flush() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait(libc::POLLOUT)?,
                r => return r,
            }
        }
    }
}

#[cfg(unix)]
impl<T: Read + std::os::fd::AsFd> Read for Blocking<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.0.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait(libc::POLLIN)?,
                r => return r,
            }
        }
    }
}

// Elsewhere a descriptor is not shared that way: the calls pass through.
#[cfg(not(unix))]
impl<T: Write> Write for Blocking<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(not(unix))]
impl<T: Read> Read for Blocking<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

/// A regular file mapped read-only into memory: a parser given its bytes as the whole input
/// reads them in place, where a stream would have the kernel copy every byte into a buffer
/// first (a tenth of the CPU of a 1 GB folded conversion). The pages a parser has released
/// ([`Self::release`]) are dropped, so the mapping holds about [`Self::AHEAD`] bytes at a time,
/// not the file.
pub struct MappedFile {
    map: memmap2::Mmap,
    /// Bytes before this were dropped.
    released: std::cell::Cell<usize>,
    /// Bytes before this were asked to be mapped.
    populated: std::cell::Cell<usize>,
}

/// Whether a file of `len` bytes is mapped under the address-space limit `limit`: when it
/// takes at most an eighth of it.
fn maps_within(len: u64, limit: Option<u64>) -> bool {
    limit.is_none_or(|limit| len <= limit / 8)
}

/// Whether a file of `len` bytes, read by a parser that releases it behind it, is better read
/// than mapped: under an address-space limit (`ulimit -v`) a mapping counts its whole size,
/// though few of its pages are ever resident, so a file of more than an eighth of the limit
/// is read, and the conversion's own memory keeps its room (a 200 MB file under
/// `ulimit -v 300000` aborted for memory where the same bytes from stdin converted). A parser
/// that holds the whole input maps it whatever the limit: reading it takes as much.
pub fn read_rather_than_map(len: u64) -> bool {
    #[cfg(unix)]
    {
        !maps_within(len, address_space_limit())
    }
    #[cfg(not(unix))]
    {
        let _ = len;
        false
    }
}

/// Whether `e` says a file name is longer than the file system takes (`ENAMETOOLONG`, "File
/// name too long"; `io::ErrorKind::InvalidFilename` is newer than the workspace's MSRV).
pub fn name_too_long(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ENAMETOOLONG)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Under an address-space limit, one allocator arena for every thread (glibc gives each
/// thread that allocates at once an arena of its own, 64 MB of address space each, which a
/// limit counts whole: a conversion on four threads aborted where one thread converted).
pub fn share_allocator_arenas_under_a_limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if address_space_limit().is_some() {
        // SAFETY: `mallopt` sets one of glibc's allocator parameters, for arenas made after
        // it; called before the conversion starts its threads.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// The soft address-space limit (`RLIMIT_AS`, `ulimit -v`) in bytes, when there is one.
#[cfg(unix)]
pub fn address_space_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` writes one `rlimit` to the pointer given, a valid local.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    // `rlim_t` is `u64` here, not on every unix.
    #[allow(clippy::unnecessary_cast)]
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as u64)
}

impl MappedFile {
    /// Files smaller than this are read, not mapped: mapping costs more than copying a few pages.
    pub const MIN_SIZE: u64 = 1 << 20;
    /// Pages are mapped this far ahead of what was released, in one call rather than one page
    /// fault per 64 KiB; released in steps of [`Self::STEP`].
    pub const AHEAD: usize = 8 << 20;
    /// Granularity of releases: a multiple of every page size (and fewer system calls).
    pub const STEP: usize = 2 << 20;

    /// Maps `file` when it is a regular file of at least [`Self::MIN_SIZE`] bytes; `None` for
    /// anything else (pipes, devices, `/proc` files whose size says nothing) and when mapping
    /// fails (an address-space limit, a file system that cannot map): such an input is read as
    /// a stream instead.
    ///
    /// The bytes are read-only and the host only reads them, but another process could still
    /// change the file (the bytes under the returned slice would change) or truncate it (a read
    /// of a page past the new end raises SIGBUS, as does a read error of the device). Use it
    /// only for inputs that nobody rewrites during the run, as ripgrep and git do with theirs
    /// (docs/reliability.md says so to users).
    pub fn new(file: &std::fs::File) -> Option<MappedFile> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() < Self::MIN_SIZE || meta.len() > usize::MAX as u64 {
            return None;
        }
        // SAFETY: a read-only shared mapping of a regular file that the host only reads. Rust's
        // rules would be broken only if another process changed or truncated the file during
        // the run, which profconv assumes does not happen to its inputs (see above).
        let map = unsafe { memmap2::MmapOptions::new().map(file) }.ok()?;
        let mapped = MappedFile {
            map,
            released: 0.into(),
            populated: 0.into(),
        };
        mapped.release(0);
        Some(mapped)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Drops the pages before `upto` (in whole [`Self::STEP`]s) and maps those up to
    /// [`Self::AHEAD`] bytes further. Failures are ignored: both are only advice.
    pub fn release(&self, upto: u64) {
        let len = self.map.len();
        let end = (upto.min(len as u64) as usize) / Self::STEP * Self::STEP;
        let from = self.released.get();
        if end > from {
            // SAFETY: on a read-only shared mapping of a file, MADV_DONTNEED only removes the
            // page-table entries: the address range stays mapped, and the next read of a page
            // faults the same page-cache bytes back in (nothing was written, so nothing is
            // lost). A slice the parser still borrows therefore keeps reading the same bytes,
            // under the assumption of `new` (the file is not changed during the run).
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    from,
                    end - from,
                )
            };
            self.released.set(end);
        }
        // Never below what was just dropped: a release that jumps past the pages mapped ahead
        // (a parser releasing more than `AHEAD` at once) would otherwise map dropped pages
        // again, and they would stay (measured: 16 MiB pieces on two threads kept 530 MB of a
        // 1 GB file mapped).
        let (ahead, populated) = ((end + Self::AHEAD).min(len), self.populated.get().max(end));
        // Ahead in steps too, not a few pages per call.
        #[cfg(target_os = "linux")]
        if ahead > populated && (ahead - populated >= Self::STEP || ahead == len) {
            let _ =
                self.map
                    .advise_range(memmap2::Advice::PopulateRead, populated, ahead - populated);
            self.populated.set(ahead);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (ahead, populated);
    }

    /// Bytes released so far (dropped from memory).
    pub fn released(&self) -> usize {
        self.released.get()
    }

    /// Until this mapping is dropped, a read of it that faults because the file shrank under
    /// it (another program truncated or rewrote it; SIGBUS) writes `message` to stderr and ends
    /// the process with exit code `code`, instead of crashing with the signal. A SIGBUS at any
    /// other address keeps its default action. One mapping is watched at a time (the latest).
    /// Linux only; elsewhere this does nothing.
    pub fn on_truncation(&self, message: &str, code: i32) {
        #[cfg(target_os = "linux")]
        truncation::watch(self.map.as_ptr() as usize, self.map.len(), message, code);
        #[cfg(not(target_os = "linux"))]
        let _ = (message, code);
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // Before the fields: the range is forgotten before it is unmapped.
        #[cfg(target_os = "linux")]
        truncation::unwatch(self.map.as_ptr() as usize);
    }
}

/// The SIGBUS handler of [`MappedFile::on_truncation`]: only async-signal-safe calls (`write`,
/// `_exit`, `signal`, `raise`) and atomics in the handler. What is watched is one leaked
/// [`Watch`] behind one pointer, so the handler reads a range, a message and a code that belong
/// together whatever another thread is doing.
#[cfg(target_os = "linux")]
mod truncation {
    use std::sync::Once;
    use std::sync::atomic::{AtomicPtr, Ordering::SeqCst};

    struct Watch {
        start: usize,
        len: usize,
        message: &'static [u8],
        code: i32,
    }

    /// Null: nothing watched. Every `Watch` stored here is leaked (never freed), so a pointer
    /// the handler loaded stays valid even if another is stored meanwhile.
    static WATCHED: AtomicPtr<Watch> = AtomicPtr::new(std::ptr::null_mut());
    static INSTALL: Once = Once::new();
    /// The SIGBUS disposition in place before [`on_sigbus`] (the crash handler of
    /// `remove_on_abort`, the runtime's), which a fault outside the watched mapping goes to.
    static PREVIOUS: std::sync::OnceLock<libc::sigaction> = std::sync::OnceLock::new();

    extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // SAFETY: the kernel passes an SA_SIGINFO handler a valid `siginfo_t`; for a fault
        // `si_addr` is the faulting address (a signal sent by a process has `si_code` <= 0).
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        let w = WATCHED.load(SeqCst);
        // SAFETY: a non-null `WATCHED` points at a leaked, never-freed `Watch`.
        if let Some(w) = unsafe { w.as_ref() }
            && code > 0
            && addr.wrapping_sub(w.start) < w.len
        {
            // The output's temp file, made before the input is read, goes too.
            let temp = super::REMOVE_ON_ABORT.load(SeqCst);
            // SAFETY: `unlink`, `write` and `_exit` are async-signal-safe; a non-null `temp`
            // came from `CString::into_raw` and is never freed; `message` is a leaked buffer.
            unsafe {
                if !temp.is_null() {
                    libc::unlink(temp);
                }
                libc::write(2, w.message.as_ptr().cast(), w.message.len());
                libc::_exit(w.code);
            }
        }
        // A signal sent by a process (`kill -BUS`) ends the process by its default action,
        // the temp file removed first (it was left behind).
        if code <= 0 {
            super::end_by_sent_signal(libc::SIGBUS);
            return;
        }
        // Not a fault in the watched mapping: with the handler this one was put in front of
        // back (the crash handler, which removes the temp file, and the runtime's behind it),
        // a fault runs again on return into it.
        // SAFETY: `sigaction` and `signal` are async-signal-safe; `PREVIOUS` was set before this
        // handler was installed.
        unsafe {
            match PREVIOUS.get() {
                Some(previous) => {
                    libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut());
                }
                None => {
                    libc::signal(libc::SIGBUS, libc::SIG_DFL);
                }
            }
        }
    }

    fn install() {
        INSTALL.call_once(|| {
            // SAFETY: a zeroed `sigaction` is a valid value (no flags, empty mask) before the
            // fields are set, and one to be written; `on_sigbus` has the SA_SIGINFO handler
            // signature and only makes async-signal-safe calls.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) == 0 {
                    let _ = PREVIOUS.set(old);
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
            }
        });
    }

    pub fn watch(start: usize, len: usize, message: &str, code: i32) {
        install();
        let w = Box::leak(Box::new(Watch {
            start,
            len,
            message: Box::leak(message.as_bytes().into()),
            code,
        }));
        WATCHED.store(w, SeqCst);
    }

    pub fn unwatch(start: usize) {
        let w = WATCHED.load(SeqCst);
        // SAFETY: a non-null `WATCHED` points at a leaked, never-freed `Watch`.
        if unsafe { w.as_ref() }.is_some_and(|w| w.start == start) {
            // Only if it is still the one loaded: a later watch stays.
            let _ = WATCHED.compare_exchange(w, std::ptr::null_mut(), SeqCst, SeqCst);
        }
    }
}

/// What a parse reads.
pub struct ParseInput<'a> {
    /// The stream.
    pub reader: &'a mut dyn Read,
    /// The whole input if it is in memory (then `reader` is not used).
    pub whole: Option<&'a [u8]>,
    /// Size if known.
    pub size_hint: Option<u64>,
    /// Name for messages.
    pub name: &'a str,
    /// Worker threads the parser may use (0 or 1: the calling thread only).
    pub threads: usize,
    /// Called when the parser is done with `whole` before an offset (see
    /// [`HostCallbacks::release_input`]), e.g. [`MappedFile::release`].
    pub release: Option<&'a dyn Fn(u64)>,
}

/// A profile owned by a plugin, validated, released on drop.
pub struct ForeignProfile {
    export: Box<ProfileExport>,
}

impl ForeignProfile {
    /// The profile's columns (validated when the plugin returned them).
    pub fn view(&self) -> ProfileRef<'_> {
        // SAFETY: the export stays alive and unreleased while `self` lives.
        let view = unsafe { profile_ref_from_view(&self.export.view, Check::Done) };
        // Validated in `FormatHandle::parse` (the only constructor): only the slices are rebuilt.
        view.expect("validated when the plugin returned it")
    }
}

impl Drop for ForeignProfile {
    fn drop(&mut self) {
        if let Some(release) = self.export.release.take() {
            // SAFETY: the producer's release callback, called exactly once on its own export.
            unsafe { release(&mut *self.export) };
        }
    }
}

impl FormatHandle {
    /// The error of a call in which the plugin broke the callbacks' contract (`what` it did).
    fn breach(&self, what: &str) -> CallError {
        CallError::new(
            Status::INTERNAL,
            format!(
                "plugin '{}' {what} in format '{}' (a bug in the plugin)",
                self.plugin.name, self.id
            ),
        )
    }

    /// True if the format can parse.
    pub fn can_parse(&self) -> bool {
        self.caps & caps::PARSE != 0 && self.desc.parse.is_some()
    }
    /// True if the format can emit.
    pub fn can_emit(&self) -> bool {
        self.caps & caps::EMIT != 0 && self.desc.emit.is_some()
    }
    /// True if the format has a sniffer (recognises its files by content).
    pub fn sniffs(&self) -> bool {
        self.caps & caps::SNIFF != 0
            && (self.desc.sniff_checked.is_some() || self.desc.sniff.is_some())
    }

    /// The error of a call that returned `status`: what the plugin reported, with that status;
    /// one that reported nothing, or an empty message (`StrRef { null, 5 }` reads as empty),
    /// still says who failed `doing` what.
    fn failed(&self, reported: Option<CallError>, status: Status, doing: &str) -> CallError {
        let mut e = reported.unwrap_or_else(|| CallError::new(status, ""));
        if e.message.trim().is_empty() {
            e.message = format!(
                "plugin '{}' {doing} '{}' failed ({}) without a message",
                self.plugin.name,
                self.id,
                status.name()
            );
        }
        e.status = status;
        e
    }

    /// The capabilities declared without their function (`PARSE` with a null `parse`, ...):
    /// the host ignores such a bit; the conformance kit reports it.
    pub fn declared_without_function(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.caps & caps::PARSE != 0 && self.desc.parse.is_none() {
            missing.push("PARSE without `parse`");
        }
        if self.caps & caps::EMIT != 0 && self.desc.emit.is_none() {
            missing.push("EMIT without `emit`");
        }
        if self.caps & caps::SNIFF != 0 && !self.sniffs() {
            missing.push("SNIFF without `sniff`");
        }
        missing
    }
    /// True if the parser streams its input.
    pub fn streams_input(&self) -> bool {
        self.caps & caps::STREAMING_INPUT != 0
    }
    /// True if the parser may be given a mapped file whole: it reads its input whole anyway,
    /// or it streams and releases a whole input behind it (ABI 1.3,
    /// [`caps::RELEASES_WHOLE_INPUT`]).
    pub fn takes_mapped_input(&self) -> bool {
        !self.streams_input() || self.releases_whole_input()
    }
    /// True if the parser streams a whole input and tells the host how far it has read
    /// ([`caps::RELEASES_WHOLE_INPUT`]): its progress through a mapped file is known.
    pub fn releases_whole_input(&self) -> bool {
        self.streams_input() && self.caps & caps::RELEASES_WHOLE_INPUT != 0
    }

    /// Confidence 0..=100 that `head` is this format; 0 when the format has no sniffer. `Err`
    /// when the plugin's sniffer panicked (plugins of ABI 1.2 on say so; an older plugin's
    /// panicking sniffer scores 0).
    pub fn sniff(&self, head: &[u8]) -> Result<u32, SnifferPanicked> {
        if self.caps & caps::SNIFF == 0 {
            return Ok(0);
        }
        let _call = PluginCall::enter(
            &self.plugin.name,
            format_args!("sniffing for format '{}'", self.id),
        );
        if let Some(f) = self.desc.sniff_checked {
            let mut score = 0u32;
            // SAFETY: `head` is readable and `score` writable for the call; the trampoline
            // catches panics.
            let status = unsafe { f(head.as_ptr(), head.len(), &mut score) };
            return match status {
                Status::OK => Ok(score.min(100)),
                Status::PANIC => Err(SnifferPanicked),
                // A sniffer that failed otherwise (a C plugin's INTERNAL) did not recognise the
                // input: its score, set or not, is not taken (a score of 95 with INTERNAL claimed
                // every input).
                _ => Ok(0),
            };
        }
        match self.desc.sniff {
            // SAFETY: `head` is readable for the call; the trampoline catches panics.
            Some(f) => Ok(unsafe { f(head.as_ptr(), head.len()) }.min(100)),
            None => Ok(0),
        }
    }

    /// Checks option values before any input is read (ABI 1.5; `parse`: the options the
    /// format reads with, else those it writes with). `Ok` from a plugin that has no check: its
    /// call checks them.
    pub fn check_options(
        &self,
        options: &[(String, Option<String>)],
        parse: bool,
        log: &mut dyn FnMut(u32, &str),
    ) -> Result<(), CallError> {
        let Some(check) = self.desc.check_options else {
            return Ok(());
        };
        let opts = abi_options(options);
        let mut call = CallCtx {
            first_error: None,
            log,
            release: None,
        };
        let mut lent = LentContexts::default();
        let callbacks = HostCallbacks {
            struct_size: size_of::<HostCallbacks>() as u32,
            threads: 0,
            ctx: lent.lend(&mut call as *mut CallCtx<'_>, CtxKind::Call),
            report_error: host_report_error,
            log: host_log,
            release_input: None,
        };
        let phase = match parse {
            true => abi::option_phase::PARSE,
            false => abi::option_phase::EMIT,
        };
        let in_plugin = PluginCall::enter(
            &self.plugin.name,
            format_args!("checking the options of format '{}'", self.id),
        );
        // SAFETY: the options and the callbacks live across the call; the trampoline catches
        // panics.
        let status = unsafe { check(opts.as_ptr(), opts.len(), phase, &callbacks) };
        drop(in_plugin);
        drop(lent);
        if status != Status::OK {
            return Err(self.failed(call.first_error.take(), status, "checking the options of"));
        }
        Ok(())
    }

    /// Parses `input` with `options`; warnings go to `log(level, message)`.
    pub fn parse(
        &self,
        input: ParseInput<'_>,
        options: &[(String, Option<String>)],
        log: &mut dyn FnMut(u32, &str),
    ) -> Result<ForeignProfile, CallError> {
        let Some(parse) = self.desc.parse.filter(|_| self.can_parse()) else {
            return Err(CallError::new(
                Status::UNSUPPORTED,
                format!("format '{}' cannot be read", self.id),
            ));
        };
        let opts = abi_options(options);
        // With the whole input lent, `read` gives the same bytes from their start: a parser
        // that reads anyway (a C plugin that ignores `whole`) read nothing before, and gave an
        // empty profile with exit 0, only for inputs large enough to be mapped.
        let mut whole_reader: &[u8] = input.whole.unwrap_or_default();
        let mut read_ctx = ReadCtx {
            reader: match input.whole {
                Some(_) => &mut whole_reader,
                None => input.reader,
            },
            error: None,
            breach: false,
        };
        let mut lent = LentContexts::default();
        let stream = InputStream {
            ctx: lent.lend(&mut read_ctx as *mut ReadCtx<'_>, CtxKind::Read),
            read: host_read,
            whole: input.whole.map_or(StrRef::null(), |w| StrRef {
                ptr: w.as_ptr(),
                len: w.len(),
            }),
            size_hint: input.size_hint.unwrap_or(u64::MAX),
            name: StrRef::new(input.name),
        };
        let mut call = CallCtx {
            first_error: None,
            log,
            release: input.release,
        };
        let callbacks = HostCallbacks {
            struct_size: size_of::<HostCallbacks>() as u32,
            threads: input.threads.min(u32::MAX as usize) as u32,
            ctx: lent.lend(&mut call as *mut CallCtx<'_>, CtxKind::Call),
            report_error: host_report_error,
            log: host_log,
            release_input: Some(host_release_input),
        };
        // Zeroed, not uninitialized: a plugin that returns OK without writing it leaves a
        // valid export (no columns, no release function) that is refused below, not garbage
        // whose "release" the host would call.
        let mut out = std::mem::MaybeUninit::<ProfileExport>::zeroed();
        let in_plugin = PluginCall::enter(
            &self.plugin.name,
            format_args!("reading format '{}'", self.id),
        );
        // SAFETY: every pointer passed lives across the call; the plugin writes `out` only when
        // it returns OK.
        let status = unsafe {
            parse(
                opts.as_ptr(),
                opts.len(),
                &stream,
                &callbacks,
                out.as_mut_ptr(),
            )
        };
        drop(in_plugin);
        drop(lent);
        let io_error = read_ctx.error.take();
        let breach = read_ctx
            .breach
            .then(|| self.breach("read the input with a null pointer"));
        if status != Status::OK {
            if let Some(e) = breach {
                return Err(e);
            }
            let mut e = self.failed(call.first_error.take(), status, "reading");
            e.io = io_error;
            return Err(e);
        }
        // SAFETY: all zeros is a valid `ProfileExport` (null pointers, zero sizes, no release
        // function), and a plugin that returned OK wrote a whole one over it.
        let export = Box::new(unsafe { out.assume_init() });
        let foreign = ForeignProfile { export };
        // The plugin's profile is released when these return.
        if let Some(e) = breach {
            return Err(e);
        }
        // The host's own read failed (a corrupt gzip stream, a device error) and the plugin
        // went on as if the input had ended: the I/O error stands, as the ABI says, whatever
        // the plugin returned.
        if let Some(io) = io_error {
            let mut e = CallError::new(Status::IO, "reading the input failed");
            e.io = Some(io);
            return Err(e);
        }
        if foreign.export.view.struct_size == 0 && foreign.export.release.is_none() {
            return Err(CallError::new(
                Status::INTERNAL,
                format!(
                    "plugin '{}' returned success for format '{}' without a profile",
                    self.plugin.name, self.id
                ),
            ));
        }
        // SAFETY: the export's columns live until release (on drop of `foreign`).
        if let Err(e) = unsafe { profile_ref_from_view(&foreign.export.view, Check::Full) } {
            return Err(CallError::new(
                Status::INTERNAL,
                format!(
                    "plugin '{}' returned an invalid profile for format '{}': {e}",
                    self.plugin.name, self.id
                ),
            ));
        }
        Ok(foreign)
    }

    /// Writes `profile` to `writer` with `options`, on the calling thread only.
    pub fn emit(
        &self,
        profile: &ProfileRef<'_>,
        writer: &mut dyn Write,
        options: &[(String, Option<String>)],
        log: &mut dyn FnMut(u32, &str),
    ) -> Result<(), CallError> {
        self.emit_with_threads(profile, writer, options, 0, log)
    }

    /// Writes `profile` to `writer` with `options`; the emitter may use `threads` worker
    /// threads (0 or 1: the calling thread only).
    pub fn emit_with_threads(
        &self,
        profile: &ProfileRef<'_>,
        writer: &mut dyn Write,
        options: &[(String, Option<String>)],
        threads: usize,
        log: &mut dyn FnMut(u32, &str),
    ) -> Result<(), CallError> {
        let Some(emit) = self.desc.emit.filter(|_| self.can_emit()) else {
            return Err(CallError::new(
                Status::UNSUPPORTED,
                format!("format '{}' cannot be written", self.id),
            ));
        };
        // The view gives each table one count, from one of its columns: a shorter column (safe
        // code builds one: the fields are public) would be read past its end by the plugin, as
        // `parse` guards against in a plugin's profile.
        profile.check_column_lengths().map_err(|e| {
            CallError::new(
                Status::INTERNAL,
                format!("a profile to write in format '{}' is invalid: {e}", self.id),
            )
        })?;
        let opts = abi_options(options);
        let storage = ViewStorage::new(profile);
        let view = storage.view(profile);
        let mut write_ctx = WriteCtx {
            writer,
            error: None,
            breach: false,
        };
        let mut lent = LentContexts::default();
        let stream = OutputStream {
            ctx: lent.lend(&mut write_ctx as *mut WriteCtx<'_>, CtxKind::Write),
            write: host_write,
        };
        let mut call = CallCtx {
            first_error: None,
            log,
            release: None,
        };
        let callbacks = HostCallbacks {
            struct_size: size_of::<HostCallbacks>() as u32,
            threads: threads.min(u32::MAX as usize) as u32,
            ctx: lent.lend(&mut call as *mut CallCtx<'_>, CtxKind::Call),
            report_error: host_report_error,
            log: host_log,
            release_input: None,
        };
        let in_plugin = PluginCall::enter(
            &self.plugin.name,
            format_args!("writing format '{}'", self.id),
        );
        // SAFETY: the view's columns (borrowed from `profile` and `storage`), the streams and
        // the callbacks all live across the call.
        let status = unsafe { emit(opts.as_ptr(), opts.len(), &view, &stream, &callbacks) };
        drop(in_plugin);
        drop(lent);
        if write_ctx.breach {
            return Err(self.breach("wrote with a null buffer"));
        }
        if status != Status::OK {
            let mut e = self.failed(call.first_error.take(), status, "writing");
            e.io = write_ctx.error.take();
            return Err(e);
        }
        // The host's own write failed (a full disk, a file-size limit) and the emitter did not
        // say so: the output is short, and must not be taken for a whole one.
        if let Some(io) = write_ctx.error.take() {
            let mut e = CallError::new(Status::IO, "writing the output failed");
            e.io = Some(io);
            return Err(e);
        }
        Ok(())
    }
}

// SAFETY: a FormatHandle only holds a reference to an immutable static descriptor of a library
// that is never unloaded, plus owned data; the plugin contract says formats may be called from
// any thread.
unsafe impl Send for FormatHandle {}
// SAFETY: as above.
unsafe impl Sync for FormatHandle {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table's count and pointer are checked before any element is read: a count past 4096
    /// and a null pointer under a count are each their own error, naming the count.
    #[test]
    fn a_table_is_checked_before_it_is_read() {
        let origin = PluginOrigin::Static("t".into());
        let some = 1u8;
        let message = |n: usize, ptr: *const u8| match check_table("format", n, ptr, &origin) {
            Err(LoadError::Malformed(_, m)) => m,
            other => panic!("{n}: {other:?}"),
        };
        assert!(check_table("format", 0, std::ptr::null::<u8>(), &origin).is_ok());
        assert!(check_table("option", 4096, &some as *const u8, &origin).is_ok());
        assert_eq!(
            message(4097, &some),
            "bad format table: 4097 formats (at most 4096)"
        );
        assert_eq!(
            message(3, std::ptr::null()),
            "bad format table: 3 formats at a null pointer"
        );
    }

    /// A 64-bit little-endian ELF file of `len` bytes whose program headers are `loads`
    /// (p_offset, p_filesz), each a PT_LOAD, the table right after the ELF header.
    fn elf64_with_loads(loads: &[(u64, u64)], len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2; // ELFCLASS64
        b[5] = 1; // ELFDATA2LSB
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        b[0x38..0x3a].copy_from_slice(&(loads.len() as u16).to_le_bytes()); // e_phnum
        for (k, &(offset, filesz)) in loads.iter().enumerate() {
            let h = 64 + 56 * k;
            b[h..h + 4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
            b[h + 8..h + 16].copy_from_slice(&offset.to_le_bytes());
            b[h + 32..h + 40].copy_from_slice(&filesz.to_le_bytes());
        }
        b
    }

    /// A segment of no file bytes (`.bss` alone) whose offset is past the end of the file is
    /// no sign of a cut (glibc loads such a library: it maps nothing of it from the file); a
    /// segment whose bytes the file lacks is.
    #[test]
    fn a_segment_of_no_file_bytes_past_the_end_is_no_cut() {
        let path = std::env::temp_dir().join(format!("profconv-elf-{}", std::process::id()));
        let whole = elf64_with_loads(&[(0, 4096), (0x3000, 0)], 4096);
        std::fs::write(&path, &whole).unwrap();
        assert_eq!(truncated_elf(&path), None);
        let cut = elf64_with_loads(&[(0, 4096), (0x3000, 0)], 2048);
        std::fs::write(&path, &cut).unwrap();
        let why = truncated_elf(&path).expect("a cut file");
        assert!(
            why.contains("a loadable segment reaches byte 4096"),
            "{why}"
        );
        std::fs::remove_file(&path).unwrap();
    }

    /// A file is mapped only when it takes at most an eighth of an address-space limit: the
    /// mapping holds the file's whole size of it ([`read_rather_than_map`]). The limit is read
    /// from `getrlimit`, here in a child process run under `ulimit -v`.
    #[test]
    fn a_file_is_mapped_only_within_an_eighth_of_the_address_space_limit() {
        assert!(maps_within(1 << 40, None));
        assert!(maps_within(100, Some(800)));
        assert!(!maps_within(101, Some(800)));
        #[cfg(target_os = "linux")]
        {
            const CHILD: &str = "PROFCONV_TEST_RLIMIT_CHILD";
            if std::env::var_os(CHILD).is_some() {
                assert_eq!(address_space_limit(), Some(4_000_000 * 1024));
                return;
            }
            let exe = std::env::current_exe().unwrap();
            let out = std::process::Command::new("sh")
                .args(["-c", "ulimit -v 4000000 && exec \"$0\" --exact \"$1\""])
                .arg(exe)
                .arg("host::tests::a_file_is_mapped_only_within_an_eighth_of_the_address_space_limit")
                .env(CHILD, "1")
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && said.contains("1 passed"), "{said}");
        }
    }

    /// A signal that comes while the interrupt handlers are being put in place (the host's
    /// set, `note_interrupt` not yet in front of it) is noted all the same, and the process
    /// ends by it: it went to the host's handler alone, and the process exited 130 (a shell
    /// loop went on). One the process was started ignoring, sent in between, is still
    /// ignored: the host's handler, there for a moment, ended a `nohup` run. Runs itself as a
    /// child process (the ending is the process's).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_signal_while_the_interrupt_handlers_are_set_is_noted_and_ends_the_process() {
        use std::os::unix::process::ExitStatusExt;
        use std::sync::atomic::{AtomicI32, Ordering};
        const CHILD: &str = "PROFCONV_TEST_EARLY_SIGNAL_CHILD";
        static SEEN: AtomicI32 = AtomicI32::new(0);
        extern "C" fn host_handler(signal: libc::c_int) {
            SEEN.fetch_or(1 << signal, Ordering::SeqCst);
        }
        if std::env::var_os(CHILD).is_some() {
            // SAFETY: the handler only sets bits of an atomic; `raise` sends to this thread.
            unsafe {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                handle_interrupts_unless_ignored(|| {
                    for signal in INTERRUPT_SIGNALS {
                        libc::signal(signal, host_handler as *const () as libc::sighandler_t);
                    }
                    libc::raise(libc::SIGHUP);
                    libc::raise(libc::SIGTERM);
                });
            }
            println!("seen {:#x}", SEEN.load(Ordering::SeqCst));
            end_by_interrupt(77);
        }
        let out = run_test_as_child(
            "host::tests::a_signal_while_the_interrupt_handlers_are_set_is_noted_and_ends_the_process",
            CHILD,
            Path::new("-"),
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGTERM),
            "{:?}: {said}",
            out.status
        );
        let seen = format!("seen {:#x}", 1 << libc::SIGTERM);
        assert!(said.contains(&seen), "{said}");
    }

    /// Runs test `name` of this binary alone in a child process, with `var` set to `path` (the
    /// test then does what ends that process, and its parent checks how it ended).
    #[cfg(target_os = "linux")]
    fn run_test_as_child(name: &str, var: &str, path: &Path) -> std::process::Output {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(var, path)
            .output()
            .unwrap()
    }

    /// A mapped file truncated under the reader: the read faults (SIGBUS) and the process ends
    /// with the watched message and code instead of the signal, and removes the output's temp
    /// file (made before the input is read). Runs itself as a child process (the ending is the
    /// process's).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_file_that_shrinks_ends_the_process_with_a_message_not_sigbus() {
        const CHILD: &str = "PROFCONV_TEST_SHRINK_CHILD";
        let temp_of = |path: &Path| path.with_extension("tmp");
        if let Some(path) = std::env::var_os(CHILD) {
            let path = PathBuf::from(path);
            remove_on_abort(Some(&temp_of(&path)));
            let f = std::fs::File::options()
                .read(true)
                .write(true)
                .open(path)
                .unwrap();
            let m = MappedFile::new(&f).unwrap();
            m.on_truncation("test: the input shrank\n", 4);
            f.set_len(0).unwrap();
            let last = std::hint::black_box(m.bytes()[m.bytes().len() - 1]);
            println!("read {last} past the end");
            std::process::exit(0);
        }
        let path = std::env::temp_dir().join(format!("profconv-shrink-{}", std::process::id()));
        std::fs::write(&path, vec![b'x'; 2 * MappedFile::MIN_SIZE as usize]).unwrap();
        std::fs::write(temp_of(&path), b"half an output").unwrap();
        let out = run_test_as_child(
            "host::tests::a_mapped_file_that_shrinks_ends_the_process_with_a_message_not_sigbus",
            CHILD,
            &path,
        );
        std::fs::remove_file(&path).unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{:?}: {err}", out.status);
        assert!(err.contains("test: the input shrank"), "{err}");
        let left = temp_of(&path).exists();
        let _ = std::fs::remove_file(temp_of(&path));
        assert!(!left, "the temp file was left behind");
    }

    /// A fault (SIGBUS) outside the watched mapping, while a mapped input is watched (a
    /// plugin's bad read of another mapping), still removes the output's temp file, then ends
    /// the process by the signal: the truncation handler hands it to the crash handler it was
    /// put in front of. It put the default action back, and the temp file was left.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_fault_outside_the_watched_mapping_still_removes_the_temp_file() {
        use std::os::unix::process::ExitStatusExt;
        const CHILD: &str = "PROFCONV_TEST_OTHER_SIGBUS_CHILD";
        let temp_of = |path: &Path| path.with_extension("tmp");
        if let Some(path) = std::env::var_os(CHILD) {
            let path = PathBuf::from(path);
            remove_on_abort(Some(&temp_of(&path)));
            let input = std::fs::File::open(&path).unwrap();
            let m = MappedFile::new(&input).unwrap();
            m.on_truncation("test: the input shrank\n", 4);
            // Another file, mapped past its end: reading there is a SIGBUS at an address
            // outside the watched mapping.
            let other = path.with_extension("other");
            let f = std::fs::File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&other)
                .unwrap();
            f.set_len(1).unwrap();
            // SAFETY: a fresh shared read-only mapping of two pages of a 1-byte file.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    8192,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    std::os::fd::AsRawFd::as_raw_fd(&f),
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            // SAFETY: inside the mapping; past the file's end, which faults (the point).
            let byte = unsafe { std::ptr::read_volatile((p as *const u8).add(4096)) };
            println!("read {byte} past the end");
            std::process::exit(0);
        }
        let path = std::env::temp_dir().join(format!("profconv-bus-{}", std::process::id()));
        std::fs::write(&path, vec![b'x'; 2 * MappedFile::MIN_SIZE as usize]).unwrap();
        std::fs::write(temp_of(&path), b"half an output").unwrap();
        let out = run_test_as_child(
            "host::tests::a_fault_outside_the_watched_mapping_still_removes_the_temp_file",
            CHILD,
            &path,
        );
        std::fs::remove_file(&path).unwrap();
        let _ = std::fs::remove_file(path.with_extension("other"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGBUS),
            "{:?}: {err}",
            out.status
        );
        assert!(!err.contains("test: the input shrank"), "{err}");
        let left = temp_of(&path).exists();
        let _ = std::fs::remove_file(temp_of(&path));
        assert!(!left, "the temp file was left behind");
    }

    use crate::abi::{
        EmitFn, MAGIC, OptionDesc, ParseFn, PluginHeader, SniffFn, StrRef, caps, min_size,
    };

    /// `FormatDesc` as ABI 1.0 and 1.1 lay it out: 96 bytes, without 1.2's `sniff_checked`.
    #[repr(C)]
    struct FormatDesc11 {
        struct_size: u32,
        caps: u32,
        id: StrRef,
        description: StrRef,
        extensions: StrRef,
        options: *const OptionDesc,
        n_options: usize,
        sniff: Option<SniffFn>,
        parse: Option<ParseFn>,
        emit: Option<EmitFn>,
    }

    // SAFETY: immutable statics.
    unsafe impl Sync for FormatDesc11 {}

    #[repr(C)]
    struct Descriptor11 {
        header: PluginHeader,
        formats: *const FormatDesc11,
        n_formats: usize,
    }

    // SAFETY: immutable statics.
    unsafe impl Sync for Descriptor11 {}

    unsafe extern "C" fn sniff_a(_: *const u8, _: usize) -> u32 {
        70
    }

    unsafe extern "C" fn sniff_b(_: *const u8, _: usize) -> u32 {
        30
    }

    const fn format(id: &'static str, sniff: SniffFn) -> FormatDesc11 {
        FormatDesc11 {
            struct_size: size_of::<FormatDesc11>() as u32,
            caps: caps::SNIFF,
            id: StrRef::from_static(id),
            description: StrRef::from_static(""),
            extensions: StrRef::from_static(""),
            options: std::ptr::null(),
            n_options: 0,
            sniff: Some(sniff),
            parse: None,
            emit: None,
        }
    }

    /// Options as a plugin before ABI 1.4 declares them: the `phases` word was reserved (zero,
    /// or whatever a hand-written plugin left there, which is not read).
    static OPTIONS_1_1: [OptionDesc; 2] = [
        OptionDesc::flag("x", "an option of ABI 1.1"),
        OptionDesc::flag("y", "reserved word not zero").parse_only(),
    ];

    static FORMATS: [FormatDesc11; 2] = [
        FormatDesc11 {
            options: &OPTIONS_1_1 as *const [OptionDesc; 2] as *const OptionDesc,
            n_options: 2,
            ..format("a", sniff_a)
        },
        format("b", sniff_b),
    ];

    /// The header of a hand-built plugin of ABI 1.`minor` whose descriptor takes `size` bytes.
    const fn header(name: &'static str, minor: u32, size: usize) -> PluginHeader {
        PluginHeader {
            magic: MAGIC,
            abi_major: 1,
            abi_minor: minor,
            descriptor_size: size as u32,
            panic_unwind: 1,
            plugin_name: StrRef::from_static(name),
            plugin_version: StrRef::from_static("1.0.0"),
            sdk_version: StrRef::from_static("0.1.0"),
        }
    }

    static DESCRIPTOR: Descriptor11 = Descriptor11 {
        header: header("minor1", 1, size_of::<Descriptor11>()),
        formats: &FORMATS as *const [FormatDesc11; 2] as *const FormatDesc11,
        n_formats: 2,
    };

    extern "C" fn entry_1_1(_: *const HostInfo) -> *const PluginHeader {
        std::ptr::addr_of!(DESCRIPTOR).cast::<PluginHeader>()
    }

    /// A hand-built plugin breaking the contract in ways the SDK never does, one format each.
    mod contract_breakers {
        use super::*;
        use crate::abi::{HostCallbacks, InputStream, OutputStream, ProfileExport, ProfileView};

        /// Returns OK and never writes the profile.
        pub unsafe extern "C" fn parse_without_profile(
            _: *const OptionValue,
            _: usize,
            _: *const InputStream,
            _: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            Status::OK
        }

        /// Reads until the host's read fails, then returns OK as if the input had ended.
        pub unsafe extern "C" fn parse_past_a_read_error(
            _: *const OptionValue,
            _: usize,
            input: *const InputStream,
            _: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            let mut buf = [0u8; 16];
            let mut n = 0usize;
            // SAFETY: the host lends a valid stream for the call.
            let input = unsafe { &*input };
            // SAFETY: as the contract says: a buffer of 16 writable bytes, a writable count.
            while unsafe { (input.read)(input.ctx, buf.as_mut_ptr(), buf.len(), &mut n) }
                == Status::OK
                && n > 0
            {}
            Status::OK
        }

        /// Reads with a null count, ignores the failure, and returns OK.
        pub unsafe extern "C" fn parse_with_a_null_count(
            _: *const OptionValue,
            _: usize,
            input: *const InputStream,
            _: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            let mut buf = [0u8; 16];
            // SAFETY: the host lends a valid stream for the call.
            let input = unsafe { &*input };
            // SAFETY: a buffer of 16 writable bytes; the null count is the contract breach under
            // test, which the host must refuse without writing through it.
            let _ = unsafe { (input.read)(input.ctx, buf.as_mut_ptr(), 16, std::ptr::null_mut()) };
            Status::OK
        }

        /// Reports an error whose message is 1 MiB long.
        pub unsafe extern "C" fn parse_with_a_huge_message(
            _: *const OptionValue,
            _: usize,
            _: *const InputStream,
            host: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            let text = "é".repeat(1 << 19);
            // SAFETY: the host lends valid callbacks; the message lives across the call.
            unsafe {
                let host = &*host;
                (host.report_error)(
                    host.ctx,
                    Status::INVALID_INPUT,
                    StrRef::new(&text),
                    u64::MAX,
                    u64::MAX,
                    u64::MAX,
                );
            }
            Status::INVALID_INPUT
        }

        /// What [`parse_keeping_callbacks`] kept of the callbacks it was lent.
        pub struct Kept {
            pub host: HostCallbacks,
            pub read_ctx: usize,
            pub read: unsafe extern "C" fn(*mut c_void, *mut u8, usize, *mut usize) -> Status,
        }

        // SAFETY: only the test that made it uses it, on its own thread.
        unsafe impl Send for Kept {}

        pub static KEPT: std::sync::Mutex<Option<Kept>> = std::sync::Mutex::new(None);

        /// Keeps the callbacks and the input's `read` past its call (a contract breach: the
        /// test calls them afterwards), and fails.
        pub unsafe extern "C" fn parse_keeping_callbacks(
            _: *const OptionValue,
            _: usize,
            input: *const InputStream,
            host: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            // SAFETY: the host lends a valid stream and callbacks for the call.
            let (input, host) = unsafe { (&*input, *host) };
            *KEPT.lock().unwrap() = Some(Kept {
                host,
                read_ctx: input.ctx as usize,
                read: input.read,
            });
            Status::INVALID_INPUT
        }

        /// Calls the `read` that [`parse_keeping_callbacks`] kept, during a call of its own
        /// (whose context may sit where the kept one's did), and reports what it got.
        pub unsafe extern "C" fn parse_using_kept_callbacks(
            _: *const OptionValue,
            _: usize,
            _: *const InputStream,
            host: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            let kept = KEPT.lock().unwrap().take().unwrap();
            let mut buf = [0u8; 4];
            let mut n = 0usize;
            // SAFETY: the kept function is the host's and its context stale (the breach under
            // test); the host lends valid callbacks for this call; `buf` and `n` are writable.
            unsafe {
                let status = (kept.read)(kept.read_ctx as *mut c_void, buf.as_mut_ptr(), 4, &mut n);
                let text = format!("kept read: {status:?} {n}");
                report(host, StrRef::new(&text))
            }
        }

        /// Reports `message` as the call's error, with no position, and fails.
        ///
        /// # Safety
        /// `host` is the callbacks lent for the ongoing call; `message` is readable.
        unsafe fn report(host: *const HostCallbacks, message: StrRef) -> Status {
            // SAFETY: the caller's contract.
            unsafe {
                let host = &*host;
                (host.report_error)(
                    host.ctx,
                    Status::INVALID_INPUT,
                    message,
                    u64::MAX,
                    u64::MAX,
                    u64::MAX,
                );
            }
            Status::INVALID_INPUT
        }

        /// Reads its input through `read` (whatever `whole` holds) and reports how many bytes
        /// it got, with an empty message first when it got none.
        pub unsafe extern "C" fn parse_by_reading(
            _: *const OptionValue,
            _: usize,
            input: *const InputStream,
            host: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            let mut buf = [0u8; 7];
            let mut total = 0usize;
            // SAFETY: the host lends a valid stream and callbacks for the call; `buf` and `n`
            // are writable.
            unsafe {
                let input = &*input;
                loop {
                    let mut n = 0usize;
                    if (input.read)(input.ctx, buf.as_mut_ptr(), buf.len(), &mut n) != Status::OK
                        || n == 0
                    {
                        break;
                    }
                    total += n;
                }
                let text = format!("read {total} bytes");
                let message = match total {
                    0 => StrRef {
                        ptr: std::ptr::null(),
                        len: 5,
                    },
                    _ => StrRef::new(&text),
                };
                report(host, message)
            }
        }

        /// Writes 64 KiB, ignores the failed write, returns OK.
        pub unsafe extern "C" fn emit_past_a_write_error(
            _: *const OptionValue,
            _: usize,
            _: *const ProfileView,
            output: *const OutputStream,
            _: *const HostCallbacks,
        ) -> Status {
            let data = vec![b'x'; 64 << 10];
            // SAFETY: the host lends a valid stream for the call.
            let output = unsafe { &*output };
            // SAFETY: `data` is readable for the call.
            let _ = unsafe { (output.write)(output.ctx, data.as_ptr(), data.len()) };
            Status::OK
        }

        /// Calls of `log` each of two threads of its own makes during the call.
        pub const LOGS_PER_THREAD: usize = 2;

        /// The callbacks, shared with the threads the plugin starts during its call.
        struct Shared(HostCallbacks);

        // SAFETY: the test shares them on purpose: calling them from several threads at once
        // is the breach under test.
        unsafe impl Sync for Shared {}

        /// Logs from two threads of its own at once during its call (a breach: callbacks are
        /// called from the thread that made the call), waits for them, and fails.
        pub unsafe extern "C" fn parse_logging_from_two_threads(
            _: *const OptionValue,
            _: usize,
            _: *const InputStream,
            host: *const HostCallbacks,
            _: *mut ProfileExport,
        ) -> Status {
            // SAFETY: the host lends valid callbacks for the call.
            let shared = Shared(unsafe { *host });
            let shared = &shared;
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(move || {
                        for _ in 0..LOGS_PER_THREAD {
                            // SAFETY: the callbacks are lent for the call, which lasts until
                            // both threads end; the message is readable.
                            unsafe { (shared.0.log)(shared.0.ctx, 1, StrRef::new("w")) };
                        }
                    });
                }
            });
            Status::INVALID_INPUT
        }

        pub const fn format(
            id: &'static str,
            parse: Option<ParseFn>,
            emit: Option<EmitFn>,
        ) -> FormatDesc11 {
            FormatDesc11 {
                struct_size: size_of::<FormatDesc11>() as u32,
                caps: if parse.is_some() {
                    caps::PARSE
                } else {
                    caps::EMIT
                },
                id: StrRef::from_static(id),
                description: StrRef::from_static(""),
                extensions: StrRef::from_static(""),
                options: std::ptr::null(),
                n_options: 0,
                sniff: None,
                parse,
                emit,
            }
        }
    }

    static BREAKERS: [FormatDesc11; 9] = [
        contract_breakers::format(
            "no-profile",
            Some(contract_breakers::parse_without_profile),
            None,
        ),
        contract_breakers::format(
            "past-read-error",
            Some(contract_breakers::parse_past_a_read_error),
            None,
        ),
        contract_breakers::format(
            "null-count",
            Some(contract_breakers::parse_with_a_null_count),
            None,
        ),
        contract_breakers::format(
            "huge-message",
            Some(contract_breakers::parse_with_a_huge_message),
            None,
        ),
        contract_breakers::format(
            "past-write-error",
            None,
            Some(contract_breakers::emit_past_a_write_error),
        ),
        contract_breakers::format(
            "by-reading",
            Some(contract_breakers::parse_by_reading),
            None,
        ),
        contract_breakers::format(
            "keeps-callbacks",
            Some(contract_breakers::parse_keeping_callbacks),
            None,
        ),
        contract_breakers::format(
            "uses-kept-callbacks",
            Some(contract_breakers::parse_using_kept_callbacks),
            None,
        ),
        contract_breakers::format(
            "logs-from-threads",
            Some(contract_breakers::parse_logging_from_two_threads),
            None,
        ),
    ];

    static BREAKERS_DESCRIPTOR: Descriptor11 = Descriptor11 {
        header: header("breakers", 1, size_of::<Descriptor11>()),
        formats: &BREAKERS as *const [FormatDesc11; 9] as *const FormatDesc11,
        n_formats: 9,
    };

    extern "C" fn entry_breakers(_: *const HostInfo) -> *const PluginHeader {
        std::ptr::addr_of!(BREAKERS_DESCRIPTOR).cast::<PluginHeader>()
    }

    /// A reader whose every read fails, as a corrupt gzip stream does.
    struct FailingReader;

    impl Read for FailingReader {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt input"))
        }
    }

    /// A writer whose every write fails, as a full disk does.
    struct FullDisk;

    impl Write for FullDisk {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A plugin breaking the contract gets an error, not a crash, and the host's own I/O errors
    /// stand whatever the plugin returned (found by a hunt with hostile plugins):
    /// * a parser that returns OK without a profile: the host read an uninitialized export and
    ///   called its garbage "release" (SIGSEGV);
    /// * a parser that reads past the host's read error and returns OK, and an emitter that
    ///   ignores a failed write and returns OK: the I/O error was dropped, so a truncated input
    ///   converted, and a short output replaced its target, with exit 0;
    /// * a read with a null count crashed the host; a 1 MiB message was kept whole (256 MiB
    ///   ones took 790 MB of the host's memory).
    #[test]
    fn contract_breaches_are_errors_and_host_io_errors_stand() {
        let plugin = load_static(entry_breakers, "breakers").unwrap();
        let format = |id: &str| plugin.formats.iter().find(|f| f.id == id).unwrap();
        let parse = |id: &str, reader: &mut dyn Read| {
            let input = ParseInput {
                reader,
                whole: None,
                size_hint: None,
                name: "in",
                threads: 1,
                release: None,
            };
            format(id).parse(input, &[], &mut |_, _| {}).err().unwrap()
        };
        let e = parse("no-profile", &mut io::empty());
        assert_eq!(e.status, Status::INTERNAL, "{e}");
        assert!(e.message.contains("without a profile"), "{e}");
        let e = parse("past-read-error", &mut FailingReader);
        assert_eq!(e.status, Status::IO, "{e}");
        assert_eq!(e.io.unwrap().to_string(), "corrupt input");
        let e = parse("null-count", &mut io::repeat(b'x'));
        assert_eq!(e.status, Status::INTERNAL, "{e}");
        assert!(
            e.message.contains("read the input with a null pointer"),
            "{e}"
        );
        let e = parse("huge-message", &mut io::empty());
        assert_eq!(e.status, Status::INVALID_INPUT);
        assert!(e.message.len() < (64 << 10) + 100, "{}", e.message.len());
        assert!(
            e.message
                .ends_with("é… (983040 more bytes of the plugin's message left out)"),
            "{}",
            &e.message[e.message.len() - 80..]
        );
        // `read` with the whole input lent gives its bytes (it gave none: an empty profile);
        // an empty message is said to be one.
        let e = format("by-reading")
            .parse(
                ParseInput {
                    reader: &mut io::empty(),
                    whole: Some(b"main;a 3\nmain;b 4\n"),
                    size_hint: Some(18),
                    name: "in",
                    threads: 1,
                    release: None,
                },
                &[],
                &mut |_, _| {},
            )
            .err()
            .unwrap();
        assert_eq!(e.message, "read 18 bytes");
        let e = parse("by-reading", &mut io::empty());
        assert_eq!(
            e.message,
            "plugin 'breakers' reading 'by-reading' failed (INVALID_INPUT) without a message"
        );
        // Callbacks kept past their call do nothing and fail: their contexts are gone (a kept
        // `log` crashed the host, a kept `report_error` wrote into a reused stack frame).
        let e = parse("keeps-callbacks", &mut io::repeat(b'x'));
        assert_eq!(e.status, Status::INVALID_INPUT);
        let kept = contract_breakers::KEPT.lock().unwrap().take().unwrap();
        let mut buf = [0u8; 4];
        let mut n = 99usize;
        // SAFETY: the kept functions are the host's; their contexts are stale on purpose (the
        // breach under test), which the host must detect before using them. `buf` and `n` are
        // writable.
        let status = unsafe {
            (kept.host.log)(kept.host.ctx, 1, StrRef::new("late"));
            (kept.host.report_error)(
                kept.host.ctx,
                Status::IO,
                StrRef::new("late"),
                u64::MAX,
                u64::MAX,
                u64::MAX,
            );
            (kept.read)(kept.read_ctx as *mut c_void, buf.as_mut_ptr(), 4, &mut n)
        };
        assert_eq!((status, n), (Status::INTERNAL, 99));
        // Nor during a later call, whose context may sit at the same address (it read that
        // call's input when contexts were known by address).
        assert_eq!(
            parse("keeps-callbacks", &mut io::repeat(b'x')).status,
            Status::INVALID_INPUT
        );
        let e = parse("uses-kept-callbacks", &mut io::repeat(b'y'));
        assert_eq!(e.message, format!("kept read: {:?} 0", Status::INTERNAL));
        let p = profconv_ir::ProfileBuilder::new().finish();
        let e = format("past-write-error")
            .emit(&p.view(), &mut FullDisk, &[], &mut |_, _| {})
            .unwrap_err();
        assert_eq!(e.status, Status::IO, "{e}");
        assert_eq!(e.io.unwrap().kind(), io::ErrorKind::StorageFull);
    }

    /// A plugin calling `log` from threads of its own during its call (against the contract)
    /// gets its calls made one at a time: they ran at once on the same context, each with a
    /// `&mut` to it, so the host's log closure ran on two threads at once (a data race: Miri
    /// reports it; here each call waits a while for the other thread to come in too).
    #[test]
    fn callbacks_from_several_plugin_threads_at_once_take_turns() {
        let plugin = load_static(entry_breakers, "breakers").unwrap();
        let format = plugin
            .formats
            .iter()
            .find(|f| f.id == "logs-from-threads")
            .unwrap();
        let inside = std::sync::atomic::AtomicUsize::new(0);
        let at_once = std::sync::atomic::AtomicUsize::new(0);
        let mut logged = 0usize;
        let mut log = |_: u32, _: &str| {
            use std::sync::atomic::Ordering::SeqCst;
            inside.fetch_add(1, SeqCst);
            let start = std::time::Instant::now();
            let wait = std::time::Duration::from_millis(if cfg!(miri) { 0 } else { 50 });
            while inside.load(SeqCst) < 2 && start.elapsed() < wait {
                std::thread::yield_now();
            }
            at_once.fetch_max(inside.load(SeqCst), SeqCst);
            inside.fetch_sub(1, SeqCst);
            logged += 1;
        };
        let input = ParseInput {
            reader: &mut io::empty(),
            whole: None,
            size_hint: None,
            name: "in",
            threads: 1,
            release: None,
        };
        let e = format.parse(input, &[], &mut log).err().unwrap();
        assert_eq!(e.status, Status::INVALID_INPUT);
        assert_eq!(
            at_once.into_inner(),
            1,
            "the log callback ran on two threads at once"
        );
        assert_eq!(logged, 2 * contract_breakers::LOGS_PER_THREAD);
    }

    /// An emitter that writes nothing: what the host lends it is read by the SDK's checks.
    struct Sink;

    impl crate::Format for Sink {
        const ID: &'static str = "sink";
        const CAN_EMIT: bool = true;
        fn emit(
            _: &ProfileRef<'_>,
            _: &mut crate::Output<'_>,
            _: &crate::Options,
            _: &mut crate::Context<'_>,
        ) -> Result<(), crate::PluginError> {
            Ok(())
        }
    }

    crate::static_plugin!(sink_entry, name: "sink", version: "1.0", formats: [Sink]);

    /// A profile whose columns differ in length (a `ProfileRef`'s fields are public: safe code
    /// builds one) is refused by `emit` before it crosses: the view gives each table one count,
    /// so the plugin read the shorter columns past their end (here `func_file`, empty, at a
    /// dangling address: SIGSEGV). `parse` checks a plugin's profile the same way.
    #[test]
    fn a_profile_whose_columns_differ_in_length_is_not_emitted() {
        let plugin = load_static(sink_entry, "sink").unwrap();
        let mut b = profconv_ir::ProfileBuilder::new();
        b.intern("main");
        let p = b.finish();
        let good = p.view();
        let names = [0u32; 3];
        let short = ProfileRef {
            func_name: &names,
            ..good.clone()
        };
        let e = plugin.formats[0]
            .emit(&short, &mut io::sink(), &[], &mut |_, _| {})
            .unwrap_err();
        assert_eq!(e.status, Status::INTERNAL, "{e}");
        assert!(e.message.contains("func columns differ in length"), "{e}");
        assert!(
            plugin.formats[0]
                .emit(&good, &mut io::sink(), &[], &mut |_, _| {})
                .is_ok()
        );
    }

    static HUGE_STRIDE: [FormatDesc11; 2] = [
        FormatDesc11 {
            struct_size: 0x7fff_fff8,
            ..format("a", sniff_a)
        },
        format("b", sniff_b),
    ];

    static HUGE_STRIDE_DESCRIPTOR: Descriptor11 = Descriptor11 {
        header: header("huge", 1, size_of::<Descriptor11>()),
        formats: &HUGE_STRIDE as *const [FormatDesc11; 2] as *const FormatDesc11,
        n_formats: 2,
    };

    extern "C" fn entry_huge_stride(_: *const HostInfo) -> *const PluginHeader {
        std::ptr::addr_of!(HUGE_STRIDE_DESCRIPTOR).cast::<PluginHeader>()
    }

    /// A format descriptor claiming 2 GiB is refused: its size is the table's stride, and the
    /// second format was read 2 GiB past the table (SIGSEGV).
    #[test]
    fn a_format_descriptor_of_a_wild_size_is_refused() {
        let err = load_static(entry_huge_stride, "huge").err().unwrap();
        assert!(matches!(err, LoadError::Malformed(..)), "{err}");
        assert!(
            err.to_string().contains("format descriptor too large"),
            "{err}"
        );
    }

    static WEIRD_OPTIONS: [OptionDesc; 1] = [OptionDesc {
        kind: 7,
        ..OptionDesc::flag("weird", "a kind no ABI 1 host knows")
    }];

    static WEIRD_KIND: [FormatDesc11; 1] = [FormatDesc11 {
        options: &WEIRD_OPTIONS as *const [OptionDesc; 1] as *const OptionDesc,
        n_options: 1,
        ..format("x", sniff_a)
    }];

    static WEIRD_KIND_DESCRIPTOR: Descriptor11 = Descriptor11 {
        header: header("weird", 1, size_of::<Descriptor11>()),
        formats: &WEIRD_KIND as *const [FormatDesc11; 1] as *const FormatDesc11,
        n_formats: 1,
    };

    extern "C" fn entry_weird_kind(_: *const HostInfo) -> *const PluginHeader {
        std::ptr::addr_of!(WEIRD_KIND_DESCRIPTOR).cast::<PluginHeader>()
    }

    /// An option kind ABI 1 does not define is a malformed descriptor (a new kind is a new
    /// major): it was shown as `<unknown>` and its values passed along unchecked.
    #[test]
    fn an_option_of_an_unknown_kind_is_refused() {
        let err = load_static(entry_weird_kind, "weird").err().unwrap();
        assert!(matches!(err, LoadError::Malformed(..)), "{err}");
        assert!(
            err.to_string()
                .contains("option 'weird' of format 'x' has kind 7, which ABI 1 does not define"),
            "{err}"
        );
    }

    /// A header of a later major than this host's (only the header is read).
    static LATER_MAJOR: PluginHeader = PluginHeader {
        magic: MAGIC,
        abi_major: ABI_MAJOR + 1,
        abi_minor: 0,
        descriptor_size: size_of::<Descriptor11>() as u32,
        panic_unwind: 1,
        plugin_name: StrRef::from_static("future"),
        plugin_version: StrRef::from_static("9.0.0"),
        sdk_version: StrRef::from_static("7.0.0"),
    };

    extern "C" fn entry_later_major(_: *const HostInfo) -> *const PluginHeader {
        &LATER_MAJOR
    }

    /// A plugin of a later major is refused with advice to upgrade profconv (a rebuild against
    /// this host's SDK is the other way); an older one, with advice to rebuild it.
    #[test]
    fn a_plugin_of_a_later_major_asks_for_a_newer_profconv() {
        let err = load_static(entry_later_major, "future").err().unwrap();
        assert!(matches!(err, LoadError::AbiMismatch(_)), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("plugin ABI {}.0", ABI_MAJOR + 1)),
            "{msg}"
        );
        assert!(
            msg.contains("it needs a newer profconv: upgrade profconv"),
            "{msg}"
        );
    }

    /// Resident KiB of the mapping that starts at `start`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn resident_kib(start: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{start:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        lines
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("the mapping and its Rss line")
    }

    /// A release further than the pages mapped ahead drops the pages before it and maps only
    /// pages after it: mapping ahead from where it had got to would map dropped pages again,
    /// never to be dropped (16 MiB pieces on two threads kept half of a 1 GB file mapped).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_release_past_the_pages_mapped_ahead_keeps_the_dropped_pages_out() {
        // Pages are mapped ahead with MADV_POPULATE_READ (Linux 5.14): an older kernel, or a
        // sandbox that does not know the advice, refuses it, nothing is mapped ahead there
        // (the advice is only advice), and the first assertion failed.
        let probe = memmap2::MmapMut::map_anon(4096).unwrap();
        if let Err(e) = probe.advise(memmap2::Advice::PopulateRead) {
            eprintln!("skipped: this kernel maps no page ahead (MADV_POPULATE_READ: {e})");
            return;
        }
        let path = std::env::temp_dir().join(format!("profconv-mapped-{}", std::process::id()));
        std::fs::write(&path, vec![b'x'; 3 * MappedFile::AHEAD]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mapped = MappedFile::new(&file).unwrap();
        let start = mapped.bytes().as_ptr() as usize;
        // Mapped ahead from the start.
        assert!(resident_kib(start) * 1024 >= MappedFile::AHEAD as u64 / 2);
        mapped.release(2 * MappedFile::AHEAD as u64);
        let kib = resident_kib(start);
        std::fs::remove_file(&path).unwrap();
        assert!(
            kib * 1024 <= MappedFile::AHEAD as u64,
            "{kib} KiB mapped after dropping two thirds of {} KiB",
            3 * MappedFile::AHEAD / 1024
        );
    }

    /// `FormatDesc` as ABI 1.2 to 1.4 lay it out: 104 bytes, without 1.5's `check_options`.
    #[repr(C)]
    struct FormatDesc14 {
        v11: FormatDesc11,
        sniff_checked: Option<crate::abi::SniffCheckedFn>,
    }

    // SAFETY: immutable statics.
    unsafe impl Sync for FormatDesc14 {}

    #[repr(C)]
    struct Descriptor14 {
        header: PluginHeader,
        formats: *const FormatDesc14,
        n_formats: usize,
    }

    // SAFETY: immutable statics.
    unsafe impl Sync for Descriptor14 {}

    unsafe extern "C" fn sniff_checked_a(_: *const u8, _: usize, score: *mut u32) -> Status {
        // SAFETY: the host lends a writable score.
        unsafe { *score = 71 };
        Status::OK
    }

    static FORMATS_1_4: [FormatDesc14; 2] = [
        FormatDesc14 {
            v11: FormatDesc11 {
                struct_size: size_of::<FormatDesc14>() as u32,
                ..format("a", sniff_a)
            },
            sniff_checked: Some(sniff_checked_a),
        },
        FormatDesc14 {
            v11: FormatDesc11 {
                struct_size: size_of::<FormatDesc14>() as u32,
                ..format("b", sniff_b)
            },
            sniff_checked: None,
        },
    ];

    static DESCRIPTOR_1_4: Descriptor14 = Descriptor14 {
        header: header("minor4", 4, size_of::<Descriptor14>()),
        formats: &FORMATS_1_4 as *const [FormatDesc14; 2] as *const FormatDesc14,
        n_formats: 2,
    };

    extern "C" fn entry_1_4(_: *const HostInfo) -> *const PluginHeader {
        std::ptr::addr_of!(DESCRIPTOR_1_4).cast::<PluginHeader>()
    }

    unsafe extern "C" fn sniff_checked_failing(_: *const u8, _: usize, score: *mut u32) -> Status {
        // SAFETY: the host lends a writable score.
        unsafe { *score = 95 };
        Status::INTERNAL
    }

    static FORMATS_FAILING_SNIFFER: [FormatDesc14; 1] = [FormatDesc14 {
        v11: FormatDesc11 {
            struct_size: size_of::<FormatDesc14>() as u32,
            ..format("a", sniff_a)
        },
        sniff_checked: Some(sniff_checked_failing),
    }];

    static DESCRIPTOR_FAILING_SNIFFER: Descriptor14 = Descriptor14 {
        header: header("failing", 4, size_of::<Descriptor14>()),
        formats: &FORMATS_FAILING_SNIFFER as *const [FormatDesc14; 1] as *const FormatDesc14,
        n_formats: 1,
    };

    extern "C" fn entry_failing_sniffer(_: *const HostInfo) -> *const PluginHeader {
        std::ptr::addr_of!(DESCRIPTOR_FAILING_SNIFFER).cast::<PluginHeader>()
    }

    /// A checked sniffer that returns neither `OK` nor `PANIC` failed: the score it left is not
    /// taken (it used to be, so a failing sniffer that wrote 95 claimed every input).
    #[test]
    fn a_sniffer_that_fails_is_not_trusted_with_its_score() {
        let plugin = load_static(entry_failing_sniffer, "failing").unwrap();
        assert_eq!(plugin.formats[0].sniff(b"a;b 1\n"), Ok(0));
    }

    /// A plugin built for ABI 1.4 (104-byte format descriptors) keeps its checked sniffer, has
    /// no option check (the field 1.5 appended reads as absent, so options are checked by its
    /// calls alone), and its second format is found at its stride.
    #[test]
    fn a_plugin_of_abi_1_4_keeps_its_sniffer_and_has_no_option_check() {
        assert_eq!(size_of::<FormatDesc14>(), min_size::FORMAT_DESC + 8);
        let plugin = load_static(entry_1_4, "minor4").unwrap();
        let ids: Vec<&str> = plugin.formats.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(
            plugin
                .formats
                .iter()
                .all(|f| f.desc.check_options.is_none())
        );
        let scores: Vec<_> = plugin.formats.iter().map(|f| f.sniff(b"x")).collect();
        assert_eq!(scores, [Ok(71), Ok(30)]);
        let options = [("x".to_string(), Some("anything".to_string()))];
        assert!(
            plugin.formats[0]
                .check_options(&options, true, &mut |_, _| {})
                .is_ok()
        );
    }

    /// A plugin built for ABI 1.1 (96-byte format descriptors) loads in this host: the formats
    /// are found at its stride, the field 1.2 appended reads as absent, sniffing goes through
    /// the 1.0 entry, and its options (whose `phases` word was reserved, zero) apply both where
    /// the format reads and where it writes.
    #[test]
    fn a_plugin_of_abi_1_1_loads_and_sniffs() {
        assert_eq!(size_of::<FormatDesc11>(), min_size::FORMAT_DESC);
        let plugin = load_static(entry_1_1, "minor1").unwrap();
        let ids: Vec<&str> = plugin.formats.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(
            plugin
                .formats
                .iter()
                .all(|f| f.desc.sniff_checked.is_none())
        );
        let scores: Vec<_> = plugin.formats.iter().map(|f| f.sniff(b"x")).collect();
        assert_eq!(scores, [Ok(70), Ok(30)]);
        for (option, key) in plugin.formats[0].options.iter().zip(["x", "y"]) {
            assert_eq!((option.key.as_str(), option.phases), (key, 0));
            assert!(option.applies(true) && option.applies(false));
        }
    }
}
