//! Regressions from the CLI audit: signals, stdin given twice, plugins that fail to load, gzip
//! errors, odd output paths. Each test runs the real `profconv` binary.

#[path = "support/run.rs"]
mod run;
mod support;

use run::{
    many_stacks, on_terminal, profconv, run, spawn_piped, temp_files, text, tmp, with_profconv_env,
    write,
};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{SEED_001, lib_path};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// `timeout`, `kill` and a closed terminal end a conversion with SIGTERM or SIGHUP: like
/// Ctrl-C, they must remove the half-written temp file, and the process still ends by the
/// signal (a shell shows 128 + N). Ctrl-\ (SIGQUIT) and the other signals that end a process
/// by default remove it too.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_during_a_conversion_removes_the_temp_file() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmp();
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    for (signal, number) in [
        ("TERM", 15),
        ("HUP", 1),
        ("INT", 2),
        ("QUIT", 3),
        ("USR1", 10),
        ("ALRM", 14),
        // What a CPU-time limit (`ulimit -t`) sends first: it left the temp file.
        ("XCPU", 24),
    ] {
        // The signal must arrive while the output is being written: retry with a bigger input
        // if the conversion was too quick to catch.
        let mut lines = 200_000;
        let mut caught = false;
        for _ in 0..4 {
            let input = write(d.path(), "big.folded", &many_stacks(lines));
            let target = out_dir.join("big.svg");
            // Through `sh` only to write no core file (SIGQUIT dumps one where allowed); `exec`
            // keeps the process id the signal goes to. Through GNU `env` to give the signal
            // its default action: the tests may have been started with it ignored (SIGINT and
            // SIGQUIT in a script's background job, `cargo test &`; SIGHUP under `nohup`),
            // profconv keeps an ignored signal ignored, as it must, and the test failed as
            // "always too quick to interrupt".
            profconv(); // builds the plugins
            let child = Command::new("env")
                .arg(format!("--default-signal={signal}"))
                .args(["sh", "-c", "ulimit -c 0; exec \"$@\"", "sh"])
                .arg(env!("CARGO_BIN_EXE_profconv"))
                .env_remove("PROFCONV_PLUGIN_PATH")
                .env("XDG_DATA_HOME", "/nonexistent-profconv-test")
                .stdin(Stdio::null())
                .args([
                    "convert",
                    input.to_str().unwrap(),
                    "-o",
                    target.to_str().unwrap(),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let (out, seen) = signal_once_the_temp_file_exists(child, &out_dir, signal);
            if out.status.success() {
                // Finished before the signal: clean up and try a bigger input.
                let _ = std::fs::remove_file(&target);
                lines *= 2;
                continue;
            }
            assert!(seen, "{signal}: failed by itself: {}", text(&out.stderr));
            // Every one ends the process by the signal, SIGINT, SIGTERM and SIGHUP too (they
            // exited 130, which a shell loop takes for a program that handled Ctrl-C and goes on:
            // `ctrl_c_in_a_shell_loop_of_conversions_stops_the_loop`).
            assert_eq!(
                out.status.signal(),
                Some(number),
                "SIG{signal}: {:?}",
                out.status
            );
            let left = temp_files(&out_dir);
            assert!(left.is_empty(), "SIG{signal} left temp files: {left:?}");
            assert!(!target.exists(), "SIG{signal} left a partial output");
            caught = true;
            break;
        }
        assert!(
            caught,
            "SIG{signal}: the conversion was always too quick to interrupt"
        );
    }
}

/// Ctrl-C in a shell loop of conversions (`for f in *.folded; do profconv convert "$f" …; done`)
/// stops the loop, not only the conversion under way. The terminal sends SIGINT to the whole
/// foreground process group, bash too; bash waits for the command it runs and then goes on
/// with the loop unless that command ended *by* SIGINT (an exit status of 130 is what a program
/// that handled Ctrl-C itself returns, an editor say, and the script goes on). profconv used to
/// remove its temp file and exit 130, so each Ctrl-C skipped one file of the loop; it now
/// ends by the signal once the temp file is removed, as gzip and sort do.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_in_a_shell_loop_of_conversions_stops_the_loop() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let d = tmp();
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    profconv(); // builds the plugins
    // Each conversion reads a pipe that stays open (`sleep`), so it is under way, its temp
    // file made, when the signal comes. GNU `env` gives bash (and so profconv) SIGINT's default
    // action, which `cargo test &` would have ignored.
    let script = r#"for i in 1 2 3; do sleep 10 | "$0" convert - --from folded -o "$1/out$i.svg"; echo "after $i: $?"; done"#;
    let child = with_profconv_env("env")
        .args(["--default-signal=INT", "bash", "-c", script])
        .arg(env!("CARGO_BIN_EXE_profconv"))
        .arg(&out_dir)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while temp_files(&out_dir).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the first conversion made no temp file"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Ctrl-C: SIGINT to the process group.
    let group = format!("-{}", child.id());
    let killed = Command::new("kill")
        .args(["-s", "INT", "--", &group])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -s INT -- {group}");
    let out = child.wait_with_output().unwrap();
    let said = text(&out.stdout);
    assert_eq!(
        out.status.signal(),
        Some(2),
        "bash went on with the loop after Ctrl-C ({:?}): {said}",
        out.status
    );
    assert!(!said.contains("after 2"), "{said}");
    let left = temp_files(&out_dir);
    assert!(left.is_empty(), "Ctrl-C left temp files: {left:?}");
}

/// Each message goes to stderr in one write: runs side by side (`xargs -P 8 … 2>> errors.log`,
/// GNU parallel, `make -j`) share one stderr, and a message written in pieces (`profconv:
/// error: `, the text, the line break: three writes) was cut into by another run's, so that a
/// log of 500 failed conversions held `profconv: error: profconv: error: a.folded:1:5: …`.
/// One write of a line shorter than a pipe's buffer is never cut (a pipe, or a file opened
/// for appending). Checked with strace: every write to descriptor 2 is a whole message.
#[cfg(target_os = "linux")]
#[test]
fn each_message_is_one_write_so_parallel_runs_do_not_cut_into_each_other() {
    let d = tmp();
    let bad = write(d.path(), "bad.folded", b"a;b 1\nnot a line\na;c x\n");
    profconv(); // builds the plugins
    let log = d.path().join("writes.txt");
    // A warning (the skipped line), the count of skipped lines, then a transform that matched
    // nothing; and an error.
    for args in [
        &["-O", "skip-bad-lines", "-T", "focus:nothing"][..],
        &[][..],
    ] {
        let traced = with_profconv_env("strace")
            .args(["-f", "-qq", "-s", "4096", "-e", "trace=write", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_profconv"))
            .arg("convert")
            .arg(&bad)
            .args(["--to", "folded", "-o", "-"])
            .args(args)
            .stdin(Stdio::null())
            .output();
        let Ok(traced) = traced else {
            eprintln!("skipped: no strace");
            return;
        };
        let said = text(&traced.stderr);
        let messages = said.lines().filter(|l| l.starts_with("profconv: ")).count();
        assert!(messages > 0, "{args:?}: no message: {said}");
        let writes: Vec<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter_map(|l| Some(l.split_once("write(2, ")?.1.to_string()))
            .collect();
        assert_eq!(
            writes.len(),
            messages,
            "{args:?}: {messages} messages in {} writes: {writes:#?}",
            writes.len()
        );
        for w in &writes {
            assert!(
                w.starts_with("\"profconv: ") && w.contains("\\n\", "),
                "{args:?}: a write of part of a message: {w}"
            );
        }
    }
}

/// The plugins beside `profconv` are found where /proc is not mounted (a chroot made by hand, a
/// sandbox that mounts no /proc): `std::env::current_exe` reads `/proc/self/exe`, and without it
/// no plugin was found, `profconv formats` silently leaving out the places beside the
/// executable. The name profconv was started by (a path, or a name found in `PATH`) tells
/// them then. Run as root only (a mount namespace with an empty /proc); skipped elsewhere.
#[cfg(target_os = "linux")]
#[test]
fn plugins_beside_profconv_are_found_without_proc() {
    profconv(); // builds the plugins
    let out = with_profconv_env("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs none /proc && exec \"$0\" formats",
        ])
        .arg(env!("CARGO_BIN_EXE_profconv"))
        .stdin(Stdio::null())
        .output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        other => {
            eprintln!("skipped: no mount namespace with /proc hidden: {other:?}");
            return;
        }
    };
    let listed = text(&out.stdout);
    assert!(listed.contains("format folded"), "{listed}");
}

/// SIGBUS and SIGSEGV sent by another process (`kill -BUS`) end a conversion by the signal
/// with the temp file removed, as the other ending signals do. With a mapped input (a file of
/// 1 MiB or more) `kill -BUS` ended it and left the temp file; without one, both were dropped
/// by the Rust runtime's fault handler and the conversion went on.
#[cfg(unix)]
#[test]
fn a_fault_signal_sent_during_a_conversion_ends_it_and_removes_the_temp_file() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmp();
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    // A file (mapped) and stdin (read): the SIGBUS handler differs.
    for (signal, number, from_stdin) in [("BUS", 7, false), ("BUS", 7, true), ("SEGV", 11, false)] {
        let mut lines = 200_000;
        let mut caught = false;
        for _ in 0..4 {
            let input = write(d.path(), "big.folded", &many_stacks(lines));
            let target = out_dir.join("big.svg");
            profconv(); // builds the plugins
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "ulimit -c 0; exec \"$@\"", "sh"])
                .arg(env!("CARGO_BIN_EXE_profconv"))
                .env_remove("PROFCONV_PLUGIN_PATH")
                .env("XDG_DATA_HOME", "/nonexistent-profconv-test")
                .arg("convert");
            match from_stdin {
                true => cmd
                    .args(["-", "--from", "folded"])
                    .stdin(std::fs::File::open(&input).unwrap()),
                false => cmd.arg(&input).stdin(Stdio::null()),
            };
            let child = cmd
                .arg("-o")
                .arg(&target)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let (out, _) = signal_once_the_temp_file_exists(child, &out_dir, signal);
            if out.status.success() {
                // Finished before the signal (or, as it was, with the signal dropped): try a
                // bigger input.
                let _ = std::fs::remove_file(&target);
                lines *= 2;
                continue;
            }
            assert_eq!(
                out.status.signal(),
                Some(number),
                "SIG{signal} (stdin: {from_stdin}): {:?} {}",
                out.status,
                text(&out.stderr)
            );
            let left = temp_files(&out_dir);
            assert!(left.is_empty(), "SIG{signal} left temp files: {left:?}");
            assert!(!target.exists(), "SIG{signal} left an output");
            caught = true;
            break;
        }
        assert!(
            caught,
            "SIG{signal} (stdin: {from_stdin}): the conversion always succeeded (too quick, or \
             the signal was dropped)"
        );
    }
}

/// `diff - -` would read all of stdin as the first profile and an empty second one.
#[test]
fn diff_refuses_stdin_for_both_inputs() {
    for args in [
        &["diff", "-", "-", "--from", "folded"][..],
        &["diff", "-", "-"][..],
    ] {
        let mut child = spawn_piped(args);
        // stdin may be closed unread: ignore a broken pipe.
        let _ = child.stdin.take().unwrap().write_all(SEED_001.as_bytes());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains("`-` (stdin)") && err.contains("only one of the two inputs"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: wrote output");
    }
    // `-` and `/dev/stdin` on a pipe, and a FIFO named twice, are one stream under two
    // names: the first would take what the second reads (a diff of two halves, exit 0).
    let d = tmp();
    let mut child = spawn_piped(&["diff", "--from", "folded", "-", "/dev/stdin"]);
    let _ = child.stdin.take().unwrap().write_all(SEED_001.as_bytes());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("<stdin> and /dev/stdin are one pipe"),
        "{}",
        text(&out.stderr)
    );
    let fifo = d.path().join("stacks");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success(),
        "mkfifo"
    );
    let f = fifo.to_str().unwrap();
    // A writer, so that a reader that opens the FIFO does not wait for ever.
    let mut writer = Command::new("sh")
        .args(["-c", "printf 'main;a 3\\n' > \"$1\"", "sh", f])
        .spawn()
        .unwrap();
    let out = run(&["diff", "--from", "folded", f, f]);
    let _ = writer.kill();
    let _ = writer.wait();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("are one pipe"),
        "{}",
        text(&out.stderr)
    );
    // A device may be read twice: `/dev/null` twice is two empty profiles.
    let out = run(&[
        "diff",
        "--from",
        "folded",
        "/dev/null",
        "/dev/null",
        "--to",
        "folded",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // One regular file twice is two reads of the same bytes.
    let same = write(d.path(), "same.folded", b"main;a 3\n");
    let s = same.to_str().unwrap();
    let out = run(&["diff", s, s, "--to", "folded"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "main;a 3 3\n");
    // One of the two from stdin still works.
    let after = write(d.path(), "after.folded", b"main;b 5\n");
    let mut child = profconv()
        .args(["diff", "-", after.to_str().unwrap(), "--to", "folded"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"main;a 3\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    // inferno's differential folded format: `STACK BEFORE AFTER`.
    assert_eq!(text(&out.stdout), "main;a 3 0\nmain;b 0 5\n");
}

/// A plugin the user names (`--plugin FILE`, a file in `PROFCONV_PLUGIN_PATH`) that fails to
/// load stops the run (exit 5) with its path and the system's reason.
#[test]
fn a_named_plugin_that_fails_to_load_is_an_error() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let input = input.to_str().unwrap();
    let garbage = write(d.path(), "garbage.so", &[0x5a; 3000]);
    let empty = write(d.path(), "empty.so", b"");
    let missing = d.path().join("missing.so");
    let oldabi = lib_path("profconv_testplugin_oldabi");
    for (plugin, why) in [
        (&missing, "No such file or directory"),
        (&garbage, "invalid ELF header"),
        (&empty, "file too short"),
        (&oldabi, "plugin 'ancient' 0.3.1"),
    ] {
        let plugin = plugin.to_str().unwrap();
        for args in [
            vec!["--plugin", plugin, "tree", input],
            vec!["--plugin", plugin, "convert", input, "--to", "folded"],
        ] {
            let out = run(&args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(5), "{args:?}: {err}");
            assert!(
                err.starts_with("profconv: error: --plugin: ") && err.contains(why),
                "{args:?}: {err}"
            );
            // The path once: the system's own reason starts with it too.
            assert_eq!(err.matches(plugin).count(), 1, "{args:?}: {err}");
            assert!(out.stdout.is_empty());
        }
    }
    for entry in [garbage.clone(), missing.clone()] {
        let out = profconv()
            .args(["tree", input])
            .env("PROFCONV_PLUGIN_PATH", &entry)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{err}");
        assert!(
            err.contains(&format!(
                "PROFCONV_PLUGIN_PATH: cannot load {}: ",
                entry.display()
            )),
            "{err}"
        );
    }
    // `formats` still lists what was refused (that is its job), and exits 0.
    let out = run(&["--plugin", garbage.to_str().unwrap(), "formats"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.contains("rejected [--plugin]") && s.contains("invalid ELF header"),
        "{s}"
    );
}

/// A broken file found by scanning a directory is a warning (once), silenced by `-q`.
#[test]
fn a_scanned_plugin_that_fails_to_load_is_a_warning() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let plugins = d.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let bad = format!(
        "{}profconv_plugin_broken{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    write(&plugins, &bad, b"not a library");
    let out = run(&[
        "--plugin",
        plugins.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    // The system's reason (glibc: "file too short"), the path once.
    assert!(
        err.contains("plugin not loaded (--plugin): cannot load ")
            && err.matches(&bad).count() == 1
            && err.contains("file too short"),
        "{err}"
    );
    let out = run(&[
        "-q",
        "--plugin",
        plugins.to_str().unwrap(),
        "tree",
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

/// A plugin library cut short (an interrupted copy) in a plugin directory is refused with a
/// warning that names it, and the run goes on: the system loader maps the missing bytes and
/// faulted on them, so every command, `formats` too, ended with SIGBUS and no word.
#[cfg(target_os = "linux")]
#[test]
fn a_truncated_plugin_library_is_refused_not_a_crash() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let plugins = d.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let whole = std::fs::read(lib_path("profconv_plugin_folded")).unwrap();
    let name = format!(
        "{}profconv_plugin_cut{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    // The ELF headers and the start of the first segment, far short of the loaded segments.
    write(&plugins, &name, &whole[..16384]);
    let dir = plugins.to_str().unwrap();
    let out = run(&["--plugin", dir, "tree", input.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{:?} {err}", out.status);
    assert!(
        err.contains("plugin not loaded (--plugin): cannot load ")
            && err.matches(&name).count() == 1
            && err.contains("cut short (16384 bytes;"),
        "{err}"
    );
    let out = run(&["--no-default-plugins", "--plugin", dir, "formats"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", out.status);
    assert!(
        text(&out.stdout).contains("cut short"),
        "{}",
        text(&out.stdout)
    );
}

/// Corrupt or truncated gzip input is malformed input (exit 3) at a compressed byte offset,
/// and the message says the gzip data is at fault.
#[test]
fn corrupt_gzip_input_is_malformed_input_with_an_offset() {
    let d = tmp();
    let small = gzip(SEED_001.as_bytes());
    let mut junk = small.clone();
    junk.extend_from_slice(b"trailing garbage");
    let mut bad_crc = small.clone();
    let crc_at = bad_crc.len() - 8;
    bad_crc[crc_at] ^= 0xff;
    // Bigger than the 16 KiB read ahead for sniffing, so the error comes while parsing.
    let mut big = Vec::new();
    for i in 0..50_000 {
        writeln!(
            big,
            "main;f{};g{} {}",
            i % 100,
            i * 7919 % 100_003,
            1 + i % 3
        )
        .unwrap();
    }
    let big = gzip(&big);
    let cases: [(&str, Vec<u8>, Option<usize>, &str); 6] = [
        (
            "trunc.gz",
            small[..20].to_vec(),
            Some(20),
            "ends unexpectedly",
        ),
        (
            "notrailer.gz",
            small[..small.len() - 8].to_vec(),
            Some(small.len() - 8),
            "ends unexpectedly",
        ),
        ("magic.gz", vec![0x1f, 0x8b], Some(2), "ends unexpectedly"),
        (
            "junk.gz",
            junk,
            None,
            "unexpected data after the last gzip member",
        ),
        ("crc.gz", bad_crc, None, "checksum"),
        (
            "bigtrunc.gz",
            big[..big.len() * 3 / 5].to_vec(),
            Some(big.len() * 3 / 5),
            "ends unexpectedly",
        ),
    ];
    for (name, bytes, offset, why) in cases {
        let path = write(d.path(), name, &bytes);
        for args in [
            vec!["tree", path.to_str().unwrap()],
            vec!["tree", "-f", "folded", path.to_str().unwrap()],
            vec!["convert", path.to_str().unwrap(), "--to", "folded"],
        ] {
            let out = run(&args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
            assert!(
                err.contains("corrupt or truncated gzip data") && err.contains(why),
                "{args:?}: {err}"
            );
            let at = format!("{}: byte ", path.display());
            assert!(err.contains(&at), "{args:?}: no offset: {err}");
            if let Some(offset) = offset {
                assert!(
                    err.contains(&format!("{at}{offset}: ")),
                    "{args:?}: offset {offset} expected: {err}"
                );
            }
        }
    }
    // Failing to read the file is still an I/O error.
    let out = run(&["tree", d.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
}

/// An output name that is not UTF-8 is shown (lossily) and its extension still chooses the
/// format.
#[cfg(unix)]
#[test]
fn an_output_name_that_is_not_utf8_is_shown_and_matched() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let unknown = d.path().join(OsStr::from_bytes(b"o\xff.unknownext"));
    let out = profconv()
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(&unknown)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("'o\u{FFFD}.unknownext'"), "{err}");
    let folded = d.path().join(OsStr::from_bytes(b"o\xff.folded"));
    let out = profconv()
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(&folded)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&folded).unwrap(), SEED_001);
}

/// An output in a directory that does not exist: the message names the user's path and the
/// directory, not the internal temp file.
#[test]
fn an_output_in_a_missing_directory_names_the_output_not_the_temp_file() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let target = d.path().join("nodir").join("x.svg");
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(4));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{}: ", target.display())),
        "target not named: {err}"
    );
    assert!(
        err.contains(&d.path().join("nodir").display().to_string())
            && err.contains("No such file or directory"),
        "{err}"
    );
    assert!(!err.contains(".profconv-"), "temp file named: {err}");
    // A file where the directory should be.
    let file = write(d.path(), "file", b"");
    let out = run(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        file.join("x.svg").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(4));
    let err = text(&out.stderr);
    assert!(!err.contains(".profconv-"), "temp file named: {err}");
    assert!(err.contains("not a directory"), "{err}");
}

/// A parser that takes its whole input in memory (Deep.data) is refused by its first bytes when
/// its sniffer does not know them: the host does not read on to the end first. An endless pipe
/// (the test keeps stdin open) and a compressed bomb end at once with the parser's error.
#[test]
fn a_whole_input_parser_refuses_a_foreign_input_by_its_first_bytes() {
    let mut child = spawn_piped(&["tree", "--from", "deep", "-"]);
    let mut stdin = child.stdin.take().unwrap();
    // More than the 16 KiB head; the pipe stays open until the process has ended.
    stdin.write_all(&b"a;b 1\n".repeat(8 << 10)).unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "profconv waited for the end of an endless input"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains(
            "<stdin>: byte 0: expected the identifying line `Mercury deep profiler data version N`"
        ),
        "{err}"
    );
    // 256 MiB of zeros in 250 KB of gzip: refused without inflating it all.
    let d = tmp();
    let bomb = write(d.path(), "zeros.data.gz", &gzip(&vec![0u8; 256 << 20]));
    let out = run(&["tree", "--from", "deep", bomb.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(
            "zeros.data.gz: byte 0 of the decompressed data: expected the identifying line"
        ),
        "{err}"
    );
}

/// A parser's byte offset in a gzip input is one of the decompressed data, and the error says so:
/// the host's errors about the gzip data itself give the compressed offset in the same form, and
/// the decompressed one can lie past the end of the `.gz` file named. Lines need no such note.
#[test]
fn a_byte_offset_in_gzip_input_says_it_is_of_the_decompressed_data() {
    let d = tmp();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = std::fs::read(dir.join("../snapshots/fixtures/deep/recursion.data")).unwrap();
    // The callee of call-site-dynamic 1, at byte 97 (0x61), names a proc-dynamic that is not
    // there.
    let mut bad = data.clone();
    bad[0x61] = 0x7f;
    let want = "byte 97: the callee proc-dynamic id is 127, but there is no proc-dynamic 127";
    let plain = write(d.path(), "bad.data", &bad);
    let out = run(&["tree", plain.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("bad.data: {want}")), "{err}");
    let gz = write(d.path(), "bad.data.gz", &gzip(&bad));
    let want = "byte 97 of the decompressed data: the callee proc-dynamic id is 127";
    let out = run(&["tree", "--from", "deep", gz.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("bad.data.gz: {want}")), "{err}");
    let mut child = spawn_piped(&["tree", "--from", "deep", "-"]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&gzip(&bad)).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("<stdin>: {want}")), "{err}");
    // The gzip data cut short: the host's error, at the compressed offset, as before.
    let whole = gzip(&data);
    let cut = write(d.path(), "cut.data.gz", &whole[..whole.len() - 4]);
    let out = run(&["tree", "--from", "deep", cut.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "cut.data.gz: byte {}: corrupt or truncated gzip data",
            whole.len() - 4
        )) && !err.contains("decompressed"),
        "{err}"
    );
    // A line and column of a text format: as for a plain file.
    let folded = write(d.path(), "bad.folded.gz", &gzip(b"a;b 1\nc;d x\n"));
    let out = run(&["tree", folded.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("bad.folded.gz:2:5: expected a count"), "{err}");
}

/// A valid Deep.data head, then an end token and a run of zeros that decompresses far past the
/// bound for a stream read whole: refused, not held in memory; the same bytes as a plain file are
/// read (they are mapped).
#[test]
fn a_stream_read_whole_stops_at_its_bound() {
    let d = tmp();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut data = std::fs::read(dir.join("../snapshots/fixtures/deep/tiny_tree.data")).unwrap();
    data.push(0);
    data.extend(vec![0u8; 1 << 20]);
    let bomb = write(d.path(), "padded.data.gz", &gzip(&data));
    let out = profconv()
        .args(["tree", "--from", "deep", bomb.to_str().unwrap()])
        .env("PROFCONV_MAX_WHOLE_STREAM", "100000")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("padded.data.gz: format 'deep' reads its input whole")
            && err.contains("larger than 100000 bytes")
            && err.contains("PROFCONV_MAX_WHOLE_STREAM"),
        "{err}"
    );
    let plain = write(d.path(), "padded.data", &data);
    let out = profconv()
        .args(["tree", "--from", "deep", plain.to_str().unwrap()])
        .env("PROFCONV_MAX_WHOLE_STREAM", "100000")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("tiny.main/2"));
}

/// The bound's message names what was read whole: a named pipe (`<(cmd)`, `mkfifo`) is
/// neither stdin nor gzip, and the advice for it is a regular file.
#[cfg(unix)]
#[test]
fn a_named_pipe_past_the_whole_stream_bound_is_called_a_pipe() {
    let d = tmp();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut data = std::fs::read(dir.join("../snapshots/fixtures/deep/tiny_tree.data")).unwrap();
    data.push(0);
    data.extend(vec![0u8; 1 << 20]);
    let fifo = d.path().join("deep.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            // profconv stops reading at the bound: the rest meets a closed pipe.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .and_then(|mut f| f.write_all(&data));
        })
    };
    let out = profconv()
        .args(["tree", "--from", "deep", fifo.to_str().unwrap()])
        .env("PROFCONV_MAX_WHOLE_STREAM", "100000")
        .output()
        .unwrap();
    writer.join().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("deep.fifo: format 'deep' reads its input whole, and this pipe")
            && err.contains("give a regular file instead")
            && !err.contains("stdin"),
        "{err}"
    );
}

/// `--plugin libx.so` and `plugin-check libx.so` mean the file in the current directory (the
/// system loader would search its library path for a bare name).
#[test]
fn a_plugin_named_by_a_bare_file_name_is_the_file_in_the_current_directory() {
    let d = tmp();
    let lib = lib_path("profconv_plugin_folded");
    let name = lib.file_name().unwrap().to_str().unwrap().to_string();
    std::fs::copy(&lib, d.path().join(&name)).unwrap();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let out = profconv()
        .current_dir(d.path())
        .args(["--no-default-plugins", "--plugin", &name, "tree"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), support::SEED_001_TREE);
    let out = profconv()
        .current_dir(d.path())
        .args(["plugin-check", &name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
}

/// Any `--threads` the option takes works: plugins use at most the machine's cores (a huge
/// number crashed the parallel folded reader, which sized its queue by it).
#[test]
fn a_huge_thread_count_is_the_machine_s_cores() {
    let d = tmp();
    // Over the parallel reader's 8 MiB piece, so that it runs.
    let mut text_in = String::new();
    for i in 0..600_000 {
        text_in.push_str(&format!(
            "main;work{};leaf{} {}\n",
            i % 97,
            i % 13,
            i % 7 + 1
        ));
    }
    let input = write(d.path(), "big.folded", text_in.as_bytes());
    let input = input.to_str().unwrap();
    let one = run(&["-j", "1", "tree", input]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    let huge = run(&["-j", "4294967295", "tree", input]);
    assert!(huge.status.success(), "{}", text(&huge.stderr));
    assert_eq!(one.stdout, huge.stdout);
}

/// Replacing an existing output keeps its permissions (a private 0600 profile stays private),
/// as `> out` does; the temp file and rename do not reset them.
#[cfg(unix)]
#[test]
fn a_replaced_output_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp();
    let input = write(d.path(), "in.folded", b"a;b 1\n");
    for mode in [0o600, 0o640, 0o755] {
        let out = write(d.path(), "out.folded", b"old\n");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(mode)).unwrap();
        let r = run(&[
            "convert",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{}", text(&r.stderr));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "a;b 1\n");
        let now = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(now, mode, "mode {mode:o}");
    }
}

/// The output is opened before the input is read: a directory that does not exist is the
/// error (exit 4), even when the input would fail too, so a long parse is not wasted.
#[test]
fn the_output_is_checked_before_the_input_is_read() {
    let d = tmp();
    let out = d.path().join("no-such-dir").join("x.svg");
    let r = run(&[
        "convert",
        d.path().join("missing.folded").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(4));
    let err = text(&r.stderr);
    assert!(
        err.contains("x.svg") && err.contains("no-such-dir"),
        "{err}"
    );
    assert!(!err.contains("missing.folded"), "{err}");
}

/// Option values are checked by their formats (ABI 1.5) before the input is read: here stdin
/// is a pipe that stays open after its first lines, so profconv would wait for the rest of it if
/// it parsed before finding `width=0` (or `piece-size=0`, the reader's) wrong. The writer's
/// options are checked before the input is opened (one short line is all there is); the
/// reader's too when `--from` names it, and otherwise once the input's 16 KiB head has come, as
/// the reader is known only from it.
#[test]
fn option_values_are_checked_before_the_input_is_read() {
    use std::io::Write as _;
    use std::time::{Duration, Instant};
    for (args, want, lines) in [
        (
            &[
                "convert",
                "-",
                "--from",
                "folded",
                "-o",
                "-",
                "--to",
                "flamegraph",
                "-O",
                "width=0",
            ][..],
            "option width=0: expected a width in pixels from 30 to 1000000",
            1,
        ),
        (
            &[
                "convert",
                "-",
                "--from",
                "folded",
                "-o",
                "-",
                "--to",
                "folded",
                "-O",
                "max-size=-1",
            ][..],
            "option max-size=-1: expected",
            1,
        ),
        (
            &[
                "convert",
                "-",
                "--from",
                "folded",
                "-o",
                "-",
                "--to",
                "folded",
                "-O",
                "piece-size=0",
            ][..],
            "<stdin>: option piece-size=0: expected a number of bytes from 1 to",
            1,
        ),
        (
            &["tree", "-", "--from", "folded", "-O", "piece-size=0"][..],
            "<stdin>: option piece-size=0: expected a number of bytes from 1 to",
            1,
        ),
        (
            &[
                "diff",
                "-",
                "/dev/null",
                "--from",
                "folded",
                "-O",
                "piece-size=0",
                "-o",
                "-",
                "--to",
                "folded",
            ][..],
            "<stdin>: option piece-size=0: expected a number of bytes from 1 to",
            1,
        ),
        // Without --from the reader is known from the head.
        (
            &[
                "convert",
                "-",
                "-o",
                "-",
                "--to",
                "folded",
                "-O",
                "piece-size=0",
            ][..],
            "<stdin>: option piece-size=0: expected a number of bytes from 1 to",
            2000,
        ),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_profconv"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A few lines, then the pipe stays open: the end of the input never comes.
        let mut stdin = child.stdin.take().unwrap();
        // A run that refuses before reading may have ended before this write (its start-up
        // is quicker than a busy machine gives this thread back): a broken pipe is no failure.
        let _ = stdin.write_all(&b"main;work 1\n".repeat(lines));
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if status.is_none() {
            child.kill().unwrap();
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert!(
            status.is_some(),
            "{args:?}: still reading stdin after 30 s: {err}"
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Whether the tests run as root (who may write anything and has no process limit).
#[cfg(target_os = "linux")]
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// `profconv ARGS` behind `wrapper` (such as `prlimit --nproc=1`), run as `nobody` through
/// `setpriv` when the tests run as root; an error when that cannot be started.
#[cfg(target_os = "linux")]
fn unprivileged(wrapper: &[&str], args: &[&str]) -> std::io::Result<std::process::Output> {
    let mut argv: Vec<&str> = Vec::new();
    if running_as_root() {
        argv.extend([
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
        ]);
    }
    argv.extend(wrapper);
    argv.push(env!("CARGO_BIN_EXE_profconv"));
    argv.extend(args);
    Command::new(argv[0])
        .args(&argv[1..])
        .env("XDG_DATA_HOME", "/nonexistent-profconv-test")
        .env_remove("PROFCONV_PLUGIN_PATH")
        .output()
}

/// An output this user may not write is not replaced behind its permissions' back (the rename
/// would have done it), and one in a sticky directory owned by someone else is refused before
/// the input is read, not by a failed rename at the end. Run as `nobody` through `setpriv`
/// when the tests run as root (root may write anything).
#[cfg(target_os = "linux")]
#[test]
fn an_output_the_user_may_not_write_is_not_replaced() {
    use std::os::unix::fs::PermissionsExt;
    if !unprivileged(&[], &["--version"]).is_ok_and(|o| o.status.success()) {
        eprintln!(
            "skipped: cannot run profconv as nobody (no setpriv, or a checkout only root may enter)"
        );
        return;
    }
    let d = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let input = write(d.path(), "in.folded", b"a;b 1\n");
    std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = |out: &std::path::Path| {
        let args = [
            "convert",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        unprivileged(&[], &args).unwrap()
    };
    // Read-only for everyone: not replaced.
    let ro = write(d.path(), "ro.folded", b"old\n");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let r = run(&ro);
    assert_eq!(r.status.code(), Some(4), "{}", text(&r.stderr));
    assert!(
        text(&r.stderr).contains("not writable"),
        "{}",
        text(&r.stderr)
    );
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "old\n");
    // Writable, in a directory the user may not write: refused before the input is read, with
    // the way to overwrite it in place.
    let closed = d.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    let kept = write(&closed, "kept.folded", b"old\n");
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    if running_as_root() {
        let r = run(&kept);
        assert_eq!(r.status.code(), Some(4), "{}", text(&r.stderr));
        let said = text(&r.stderr);
        assert!(said.contains("cannot create a file in"), "{said}");
        assert!(said.contains("-o - > FILE"), "{said}");
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old\n");
    }
    if running_as_root() {
        // The hint's command works as given: `-o -` names no format (`-o - > out.svg` failed
        // with "writing to stdout needs --to FMT", the shell having emptied the file) and
        // compresses nothing (a `.gz` name's output would have been written plain).
        for (name, hint) in [
            ("kept.svg", "use `--to flamegraph -o - > FILE`"),
            ("kept.folded.gz", "use `--to folded -o - | gzip > FILE`"),
        ] {
            let target = closed.join(name);
            std::fs::write(&target, b"old\n").unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o666)).unwrap();
            let r = run(&target);
            assert_eq!(r.status.code(), Some(4), "{}", text(&r.stderr));
            assert!(text(&r.stderr).contains(hint), "{}", text(&r.stderr));
        }
    }
    if running_as_root() {
        // Writable by all but root's, in a sticky directory root owns: the rename would fail.
        let other = write(d.path(), "other.folded", b"old\n");
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o666)).unwrap();
        let r = run(&other);
        assert_eq!(r.status.code(), Some(4), "{}", text(&r.stderr));
        assert!(text(&r.stderr).contains("sticky"), "{}", text(&r.stderr));
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "old\n");
        // A write-only drop box of this user's, append-only: the attribute is found without
        // reading the directory (opening it to ask failed, and a temp file nobody could remove
        // was left).
        let drop_box = d.path().join("drop");
        std::fs::create_dir(&drop_box).unwrap();
        std::os::unix::fs::chown(&drop_box, Some(65534), None).unwrap();
        std::fs::set_permissions(&drop_box, std::fs::Permissions::from_mode(0o300)).unwrap();
        let appended = Command::new("chattr").arg("+a").arg(&drop_box).status();
        if appended.is_ok_and(|s| s.success()) {
            let r = run(&drop_box.join("y.svg"));
            let left = temp_files(&drop_box);
            let _ = Command::new("chattr").arg("-a").arg(&drop_box).status();
            assert_eq!(r.status.code(), Some(4), "{}", text(&r.stderr));
            assert!(
                text(&r.stderr).contains("the directory is append-only"),
                "{}",
                text(&r.stderr)
            );
            assert!(left.is_empty(), "{left:?}");
        }
    }
    assert!(temp_files(d.path()).is_empty());
}

/// Where the system gives no more threads (a process limit, as a container's pids.max), the
/// folded reader reads on the calling thread, with the same output, instead of failing as a
/// plugin panic (exit 5). Run as `nobody` under `prlimit --nproc=1` (root has no such limit).
#[cfg(target_os = "linux")]
#[test]
fn no_threads_to_be_had_reads_on_one() {
    use std::os::unix::fs::PermissionsExt;
    let limited = |args: &[&str]| unprivileged(&["prlimit", "--nproc=1"], args);
    if !limited(&["--version"]).is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: cannot run profconv under prlimit (as nobody when root)");
        return;
    }
    let d = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Several pieces of distinct names (the parallel reader's path).
    let lines: String = (0..200_000)
        .map(|i| format!("main;f{};g{} {}\n", i % 977, i % 13, 1 + i % 5))
        .collect();
    let input = write(d.path(), "in.folded", lines.as_bytes());
    std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o644)).unwrap();
    let args = [
        "-j",
        "4",
        "convert",
        input.to_str().unwrap(),
        "-O",
        "piece-size=65536",
        "-t",
        "folded",
        "-o",
        "-",
    ];
    let out = limited(&args[..]).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let one = run(&[
        "-j",
        "1",
        "convert",
        input.to_str().unwrap(),
        "-t",
        "folded",
        "-o",
        "-",
    ]);
    assert!(one.status.success());
    assert_eq!(out.stdout, one.stdout);
}

/// A parse error in a format chosen by content alone says so and how to choose another: a
/// folded file whose first lines look like the PVM debugger's output (`kernel_run;…`) failed
/// at a decimal count with no hint that it had been read as a PVM profile.
#[test]
fn a_parse_error_after_detection_by_content_says_how_the_format_was_chosen() {
    let d = tmp();
    let mut text_in = String::new();
    for i in 1..=1000 {
        text_in.push_str(&format!("kernel_run;f{i} {i}\n"));
    }
    text_in.push_str("main;bar 2.5\n");
    let path = write(d.path(), "profile", text_in.as_bytes());
    let out = run(&["tree", path.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(":1001:10: expected `<stack> <ticks>`"),
        "{err}"
    );
    assert!(
        err.contains("(read as 'pvm', the format its first 16 KiB looked like; if it is in another format, choose that with --from)"),
        "{err}"
    );
    let out = run(&["tree", "--from", "folded", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Named as the format it is, the error needs no such note.
    let named = write(d.path(), "bad.folded", b"a;b x\n");
    let err = text(&run(&["tree", named.to_str().unwrap()]).stderr);
    assert!(
        err.contains("1:5: expected a count") && !err.contains("read as"),
        "{err}"
    );
}

/// An input named as a file profconv only writes (`a.svg`, `a.json.gz`) is named as such: the
/// message used to send the user to `--from`, which cannot make an SVG readable.
#[test]
fn an_input_named_as_a_written_format_is_named_as_such() {
    let d = tmp();
    for (name, id) in [("a.svg", "flamegraph"), ("a.json.gz", "firefox")] {
        let out_path = d.path().join(name);
        let r = run(&[
            "convert",
            "-",
            "--from",
            "folded",
            "-o",
            out_path.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{}", text(&r.stderr));
        let r = run(&["tree", out_path.to_str().unwrap()]);
        let err = text(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "'{name}' is named as a {id} file, a format profconv writes but cannot read"
            )),
            "{err}"
        );
    }
}

/// valgrind names its profiles `callgrind.out.PID`, and a picture of one is naturally
/// `callgrind.out.PID.svg`: a name's own extension outranks the `callgrind.out*` prefix. Before,
/// the prefix (13 characters) was the longest match: `-o callgrind.out.7.svg` wrote callgrind
/// text into the `.svg` file with exit 0, and `callgrind.out.7.folded` was read as callgrind.
#[test]
fn a_name_after_a_callgrind_out_prefix_keeps_its_own_extension() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let i = input.to_str().unwrap();
    let written = |name: &str| {
        let path = d.path().join(name);
        let out = run(&["convert", i, "-o", path.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        std::fs::read(&path).unwrap()
    };
    assert!(written("callgrind.out.7.svg").starts_with(b"<?xml"));
    assert_eq!(written("callgrind.out.7.folded"), SEED_001.as_bytes());
    // With no extension of its own, the prefix still names the format.
    assert!(written("callgrind.out.7").starts_with(b"# callgrind format"));
    assert!(written("callgrind.out.7.2").starts_with(b"# callgrind format"));
    // Read: a folded file named after the profile it came from.
    let one_line = write(d.path(), "callgrind.out.7.folded.in", b"main 5\n");
    let named = d.path().join("callgrind.out.8.folded");
    std::fs::rename(&one_line, &named).unwrap();
    let out = run(&["tree", named.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "main self=5 total=5\n");
    // Read back, the picture is named as the flame graph it is (a callgrind parse error before).
    let svg = d.path().join("callgrind.out.7.svg");
    let out = run(&["tree", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is named as a flamegraph file"),
        "{}",
        text(&out.stderr)
    );
}

/// `diff A B -o -` writes the flame graph to stdout, as `diff A B` does: `-` is stdout, and the
/// flame graph is diff's format there. It was "writing to stdout needs --to FMT".
#[test]
fn diff_to_a_dash_writes_the_flame_graph_to_stdout() {
    let d = tmp();
    let a = write(d.path(), "a.folded", b"x;y 2\nx 1\n");
    let b = write(d.path(), "b.folded", b"x;y 3\nx 1\n");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let dash = run(&["diff", a, b, "-o", "-"]);
    assert!(dash.status.success(), "{}", text(&dash.stderr));
    let none = run(&["diff", a, b]);
    assert!(none.status.success());
    assert!(dash.stdout.starts_with(b"<?xml"));
    assert_eq!(dash.stdout, none.stdout);
}

/// A format that writes compressed bytes (Firefox's `.json.gz`) is not written to a terminal,
/// as gzip refuses: the bytes are unreadable there and may hold escape sequences. Redirected,
/// it is written as before.
#[cfg(target_os = "linux")]
#[test]
fn compressed_output_is_not_written_to_a_terminal() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let exe = env!("CARGO_BIN_EXE_profconv");
    // Stdout, and stdout or the terminal named as a file.
    let command = format!(
        "for o in - /dev/stdout /dev/tty; do '{exe}' convert seed.folded --to firefox -o $o; \
         echo \"exit=$?\"; done"
    );
    let Some(out) = on_terminal(d.path(), &command) else {
        return;
    };
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        screen
            .matches("writes compressed bytes, which are not written to a terminal")
            .count(),
        3,
        "{screen:?}"
    );
    assert_eq!(screen.matches("exit=2").count(), 3, "{screen:?}");
    assert!(
        !screen.contains('\u{fffd}'),
        "gzip bytes reached the terminal: {screen:?}"
    );
    let piped = run(&["convert", input.to_str().unwrap(), "--to", "firefox"]);
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert!(piped.stdout.starts_with(&[0x1f, 0x8b]));
}

/// `PROFCONV_MAX_WHOLE_STREAM` is checked on every run that reads, not only when a stream is
/// read whole: a bad value was refused for a small Deep.data file and ignored for a large one
/// or a folded file. A number too large says so (it said "digits only").
#[test]
fn a_bad_max_whole_stream_is_refused_on_every_run() {
    let d = tmp();
    let input = write(d.path(), "seed.folded", SEED_001.as_bytes());
    let with = |value: &str| {
        profconv()
            .args(["tree", input.to_str().unwrap()])
            .env("PROFCONV_MAX_WHOLE_STREAM", value)
            .output()
            .unwrap()
    };
    for (value, want) in [
        (
            "abc",
            "PROFCONV_MAX_WHOLE_STREAM=\"abc\": expected a number of bytes (digits only)",
        ),
        (
            "99999999999999999999999",
            "PROFCONV_MAX_WHOLE_STREAM=\"99999999999999999999999\": too large, at most 18446744073709551615 bytes",
        ),
    ] {
        let out = with(value);
        assert_eq!(out.status.code(), Some(2), "{value}");
        assert!(
            text(&out.stderr).contains(want),
            "{value}: {}",
            text(&out.stderr)
        );
    }
    let out = with(" 4096 ");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), support::SEED_001_TREE);
}

/// Waits until `child` has made its temp file in `out_dir` (or has ended), then sends it
/// `signal` (`kill -s`); its output, and whether the signal was sent.
fn signal_once_the_temp_file_exists(
    mut child: std::process::Child,
    out_dir: &std::path::Path,
    signal: &str,
) -> (std::process::Output, bool) {
    let start = Instant::now();
    let mut seen = false;
    while start.elapsed() < Duration::from_secs(120) {
        if !temp_files(out_dir).is_empty() {
            seen = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if seen {
        let killed = Command::new("kill")
            .args(["-s", signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success(), "kill -s {signal}");
    }
    (child.wait_with_output().unwrap(), seen)
}
