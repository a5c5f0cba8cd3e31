//! callgrind through the IR, checked against the real readers.
//!
//! * Emitter: the callgrind text of seed 003's six ordered samples (rbspy's estimate) and of
//!   seed 000's trace with exact calls is snapshotted, and the numbers seed 003's tests assert
//!   are checked on it. For every fixture a parser reads (see
//!   `reader_inputs`: folded, PVM and Deep.data fixtures), profconv's callgrind output is given to
//!   `callgrind_annotate` (program total, self and inclusive cost per function must be the
//!   IR's, and no inclusive cost may exceed the total) and to `gprof2dot -f callgrind` (no
//!   warning, the same functions).
//! * Parser: valgrind's real files (line and instruction positions) and the hand-made one give
//!   the self costs per function of `callgrind_annotate` (its stored outputs, and a live run
//!   when installed), also after emitting folded stacks and reading them back; their trees
//!   are snapshotted. Bad input gives errors with line numbers, never a panic.
//!
//! The tools are found through `PROFCONV_CALLGRIND_ANNOTATE` / `PROFCONV_GPROF2DOT`, then
//! `<target dir>/venv/bin/gprof2dot` (where `.ci/run` installs it), then `PATH`. A missing tool
//! skips its checks with a message on stderr.

use profconv_callgrind::{
    BuildOptions, Callgrind, EmitOptions, Graph, ROOT_CALLER, ROOT_CALLER_DESC, build_profile,
    emit_callgrind, parse_graph,
};
use profconv_folded::Folded;
use profconv_ir::{
    CallTree, NONE, Profile, ProfileBuilder, TraceBuilder, TreeOrder, TreeTextOptions, ValueKind,
    flags, render_tree,
};
use profconv_plugin::{Context, Format, Input, Options, Output, PluginError};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

// ---------------------------------------------------------------------------------------------
// Helpers

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn read_fixture(rel: &str) -> Vec<u8> {
    let path = fixtures_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn settings(description: &str) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s.set_description(description);
    s
}

/// A message the test harness does not capture (skips must be visible).
fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

fn emit_text(p: &Profile) -> String {
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        <Callgrind as Format>::emit(
            &p.view(),
            &mut out,
            &Options::default(),
            &mut Context::silent(),
        )
        .expect("emit");
        out.flush().expect("flush");
    }
    // The library entry point writes the same bytes.
    let mut direct = Vec::new();
    emit_callgrind(&p.view(), &mut direct, EmitOptions::default()).expect("emit");
    assert_eq!(buf, direct, "Format::emit and emit_callgrind differ");
    String::from_utf8(buf).expect("callgrind output is UTF-8")
}

fn graph_of(text: &[u8]) -> Graph {
    parse_graph(&mut Input::from_slice(text), &mut Context::silent()).expect("parse_graph")
}

fn parse_callgrind(bytes: &[u8]) -> (Profile, Vec<String>) {
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    let mut cx = Context::with_sink(&mut sink);
    let p =
        <Callgrind as Format>::parse(&mut Input::from_slice(bytes), &Options::default(), &mut cx)
            .expect("parse");
    (p, messages)
}

fn tree_text(p: &Profile, order: TreeOrder) -> String {
    let t = CallTree::build(&p.view()).expect("call tree");
    render_tree(
        &p.view(),
        &t,
        &TreeTextOptions {
            order,
            ..Default::default()
        },
    )
    .expect("render")
}

/// The key callgrind_annotate gives a function: `file:name` (`???` for no file). Readers drop
/// the whitespace after `=` and after a compressed id, so names lose leading whitespace, and
/// profconv writes an empty name as `???`.
fn annotate_key(file: Option<&str>, name: &str) -> String {
    let name = name.trim_start();
    let name = if name.is_empty() { "???" } else { name };
    format!("{}:{name}", file.filter(|f| !f.is_empty()).unwrap_or("???"))
}

fn func_key(p: &Profile, f: u32) -> String {
    let v = p.view();
    let file = v.func_file[f as usize];
    annotate_key(
        (file != NONE).then(|| v.strings.get(file)),
        v.func_name_str(f),
    )
}

/// Self cost per function key, column `col` (non-zero ones only).
fn ir_self(p: &Profile, col: usize, key: impl Fn(u32) -> String) -> BTreeMap<String, i64> {
    let t = CallTree::build(&p.view()).expect("call tree");
    let mut m = BTreeMap::new();
    for n in 0..t.len() {
        *m.entry(key(t.func[n])).or_insert(0) += t.self_values[col][n];
    }
    m.retain(|_, v| *v != 0);
    m
}

/// Inclusive cost per function key as callgrind_annotate (`--inclusive=yes`) computes it: for
/// a function that is called somewhere, the sum of its incoming call costs; else its self cost
/// plus its calls. profconv charges a sample to the call into a function's outermost frame, so
/// that is the total of its outermost call nodes, leaving out root nodes when the function is
/// called somewhere (callgrind_annotate ignores a called function's costs at the root).
/// `identity` is the emitter's notion of one function; `key` is callgrind_annotate's.
fn ir_inclusive(
    p: &Profile,
    col: usize,
    identity: impl Fn(u32) -> String,
    key: impl Fn(u32) -> String,
) -> BTreeMap<String, i64> {
    let t = CallTree::build(&p.view()).expect("call tree");
    let ids: Vec<String> = (0..t.len()).map(|n| identity(t.func[n])).collect();
    let called: BTreeSet<&String> = (0..t.len())
        .filter(|&n| t.depth[n] > 0)
        .map(|n| &ids[n])
        .collect();
    let mut m = BTreeMap::new();
    for n in 0..t.len() {
        if t.depth[n] == 0 && called.contains(&ids[n]) {
            // A root function that is also called gets its root's costs as a call from the
            // synthetic `(root)` too (see the emitter's `RootEntries`).
            *m.entry(annotate_key(None, ROOT_CALLER)).or_insert(0) += t.total_values[col][n];
        }
        let mut a = t.parent[n];
        let mut outermost = true;
        while a != NONE {
            if ids[a as usize] == ids[n] {
                outermost = false;
                break;
            }
            a = t.parent[a as usize];
        }
        if outermost {
            *m.entry(key(t.func[n])).or_insert(0) += t.total_values[col][n];
        }
    }
    m.retain(|_, v| *v != 0);
    m
}

/// The emitter's identity of a function: (object, file, name).
fn identity(p: &Profile, f: u32) -> String {
    let v = p.view();
    let s = |id: u32| if id == NONE { "" } else { v.strings.get(id) };
    format!(
        "{}\u{0}{}\u{0}{}",
        s(v.func_resource[f as usize]),
        s(v.func_file[f as usize]),
        v.func_name_str(f)
    )
}

// ---------------------------------------------------------------------------------------------
// The real readers

/// A tool from its environment variable, the target directory's venv, or `PATH`.
fn find_tool(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
        note(&format!("{env}={} is not a file", p.display()));
        return None;
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf);
    if let Some(t) = target {
        let venv = t.join("venv").join("bin").join(name);
        if venv.is_file() {
            return Some(venv);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn annotate_tool() -> Option<PathBuf> {
    let t = find_tool("PROFCONV_CALLGRIND_ANNOTATE", "callgrind_annotate");
    if t.is_none() {
        note(
            "SKIP: callgrind_annotate not found (install valgrind, or set PROFCONV_CALLGRIND_ANNOTATE): its checks are skipped",
        );
    }
    t
}

fn gprof2dot_tool() -> Option<PathBuf> {
    let t = find_tool("PROFCONV_GPROF2DOT", "gprof2dot");
    if t.is_none() {
        note(
            "SKIP: gprof2dot not found (python3 -m venv <target>/venv && <target>/venv/bin/pip install gprof2dot, or set PROFCONV_GPROF2DOT): its checks are skipped",
        );
    }
    t
}

/// A scratch file for a reader.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("callgrind-readers");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("scratch file");
    path
}

/// What callgrind_annotate printed: the program totals and one cost list per function.
#[derive(Debug)]
struct Annotated {
    totals: Vec<i64>,
    funcs: BTreeMap<String, Vec<i64>>,
}

/// `N (pct)` groups, then the rest of the line.
fn split_counts(line: &str) -> Option<(Vec<i64>, &str)> {
    let mut rest = line.trim_start();
    let mut counts = Vec::new();
    loop {
        let end = if rest.starts_with(". ") {
            1
        } else {
            rest.find(|c: char| !(c.is_ascii_digit() || c == ','))
                .unwrap_or(rest.len())
        };
        if end == 0 {
            break;
        }
        let num = &rest[..end];
        let after = rest[end..].trim_start();
        if (num == "." || num == "0") && rest[end..].starts_with(' ') {
            // A zero: printed as `.` or `0`, without a percentage.
            counts.push(0);
            rest = after;
            continue;
        }
        if !after.starts_with('(') {
            break;
        }
        let close = after.find(')')?;
        counts.push(num.replace(',', "").parse().ok()?);
        rest = after[close + 1..].trim_start();
    }
    (!counts.is_empty()).then_some((counts, rest))
}

fn parse_annotate(text: &str, objects: &[&str]) -> Annotated {
    let mut totals = Vec::new();
    let mut funcs = BTreeMap::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if l.ends_with("PROGRAM TOTALS") {
            totals = split_counts(l).expect("totals line").0;
        }
        if l.ends_with("file:function") {
            lines.next(); // the dashes
            for l in lines.by_ref() {
                if l.trim().is_empty() {
                    break;
                }
                let (counts, mut name) = split_counts(l).unwrap_or_else(|| panic!("line {l:?}"));
                for o in objects.iter().chain(&["???"]) {
                    if let Some(s) = name.strip_suffix(&format!(" [{o}]")) {
                        name = s;
                        break;
                    }
                }
                funcs.insert(name.to_string(), counts);
            }
            break;
        }
    }
    Annotated { totals, funcs }
}

fn run_annotate(tool: &Path, file: &Path, inclusive: bool, objects: &[&str]) -> Annotated {
    let out = Command::new(tool)
        .arg("--threshold=100")
        .arg("--auto=no")
        .arg(format!(
            "--inclusive={}",
            if inclusive { "yes" } else { "no" }
        ))
        .arg(file)
        .current_dir(file.parent().unwrap())
        .output()
        .expect("run callgrind_annotate");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "callgrind_annotate failed on {}: {stderr}",
        file.display()
    );
    assert!(
        stderr.trim().is_empty(),
        "callgrind_annotate warned on {}: {stderr}",
        file.display()
    );
    parse_annotate(&String::from_utf8_lossy(&out.stdout), objects)
}

/// The first column of each function, non-zero only.
fn first_col(a: &Annotated) -> BTreeMap<String, i64> {
    a.funcs
        .iter()
        .map(|(k, v)| (k.clone(), v[0]))
        .filter(|(_, v)| *v != 0)
        .collect()
}

/// Function names in gprof2dot's dot output. A node label is `[module\n]name\nTOTAL%\n(SELF%)\nN×`
/// (the module, the object's base name, only for a function in an object), so the name is the
/// fourth line from the end.
fn dot_names(dot: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for l in dot.lines() {
        let l = l.trim_start();
        if l.contains(" -> ")
            || !l.contains("label=\"")
            || l.starts_with("graph")
            || l.starts_with("node")
            || l.starts_with("edge")
        {
            continue;
        }
        let start = l.find("label=\"").unwrap() + 7;
        let mut label = String::new();
        let mut chars = l[start..].chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => label.push('\n'),
                    Some('t') => label.push('\t'),
                    Some(o) => label.push(o),
                    None => break,
                },
                c => label.push(c),
            }
        }
        let lines: Vec<&str> = label.split('\n').collect();
        names.insert(lines[lines.len().saturating_sub(4)].to_string());
    }
    names
}

/// Runs both readers on profconv's callgrind output for `p` and checks what they report.
fn check_readers(stem: &str, p: &Profile, annotate: Option<&Path>, gprof2dot: Option<&Path>) {
    let text = emit_text(p);
    let file = scratch(&format!("{stem}.callgrind"), text.as_bytes());
    let v = p.view();
    let col = v.default_weight().expect("a weight column");
    let tree = CallTree::build(&v).expect("call tree");
    let total = tree.grand_total(col);
    let key = |f: u32| func_key(p, f);

    // profconv reads its own output back with the same self costs.
    let g = graph_of(text.as_bytes());
    assert_eq!(g.self_total()[0], total, "{stem}: re-read total");
    let mut reread: BTreeMap<String, i64> = BTreeMap::new();
    for (i, s) in g.selfs.iter().enumerate() {
        let name = g.str(g.funcs[s.func as usize].name);
        let file = g.str(g.funcs[s.func as usize].file);
        *reread
            .entry(annotate_key((file != "???").then_some(file), name))
            .or_insert(0) += g.self_costs.row(i)[0];
    }
    reread.retain(|_, v| *v != 0);
    let want_self = ir_self(p, col, key);
    assert_eq!(
        reread, want_self,
        "{stem}: self costs read back by profconv"
    );

    if let Some(tool) = annotate {
        // callgrind_annotate appends ` [object]` to a function in an object (a func resource).
        let mut objects: Vec<&str> = v
            .func_resource
            .iter()
            .filter(|&&r| r != NONE)
            .map(|&r| v.strings.get(r))
            .collect();
        objects.sort_unstable();
        objects.dedup();
        let a = run_annotate(tool, &file, false, &objects);
        assert_eq!(
            a.totals.first().copied().unwrap_or(0),
            total,
            "{stem}: callgrind_annotate PROGRAM TOTALS"
        );
        assert_eq!(
            first_col(&a),
            want_self,
            "{stem}: callgrind_annotate self cost per function"
        );
        let inc = run_annotate(tool, &file, true, &objects);
        let want_inc = ir_inclusive(p, col, |f| identity(p, f), key);
        let got_inc = first_col(&inc);
        for (name, v) in &got_inc {
            assert!(
                *v <= total,
                "{stem}: {name} has inclusive {v} > total {total}"
            );
        }
        assert_eq!(
            got_inc, want_inc,
            "{stem}: callgrind_annotate inclusive cost per function"
        );
    }
    if let Some(tool) = gprof2dot {
        let out = Command::new(tool)
            .args(["-f", "callgrind", "-n", "0", "-e", "0"])
            .arg(&file)
            .output()
            .expect("run gprof2dot");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stem}: gprof2dot failed: {stderr}");
        assert!(
            stderr.trim().is_empty(),
            "{stem}: gprof2dot warned: {stderr}"
        );
        let got = dot_names(&String::from_utf8_lossy(&out.stdout));
        let mut want: BTreeSet<String> = tree
            .func
            .iter()
            .map(|&f| {
                let n = v.func_name_str(f).trim();
                if n.is_empty() {
                    "???".to_string()
                } else {
                    n.to_string()
                }
            })
            .collect();
        // The synthetic caller of root functions that are also called, when there are some.
        if text.contains(&format!("\ndesc: {ROOT_CALLER_DESC}{ROOT_CALLER} (")) {
            want.insert(ROOT_CALLER.to_string());
        }
        let got: BTreeSet<String> = got.iter().map(|n| n.trim().to_string()).collect();
        assert_eq!(got, want, "{stem}: gprof2dot's functions");
    }
}

/// Every fixture under `fixtures/<dir>/` that the format `F` parses (others are skipped), as
/// `(name, profile)`.
fn inputs_via<F: Format>(dir: &str) -> Vec<(String, Profile)> {
    let root = fixtures_dir().join(dir);
    let mut files = Vec::new();
    let mut todo = vec![root.clone()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("fixture dir") {
            let path = e.expect("dir entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let bytes = std::fs::read(&path).expect("fixture");
        let parsed = F::parse(
            &mut Input::from_slice(&bytes),
            &Options::default(),
            &mut Context::silent(),
        );
        if let Ok(p) = parsed {
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace(['/', '.', '-'], "_");
            out.push((format!("{dir}_{rel}"), p));
        }
    }
    out
}

/// Every profile the readers are run on: all fixtures of the parsers that have landed.
fn reader_inputs() -> Vec<(String, Profile)> {
    let mut inputs = inputs_via::<Folded>("folded");
    inputs.extend(inputs_via::<profconv_pvm::Pvm>("pvm"));
    inputs.extend(inputs_via::<profconv_deep::Deep>("deep"));
    inputs
}

#[test]
fn readers_accept_profconvs_output_for_every_fixture() {
    let annotate = annotate_tool();
    let gprof2dot = gprof2dot_tool();
    let inputs = reader_inputs();
    assert!(inputs.len() >= 25, "only {} fixtures parsed", inputs.len());
    let mut checked = 0;
    for (stem, p) in &inputs {
        if p.view().default_weight().is_none() {
            continue;
        }
        check_readers(stem, p, annotate.as_deref(), gprof2dot.as_deref());
        checked += 1;
    }
    note(&format!(
        "callgrind readers: {checked} fixtures checked (callgrind_annotate: {}, gprof2dot: {})",
        if annotate.is_some() { "run" } else { "skipped" },
        if gprof2dot.is_some() {
            "run"
        } else {
            "skipped"
        }
    ));
}

// ---------------------------------------------------------------------------------------------
// Emitter snapshots

/// Seed 003's test: six samples in this order (root first), then the counts its tests assert.
fn seed_003_profile(ordered: bool) -> Profile {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    if ordered {
        b.set_flags(flags::ORDERED);
    }
    // (name, file, line): f(i) = func{i} in file{i}.rb at line i; fdup = funcX in file1.rb:42.
    let frames: Vec<(&str, &str, u32)> = vec![
        ("func1", "file1.rb", 1),
        ("func2", "file2.rb", 2),
        ("func3", "file3.rb", 3),
        ("funcX", "file1.rb", 42),
    ];
    let ids: Vec<u32> = frames
        .iter()
        .map(|&(n, f, l)| {
            let func = b.func_with(n, Some(f), None, None);
            b.frame_at(func, None, Some(l))
        })
        .collect();
    let (f1, f2, f3, fx) = (ids[0], ids[1], ids[2], ids[3]);
    let samples: [&[u32]; 6] = [
        &[f1],
        &[f1, f2, f3],
        &[f1, f2],
        &[f1, f3],
        &[f1, f2],
        &[f1, fx, f3],
    ];
    for (t, s) in samples.iter().enumerate() {
        let mut stack = NONE;
        for &fr in *s {
            stack = b.stack(stack, fr);
        }
        if ordered {
            b.push_sample(stack, Some(t as i64), &[1]);
        } else {
            b.add_to_stack(stack, &[1]).unwrap();
        }
    }
    b.finish()
}

/// Exclusive cost per function name, and (calls, inclusive) per (caller, callee) name pair.
type Facts = (
    BTreeMap<String, i64>,
    BTreeMap<(String, String), (u64, i64)>,
);

fn facts(g: &Graph) -> Facts {
    let name = |f: u32| g.str(g.funcs[f as usize].name).to_string();
    let mut excl = BTreeMap::new();
    for f in 0..g.funcs.len() as u32 {
        excl.insert(name(f), 0);
    }
    for (i, s) in g.selfs.iter().enumerate() {
        *excl.get_mut(&name(s.func)).unwrap() += g.self_costs.row(i)[0];
    }
    let mut calls = BTreeMap::new();
    for (i, e) in g.edges.iter().enumerate() {
        let c = calls
            .entry((name(e.caller), name(e.callee)))
            .or_insert((0, 0));
        c.0 += e.calls;
        c.1 += g.edge_costs.row(i)[0];
    }
    (excl, calls)
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn emit_seed_003_estimated_calls() {
    let p = seed_003_profile(true);
    let text = emit_text(&p);
    assert_eq!(text, emit_text(&p), "deterministic");
    let (excl, calls) = facts(&graph_of(text.as_bytes()));
    // Seed 003's assertions: 4 locations, their exclusive counts and their calls.
    assert_eq!(excl.len(), 4);
    assert_eq!(excl["func1"], 1);
    assert_eq!(excl["func2"], 2);
    assert_eq!(excl["func3"], 3);
    assert_eq!(excl["funcX"], 0);
    assert_eq!(calls[&pair("func1", "func2")], (2, 3));
    assert_eq!(calls[&pair("func1", "func3")], (1, 1));
    assert_eq!(calls[&pair("func1", "funcX")], (1, 1));
    assert_eq!(calls[&pair("func2", "func3")], (1, 1));
    assert_eq!(calls[&pair("funcX", "func3")], (1, 1));
    assert_eq!(calls.len(), 5);
    assert!(text.contains("desc: Call counts: ESTIMATED"));
    check_readers(
        "seed_003",
        &p,
        annotate_tool().as_deref(),
        gprof2dot_tool().as_deref(),
    );
    settings("seed 003's six ordered samples as callgrind (call counts estimated from the order)")
        .bind(|| insta::assert_snapshot!("callgrind__seed_003", text));

    // The same samples aggregated (no order): same costs, lower-bound counts, said so.
    let text = emit_text(&seed_003_profile(false));
    let (excl2, calls2) = facts(&graph_of(text.as_bytes()));
    assert_eq!(excl2, excl);
    assert_eq!(
        calls2[&pair("func1", "func2")],
        (1, 3),
        "one calling context"
    );
    assert!(text.contains("desc: Call counts: LOWER BOUNDS"));
}

/// Seed 000's worked example: f 0..160 calls g 10..100, which calls h 30..60; a second call of
/// g (160..170) makes an exact count of 2.
fn seed_000_profile(ordered: bool) -> Profile {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), ordered);
    let mut frame = |n: &str| {
        let f = b.func(n);
        b.frame(f)
    };
    let (f, g, h) = (frame("f"), frame("g"), frame("h"));
    t.enter(&mut b, f, &[0]).unwrap();
    t.enter(&mut b, g, &[10]).unwrap();
    t.enter(&mut b, h, &[30]).unwrap();
    t.exit(&mut b, &[60]).unwrap();
    t.exit(&mut b, &[100]).unwrap();
    t.enter(&mut b, g, &[160]).unwrap();
    t.exit(&mut b, &[170]).unwrap();
    t.exit(&mut b, &[180]).unwrap();
    if ordered {
        b.set_flags(flags::ORDERED);
    }
    b.finish()
}

#[test]
fn emit_seed_000_exact_calls() {
    let p = seed_000_profile(true);
    let text = emit_text(&p);
    let (excl, calls) = facts(&graph_of(text.as_bytes()));
    assert_eq!(excl["f"], 10 + 60 + 10);
    assert_eq!(excl["g"], 20 + 40 + 10);
    assert_eq!(excl["h"], 30);
    assert_eq!(calls[&pair("f", "g")], (2, 90 + 10));
    assert_eq!(calls[&pair("g", "h")], (1, 30));
    assert!(text.contains("desc: Call counts: exact"));
    assert!(!text.contains("ESTIMATED") && !text.contains("LOWER BOUNDS"));
    // Ordered or aggregated, exact counts give the same file.
    assert_eq!(text, emit_text(&seed_000_profile(false)));
    settings("seed 000's trace (f calls g twice, g calls h) as callgrind with exact calls")
        .bind(|| insta::assert_snapshot!("callgrind__seed_000", text));
    check_readers(
        "seed_000",
        &p,
        annotate_tool().as_deref(),
        gprof2dot_tool().as_deref(),
    );
}

/// Functions that start stacks and are also called: callgrind_annotate shows each one's whole
/// inclusive cost (it showed 0 for `cksum` and `f` before the emitter's `(root)` caller), and
/// gprof2dot reads the file (the calls into `b` from inside recursion below it, kept, made a
/// cycle of weightless edges it asserted on; so did calls whose samples are all 0).
#[test]
fn readers_see_the_whole_cost_of_root_functions_that_are_also_called() {
    let annotate = annotate_tool();
    let gprof2dot = gprof2dot_tool();
    for (stem, text) in [
        ("root_and_callee", "X;Y 99\nA;X 8\n"),
        (
            "root_through_recursion",
            "cksum;main;cksum 5\ncksum;main 3\ncksum 2\n",
        ),
        ("root_self_call", "f;f 5\nf 2\n"),
        ("root_in_a_cycle", "b;a;d;b 2\na;c 5\nb;c;b 8\n"),
        // Calls of no cost (zero samples) closing a cycle that `(root)` calls into.
        (
            "zero_cost_cycle",
            "a;d 0\nb;c 1\nb;d 0\nc;a 0\nc;b 1\nd 1\nd;b 1\n",
        ),
    ] {
        let p = <Folded as Format>::parse(
            &mut Input::from_slice(text.as_bytes()),
            &Options::default(),
            &mut Context::silent(),
        )
        .expect("folded");
        check_readers(stem, &p, annotate.as_deref(), gprof2dot.as_deref());
    }
}

/// Names that read back alike (a leading blank, a carriage return written as a space, an empty
/// name written `???`) are written as one function: `callgrind_annotate --inclusive=yes` showed
/// `foo` at 200 % for `main; foo;foo` (two functions to profconv, one to the reader, calling
/// itself). Every inclusive cost is now within the total, in the real reader.
#[test]
fn names_that_read_back_alike_stay_within_the_total_in_callgrind_annotate() {
    let Some(tool) = annotate_tool() else {
        return;
    };
    for (k, (x, y)) in [
        (" foo", "foo"),
        ("\u{b}foo", "foo"),
        ("a\rb", "a b"),
        ("", "???"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", x, y], &[3]).unwrap();
        let text = emit_text(&b.finish());
        let file = scratch(&format!("read_back_alike_{k}.callgrind"), text.as_bytes());
        let inclusive = run_annotate(&tool, &file, true, &[]);
        assert_eq!(inclusive.totals.first(), Some(&3), "{x:?}\n{text}");
        let costs = first_col(&inclusive);
        assert!(costs.values().all(|&v| v <= 3), "{x:?}: {costs:?}\n{text}");
        assert_eq!(costs.len(), 2, "main and {y:?}: {costs:?}");
    }
}

/// A root function whose namesake (same file and name) in another object is called: readers
/// know the two as one function (the object only a label), whose inclusive cost is its
/// incoming calls', so the root needs its own call from `(root)`. It had none: `f` showed 8 of
/// 65 in `callgrind_annotate` (and a `-T invert`ed valgrind profile's `__sigsetjmp` 26 of 83).
#[test]
fn a_root_whose_namesake_in_another_object_is_called_keeps_its_inclusive_cost() {
    let Some(tool) = annotate_tool() else {
        return;
    };
    let input = "# callgrind format\nversion: 1\nevents: Ir\n\nob=(1) libA.so\nfl=(1) x.c\nfn=(1) f\n1 57\n\n\
                 ob=(2) libB.so\nfl=(2) y.c\nfn=(2) g\n1 3\ncob=(2)\ncfi=(1)\ncfn=(3) f\ncalls=1 1\n1 8\n\n\
                 ob=(2)\nfl=(1)\nfn=(3)\n1 8\n";
    let (p, _) = parse_callgrind(input.as_bytes());
    let text = emit_text(&p);
    let file = scratch("namesake_in_another_object.callgrind", text.as_bytes());
    let inclusive = first_col(&run_annotate(&tool, &file, true, &["libA.so", "libB.so"]));
    assert_eq!(inclusive.get("x.c:f"), Some(&65), "{inclusive:?}\n{text}");
    assert_eq!(inclusive.get("y.c:g"), Some(&11), "{inclusive:?}\n{text}");
}

#[test]
fn emit_fractional_values_are_scaled() {
    let bytes = read_fixture("folded/inferno/flamegraph/fractional-samples/fractional.txt");
    let p = <Folded as Format>::parse(
        &mut Input::from_slice(&bytes),
        &Options::default(),
        &mut Context::silent(),
    )
    .expect("folded");
    assert!(p.value_types[0].decimals > 0);
    let text = emit_text(&p);
    assert!(text.contains("desc: Scale: event samples is written in units of 10^-"));
    settings("inferno's fractional.txt (decimal counts) as callgrind: integers × 10^decimals, said in the header")
        .bind(|| insta::assert_snapshot!("callgrind__fractional", text));
    // Read back, the long name gives the decimals again: the same values.
    let (back, _) = parse_callgrind(text.as_bytes());
    assert_eq!(back.value_types[0].decimals, p.value_types[0].decimals);
    assert_eq!(
        CallTree::build(&back.view()).unwrap().grand_total(0),
        CallTree::build(&p.view()).unwrap().grand_total(0)
    );
}

// ---------------------------------------------------------------------------------------------
// Parser

/// The objects of a graph (to strip callgrind_annotate's ` [object]` suffixes).
fn objects(g: &Graph) -> Vec<&str> {
    let mut o: Vec<&str> = g
        .funcs
        .iter()
        .filter(|f| f.object != NONE)
        .map(|f| g.str(f.object))
        .collect();
    o.sort();
    o.dedup();
    o
}

/// Self cost per `file:name` of the parsed profile.
fn parsed_self(p: &Profile) -> BTreeMap<String, i64> {
    ir_self(p, 0, |f| func_key(p, f))
}

/// Summary + the first lines of the tree (total order) for a snapshot.
fn tree_summary(rel: &str, p: &Profile, messages: &[String], max_lines: usize) -> String {
    let v = p.view();
    let t = CallTree::build(&v).unwrap();
    let mut s = String::new();
    writeln!(s, "fixture: {rel}").unwrap();
    writeln!(
        s,
        "ir: {} funcs, {} frames, {} stacks, {} samples, {} call nodes, max depth {}",
        v.n_funcs(),
        v.n_frames(),
        v.n_stacks(),
        v.n_samples(),
        t.len(),
        t.depth.iter().max().map_or(0, |d| d + 1)
    )
    .unwrap();
    for i in 0..v.value_types.len() {
        writeln!(
            s,
            "value type {i}: {} ({}), {:?}, {} decimals",
            v.value_type_name(i),
            v.value_type_unit(i),
            v.value_types[i].kind,
            v.value_types[i].decimals
        )
        .unwrap();
    }
    writeln!(s, "grand total: {}", t.grand_total(0)).unwrap();
    for (k, val) in v.meta_key.iter().zip(&v.meta_value) {
        writeln!(s, "meta {}: {}", v.strings.get(*k), v.strings.get(*val)).unwrap();
    }
    writeln!(s, "messages: {}", messages.len()).unwrap();
    for m in messages {
        writeln!(s, "  {m}").unwrap();
    }
    let text = tree_text(p, TreeOrder::Total);
    let n = text.lines().count();
    writeln!(
        s,
        "== tree: {} of {n} lines, total order ==",
        n.min(max_lines)
    )
    .unwrap();
    for l in text.lines().take(max_lines) {
        writeln!(s, "{l}").unwrap();
    }
    s
}

/// Parses a fixture and checks its self costs against callgrind_annotate's stored output (and
/// a live run), directly and through folded stacks.
fn check_real(stem: &str, rel: &str, annotate_rel: &str, snapshot_lines: usize) -> Profile {
    let bytes = read_fixture(rel);
    let g = graph_of(&bytes);
    let objs = objects(&g);
    let (p, messages) = parse_callgrind(&bytes);
    p.view().validate().expect("valid profile");
    // Streaming gives the same tree.
    let mut reader: &[u8] = &bytes;
    let streamed = <Callgrind as Format>::parse(
        &mut Input::from_reader(&mut reader),
        &Options::default(),
        &mut Context::silent(),
    )
    .unwrap();
    assert_eq!(
        tree_text(&p, TreeOrder::FirstSeen),
        tree_text(&streamed, TreeOrder::FirstSeen)
    );

    let stored = parse_annotate(&String::from_utf8_lossy(&read_fixture(annotate_rel)), &objs);
    let want = first_col(&stored);
    assert!(!want.is_empty());
    let total = CallTree::build(&p.view()).unwrap().grand_total(0);
    assert_eq!(total, stored.totals[0], "{rel}: total");
    assert_eq!(
        parsed_self(&p),
        want,
        "{rel}: self cost per function vs callgrind_annotate"
    );
    if let Some(tool) = annotate_tool() {
        let live = run_annotate(&tool, &fixtures_dir().join(rel), false, &objs);
        assert_eq!(first_col(&live), want, "{rel}: live callgrind_annotate");
    }

    // Through folded stacks: emit, read back, self per name.
    let mut folded = Vec::new();
    {
        let mut out = Output::from_writer(&mut folded);
        <Folded as Format>::emit(
            &p.view(),
            &mut out,
            &Options::default(),
            &mut Context::silent(),
        )
        .unwrap();
        out.flush().unwrap();
    }
    let back = <Folded as Format>::parse(
        &mut Input::from_slice(&folded),
        &Options::default(),
        &mut Context::silent(),
    )
    .unwrap();
    let mut by_name: BTreeMap<String, i64> = BTreeMap::new();
    for (k, v) in &want {
        let name = k.split_once(':').map_or(k.as_str(), |(_, n)| n);
        *by_name.entry(name.to_string()).or_insert(0) += v;
    }
    let folded_self = ir_self(&back, 0, |f| back.view().func_name_str(f).to_string());
    assert_eq!(
        folded_self, by_name,
        "{rel}: folded self cost per name vs callgrind_annotate"
    );

    // Written back as callgrind, callgrind_annotate still reports the same self costs.
    let text = emit_text(&p);
    let again = graph_of(text.as_bytes());
    assert_eq!(again.self_total()[0], total);
    if let Some(tool) = annotate_tool() {
        let file = scratch(&format!("{stem}.roundtrip.callgrind"), text.as_bytes());
        let a = run_annotate(&tool, &file, false, &objects(&again));
        assert_eq!(a.totals[0], total);
        assert_eq!(
            first_col(&a),
            want,
            "{rel}: callgrind_annotate on profconv's rewrite"
        );
    }

    let summary = tree_summary(rel, &p, &messages, snapshot_lines);
    settings(&format!(
        "{rel}: parsed into a call tree (costs apportioned over callers)"
    ))
    .bind(|| insta::assert_snapshot!(format!("callgrind__{stem}_tree"), summary));
    p
}

#[test]
fn parse_real_line_positions() {
    check_real(
        "real_demo",
        "callgrind/real/demo.callgrind.out",
        "callgrind/real/demo.annotate-self.txt",
        120,
    );
}

#[test]
fn parse_real_instr_positions() {
    let instr = check_real(
        "real_demo_instr",
        "callgrind/real/demo-instr.callgrind.out",
        "callgrind/real/demo-instr.annotate-self.txt",
        40,
    );
    // The same run with line positions gives the same self cost per function.
    let (line, _) = parse_callgrind(&read_fixture("callgrind/real/demo.callgrind.out"));
    assert_eq!(parsed_self(&instr), parsed_self(&line));
    assert!(
        instr
            .frames
            .address
            .iter()
            .any(|&a| a != profconv_ir::NO_ADDRESS)
    );
}

/// The call tree is apportioned from the call edges, so a function that has one call node in it
/// takes all of its callers' costs: that node's total is the function's inclusive cost as
/// callgrind_annotate computes it from the file (stored with the fixtures), whatever the file's
/// position granularity. Functions that call themselves are left out (callgrind_annotate adds
/// up every recursion level; the tree shows them at the outermost one). Splitting each cost item
/// over the nodes on its own, as before, rounded every small item towards the last callers:
/// `handle_preload_list` totalled 3569 and 4601 in the two files instead of 2748.
#[test]
fn one_node_functions_total_their_callgrind_annotate_inclusive_cost() {
    let handle_preload_list = [("handle_preload_list", 2748)];
    for (rel, annotated, at_least, totals) in [
        (
            "callgrind/real/demo.callgrind.out",
            "callgrind/real/demo.annotate-inclusive.txt",
            20,
            &handle_preload_list[..],
        ),
        (
            "callgrind/real/demo-instr.callgrind.out",
            "callgrind/real/demo.annotate-inclusive.txt",
            20,
            &handle_preload_list[..],
        ),
        // A threaded program: the threads' work, which callgrind charges to `clone`, is a root
        // node of `clone`, not under `main` (whose total was 24.7 M Ir instead of 134 k).
        (
            "callgrind/real/threads.callgrind.out",
            "callgrind/real/threads.annotate-inclusive.txt",
            300,
            &[("main", 133_971)][..],
        ),
        // `a` and `b` call each other, entered 100 times through `viaA` and 300 times through
        // `viaB`: taken as one unit, the cycle's cost is split by the entries' costs (before,
        // by the recursion-inflated costs of the calls inside it: viaA 350 859, viaB 42 341).
        (
            "callgrind/real/mutual.callgrind.out",
            "callgrind/real/mutual.annotate-inclusive.txt",
            15,
            &[("viaA", 98_300), ("viaB", 294_900)][..],
        ),
    ] {
        let annotated = read_fixture(annotated);
        let bytes = read_fixture(rel);
        let g = graph_of(&bytes);
        let want = first_col(&parse_annotate(
            &String::from_utf8_lossy(&annotated),
            &objects(&g),
        ));
        let recursive: BTreeSet<String> = g
            .edges
            .iter()
            .filter(|e| e.caller == e.callee)
            .map(|e| {
                let f = &g.funcs[e.caller as usize];
                annotate_key(Some(g.str(f.file)), g.str(f.name))
            })
            .collect();
        let (p, _) = parse_callgrind(&bytes);
        let t = CallTree::build(&p.view()).unwrap();
        let mut nodes: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for n in 0..t.len() {
            nodes
                .entry(func_key(&p, t.func[n]))
                .or_default()
                .push(t.total_values[0][n]);
        }
        let mut checked = 0;
        for (key, totals) in &nodes {
            if let ([total], Some(&inclusive)) = (totals.as_slice(), want.get(key))
                && !recursive.contains(key)
            {
                assert_eq!(*total, inclusive, "{rel}: {key}");
                checked += 1;
            }
        }
        assert!(checked >= at_least, "{rel}: {checked} functions checked");
        for &(name, total) in totals {
            assert_eq!(nodes[&func_key_of(&p, name)], [total], "{rel}: {name}");
        }
    }
}

/// `bytes` read with the reader option `positions=VALUE`, and its messages.
fn parse_callgrind_at(bytes: &[u8], positions: &str) -> (Profile, Vec<String>) {
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    let mut cx = Context::with_sink(&mut sink);
    let options = Options::new(vec![("positions".into(), Some(positions.into()))]);
    let p = <Callgrind as Format>::parse(&mut Input::from_slice(bytes), &options, &mut cx)
        .expect("parse");
    (p, messages)
}

/// Self cost (first column) per (`file:function`, line) of a callgrind file, as
/// callgrind_annotate's per-line annotation adds it up (instructions of one line together).
fn self_by_line(g: &Graph) -> BTreeMap<(String, u32), i64> {
    let mut m = BTreeMap::new();
    for (i, s) in g.selfs.iter().enumerate() {
        *m.entry((g.annotate_name(s.func), s.line)).or_insert(0) += g.self_costs.row(i)[0];
    }
    m.retain(|_, v| *v != 0);
    m
}

/// A file written with `--dump-instr=yes` makes a stack per instruction of each call-tree
/// node's function (a 10.7 MB file of a gcc compile took 600 MB for a flame graph, which draws
/// no positions). Read with `-O positions=line`, it is the same run as recorded without
/// `--dump-instr=yes` (valgrind wrote both fixtures from one program): the same call tree and
/// costs, with fewer stacks and no addresses; the callgrind written from it still gives the
/// self cost of every line.
#[test]
fn an_instr_file_read_by_line_is_the_run_recorded_by_line_with_fewer_stacks() {
    let instr_bytes = read_fixture("callgrind/real/demo-instr.callgrind.out");
    let line_bytes = read_fixture("callgrind/real/demo.callgrind.out");
    let (instr, _) = parse_callgrind(&instr_bytes);
    let (by_line, messages) = parse_callgrind_at(&instr_bytes, "line");
    assert!(messages.is_empty(), "{messages:?}");
    let (recorded, _) = parse_callgrind(&line_bytes);
    for order in [TreeOrder::Total, TreeOrder::FirstSeen] {
        assert_eq!(tree_text(&by_line, order), tree_text(&recorded, order));
    }
    assert_eq!(parsed_self(&by_line), parsed_self(&instr));
    let (n_instr, n_line) = (instr.stacks.prefix.len(), by_line.stacks.prefix.len());
    assert!(
        n_line * 2 < n_instr,
        "{n_line} stacks by line, {n_instr} by instruction"
    );
    assert!(
        by_line
            .frames
            .address
            .iter()
            .all(|&a| a == profconv_ir::NO_ADDRESS)
    );
    // Written back: `positions: line`, the self cost of every line the instructions' sum.
    let text = emit_text(&by_line);
    assert!(text.contains("\npositions: line\n"), "{text}");
    assert_eq!(
        self_by_line(&graph_of(text.as_bytes())),
        self_by_line(&graph_of(&instr_bytes))
    );
    if let Some(tool) = annotate_tool() {
        let file = scratch("demo-instr.by-line.callgrind", text.as_bytes());
        let g = graph_of(&instr_bytes);
        let a = run_annotate(&tool, &file, false, &objects(&g));
        let want = parse_annotate(
            &String::from_utf8_lossy(&read_fixture("callgrind/real/demo-instr.annotate-self.txt")),
            &objects(&g),
        );
        assert_eq!(a.totals, want.totals);
        assert_eq!(first_col(&a), first_col(&want));
    }
}

/// `-O positions=function`: one frame per call-tree node (no address, no line), every
/// function's self cost and the total as the file gives them, fewer stacks still; each
/// function path of the tree is one stack. The option takes only its three values.
#[test]
fn an_instr_file_read_by_function_has_one_frame_per_node_and_every_cost() {
    let bytes = read_fixture("callgrind/real/demo-instr.callgrind.out");
    let (instr, _) = parse_callgrind(&bytes);
    let (by_line, _) = parse_callgrind_at(&bytes, "line");
    let (by_func, messages) = parse_callgrind_at(&bytes, " function ");
    assert!(messages.is_empty(), "{messages:?}");
    assert_eq!(parsed_self(&by_func), parsed_self(&instr));
    let total = |p: &Profile| p.samples.values[0].iter().sum::<i64>();
    assert_eq!(total(&by_func), total(&instr));
    assert!(
        by_func
            .frames
            .address
            .iter()
            .all(|&a| a == profconv_ir::NO_ADDRESS)
            && by_func.frames.line.iter().all(|&l| l == NONE)
    );
    let stacks = by_func.stacks.prefix.len();
    assert!(stacks < by_line.stacks.prefix.len());
    assert_eq!(stacks, CallTree::build(&by_func.view()).unwrap().len());
    // The default is the file's positions.
    let (given, _) = parse_callgrind_at(&bytes, "instr");
    assert_eq!(emit_text(&given), emit_text(&instr));
    let err = <Callgrind as Format>::check_parse_options(&Options::new(vec![(
        "positions".into(),
        Some("address".into()),
    )]))
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("option positions=address: expected `instr`, `line` or `function`"),
        "{err}"
    );
}

/// A dump taken mid-run (`--dump-every-bb`, `callgrind_control -d`) has a `calls=0` line for
/// each call still active, with its cost so far: read as calls (as the format and KCachegrind
/// read them), the profile's total is the file's `totals:` line. Read as self cost (what
/// callgrind_annotate does), it was five times that, with five roots.
#[test]
fn a_mid_run_dump_totals_its_totals_line() {
    let (p, messages) = parse_callgrind(&read_fixture("callgrind/real/loop-dump-3.callgrind.out"));
    let t = CallTree::build(&p.view()).unwrap();
    assert_eq!(t.grand_total(0), 1_901_595);
    assert_eq!(t.roots.len(), 1, "{}", tree_text(&p, TreeOrder::FirstSeen));
    assert!(
        !messages
            .iter()
            .any(|m| m.contains("totals:") || m.contains("summary:")),
        "{messages:?}"
    );
    let main = func_key_of(&p, "main");
    let n = (0..t.len())
        .find(|&n| func_key(&p, t.func[n]) == main)
        .unwrap();
    assert_eq!(t.total_values[0][n], 1_901_595);
}

/// The `file:name` key of the function named `name`.
fn func_key_of(p: &Profile, name: &str) -> String {
    let v = p.view();
    let f = (0..v.func_name.len() as u32)
        .find(|&f| v.func_name_str(f) == name)
        .unwrap_or_else(|| panic!("no function {name}"));
    func_key(p, f)
}

#[test]
fn parse_handmade_tiny() {
    let bytes = read_fixture("callgrind/handmade/tiny.callgrind");
    let (p, messages) = parse_callgrind(&bytes);
    assert!(messages.is_empty(), "{messages:?}");
    let stored = parse_annotate(
        &String::from_utf8_lossy(&read_fixture("callgrind/handmade/tiny.annotate.txt")),
        &[],
    );
    assert_eq!(parsed_self(&p), first_col(&stored));
    let inclusive = parse_annotate(
        &String::from_utf8_lossy(&read_fixture(
            "callgrind/handmade/tiny.annotate-inclusive.txt",
        )),
        &[],
    );
    assert_eq!(
        ir_inclusive(&p, 0, |f| identity(&p, f), |f| func_key(&p, f)),
        first_col(&inclusive)
    );
    let text = format!(
        "{}\n== emitted again ==\n{}",
        tree_text(&p, TreeOrder::FirstSeen),
        emit_text(&p)
    );
    settings("the hand-made tiny.callgrind: main self 5 calls parse (3x, 60) and hash_combine (35); parse calls hash_combine (4x, 20)")
        .bind(|| insta::assert_snapshot!("callgrind__handmade_tiny", text));
}

#[test]
fn parse_spec_example() {
    // The format specification's extended example (3.1.4), with name compression (3.1.5).
    let text = "# callgrind format\nevents: Instructions\n\nfl=(1) file1.c\nfn=(1) main\n16 20\ncfn=(2) func1\ncalls=1 50\n16 400\ncfi=(2) file2.c\ncfn=(3) func2\ncalls=3 20\n16 400\n\nfn=(2)\n51 100\ncfi=(2)\ncfn=(3)\ncalls=2 20\n51 300\n\nfl=(2)\nfn=(3)\n20 700\n";
    let (p, _) = parse_callgrind(text.as_bytes());
    // func2's 700 splits 400:300 between main and func1, as the calls' inclusive costs do.
    insta::assert_snapshot!(tree_text(&p, TreeOrder::FirstSeen), @r"
    main self=20 total=820 calls=0
      func1 self=100 total=400 calls=1
        func2 self=300 total=300 calls=2
      func2 self=400 total=400 calls=3
    ");
}

#[test]
fn bad_input_gives_errors_with_lines() {
    let cases: &[(&str, &str)] = &[
        (
            "unknown line kind",
            "events: Ir\nfn=main\n5 1\nhello world\n",
        ),
        ("unknown position line", "events: Ir\nfn=main\nxfn=foo\n"),
        (
            "calls= followed by another line",
            "events: Ir\nfn=main\ncfn=f\ncalls=2 10\nfn=g\n5 1\n",
        ),
        (
            "calls= at the end",
            "events: Ir\nfn=main\ncfn=f\ncalls=2 10\n",
        ),
        (
            "calls= without cfn=",
            "events: Ir\nfn=main\ncalls=2 10\n5 1\n",
        ),
        (
            "undefined compressed function",
            "events: Ir\nfl=(1) a.c\nfn=(7)\n",
        ),
        ("undefined compressed file", "events: Ir\ncfi=(2)\n"),
        ("bad cost", "events: Ir\nfn=main\n5 1O\n"),
        ("bad subposition", "events: Ir\nfn=main\nx5 1\n"),
        (
            "cost too large",
            "events: Ir\nfn=main\n5 9223372036854775808\n",
        ),
        ("negative cost", "events: Ir\nfn=main\n5 -3\n"),
        ("too many costs", "events: Ir Dr\nfn=main\n5 1 2 3\n"),
        (
            "relative line below zero",
            "events: Ir\nfn=main\n5 1\n-9 1\n",
        ),
        (
            "missing subposition",
            "positions: instr line\nevents: Ir\nfn=main\n0x10\n",
        ),
        (
            "bad calls count",
            "events: Ir\nfn=main\ncfn=f\ncalls=x 1\n5 1\n",
        ),
        ("cost line before events", "fn=main\n5 1\nevents: Ir\n"),
        ("cost line before fn", "events: Ir\n5 1\n"),
        ("bad positions", "positions: column\nevents: Ir\n"),
        ("version 2", "version: 2\nevents: Ir\n"),
        ("no events line", "# callgrind format\nfn=main\n"),
        ("empty input", ""),
        (
            "sum overflow",
            "events: Ir\nfn=main\n5 9223372036854775807\n5 1\n",
        ),
    ];
    let mut s = String::new();
    for (what, input) in cases {
        let e = parse_graph(
            &mut Input::from_slice(input.as_bytes()),
            &mut Context::silent(),
        )
        .expect_err(what);
        let mut r: &[u8] = input.as_bytes();
        let streamed =
            parse_graph(&mut Input::from_reader(&mut r), &mut Context::silent()).unwrap_err();
        assert_eq!(e, streamed, "{what}: streaming differs");
        assert!(e.line.is_some(), "{what}: no line in {e}");
        let via_trait: PluginError = <Callgrind as Format>::parse(
            &mut Input::from_slice(input.as_bytes()),
            &Options::default(),
            &mut Context::silent(),
        )
        .unwrap_err();
        assert_eq!(e, via_trait);
        writeln!(
            s,
            "{what}\n  input: {input:?}\n  error: {e}\n  status: {}, byte offset: {:?}",
            e.status.name(),
            e.byte_offset
        )
        .unwrap();
    }
    settings("bad callgrind input: each error names its line and column")
        .bind(|| insta::assert_snapshot!("callgrind__errors", s));
}

#[test]
fn hostile_input_never_panics() {
    // Truncations and byte flips of a real file: errors or profiles, never a panic.
    let bytes = read_fixture("callgrind/handmade/tiny.callgrind");
    for cut in 0..bytes.len() {
        let _ = <Callgrind as Format>::parse(
            &mut Input::from_slice(&bytes[..cut]),
            &Options::default(),
            &mut Context::silent(),
        );
    }
    for i in 0..bytes.len() {
        for flip in [b'(', b'+', b'-', b'*', b'=', b'\n', b'x', b'9'] {
            let mut b = bytes.clone();
            b[i] = flip;
            let _ = <Callgrind as Format>::parse(
                &mut Input::from_slice(&b),
                &Options::default(),
                &mut Context::silent(),
            );
        }
    }
}

#[test]
fn build_limits_keep_self_costs() {
    let bytes = read_fixture("callgrind/real/demo.callgrind.out");
    let g = graph_of(&bytes);
    let full = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    let small = build_profile(
        &g,
        &BuildOptions {
            max_depth: 4,
            max_nodes: 50,
            ..BuildOptions::default()
        },
        &mut Context::with_sink(&mut sink),
    )
    .unwrap();
    assert_eq!(parsed_self(&small), parsed_self(&full));
    assert!(
        CallTree::build(&small.view())
            .unwrap()
            .depth
            .iter()
            .all(|&d| d < 4)
    );
    assert!(
        messages.iter().any(|m| m.contains("max-depth")),
        "{messages:?}"
    );
}
