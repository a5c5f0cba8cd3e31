//! Tier 3: real plugin libraries through `dlopen`.

mod support;

use profconv_plugin::Status;
use profconv_plugin::host::{self, LoadError, ParseInput};
use support::{SEED_001, lib_path};

fn parse(f: &host::FormatHandle, bytes: &[u8]) -> Result<host::ForeignProfile, host::CallError> {
    let mut reader: &[u8] = bytes;
    let input = ParseInput {
        reader: &mut reader,
        whole: None,
        size_hint: None,
        name: "t",
        threads: 1,
        release: None,
    };
    f.parse(input, &[], &mut |_, _| {})
}

#[test]
fn the_folded_library_loads_parses_and_emits() {
    let plugin = host::load_library(&lib_path("profconv_plugin_folded")).expect("load folded");
    assert_eq!(plugin.info.name, "folded");
    assert!(plugin.info.panic_unwind);
    let f = &plugin.formats[0];
    let p = parse(f, SEED_001.as_bytes()).unwrap();
    let mut out = Vec::new();
    f.emit(&p.view(), &mut out, &[], &mut |_, _| {}).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), SEED_001);
    // Loading twice is harmless: libraries are never unloaded.
    host::load_library(&lib_path("profconv_plugin_folded")).unwrap();
}

#[test]
fn a_plugin_built_for_another_abi_is_refused_with_its_name_version_and_abi() {
    let err = host::load_library(&lib_path("profconv_testplugin_oldabi"))
        .err()
        .unwrap();
    assert!(matches!(err, LoadError::AbiMismatch(_)), "{err}");
    let msg = err.to_string();
    for part in [
        "plugin 'ancient'",
        "0.3.1",
        "plugin ABI 0.7",
        "supports plugin ABI 1.x",
        "rebuild",
    ] {
        assert!(msg.contains(part), "{part:?} missing from: {msg}");
    }
}

#[test]
fn a_panicking_plugin_gives_an_error_and_the_process_goes_on() {
    let plugin = host::load_library(&lib_path("profconv_testplugin_panicky")).unwrap();
    let f = &plugin.formats[0];
    assert_eq!(f.sniff(b"x"), Err(host::SnifferPanicked));
    for _ in 0..3 {
        let e = parse(f, b"x").err().unwrap();
        assert_eq!(e.status, Status::PANIC);
        assert!(e.message.contains("index out of bounds"), "{e}");
    }
    let folded = host::load_library(&lib_path("profconv_plugin_folded")).unwrap();
    let p = parse(&folded.formats[0], SEED_001.as_bytes()).unwrap();
    let e = f
        .emit(&p.view(), &mut Vec::new(), &[], &mut |_, _| {})
        .unwrap_err();
    assert_eq!(e.status, Status::PANIC);
}

#[test]
fn a_library_without_the_entry_symbol_is_not_a_plugin() {
    // The ABI crate's own rlib is not loadable; use a system library that surely exists.
    let libc = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
    ]
    .into_iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.exists());
    let Some(libm) = libc else {
        eprintln!("skipped: no libm found at the usual paths");
        return;
    };
    let err = host::load_library(&libm).err().unwrap();
    assert!(matches!(err, LoadError::NoEntry(_)), "{err}");
}
