//! Tier 2: plugins through the real C ABI (handshake, trampolines, callbacks, release, panic
//! containment) without dlopen: `static_plugin!` builds the same descriptor an exported plugin
//! has, so several plugins link into this one binary.

mod support;

use profconv_plugin::host::{self, ParseInput};
use profconv_plugin::ir::{Profile, ProfileRef};
use profconv_plugin::{Context, Format, Input, Options, Output, PluginError, Status};
use support::{SEED_001, SEED_001_TREE};

profconv_plugin::static_plugin!(folded_entry, name: "folded", version: "test", formats: [profconv_folded::Folded]);

struct Exploding;
impl Format for Exploding {
    const ID: &'static str = "exploding";
    const CAN_PARSE: bool = true;
    const CAN_EMIT: bool = true;
    const CAN_SNIFF: bool = true;
    fn sniff(_: &[u8]) -> u32 {
        panic!("sniff exploded")
    }
    fn parse(_: &mut Input<'_>, _: &Options, _: &mut Context<'_>) -> Result<Profile, PluginError> {
        panic!("parse exploded")
    }
    fn emit(
        _: &ProfileRef<'_>,
        _: &mut Output<'_>,
        _: &Options,
        _: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        panic!("emit exploded")
    }
}

/// A format whose parser returns a profile that breaks the IR's invariants.
struct Liar;
impl Format for Liar {
    const ID: &'static str = "liar";
    const CAN_PARSE: bool = true;
    fn parse(_: &mut Input<'_>, _: &Options, _: &mut Context<'_>) -> Result<Profile, PluginError> {
        let mut p = Profile::default();
        p.stacks.prefix.push(5); // a prefix after its child
        p.stacks.frame.push(0);
        Ok(p)
    }
}

profconv_plugin::static_plugin!(exploding_entry, name: "exploding", version: "1.0", formats: [Exploding, Liar]);

fn folded() -> host::FormatHandle {
    let plugin = host::load_static(folded_entry, "folded").expect("handshake");
    assert_eq!(plugin.info.abi_major, profconv_plugin::abi::ABI_MAJOR);
    plugin.formats[0].clone()
}

fn parse(
    f: &host::FormatHandle,
    bytes: &[u8],
    streaming: bool,
) -> Result<host::ForeignProfile, host::CallError> {
    let mut reader: &[u8] = bytes;
    let input = ParseInput {
        reader: &mut reader,
        whole: (!streaming).then_some(bytes),
        size_hint: Some(bytes.len() as u64),
        name: "test.folded",
        threads: 1,
        release: None,
    };
    f.parse(input, &[], &mut |_, _| {})
}

fn first_seen_tree(p: &ProfileRef<'_>) -> String {
    profconv_ir::testing::first_seen_tree(p, false)
}

#[test]
fn folded_parses_through_the_abi_streaming_and_whole() {
    let f = folded();
    assert_eq!(f.id, "folded");
    assert_eq!(f.extensions, vec!["folded", "collapsed"]);
    assert!(f.can_parse() && f.can_emit());
    assert!(f.sniff(SEED_001.as_bytes()).unwrap() >= 50);
    for streaming in [true, false] {
        let p = parse(&f, SEED_001.as_bytes(), streaming).unwrap();
        assert_eq!(first_seen_tree(&p.view()), SEED_001_TREE);
    }
}

#[test]
fn emit_reads_a_foreign_profile_zero_copy_and_round_trips() {
    let f = folded();
    let p = parse(&f, b"b;c 2\na 1\nb;c 3\n", true).unwrap();
    let mut out = Vec::new();
    f.emit(&p.view(), &mut out, &[], &mut |_, _| {}).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "a 1\nb;c 5\n");
}

#[test]
fn errors_cross_with_line_column_and_offset() {
    let f = folded();
    let e = parse(&f, b"a 1\nno-count-here\n", true).err().unwrap();
    assert_eq!(e.status, Status::INVALID_INPUT);
    // Where the count was expected: the end of line 2.
    assert_eq!(
        (e.line, e.column, e.byte_offset),
        (Some(2), Some(14), Some(17))
    );
    assert!(e.to_string().starts_with("2:14: "), "{e}");
}

#[test]
fn options_are_passed_and_bad_values_reported() {
    let f = folded();
    let mut warnings = Vec::new();
    let mut reader: &[u8] = b"a 1\nBAD\nb 2\n";
    let input = ParseInput {
        reader: &mut reader,
        whole: None,
        size_hint: None,
        name: "x",
        threads: 1,
        release: None,
    };
    let p = f
        .parse(input, &[("skip-bad-lines".into(), None)], &mut |_, m| {
            warnings.push(m.to_string())
        })
        .unwrap();
    assert_eq!(p.view().n_samples(), 2);
    assert!(
        warnings.iter().any(|w| w.contains("line 2")),
        "{warnings:?}"
    );
    let mut out = Vec::new();
    let e = f
        .emit(
            &p.view(),
            &mut out,
            &[("value".into(), Some("nope".into()))],
            &mut |_, _| {},
        )
        .unwrap_err();
    assert_eq!(e.status, Status::BAD_OPTIONS);
    assert!(e.message.contains("samples"), "{e}");
}

#[test]
fn panics_become_errors_and_the_process_goes_on() {
    let plugin = host::load_static(exploding_entry, "exploding").unwrap();
    let exploding = &plugin.formats[0];
    assert_eq!(
        exploding.sniff(b"anything"),
        Err(host::SnifferPanicked),
        "a panicking sniffer is reported"
    );
    for _ in 0..2 {
        let e = parse(exploding, b"x", true).err().unwrap();
        assert_eq!(e.status, Status::PANIC);
        assert!(e.message.contains("parse exploded"), "{e}");
    }
    let f = folded();
    let p = parse(&f, SEED_001.as_bytes(), true).unwrap();
    let e = exploding
        .emit(&p.view(), &mut Vec::new(), &[], &mut |_, _| {})
        .unwrap_err();
    assert_eq!(e.status, Status::PANIC);
    assert!(e.message.contains("emit exploded"));
}

#[test]
fn an_invalid_profile_from_a_plugin_is_refused() {
    let plugin = host::load_static(exploding_entry, "exploding").unwrap();
    let liar = &plugin.formats[1];
    let e = parse(liar, b"", true).err().unwrap();
    assert_eq!(e.status, Status::INTERNAL);
    assert!(e.message.contains("invalid profile"), "{e}");
}

#[test]
fn write_failures_reach_the_host_as_its_own_io_error() {
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let f = folded();
    let p = parse(&f, SEED_001.as_bytes(), true).unwrap();
    let e = f
        .emit(&p.view(), &mut Broken, &[], &mut |_, _| {})
        .unwrap_err();
    assert_eq!(e.status, Status::IO);
    assert_eq!(
        e.io.map(|io| io.kind()),
        Some(std::io::ErrorKind::BrokenPipe)
    );
}

#[test]
fn the_same_format_works_from_two_threads() {
    let f = folded();
    std::thread::scope(|s| {
        let a = s.spawn(|| first_seen_tree(&parse(&f, SEED_001.as_bytes(), true).unwrap().view()));
        let b = s.spawn(|| first_seen_tree(&parse(&f, SEED_001.as_bytes(), false).unwrap().view()));
        assert_eq!(a.join().unwrap(), b.join().unwrap());
    });
}

/// A large regular file is mapped (ABI 1.3): the parser reads it in place and releases what it
/// has read, so the host drops those pages behind it; the profile is the streamed one's.
#[test]
fn a_mapped_file_is_read_in_place_and_released_behind_the_parser() {
    let f = folded();
    let mut text = Vec::new();
    let mut i = 0u32;
    while text.len() < 9 << 20 {
        text.extend_from_slice(format!("root;f{};g{} {}\n", i % 13, i % 7, 1 + i % 5).as_bytes());
        i += 1;
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, &text).unwrap();
    let streamed = parse(&f, &text, true).unwrap();
    for threads in [1, 2] {
        let mapped = host::MappedFile::new(file.as_file()).expect("mapped");
        assert_eq!(mapped.bytes(), &text[..]);
        let releases = std::cell::Cell::new(0u32);
        let release = |upto: u64| {
            releases.set(releases.get() + 1);
            mapped.release(upto);
        };
        let mut empty: &[u8] = &[];
        let input = ParseInput {
            reader: &mut empty,
            whole: Some(mapped.bytes()),
            size_hint: Some(text.len() as u64),
            name: "big.folded",
            threads,
            release: Some(&release),
        };
        let p = f.parse(input, &[], &mut |_, _| {}).unwrap();
        assert_eq!(
            first_seen_tree(&p.view()),
            first_seen_tree(&streamed.view())
        );
        assert!(
            releases.get() >= 2,
            "{threads} threads: released {} times",
            releases.get()
        );
        // Released in whole steps, up to the last step before the end.
        let step = host::MappedFile::STEP;
        assert_eq!(
            mapped.released(),
            text.len() / step * step,
            "{threads} threads"
        );
        // And the pages are gone: of the 9 MiB file, what is left is its last 1 MiB.
        if let Some(resident) = resident_bytes_of_mapping(mapped.bytes().as_ptr() as usize) {
            assert!(
                resident <= 3 << 20,
                "{threads} threads: {resident} bytes resident"
            );
        }
        // Dropped pages read again give the same bytes.
        assert_eq!(mapped.bytes(), &text[..]);
    }
}

/// Resident bytes of this process's mapping that holds `addr` (`/proc/self/smaps`; `None`
/// where there is no such file).
fn resident_bytes_of_mapping(addr: usize) -> Option<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split(' ').next().and_then(|r| r.split_once('-'));
        if let Some((a, b)) = range
            && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        {
            inside = a <= addr && addr < b;
        } else if inside && let Some(kb) = line.strip_prefix("Rss:") {
            let kb = kb.trim().trim_end_matches("kB").trim();
            return kb.parse::<usize>().ok().map(|k| k << 10);
        }
    }
    None
}

/// Small files, pipes and devices are not mapped: they are read as streams.
#[test]
fn only_large_regular_files_are_mapped() {
    let small = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(small.path(), b"a 1\n").unwrap();
    assert!(host::MappedFile::new(small.as_file()).is_none());
    let null = std::fs::File::open("/dev/null").unwrap();
    assert!(host::MappedFile::new(&null).is_none());
    let (reader, _writer) = std::io::pipe().unwrap();
    let pipe = std::fs::File::from(std::os::fd::OwnedFd::from(reader));
    assert!(host::MappedFile::new(&pipe).is_none());
    // From 1 MiB on.
    let min = host::MappedFile::MIN_SIZE as usize;
    std::fs::write(small.path(), vec![b'\n'; min - 1]).unwrap();
    assert!(host::MappedFile::new(small.as_file()).is_none());
    std::fs::write(small.path(), vec![b'\n'; min]).unwrap();
    assert!(host::MappedFile::new(small.as_file()).is_some());
}
