//! SVG flame graphs from inferno's flamegraph inputs: each fixture is parsed by the folded
//! parser, drawn by the flamegraph plugin (through `Format::emit` with `-O` options, as the
//! host calls it) and snapshotted. For every case the test also asserts:
//!
//! * the output is byte-identical on a second run;
//! * it is well-formed XML (read back with quick-xml), with the script in one CDATA section;
//! * `fg:total` is the profile's grand total, every frame lies inside its parent, and every
//!   frame's `fg:w` is the total of the call node its path of names leads to (in the tree of the
//!   drawn profile: the reversed one with `-O reverse`); drawn again with `-O minwidth=0`, the
//!   roots add up to the grand total and every call node with a value is drawn;
//! * where inferno's expected SVG exists (`inferno/flamegraph/**/*.svg`, produced by inferno
//!   0.12.8), the frames (title, depth, `fg:x`, `fg:w`) are inferno's frames.
//!
//! Snapshots are `tests/snapshots/flamegraph__<case>.snap`: a summary, then the SVG with the
//! embedded script elided (it is the same in every file). Outputs with more than
//! [`FULL_SNAPSHOT_FRAMES`] frames keep their first [`SUMMARY_FRAMES`] frames and a hash of
//! the whole file.

use profconv_flamegraph::attrs::SortOrder;
use profconv_flamegraph::quick_xml::Reader;
use profconv_flamegraph::quick_xml::events::{BytesStart, Event};
use profconv_flamegraph::{Flamegraph, color, emit_diff, merge};
use profconv_folded::parse_folded;
use profconv_ir::transform::apply;
use profconv_ir::{CallTree, NONE, Profile, Transform};
use profconv_plugin::{Context, Format, Input, Options, Output};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Outputs with up to this many frames are snapshotted whole.
const FULL_SNAPSHOT_FRAMES: usize = 120;
/// Frames kept in the snapshot of a larger output.
const SUMMARY_FRAMES: usize = 40;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn read_fixture(rel: &str) -> Vec<u8> {
    let path = fixtures_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn settings(input: &str, description: &str) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s.set_description(description);
    s.set_input_file(fixtures_dir().join(input));
    s
}

/// Parses a folded fixture; returns the profile and the parser's warnings.
fn parse(rel: &str, skip_bad_lines: bool) -> (Profile, Vec<String>) {
    let bytes = read_fixture(rel);
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(format!("parse: {m}"));
    let mut cx = Context::with_sink(&mut sink);
    let p = parse_folded(&mut Input::from_slice(&bytes), skip_bad_lines, &mut cx)
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    (p, messages)
}

fn options(pairs: &[(&str, Option<&str>)]) -> Options {
    Options::new(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect(),
    )
}

/// Emits through the plugin entry; returns the SVG and the emitter's warnings.
fn emit(p: &Profile, opts: &[(&str, Option<&str>)]) -> (String, Vec<String>) {
    let mut buf = Vec::new();
    let mut messages = Vec::new();
    {
        let mut sink = |_: u32, m: &str| messages.push(format!("emit: {m}"));
        let mut cx = Context::with_sink(&mut sink);
        let mut out = Output::from_writer(&mut buf);
        Flamegraph::emit(&p.view(), &mut out, &options(opts), &mut cx).unwrap();
        out.flush().unwrap();
    }
    (String::from_utf8(buf).expect("UTF-8 output"), messages)
}

/// A frame read back from an SVG.
#[derive(Clone, Debug, Default)]
struct Frame {
    title: String,
    name: String,
    y: f64,
    height: f64,
    fill: String,
    fg_x: i64,
    fg_w: i64,
    depth: usize,
}

/// What the checks need from an SVG.
#[derive(Debug, Default)]
struct Svg {
    frames: Vec<Frame>,
    total: i64,
    cdata_sections: usize,
}

fn attr(e: &BytesStart<'_>, key: &str) -> Option<String> {
    e.attributes()
        .map(|a| a.expect("well-formed attribute"))
        .find_map(|a| {
            (a.key.as_ref() == key.as_bytes()).then(|| {
                a.normalized_value(profconv_flamegraph::quick_xml::XmlVersion::Implicit1_0)
                    .expect("attribute value")
                    .into_owned()
            })
        })
}

fn entity(name: &[u8]) -> &'static str {
    match name {
        b"amp" => "&",
        b"lt" => "<",
        b"gt" => ">",
        b"quot" => "\"",
        b"apos" => "'",
        other => panic!("unexpected entity &{};", String::from_utf8_lossy(other)),
    }
}

/// Reads an SVG (ours or inferno's) with quick-xml; panics if it is not well-formed. Frames
/// are the `<g>` children of the element with `id="frames"`; `inverted` says where depth 0 is.
fn read_svg(svg: &str, inverted: bool) -> Svg {
    let mut r = Reader::from_str(svg);
    let mut out = Svg::default();
    let mut depth_in_frames: Option<usize> = None; // element depth inside #frames
    let mut cur: Option<Frame> = None;
    let mut in_title = false;
    loop {
        let ev = r
            .read_event()
            .unwrap_or_else(|e| panic!("not well-formed XML at byte {}: {e}", r.buffer_position()));
        match ev {
            Event::Start(e) => {
                if let Some(d) = depth_in_frames.as_mut() {
                    *d += 1;
                    if *d == 1 && e.name().as_ref() == b"g" {
                        cur = Some(Frame::default());
                    }
                    in_title = e.name().as_ref() == b"title";
                } else if attr(&e, "id").as_deref() == Some("frames") {
                    depth_in_frames = Some(0);
                    out.total = attr(&e, "total_samples")
                        .or_else(|| attr(&e, "fg:total"))
                        .map_or(0, |t| t.parse().unwrap());
                }
            }
            Event::Empty(e) => {
                if let (Some(f), b"rect") = (cur.as_mut(), e.name().as_ref()) {
                    f.y = attr(&e, "y").unwrap().parse().unwrap();
                    f.height = attr(&e, "height").unwrap().parse().unwrap();
                    f.fill = attr(&e, "fill").unwrap();
                    f.fg_x = attr(&e, "fg:x").unwrap().parse().unwrap();
                    f.fg_w = attr(&e, "fg:w").unwrap().parse().unwrap();
                }
            }
            Event::Text(t) if in_title => {
                if let Some(f) = cur.as_mut() {
                    f.title.push_str(&t.xml10_content().unwrap());
                }
            }
            Event::GeneralRef(g) if in_title => {
                if let Some(f) = cur.as_mut() {
                    f.title.push_str(entity(g.as_ref()));
                }
            }
            Event::CData(_) => out.cdata_sections += 1,
            Event::End(e) => {
                in_title = false;
                if let Some(d) = depth_in_frames.as_mut() {
                    if *d == 0 {
                        depth_in_frames = None;
                    } else {
                        *d -= 1;
                        if *d == 0 && e.name().as_ref() == b"g" {
                            out.frames.extend(cur.take());
                        }
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    // Depth from the rows: roots sit at the largest y (flame) or the smallest (icicle).
    let row = out.frames.first().map_or(16.0, |f| f.height + 1.0);
    let base = if inverted {
        out.frames.iter().map(|f| f.y).fold(f64::INFINITY, f64::min)
    } else {
        out.frames
            .iter()
            .map(|f| f.y)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    for f in &mut out.frames {
        let rows = if inverted { f.y - base } else { base - f.y } / row;
        assert!(
            (rows - rows.round()).abs() < 1e-6,
            "frame off the row grid: {f:?}"
        );
        f.depth = rows.round() as usize;
        f.name = f.title[..f.title.rfind(" (").expect("title with a value")].to_string();
    }
    out
}

/// Totals of the call nodes of `p` by path of displayed names (annotations stripped, as the
/// emitter shows them), in value column 0.
fn totals_by_path(p: &Profile) -> BTreeMap<Vec<String>, Vec<i64>> {
    let v = p.view();
    let tree = CallTree::build(&v).unwrap();
    let mut paths: Vec<Vec<String>> = Vec::with_capacity(tree.len());
    let mut map: BTreeMap<Vec<String>, Vec<i64>> = BTreeMap::new();
    for n in 0..tree.len() {
        let mut path = if tree.parent[n] == NONE {
            Vec::new()
        } else {
            paths[tree.parent[n] as usize].clone()
        };
        path.push(color::display_name(v.func_name_str(tree.func[n])).to_string());
        map.entry(path.clone())
            .or_default()
            .push(tree.total_values[0][n]);
        paths.push(path);
    }
    map
}

/// The structural checks shared by every case: totals, nesting, node totals.
fn check_frames(case: &str, svg: &Svg, drawn: &Profile, chart: bool) {
    let tree = CallTree::build(&drawn.view()).unwrap();
    assert_eq!(svg.total, tree.grand_totals[0], "{case}: fg:total");
    assert_eq!(svg.cdata_sections, 1, "{case}: one script");
    let by_path = totals_by_path(drawn);
    let mut stack: Vec<&Frame> = Vec::new();
    let mut path: Vec<String> = Vec::new();
    for (i, f) in svg.frames.iter().enumerate() {
        if f.depth == 0 {
            // The frame under everything, first and only at depth 0.
            assert_eq!(i, 0, "{case}: one frame at depth 0");
            assert_eq!(
                (f.name.as_str(), f.fg_x, f.fg_w),
                ("all", 0, svg.total),
                "{case}: the frame under everything"
            );
            assert!(f.title.contains(" 100%"), "{case}: {}", f.title);
        }
        stack.truncate(f.depth);
        assert_eq!(
            stack.len(),
            f.depth,
            "{case}: {} has no parent drawn",
            f.title
        );
        if let Some(parent) = stack.last() {
            assert!(
                parent.fg_x <= f.fg_x && f.fg_x + f.fg_w <= parent.fg_x + parent.fg_w,
                "{case}: {} lies outside its parent {}",
                f.title,
                parent.title
            );
        }
        assert!(f.fg_w > 0, "{case}: {} is drawn with no width", f.title);
        stack.push(f);
        if f.depth == 0 {
            continue;
        }
        path.truncate(f.depth - 1);
        path.push(f.name.clone());
        if !chart {
            let totals = by_path
                .get(&path)
                .unwrap_or_else(|| panic!("{case}: no call node {path:?}"));
            assert!(
                totals.contains(&f.fg_w),
                "{case}: {path:?} is drawn {} wide, its call node total is {totals:?}",
                f.fg_w
            );
        }
    }
}

/// Checks with nothing pruned: the roots add up to the total; every valued node is drawn.
fn check_unpruned(case: &str, svg: &Svg, drawn: &Profile, chart: bool) {
    let roots: i64 = svg
        .frames
        .iter()
        .filter(|f| f.depth == 1)
        .map(|f| f.fg_w)
        .sum();
    assert_eq!(roots, svg.total, "{case}: the roots add up to the total");
    if !chart {
        let tree = CallTree::build(&drawn.view()).unwrap();
        let valued = tree.total_values[0].iter().filter(|&&t| t > 0).count();
        assert_eq!(
            svg.frames.len(),
            valued + 1,
            "{case}: one frame per valued node, and all"
        );
    }
}

/// The emitter draws from the stack table when it can; check that this gives the call tree's
/// frames (func, depth, left edge, width) for this profile, at two pruning levels.
fn check_both_paths(case: &str, drawn: &Profile) {
    let v = drawn.view();
    if v.value_types.is_empty() {
        return;
    }
    let tree = CallTree::build(&v).unwrap();
    let (widths, _) = merge::node_widths(&v, &tree, Some(0));
    for min in [0.0, 1.0, 100.0] {
        for order in [SortOrder::Name, SortOrder::Weight] {
            let slow = merge::merged(&v, &tree, &widths, min, order);
            let Some((fast, _)) = merge::merged_from_stacks(&v, Some(0), |_| min, order) else {
                panic!("{case}: folded stacks always qualify for the stack-table path");
            };
            let key = |l: &merge::Layout| -> Vec<(u32, u32, i64, i64)> {
                l.frames
                    .iter()
                    .map(|f| (f.func, f.depth, f.x, f.w))
                    .collect()
            };
            assert_eq!(key(&slow), key(&fast), "{case}: min {min} {order:?}");
        }
    }
}

/// The SVG for a snapshot: the script elided, long outputs cut after a few frames.
fn snapshot_text(svg: &str, frames: usize) -> String {
    let start = svg.find("<![CDATA[").expect("script") + "<![CDATA[".len();
    let end = svg.find("]]>").expect("end of script");
    let mut text = format!(
        "{}/* flamegraph.js: {} bytes, elided */{}",
        &svg[..start],
        end - start,
        &svg[end..]
    );
    if frames > FULL_SNAPSHOT_FRAMES {
        let head_end = text.find("<g id=\"frames\"").expect("frames");
        let mut lines = text[head_end..].lines();
        let mut cut = text[..head_end].to_string();
        for line in lines.by_ref().take(SUMMARY_FRAMES + 1) {
            cut.push_str(line);
            cut.push('\n');
        }
        let _ = writeln!(
            cut,
            "… {} more frames; the whole file has {} bytes, FNV-1a {:016x}",
            frames - SUMMARY_FRAMES,
            svg.len(),
            fnv1a(svg.as_bytes())
        );
        text = cut;
    }
    text
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One snapshot case.
struct Case {
    name: &'static str,
    input: &'static str,
    options: &'static [(&'static str, Option<&'static str>)],
    skip_bad_lines: bool,
    /// inferno's expected SVG for the same input and options, and whether the frames match it.
    inferno: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        name: "austin",
        input: "folded/inferno/flamegraph/austin/flames.txt",
        options: &[],
        skip_bad_lines: false,
        inferno: Some("flamegraph/inferno/flamegraph/austin/flame.svg"),
    },
    Case {
        name: "narrow_blocks",
        input: "folded/inferno/flamegraph/narrow-blocks/narrow-blocks.txt",
        options: &[],
        skip_bad_lines: false,
        inferno: Some("flamegraph/inferno/flamegraph/narrow-blocks/narrow-blocks.svg"),
    },
    Case {
        name: "grey_frames",
        input: "folded/inferno/flamegraph/grey-frames/grey-frames.txt",
        options: &[],
        skip_bad_lines: false,
        inferno: Some("flamegraph/inferno/flamegraph/grey-frames/grey-frames.svg"),
    },
    Case {
        name: "fractional_reversed",
        input: "folded/inferno/flamegraph/fractional-samples/fractional.txt",
        options: &[("reverse", None)],
        skip_bad_lines: false,
        // inferno truncates fractional counts; profconv keeps them (see docs).
        inferno: None,
    },
    Case {
        name: "with_space_reversed",
        input: "folded/inferno/flamegraph/fractional-samples/with-space.txt",
        options: &[("reverse", None)],
        skip_bad_lines: false,
        inferno: None,
    },
    Case {
        name: "differential_input",
        input: "folded/inferno/flamegraph/differential/perf-cycles-instructions-01-collapsed-all-diff.txt",
        options: &[],
        skip_bad_lines: false,
        inferno: None,
    },
    Case {
        name: "options_with_symbols",
        input: "folded/inferno/flamegraph/differential/perf-cycles-instructions-01-collapsed-all-diff.txt",
        options: &[
            ("title", Some("Test <& ' \"")),
            ("subtitle", Some("Test Subtitle")),
            ("notes", Some("Test Notes <& ' \" --")),
            ("countname", Some("test-samples <& ' \"")),
            ("nametype", Some("Test: '")),
            ("fonttype", Some("Andale Mono\"")),
            ("width", Some("800")),
            ("height", Some("20")),
            ("fontsize", Some("11")),
            ("colors", Some("blue")),
        ],
        skip_bad_lines: false,
        inferno: None,
    },
    Case {
        name: "bad_lines_skipped",
        input: "folded/inferno/flamegraph/bad-lines/bad-lines.txt",
        options: &[],
        skip_bad_lines: true,
        inferno: None,
    },
    Case {
        name: "empty",
        input: "folded/inferno/flamegraph/empty/empty.txt",
        options: &[],
        skip_bad_lines: false,
        inferno: None,
    },
    Case {
        name: "perf_vertx_java",
        input: "flamegraph/inferno/flamegraph/unsorted-input/perf-vertx-stacks-01-collapsed-all-unsorted.txt",
        options: &[("colors", Some("java"))],
        skip_bad_lines: false,
        inferno: Some(
            "flamegraph/inferno/flamegraph/perf-vertx-stacks/perf-vertx-stacks-01-collapsed-all.svg",
        ),
    },
    Case {
        name: "perf_vertx_inverted",
        input: "flamegraph/inferno/flamegraph/unsorted-input/perf-vertx-stacks-01-collapsed-all-unsorted.txt",
        options: &[("inverted", None)],
        skip_bad_lines: false,
        inferno: Some("flamegraph/inferno/flamegraph/inverted/inverted.svg"),
    },
    Case {
        name: "perf_vertx_weight_dark_pruned",
        input: "flamegraph/inferno/flamegraph/unsorted-input/perf-vertx-stacks-01-collapsed-all-unsorted.txt",
        options: &[
            ("sort", Some("weight")),
            ("dark", None),
            ("minwidth", Some("2%")),
            ("colors", Some("rust")),
        ],
        skip_bad_lines: false,
        inferno: None,
    },
    Case {
        name: "async_profiler_java",
        input: "flamegraph/inferno/flamegraph/colors/async-profiler-collapsed-part.txt",
        options: &[("colors", Some("java"))],
        skip_bad_lines: false,
        inferno: Some("flamegraph/inferno/flamegraph/colors/deterministic.svg"),
    },
    Case {
        name: "flamechart",
        input: "flamegraph/inferno/flamegraph/flamechart/flames.txt",
        options: &[("flamechart", None)],
        skip_bad_lines: false,
        inferno: None,
    },
];

/// A differential profile's `after` column alone, the shape its graph is drawn in.
fn after_side(p: &Profile) -> Profile {
    let col = p.view().value_type_index("after").expect("an after column");
    let mut after = p.clone();
    after.value_types = vec![p.value_types[col]];
    after.samples.values = vec![p.samples.values[col].clone()];
    after
}

/// `(depth, title, fg:x, fg:w)` of every frame, sorted.
fn frame_keys(svg: &Svg) -> Vec<(usize, String, i64, i64)> {
    let mut v: Vec<_> = svg
        .frames
        .iter()
        .map(|f| (f.depth, f.title.clone(), f.fg_x, f.fg_w))
        .collect();
    v.sort();
    v
}

fn is_set(opts: &[(&str, Option<&str>)], key: &str) -> bool {
    opts.iter().any(|(k, _)| *k == key)
}

#[test]
fn inferno_inputs() {
    for case in CASES {
        let (profile, mut messages) = parse(case.input, case.skip_bad_lines);
        let (svg, emit_messages) = emit(&profile, case.options);
        messages.extend(emit_messages);
        let (again, _) = emit(&profile, case.options);
        assert!(
            svg == again,
            "{}: output differs between two runs",
            case.name
        );

        let inverted = is_set(case.options, "inverted");
        let chart = is_set(case.options, "flamechart");
        let drawn = if is_set(case.options, "reverse") {
            apply(&profile.view(), &Transform::Invert).unwrap().0
        } else if profile.view().meta("diff").is_some() {
            // A differential file (`STACK BEFORE AFTER`): drawn in its after column's shape.
            after_side(&profile)
        } else {
            profile.clone()
        };
        let read = read_svg(&svg, inverted);
        check_frames(case.name, &read, &drawn, chart);
        if !chart {
            check_both_paths(case.name, &drawn);
        }

        // Nothing pruned: every valued node, roots adding up to the total.
        let mut unpruned_opts = case.options.to_vec();
        unpruned_opts.retain(|(k, _)| *k != "minwidth");
        unpruned_opts.push(("minwidth", Some("0")));
        let (unpruned, _) = emit(&profile, &unpruned_opts);
        let unpruned = read_svg(&unpruned, inverted);
        check_frames(case.name, &unpruned, &drawn, chart);
        if !unpruned.frames.is_empty() {
            check_unpruned(case.name, &unpruned, &drawn, chart);
        }

        // The same frames as inferno, with inferno's pruning (0.01 % of the total).
        if let Some(expected) = case.inferno {
            let mut o = case.options.to_vec();
            o.push(("minwidth", Some("0.01%")));
            let (ours, _) = emit(&profile, &o);
            let theirs = String::from_utf8(read_fixture(expected)).unwrap();
            let (ours, theirs) = (read_svg(&ours, inverted), read_svg(&theirs, inverted));
            assert_eq!(ours.total, theirs.total, "{}: total vs inferno", case.name);
            let (a, b) = (frame_keys(&ours), frame_keys(&theirs));
            let missing: Vec<_> = b.iter().filter(|k| !a.contains(k)).take(5).collect();
            let extra: Vec<_> = a.iter().filter(|k| !b.contains(k)).take(5).collect();
            assert!(
                a == b,
                "{}: frames differ from inferno's {expected} ({} vs {}): missing {missing:?}, extra {extra:?}",
                case.name,
                a.len(),
                b.len()
            );
        }

        let mut summary = String::new();
        let _ = writeln!(summary, "input: {}", case.input);
        let _ = writeln!(summary, "options: {:?}", case.options);
        let _ = writeln!(
            summary,
            "frames: {} drawn ({} with -O minwidth=0), total {}, max depth {}, {} bytes",
            read.frames.len(),
            unpruned.frames.len(),
            read.total,
            read.frames.iter().map(|f| f.depth).max().unwrap_or(0),
            svg.len()
        );
        if let Some(expected) = case.inferno {
            let _ = writeln!(
                summary,
                "same frames (title, depth, fg:x, fg:w) as inferno's {expected} with -O minwidth=0.01%"
            );
        }
        let _ = writeln!(summary, "messages: {}", messages.len());
        for m in &messages {
            let _ = writeln!(summary, "  {m}");
        }
        summary.push_str("---\n");
        summary.push_str(&snapshot_text(&svg, read.frames.len()));
        settings(
            case.input,
            &format!(
                "flamegraph of {} with {:?}: summary and SVG (script elided)",
                case.input, case.options
            ),
        )
        .bind(|| insta::assert_snapshot!(format!("flamegraph__{}", case.name), summary));
    }
}

/// `stack before after` lines of inferno-diff-folded's expected output.
fn diff_lines(rel: &str) -> Vec<(Vec<String>, i64, i64)> {
    String::from_utf8(read_fixture(rel))
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut parts = l.rsplitn(3, ' ');
            let after = parts.next().unwrap().parse().unwrap();
            let before = parts.next().unwrap().parse().unwrap();
            let stack = parts
                .next()
                .unwrap()
                .split(';')
                .map(|n| color::display_name(n).to_string())
                .collect();
            (stack, before, after)
        })
        .collect()
}

fn emit_diff_svg(
    before: &Profile,
    after: &Profile,
    opts: &[(&str, Option<&str>)],
) -> (String, Vec<String>) {
    let mut buf = Vec::new();
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(format!("emit: {m}"));
    let mut cx = Context::with_sink(&mut sink);
    emit_diff(
        &before.view(),
        &after.view(),
        &mut buf,
        &options(opts),
        &mut cx,
    )
    .unwrap();
    (String::from_utf8(buf).unwrap(), messages)
}

#[test]
fn differential_of_inferno_diff_folded_inputs() {
    let dir = "flamegraph/inferno/diff-folded";
    let (before, _) = parse(&format!("{dir}/before.txt"), false);
    let (after, _) = parse(&format!("{dir}/after.txt"), false);
    for (name, opts, expected) in [
        ("diff", &[][..], "results/default.txt"),
        (
            "diff_normalized",
            &[("normalize", None)][..],
            "results/normalize.txt",
        ),
    ] {
        let (svg, messages) = emit_diff_svg(&before, &after, opts);
        assert_eq!(
            svg,
            emit_diff_svg(&before, &after, opts).0,
            "{name}: deterministic"
        );
        let read = read_svg(&svg, false);
        check_frames(name, &read, &after, false);
        // Each stack of inferno-diff-folded's output is a leaf here: its self change is
        // after − before (before rounded after normalizing, as inferno does).
        let mut path: Vec<String> = Vec::new();
        let mut leaf_changes = BTreeMap::new();
        for f in read.frames.iter().skip(1) {
            path.truncate(f.depth - 1);
            path.push(f.name.clone());
            let change = f.title.rsplit_once(", self ").unwrap().1;
            leaf_changes.insert(path.clone(), change.to_string());
        }
        for (stack, b, a) in diff_lines(&format!("{dir}/{expected}")) {
            if a == 0 {
                continue; // not in after's shape
            }
            let got = &leaf_changes[&stack];
            let number = got.split(' ').next().unwrap().replace('±', "");
            let ours: f64 = number.replace(',', "").parse().unwrap();
            // inferno-diff-folded -n truncates each normalized count to an integer; profconv
            // keeps the fraction (shown with two decimals), so they may differ by less than 1.
            let slack = if opts.is_empty() { 0.0 } else { 1.0 };
            assert!(
                (ours - (a - b) as f64).abs() <= slack,
                "{name}: {stack:?}: self change {got}, inferno {}",
                a - b
            );
        }
        let mut text = format!(
            "before: {dir}/before.txt\nafter: {dir}/after.txt\noptions: {opts:?}\nmessages: {}\n",
            messages.len()
        );
        for m in &messages {
            let _ = writeln!(text, "  {m}");
        }
        text.push_str("---\n");
        text.push_str(&snapshot_text(&svg, read.frames.len()));
        // inferno-diff-folded's output, `STACK BEFORE AFTER`, read by the folded parser as a
        // differential profile, draws the graph of `profconv diff before.txt after.txt` (the
        // profile `diff::combine` builds) byte for byte, and the frames of `emit_diff` (whose
        // count name is the inputs' column's, `samples`, where a differential profile's is
        // `after`).
        let (diffed, _) = parse(&format!("{dir}/results/default.txt"), false);
        assert_eq!(diffed.view().meta("diff"), Some("before,after"));
        let combined =
            profconv_ir::diff::combine(&before.view(), 0, &after.view(), 0).expect("combine");
        let (from_file, _) = emit(&diffed, opts);
        assert!(
            from_file == emit(&combined, opts).0,
            "{name}: the graph of results/default.txt differs from profconv diff's"
        );
        let frames = |svg: &Svg| -> Vec<(usize, String, i64, i64, String)> {
            svg.frames
                .iter()
                .map(|f| (f.depth, f.name.clone(), f.fg_x, f.fg_w, f.fill.clone()))
                .collect()
        };
        assert_eq!(
            frames(&read_svg(&from_file, false)),
            frames(&read),
            "{name}: the frames of results/default.txt and of emit_diff"
        );
        settings(
            &format!("{dir}/after.txt"),
            "differential flame graph of inferno's diff-folded before/after inputs",
        )
        .bind(|| insta::assert_snapshot!(format!("flamegraph__{name}"), text));
    }
}
