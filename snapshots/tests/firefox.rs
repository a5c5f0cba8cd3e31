//! The `firefox` (Firefox Profiler processed profile, v55, gzip) and `speedscope` emitters.
//!
//! * Snapshots of the uncompressed, pretty-printed JSON of both emitters for seed 001's three
//!   samples (`fixtures/firefox/seed-001.folded`, read with the folded parser) and for seed 000's
//!   worked example built with `TraceBuilder` (f 0..160, g 10..100, h 30..60; ticks and exact
//!   calls; ordered, so the Firefox output is a timeline and the speedscope output is evented).
//! * The same example read by the PVM parser from `fixtures/firefox/seed-example.pvmtrace`.
//! * Structure: every required column present, columns as long as their table, indices in
//!   range, prefixes before children, version 55, gzip magic (and `gzip -t` when gzip is
//!   installed), checked by `profconv_firefox::check`, which reads the JSON back untyped.
//! * Every fixture of every input format present under `fixtures/` (folded; deep, pvm and
//!   callgrind, whichever are there) converts without error, and the call tree the viewers
//!   rebuild from the output equals profconv's own call tree.
//!
//! Snapshot files: `tests/snapshots/firefox__*.snap`.

use profconv_firefox::check::{
    TreeNode, Value, check_firefox, check_speedscope, gunzip, parse_json, tree_text,
};
use profconv_firefox::{
    Firefox, FirefoxOptions, Speedscope, SpeedscopeOptions, firefox_json_pretty,
    speedscope_json_pretty,
};
use profconv_ir::{
    CallTree, NONE, Profile, ProfileBuilder, ProfileRef, TraceBuilder, ValueKind, flags,
};
use profconv_plugin::{Context, Format, Input, Options, Output};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn settings(input: Option<&Path>, description: &str) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s.set_description(description);
    if let Some(p) = input {
        s.set_input_file(p);
    }
    s
}

fn seed_001() -> Profile {
    let bytes = std::fs::read(fixtures_dir().join("firefox/seed-001.folded")).expect("fixture");
    profconv_folded::parse_folded(
        &mut Input::from_slice(&bytes),
        false,
        &mut Context::silent(),
    )
    .expect("parse seed 001")
}

/// Seed 000's worked example, as a PVM trace reader would build it.
fn pvm_seed() -> Profile {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    let mut frame = |name: &str| {
        let f = b.func(name);
        b.frame(f)
    };
    let (f, g, h) = (frame("f"), frame("g"), frame("h"));
    for (enter, frame, tick) in [
        (true, f, 0),
        (true, g, 10),
        (true, h, 30),
        (false, h, 60),
        (false, g, 100),
        (false, f, 160),
    ] {
        if enter {
            t.enter(&mut b, frame, &[tick]).unwrap();
        } else {
            assert_eq!(t.exit(&mut b, &[tick]).unwrap(), Some(frame));
        }
    }
    b.set_flags(flags::ORDERED);
    b.add_meta("source_format", "pvm");
    b.add_meta("time_unit", "ticks");
    b.finish()
}

/// Emits through the `Format` trait, as the host does.
fn emit<F: Format>(p: &Profile) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        F::emit(
            &p.view(),
            &mut out,
            &Options::default(),
            &mut Context::silent(),
        )
        .unwrap_or_else(|e| panic!("{} emit: {e}", F::ID));
        out.flush().unwrap();
    }
    buf
}

/// Checks the gzip stream: magic, fixed header (no mtime), `gzip -t` if gzip is installed;
/// returns the JSON.
fn check_gzip(gz: &[u8], what: &str) -> Vec<u8> {
    assert_eq!(&gz[..3], &[0x1f, 0x8b, 0x08], "{what}: gzip magic");
    assert_eq!(&gz[4..8], &[0, 0, 0, 0], "{what}: mtime must be 0");
    if let Ok(mut child) = Command::new("gzip")
        .arg("-t")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(gz)
            .expect("pipe to gzip -t");
        let out = child.wait_with_output().expect("gzip -t");
        assert!(
            out.status.success(),
            "{what}: gzip -t failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    gunzip(gz).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Power of ten from a unit to the Firefox weight (durations are written in ms).
fn firefox_exp10(unit: &str) -> i32 {
    match unit {
        "ns" | "nanoseconds" => -6,
        "us" | "microseconds" => -3,
        "s" | "seconds" => 3,
        _ => 0,
    }
}

/// The column the Firefox and speedscope emitters weigh samples by: the first weight, else the
/// first column; `after` of a differential profile.
fn weight_column(v: &ProfileRef<'_>) -> Option<usize> {
    profconv_plugin::one_value_column(v, None, &mut Context::silent()).expect("no name to miss")
}

/// profconv's call tree in the checker's shape: nodes reached by some sample (or, with
/// `positive`, with a positive total), values of the default weight times 10^exp10.
fn ir_tree(p: &Profile, exp10: i32, positive: bool) -> Vec<TreeNode> {
    let v = p.view();
    let tree = CallTree::build(&v).expect("call tree");
    let col = weight_column(&v);
    let scale = |x: i64| {
        let d = col.map_or(0, |c| v.value_types[c].decimals) as i32;
        x as f64 * 10f64.powi(exp10 - d)
    };
    let n = tree.len();
    let mut reached: Vec<bool> = tree.sample_count.iter().map(|&c| c > 0).collect();
    for i in (0..n).rev() {
        if reached[i] && tree.parent[i] != NONE {
            reached[tree.parent[i] as usize] = true;
        }
    }
    let c = col.expect("fixtures have a value column");
    let mut out = Vec::new();
    for (i, &r) in reached.iter().enumerate() {
        let (s, t) = (tree.self_values[c][i], tree.total_values[c][i]);
        if !r || (positive && t <= 0) {
            continue;
        }
        let path = tree
            .path(i as u32)
            .iter()
            .map(|&f| v.func_name_str(f).to_string())
            .collect();
        out.push(TreeNode {
            path,
            self_value: scale(s),
            total: scale(t),
        });
    }
    out
}

fn assert_same_tree(mut got: Vec<TreeNode>, mut want: Vec<TreeNode>, what: &str) {
    let key = |a: &TreeNode, b: &TreeNode| {
        a.path
            .cmp(&b.path)
            .then(a.total.total_cmp(&b.total))
            .then(a.self_value.total_cmp(&b.self_value))
    };
    got.sort_by(key);
    want.sort_by(key);
    assert_eq!(got.len(), want.len(), "{what}: number of call nodes");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    for (g, w) in got.iter().zip(&want) {
        assert!(
            g.path == w.path && close(g.self_value, w.self_value) && close(g.total, w.total),
            "{what}: viewer tree node {g:?} differs from profconv's {w:?}"
        );
    }
}

/// Converts `p` with both emitters, checks both files and compares their trees with profconv's.
/// Returns (uncompressed Firefox JSON, speedscope JSON).
fn convert_and_check(p: &Profile, what: &str) -> (Vec<u8>, Vec<u8>) {
    p.view().validate().expect("valid profile");
    let gz = emit::<Firefox>(p);
    let json = check_gzip(&gz, what);
    let fx =
        check_firefox(&json).unwrap_or_else(|e| panic!("{what}: invalid Firefox profile: {e}"));
    assert_eq!(fx.version, 55);
    let v = p.view();
    let exp10 = weight_column(&v).map_or(0, |c| firefox_exp10(v.value_type_unit(c)));
    assert_same_tree(
        fx.tree,
        ir_tree(p, exp10, false),
        &format!("{what} (firefox)"),
    );
    assert_eq!(
        fx.threads.len(),
        v.n_threads().max(1),
        "{what}: one thread per IR thread"
    );
    let sp = emit::<Speedscope>(p);
    let s =
        check_speedscope(&sp).unwrap_or_else(|e| panic!("{what}: invalid speedscope file: {e}"));
    assert_eq!(
        s.profiles.len(),
        v.n_threads().max(1),
        "{what}: one profile per thread"
    );
    let negative = weight_column(&v).is_some_and(|c| v.sample_values[c].iter().any(|&x| x < 0));
    // Evented profiles (ordered, exact calls) open every call, however short; sampled ones
    // leave out samples that weigh nothing.
    let evented = v.is_ordered()
        && v.value_type_index("calls")
            .is_some_and(|c| v.value_types[c].kind == ValueKind::Count);
    assert_eq!(
        s.profiles.iter().all(|p| p.1 == "evented"),
        evented,
        "{what}: evented exactly for ordered traces with exact calls"
    );
    if !negative {
        assert_same_tree(
            s.tree,
            ir_tree(p, 0, !evented),
            &format!("{what} (speedscope)"),
        );
    }
    // Deterministic.
    assert!(
        emit::<Firefox>(p) == gz,
        "{what}: firefox output differs between runs"
    );
    assert!(
        emit::<Speedscope>(p) == sp,
        "{what}: speedscope output differs between runs"
    );
    (json, sp)
}

#[test]
fn seed_001_snapshots() {
    let p = seed_001();
    let (json, sp) = convert_and_check(&p, "seed 001");
    let s = check_firefox(&json).unwrap();
    assert_eq!(
        tree_text(&s.tree),
        "A self=0 total=3\n  B self=0 total=3\n    C self=0 total=2\n      D self=0 total=1\n        E self=1 total=1\n      F self=0 total=1\n        G self=1 total=1\n    H self=0 total=1\n      F self=1 total=1\n"
    );
    let pretty =
        firefox_json_pretty(&p.view(), FirefoxOptions::default(), &mut Context::silent()).unwrap();
    // The pretty form is the same document as the compact one.
    assert_eq!(
        serde_json_value(pretty.as_bytes()),
        serde_json_value(&json),
        "pretty and compact Firefox JSON differ"
    );
    let path = fixtures_dir().join("firefox/seed-001.folded");
    settings(
        Some(&path),
        "seed 001 (A;B;C;D;E 1, A;B;C;F;G 1, A;B;H;F 1) as a Firefox Profiler processed profile (v55), ungzipped and pretty-printed",
    )
    .bind(|| insta::assert_snapshot!("firefox__seed_001_firefox", pretty));
    let pretty = speedscope_json_pretty(
        &p.view(),
        SpeedscopeOptions::default(),
        &mut Context::silent(),
    )
    .unwrap();
    assert_eq!(serde_json_value(pretty.as_bytes()), serde_json_value(&sp));
    settings(Some(&path), "seed 001 as a speedscope file (sampled)")
        .bind(|| insta::assert_snapshot!("firefox__seed_001_speedscope", pretty));
}

#[test]
fn pvm_seed_snapshots() {
    let p = pvm_seed();
    let (json, sp) = convert_and_check(&p, "pvm seed");
    let s = check_firefox(&json).unwrap();
    assert_eq!(
        tree_text(&s.tree),
        "f self=70 total=160\n  g self=60 total=90\n    h self=30 total=30\n"
    );
    let s = check_speedscope(&sp).unwrap();
    assert_eq!(s.profiles[0].1, "evented");
    let pretty =
        firefox_json_pretty(&p.view(), FirefoxOptions::default(), &mut Context::silent()).unwrap();
    settings(
        None,
        "seed 000's example (f 0..160, g 10..100, h 30..60; ticks, exact calls, ordered) as a Firefox Profiler processed profile: samples in time order, a null-stack sample at the end",
    )
    .bind(|| insta::assert_snapshot!("firefox__pvm_seed_firefox", pretty));
    let pretty = speedscope_json_pretty(
        &p.view(),
        SpeedscopeOptions::default(),
        &mut Context::silent(),
    )
    .unwrap();
    settings(
        None,
        "seed 000's example as a speedscope file (evented: open/close events)",
    )
    .bind(|| insta::assert_snapshot!("firefox__pvm_seed_speedscope", pretty));
}

/// The same example read by the PVM parser gives the same timeline and tree.
#[test]
fn pvm_seed_from_the_pvm_parser() {
    let bytes =
        std::fs::read(fixtures_dir().join("firefox/seed-example.pvmtrace")).expect("fixture");
    let p = <profconv_pvm::Pvm as Format>::parse(
        &mut Input::from_slice(&bytes),
        &Options::default(),
        &mut Context::silent(),
    )
    .expect("the PVM parser reads seed-example.pvmtrace");
    let (json, sp) = convert_and_check(&p, "seed-example.pvmtrace");
    let v = serde_json_value(&json);
    let samples = &v["threads"][0]["samples"];
    assert_eq!(
        samples["time"],
        serde_json_value(b"[0, 10, 30, 60, 100, 160]"),
        "ticks are the time axis (1 tick = 1 ms)"
    );
    assert_eq!(
        samples["weight"],
        serde_json_value(b"[10, 20, 30, 40, 60, 0]")
    );
    assert!(
        samples["stack"][5].is_null(),
        "the end of the last interval"
    );
    let s = check_speedscope(&sp).unwrap();
    assert_eq!(s.profiles[0].1, "evented");
    assert_eq!(
        tree_text(&s.tree),
        "f self=70 total=160\n  g self=60 total=90\n    h self=30 total=30\n"
    );
}

fn serde_json_value(bytes: &[u8]) -> Value {
    parse_json(bytes).expect("JSON")
}

/// Every file under `dir` (recursively), sorted, except documentation and licences.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let doc = name.ends_with(".md")
                || name.starts_with("LICENSE")
                || name.starts_with("COPYING")
                || name.contains("expected")
                || name.ends_with(".listing.txt");
            if !doc {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Parses a fixture with format `F`.
fn parse_with<F: Format>(path: &Path, options: &Options) -> Result<Profile, String> {
    let bytes = std::fs::read(path).expect("fixture");
    F::parse(
        &mut Input::from_slice(&bytes),
        options,
        &mut Context::silent(),
    )
    .map_err(|e| format!("{}: {e}", path.display()))
}

#[test]
fn every_folded_fixture_converts() {
    let files = files_under(&fixtures_dir().join("folded"));
    assert!(files.len() >= 20, "folded fixtures: {}", files.len());
    let skip = Options::new(vec![("skip-bad-lines".to_string(), None)]);
    let mut summary = String::new();
    for path in &files {
        let rel = path
            .strip_prefix(fixtures_dir())
            .unwrap()
            .display()
            .to_string();
        let p =
            parse_with::<profconv_folded::Folded>(path, &skip).unwrap_or_else(|e| panic!("{e}"));
        let (json, sp) = convert_and_check(&p, &rel);
        let fx = check_firefox(&json).unwrap();
        let s = check_speedscope(&sp).unwrap();
        summary.push_str(&format!(
            "{rel}: firefox {} samples ({}), {} call nodes, categories {:?}; speedscope {:?} {} nodes\n",
            fx.samples[0],
            fx.weight_types[0],
            fx.tree.len(),
            fx.categories,
            s.profiles.iter().map(|p| p.1.as_str()).collect::<Vec<_>>(),
            s.tree.len()
        ));
    }
    settings(
        None,
        "every folded fixture through both emitters: samples, weight type, call nodes rebuilt by the checkers",
    )
    .bind(|| insta::assert_snapshot!("firefox__folded_fixtures", summary));
}

/// Every fixture of the other input formats (Deep.data, PVM traces, callgrind), each parsed
/// by its format: (path, the profile or the parser's error).
fn other_fixtures() -> Vec<(PathBuf, Result<Profile, String>)> {
    let dir = fixtures_dir();
    let none = Options::default();
    let mut out = Vec::new();
    for path in files_under(&dir.join("deep")) {
        if path.extension().is_some_and(|e| e == "data") {
            out.push((
                path.clone(),
                parse_with::<profconv_deep::Deep>(&path, &none),
            ));
        }
    }
    for path in files_under(&dir.join("pvm")) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".pvmtrace") || path.parent().is_some_and(|d| d.ends_with("octez-format"))
        {
            out.push((path.clone(), parse_with::<profconv_pvm::Pvm>(&path, &none)));
        }
    }
    for path in files_under(&dir.join("callgrind")) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".callgrind") || name.contains("callgrind.out") {
            let parsed = parse_with::<profconv_callgrind::Callgrind>(&path, &none);
            out.push((path, parsed));
        }
    }
    out
}

/// Fixtures of the other input formats, when they have landed in `fixtures/`. A fixture its
/// parser rejects (an error case of that format) is skipped; every profile that parses must
/// convert and check.
#[test]
fn every_other_fixture_converts() {
    let mut n = 0;
    for (path, parsed) in other_fixtures() {
        match parsed {
            Ok(p) => {
                convert_and_check(&p, &path.display().to_string());
                n += 1;
            }
            Err(e) => eprintln!("skipped, the parser rejects it: {e}"),
        }
    }
    eprintln!("{n} deep/pvm/callgrind fixtures converted");
}

// ---------------------------------------------------------------------------------------------
// The real Firefox Profiler

/// The Firefox Profiler's command-line interface (npm package `@firefox-devtools/profiler-cli`,
/// pinned in `clients/firefox-profiler/package.json`): the profiler's own code for loading a
/// file, upgrading its version and building the Call Tree panel's tree, bundled for Node.js.
/// It runs each loaded profile in a daemon (a session) and answers commands with JSON.
struct ProfilerCli {
    node: PathBuf,
    script: PathBuf,
    /// Where its daemons keep their sockets and logs (`PROFILER_CLI_SESSION_DIR`), and the
    /// tests their files; removed when done.
    sessions: PathBuf,
}

/// The first program of `names` on `PATH`.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

impl ProfilerCli {
    /// The CLI, installed with `npm ci` the first time, with a session directory of its own
    /// named `name` (tests run at the same time); `None` (the test skips, or fails with
    /// `PROFCONV_REQUIRE_CLIENTS=1`, as in CI) without `node` and `npm`.
    fn find(name: &str) -> Option<ProfilerCli> {
        let (Some(node), Some(npm)) = (on_path(&["node", "nodejs"]), on_path(&["npm"])) else {
            let msg = "SKIPPED Firefox Profiler test: no node and npm (apt-get install nodejs npm) \
                       to install and run @firefox-devtools/profiler-cli";
            assert!(
                std::env::var_os("PROFCONV_REQUIRE_CLIENTS").is_none(),
                "{msg}"
            );
            eprintln!("{msg}");
            return None;
        };
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/firefox-profiler");
        let script = dir.join("node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js");
        // One install at a time: the tests of this file run at the same time.
        static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let installing = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        if !script.is_file() {
            let status = Command::new(&npm)
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir)
                .status()
                .expect("run npm ci");
            assert!(
                status.success(),
                "`npm ci` in {} failed: cannot install the Firefox Profiler's CLI",
                dir.display()
            );
        }
        assert!(script.is_file(), "no {}", script.display());
        drop(installing);
        // A short path: each session's socket is in it, and a socket's path has at most 107
        // bytes (a checkout's target directory can be deeper than that leaves room for).
        let sessions =
            std::env::temp_dir().join(format!("profconv-ffp-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&sessions);
        std::fs::create_dir_all(&sessions).expect("session dir");
        Some(ProfilerCli {
            node,
            script,
            sessions,
        })
    }

    /// Runs the CLI with `args`; (exit status success, stdout, stderr). Killed after 60 s.
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let mut child = Command::new(&self.node)
            .arg(&self.script)
            .args(args)
            .env("PROFILER_CLI_SESSION_DIR", &self.sessions)
            // Profiles are symbolicated already; nothing is asked of a symbol server.
            .env("PROFILER_CLI_NO_SYMBOLICATE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start node");
        let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut s);
            s
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for node") {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("profiler-cli {args:?} did not finish within 60 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        (
            status.success(),
            out.join().expect("stdout"),
            err.join().expect("stderr"),
        )
    }

    /// Loads `file` in a new session named `id`; the session stops when the result is dropped.
    ///
    /// The CLI gives its daemon 500 ms to start (Node.js reading a 1.2 MB script), which a
    /// loaded machine can take longer than: then it says so and leaves the daemon starting. Such
    /// a daemon is killed and the load tried again under another id, after a pause that grows
    /// (a burst of load on a 2-core machine outlasted four quick attempts), up to twelve times;
    /// and loads go one at a time in this process, so that the tests running at the same time do
    /// not make it likelier.
    fn load<'c>(&'c self, file: &Path, id: &str) -> Result<Session<'c>, String> {
        static LOADS: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = LOADS.lock().unwrap_or_else(|e| e.into_inner());
        let mut said = String::new();
        for attempt in 1..=12 {
            let session = Session {
                cli: self,
                id: match attempt {
                    1 => id.to_string(),
                    n => format!("{id}-{n}"),
                },
            };
            let path = file.display().to_string();
            let (ok, out, err) = self.run(&["load", &path, "--session", &session.id]);
            if ok {
                return Ok(session);
            }
            said = format!("{}{}", out.trim(), err.trim());
            if !said.contains("did not become ready") {
                break;
            }
            // "The daemon may still be running as pid N."
            let pid = said
                .split("pid ")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .filter(|p| !p.is_empty());
            if let Some(pid) = pid {
                let _ = Command::new("kill").arg(pid).status();
            }
            eprintln!("{path}: the profiler's daemon was slow to start (attempt {attempt}); again");
            std::thread::sleep(std::time::Duration::from_millis(250 * attempt));
        }
        Err(said)
    }
}

impl Drop for ProfilerCli {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.sessions);
    }
}

/// A profile loaded in the profiler's daemon.
struct Session<'c> {
    cli: &'c ProfilerCli,
    id: String,
}

impl Session<'_> {
    /// A command's `--json` answer.
    fn query(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["--json", "--session", &self.id]);
        let (ok, out, err) = self.cli.run(&all);
        assert!(ok, "profiler-cli {all:?} failed: {out}{err}");
        // The tree nests two levels per call node, 200 call nodes deep: past serde_json's
        // default limit of 128.
        let mut json = serde_json::Deserializer::from_str(&out);
        json.disable_recursion_limit();
        serde::Deserialize::deserialize(&mut json)
            .unwrap_or_else(|e| panic!("profiler-cli {all:?}: {e}: {out}"))
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.cli.run(&["stop", &self.id]);
    }
}

/// One thread's call tree from profconv's IR as the emitter weighs it: self and total of the
/// default weight per call node, in the Firefox file's unit.
struct ThreadTree<'t> {
    tree: &'t CallTree,
    names: Vec<&'t str>,
    self_value: Vec<f64>,
    total: Vec<f64>,
}

impl<'t> ThreadTree<'t> {
    fn new(p: &ProfileRef<'t>, tree: &'t CallTree, thread: usize) -> Self {
        let col = weight_column(p);
        let scale = col.map_or(1.0, |c| {
            let exp10 = firefox_exp10(p.value_type_unit(c));
            10f64.powi(exp10 - p.value_types[c].decimals as i32)
        });
        let n = tree.len();
        let mut self_value = vec![0f64; n];
        for (i, &s) in p.sample_stack.iter().enumerate() {
            if p.n_threads() > 1 && p.sample_thread_of(i) as usize != thread {
                continue;
            }
            let v = col.map_or(1, |c| p.sample_values[c][i]);
            self_value[tree.stack_node[s as usize] as usize] += v as f64 * scale;
        }
        let mut total = self_value.clone();
        // Parents come before their children.
        for i in (0..n).rev() {
            if tree.parent[i] != NONE {
                total[tree.parent[i] as usize] += total[i];
            }
        }
        let names = tree.func.iter().map(|&f| p.func_name_str(f)).collect();
        ThreadTree {
            tree,
            names,
            self_value,
            total,
        }
    }

    fn children(&self, nodes: &[u32]) -> Vec<u32> {
        match nodes {
            [] => self.tree.roots.clone(),
            _ => nodes.iter().flat_map(|&n| self.tree.children(n)).collect(),
        }
    }
}

/// Compares the profiler's top-down tree of one thread (`regularCallTree`) with profconv's.
/// The CLI lists at most 100 children per node and stops 200 levels down; what it leaves out it
/// sums in the parent's `childrenTruncated`, which must then hold exactly profconv's children
/// that are not listed. Call nodes of one name under one path are taken together on both sides
/// (the profiler tells them apart by func, profconv's tree by func too, but the test matches by
/// name). Returns the number of name paths compared.
fn compare_top_down(got: &Value, want: &ThreadTree<'_>, what: &str) -> usize {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    let num = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("{what}: no number `{key}` in {v}"))
    };
    let mut compared = 0;
    // (the profiler's nodes of one name path, profconv's call nodes of that path, its text)
    let mut todo: Vec<(Vec<&Value>, Vec<u32>, String)> =
        vec![(vec![got], Vec::new(), String::new())];
    while let Some((nodes, ours, path)) = todo.pop() {
        let mut kids: std::collections::BTreeMap<&str, Vec<&Value>> = Default::default();
        let (mut cut_count, mut cut_total) = (0usize, 0f64);
        for node in &nodes {
            let list = node
                .get("children")
                .and_then(Value::as_array)
                .unwrap_or_else(|| panic!("{what}: {path}: no children list"));
            for kid in list {
                let name = kid.get("name").and_then(Value::as_str).expect("name");
                kids.entry(name).or_default().push(kid);
            }
            if let Some(cut) = node.get("childrenTruncated") {
                cut_count += num(cut, "count") as usize;
                cut_total += num(cut, "combinedSamples");
            }
        }
        let ours_kids = want.children(&ours);
        let listed: Vec<&str> = kids.keys().copied().collect();
        for (name, kid_nodes) in kids {
            let same: Vec<u32> = ours_kids
                .iter()
                .copied()
                .filter(|&k| want.names[k as usize] == name)
                .collect();
            let kid_path = format!("{path};{name}");
            assert!(
                !same.is_empty(),
                "{what}: the profiler shows {kid_path}, which profconv's tree does not have"
            );
            let theirs = |key: &str| kid_nodes.iter().map(|k| num(k, key)).sum::<f64>();
            let ours = |v: &[f64]| same.iter().map(|&k| v[k as usize]).sum::<f64>();
            let (s, t) = (theirs("selfSamples"), theirs("totalSamples"));
            assert!(
                close(s, ours(&want.self_value)) && close(t, ours(&want.total)),
                "{what}: {kid_path}: the profiler shows self {s} total {t}, profconv self {} total {}",
                ours(&want.self_value),
                ours(&want.total)
            );
            compared += 1;
            todo.push((kid_nodes, same, kid_path));
        }
        // What is not listed: nothing but nodes without weight, and what the summary counts.
        let left: Vec<u32> = ours_kids
            .iter()
            .copied()
            .filter(|&k| {
                listed.binary_search(&want.names[k as usize]).is_err()
                    && want.total[k as usize] != 0.0
            })
            .collect();
        let left_total: f64 = left.iter().map(|&k| want.total[k as usize]).sum();
        assert!(
            cut_count == left.len() && close(cut_total, left_total),
            "{what}: {path}: the profiler leaves out {cut_count} call nodes with total {cut_total}; \
             profconv's children not listed: {:?}, total {left_total}",
            left.iter()
                .map(|&k| want.names[k as usize])
                .collect::<Vec<_>>()
        );
    }
    compared
}

/// Loads `p`'s Firefox output into the real profiler and compares every thread's call tree
/// with profconv's. Returns the number of call nodes compared.
fn check_in_firefox_profiler(cli: &ProfilerCli, p: &Profile, what: &str, id: &str) -> usize {
    let file = cli.sessions.join(format!("{id}.json.gz"));
    std::fs::write(&file, emit::<Firefox>(p)).expect("write profile");
    let session = cli
        .load(&file, id)
        .unwrap_or_else(|e| panic!("{what}: the Firefox Profiler cannot load the file: {e}"));
    // (`profile info` fails on a profile without samples: the CLI names times in a range of
    // length zero, an assertion of its own; `thread list` does not.)
    let list = session.query(&["thread", "list", "--limit", "0"]);
    assert_eq!(
        list.get("hiddenByLimit").and_then(Value::as_u64),
        Some(0),
        "{what}: every thread listed"
    );
    let threads: Vec<(u64, String)> = list
        .get("threads")
        .and_then(Value::as_array)
        .expect("threads")
        .iter()
        .map(|t| {
            let index = t.get("threadIndex").and_then(Value::as_u64).expect("index");
            let name = t
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            (index, name)
        })
        .collect();
    let v = p.view();
    assert_eq!(
        threads.len(),
        v.n_threads().max(1),
        "{what}: the profiler's threads {threads:?}"
    );
    let tree = CallTree::build(&v).expect("call tree");
    let mut compared = 0;
    for (index, name) in &threads {
        if v.n_threads() > 0 {
            let ours = v.strings.get(v.thread_name[*index as usize]);
            assert_eq!(name, ours, "{what}: thread {index}'s name");
        }
        let handle = format!("t-{index}");
        let top_down = session.query(&[
            "thread",
            "samples-top-down",
            "--thread",
            &handle,
            "--include-idle",
            "--max-lines",
            "1000000",
        ]);
        let root = top_down.get("regularCallTree").expect("regularCallTree");
        let want = ThreadTree::new(&v, &tree, *index as usize);
        compared += compare_top_down(root, &want, &format!("{what} ({handle})"));
    }
    let _ = std::fs::remove_file(&file);
    compared
}

/// Every fixture of every input format that its parser reads, seed 000's trace, and a profile
/// of names JSON must escape: (what, profile).
fn fixture_profiles() -> Vec<(String, Profile)> {
    let dir = fixtures_dir();
    let skip = Options::new(vec![("skip-bad-lines".to_string(), None)]);
    let folded = |text: &str| {
        profconv_folded::parse_folded(
            &mut Input::from_slice(text.as_bytes()),
            false,
            &mut Context::silent(),
        )
        .expect("folded text")
    };
    let mut profiles: Vec<(String, Profile)> = vec![
        ("seed 000".into(), pvm_seed()),
        // Names JSON must escape and the profiler must show as they are.
        (
            "names to escape".into(),
            folded(
                "main;fn \"quoted\";back\\\\slash 3\nmain;tab\there;uni\u{e9}\u{2028}sep 2\n\
                 main;ctl\u{1}\u{1f}char 1\nmain;emoji\u{1f600};  spaced   5\nmain;a;a;a;a 7\n\
                 #root;x 1\nmain;</script>;&amp; 4\n",
            ),
        ),
        // Names the folded format cannot hold as they are (the folded emitter writes `;` as `:`
        // and line breaks as spaces, and puts `_` before a root that reads as a comment).
        ("names folded stacks cannot hold".into(), {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            for (names, n) in [
                (&["# key: value", "x"][..], 2),
                (&["main", "<[u8; 8] as Debug>::fmt"][..], 3),
                // (Inside the name: a leaf's trailing whitespace is one of the folded format's
                // ambiguities, trimmed by profconv's reader, kept by the Firefox Profiler's.)
                (&["main", "two\nlines\r\nend"][..], 1),
                (&["main", "#", "x"][..], 1),
            ] {
                let mut stack = NONE;
                for name in names {
                    let func = b.func(name);
                    let frame = b.frame(func);
                    stack = b.stack(stack, frame);
                }
                b.add_to_stack(stack, &[n]).expect("count");
            }
            b.finish()
        }),
        // A JavaScript number keeps 53 bits: the profiler's totals are then as close as a
        // double gets, which the comparison allows.
        (
            "a sum past 2^53".into(),
            folded("main;big 9007199254740993\nmain;small 1\n"),
        ),
    ];
    let mut add = |parsed: Result<Profile, String>, path: &Path| {
        if let Ok(p) = parsed {
            let rel = path
                .strip_prefix(&dir)
                .unwrap_or(path)
                .display()
                .to_string();
            profiles.push((rel, p));
        }
    };
    for path in files_under(&dir.join("folded")) {
        add(parse_with::<profconv_folded::Folded>(&path, &skip), &path);
    }
    for (path, parsed) in other_fixtures() {
        add(parsed, &path);
    }
    profiles
}

/// Runs `check(i)` for `i` in `0..n`, two at a time (each profile loaded starts a Node.js
/// daemon); returns the sum of what they return.
fn two_at_a_time(n: usize, check: impl Fn(usize) -> usize + Sync) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (next, sum) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    sum.fetch_add(check(i), Ordering::Relaxed);
                }
            });
        }
    });
    sum.into_inner()
}

/// The real Firefox Profiler loads the Firefox output of every fixture of every input format and
/// shows, thread by thread, profconv's call tree: the same names, self and total values.
#[test]
fn the_firefox_profiler_shows_profconvs_call_tree_for_every_fixture() {
    let Some(cli) = ProfilerCli::find("fixtures") else {
        return;
    };
    let profiles = fixture_profiles();
    assert!(profiles.len() >= 40, "fixtures: {}", profiles.len());
    let compared = two_at_a_time(profiles.len(), |i| {
        let (what, p) = &profiles[i];
        check_in_firefox_profiler(&cli, p, what, &format!("fixture-{i}"))
    });
    eprintln!(
        "the Firefox Profiler showed profconv's call tree for {} profiles ({compared} call nodes)",
        profiles.len()
    );
}

/// The Firefox Profiler imports folded stacks too (its "Flamegraph" importer: one sample per unit
/// of a line's count, read as an integer). It reads profconv's folded output of every fixture as
/// profconv's own folded reader reads it back: the same call tree, but for the `_[j]` that the
/// importer takes off a name. Left out: outputs whose counts have decimals (the importer drops
/// them) or add up to more than 100 000 (that many samples), and differential ones (the importer
/// reads one count).
#[test]
fn the_firefox_profiler_reads_profconvs_folded_output_as_profconv_does() {
    let Some(cli) = ProfilerCli::find("folded") else {
        return;
    };
    let profiles = fixture_profiles();
    let compared = std::sync::atomic::AtomicUsize::new(0);
    let nodes = two_at_a_time(profiles.len(), |i| {
        let (what, p) = &profiles[i];
        let text = emit::<profconv_folded::Folded>(p);
        let Ok(back) = profconv_folded::parse_folded(
            &mut Input::from_slice(&text),
            false,
            &mut Context::silent(),
        ) else {
            // Negative values are written with a `-`, which no folded reader takes.
            return 0;
        };
        let v = back.view();
        let Some(col) = v.default_weight() else {
            return 0;
        };
        // A differential file (`STACK BEFORE AFTER`): the importer reads the before count as the
        // end of the leaf's name.
        if v.value_types.len() > 1 {
            return 0;
        }
        let total: i64 = v.sample_values[col].iter().sum();
        if v.value_types[col].decimals > 0 || total <= 0 || total > 100_000 {
            return 0;
        }
        let file = cli.sessions.join(format!("folded-{i}.folded"));
        std::fs::write(&file, &text).expect("write folded");
        let what = format!("{what} (folded)");
        let session = cli.load(&file, &format!("folded-{i}")).unwrap_or_else(|e| {
            panic!("{what}: the Firefox Profiler cannot load profconv's folded output: {e}")
        });
        let tree = CallTree::build(&v).expect("call tree");
        let top_down = session.query(&[
            "thread",
            "samples-top-down",
            "--include-idle",
            "--max-lines",
            "1000000",
        ]);
        let root = top_down.get("regularCallTree").expect("regularCallTree");
        let mut want = ThreadTree::new(&v, &tree, 0);
        // The importer takes flamegraph.pl's `_[j]` (a JIT-compiled frame) off a name for its
        // category.
        for name in &mut want.names {
            *name = name.strip_suffix("_[j]").unwrap_or(name);
        }
        let n = compare_top_down(root, &want, &what);
        compared.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        n
    });
    let compared = compared.into_inner();
    assert!(
        compared >= 15,
        "folded outputs the profiler read: {compared}"
    );
    eprintln!(
        "the Firefox Profiler read profconv's folded output of {compared} profiles as profconv does ({nodes} call nodes)"
    );
}

/// The real Firefox Profiler places a trace's calls in time (its Stack Chart, and the samples
/// a time range selects): seed 000's f [0,10), g [10,30), h [30,60), g [60,100), f [100,160),
/// one tick drawn as one millisecond. A range selects the samples that start in it.
#[test]
fn the_firefox_profiler_places_a_traces_calls_in_time() {
    let Some(cli) = ProfilerCli::find("timeline") else {
        return;
    };
    let file = cli.sessions.join("seed-000-timeline.json.gz");
    std::fs::write(&file, emit::<Firefox>(&pvm_seed())).expect("write profile");
    let session = cli.load(&file, "seed-000-timeline").expect("load");
    // (range in seconds, the self values it selects by call path)
    let cases: [(&str, &[(&str, f64)]); 4] = [
        ("0,0.161", &[("f", 70.0), ("f;g", 60.0), ("f;g;h", 30.0)]),
        ("0.005,0.015", &[("f;g", 20.0)]),
        ("0.025,0.065", &[("f;g", 40.0), ("f;g;h", 30.0)]),
        ("0.095,0.105", &[("f", 60.0)]),
    ];
    for (range, want) in cases {
        session.query(&["zoom", "clear"]);
        session.query(&["zoom", "push", range]);
        let tree = session.query(&["thread", "samples-top-down", "--include-idle"]);
        let mut got = Vec::new();
        let mut todo = vec![(tree.get("regularCallTree").expect("tree"), String::new())];
        while let Some((node, path)) = todo.pop() {
            for kid in node
                .get("children")
                .and_then(Value::as_array)
                .expect("children")
            {
                let name = kid.get("name").and_then(Value::as_str).expect("name");
                let kid_path = match path.is_empty() {
                    true => name.to_string(),
                    false => format!("{path};{name}"),
                };
                let self_value = kid
                    .get("selfSamples")
                    .and_then(Value::as_f64)
                    .expect("self");
                if self_value != 0.0 {
                    got.push((kid_path.clone(), self_value));
                }
                todo.push((kid, kid_path));
            }
        }
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let want: Vec<(String, f64)> = want.iter().map(|&(p, v)| (p.to_string(), v)).collect();
        assert_eq!(got, want, "the samples the range {range} s selects");
    }
    drop(session);
    let _ = std::fs::remove_file(&file);
}

/// An aggregated profile's timeline ends where its weights do: the real profiler ends a sample
/// at the next one's time, and the last at its time plus one interval, so profconv writes a
/// `null` sample where the last stack ends. `a;b 1`, `a;c 50`: `a;c` is drawn from 1 to 51 ms
/// and the profile runs to 52 (the end marker's interval); it ended at 2, `a;c` one interval
/// wide.
#[test]
fn the_firefox_profiler_ends_an_aggregated_timeline_at_its_total() {
    let Some(cli) = ProfilerCli::find("aggregated end") else {
        return;
    };
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_stack(&["a", "b"], &[1]).unwrap();
    b.add_stack(&["a", "c"], &[50]).unwrap();
    let file = cli.sessions.join("aggregated-end.json.gz");
    std::fs::write(&file, emit::<Firefox>(&b.finish())).expect("write profile");
    let session = cli.load(&file, "aggregated-end").expect("load");
    let info = session.query(&["status"]);
    let range = info
        .get("rootRange")
        .unwrap_or_else(|| panic!("rootRange: {info}"));
    let (start, end) = (range["start"].as_f64(), range["end"].as_f64());
    assert_eq!((start, end), (Some(0.0), Some(52.0)), "{info}");
    // The range from 2 ms on selects no sample start: `a;c` started at 1.
    session.query(&["zoom", "push", "0.002,0.052"]);
    let tree = session.query(&["thread", "samples-top-down"]);
    let roots = tree["regularCallTree"]["children"]
        .as_array()
        .expect("children");
    assert!(roots.is_empty(), "{tree}");
    drop(session);
    let _ = std::fs::remove_file(&file);
}
