//! Running the real `profconv` binary from the CLI's integration tests (not shared with other
//! packages: `CARGO_BIN_EXE_profconv` exists only in this one's tests).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// `profconv` with the plugins beside it, and neither `PROFCONV_PLUGIN_PATH` nor a user's own
/// plugin directory in the way; stdin is empty unless the test sets it.
pub fn profconv() -> Command {
    crate::support::built_plugins();
    let mut c = Command::new(env!("CARGO_BIN_EXE_profconv"));
    c.env_remove("PROFCONV_PLUGIN_PATH");
    c.env("XDG_DATA_HOME", "/nonexistent-profconv-test");
    c.stdin(Stdio::null());
    c
}

/// `program` (a shell, `script`, `strace`) with the environment [`profconv`] gives, to run
/// `profconv` under it. The terminal that `script` makes is an xterm's, whatever terminal the
/// tests were started from, or none: with no `TERM` (a service, a cron job) or `TERM=dumb`
/// (Emacs, some CI runners) indicatif draws no progress bar, and the tests of the bar failed.
pub fn with_profconv_env(program: &str) -> Command {
    let mut c = profconv()
        .get_envs()
        .fold(Command::new(program), |mut c, (k, v)| {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
            c
        });
    c.env("TERM", "xterm");
    c
}

/// What the shell command `command` (run in `dir`) puts on a terminal that `script` gives it
/// for stdin, stdout and stderr, or `None` (the test is skipped, and says so) without `script`.
pub fn on_terminal(dir: &Path, command: &str) -> Option<Output> {
    match with_profconv_env("script")
        .args(["-qec", command, "/dev/null"])
        .current_dir(dir)
        .output()
    {
        Ok(out) => Some(out),
        Err(e) => {
            eprintln!("skipped: no `script` to give profconv a terminal ({e})");
            None
        }
    }
}

/// `profconv ARGS` started with stdin, stdout and stderr all pipes.
pub fn spawn_piped(args: &[&str]) -> Child {
    profconv()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start profconv")
}

pub fn run(args: &[&str]) -> Output {
    profconv().args(args).output().expect("run profconv")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// `n` folded lines of 1 000 stacks' callers and `n` distinct leaves (`main;f7;g7 2`): an input
/// that takes long enough to convert for a test to act during the conversion.
pub fn many_stacks(n: usize) -> Vec<u8> {
    use std::io::Write;
    let mut big = Vec::new();
    for i in 0..n {
        writeln!(big, "main;f{};g{} {}", i % 1000, i, 1 + i % 3).unwrap();
    }
    big
}

/// Waits for `child` to end, at most `limit`: past it the child is killed and the test fails
/// with `why` (a run that should end at once, not wait for its input or read it all).
pub fn wait_within(child: &mut Child, limit: std::time::Duration, why: &str) {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{why} (still running after {limit:?})");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The `.profconv-*.tmp` files in `dir` (the temp files of outputs not yet renamed).
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".profconv-"))
        .map(|e| e.path())
        .collect()
}
