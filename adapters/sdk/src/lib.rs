//! # profconv-plugin: the profconv plugin SDK
//!
//! A profconv plugin is a `cdylib` exporting one symbol, `profconv_plugin_entry`, that describes
//! one or more formats through a small C ABI ([`abi`]). Plugin authors never write that ABI by
//! hand: they implement [`Format`] and call [`export_plugin!`].
//!
//! ```ignore
//! // src/lib.rs of a plugin crate with `crate-type = ["cdylib"]`
//! profconv_plugin::export_plugin!(
//!     name: "lines",
//!     version: env!("CARGO_PKG_VERSION"),
//!     formats: [my_format_crate::Lines],
//! );
//! ```
//!
//! The profile crosses the boundary as borrowed columns (no serialization, no copy); the side
//! that allocated memory frees it. Every entry point catches panics and reports them as errors.
//! With the `host` feature, the `host` module loads plugins and calls them safely.
//!
//! See `docs/plugin-guide.md` for a step-by-step guide and `examples/plugin-template/` for a
//! complete out-of-tree plugin; check a built plugin with `profconv plugin-check` (crate
//! `profconv-conformance`).
//!
//! This is the only crate of profconv that contains `unsafe` code.

pub mod abi;
#[cfg(feature = "counting-alloc")]
pub mod counting_alloc;
#[cfg(feature = "host")]
pub mod host;
pub mod lines;
mod sdk;
mod text;
mod view;

pub use abi::{OptionDesc, Status};
pub use profconv_ir as ir;
pub use sdk::{
    Context, EMIT_BUFFER, Format, Input, MAX_OUTPUT_SIZE, MAX_OUTPUT_SIZE_TEXT, MAX_VALUE, Options,
    Output, PluginError, format_desc, grow_line_buffer, human_bytes, no_newline, one_value_column,
    read_some, too_large, unknown_value_type, value_column, warn_if_counts,
};
pub use text::{
    Annotation, UTF8_BOM, compression_of, escape_controls, not_text_error, quote_input,
    starts_as_json, utf16_input_error,
};

/// Version of this SDK, recorded in every plugin's header.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

#[doc(hidden)]
pub use sdk::install_quiet_panic_hook as __install_quiet_panic_hook;

/// Builds the static plugin descriptor (internal; used by the export macros).
#[doc(hidden)]
#[macro_export]
macro_rules! __plugin_descriptor {
    ($static_name:ident, $name:expr, $version:expr, $major:expr, $minor:expr, [$($f:ty),+]) => {
        static $static_name: $crate::abi::PluginDescriptor = {
            const FORMATS: &[$crate::abi::FormatDesc] = &[$($crate::format_desc::<$f>()),+];
            $crate::abi::PluginDescriptor {
                header: $crate::abi::PluginHeader {
                    magic: $crate::abi::MAGIC,
                    abi_major: $major,
                    abi_minor: $minor,
                    descriptor_size:
                        ::core::mem::size_of::<$crate::abi::PluginDescriptor>() as u32,
                    panic_unwind: cfg!(panic = "unwind") as u32,
                    plugin_name: $crate::abi::StrRef::from_static($name),
                    plugin_version: $crate::abi::StrRef::from_static($version),
                    sdk_version: $crate::abi::StrRef::from_static($crate::SDK_VERSION),
                },
                formats: FORMATS.as_ptr(),
                n_formats: FORMATS.len(),
            }
        };
    };
}

/// Exports a plugin: its name, version and formats (types implementing [`Format`]).
///
/// Use it once, in a crate whose only crate type is `cdylib` (two crates exporting the symbol
/// cannot be linked into one binary). Keep the formats themselves in an ordinary library crate so
/// tests can link several of them; see [`static_plugin!`].
#[macro_export]
macro_rules! export_plugin {
    (name: $name:expr, version: $version:expr, formats: [$($f:ty),+ $(,)?] $(,)?) => {
        $crate::__export_plugin_with_abi!(
            abi: ($crate::abi::ABI_MAJOR, $crate::abi::ABI_MINOR),
            name: $name, version: $version, formats: [$($f),+]
        );
    };
}

/// Like [`export_plugin!`] but claiming any ABI version: only for testing how hosts refuse
/// plugins built for another ABI.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_plugin_with_abi {
    (abi: ($major:expr, $minor:expr), name: $name:expr, version: $version:expr,
     formats: [$($f:ty),+ $(,)?] $(,)?) => {
        $crate::__plugin_descriptor!(
            __PROFCONV_PLUGIN_DESCRIPTOR, $name, $version, $major, $minor, [$($f),+]
        );

        /// The plugin's only exported symbol.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn profconv_plugin_entry(
            _host: *const $crate::abi::HostInfo,
        ) -> *const $crate::abi::PluginHeader {
            $crate::__install_quiet_panic_hook($name);
            // A pointer to the whole descriptor, not `&DESCRIPTOR.header`: the host reads the
            // descriptor the header starts through it, past the header's 72 bytes, which a
            // reference to the header alone does not cover (Miri: Stacked Borrows UB).
            ::core::ptr::addr_of!(__PROFCONV_PLUGIN_DESCRIPTOR).cast::<$crate::abi::PluginHeader>()
        }
    };
}

/// Defines `fn $entry` with exactly the entry point [`export_plugin!`] would export, but without
/// exporting a symbol: the host can load it in-process (`host::load_static`) through the very
/// same ABI, trampolines and panic containment. Any number of these link into one binary.
#[macro_export]
macro_rules! static_plugin {
    ($entry:ident, name: $name:expr, version: $version:expr, formats: [$($f:ty),+ $(,)?] $(,)?) => {
        /// In-process plugin entry point (same ABI as an exported one).
        pub extern "C" fn $entry(
            _host: *const $crate::abi::HostInfo,
        ) -> *const $crate::abi::PluginHeader {
            $crate::__plugin_descriptor!(
                DESCRIPTOR, $name, $version,
                $crate::abi::ABI_MAJOR, $crate::abi::ABI_MINOR, [$($f),+]
            );
            // The whole descriptor's pointer (see `__export_plugin_with_abi!`).
            ::core::ptr::addr_of!(DESCRIPTOR).cast::<$crate::abi::PluginHeader>()
        }
    };
}
