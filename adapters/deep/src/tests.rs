//! Unit tests on files written here byte by byte (the fixtures are tested in
//! `snapshots/tests/deep.rs`).

use super::*;
use profconv_plugin::ir::{CallTree, ValueKind};

/// A Deep.data writer for tests: the primitives of spec §2. Numbers take at least `.1` bytes
/// (leading `0x80` groups: the same value written longer), or as few as they need with 0.
#[derive(Default)]
struct Enc(Vec<u8>, usize);

impl Enc {
    fn num(&mut self, v: u64) -> &mut Self {
        let mut groups = vec![(v & 0x7f) as u8];
        let mut v = v >> 7;
        while v > 0 || groups.len() < self.1 {
            groups.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        groups.reverse();
        self.0.extend(groups);
        self
    }
    fn s(&mut self, s: &str) -> &mut Self {
        self.num(s.len() as u64);
        self.0.extend(s.as_bytes());
        self
    }
    fn b(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn fixed(&mut self, v: u64) -> &mut Self {
        self.0.extend(v.to_le_bytes());
        self
    }
}

struct Hdr {
    version: u32,
    flags: u64,
    counts: [u64; 4],
    quanta: u64,
    call_seqs: u64,
}

fn header(h: &Hdr) -> Enc {
    let mut e = Enc::default();
    e.0.extend(format!("Mercury deep profiler data version {}\n", h.version).bytes());
    e.s("./t").fixed(h.flags);
    for c in h.counts {
        e.fixed(c);
    }
    e.num(100).num(0).num(h.quanta).num(h.call_seqs).num(1);
    e
}

/// Proc-static records for the runtime (PS 1, CSS 1) and `t.f/1` (PS 2) whose one call site
/// (CSS 2) has kind `site_kind` (a normal one calls PS 2 itself).
fn statics(e: &mut Enc, version: u32, site_kind: u8) {
    statics_with(e, version, site_kind, &[1]);
}

/// [`statics`] with the runtime's callback call sites numbered `runtime_sites` (none with a
/// line or goal path).
fn statics_with(e: &mut Enc, version: u32, site_kind: u8, runtime_sites: &[u64]) {
    e.b(3)
        .num(1)
        .b(0)
        .s("Mercury runtime")
        .s("Mercury runtime")
        .s("Mercury runtime");
    e.num(0)
        .num(0)
        .s("Mercury runtime")
        .num(0)
        .b(1)
        .num(runtime_sites.len() as u64);
    for &css in runtime_sites {
        e.num(css);
    }
    for &css in runtime_sites {
        e.b(1).num(css).b(4);
        if version >= 9 {
            e.s("Mercury runtime");
        }
        e.num(0).s("");
    }
    e.b(3)
        .num(2)
        .b(1)
        .s("t")
        .s("t")
        .s("f")
        .num(2)
        .num(0)
        .s("t.m")
        .num(10)
        .b(0);
    e.num(1).num(2);
    e.b(1).num(2).b(site_kind);
    if site_kind == 0 {
        e.num(2).s("");
    }
    if version >= 9 {
        e.s("");
    }
    e.num(11).s("c1;");
}

/// A chain root → f → f → … of `n` calls through a higher-order call site (each a new
/// proc-dynamic, as recursion through a closure makes them): depth `n + 1`, quanta 1 per call.
fn chain(n: u64) -> Vec<u8> {
    chain_with_numbers_of(n, 0)
}

/// [`chain`] with every number of its dynamic records written in at least `bytes` bytes.
fn chain_with_numbers_of(n: u64, bytes: usize) -> Vec<u8> {
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts: [n, 2, n + 1, 2],
        quanta: n,
        call_seqs: n,
    });
    e.1 = bytes;
    // PD 1 (runtime): one callback slot listing CSD 1.
    e.b(4).num(1).num(1).num(1).b(4).num(1).b(0);
    for k in 1..=n {
        // CSD k → PD k+1: exits 1, quanta 1, call seqs 1 (mask 0x10a).
        e.b(2).num(k).num(k + 1).num(0x10a).num(1).num(1).num(1);
        // PD k+1 (t.f/1): one higher-order slot listing CSD k+1, or nothing at the end.
        e.b(4).num(k + 1).num(2).num(1).b(2);
        if k < n {
            e.num(k + 1);
        }
        e.b(0);
    }
    e.1 = 0;
    statics(&mut e, 9, 2);
    e.0
}

/// A proc-dynamic that the fast path gives up on after it has taken a call-site-dynamic as its
/// own (the list's second id is written in ten bytes) leaves nothing behind: the grammar reads
/// the record again from its start and takes the same id without finding it taken.
#[test]
fn a_record_the_fast_path_gives_up_on_midway_reads_as_any_other() {
    let file = |long: bool| {
        let mut e = header(&Hdr {
            version: 9,
            flags: 0x108,
            counts: [2, 2, 3, 2],
            quanta: 0,
            call_seqs: 0,
        });
        // PD 1 (runtime): a callback list of CSD 1 and CSD 2, the second maybe in ten bytes.
        e.b(4).num(1).num(1).num(1).b(4).num(1);
        e.1 = if long { 10 } else { 0 };
        e.num(2);
        e.1 = 0;
        e.b(0);
        e.b(2).num(1).num(2).num(0);
        e.b(2).num(2).num(3).num(0);
        for k in [2, 3] {
            e.b(4).num(k).num(2).num(1).b(2).b(0);
        }
        statics(&mut e, 9, 2);
        e.0
    };
    let (short, long) = (file(false), file(true));
    assert_eq!(long.len(), short.len() + 9);
    assert_eq!(tree_text(&long), tree_text(&short));
}

/// Dynamic records whose numbers are all short are read by the loader's fast path, the others
/// by the grammar; both store the same: a file with its numbers written in 9 bytes (the fast
/// path's longest) and in 10 (the grammar's) gives the tree and the profile of the shortest
/// writing.
#[test]
fn the_fast_path_and_the_grammar_read_records_alike() {
    let folded = |bytes: &[u8]| {
        let p = parse_deep(bytes, &DeepOptions::default(), &mut Context::silent()).unwrap();
        let tree = CallTree::build(&p.view()).unwrap();
        (0..tree.len())
            .map(|n| {
                format!(
                    "{:?} {:?}",
                    tree.func[n],
                    tree.total_values.iter().map(|c| c[n]).collect::<Vec<_>>()
                )
            })
            .collect::<Vec<_>>()
    };
    let short = chain(30);
    for bytes in [9, 10] {
        let long = chain_with_numbers_of(30, bytes);
        assert!(
            long.len() > short.len() + 30 * 4,
            "{bytes}-byte numbers were written"
        );
        assert_eq!(tree_text(&long), tree_text(&short), "{bytes}-byte numbers");
        assert_eq!(folded(&long), folded(&short), "{bytes}-byte numbers");
    }
}

/// `f` calls itself once through a normal call site: a recursion link (self-loop).
fn self_recursion() -> Vec<u8> {
    self_recursion_with_quanta(2)
}

/// [`self_recursion`] whose first call (the tree edge, CSD 1) has `quanta` quanta; the link
/// (CSD 2) has 3.
fn self_recursion_with_quanta(quanta: u64) -> Vec<u8> {
    let mut e = header(&Hdr {
        version: 8,
        flags: 0x108,
        counts: [2, 2, 2, 2],
        quanta: 5,
        call_seqs: 5,
    });
    e.b(4).num(1).num(1).num(1).b(4).num(1).b(0);
    e.b(2).num(1).num(2).num(0x10a).num(1).num(quanta).num(1);
    e.b(4).num(2).num(2).num(1).b(0).num(2);
    e.b(2).num(2).num(2).num(0x10a).num(4).num(3).num(4);
    statics(&mut e, 8, 0);
    e.0
}

fn err(bytes: &[u8]) -> PluginError {
    match parse_deep(bytes, &DeepOptions::default(), &mut Context::silent()) {
        Ok(_) => panic!("parse unexpectedly succeeded"),
        Err(e) => e,
    }
}

fn tree_text(bytes: &[u8]) -> String {
    let f = read_file(bytes).expect("read");
    let t = build_tree(&f).expect("tree");
    render_pd_tree(&f, &t, NameStyle::Short).expect("render")
}

#[test]
fn sniffs_the_identifying_line() {
    assert_eq!(
        sniff(b"Mercury deep profiler data version 8\n\x0c./mandelbrot"),
        100
    );
    assert_eq!(sniff(b"Mercury deep profiler data version 9\n"), 100);
    assert_eq!(sniff(b"Mercury deep profiler procrep version 6\n"), 0);
    assert_eq!(sniff(b"main;foo 1\n"), 0);
    assert_eq!(sniff(b""), 0);
}

#[test]
fn self_recursion_folds_into_one_node() {
    assert_eq!(
        tree_text(&self_recursion()),
        "Mercury runtime.Mercury runtime/0 calls=0 rec=0 q=0/5 call_seqs=0/5 allocs=0/0 words=0/0\n  \
         t.f/2 calls=1 rec=4 q=5/5 call_seqs=5/5 allocs=0/0 words=0/0 exits=5 [callback Mercury runtime:0]\n"
    );
}

#[test]
fn node_costs_that_overflow_name_the_call_site_dynamic() {
    // The tree edge's i64::MAX quanta plus the link's 3: the sum in the node overflows, at the
    // link's record.
    let bytes = self_recursion_with_quanta(i64::MAX as u64);
    let f = read_file(&bytes).expect("read");
    let t = build_tree(&f).expect("tree");
    let e = t.costs(&f).expect_err("an overflow");
    assert_eq!(e.byte_offset, Some(f.csd[2].offset), "{e}");
    assert!(f.csd[2].offset > 0);
    assert!(e.message.contains("call-site-dynamic 2"), "{e}");
    let e = render_pd_tree(&f, &t, NameStyle::Short).expect_err("an overflow");
    assert_eq!(e.byte_offset, Some(f.csd[2].offset), "{e}");
}

#[test]
fn link_costs_that_overflow_the_row_name_the_link() {
    // The IR row of t.f/2 gets its tree edge's i64::MAX quanta, then the link's 3 while the
    // row is made: an error at the link's record, naming the proc-dynamic.
    let bytes = self_recursion_with_quanta(i64::MAX as u64);
    let f = read_file(&bytes).expect("read");
    let e = err(&bytes);
    assert_eq!(e.byte_offset, Some(f.csd[2].offset), "{e}");
    assert!(
        e.message
            .contains("the values of proc-dynamic 2 overflow 64 bits"),
        "{e}"
    );
    // Three less fits: the link's costs and calls are in the row.
    let p = parse_deep(
        &self_recursion_with_quanta(i64::MAX as u64 - 3),
        &DeepOptions::default(),
        &mut Context::silent(),
    )
    .expect("parse");
    let v = p.view();
    let col = |name: &str| {
        let k = COLUMNS.iter().position(|c| c.0 == name).expect("a column");
        v.sample_values[k].to_vec()
    };
    assert_eq!(col("quanta"), vec![0, i64::MAX]);
    assert_eq!(col("calls"), vec![0, 1]);
    assert_eq!(col("recursive_calls"), vec![0, 4]);
}

#[test]
fn totals_that_overflow_name_the_proc_dynamic() {
    // One node holds i64::MAX quanta of its own, its child 1 more (a chain root → f → f: the
    // second f's quanta come from CSD 2).
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts: [2, 2, 3, 2],
        quanta: 0,
        call_seqs: 0,
    });
    e.b(4).num(1).num(1).num(1).b(4).num(1).b(0);
    e.b(2)
        .num(1)
        .num(2)
        .num(0x10a)
        .num(1)
        .num(i64::MAX as u64)
        .num(1);
    e.b(4).num(2).num(2).num(1).b(2).num(2).b(0);
    e.b(2).num(2).num(3).num(0x10a).num(1).num(1).num(1);
    e.b(4).num(3).num(2).num(1).b(2).b(0);
    statics(&mut e, 9, 2);
    let f = read_file(&e.0).expect("read");
    let t = build_tree(&f).expect("tree");
    let costs = t.costs(&f).expect("costs");
    let e = tree_totals(&f, &costs, &t).expect_err("an overflow");
    // Node 1 (proc-dynamic 2) is where its child's total no longer fits.
    assert_eq!(e.byte_offset, Some(f.pd[2].offset), "{e}");
    assert!(e.message.contains("proc-dynamic 2"), "{e}");
}

#[test]
fn a_chain_of_200_000_proc_dynamics_needs_no_recursion() {
    let n = 200_000;
    let bytes = chain(n);
    let p = parse_deep(&bytes, &DeepOptions::default(), &mut Context::silent()).expect("parse");
    let tree = CallTree::build(&p.view()).expect("call tree");
    assert_eq!(tree.len(), n as usize + 1);
    assert_eq!(tree.grand_total(0), n as i64);
    assert_eq!(*tree.depth.iter().max().unwrap(), n as u32);
    // Every f calls the next at line 11: the caller's frame carries the call site's line.
    let view = p.view();
    assert!(view.frame_line.contains(&11));
}

#[test]
fn truncation_at_every_offset_is_an_error_with_an_offset() {
    let bytes = chain(40);
    for cut in 0..bytes.len() {
        let e = err(&bytes[..cut]);
        let o = e.byte_offset.expect("an offset");
        assert!(o <= cut as u64, "cut {cut}: offset {o}: {e}");
    }
    for cut in 0..self_recursion().len() {
        err(&self_recursion()[..cut]);
    }
}

#[test]
fn every_single_byte_change_is_handled() {
    // Set each byte to a few values: never a panic; an error has an offset in the input.
    let bytes = chain(6);
    for i in 0..bytes.len() {
        for v in [0u8, 1, 2, 4, 0x7f, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] = v;
            match parse_deep(&b, &DeepOptions::default(), &mut Context::silent()) {
                Ok(p) => {
                    p.view().validate().expect("a valid IR profile");
                    // A damaged value may overflow a total: an error, never a panic.
                    let _ = CallTree::build(&p.view());
                }
                Err(e) => assert!(e.byte_offset.is_some_and(|o| o <= b.len() as u64), "{e}"),
            }
        }
    }
}

#[test]
fn counts_the_file_cannot_hold_are_an_error() {
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts: [4_000_000_000, 4_000_000_000, 4_000_000_000, 4_000_000_000],
        quanta: 0,
        call_seqs: 0,
    });
    e.b(4).num(1).num(1).num(0);
    let e = err(&e.0);
    assert_eq!(e.byte_offset, Some(49), "the first count");
    assert!(
        e.message.contains("claims 4000000000 call-site-dynamic"),
        "{e}"
    );
    assert!(e.message.contains("bytes follow the header"), "{e}");
}

#[test]
fn ids_must_name_existing_records() {
    let mut bytes = chain(3);
    // CSD 1's callee (PD 2) becomes PD 99.
    let at = bytes
        .windows(4)
        .position(|w| w == [2, 1, 2, 0x82])
        .expect("CSD 1");
    bytes[at + 2] = 99;
    let e = err(&bytes);
    assert!(e.message.contains("no proc-dynamic 99"), "{e}");
    assert_eq!(e.byte_offset, Some(at as u64 + 2));
}

#[test]
fn bad_identifying_lines() {
    let e = err(b"GIF89a");
    assert_eq!(e.byte_offset, Some(0));
    assert!(
        e.message.contains("not a Mercury deep profiler data file"),
        "{e}"
    );
    // Cut inside the prefix: its bytes are right, the rest is missing.
    let e = err(b"Mercury deep pro");
    assert_eq!(e.byte_offset, Some(16));
    assert!(
        e.message
            .contains("the file ends inside the identifying line"),
        "{e}"
    );
    let e = err(b"Mercury deep profiler data version ");
    assert!(e.message.contains("version number"), "{e}");
    let e = err(b"Mercury deep profiler data version 7\n");
    assert!(e.message.contains("unsupported Deep.data version 7"), "{e}");
    let e = err(b"Mercury deep profiler data version 9");
    assert!(e.message.contains("a newline"), "{e}");
    let e = err(b"Mercury deep profiler data version 99999999999999999\n");
    assert!(e.message.contains("mdprof reads at most 45"), "{e}");
}

#[test]
fn a_number_that_never_ends() {
    let mut e = Enc::default();
    e.0.extend(b"Mercury deep profiler data version 9\n");
    e.0.extend([0x80; 30]);
    let e = err(&e.0);
    assert_eq!(e.byte_offset, Some(37));
    assert!(e.message.contains("does not end within 10 bytes"), "{e}");
}

#[test]
fn a_call_site_dynamic_listed_twice_is_an_error() {
    // Its costs would count twice: PD 1 lists CSD 1, and PD 2 lists CSD 1 again. (A
    // call-site-dynamic that nothing lists is in `structural_errors`.)
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts: [1, 2, 2, 2],
        quanta: 0,
        call_seqs: 0,
    });
    e.b(4).num(1).num(1).num(1).b(4).num(1).b(0);
    e.b(2).num(1).num(2).num(0);
    e.b(4).num(2).num(2).num(1).b(2).num(1).b(0);
    statics(&mut e, 9, 2);
    let e = err(&e.0);
    assert!(
        e.message.contains("already listed by proc-dynamic 1"),
        "{e}"
    );
}

#[test]
fn explicit_call_counts_are_used() {
    // mask 0x3: calls 7, exits 5.
    let text = tree_text(&one_call(0x3, &[7, 5]));
    assert!(text.contains("t.f/2 calls=7 rec=0"), "{text}");
}

/// A file whose root calls `t.f/2` once through a call-site-dynamic of `mask` and `values`.
fn one_call(mask: u64, values: &[u64]) -> Vec<u8> {
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts: [1, 2, 2, 2],
        quanta: 0,
        call_seqs: 0,
    });
    e.b(4).num(1).num(1).num(1).b(4).num(1).b(0);
    e.b(2).num(1).num(2).num(mask);
    for &v in values {
        e.num(v);
    }
    e.b(4).num(2).num(2).num(1).b(2).b(0);
    statics(&mut e, 9, 2);
    e.0
}

/// calls = exits + fails + excps − redos is worked out in 128 bits: a sum past 2^63 whose result
/// fits is no overflow (it was refused); a result past 2^63 − 1 is, and more redos than ends,
/// which no run gives (a redo re-enters a call that ended, and ends again), is an error at the
/// record, not a negative count.
#[test]
fn derived_call_counts_are_exact_or_an_error() {
    let max = i64::MAX as u64;
    // exits, redos, excps (mask bits 0x2, 0x40, 0x80: spec §8.1).
    let text = tree_text(&one_call(0xc2, &[max, max, max]));
    assert!(text.contains(&format!("t.f/2 calls={max} rec=0")), "{text}");
    let e = err(&one_call(0xc2, &[max, 0, max]));
    assert!(e.message.contains("overflows 64 bits"), "{e}");
    assert!(e.byte_offset.is_some(), "{e}");
    let e = err(&one_call(0x42, &[1, 5]));
    assert!(
        e.message
            .contains("call-site-dynamic 1: 5 redos, more than its exits + fails + excps (1)"),
        "{e}"
    );
    assert!(e.byte_offset.is_some(), "{e}");
}

/// A measurement past 2^63-1 reads as every reader's number too large does: the number and the
/// limit (it said "does not fit in 63 bits").
#[test]
fn a_measurement_too_large_names_itself_and_the_limit() {
    let e = err(&one_call(0x2, &[1 << 63]));
    assert!(
        e.message.contains(
            "call-site-dynamic 1: measurement 9223372036854775808 is too large: at most 2^63-1 \
             (9223372036854775807)"
        ),
        "{e}"
    );
    assert!(e.byte_offset.is_some(), "{e}");
}

/// The call nodes' function names of `bytes` read with `-O call-sites`, in first-seen order.
fn call_node_names_by_site(bytes: &[u8]) -> Vec<String> {
    let options = DeepOptions {
        call_sites: true,
        ..DeepOptions::default()
    };
    let p = parse_deep(bytes, &options, &mut Context::silent()).expect("parse");
    let v = p.view();
    let tree = CallTree::build(&v).expect("tree");
    tree.func
        .iter()
        .map(|&f| v.func_name_str(f).to_string())
        .collect()
}

/// `-O call-sites` names a caller's siblings of one procedure after their call sites only when
/// they come from two sites or more: two instances of `t.f/2` through the runtime's one callback
/// site would both be named `t.f/2 [Mercury runtime:0]` (one node again, under a name that
/// said it was apart; line 0 is no line). They keep the plain name.
#[test]
fn call_site_names_only_for_siblings_of_several_sites() {
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts: [2, 2, 3, 2],
        quanta: 0,
        call_seqs: 0,
    });
    // The root's callback slot lists call-site-dynamics 1 and 2, to proc-dynamics 2 and 3 of t.f.
    e.b(4).num(1).num(1).num(1).b(4).num(1).num(2).b(0);
    e.b(2).num(1).num(2).num(0x2).num(1);
    e.b(4).num(2).num(2).num(1).b(2).b(0);
    e.b(2).num(2).num(3).num(0x2).num(2);
    e.b(4).num(3).num(2).num(1).b(2).b(0);
    statics(&mut e, 9, 2);
    let names = call_node_names_by_site(&e.0);
    assert_eq!(names, ["Mercury runtime.Mercury runtime/0", "t.f/2"]);
}

#[test]
fn end_token_and_trailing_bytes() {
    let mut bytes = self_recursion();
    bytes.push(0);
    assert!(tree_text(&bytes).contains("t.f/2 calls=1 rec=4"));
    bytes.extend(b"junk");
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    parse_deep(
        &bytes,
        &DeepOptions::default(),
        &mut Context::with_sink(&mut sink),
    )
    .expect("parse");
    assert_eq!(messages.len(), 1);
    assert!(
        messages[0].contains("4 bytes after the end token"),
        "{messages:?}"
    );
}

/// A name that is not UTF-8 is read with U+FFFD in place of its bad bytes, as the other
/// readers do, and said once: two names that differ only there become one function.
#[test]
fn names_that_are_not_utf8_are_said() {
    let mut bytes = chain(2);
    // `t.f/2`'s name, `f`, becomes the byte 0xff (a string of one byte either way).
    let at = bytes
        .windows(6)
        .position(|w| w == b"\x01t\x01t\x01f")
        .expect("the name of t.f/2")
        + 5;
    bytes[at] = 0xff;
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    let p = parse_deep(
        &bytes,
        &DeepOptions::default(),
        &mut Context::with_sink(&mut sink),
    )
    .expect("parse");
    assert!(
        (0..p.funcs.name.len()).any(|f| p.view().func_name_str(f as u32) == "t.\u{fffd}/2"),
        "{:?}",
        p.view().strings.blob
    );
    assert_eq!(
        messages,
        [
            "names that are not UTF-8; invalid bytes are replaced with U+FFFD (names that differ only there are read as one)"
        ]
    );
    // A file whose names are all UTF-8 says nothing of it.
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    parse_deep(
        &chain(2),
        &DeepOptions::default(),
        &mut Context::with_sink(&mut sink),
    )
    .expect("parse");
    assert!(messages.is_empty(), "{messages:?}");
}

/// A record missing from a record list that an end token ended is reported at that token's
/// byte, not at the end of the bytes after it (which are ignored), and without the hint of a
/// file cut at a record boundary.
#[test]
fn a_missing_record_after_an_end_token_names_the_token() {
    // Every record but PD 2.
    let cut = small_file([1, 2, 2, 2], &[], &[]);
    let end = cut.len() as u64;
    let e = err(&cut);
    assert_eq!(e.byte_offset, Some(end), "{e}");
    assert_eq!(
        e.message,
        format!(
            "the header counts 2 proc-dynamic records, but proc-dynamic 2 is not in the file (it ends at byte {end}; cut at a record boundary?)"
        )
    );
    // The same, then an end token at byte `end` and 32 zero bytes.
    let mut ended = cut.clone();
    ended.push(0);
    ended.extend([0; 32]);
    let e = err(&ended);
    assert_eq!(e.byte_offset, Some(end), "{e}");
    assert_eq!(
        e.message,
        format!(
            "the header counts 2 proc-dynamic records, but proc-dynamic 2 is not in the file: the record list ended at the end token (0) at byte {end}, and the 32 bytes after it were ignored"
        )
    );
    // With nothing after the token, nothing is said about ignored bytes.
    ended.truncate(cut.len() + 1);
    let e = err(&ended);
    assert_eq!(e.byte_offset, Some(end), "{e}");
    assert_eq!(
        e.message,
        format!(
            "the header counts 2 proc-dynamic records, but proc-dynamic 2 is not in the file: the record list ended at the end token (0) at byte {end}"
        )
    );
}

#[test]
fn format_parse_reads_a_stream_too() {
    let bytes = self_recursion();
    let mut reader: &[u8] = &bytes;
    let p = <Deep as Format>::parse(
        &mut Input::from_reader(&mut reader),
        &Options::new(vec![("names".into(), Some("mdprof".into()))]),
        &mut Context::silent(),
    )
    .expect("parse");
    assert!((0..p.view().n_funcs() as u32).any(|f| p.view().func_name_str(f) == "t.f/2+1-0"));
    let bad = <Deep as Format>::parse(
        &mut Input::from_slice(&bytes),
        &Options::new(vec![("names".into(), Some("long".into()))]),
        &mut Context::silent(),
    )
    .unwrap_err();
    assert_eq!(bad.status, profconv_plugin::Status::BAD_OPTIONS);
    assert_eq!(
        bad.message,
        "option names=long: expected `short` or `mdprof`"
    );
}

/// A root calling `f` (PD 2) through CSD 1, with `extra` appended before the statics and the
/// given counts; PD 2's record is `pd2`.
fn small_file(counts: [u64; 4], pd2: &[u8], extra: &[u8]) -> Vec<u8> {
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts,
        quanta: 0,
        call_seqs: 0,
    });
    e.b(4).num(1).num(1).num(1).b(4).num(1).b(0);
    e.b(2).num(1).num(2).num(0);
    e.0.extend(pd2);
    e.0.extend(extra);
    statics(&mut e, 9, 2);
    e.0
}

#[test]
fn structural_errors() {
    // PD 2 (t.f/1): one higher-order slot, empty.
    let pd2 = [4, 2, 2, 1, 2, 0];
    assert!(tree_text(&small_file([1, 2, 2, 2], &pd2, &[])).contains("t.f/2 calls=0"));
    let cases: [(&str, Vec<u8>); 6] = [
        (
            "call-site-dynamic 2 is not listed in any proc-dynamic's slots",
            small_file([2, 2, 2, 2], &pd2, &[2, 2, 2, 0]),
        ),
        (
            "proc-dynamic 3 is not reachable from the root proc-dynamic 1: only 2 of the 3 proc-dynamics are reachable",
            small_file([1, 2, 3, 2], &pd2, &[4, 3, 2, 1, 2, 0]),
        ),
        (
            "proc-dynamic 2: slot 0 is method but its call-site-static 2 is higher_order",
            small_file([1, 2, 2, 2], &[4, 2, 2, 1, 3, 0], &[]),
        ),
        (
            "proc-dynamic 2 has 0 slots, but its proc-static 2 has 1 call sites",
            small_file([1, 2, 2, 2], &[4, 2, 2, 0], &[]),
        ),
        (
            "the header counts 2 proc-dynamic records, but proc-dynamic 2 is not in the file",
            small_file([1, 2, 2, 2], &[], &[]),
        ),
        (
            // A 0 written in two bytes in a list: no id (it was taken for the dummy record 0,
            // and the file was reported as having 13 of 12 proc-dynamics unreachable).
            "proc-dynamic 2: slot 0 lists call-site-dynamic 0, which does not exist",
            small_file([1, 2, 2, 2], &[4, 2, 2, 1, 2, 0x80, 0, 0], &[]),
        ),
    ];
    for (want, bytes) in cases {
        let e = err(&bytes);
        assert!(e.message.contains(want), "{e}\nwanted: {want}");
        assert!(e.byte_offset.is_some(), "{e}");
    }
}

#[test]
fn numbers_that_never_end_or_overflow() {
    let mut e = Enc::default();
    e.0.extend(b"Mercury deep profiler data version 9\n");
    e.0.extend([0xff; 12]);
    let e = err(&e.0);
    assert!(e.message.contains("does not end within 10 bytes"), "{e}");
    let mut e = Enc::default();
    e.0.extend(b"Mercury deep profiler data version 9\n");
    e.0.extend([0x82, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    let e = err(&e.0);
    assert!(e.message.contains("does not fit in 64 bits"), "{e}");
}

/// Two call sites of the runtime, both without line or goal path, each calling `t.f/2`: with
/// `-O call-sites` they are apart under names of their own (`[Mercury runtime #1]`, `#3`);
/// named by file alone they were one node again under a name that said they were apart.
#[test]
fn call_sites_without_line_or_goal_are_named_by_number() {
    let mut e = header(&Hdr {
        version: 9,
        flags: 0x108,
        counts: [2, 3, 3, 2],
        quanta: 0,
        call_seqs: 0,
    });
    // The root has two callback slots (call sites 1 and 3), each listing one call.
    e.b(4)
        .num(1)
        .num(1)
        .num(2)
        .b(4)
        .num(1)
        .b(0)
        .b(4)
        .num(2)
        .b(0);
    e.b(2).num(1).num(2).num(0x2).num(1);
    e.b(4).num(2).num(2).num(1).b(2).b(0);
    e.b(2).num(2).num(3).num(0x2).num(2);
    e.b(4).num(3).num(2).num(1).b(2).b(0);
    // The runtime's proc-static with call sites 1 and 3, then t.f's (call site 2).
    statics_with(&mut e, 9, 2, &[1, 3]);
    let names = call_node_names_by_site(&e.0);
    assert_eq!(
        names,
        [
            "Mercury runtime.Mercury runtime/0",
            "t.f/2 [Mercury runtime #1]",
            "t.f/2 [Mercury runtime #3]"
        ]
    );
}

#[test]
fn a_root_id_of_several_bytes_is_reported_at_its_first_byte() {
    // Root proc-dynamic id 1000 (`87 68`) in a file of 3 proc-dynamics: the error names the
    // byte where the id starts, as every other field's error does.
    let mut bytes = chain(2);
    let root_at = bytes
        .windows(5)
        .position(|w| w == [100, 0, 2, 2, 1])
        .expect("ticks, quanta, call seqs, root")
        + 4;
    bytes.splice(root_at..root_at + 1, [0x87, 0x68]);
    let e = err(&bytes);
    assert!(e.message.contains("root proc-dynamic id 1000"), "{e}");
    assert_eq!(e.byte_offset, Some(root_at as u64));
}

#[test]
fn each_listed_call_site_dynamic_gets_the_call_site_of_its_slot() {
    // `DeepFile::ref_css`: the call-site-static of each listed call-site-dynamic's slot, one
    // of its proc-dynamic's procedure's call sites (in slot order), of the slot's kind; and
    // every procedure a proc-dynamic names is marked called, no other.
    let real = include_bytes!("../../../snapshots/fixtures/deep/real/mandelbrot.Deep.data");
    for bytes in [&real[..], &self_recursion(), &chain(50)] {
        let f = read_file(bytes).expect("read");
        let mut named = vec![false; f.ps.len()];
        let mut listed = 0;
        for p in f.pd.iter().skip(1) {
            named[p.ps as usize] = true;
            let ps = &f.ps[p.ps as usize];
            let sites = &f.ps_css[ps.css_start as usize..][..ps.n_css as usize];
            let mut last_slot = 0;
            for &css in &f.ref_css[p.ref_start as usize..][..p.n_refs as usize] {
                let slot = sites
                    .iter()
                    .position(|&c| c == css)
                    .expect("a call site of the proc-dynamic's procedure");
                assert!(slot >= last_slot, "slot order");
                last_slot = slot;
                let kind = f.slot_kind[p.slot_start as usize + slot];
                assert_eq!(kind, f.css[css as usize].kind);
                listed += 1;
            }
        }
        assert_eq!(listed, f.refs.len());
        let called: Vec<bool> = f.ps.iter().map(|p| p.called).collect();
        assert_eq!(called, named);
    }
}

/// A flame graph of one Count column says what it counts by the column's unit
/// (`-O value=fails`: `tiny.bar (1 fails, ...)`): each port count and the recursive calls have
/// a unit of their own, so none reads as another (exits, fails, redos and excps all said
/// `events`, and recursive calls said `calls`, as the calls do).
#[test]
fn each_count_column_has_a_unit_of_its_own() {
    let p = parse_deep(
        &self_recursion_with_quanta(7),
        &DeepOptions::default(),
        &mut Context::silent(),
    )
    .expect("parse");
    let v = p.view();
    let counts: Vec<(&str, &str)> = (0..v.value_types.len())
        .filter(|&c| v.value_types[c].kind == ValueKind::Count)
        .map(|c| (v.strings.get(v.value_types[c].name), v.value_type_unit(c)))
        .collect();
    assert_eq!(
        counts,
        [
            ("calls", "calls"),
            ("recursive_calls", "recursive calls"),
            ("exits", "exits"),
            ("fails", "fails"),
            ("redos", "redos"),
            ("excps", "exceptions"),
        ]
    );
}
