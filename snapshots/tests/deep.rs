//! Mercury Deep.data through the IR. The fixtures under `fixtures/deep/` are the generated files
//! of the shared fixture store (with the call trees their README states) and a real profile,
//! `real/mandelbrot.Deep.data` (with the facts its README states).
//!
//! For every fixture the test asserts, independently of the snapshots:
//!
//! * the proc-dynamic tree (one node per proc-dynamic, spec §12.3) has exactly the README's
//!   nodes in preorder: names, calls, recursive calls, self and total quanta, own allocations
//!   and words;
//! * nothing is counted twice or lost: the selfs of all nodes add up to the sums over all
//!   call-site-dynamics and to the header's user quanta and call sequences;
//! * the IR profile (`Format::parse`, as the host runs it) gives the same call tree, except that
//!   the IR combines sibling nodes of one function (only `higher_order` has such siblings among
//!   the generated files; its merged node is checked), and with `-O call-sites` it keeps one call
//!   node per proc-dynamic with the same values;
//! * the file cut at every offset is an error naming a byte offset, never a panic.
//!
//! Snapshots: `deep__<fixture>_tree` (header, metadata, the proc-dynamic tree and the IR tree
//! with all values), `deep__hostile_*` (error messages of damaged inputs) and
//! `deep__truncated` (errors of files cut short).

use profconv_deep::{
    Deep, DeepFile, NameStyle, PdTree, ProcNames, build_tree, m, proc_name, read_file,
    render_pd_tree, tree_totals,
};
use profconv_ir::{CallTree, Profile, TreeOrder, TreeTextOptions, render_tree};
use profconv_plugin::{Context, Format, Input, Options, PluginError};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn read_fixture(rel: &str) -> Vec<u8> {
    let path = fixtures_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
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

/// Parses as the host does (`Format::parse` on the whole input), collecting warnings.
fn parse(
    bytes: &[u8],
    options: &[(&str, Option<&str>)],
) -> (Result<Profile, PluginError>, Vec<String>) {
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    let options = Options::new(
        options
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect(),
    );
    let result = <Deep as Format>::parse(
        &mut Input::from_slice(bytes),
        &options,
        &mut Context::with_sink(&mut sink),
    );
    (result, messages)
}

/// One expected node of a README tree, in preorder.
struct Node {
    depth: usize,
    name: &'static str,
    calls: i64,
    rec: i64,
    self_q: i64,
    total_q: i64,
    allocs: i64,
    words: i64,
}

/// `depth, name, calls, rec, self quanta, total quanta, own allocs, own words`.
macro_rules! tree {
    ($(($d:expr, $name:expr, $c:expr, $r:expr, $sq:expr, $tq:expr, $a:expr, $w:expr)),* $(,)?) => {
        vec![$(Node { depth: $d, name: $name, calls: $c, rec: $r, self_q: $sq, total_q: $tq, allocs: $a, words: $w }),*]
    };
}

const ROOT: &str = "Mercury runtime.Mercury runtime/0";

fn depths(t: &PdTree) -> Vec<usize> {
    let mut d = vec![0usize; t.len()];
    for n in 1..t.len() {
        d[n] = d[t.parent[n] as usize] + 1;
    }
    d
}

/// The proc-dynamic tree must be exactly `expected`.
fn assert_pd_tree(rel: &str, f: &DeepFile<'_>, t: &PdTree, expected: &[Node]) {
    let costs = t.costs(f).expect("costs");
    let totals = tree_totals(f, &costs, t).expect("totals");
    let depth = depths(t);
    assert_eq!(t.len(), expected.len(), "{rel}: number of nodes");
    let mut name = String::new();
    let names = ProcNames::new(f, NameStyle::Short).unwrap();
    for (n, e) in expected.iter().enumerate() {
        let ps = f.pd[t.pd[n] as usize].ps;
        names.write(ps, &f.proc_head(ps).unwrap().label, &mut name);
        let got = (
            depth[n],
            name.as_str(),
            costs[n].calls,
            costs[n].recursive_calls,
            costs[n].own[m::QUANTA],
            totals[n][m::QUANTA],
            costs[n].own[m::ALLOCS],
            costs[n].own[m::WORDS],
        );
        let want = (
            e.depth, e.name, e.calls, e.rec, e.self_q, e.total_q, e.allocs, e.words,
        );
        assert_eq!(
            got, want,
            "{rel}: node {n} (depth, name, calls, rec, self q, total q, allocs, words)"
        );
    }
}

/// Selfs add up to the sums over all call-site-dynamics and to the header's totals.
fn assert_no_double_counting(rel: &str, f: &DeepFile<'_>, t: &PdTree) {
    let costs = t.costs(f).expect("costs");
    for k in [
        m::QUANTA,
        m::CALL_SEQS,
        m::ALLOCS,
        m::WORDS,
        m::EXITS,
        m::FAILS,
    ] {
        let by_nodes: i64 = costs.iter().map(|c| c.own[k]).sum();
        let by_csds: i64 = (1..f.csd.len() as u32)
            .map(|c| f.measures(c).expect("measures").values[k])
            .sum();
        assert_eq!(by_nodes, by_csds, "{rel}: measurement {k}");
    }
    let q: i64 = costs.iter().map(|c| c.own[m::QUANTA]).sum();
    let s: i64 = costs.iter().map(|c| c.own[m::CALL_SEQS]).sum();
    assert_eq!(q as u64, f.header.user_quanta, "{rel}: user quanta");
    assert_eq!(s as u64, f.header.call_seqs, "{rel}: call sequences");
    // Every call is a tree-edge call or a recursive one.
    let calls: i64 = costs.iter().map(|c| c.calls + c.recursive_calls).sum();
    let ports: i64 = costs
        .iter()
        .map(|c| c.own[m::EXITS] + c.own[m::FAILS] + c.own[m::EXCPS] - c.own[m::REDOS])
        .sum();
    assert_eq!(calls, ports, "{rel}: calls = exits + fails + excps - redos");
}

fn value(p: &Profile, name: &str) -> usize {
    p.view()
        .value_type_index(name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

/// The IR call tree's nodes in first-seen order as (depth, name, calls, rec, self q, total q).
fn ir_nodes(p: &Profile) -> Vec<(u32, String, i64, i64, i64, i64)> {
    let v = p.view();
    let tree = CallTree::build(&v).expect("call tree");
    let (q, c, r) = (
        value(p, "quanta"),
        value(p, "calls"),
        value(p, "recursive_calls"),
    );
    // First-seen order is node order: parents before children, preorder by construction.
    (0..tree.len())
        .map(|n| {
            (
                tree.depth[n],
                v.func_name_str(tree.func[n]).to_string(),
                tree.self_values[c][n],
                tree.self_values[r][n],
                tree.self_values[q][n],
                tree.total_values[q][n],
            )
        })
        .collect()
}

/// The proc-dynamic tree's nodes in the same shape.
fn pd_nodes(f: &DeepFile<'_>, t: &PdTree) -> Vec<(u32, String, i64, i64, i64, i64)> {
    let costs = t.costs(f).expect("costs");
    let totals = tree_totals(f, &costs, t).expect("totals");
    let depth = depths(t);
    let mut name = String::new();
    let names = ProcNames::new(f, NameStyle::Short).unwrap();
    (0..t.len())
        .map(|n| {
            let ps = f.pd[t.pd[n] as usize].ps;
            names.write(ps, &f.proc_head(ps).unwrap().label, &mut name);
            (
                depth[n] as u32,
                name.clone(),
                costs[n].calls,
                costs[n].recursive_calls,
                costs[n].own[m::QUANTA],
                totals[n][m::QUANTA],
            )
        })
        .collect()
}

fn all_values_tree(p: &Profile) -> String {
    let tree = CallTree::build(&p.view()).expect("call tree");
    render_tree(
        &p.view(),
        &tree,
        &TreeTextOptions {
            all_values: true,
            order: TreeOrder::FirstSeen,
            ..Default::default()
        },
    )
    .expect("render")
}

/// Every cut of `bytes` short of its end is an error with a byte offset within the cut.
fn assert_truncations_fail(rel: &str, bytes: &[u8], cuts: impl Iterator<Item = usize>) {
    for cut in cuts {
        let (r, _) = parse(&bytes[..cut], &[]);
        match r {
            Ok(_) => panic!("{rel} cut at {cut}: parsed"),
            Err(e) => {
                let o = e
                    .byte_offset
                    .unwrap_or_else(|| panic!("{rel} cut at {cut}: no offset: {e}"));
                assert!(o <= cut as u64, "{rel} cut at {cut}: offset {o}: {e}");
            }
        }
    }
}

/// All checks on one fixture, then its snapshot.
fn check_fixture(stem: &str, rel: &str, expected: Option<&[Node]>, merged: bool) {
    let path = fixtures_dir().join(rel);
    let bytes = read_fixture(rel);
    let f = read_file(&bytes).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let t = build_tree(&f).expect("tree");
    if let Some(expected) = expected {
        assert_pd_tree(rel, &f, &t, expected);
    }
    assert_no_double_counting(rel, &f, &t);

    let (profile, messages) = parse(&bytes, &[]);
    let profile = profile.unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(messages.is_empty(), "{rel}: {messages:?}");
    profile.view().validate().expect("a valid IR profile");
    let ir = ir_nodes(&profile);
    let pd = pd_nodes(&f, &t);
    if !merged {
        assert_eq!(ir, pd, "{rel}: the IR call tree is the proc-dynamic tree");
    }
    // With -O call-sites, one call node per proc-dynamic and the same values.
    let (by_site, _) = parse(&bytes, &[("call-sites", None)]);
    let by_site = by_site.expect("parse -O call-sites");
    let by_site_nodes = ir_nodes(&by_site);
    assert_eq!(
        by_site_nodes.len(),
        t.len(),
        "{rel}: -O call-sites keeps every proc-dynamic"
    );
    for (a, b) in by_site_nodes.iter().zip(&pd) {
        assert!(
            a.1.starts_with(&b.1),
            "{rel}: {} is not named after {}",
            a.1,
            b.1
        );
        assert_eq!(
            (a.0, a.2, a.3, a.4, a.5),
            (b.0, b.2, b.3, b.4, b.5),
            "{rel}: {}",
            a.1
        );
    }
    // The root's totals are the header's.
    let tree = CallTree::build(&profile.view()).expect("call tree");
    assert_eq!(tree.roots.len(), 1);
    let root = tree.roots[0] as usize;
    assert_eq!(
        tree.total_values[value(&profile, "quanta")][root] as u64,
        f.header.user_quanta
    );
    assert_eq!(
        tree.total_values[value(&profile, "call_seqs")][root] as u64,
        f.header.call_seqs
    );

    let h = &f.header;
    let v = profile.view();
    let mut text = String::new();
    let w = &mut text;
    writeln!(w, "fixture: {rel} ({} bytes)", bytes.len()).unwrap();
    writeln!(
        w,
        "header: version {}, program {:?}, flags 0x{:x}, counts csd {} / css {} / pd {} / ps {}, ticks/s {}, quanta instrumentation {} user {}, call seqs {}, root pd {}",
        h.version,
        String::from_utf8_lossy(h.program),
        h.flags,
        h.n_csd,
        h.n_css,
        h.n_pd,
        h.n_ps,
        h.ticks_per_sec,
        h.instrument_quanta,
        h.user_quanta,
        h.call_seqs,
        h.root_pd
    )
    .unwrap();
    writeln!(
        w,
        "coverage: {} points in proc-statics, {} counts in proc-dynamics; end token: {:?}; links that are not tree edges: {}",
        f.coverage_points, f.coverage_counts, f.end_token_at, t.link_csds.len()
    )
    .unwrap();
    writeln!(
        w,
        "ir: {} funcs, {} frames, {} stacks, {} samples, {} call nodes ({} with -O call-sites)",
        v.n_funcs(),
        v.n_frames(),
        v.n_stacks(),
        v.n_samples(),
        tree.len(),
        by_site_nodes.len()
    )
    .unwrap();
    for i in 0..v.value_types.len() {
        writeln!(
            w,
            "value type {i}: {} ({}), {:?}",
            v.value_type_name(i),
            v.value_type_unit(i),
            v.value_types[i].kind
        )
        .unwrap();
    }
    for (k, val) in v.meta_key.iter().zip(&v.meta_value) {
        writeln!(w, "meta {}={}", v.strings.get(*k), v.strings.get(*val)).unwrap();
    }
    writeln!(
        w,
        "== proc-dynamic tree (preorder = file order; q, call_seqs, allocs, words as self/total) =="
    )
    .unwrap();
    w.push_str(&render_pd_tree(&f, &t, NameStyle::Short).expect("render"));
    writeln!(w, "== IR call tree, all values, first-seen order ==").unwrap();
    w.push_str(&all_values_tree(&profile));
    settings(
        Some(&path),
        &format!("Deep.data fixture {rel}: header, proc-dynamic tree, IR tree"),
    )
    .bind(|| insta::assert_snapshot!(format!("deep__{stem}_tree"), text));
}

#[test]
fn tiny_tree() {
    let expected = tree![
        (0, ROOT, 0, 0, 0, 17, 0, 0),
        (1, "tiny.main/2", 1, 0, 2, 17, 1, 4),
        (2, "tiny.foo/2", 3, 0, 6, 15, 0, 0),
        (3, "tiny.bar/1", 3, 0, 9, 9, 3, 12),
        (2, "tiny.baz/2", 1, 0, 0, 0, 0, 0),
    ];
    check_fixture("tiny_tree", "deep/tiny_tree.data", Some(&expected), false);
    // The semidet bar: exits 2, fails 1; tiny.unused/1 has a proc-static but no node.
    let bytes = read_fixture("deep/tiny_tree.data");
    let f = read_file(&bytes).unwrap();
    let t = build_tree(&f).unwrap();
    let costs = t.costs(&f).unwrap();
    assert_eq!((costs[3].own[m::EXITS], costs[3].own[m::FAILS]), (2, 1));
    assert_eq!(f.header.n_ps, 6);
    assert_eq!(
        (f.header.instrument_quanta, f.header.ticks_per_sec),
        (4, 100)
    );
}

#[test]
fn recursion() {
    let expected = tree![
        (0, ROOT, 0, 0, 0, 21, 0, 0),
        (1, "rec.main/2", 1, 0, 2, 21, 0, 0),
        (2, "rec.foo/1", 3, 0, 6, 15, 0, 0),
        (3, "rec.bar/1", 3, 0, 9, 9, 0, 0),
        (2, "rec.fact/2", 1, 3, 4, 4, 0, 0),
    ];
    check_fixture("recursion", "deep/recursion.data", Some(&expected), false);
}

#[test]
fn higher_order() {
    let expected = tree![
        (0, ROOT, 0, 0, 0, 19, 0, 0),
        (1, "ho.main/2", 1, 0, 1, 19, 0, 0),
        (2, "ho.apply_all/3", 1, 7, 2, 10, 0, 0),
        (3, "ho.negate/2", 1, 0, 1, 1, 0, 0),
        (3, "ho.square/2", 2, 0, 3, 3, 0, 0),
        (3, "ho.double/2", 4, 0, 4, 4, 0, 0),
        (2, "ho.apply_all/3", 1, 2, 0, 5, 0, 0),
        (3, "ho.negate/2", 2, 0, 5, 5, 0, 0),
        (2, "ho.print_all/3", 1, 3, 0, 3, 2, 6),
        (
            3,
            "ho.ClassMethod_for_ho__showable____float__arity0______ho__show_3/3",
            1,
            0,
            2,
            2,
            1,
            3
        ),
        (
            3,
            "ho.ClassMethod_for_ho__showable____int__arity0______ho__show_3/3",
            2,
            0,
            1,
            1,
            2,
            6
        ),
        (2, "__Unify__ for ho.point/0", 2, 0, 0, 0, 0, 0),
    ];
    check_fixture(
        "higher_order",
        "deep/higher_order.data",
        Some(&expected),
        true,
    );
    // The IR combines main's two apply_all/3 children (one function, two call sites) into one
    // call node, and their negate/2 children likewise; values add up.
    let bytes = read_fixture("deep/higher_order.data");
    let (p, _) = parse(&bytes, &[]);
    let ir = ir_nodes(&p.unwrap());
    let row = |d: u32, n: &str, c, r, s, t| (d, n.to_string(), c, r, s, t);
    assert_eq!(
        ir,
        vec![
            row(0, ROOT, 0, 0, 0, 19),
            row(1, "ho.main/2", 1, 0, 1, 19),
            row(2, "ho.apply_all/3", 2, 9, 2, 15),
            row(3, "ho.negate/2", 3, 0, 6, 6),
            row(3, "ho.square/2", 2, 0, 3, 3),
            row(3, "ho.double/2", 4, 0, 4, 4),
            row(2, "ho.print_all/3", 1, 3, 0, 3),
            row(
                3,
                "ho.ClassMethod_for_ho__showable____float__arity0______ho__show_3/3",
                1,
                0,
                2,
                2
            ),
            row(
                3,
                "ho.ClassMethod_for_ho__showable____int__arity0______ho__show_3/3",
                2,
                0,
                1,
                1
            ),
            row(2, "__Unify__ for ho.point/0", 2, 0, 0, 0),
        ]
    );
    // Dynamic coverage counts [1, 7] and [1, 2] in the two apply_all proc-dynamics.
    let f = read_file(&bytes).unwrap();
    assert_eq!(f.header.version, 8);
    assert_eq!(f.coverage_counts, 4);
    let (sited, _) = parse(&bytes, &[("call-sites", None)]);
    let names: Vec<String> = ir_nodes(&sited.unwrap()).into_iter().map(|n| n.1).collect();
    assert_eq!(names[2], "ho.apply_all/3 [ho.m:12 c1;]");
    assert_eq!(names[6], "ho.apply_all/3 [ho.m:13 c2;]");
}

#[test]
fn mutual_recursion() {
    let expected = tree![
        (0, ROOT, 0, 0, 0, 11, 0, 0),
        (1, "mutual.main/2", 1, 0, 1, 11, 0, 0),
        (2, "mutual.is_even/1", 1, 2, 4, 10, 0, 0),
        (3, "mutual.is_odd/1", 2, 0, 2, 6, 0, 0),
        (4, "mutual.helper/2", 2, 0, 4, 4, 2, 8),
    ];
    check_fixture(
        "mutual_recursion",
        "deep/mutual_recursion.data",
        Some(&expected),
        false,
    );
    // Static coverage: is_even's two points (counts 1 and 2) are read and skipped; the call site
    // with its own file name (helper_inlined.m, line 3).
    let bytes = read_fixture("deep/mutual_recursion.data");
    let f = read_file(&bytes).unwrap();
    assert_eq!(f.coverage_points, 2);
    let t = build_tree(&f).unwrap();
    let css = &f.css[t.css[4] as usize];
    let site = f.call_site_text(t.css[4]).unwrap();
    assert_eq!((site.file, css.line), (&b"helper_inlined.m"[..], 3));
}

#[test]
fn cross_edge() {
    let expected = tree![
        (0, ROOT, 0, 0, 0, 16, 0, 0),
        (1, "cross.main/2", 1, 0, 1, 16, 0, 0),
        (2, "cross.a/1", 1, 1, 4, 15, 0, 0),
        (3, "cross.b/1", 1, 1, 7, 7, 0, 0),
        (3, "cross.c/1", 1, 0, 4, 4, 0, 0),
    ];
    check_fixture("cross_edge", "deep/cross_edge.data", Some(&expected), false);
}

#[test]
fn late_link() {
    let expected = tree![
        (0, ROOT, 0, 0, 0, 15, 0, 0),
        (1, "late.main/2", 1, 0, 0, 15, 0, 0),
        (2, "late.p/1", 1, 1, 5, 15, 0, 0),
        (3, "late.x/1", 1, 0, 2, 10, 0, 0),
        (4, "late.y/1", 1, 1, 8, 8, 0, 0),
    ];
    check_fixture("late_link", "deep/late_link.data", Some(&expected), false);
}

/// A function and the predicate it calls, of one short name (`map.lookup/3`): the function is
/// named `+1`, or the two read as one function calling itself (direct recursion to
/// `collapse-direct-rec`, one callgrind function with a self-call).
#[test]
fn a_function_and_its_predicate_of_one_name_stay_two() {
    let expected = tree![
        (0, ROOT, 0, 0, 0, 9, 0, 0),
        (1, "m.main/2", 1, 0, 1, 9, 0, 0),
        (2, "map.lookup/3+1", 4, 0, 2, 8, 0, 0),
        (3, "map.lookup/3", 4, 0, 6, 6, 0, 0),
    ];
    check_fixture(
        "pred_and_func",
        "deep/pred_and_func.data",
        Some(&expected),
        false,
    );
    let bytes = read_fixture("deep/pred_and_func.data");
    let (p, _) = parse(&bytes, &[("names", Some("mdprof"))]);
    let names: Vec<String> = ir_nodes(&p.unwrap()).into_iter().map(|n| n.1).collect();
    assert!(names.contains(&"map.lookup/3+1-0".to_string()), "{names:?}");
    assert!(names.contains(&"map.lookup/3-0".to_string()), "{names:?}");
    // The mark does not depend on what the run called: the same program, whose run did not
    // call the predicate, names the function alike (a diff of the two matched it to the
    // predicate).
    let bytes = read_fixture("deep/func_called_alone.data");
    let (p, _) = parse(&bytes, &[]);
    let names: Vec<String> = ir_nodes(&p.unwrap()).into_iter().map(|n| n.1).collect();
    assert_eq!(names, [ROOT, "m.main/2", "map.lookup/3+1"]);
}

/// The real profile: every fact of `fixtures/deep/real/README.md`.
#[test]
fn real_mandelbrot() {
    let rel = "deep/real/mandelbrot.Deep.data";
    check_fixture("real_mandelbrot", rel, None, true);
    let bytes = read_fixture(rel);
    assert_eq!(bytes.len(), 1_242_953);
    assert!(bytes.starts_with(b"Mercury deep profiler data version 8\n"));
    let f = read_file(&bytes).unwrap();
    let h = &f.header;
    assert_eq!(h.version, 8);
    assert_eq!(h.program, b"./mandelbrot");
    assert_eq!(h.flags, 0x2108);
    assert_eq!((h.word_size, h.canonical), (8, true));
    assert_eq!((h.n_csd, h.n_css, h.n_pd, h.n_ps), (211, 21992, 185, 8584));
    assert_eq!(h.ticks_per_sec, 100);
    assert_eq!((h.instrument_quanta, h.user_quanta), (46, 110));
    assert_eq!(h.call_seqs, 202_594_363);
    assert_eq!(f.sum_call_seqs, 202_594_363);
    assert_eq!(f.sum_quanta, 110);
    assert_eq!(h.root_pd, 1);
    // The root: proc-static 1, one callback slot holding csds 1-5.
    let root = &f.pd[1];
    assert_eq!(root.ps, 1);
    assert_eq!(
        f.slot_kind[root.slot_start as usize..][..root.n_slots as usize],
        [4]
    );
    let mut listed: Vec<u32> = f.refs[root.ref_start as usize..][..root.n_refs as usize].to_vec();
    listed.sort();
    assert_eq!(listed, [1, 2, 3, 4, 5]);
    // No end token; the last record is proc-static 1810.
    assert_eq!(f.end_token_at, None);
    let last_ps = (1..f.ps.len()).max_by_key(|&k| f.ps[k].offset).unwrap();
    assert_eq!(last_ps, 1810);
    let last_css = f.css.iter().map(|c| c.offset).max().unwrap();
    assert!(f.ps[1810].offset > last_css);

    let t = build_tree(&f).unwrap();
    assert_eq!(t.len(), 185, "185 nodes");
    // 27 links to already-written proc-dynamics, all self-recursion.
    assert_eq!(t.link_csds.len(), 27);
    let self_loops = (1..f.csd.len())
        .filter(|&c| f.csd[c].owner == f.csd[c].callee)
        .count();
    assert_eq!(self_loops, 27);
    let costs = t.costs(&f).unwrap();
    let totals = tree_totals(&f, &costs, &t).unwrap();
    assert_eq!(
        [m::QUANTA, m::CALL_SEQS, m::ALLOCS, m::WORDS].map(|k| totals[0][k]),
        [110, 202_594_363, 140_837, 221_479]
    );
    // Root children in file order.
    let mut name = String::new();
    let mut name_of = |n: usize| {
        proc_name(
            &f.proc_head(f.pd[t.pd[n] as usize].ps).unwrap().label,
            NameStyle::Short,
            &mut name,
        );
        name.clone()
    };
    let root_children: Vec<String> = (1..t.len())
        .filter(|&n| t.parent[n] == 0)
        .map(&mut name_of)
        .collect();
    assert_eq!(
        root_children,
        [
            "io.finalize_state/2",
            "mandelbrot.main/2",
            "pretty_printer.initialise_mutable_io_pp_params/0",
            "exception.set_get_message_hook/2",
            "io.init_state/2"
        ]
    );
    // The hot path: name, calls, recursive calls, self quanta, total quanta.
    let path = [
        ("mandelbrot.main/2", 1, 0, 0, 110),
        ("mandelbrot.real_main/3", 1, 0, 0, 110),
        ("mandelbrot.my_map/3", 1, 200, 0, 110),
        ("mandelbrot.draw_row/3", 200, 0, 0, 110),
        ("mandelbrot.draw_row_2/4", 200, 40_000, 0, 110),
        ("mandelbrot.escape/7", 40_000, 100_936_685, 52, 110),
        ("math.sqrt/2", 100_956_624, 0, 58, 58),
    ];
    let mut node = 0usize;
    for (want, calls, rec, self_q, total_q) in path {
        // The child on the hot path is the one with the highest total.
        node = (1..t.len())
            .filter(|&n| t.parent[n] as usize == node)
            .max_by_key(|&n| totals[n][m::QUANTA])
            .unwrap();
        assert_eq!(
            (
                name_of(node),
                costs[node].calls,
                costs[node].recursive_calls,
                costs[node].own[m::QUANTA],
                totals[node][m::QUANTA]
            ),
            (want.to_string(), calls, rec, self_q, total_q)
        );
    }
    // draw_row is called from a higher-order call site.
    let draw_row = (1..t.len())
        .find(|&n| name_of(n) == "mandelbrot.draw_row/3")
        .unwrap();
    assert_eq!(
        f.css[t.css[draw_row] as usize].kind,
        profconv_deep::kind::HIGHER_ORDER
    );
    // Only escape/7 and sqrt/2 have quanta of their own.
    let with_quanta: Vec<String> = (0..t.len())
        .filter(|&n| costs[n].own[m::QUANTA] != 0)
        .map(&mut name_of)
        .collect();
    assert_eq!(with_quanta, ["mandelbrot.escape/7", "math.sqrt/2"]);

    // The IR: the same totals and named nodes (same-function siblings combined: fewer call
    // nodes), and 185 call nodes with -O call-sites.
    let (p, _) = parse(&bytes, &[]);
    let p = p.unwrap();
    let tree = CallTree::build(&p.view()).unwrap();
    let root = tree.roots[0] as usize;
    for (col, want) in [
        ("quanta", 110),
        ("call_seqs", 202_594_363),
        ("allocs", 140_837),
        ("words", 221_479),
    ] {
        assert_eq!(tree.total_values[value(&p, col)][root], want, "{col}");
    }
    let escape = tree
        .find_by_names(
            &p.view(),
            &[
                "Mercury runtime.Mercury runtime/0",
                "mandelbrot.main/2",
                "mandelbrot.real_main/3",
                "mandelbrot.my_map/3",
                "mandelbrot.draw_row/3",
                "mandelbrot.draw_row_2/4",
                "mandelbrot.escape/7",
            ],
        )
        .expect("escape/7 on the hot path");
    let q = value(&p, "quanta");
    assert_eq!(tree.self_values[q][escape as usize], 52);
    let sqrt = tree.children(escape).next().unwrap() as usize;
    assert_eq!(p.view().func_name_str(tree.func[sqrt]), "math.sqrt/2");
    assert_eq!(tree.self_values[q][sqrt], 58);
    assert_eq!(tree.self_values[value(&p, "calls")][sqrt], 100_956_624);
    assert_eq!(
        tree.self_values[value(&p, "recursive_calls")][escape as usize],
        100_936_685
    );
    let (sited, _) = parse(&bytes, &[("call-sites", None)]);
    assert_eq!(CallTree::build(&sited.unwrap().view()).unwrap().len(), 185);
    // Call-site lines are on the caller's frames: escape/7 calls sqrt/2 at mandelbrot.m:255.
    let v = p.view();
    let escape_func = tree.func[escape as usize];
    assert!((0..v.n_frames()).any(|fr| v.frame_func[fr] == escape_func && v.frame_line[fr] == 255));
    assert_eq!(
        v.strings.get(v.func_file[escape_func as usize]),
        "mandelbrot.m"
    );
    // Its proc-static says line 245 (decoded by hand from the record).
    assert_eq!(v.func_line[escape_func as usize], 245);
}

/// Every generated fixture cut at every offset, the real one at many: errors with offsets.
#[test]
fn truncation_at_every_offset() {
    for rel in [
        "deep/tiny_tree.data",
        "deep/recursion.data",
        "deep/higher_order.data",
        "deep/mutual_recursion.data",
        "deep/cross_edge.data",
        "deep/late_link.data",
    ] {
        let bytes = read_fixture(rel);
        assert_truncations_fail(rel, &bytes, 0..bytes.len());
    }
    let rel = "deep/real/mandelbrot.Deep.data";
    let bytes = read_fixture(rel);
    // The header and every dynamic record, then a stride over the static part, then the end.
    let n = bytes.len();
    let cuts = (0..6000).chain((6000..n).step_by(4999)).chain(n - 300..n);
    assert_truncations_fail(rel, &bytes, cuts);
}

fn describe(r: &Result<Profile, PluginError>) -> String {
    match r {
        Ok(_) => "parsed".to_string(),
        Err(e) => format!(
            "{} [{}] byte offset {}",
            e,
            e.status.name(),
            e.byte_offset.map_or("-".into(), |o| o.to_string())
        ),
    }
}

/// Error messages of files cut short (a few cuts per fixture).
#[test]
fn truncated_messages() {
    let mut text = String::new();
    for rel in [
        "deep/recursion.data",
        "deep/higher_order.data",
        "deep/real/mandelbrot.Deep.data",
    ] {
        let bytes = read_fixture(rel);
        let n = bytes.len();
        writeln!(text, "== {rel} ({n} bytes)").unwrap();
        for cut in [
            0,
            10,
            36,
            37,
            40,
            50,
            90,
            n / 2,
            n - 13,
            n - 8,
            n - 5,
            n - 3,
            n - 2,
            n - 1,
        ] {
            let (r, _) = parse(&bytes[..cut], &[]);
            writeln!(text, "cut at {cut}: {}", describe(&r)).unwrap();
        }
    }
    settings(None, "Deep.data fixtures cut short: the errors").bind(|| {
        insta::assert_snapshot!("deep__truncated", text);
    });
}

/// Damaged inputs: each a clear error with its byte offset.
#[test]
fn hostile_inputs() {
    let good = read_fixture("deep/recursion.data");
    let real = read_fixture("deep/real/mandelbrot.Deep.data");
    let patched = |at: usize, new: &[u8]| {
        let mut b = good.clone();
        b[at..at + new.len()].copy_from_slice(new);
        b
    };
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("not a Deep.data file", b"GIF89a\x01\x00".to_vec()),
        (
            "a procrep file",
            b"Mercury deep profiler procrep version 6\n".to_vec(),
        ),
        ("version 7", {
            let mut b = good.clone();
            b[35] = b'7';
            b
        }),
        ("identifying line without newline", good[..36].to_vec()),
        ("identifying line too long", {
            let mut b = b"Mercury deep profiler data version 000000000000009\n".to_vec();
            b.extend(&good[37..]);
            b
        }),
        ("program name longer than the file", {
            let mut b = good[..40].to_vec();
            b[37] = 0x7f;
            b
        }),
        ("flags: coverage 3", patched(0x2c, &[0x31])),
        ("flags: compression", patched(0x2c, &[0x05])),
        ("flags: unknown bits", patched(0x2e, &[0x01])),
        (
            "4 billion call-site-dynamics in a 409-byte file",
            patched(0x33, &4_000_000_000u64.to_le_bytes()),
        ),
        ("billions of records of every kind", {
            let mut b = good.clone();
            for k in 0..4 {
                b[0x33 + 8 * k..0x3b + 8 * k].copy_from_slice(&3_000_000_000u64.to_le_bytes());
            }
            b
        }),
        ("zero counts (writer did not finish)", {
            let mut b = good.clone();
            b[0x33..0x53].fill(0);
            b
        }),
        ("a number that never ends", patched(0x53, &[0xff; 12])),
        (
            "a number above 64 bits",
            patched(
                0x53,
                &[0x82, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
            ),
        ),
        ("root proc-dynamic 9", patched(0x57, &[9])),
        ("unknown record token", patched(0x58, &[9])),
        ("record id 0", patched(0x59, &[0])),
        ("record id beyond the count", patched(0x59, &[6])),
        (
            "callee proc-dynamic 77 does not exist",
            patched(0x61, &[77]),
        ),
        ("callee proc-dynamic 0", patched(0x61, &[0])),
        ("measurement mask with unknown bits", patched(0x62, &[0x8f])),
        ("slot lists call-site-dynamic 99", patched(0x6c, &[99])),
        ("slot of unknown kind", patched(0x6b, &[7])),
        ("duplicate call-site-dynamic id", patched(0x70, &[1])),
        ("proc-dynamic of proc-static 9", patched(0x59 + 1, &[9])),
        ("bytes after an end token", {
            let mut b = good.clone();
            b.push(0);
            b.extend(b"trailing");
            b
        }),
        ("real file: callee of csd 1 is proc-dynamic 999", {
            // CSD 1 is the first call-site-dynamic record after PD 1.
            let mut b = real.clone();
            let at = b.windows(3).position(|w| w == [2, 1, 2]).unwrap();
            b[at + 2] = 0x87;
            b.insert(at + 3, 0x67);
            b
        }),
    ];
    cases.push(("empty input", Vec::new()));
    let mut text = String::new();
    for (what, bytes) in &cases {
        let (r, messages) = parse(bytes, &[]);
        writeln!(text, "{what}: {}", describe(&r)).unwrap();
        for m in messages {
            writeln!(text, "  warning: {m}").unwrap();
        }
    }
    settings(
        None,
        "Damaged Deep.data inputs (mostly fixtures/deep/recursion.data patched): the errors",
    )
    .bind(|| insta::assert_snapshot!("deep__hostile_inputs", text));
}

/// The sniffer and the option check.
#[test]
fn sniff_and_options() {
    let bytes = read_fixture("deep/real/mandelbrot.Deep.data");
    assert_eq!(<Deep as Format>::sniff(&bytes[..64]), 100);
    assert_eq!(<Deep as Format>::sniff(b"main;foo 3\n"), 0);
    let (r, _) = parse(&bytes, &[("names", Some("mdprof"))]);
    let p = r.unwrap();
    let v = p.view();
    let names: Vec<&str> = (0..v.n_funcs() as u32)
        .map(|f| v.func_name_str(f))
        .collect();
    assert!(names.contains(&"math.sqrt/2+1-0"), "{names:?}");
    assert!(names.contains(&"mandelbrot.main/2-0"));
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("Compare for builtin.int/0"))
    );
    let (r, _) = parse(&bytes, &[("names", Some("long"))]);
    assert_eq!(r.unwrap_err().status.name(), "BAD_OPTIONS");
}

/// Random damage (deterministic): one to four bytes of a fixture overwritten, a few thousand
/// times. Never a panic; an error always has an offset within the input; a profile that parses
/// is a valid IR profile.
#[test]
fn random_damage_never_panics() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for rel in [
        "deep/recursion.data",
        "deep/higher_order.data",
        "deep/mutual_recursion.data",
        "deep/late_link.data",
    ] {
        let good = read_fixture(rel);
        for _ in 0..1500 {
            let mut bytes = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            match parse(&bytes, &[]).0 {
                Ok(p) => {
                    p.view().validate().expect("a valid IR profile");
                    // Huge damaged values may overflow a total: an error, not a panic.
                    let _ = CallTree::build(&p.view());
                }
                Err(e) => {
                    let o = e.byte_offset.expect("an offset");
                    assert!(o <= bytes.len() as u64, "{rel}: {e}");
                }
            }
        }
    }
}
