//! The plugin ABI's layout, snapshotted: size, alignment and the offset of every field of every
//! `#[repr(C)]` type that crosses the boundary. A change here is an ABI change: within major 1
//! only appending fields (with the matching `min_size` and `abi_minor` bump) is allowed; anything
//! else needs a new major. Review such a snapshot change as a deliberate act.
#![cfg(target_pointer_width = "64")]

use profconv_plugin::abi::*;
use std::fmt::Write;
use std::mem::{align_of, offset_of, size_of};

macro_rules! layout {
    ($out:expr, $ty:ident { $($field:ident),* $(,)? }) => {{
        writeln!($out, "{} size={} align={}", stringify!($ty), size_of::<$ty>(), align_of::<$ty>()).unwrap();
        $( writeln!($out, "  {:>4}  {}", offset_of!($ty, $field), stringify!($field)).unwrap(); )*
    }};
}

#[test]
fn abi_layout_is_deliberate() {
    let mut out = String::new();
    writeln!(
        out,
        "ABI {ABI_MAJOR}.{ABI_MINOR}, magic {:?}, entry {ENTRY_SYMBOL}",
        std::str::from_utf8(&MAGIC).unwrap()
    )
    .unwrap();
    layout!(out, StrRef { ptr, len });
    writeln!(
        out,
        "Status size={} align={}",
        size_of::<Status>(),
        align_of::<Status>()
    )
    .unwrap();
    layout!(
        out,
        HostInfo {
            abi_major,
            abi_minor,
            host_version
        }
    );
    layout!(
        out,
        PluginHeader {
            magic,
            abi_major,
            abi_minor,
            descriptor_size,
            panic_unwind,
            plugin_name,
            plugin_version,
            sdk_version
        }
    );
    layout!(
        out,
        PluginDescriptor {
            header,
            formats,
            n_formats
        }
    );
    layout!(
        out,
        OptionDesc {
            key,
            kind,
            phases,
            default,
            help
        }
    );
    layout!(out, OptionValue { key, value });
    layout!(
        out,
        FormatDesc {
            struct_size,
            caps,
            id,
            description,
            extensions,
            options,
            n_options,
            sniff,
            parse,
            emit,
            sniff_checked,
            check_options
        }
    );
    layout!(
        out,
        InputStream {
            ctx,
            read,
            whole,
            size_hint,
            name
        }
    );
    layout!(out, OutputStream { ctx, write });
    layout!(
        out,
        HostCallbacks {
            struct_size,
            threads,
            ctx,
            report_error,
            log,
            release_input
        }
    );
    layout!(
        out,
        ProfileView {
            struct_size,
            flags,
            n_strings,
            str_offsets,
            str_blob,
            str_blob_len,
            n_funcs,
            func_name,
            func_file,
            func_line,
            func_resource,
            n_frames,
            frame_func,
            frame_address,
            frame_line,
            n_stacks,
            stack_prefix,
            stack_frame,
            n_value_types,
            value_type_name,
            value_type_unit,
            value_type_kind,
            value_type_decimals,
            n_samples,
            sample_stack,
            sample_time,
            sample_values,
            n_meta,
            meta_key,
            meta_value,
            n_threads,
            thread_name,
            sample_thread,
        }
    );
    layout!(
        out,
        ProfileExport {
            view,
            release,
            private_data
        }
    );
    writeln!(
        out,
        "min sizes: descriptor {} format {} callbacks {} view {}",
        min_size::PLUGIN_DESCRIPTOR,
        min_size::FORMAT_DESC,
        min_size::HOST_CALLBACKS,
        min_size::PROFILE_VIEW
    )
    .unwrap();
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s.bind(|| insta::assert_snapshot!("abi__layout", out));
}
