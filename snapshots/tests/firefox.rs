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
use profconv_ir::{CallTree, NONE, Profile, ProfileBuilder, TraceBuilder, ValueKind, flags};
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

/// profconv's call tree in the checker's shape: nodes reached by some sample (or, with
/// `positive`, with a positive total), values of the default weight times 10^exp10.
fn ir_tree(p: &Profile, exp10: i32, positive: bool) -> Vec<TreeNode> {
    let v = p.view();
    let tree = CallTree::build(&v).expect("call tree");
    let col = v
        .default_weight()
        .or((!v.value_types.is_empty()).then_some(0));
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
    let exp10 = v
        .default_weight()
        .map_or(0, |c| firefox_exp10(v.value_type_unit(c)));
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
    let negative = v
        .default_weight()
        .is_some_and(|c| v.sample_values[c].iter().any(|&x| x < 0));
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

/// Fixtures of the other input formats, when they have landed in `fixtures/`. A fixture its
/// parser rejects (an error case of that format) is skipped; every profile that parses must
/// convert and check.
#[test]
fn every_other_fixture_converts() {
    let dir = fixtures_dir();
    let none = Options::default();
    let mut n = 0;
    let mut check = |parsed: Result<Profile, String>, path: &Path| match parsed {
        Ok(p) => {
            convert_and_check(&p, &path.display().to_string());
            n += 1;
        }
        Err(e) => eprintln!("skipped, the parser rejects it: {e}"),
    };
    for path in files_under(&dir.join("deep")) {
        if path.extension().is_some_and(|e| e == "data") {
            check(parse_with::<profconv_deep::Deep>(&path, &none), &path);
        }
    }
    for path in files_under(&dir.join("pvm")) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".pvmtrace") || path.parent().is_some_and(|d| d.ends_with("octez-format"))
        {
            check(parse_with::<profconv_pvm::Pvm>(&path, &none), &path);
        }
    }
    for path in files_under(&dir.join("callgrind")) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".callgrind") || name.contains("callgrind.out") {
            check(
                parse_with::<profconv_callgrind::Callgrind>(&path, &none),
                &path,
            );
        }
    }
    eprintln!("{n} deep/pvm/callgrind fixtures converted");
}
