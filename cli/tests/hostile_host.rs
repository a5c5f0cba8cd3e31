//! Regressions from the review of the host as a hostile or careless user would use it: output
//! to `/dev/stdout` redirected to a file, a file-size limit, plugins reached through a bare name
//! or a symlink from a directory anyone can write to, trailing data after a gzip member. Each
//! test runs the real `profconv` binary.

#[path = "support/run.rs"]
mod run;
mod support;

use run::{
    many_stacks, on_terminal, profconv, run, spawn_piped, temp_files, text, tmp, wait_within,
    with_profconv_env, write,
};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use support::{SEED_001, lib_path};

/// A stdout open for reading only (`1<file`) is an error before the input is read (exit 4,
/// as `cat` fails): Rust's stdout takes the EBADF of every write for success, so the output
/// vanished and every command ended with exit 0, after the whole conversion. A descriptor
/// named as the output (`-o /dev/stdin`, `-o /dev/fd/0`) that is open for reading only too.
#[cfg(target_os = "linux")]
#[test]
fn a_stdout_open_for_reading_only_is_an_error() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let ro = write(d.path(), "ro", b"data\n");
    let i = input.to_str().unwrap();
    for args in [
        vec!["convert", i, "--to", "folded"],
        vec!["convert", i, "--to", "folded", "-o", "/dev/stdout"],
        vec!["tree", i],
        vec!["diff", i, i],
        vec!["formats"],
        vec!["--help"],
        vec!["--version"],
    ] {
        let out = profconv()
            .args(&args)
            .stdout(std::fs::File::open(&ro).unwrap())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {err}");
        assert!(
            err.contains("standard output is open for reading only, not for writing"),
            "{args:?}: {err}"
        );
    }
    for target in ["/dev/stdin", "/dev/fd/0"] {
        let out = profconv()
            .args(["convert", i, "--to", "folded", "-o", target])
            .stdin(std::fs::File::open(&ro).unwrap())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{target}: {err}");
        assert!(
            err.contains("descriptor 0 is open for reading only, not for writing"),
            "{target}: {err}"
        );
    }
    assert_eq!(std::fs::read(&ro).unwrap(), b"data\n");
}

/// A stdin open for writing only (`0>file`) is an error (exit 4, as `cat -` fails): Rust's
/// stdin takes the EBADF of its reads for the end of the input, so `-` read as an empty input
/// and every command ended with exit 0 (an empty output written over the target).
#[cfg(target_os = "linux")]
#[test]
fn a_stdin_open_for_writing_only_is_an_error() {
    let d = tmp();
    let wo = write(d.path(), "wo", b"data\n");
    let out_file = d.path().join("out.folded");
    let o = out_file.to_str().unwrap();
    for args in [
        vec!["convert", "-", "--from", "folded", "-o", o],
        vec!["tree", "-", "--from", "folded"],
        vec!["tree", "-"],
    ] {
        let out = profconv()
            .args(&args)
            .stdin(std::fs::OpenOptions::new().write(true).open(&wo).unwrap())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {err}");
        assert!(
            err.contains("<stdin>: standard input is open for writing only, not for reading"),
            "{args:?}: {err}"
        );
    }
    assert!(!out_file.exists());
    assert_eq!(std::fs::read(&wo).unwrap(), b"data\n");
}

/// A descriptor's path written relatively, or with `..` in it, is that descriptor too: the
/// output goes through it, after the shell's header. It was taken for a file and a temp file
/// renamed over stdout's file, cutting the header and footer out.
#[cfg(target_os = "linux")]
#[test]
fn a_descriptor_path_written_relatively_is_the_descriptor() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let deep = d.path().join("a/b");
    std::fs::create_dir_all(&deep).unwrap();
    let up = "../".repeat(deep.components().count());
    for target in [
        format!("{up}dev/fd/1"),
        format!("{up}proc/self/fd/1"),
        "/proc/self/fd/../fd/1".to_string(),
    ] {
        let out_path = d.path().join("out.txt");
        let mut file = std::fs::File::create(&out_path).unwrap();
        file.write_all(b"header\n").unwrap();
        let status = profconv()
            .current_dir(&deep)
            .args(["convert", input.to_str().unwrap(), "--to", "folded", "-o"])
            .arg(&target)
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .status()
            .unwrap();
        assert!(status.success(), "{target}");
        file.write_all(b"footer\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&out_path).unwrap(),
            format!("header\n{SEED_001}footer\n"),
            "{target}"
        );
    }
}

/// `{ echo header; profconv … -o /dev/stdout; echo footer; } > out.txt`: `/dev/stdout` (and
/// `/dev/fd/1`, `/proc/self/fd/1`) is the descriptor the shell opened, so the output goes
/// after the header and the footer after it. It used to be resolved to `out.txt` and a temp
/// file renamed over it: the header was lost, and so was everything the shell wrote after.
#[cfg(target_os = "linux")]
#[test]
fn output_to_dev_stdout_writes_to_the_open_descriptor_not_over_its_file() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    for target in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let out_path = d.path().join("out.txt");
        let mut file = std::fs::File::create(&out_path).unwrap();
        file.write_all(b"header\n").unwrap();
        let status = profconv()
            .args(["convert", input.to_str().unwrap(), "--to", "folded", "-o"])
            .arg(target)
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .status()
            .unwrap();
        assert!(status.success(), "{target}");
        // The shell's descriptor carries on where profconv stopped, in the same file (the
        // position is the descriptor's, shared: no seek).
        file.write_all(b"footer\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&out_path).unwrap(),
            format!("header\n{SEED_001}footer\n"),
            "{target}"
        );
        assert!(temp_files(d.path()).is_empty(), "{target}");
    }
    // Another descriptor (here stderr, opened without append, as `2> file` opens it) is
    // written through, at the position the shell's own writes share: a footer written after
    // profconv follows its output instead of overwriting it. It used to be opened again by its
    // path, at a position of its own.
    let other = d.path().join("other.txt");
    let mut file = std::fs::File::create(&other).unwrap();
    file.write_all(b"kept\n").unwrap();
    let out = profconv()
        .args(["convert", input.to_str().unwrap(), "--to", "folded", "-o"])
        .arg("/dev/stderr")
        .stderr(Stdio::from(file.try_clone().unwrap()))
        .output()
        .unwrap();
    assert!(out.status.success());
    file.write_all(b"footer\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        format!("kept\n{SEED_001}footer\n")
    );
    // A socket (stderr under systemd is journald's): it cannot be opened by its path at all.
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let out = profconv()
        .args(["convert", input.to_str().unwrap(), "--to", "folded", "-o"])
        .arg("/dev/stderr")
        .stderr(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let mut got = String::new();
    ours.set_nonblocking(true).unwrap();
    let _ = std::io::Read::read_to_string(&mut &ours, &mut got);
    assert_eq!(got, SEED_001);
}

/// Writing past a file-size limit (`ulimit -f`) is an I/O error naming the output, exit 4, and
/// the temp file is removed; it used to kill profconv with SIGXFSZ and leave the temp file.
#[cfg(unix)]
#[test]
fn a_file_size_limit_is_an_io_error_and_leaves_no_temp_file() {
    let d = tmp();
    let mut input = String::new();
    for i in 0..2000 {
        input.push_str(&format!("main;f{i};g{} {}\n", i * 7, 1 + i % 5));
    }
    let input = write(d.path(), "in.folded", input.as_bytes());
    let target = d.path().join("out.svg");
    std::fs::write(&target, "previous").unwrap();
    let exe = env!("CARGO_BIN_EXE_profconv");
    let out = with_profconv_env("sh")
        .args(["-c", "ulimit -f 8 && exec \"$0\" \"$@\"", exe, "convert"])
        .arg(&input)
        .arg("-o")
        .arg(&target)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{:?}: {err}", out.status);
    assert!(err.contains(&target.display().to_string()), "{err}");
    assert!(err.contains("too large"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "previous");
    assert!(
        temp_files(d.path()).is_empty(),
        "{:?}",
        temp_files(d.path())
    );
}

/// Whether the tests run as root (those that give files to another user need it).
#[cfg(unix)]
fn running_as_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| text(&o.stdout).trim() == "0")
}

/// True when running as root; else says the calling test is skipped, as it gives files to
/// another user.
#[cfg(unix)]
fn root_to_give_files_away() -> bool {
    let root = running_as_root();
    if !root {
        eprintln!("skipped: needs root to give files to another user");
    }
    root
}

/// Gives `p` (not what it links to) to user and group `nobody` (65534); needs root.
#[cfg(unix)]
fn give_to_nobody(p: &Path) {
    std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
}

/// Sets `mode` on `path`.
#[cfg(unix)]
fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A plugin in a directory anyone can write to is refused however it is named: by a bare file
/// name run from that directory (the check used to look at the empty parent `""`, found
/// nothing and passed), or through a symlink from a safe directory (only the link's own
/// directory was checked).
#[cfg(unix)]
#[test]
fn a_plugin_in_a_directory_anyone_can_write_is_refused_by_bare_name_and_through_links() {
    let d = tmp();
    chmod(d.path(), 0o755);
    let open = d.path().join("open");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o1777);
    let lib = lib_path("profconv_plugin_folded");
    std::fs::copy(&lib, open.join("libx.so")).unwrap();
    chmod(&open.join("libx.so"), 0o644);
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());

    let out = profconv()
        .current_dir(&open)
        .args(["--no-default-plugins", "--plugin", "libx.so", "tree"])
        .arg(&input)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("writable by all users"), "{err}");
    assert!(out.stdout.is_empty());

    let safe = d.path().join("safe");
    std::fs::create_dir(&safe).unwrap();
    chmod(&safe, 0o755);
    let link = safe.join("libprofconv_plugin_x.so");
    std::os::unix::fs::symlink(open.join("libx.so"), &link).unwrap();
    let out = run(&[
        "--no-default-plugins",
        "--plugin",
        link.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("writable by all users") && err.contains(&open.display().to_string()),
        "{err}"
    );
    // Scanning the safe directory finds the link and refuses it too (a warning; then no
    // plugin reads the input).
    let out = run(&[
        "--no-default-plugins",
        "--plugin",
        safe.to_str().unwrap(),
        "formats",
    ]);
    let s = text(&out.stdout);
    assert!(
        s.contains("rejected") && s.contains("writable by all users"),
        "{s}"
    );
    assert!(!s.contains("plugin folded"), "{s}");
}

/// A plugin, or a plugin directory, that another user owns is refused like one anyone can
/// write: its owner can replace the library whatever its mode says. A directory made in /tmp by
/// another user before this one copied plugins into it (`mkdir -p` succeeds on it) passed the
/// mode check (0755), and root loaded the library nobody put there in place of the copy. Runs
/// as root (the test gives the files to `nobody`); skipped otherwise.
#[cfg(unix)]
#[test]
fn a_plugin_another_user_owns_is_refused() {
    if !root_to_give_files_away() {
        return;
    }
    let d = tmp();
    chmod(d.path(), 0o755);
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let lib = lib_path("profconv_plugin_folded");
    // Another user's directory holding a copy of root's; root's directory holding a library
    // another user owns.
    let squatted = d.path().join("squatted");
    std::fs::create_dir(&squatted).unwrap();
    chmod(&squatted, 0o755);
    give_to_nobody(&squatted);
    let in_squatted = squatted.join("libprofconv_plugin_x.so");
    std::fs::copy(&lib, &in_squatted).unwrap();
    chmod(&in_squatted, 0o755);
    let mine = d.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    chmod(&mine, 0o755);
    let theirs = mine.join("libprofconv_plugin_y.so");
    std::fs::copy(&lib, &theirs).unwrap();
    chmod(&theirs, 0o755);
    give_to_nobody(&theirs);
    // And a link from root's directory to the library in the other user's directory.
    let linked = d.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    chmod(&linked, 0o755);
    let link = linked.join("libprofconv_plugin_z.so");
    std::os::unix::fs::symlink(&in_squatted, &link).unwrap();

    for (file, owned) in [
        (&in_squatted, &squatted),
        (&theirs, &theirs),
        (&link, &squatted),
    ] {
        let out = run(&[
            "--no-default-plugins",
            "--plugin",
            file.to_str().unwrap(),
            "tree",
            input.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{}: {err}", file.display());
        assert!(
            err.contains("belongs to another user (uid 65534)")
                && err.contains(&owned.display().to_string()),
            "{}: {err}",
            file.display()
        );
        assert!(out.stdout.is_empty());
    }
    for dir in [&squatted, &mine, &linked] {
        let out = profconv()
            .env("PROFCONV_PLUGIN_PATH", dir)
            .args(["--no-default-plugins", "formats"])
            .output()
            .unwrap();
        let s = text(&out.stdout);
        assert!(
            s.contains("rejected") && s.contains("belongs to another user"),
            "{}: {s}",
            dir.display()
        );
        assert!(!s.contains("plugin folded"), "{}: {s}", dir.display());
    }
    // Root's own files still load (the owner of the test's directories is root).
    let out = run(&[
        "--no-default-plugins",
        "--plugin",
        lib.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `sudo ./target/release/profconv` on a user's own build loads the plugins beside it: they
/// belong to the user who owns the executable, who could rewrite `profconv` itself, so they are
/// as trusted as it is. Every plugin there was refused as "another user's" (root running a
/// build of uid 1000 found no format at all, exit 2, and was told to `chown` the build). Runs
/// as root (the test gives the build to `nobody`); skipped otherwise.
#[cfg(unix)]
#[test]
fn plugins_owned_by_the_owner_of_profconv_load_when_another_user_runs_it() {
    if !root_to_give_files_away() {
        return;
    }
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let build = d.path().join("build");
    std::fs::create_dir(&build).unwrap();
    chmod(&build, 0o755);
    let exe = build.join("profconv");
    std::fs::copy(env!("CARGO_BIN_EXE_profconv"), &exe).unwrap();
    chmod(&exe, 0o755);
    let lib = lib_path("profconv_plugin_folded");
    let copy = build.join(lib.file_name().unwrap());
    std::fs::copy(&lib, &copy).unwrap();
    chmod(&copy, 0o755);
    for p in [&build, &exe, &copy] {
        give_to_nobody(p);
    }
    let out = std::process::Command::new(&exe)
        .env_remove("PROFCONV_PLUGIN_PATH")
        .env("XDG_DATA_HOME", "/nonexistent-profconv-test")
        .args(["tree", input.to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("belongs to another user"), "{err}");
    assert!(text(&out.stdout).starts_with("A self=0 total=3"));
    // Another user's plugin beside root's profconv is still refused.
    let out = run(&[
        "--plugin",
        copy.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("belongs to another user (uid 65534)"));
}

/// Data after the last gzip member is reported at the byte where it starts (the end of the
/// last good member), not where the decoder gave up inside it; a member cut short in its
/// header is reported there too, as what it is.
#[test]
fn data_after_the_last_gzip_member_is_reported_where_it_starts() {
    let d = tmp();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(SEED_001.as_bytes()).unwrap();
    let member = enc.finish().unwrap();
    let two = [member.clone(), member.clone()].concat();
    let cases: [(&str, &[u8]); 3] = [
        ("garbage", b"garbage\n"),
        ("zeros-then-garbage", b"\0\0\0\0\0\0\0\0\0\0\0\0x"),
        ("half-a-header", &[0x1f, 0x8b, 8]),
    ];
    for (what, tail) in cases {
        for (first, at) in [(&member, member.len()), (&two, two.len())] {
            let mut bytes = first.clone();
            bytes.extend_from_slice(tail);
            let path = write(d.path(), &format!("{what}.gz"), &bytes);
            let out = run(&["tree", path.to_str().unwrap()]);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{what}: {err}");
            assert!(
                err.contains(&format!("{}: byte {at}: ", path.display())),
                "{what}: offset {at} expected: {err}"
            );
            let says = match what {
                "half-a-header" => "a gzip member cut short in its header",
                _ => "after the last gzip member",
            };
            assert!(err.contains(says), "{what}: {err}");
        }
    }
    // Content no reader knows (here none), then such data: the data is the error, not the
    // format (its error, met while reading the head, waits for a parser that never runs).
    for content in [&b""[..], b"\x01\x02\x03 not a profile\n"] {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(content).unwrap();
        let mut bytes = enc.finish().unwrap();
        let at = bytes.len();
        bytes.extend_from_slice(b"garbage");
        let path = write(d.path(), "unknown.gz", &bytes);
        let out = run(&["tree", path.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains(&format!("byte {at}: ")) && err.contains("after the last gzip member"),
            "{err}"
        );
    }
    // Zero padding after the last member (tar, dd) is skipped, as gzip(1) skips it.
    for padding in [1, 100, 100_000] {
        let mut bytes = two.clone();
        bytes.extend(std::iter::repeat_n(0u8, padding));
        let path = write(d.path(), "padded.gz", &bytes);
        let out = run(&["tree", path.to_str().unwrap(), "--order", "first-seen"]);
        assert!(out.status.success(), "{padding}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with("A self=0 total=6\n"));
    }
}

/// A bad line in a whole gzip member followed by data that is not a member is the error, on
/// any thread count and from a file or a pipe: the member's checksum vouches for the line. The
/// parallel reader, reading ahead, met the data after the member first, and that error was
/// the run's (one thread failed on the line first and said the line).
#[test]
fn a_bad_line_before_data_after_the_last_member_is_the_error() {
    let d = tmp();
    // 345 KB, read past the bad line before the data is reached; and 300 bytes, whose data
    // is met while reading the 16 KiB head that detection looks at.
    for (n, at) in [(20_000, 200_000), (20, 100)] {
        let mut lines: Vec<u8> = (0..n)
            .flat_map(|i| format!("main;f{};g{} {}\n", i % 50, i % 7, i + 1).into_bytes())
            .collect();
        let bad_at = lines.iter().take(at).filter(|&&b| b == b'\n').count() + 1;
        let cut = lines[..at].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        lines.splice(cut..cut, b"bad line here\n".iter().copied());
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&lines).unwrap();
        let mut bytes = enc.finish().unwrap();
        bytes.extend_from_slice(b"garbage!");
        let path = write(d.path(), "bad.folded.gz", &bytes);
        for threads in ["1", "2"] {
            let out = run(&["--threads", threads, "tree", path.to_str().unwrap()]);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{threads}: {err}");
            assert!(
                err.contains(&format!("bad.folded.gz:{bad_at}:10: expected a count")),
                "{threads}: {err}"
            );
            let mut child = spawn_piped(&["--threads", threads, "tree", "--from", "folded", "-"]);
            let mut stdin = child.stdin.take().unwrap();
            let feed = bytes.clone();
            let writer = std::thread::spawn(move || {
                let _ = stdin.write_all(&feed);
            });
            let out = child.wait_with_output().unwrap();
            writer.join().unwrap();
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{threads}: {err}");
            assert!(
                err.contains(&format!("<stdin>:{bad_at}:10: expected a count")),
                "{threads}: {err}"
            );
        }
    }
}

/// A file name (or a `-T` spec) with control characters reaches the terminal escaped in
/// profconv's own messages, as the plugins' messages and the tree text already were: an escape
/// sequence in a downloaded file's name must not drive the terminal.
#[cfg(unix)]
#[test]
fn control_characters_in_names_are_escaped_in_messages() {
    let d = tmp();
    let name = "x\u{1b}]0;pwned\u{7}\u{1b}[2J\r.folded";
    let missing = d.path().join(name);
    let out = run(&["tree", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4));
    let err = text(&out.stderr);
    assert!(
        !err.contains(['\u{1b}', '\u{7}', '\r']),
        "raw control characters: {err:?}"
    );
    assert!(
        err.contains(r"x\u{1b}]0;pwned\u{7}\u{1b}[2J\r.folded"),
        "{err}"
    );
    let input = write(d.path(), name, SEED_001.as_bytes());
    let out = run(&["tree", input.to_str().unwrap(), "-T", "merge:\u{1b}[2J"]);
    assert!(out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("matched nothing"), "{err}");
    assert!(!err.contains(['\u{1b}', '\u{7}', '\r']), "{err:?}");
    // A usage error, which clap words and which quotes the value typed: the same.
    let out = run(&[
        "tree",
        input.to_str().unwrap(),
        "-T",
        "bad\u{1b}]0;pwned\u{7}\r",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("invalid value"), "{err}");
    assert!(!err.contains(['\u{1b}', '\u{7}', '\r']), "{err:?}");
    // Quoted as typed, escaped (clap's plain text had dropped them: `bad]0;pwned`).
    assert!(err.contains(r"'bad\u{1b}]0;pwned\u{7}\r'"), "{err}");
    // A right-to-left override in a file name or a `-T` spec is escaped too: a terminal that
    // applies it drew the rest of the line (line:column, the reason) reversed.
    let rlo = write(d.path(), "n\u{202e}gol.folded", b"a;b 3\na;b x\n");
    let out = run(&["tree", rlo.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(r"n\u{202e}gol.folded:2:5: expected a count") && !err.contains('\u{202e}'),
        "{err:?}"
    );
    let out = run(&[
        "tree",
        input.to_str().unwrap(),
        "-T",
        "focus-func:x\u{202e}y",
    ]);
    let err = text(&out.stderr);
    assert!(
        err.contains(r"focus-func:x\u{202e}y") && !err.contains('\u{202e}'),
        "{err:?}"
    );
}

/// A plugin path that is a FIFO (or another special file) is refused before the system loader
/// opens it: `dlopen` waited for a writer forever, holding the loader's lock, so even SIGTERM
/// and Ctrl-C (whose exit needs that lock) could not end profconv.
#[cfg(unix)]
#[test]
fn a_plugin_path_that_is_a_fifo_is_refused_not_waited_on() {
    use std::time::Duration;
    let d = tmp();
    let fifo = d.path().join("libprofconv_plugin_fifo.so");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let runs: [Vec<&str>; 2] = [
        vec![
            "--no-default-plugins",
            "--plugin",
            fifo.to_str().unwrap(),
            "tree",
            input.to_str().unwrap(),
        ],
        vec!["plugin-check", fifo.to_str().unwrap()],
    ];
    for args in runs {
        let mut child = spawn_piped(&args);
        wait_within(
            &mut child,
            Duration::from_secs(20),
            &format!("{args:?}: still waiting on the FIFO"),
        );
        let out = child.wait_with_output().unwrap();
        let msg = text(&out.stderr) + &text(&out.stdout);
        assert!(!out.status.success(), "{args:?}: {msg}");
        assert!(msg.contains("not a regular file"), "{args:?}: {msg}");
    }
}

/// An error reading stdin names it `<stdin>`, as every other message about it does (it said
/// `-: Is a directory` for `profconv tree - < /`).
#[cfg(unix)]
#[test]
fn an_error_reading_stdin_names_stdin() {
    let d = tmp();
    let out = profconv()
        .args(["tree", "-"])
        .stdin(Stdio::from(std::fs::File::open(d.path()).unwrap()))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.starts_with("profconv: error: <stdin>: "), "{err}");
    assert!(out.stdout.is_empty());
}

/// A relative `XDG_DATA_HOME` is ignored, as the XDG spec says: it named a directory under the
/// current one, so running profconv in a directory of downloaded files could load a plugin from
/// it ("the current directory is never searched unless you name it").
#[test]
fn a_relative_xdg_data_home_is_ignored() {
    let d = tmp();
    let plugins = d.path().join("data/profconv/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let lib = lib_path("profconv_plugin_folded");
    std::fs::copy(&lib, plugins.join(lib.file_name().unwrap())).unwrap();
    let out = profconv()
        .current_dir(d.path())
        .env("XDG_DATA_HOME", "data")
        .arg("formats")
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(!s.contains("data/profconv/plugins"), "{s}");
}

/// `profconv convert - -o in.folded < in.folded`: stdin is the output file, which is refused
/// like any other input given as the output (it was replaced: the check skipped `-`). The file
/// is known by its device and inode, so a hard link to the input is refused too, and stdin is
/// compared by its descriptor (no `/dev/stdin` needed: every unix).
#[cfg(unix)]
#[test]
fn stdin_redirected_from_the_output_file_is_refused_as_the_input() {
    let d = tmp();
    let input = write(d.path(), "in.folded", b"a;b 1\nxx;yy 2\n");
    let link = d.path().join("link.folded");
    std::fs::hard_link(&input, &link).unwrap();
    let out = profconv()
        .args(["convert", input.to_str().unwrap(), "--to", "folded", "-o"])
        .arg(&link)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("refusing to overwrite the input"), "{err}");
    stdin_redirected_from_the_output_file(&d);
}

/// `convert - -o FILE < FILE` is refused and FILE kept.
#[cfg(unix)]
fn stdin_redirected_from_the_output_file(d: &tempfile::TempDir) {
    let input = write(d.path(), "stdin.folded", b"a;b 1\nxx;yy 2\n");
    let out = profconv()
        .args(["convert", "-", "--to", "folded", "-O", "max-size=0", "-o"])
        .arg(&input)
        .stdin(Stdio::from(std::fs::File::open(&input).unwrap()))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("refusing to overwrite the input"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), b"a;b 1\nxx;yy 2\n");
}

/// `/dev/null` as both input and output is no file to protect: it converts (an empty profile).
#[cfg(unix)]
#[test]
fn dev_null_as_input_and_output_converts() {
    let out = profconv()
        .args([
            "convert",
            "-",
            "-f",
            "folded",
            "--to",
            "folded",
            "-o",
            "/dev/null",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(&[
        "convert",
        "/dev/null",
        "-f",
        "folded",
        "--to",
        "folded",
        "-o",
        "/dev/null",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Marks a pipe's end non-blocking, as some programs leave the terminal or pipe they share.
#[cfg(unix)]
fn non_blocking(fd: impl std::os::fd::AsFd) {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).expect("set O_NONBLOCK");
}

/// A stdout that another program left non-blocking (`O_NONBLOCK` belongs to the open pipe or
/// terminal, shared with everyone who has it) and a reader slower than profconv: the output
/// is written whole, waiting for the pipe as a blocking one would. It failed with "Resource
/// temporarily unavailable" (exit 4) once the pipe's 64 KiB were full.
#[cfg(unix)]
#[test]
fn a_non_blocking_stdout_is_waited_for_not_failed() {
    use std::io::Read;
    let input = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/perf-python.folded"
    );
    let expected = run(&["convert", input, "--to", "flamegraph", "-o", "-"]);
    assert!(expected.status.success(), "{}", text(&expected.stderr));
    assert!(expected.stdout.len() > 256 << 10, "more than a pipe holds");
    for args in [
        &["convert", input, "--to", "flamegraph", "-o", "-"][..],
        &["convert", input, "--to", "flamegraph", "-o", "/dev/stdout"],
    ] {
        let (mut reader, writer) = std::io::pipe().unwrap();
        non_blocking(&writer);
        let child = profconv()
            .args(args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The command holds the only write end now; the pipe fills while nobody reads.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut got = Vec::new();
        reader.read_to_end(&mut got).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(got == expected.stdout, "{args:?}: {} bytes", got.len());
    }
}

/// A stdin that another program left non-blocking, written slowly: read whole, waiting for
/// each block (it failed at the first read that found the pipe empty).
#[cfg(unix)]
#[test]
fn a_non_blocking_stdin_is_waited_for_not_failed() {
    let input = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/perf-python.folded"
    );
    let data = std::fs::read(input).unwrap();
    let expected = run(&["convert", input, "--to", "folded", "-o", "-"]);
    assert!(expected.status.success(), "{}", text(&expected.stderr));
    let (reader, mut writer) = std::io::pipe().unwrap();
    non_blocking(&reader);
    let child = profconv()
        .args([
            "convert", "-", "--from", "folded", "--to", "folded", "-o", "-",
        ])
        .stdin(reader)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for block in data.chunks(8 << 10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        writer.write_all(block).unwrap();
    }
    drop(writer);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout == expected.stdout, "{} bytes", out.stdout.len());
}

/// `profconv --help > /dev/full`: the help was lost and the exit status was 0. A failed write
/// of help or version is an error like any output's (exit 4); a closed pipe is not.
#[cfg(target_os = "linux")]
#[test]
fn help_that_cannot_be_written_fails() {
    for flag in ["--help", "--version"] {
        let out = profconv()
            .arg(flag)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{flag}: {err}");
        assert!(
            err.starts_with("profconv: error: <stdout>: "),
            "{flag}: {err}"
        );
    }
    let mut child = spawn_piped(&["--help"]);
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `profconv plugin-check PLUGIN | head -1`: a report cut by a closed pipe still ends with the
/// verdict, exit 1 when a check failed (a closed pipe made it exit 0, as for a passing kit).
#[test]
fn a_failed_plugin_check_exits_1_through_a_closed_pipe() {
    let old = support::lib_path("profconv_testplugin_oldabi");
    let mut child = spawn_piped(&["plugin-check", old.to_str().unwrap()]);
    // Closed before the report is written (the kit loads and checks the plugin first).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

/// A bad option value is a usage error (exit 2) even when the output cannot be made: it was
/// reported as the missing directory (exit 4), and a user fixing that met the next error.
#[test]
fn a_bad_option_is_reported_before_the_output_is_opened() {
    let d = tmp();
    let input = write(d.path(), "in.folded", SEED_001.as_bytes());
    let out = d.path().join("no-such-dir").join("x.svg");
    let r = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-O",
        "width=0",
    ]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("option width=0: expected a width"), "{err}");
}

/// An option of another reader, given for a file whose content picked this one (a `.pvmtrace`
/// name whose lines are folded stacks; `-O strict` is the PVM reader's), says how the input
/// was read and how to read it with that reader: the message named pvm's option as unused,
/// with no word of the detection, while the name suggested pvm.
#[test]
fn an_option_of_the_reader_detection_did_not_pick_says_how_the_input_was_read() {
    let d = tmp();
    let input = write(d.path(), "run.pvmtrace", b"f 70\nf;g 60\nf;g;h 30\n");
    let path = input.to_str().unwrap();
    let want = "was read as 'folded', from its content: `--from pvm` reads it with 'pvm'";
    for args in [
        &["convert", path, "-O", "strict", "-t", "folded", "-o", "-"][..],
        &["tree", path, "-O", "variant=flamechart"],
    ] {
        let r = run(args);
        let err = text(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("belongs to format 'pvm'") && err.contains(want),
            "{err}"
        );
    }
    // A reader's option of the format written (`-O max-nodes`, callgrind's reader's).
    let callgrind_out = d.path().join("out.callgrind");
    let r = run(&[
        "convert",
        path,
        "-O",
        "max-nodes=10",
        "-o",
        callgrind_out.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert!(
        err.contains("applies when format 'callgrind' reads")
            && err.contains("`--from callgrind` reads it with 'callgrind'"),
        "{err}"
    );
    // An emitter's option is not about the input.
    let r = run(&[
        "convert",
        path,
        "-O",
        "normalize",
        "-t",
        "folded",
        "-o",
        "-",
    ]);
    assert!(
        !text(&r.stderr).contains("from its content"),
        "{}",
        text(&r.stderr)
    );
    // With `--from pvm` the option is the reader's.
    let r = run(&[
        "convert", path, "--from", "pvm", "-O", "strict", "-t", "folded", "-o", "-",
    ]);
    assert!(
        !text(&r.stderr).contains("belongs to"),
        "{}",
        text(&r.stderr)
    );
}

/// An option of a format the command does not use says whose it is (`-O normalize`, the flame
/// graph's, when writing folded stacks, read as a typo); with no reader loaded, the message does
/// not send the user to `--from`, which cannot help.
#[test]
fn an_option_of_another_format_and_no_reader_are_explained() {
    let d = tmp();
    let input = write(d.path(), "in.folded", SEED_001.as_bytes());
    let path = input.to_str().unwrap();
    let r = run(&[
        "convert",
        path,
        "-t",
        "folded",
        "-o",
        "-",
        "-O",
        "normalize",
    ]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "option 'normalize' belongs to format 'flamegraph', which this command does not use"
        ),
        "{err}"
    );
    let r = run(&["--no-default-plugins", "tree", path]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no plugin that reads profiles is loaded"),
        "{err}"
    );
    assert!(!err.contains("--from"), "{err}");
}

/// `profconv ARGS` run through `sh -c SCRIPT`, which ends by `exec`ing it (`"$0" "$@"`), with
/// the environment [`profconv`] sets.
#[cfg(unix)]
fn through_sh(script: &str, args: &[&std::ffi::OsStr]) -> std::process::Command {
    let exe = env!("CARGO_BIN_EXE_profconv");
    let mut c = with_profconv_env("sh");
    c.args(["-c", script, exe]).args(args).stdin(Stdio::null());
    c
}

/// Sends `signal` (`HUP`, `TERM`) to process `pid` with `kill`.
#[cfg(unix)]
fn kill(signal: &str, pid: &str) {
    let sent = std::process::Command::new("kill")
        .args(["-s", signal, pid])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {signal} {pid}");
}

/// The run succeeded and `target` holds a whole SVG.
#[cfg(unix)]
fn converted(out: std::process::Output, target: &Path) {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        text(&out.stderr)
    );
    let svg = std::fs::read_to_string(target).unwrap();
    assert!(svg.ends_with("</svg>\n"), "{}", &svg[..svg.len().min(200)]);
}

/// `nohup profconv …` and a script's `profconv … &` start with SIGHUP or SIGINT ignored: the
/// conversion must go on through them. The interrupt handler used to replace "ignore", so
/// closing the terminal ended a `nohup` run (exit 130).
#[cfg(target_os = "linux")]
#[test]
fn signals_ignored_at_start_stay_ignored() {
    use std::time::{Duration, Instant};
    let d = tmp();
    let input = write(d.path(), "big.folded", &many_stacks(400_000));
    let target = d.path().join("out.svg");
    let mut child = through_sh(
        "trap '' HUP INT; exec \"$0\" \"$@\"",
        &[
            "convert".as_ref(),
            input.as_os_str(),
            "-o".as_ref(),
            target.as_os_str(),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Once the temp file exists, the handler is installed (it is, before any output).
    let start = Instant::now();
    while temp_files(d.path()).is_empty() && start.elapsed() < Duration::from_secs(120) {
        assert!(child.try_wait().unwrap().is_none(), "ended before the test");
        std::thread::sleep(Duration::from_millis(2));
    }
    for signal in ["HUP", "INT"] {
        kill(signal, &child.id().to_string());
    }
    converted(child.wait_with_output().unwrap(), &target);
}

/// A file with an access ACL keeps it when replaced, as `sed -i` keeps it. With an ACL the
/// mode's group bits are the ACL's mask: copying only the mode gave the owning group the mask's
/// write access and dropped the named user's entry.
#[cfg(target_os = "linux")]
#[test]
fn a_replaced_file_keeps_its_acl_and_the_group_gains_nothing() {
    use profconv_plugin::host::{access_acl, set_access_acl};
    use std::os::unix::fs::PermissionsExt;
    let d = tmp();
    let input = write(d.path(), "in.folded", SEED_001.as_bytes());
    let target = write(d.path(), "out.svg", b"previous");
    chmod(&target, 0o640);
    // user::rw- user:65534:rw- group::r-- mask::rw- other::---
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 6u16, u32::MAX),
        (0x02, 6, 65534),
        (0x04, 4, u32::MAX),
        (0x10, 6, u32::MAX),
        (0x20, 0, u32::MAX),
    ] {
        acl.extend_from_slice(&tag.to_le_bytes());
        acl.extend_from_slice(&perm.to_le_bytes());
        acl.extend_from_slice(&id.to_le_bytes());
    }
    let file = std::fs::File::open(&target).unwrap();
    if let Err(e) = set_access_acl(&file, Some(&acl)) {
        eprintln!("skipped: this file system takes no POSIX ACL ({e})");
        return;
    }
    drop(file);
    let r = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .ends_with("</svg>\n")
    );
    assert_eq!(access_acl(&target).unwrap(), Some(acl));
    let mode = std::fs::metadata(&target).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o660, "the mask, as the old file had it");
    // A plain file stays plain, although its directory's default ACL (where `setfacl` can
    // give one) gives the new file one.
    let _ = std::process::Command::new("setfacl")
        .args(["-d", "-m", "u:65534:rwx"])
        .arg(d.path())
        .status();
    let plain = write(d.path(), "plain.svg", b"previous");
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o600)).unwrap();
    let _ = profconv_plugin::host::set_access_acl(&std::fs::File::open(&plain).unwrap(), None);
    let r = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        plain.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert_eq!(access_acl(&plain).unwrap(), None);
    let mode = std::fs::metadata(&plain).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// `chattr` on `path`; false where the tool or the file system's attributes are missing, or
/// this user may not set them (only root may).
#[cfg(target_os = "linux")]
fn chattr(flag: &str, path: &Path) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .arg(path)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// An immutable output, or one in an append-only directory, cannot be replaced: it is refused
/// before the input is read. In an append-only directory the temp file used to be made, then
/// could be neither renamed nor removed, and stayed (one per run); an immutable output failed
/// only at the rename, after the whole conversion.
#[cfg(target_os = "linux")]
#[test]
fn unreplaceable_outputs_are_refused_first_and_leave_nothing() {
    let d = tmp();
    let input = write(d.path(), "in.folded", SEED_001.as_bytes());
    let frozen = d.path().join("frozen");
    std::fs::create_dir(&frozen).unwrap();
    let kept = write(&frozen, "kept.svg", b"previous");
    if !chattr("+i", &kept) {
        eprintln!("skipped: cannot set file attributes here (chattr +i)");
        return;
    }
    let r = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        kept.to_str().unwrap(),
    ]);
    let immutable = text(&r.stderr);
    assert!(chattr("-i", &kept));
    assert_eq!(r.status.code(), Some(4), "{immutable}");
    assert!(immutable.contains("the file is immutable"), "{immutable}");
    assert!(chattr("+a", &frozen));
    let mut errors = Vec::new();
    for name in ["kept.svg", "new.svg"] {
        let r = run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            frozen.join(name).to_str().unwrap(),
        ]);
        errors.push((r.status.code(), text(&r.stderr)));
    }
    let left = temp_files(&frozen);
    assert!(chattr("-a", &frozen));
    for (code, err) in errors {
        assert_eq!(code, Some(4), "{err}");
        assert!(err.contains("the directory is append-only"), "{err}");
    }
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(std::fs::read(&kept).unwrap(), b"previous");
}

/// Input typed at a terminal ends at the first Ctrl-D, as for `cat`: the terminal gives the
/// end of input to one read only, and profconv read on after it (for the head it sniffs, then
/// for the parser), waiting for a second and a third Ctrl-D.
#[cfg(target_os = "linux")]
#[test]
fn input_typed_at_a_terminal_ends_at_the_first_ctrl_d() {
    let d = tmp();
    let exe = env!("CARGO_BIN_EXE_profconv");
    for args in ["tree -", "tree --from folded -"] {
        let command = format!("'{exe}' -q {args}; echo \"exit=$?\"");
        let mut child = match with_profconv_env("script")
            .args(["-qec", &command, "/dev/null"])
            .current_dir(d.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: no `script` to give profconv a terminal ({e})");
                return;
            }
        };
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"a;b 1\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        // One Ctrl-D, and the terminal kept open.
        stdin.write_all(b"\x04").unwrap();
        stdin.flush().unwrap();
        wait_within(
            &mut child,
            std::time::Duration::from_secs(20),
            "profconv waited for another Ctrl-D",
        );
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let screen = text(&out.stdout);
        assert!(
            screen.contains("a self=0 total=1") && screen.contains("exit=0"),
            "{args}: {screen:?}"
        );
    }
}

/// A warning printed while the progress bar is drawn goes above the bar, on a line of its own:
/// it used to be appended to the bar's line, and the bar's next redraw erased part of it.
#[cfg(target_os = "linux")]
#[test]
fn warnings_are_printed_above_the_progress_bar() {
    let d = tmp();
    write(d.path(), "part.folded", &many_stacks(20_000));
    write(d.path(), "bad.folded", b"caf\xe9;x 5\n");
    // A pipe in (a stream of unknown size gets a bar), a terminal for stderr (`script` makes
    // one); the pauses let the bar be drawn before the warning and after it.
    let exe = env!("CARGO_BIN_EXE_profconv");
    let pipeline = format!(
        "(cat part.folded; sleep 0.5; cat bad.folded; sleep 0.5; cat part.folded) | '{exe}' \
         convert - --from folded --to folded -o /dev/null"
    );
    let Some(out) = on_terminal(d.path(), &pipeline) else {
        return;
    };
    let screen = text(&out.stdout);
    assert!(out.status.success(), "{:?}: {screen}", out.status);
    let at = screen
        .find("profconv: warning: <stdin>: line 20001: frame names that are not UTF-8")
        .unwrap_or_else(|| panic!("no warning in {screen:?}"));
    let before = &screen[..at];
    assert!(before.contains("<stdin>"), "no bar was drawn: {screen:?}");
    assert!(
        before.ends_with("\x1b[2K") || before.ends_with('\n') || before.is_empty(),
        "the warning shares the bar's line: {:?}",
        &before[before.len().saturating_sub(120)..]
    );
}

/// The progress bar is one line of an 80-column terminal (`script` gives no size: 80 is the
/// default), the file's name cut short to fit: it was 81 columns and the name, so it wrapped
/// onto a second row ("… MiB/s e" / "ta 1s"), and the message of a file truncated under the
/// parse, which erases one row only, left the bar's first row above it. It also leaves the
/// last two columns free: padded to the full width, it left the cursor in the last column,
/// so the `^C` the terminal echoes for Ctrl-C went onto the next row, and clearing that row
/// (on the interrupt) left the bar on the screen.
#[cfg(target_os = "linux")]
#[test]
fn the_progress_bar_fits_on_one_line_of_an_80_column_terminal() {
    let d = tmp();
    let line = format!("a;{} 1\n", "b".repeat(1020));
    let name = "a-profile-with-a-rather-long-name-from-the-nightly-run.folded";
    write(d.path(), name, line.repeat(66_000).as_bytes());
    let exe = env!("CARGO_BIN_EXE_profconv");
    for input in [name.to_string(), format!("- < {name}")] {
        let command = format!(
            "'{exe}' convert -j1 --from folded {input} --to folded -o /dev/null; echo \"exit=$?\""
        );
        let Some(out) = on_terminal(d.path(), &command) else {
            return;
        };
        let screen = text(&out.stdout);
        assert!(screen.contains("exit=0"), "{screen:?}");
        // Its padding to the width given is counted: the cursor stops where it ends.
        let mut bars = drawn_lines(&screen);
        bars.retain(|s| s.contains("MiB/s"));
        assert!(!bars.is_empty(), "no bar was drawn: {screen:?}");
        for bar in bars {
            assert!(
                bar.chars().count() <= 78,
                "{input}: wider than 78 columns: {bar:?}"
            );
        }
        // A bar of one row is erased in place; one of several, by moving the cursor up.
        assert!(
            !screen.contains("\x1b[1A"),
            "{input}: the bar wrapped: {screen:?}"
        );
    }
}

/// A conversion in the background of the terminal (`profconv … &` with job control, or
/// Ctrl-Z then `bg`) draws no progress bar: it was drawn over the shell's prompt and what the
/// user typed after it, and with `stty tostop` its first draw stopped the conversion ("Stopped
/// (tty output)") until brought back with `fg`.
#[cfg(target_os = "linux")]
#[test]
fn a_conversion_in_the_background_draws_no_progress_bar() {
    let d = tmp();
    let line = format!("a;{} 1\n", "b".repeat(1020));
    write(d.path(), "big.folded", line.repeat(66_000).as_bytes());
    let exe = env!("CARGO_BIN_EXE_profconv");
    // `set -m`: the job gets a process group of its own, which is not the terminal's
    // foreground one; `tostop` stops it at its first write to the terminal (then undone, and
    // the job continued, so that a stopped one ends too). Its state is read from /proc, not
    // with `jobs`: on a fast machine the job is done within the second, and `jobs` forgets a
    // finished job, so `wait` could no longer tell its exit status (127); the `kill` of a
    // finished job is not an error here either.
    let command = format!(
        "stty tostop; set -m; '{exe}' convert -j1 big.folded --to folded -o bg.folded & \
         sleep 1; echo \"state=$(cut -d' ' -f3 /proc/$!/stat 2>/dev/null)\"; \
         stty -tostop; kill -CONT $! 2>/dev/null; wait $!; echo \"exit=$?\""
    );
    let Some(out) = on_terminal(d.path(), &command) else {
        return;
    };
    let screen = text(&out.stdout);
    assert!(screen.contains("exit=0"), "{screen:?}");
    assert!(!screen.contains("MiB/"), "a bar was drawn: {screen:?}");
    assert!(!screen.contains("state=T"), "it stopped: {screen:?}");
    assert_eq!(
        std::fs::read_to_string(d.path().join("bg.folded")).unwrap(),
        line.replace(" 1\n", " 66000\n")
    );
}

/// A large file read by a parser that tells how far it has read (folded, PVM) is mapped on a
/// terminal too, and the progress bar follows the parser (it was read through the bar instead,
/// a copy more: 5 % more CPU on a 1 GB file); the output is the one written without a bar.
#[cfg(target_os = "linux")]
#[test]
fn a_mapped_file_still_gets_a_progress_bar() {
    let d = tmp();
    // 67.6 MB, past the 64 MiB from which a file gets a bar, in long lines (few of them: the
    // tests' profconv is a debug build).
    let line = format!("a;{} 1\n", "b".repeat(1020));
    write(d.path(), "big.folded", line.repeat(66_000).as_bytes());
    let exe = env!("CARGO_BIN_EXE_profconv");
    let command =
        format!("'{exe}' convert -j1 big.folded --to folded -o bar.folded; echo \"exit=$?\"");
    let Some(out) = on_terminal(d.path(), &command) else {
        return;
    };
    let screen = text(&out.stdout);
    assert!(screen.contains("exit=0"), "{screen:?}");
    assert!(
        screen.contains("big.folded ") && screen.contains("] ") && screen.contains("MiB/"),
        "no bar was drawn: {screen:?}"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("bar.folded")).unwrap(),
        line.replace(" 1\n", " 66000\n")
    );
    // `--quiet` draws no bar (it drew one: the option hid warnings only).
    let quiet =
        format!("'{exe}' -q convert -j1 big.folded --to folded -o q.folded; echo \"exit=$?\"");
    let Some(out) = on_terminal(d.path(), &quiet) else {
        return;
    };
    let screen = text(&out.stdout);
    assert!(
        screen.contains("exit=0") && !screen.contains("MiB/"),
        "{screen:?}"
    );
    // The parser reads no byte through the host: with strace, no read of the file's size.
    let traced = with_profconv_env("strace")
        .args([
            "-f",
            "-e",
            "trace=read",
            "-o",
            "reads.txt",
            "script",
            "-qec",
        ])
        .arg(format!(
            "'{exe}' convert -j1 big.folded --to folded -o bar2.folded"
        ))
        .arg("/dev/null")
        .current_dir(d.path())
        .output();
    if let Ok(traced) = traced
        && traced.status.success()
    {
        let reads = std::fs::read_to_string(d.path().join("reads.txt")).unwrap_or_default();
        let big_reads = reads
            .lines()
            .filter(|l| l.contains("read("))
            .filter_map(|l| l.rsplit("= ").next()?.trim().parse::<u64>().ok())
            .filter(|&n| n >= 65_536)
            .count();
        assert!(
            big_reads < 16,
            "the file was read, not mapped: {big_reads} large reads"
        );
    }
}

/// A gzip file of 16 MiB or more (compressed) gets a bar with a total and an ETA, as an
/// uncompressed file does: the compressed bytes its decoder has consumed, of the file's size
/// (it got a spinner of the decompressed bytes, with no total, whatever its size); the output
/// is the one written without a terminal. From a pipe, its size unknown, it keeps the spinner;
/// a small gzip file gets nothing.
#[cfg(target_os = "linux")]
#[test]
fn a_large_gzip_file_gets_a_progress_bar_with_a_total() {
    let d = tmp();
    // Stored, not deflated (level 0): 17.4 MB of long lines, past 16 MiB compressed too, and
    // quick for the tests' debug build to decompress.
    let line = format!("a;{} 1\n", "b".repeat(1020));
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    enc.write_all(line.repeat(17_000).as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    let big = write(d.path(), "big.folded.gz", &gz);
    let plain_path = d.path().join("plain.folded");
    let plain_arg = plain_path.to_str().unwrap();
    let plain = run(&[
        "convert",
        "-j1",
        big.to_str().unwrap(),
        "--to",
        "folded",
        "-o",
        plain_arg,
    ]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert!(plain.stderr.is_empty(), "{}", text(&plain.stderr));
    let exe = env!("CARGO_BIN_EXE_profconv");
    let command =
        format!("'{exe}' convert -j1 big.folded.gz --to folded -o bar.folded; echo \"exit=$?\"");
    let Some(out) = on_terminal(d.path(), &command) else {
        return;
    };
    let screen = text(&out.stdout);
    assert!(screen.contains("exit=0"), "{screen:?}");
    // The compressed file's size as indicatif writes it: `16.62 MiB`.
    let total = format!("/{:.2} MiB ", gz.len() as f64 / f64::from(1 << 20));
    let mut bars = drawn_lines(&screen);
    bars.retain(|s| s.starts_with("big.folded.gz "));
    assert!(
        bars.iter()
            .any(|b| b.contains("] gz ") && b.contains(&total) && b.contains(" eta ")),
        "no bar with a total ({total}) was drawn: {screen:?}"
    );
    for bar in &bars {
        assert!(bar.chars().count() <= 78, "wider than 78 columns: {bar:?}");
    }
    // Cleared at the end: the last thing drawn before the shell's `echo` erases the line.
    let end = screen.rfind("exit=0").unwrap();
    assert!(
        screen[..end].trim_end().ends_with("\x1b[2K"),
        "the bar was not cleared: {screen:?}"
    );
    assert_eq!(
        std::fs::read(d.path().join("bar.folded")).unwrap(),
        std::fs::read(plain_arg).unwrap()
    );
    // From a pipe: a spinner of the decompressed bytes, no total.
    let piped = format!(
        "cat big.folded.gz | '{exe}' convert -j1 - --from folded --to folded -o pipe.folded; \
         echo \"exit=$?\""
    );
    let Some(out) = on_terminal(d.path(), &piped) else {
        return;
    };
    let screen = text(&out.stdout);
    assert!(screen.contains("exit=0"), "{screen:?}");
    let mut spinners = drawn_lines(&screen);
    spinners.retain(|s| s.starts_with("<stdin> "));
    assert!(
        !spinners.is_empty() && spinners.iter().all(|s| !s.contains(" eta ")),
        "{screen:?}"
    );
    // A small gzip file gets no bar, as a small file does not.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(SEED_001.as_bytes()).unwrap();
    write(d.path(), "small.folded.gz", &enc.finish().unwrap());
    let small =
        format!("'{exe}' convert small.folded.gz --to folded -o small.folded; echo \"exit=$?\"");
    let Some(out) = on_terminal(d.path(), &small) else {
        return;
    };
    assert_eq!(text(&out.stdout), "exit=0\r\n");
}

/// The text of each line drawn on `screen`: escape sequences left out, cut at carriage returns.
fn drawn_lines(screen: &str) -> Vec<String> {
    let mut drawn = String::new();
    let mut chars = screen.chars();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // `ESC [ parameters letter`
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
                drawn.push('\r');
            }
            c => drawn.push(c),
        }
    }
    drawn.split(['\r', '\n']).map(str::to_string).collect()
}

/// A signal that arrives once the output is in place changes nothing: the run ends as it would
/// have, exit 0. It used to exit 130 ("interrupted") with the new output already renamed over
/// the old. `strace` holds the rename's return (1.5 s), so the signal lands there. A busy
/// machine can keep this thread from running for longer than that, so that it sees the output
/// only once profconv has ended (`kill` then failed, with no process to signal): then the run
/// proves nothing and is made again, the rename held longer.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_after_the_output_is_in_place_does_not_fail_the_run() {
    use std::time::{Duration, Instant};
    let d = tmp();
    let input = write(d.path(), "in.folded", SEED_001.as_bytes());
    let target = d.path().join("out.svg");
    let renames = "rename,renameat,renameat2";
    for hold_ms in [1_500u64, 6_000, 24_000] {
        std::fs::write(&target, b"previous").unwrap();
        let strace = with_profconv_env("strace")
            .args(["-f", "-o", "/dev/null", "-e"])
            .arg(format!("trace={renames}"))
            .arg("-e")
            .arg(format!("inject={renames}:delay_exit={}", hold_ms * 1000))
            .arg(env!("CARGO_BIN_EXE_profconv"))
            .args(["convert", input.to_str().unwrap(), "-o"])
            .arg(&target)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let Ok(mut strace) = strace else {
            eprintln!("skipped: no strace");
            return;
        };
        // profconv's id, read while it runs (once it has ended, strace has no child to name),
        // by its name: strace's first children are its own, testing the kernel's features.
        let children = format!("/proc/{0}/task/{0}/children", strace.id());
        let profconv = || {
            let ids = std::fs::read_to_string(&children).unwrap_or_default();
            ids.split_whitespace()
                .find(|id| {
                    std::fs::read_to_string(format!("/proc/{id}/comm"))
                        .is_ok_and(|c| c.trim() == "profconv")
                })
                .map(str::to_string)
        };
        let mut pid = None;
        let start = Instant::now();
        while std::fs::read(&target).unwrap() == b"previous" {
            if pid.is_none() {
                pid = profconv();
            }
            if strace.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(60) {
                let out = strace.wait_with_output().unwrap();
                eprintln!(
                    "skipped: strace could not run profconv: {}",
                    text(&out.stderr)
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let pid = pid.or_else(profconv).unwrap_or_default();
        // Sent while it is alive (held in the rename, or past it), not a zombie nor gone.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let sent = state
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X']))
            && std::process::Command::new("kill")
                .args(["-s", "TERM", &pid])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        let out = strace.wait_with_output().unwrap();
        if !sent {
            eprintln!("profconv ended before the signal (rename held {hold_ms} ms): again");
            continue;
        }
        converted(out, &target);
        assert!(temp_files(d.path()).is_empty());
        return;
    }
    panic!("profconv always ended before this thread could signal it");
}

/// `profconv convert in.folded -o - >> in.folded` is refused as `-o in.folded` is: stdout is
/// the input. `-o /dev/stdout` was refused, `-o -` not.
#[cfg(unix)]
#[test]
fn stdout_redirected_to_the_input_is_refused() {
    let d = tmp();
    let input = write(d.path(), "in.folded", b"a;b 1\n");
    let append = std::fs::OpenOptions::new()
        .append(true)
        .open(&input)
        .unwrap();
    let out = profconv()
        .args([
            "convert",
            input.to_str().unwrap(),
            "--to",
            "folded",
            "-o",
            "-",
        ])
        .stdout(append)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("refusing to write the output to stdout, which is the input"),
        "{err}"
    );
    assert_eq!(std::fs::read(&input).unwrap(), b"a;b 1\n");
    // `tree` writes to stdout too.
    let append = std::fs::OpenOptions::new()
        .append(true)
        .open(&input)
        .unwrap();
    let out = profconv()
        .args(["tree", input.to_str().unwrap()])
        .stdout(append)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&input).unwrap(), b"a;b 1\n");
}

/// A large file with no newline (a sparse file of zeros, a disk image given by mistake) is
/// refused once one line's bound (256 MiB) holds none: the search for the first line's end
/// read the whole mapped file first (10 GB took 2–40 s and 10 GB of page cache). Each reader
/// of mapped lines (folded on one thread and in pieces, PVM's first-line look) is run on a
/// sparse file of 1 TiB, which nothing could read in the time allowed.
#[cfg(unix)]
#[test]
fn a_huge_file_without_newlines_is_refused_without_reading_it_all() {
    use std::time::Duration;
    let d = tmp();
    let path = d.path().join("zeros.folded");
    let file = std::fs::File::create(&path).unwrap();
    if let Err(e) = file.set_len(1 << 40) {
        eprintln!("skipped: this file system has no sparse file of 1 TiB: {e}");
        return;
    }
    drop(file);
    let p = path.to_str().unwrap();
    for args in [
        &["-j1", "--from", "folded"][..],
        &["-j2", "--from", "folded"][..],
        &["--from", "pvm"][..],
        &[][..],
    ] {
        let mut child = profconv()
            .arg("convert")
            .arg(p)
            .args(args)
            .args(["--to", "folded", "-o"])
            .arg(d.path().join("out.folded"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_within(
            &mut child,
            Duration::from_secs(90),
            &format!("{args:?}: still reading"),
        );
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(
            err.contains("zeros.folded:1:1: no newline in 268435456 bytes"),
            "{args:?}: {err}"
        );
    }
}

/// `-o nodir/` names a directory that is not there: refused before the input is read (a
/// stdin that never ends is not waited for), as the output's other checks are. It was found
/// only by the rename after the whole conversion, as "Not a directory".
#[cfg(unix)]
#[test]
fn an_output_name_ending_in_a_slash_is_refused_before_the_input_is_read() {
    use std::time::Duration;
    let d = tmp();
    write(d.path(), "x.svg", b"not a directory\n");
    for name in ["nodir/", "x.svg/", "nodir/.", "x.svg/.."] {
        let mut child = profconv()
            .current_dir(d.path())
            .args([
                "convert", "-", "--from", "folded", "--to", "folded", "-o", name,
            ])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        wait_within(
            &mut child,
            Duration::from_secs(30),
            &format!("{name}: waited for the input before refusing the output"),
        );
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{name}: {err}");
        assert!(
            err.contains(&format!("{name}: names a directory (it ends in `/`")),
            "{name}: {err}"
        );
    }
    assert!(temp_files(d.path()).is_empty());
    assert!(!d.path().join("nodir").exists());
}

/// An output name longer than the file system takes (`File name too long`) is refused before
/// the input is read, as `nodir/` is: it was found only by the rename, after the whole
/// conversion (here: an input that never ends was waited for).
#[cfg(unix)]
#[test]
fn an_output_name_too_long_is_refused_before_the_input_is_read() {
    use std::time::Duration;
    let d = tmp();
    let name = format!("{}.folded", "a".repeat(300));
    let mut child = profconv()
        .current_dir(d.path())
        .args(["convert", "-", "--from", "folded", "-o", &name])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    wait_within(
        &mut child,
        Duration::from_secs(30),
        "waited for the input before refusing the output's name",
    );
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!("{name}: File name too long")),
        "{err}"
    );
    assert!(temp_files(d.path()).is_empty());
}

/// A file name is shown with its control characters escaped: a name holding a newline and
/// `profconv: warning: …` printed a line that read as one of profconv's own.
#[cfg(unix)]
#[test]
fn control_characters_in_file_names_are_escaped_in_messages() {
    let d = tmp();
    let name = "e.folded\nprofconv: warning: all is well";
    write(d.path(), name, b"main;a 1\nmain;\xff 2\n");
    for args in [
        &["convert", name, "-o", "out.svg"][..],
        &["convert", name, "-o", name][..],
        &["convert", "missing\n.folded", "-o", "out.svg"][..],
        &["convert", "seed\n.svg", "-o", "out.svg"][..],
    ] {
        let out = profconv()
            .current_dir(d.path())
            .args(args)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert!(
            err.lines()
                .all(|l| l.starts_with("profconv: ")
                    && !l.starts_with("profconv: warning: all is well")),
            "{args:?}: {err}"
        );
        assert!(err.contains("\\n"), "{args:?}: {err}");
    }
    // A plugin file's name, and the loader's message that repeats it, are escaped too.
    let plugins = d.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    write(
        &plugins,
        "libprofconv_plugin_x\nprofconv: all is well\u{1b}[31m.so",
        b"not a library",
    );
    for args in [&["formats"][..], &["convert", "e.folded", "-o", "x.folded"]] {
        let out = profconv()
            .current_dir(d.path())
            .env("PROFCONV_PLUGIN_PATH", &plugins)
            .args(args)
            .output()
            .unwrap();
        let all = [text(&out.stdout), text(&out.stderr)].concat();
        assert!(all.contains("plugin_x\\nprofconv"), "{args:?}: {all}");
        assert!(
            !all.contains('\u{1b}') && all.lines().all(|l| !l.starts_with("profconv: all is well")),
            "{args:?}: {all}"
        );
    }
    let out = profconv()
        .current_dir(d.path())
        .args(["convert", name, "-o", "out.svg"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with(
            "profconv: warning: e.folded\\nprofconv: warning: all is well: line 2: frame names \
             that are not UTF-8"
        ),
        "{}",
        text(&out.stderr)
    );
}

/// With `fs.protected_symlinks` (the default of most distributions), the kernel does not let
/// a user follow another user's link in a world-writable sticky directory such as /tmp, so
/// that a link planted there cannot make a victim's `> /tmp/report.svg` write their files.
/// The output's link was resolved by hand (`readlink`), which the kernel does not restrict:
/// root's `-o /tmp/report.svg` wrote through a link of nobody's. Runs as root where the
/// setting is on; skipped otherwise.
#[cfg(target_os = "linux")]
#[test]
fn a_link_the_system_will_not_follow_is_not_written_through() {
    let on =
        std::fs::read_to_string("/proc/sys/fs/protected_symlinks").is_ok_and(|v| v.trim() == "1");
    let root = running_as_root();
    if !(on && root) {
        eprintln!("skipped: needs root and fs.protected_symlinks = 1 (on: {on}, root: {root})");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let victim = write(d.path(), "victim.folded", b"keep me\n");
    let shared = d.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    for (link, to) in [
        ("report.folded", victim.clone()),
        ("dangling.folded", d.path().join("new.folded")),
    ] {
        let link = shared.join(link);
        std::os::unix::fs::symlink(&to, &link).unwrap();
        give_to_nobody(&link);
        let out = run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            link.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(err.contains("fs.protected_symlinks"), "{err}");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me\n");
    assert!(!d.path().join("new.folded").exists());
    assert!(temp_files(&shared).is_empty());
}

/// A file or FIFO another user put in a sticky directory anyone may write to (/tmp), where
/// the output is to go, is not written, root's output included: the FIFO was opened and its
/// maker read the profile as it was written, and the file was replaced by one given back to its
/// owner (owner and mode kept: root's output became nobody's, mode 666). The kernel's
/// `fs.protected_fifos` and `fs.protected_regular` (on in most distributions) refuse the shell's
/// `> file` there for the same reason. Runs as root; skipped otherwise.
#[cfg(target_os = "linux")]
#[test]
fn another_user_s_file_or_fifo_in_a_sticky_directory_is_not_written() {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    if !root_to_give_files_away() {
        return;
    }
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let shared = d.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();

    let planted = write(&shared, "report.folded", b"nobody's\n");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
    give_to_nobody(&planted);
    let fifo = shared.join("report.svg");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o622)).unwrap();
    give_to_nobody(&fifo);
    // The FIFO's maker, reading: opened without waiting for a writer.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(&fifo)
        .unwrap();
    for (out, what) in [(&planted, "the file"), (&fifo, "the special file")] {
        let r = run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--to",
            "folded",
        ]);
        let err = text(&r.stderr);
        assert_eq!(r.status.code(), Some(4), "{err}");
        assert!(
            err.contains(&format!("{what} belongs to another user (uid 65534)"))
                && err.contains("fs.protected_regular"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&planted).unwrap(), b"nobody's\n");
    assert_eq!(std::fs::metadata(&planted).unwrap().uid(), 65534);
    let mut got = Vec::new();
    let _ = std::io::Read::read_to_end(&mut reader, &mut got);
    assert!(got.is_empty(), "{}", text(&got));
    assert_eq!(temp_files(&shared).len(), 0);
    // The same name of root's own, or of the directory's owner, is written as before.
    std::fs::remove_file(&planted).unwrap();
    write(&shared, "report.folded", b"root's\n");
    let r = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        planted.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
}

/// An input compressed by another tool than gzip (zstd, xz, bzip2, lz4, zip) or in UTF-16 says
/// what it is and how to read it, whether its format was detected or chosen; it was "cannot
/// tell the input's format", or with `--from` warnings about invalid UTF-8 and an error about
/// some character of line 1.
#[test]
fn inputs_compressed_by_other_tools_say_what_they_are() {
    let d = tmp();
    let tail = b"\x00\x01\x0a\x80\xffmain;a 3\n\x00\x02";
    let cases: [(&str, &[u8], &str); 6] = [
        (
            "p.folded.zst",
            b"\x28\xb5\x2f\xfd\x24\x00",
            "zstd-compressed",
        ),
        ("p.folded.xz", b"\xfd7zXZ\x00\x00\x04", "xz-compressed"),
        ("p.folded.bz2", b"BZh91AY&SY\x12", "bzip2-compressed"),
        ("p.lz4", b"\x04\x22\x4d\x18\x64\x40", "lz4-compressed"),
        ("p.zip", b"PK\x03\x04\x14\x00", "a zip archive"),
        ("p.txt", b"\xff\xfem\x00a\x00", "UTF-16 LE text"),
    ];
    for (name, head, what) in cases {
        let path = write(d.path(), name, &[head, tail.as_slice()].concat());
        let p = path.to_str().unwrap();
        for from in [
            &[][..],
            &["--from", "folded", "-j1"],
            &["--from", "folded", "-j2"],
            &["--from", "pvm"],
            &["--from", "callgrind"],
            &["--from", "deep"],
        ] {
            // Deep.data is no text: it says what compression it is, not UTF-16.
            if from.contains(&"deep") && what.starts_with("UTF-16") {
                continue;
            }
            let out = profconv().args(["tree", p]).args(from).output().unwrap();
            let err = text(&out.stderr);
            // About the input, however it was found: exit 3.
            assert_eq!(out.status.code(), Some(3), "{name} {from:?}: {err}");
            assert!(
                err.contains(&format!("the input is {what}")) && err.lines().count() == 1,
                "{name} {from:?}: {err}"
            );
        }
    }
    // The text of a name that merely starts like a magic number is read.
    let path = write(d.path(), "bz.folded", b"BZh9;main 3\n");
    let out = run(&["tree", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A file gzipped twice says so and how to read it, whatever reader takes it: the host takes off
/// one layer, and the readers saw gzip's header as a first line of binary bytes ("expected
/// `STACK COUNT`: the line has no count" for folded stacks), where every other tool's
/// compression was named.
#[test]
fn an_input_gzipped_twice_says_so() {
    let d = tmp();
    let gzip = |data: &[u8]| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    };
    let path = write(d.path(), "p.folded.gz", &gzip(&gzip(b"main;a 3\n")));
    let p = path.to_str().unwrap();
    for from in [
        &[][..],
        &["--from", "folded", "-j1"],
        &["--from", "folded", "-j2"],
        &["--from", "pvm"],
        &["--from", "callgrind"],
        &["--from", "deep"],
    ] {
        let out = profconv().args(["tree", p]).args(from).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{from:?}: {err}");
        assert!(
            err.contains("the input is gzip-compressed twice")
                && err.contains("gzip -dc FILE | profconv")
                && err.lines().count() == 1,
            "{from:?}: {err}"
        );
    }
    // Taken off once more on the way in, it reads.
    let once = write(d.path(), "q.folded.gz", &gzip(b"main;a 3\n"));
    let out = run(&["tree", once.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A perf.data file (`perf record`'s binary output, named `.data`, which the Deep.data reader
/// declares) says what it is and how to fold it, named so or not, from a file or a pipe (exit
/// 3); it failed as "not a Mercury deep profiler data file".
#[test]
fn a_perf_data_file_says_what_it_is_and_how_to_fold_it() {
    let d = tmp();
    let bytes = b"PERFILE2h\x00\x00\x00\x00\x00\x00\x00\x88\x00\x00\x00\x00\x00\x00\x00";
    // Recorded on a big-endian machine, the magic is reversed.
    let mut big_endian = bytes.to_vec();
    big_endian[..8].copy_from_slice(b"2ELIFREP");
    for (name, bytes) in [
        ("perf.data", &bytes[..]),
        ("perf.data.old", &bytes[..]),
        ("capture", &bytes[..]),
        ("ppc64.perf.data", &big_endian[..]),
    ] {
        let path = write(d.path(), name, bytes);
        let out = run(&["tree", path.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{name}: {err}");
        assert!(
            err.contains("the input is a perf.data file")
                && err.contains("inferno-collapse-perf")
                && !err.contains("Mercury"),
            "{name}: {err}"
        );
    }
    let mut child = profconv()
        .args(["convert", "-", "--to", "folded"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("<stdin>: the input is a perf.data file"),
        "{err}"
    );
    // `--from deep` is the user's choice: the Deep.data reader says why it is not one.
    let path = write(d.path(), "perf.data", bytes);
    let out = run(&["tree", path.to_str().unwrap(), "--from", "deep"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("Mercury"),
        "{}",
        text(&out.stderr)
    );
}

/// A file something is mounted over (`mount --bind`, as a container's `-v out.svg:/out.svg`
/// mounts one) cannot be renamed over: the rename failed with EBUSY after the whole conversion,
/// `Device or resource busy`, exit 4, where `> file` and `cp` write it. Its content is now
/// replaced in place once the output is complete, and no temp file is left; a failed conversion
/// still leaves the old content. Needs root (to mount); skipped otherwise.
#[cfg(target_os = "linux")]
#[test]
fn a_file_mounted_over_is_rewritten_in_place() {
    if !running_as_root() {
        eprintln!("skipped: needs root to bind-mount a file");
        return;
    }
    let d = tmp();
    let input = write(d.path(), "in.folded", SEED_001.as_bytes());
    let source = write(d.path(), "source.folded", b"previous\n");
    let target = write(d.path(), "target.folded", b"under the mount\n");
    let mount = std::process::Command::new("mount")
        .arg("--bind")
        .arg(&source)
        .arg(&target)
        .output();
    if !mount.is_ok_and(|m| m.status.success()) {
        eprintln!("skipped: cannot bind-mount a file here");
        return;
    }
    let convert = |input: &Path| {
        run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            target.to_str().unwrap(),
        ])
    };
    let bad = write(d.path(), "bad.folded", b"a;b x\n");
    let failed = convert(&bad);
    let after_failure = std::fs::read_to_string(&target);
    let out = convert(&input);
    let written = std::fs::read_to_string(&target);
    let left = temp_files(d.path());
    let unmounted = std::process::Command::new("umount").arg(&target).status();
    assert!(unmounted.is_ok_and(|s| s.success()), "umount failed");
    assert_ne!(failed.status.code(), Some(0));
    assert_eq!(after_failure.unwrap(), "previous\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(written.unwrap(), SEED_001);
    assert_eq!(std::fs::read_to_string(&source).unwrap(), SEED_001);
    assert!(left.is_empty(), "{left:?}");
}
