//! End-to-end tests of the emitter: profile in, SVG out, parsed back with quick-xml.

use super::*;
use profconv_plugin::ir::testing::trace;
use profconv_plugin::ir::{Profile, ProfileBuilder};
use quick_xml::Reader;
use quick_xml::events::Event;

/// A frame as read back from the SVG.
#[derive(Debug, Default, Clone)]
struct Drawn {
    title: String,
    x: f64,
    y: f64,
    width: f64,
    fill: String,
    fg_x: i64,
    fg_w: i64,
    label: String,
}

/// What the tests look at in an SVG.
#[derive(Debug, Default)]
struct Parsed {
    /// The frame under everything.
    all: Option<Drawn>,
    /// The other frames.
    frames: Vec<Drawn>,
    total: i64,
    texts: Vec<(String, String)>,
    comments: Vec<String>,
    root_attrs: Vec<(String, String)>,
    style: String,
}

/// Parses the whole SVG (panics if it is not well-formed XML).
fn parse_svg(svg: &[u8]) -> Parsed {
    let text = std::str::from_utf8(svg).expect("UTF-8");
    let mut r = Reader::from_str(text);
    let mut out = Parsed::default();
    let mut path: Vec<String> = Vec::new();
    let mut cur: Option<Drawn> = None;
    loop {
        match r.read_event().expect("well-formed XML") {
            Event::Start(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                let attrs = attrs_of(&e);
                let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
                match name.as_str() {
                    "svg" => out.root_attrs = attrs.clone(),
                    "g" if get("id").as_deref() == Some("frames") => {
                        out.total = get("fg:total").unwrap().parse().unwrap();
                    }
                    "g" if path.last().is_some_and(|p| p == "g#frames") => {
                        cur = Some(Drawn::default());
                    }
                    "text" if cur.is_none() => out
                        .texts
                        .push((get("id").unwrap_or_default(), String::new())),
                    _ => {}
                }
                let tag = if get("id").as_deref() == Some("frames") {
                    "g#frames".to_string()
                } else {
                    name
                };
                path.push(tag);
            }
            Event::Empty(e) => {
                let attrs = attrs_of(&e);
                let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
                if e.name().as_ref() == b"rect" {
                    if let Some(f) = cur.as_mut() {
                        f.x = get("x").unwrap().parse().unwrap();
                        f.y = get("y").unwrap().parse().unwrap();
                        f.width = get("width").unwrap().parse().unwrap();
                        f.fill = get("fill").unwrap();
                        f.fg_x = get("fg:x").unwrap().parse().unwrap();
                        f.fg_w = get("fg:w").unwrap().parse().unwrap();
                    }
                }
            }
            Event::Text(t) => {
                let s = t.xml10_content().unwrap().into_owned();
                match (path.last().map(String::as_str), cur.as_mut()) {
                    (Some("title"), Some(f)) => f.title.push_str(&s),
                    (Some("text"), Some(f)) => f.label.push_str(&s),
                    (Some("text"), None) => {
                        if let Some(last) = out.texts.last_mut() {
                            last.1.push_str(&s);
                        }
                    }
                    (Some("style"), _) => out.style.push_str(&s),
                    _ => {}
                }
            }
            Event::GeneralRef(g) => {
                // Entities inside titles and labels (`&amp;`, `&lt;`), and character
                // references (`&#13;`).
                let char_ref = g.resolve_char_ref().expect("a valid character reference");
                let mut buf = [0; 4];
                let s = match (char_ref, g.as_ref()) {
                    (Some(c), _) => &*c.encode_utf8(&mut buf),
                    (None, b"amp") => "&",
                    (None, b"lt") => "<",
                    (None, b"gt") => ">",
                    (None, b"quot") => "\"",
                    (None, b"apos") => "'",
                    _ => panic!("unexpected entity"),
                };
                match (path.last().map(String::as_str), cur.as_mut()) {
                    (Some("title"), Some(f)) => f.title.push_str(s),
                    (Some("text"), Some(f)) => f.label.push_str(s),
                    (Some("text"), None) => {
                        if let Some(last) = out.texts.last_mut() {
                            last.1.push_str(s);
                        }
                    }
                    (Some("style"), _) => out.style.push_str(s),
                    _ => {}
                }
            }
            Event::Comment(c) => out.comments.push(String::from_utf8(c.to_vec()).unwrap()),
            Event::End(e) => {
                path.pop();
                if e.name().as_ref() == b"g" && path.last().is_some_and(|p| p == "g#frames") {
                    out.frames.extend(cur.take());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if out
        .frames
        .first()
        .is_some_and(|f| f.title.starts_with("all ("))
    {
        out.all = Some(out.frames.remove(0));
    }
    out
}

fn attrs_of(e: &quick_xml::events::BytesStart<'_>) -> Vec<(String, String)> {
    e.attributes()
        .map(|a| {
            let a = a.unwrap();
            (
                String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .unwrap()
                    .into_owned(),
            )
        })
        .collect()
}

fn folded(lines: &[(&str, i64)]) -> Profile {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    for (stack, n) in lines {
        let names: Vec<&str> = stack.split(';').collect();
        b.add_stack(&names, &[*n]).unwrap();
    }
    b.finish()
}

fn opts(pairs: &[(&str, Option<&str>)]) -> FlameOptions {
    let o = Options::new(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect(),
    );
    FlameOptions::from_options(&o).unwrap()
}

/// Emits and returns the SVG and the warnings.
fn emit(p: &Profile, o: &FlameOptions) -> (Vec<u8>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
    let mut cx = Context::with_sink(&mut sink);
    let mut out = Vec::new();
    emit_flamegraph(&p.view(), &mut out, o, &mut cx).unwrap();
    (out, warnings)
}

fn title_name(t: &str) -> &str {
    &t[..t.rfind(" (").unwrap()]
}

#[test]
fn a_small_graph_is_drawn_as_expected() {
    let p = folded(&[("main;a;b", 3), ("main;a", 1), ("main;c", 4), ("other", 2)]);
    let (svg, warnings) = emit(&p, &FlameOptions::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    let s = parse_svg(&svg);
    assert_eq!(s.total, 10);
    let got: Vec<(String, i64, i64)> = s
        .frames
        .iter()
        .map(|f| (f.title.clone(), f.fg_x, f.fg_w))
        .collect();
    assert_eq!(
        got,
        [
            ("main (8 samples, 80.00%)".to_string(), 0, 8),
            ("a (4 samples, 40.00%)".to_string(), 0, 4),
            ("b (3 samples, 30.00%)".to_string(), 1, 3),
            ("c (4 samples, 40.00%)".to_string(), 4, 4),
            ("other (2 samples, 20.00%)".to_string(), 8, 2),
        ]
    );
    let all = s.all.as_ref().expect("the frame under everything");
    assert_eq!(
        (all.title.as_str(), all.fg_x, all.fg_w),
        ("all (10 samples, 100%)", 0, 10)
    );
    // Pixels: 1180 px for 10 samples, 10 px of padding; roots at the bottom.
    let main = &s.frames[0];
    assert!(main.y < all.y);
    assert_eq!((main.x, main.width), (10.0, 944.0));
    assert_eq!(s.frames[4].x, 954.0);
    assert!(s.frames[1].y < main.y, "children above their parent");
    assert_eq!(main.label, "main");
    assert!(main.fill.starts_with("rgb("));
    let texts: Vec<&str> = s.texts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        texts,
        [
            "title",
            "details",
            "unzoom",
            "search",
            "ignorecase",
            "matched"
        ]
    );
    assert_eq!(s.texts[0].1, "Flame Graph");
    assert!(s.style.contains("font-family: monospace"));
    // The script is embedded, nothing is fetched.
    let text = String::from_utf8(svg.clone()).unwrap();
    assert!(text.contains("<![CDATA[") && text.contains("function fg_init"));
    assert!(!text.contains("http://") || text.matches("http://").count() == 1);
    assert!(!text.contains("https://"));
}

#[test]
fn output_is_byte_identical_across_runs() {
    let p = folded(&[("main;a;b", 3), ("main;a", 1), ("main;c", 4), ("other", 2)]);
    let o = opts(&[("colors", Some("java")), ("inverted", None)]);
    assert_eq!(emit(&p, &o).0, emit(&p, &o).0);
}

#[test]
fn names_with_markup_and_control_characters_stay_valid_xml() {
    let p = folded(&[("<main> & \"co\";a\u{1}b 'x'", 5), ("日本語の関数名;é", 2)]);
    let o = opts(&[
        ("title", Some("T <&> \"q\"")),
        ("subtitle", Some("S & s")),
        ("notes", Some("n -- <x> -")),
        ("countname", Some("things & stuff")),
        ("fonttype", Some("Andale Mono\"")),
        ("nametype", Some("Fn: <'")),
    ]);
    let (svg, _) = emit(&p, &o);
    let s = parse_svg(&svg);
    assert_eq!(s.frames.len(), 4);
    let names: Vec<&str> = s.frames.iter().map(|f| title_name(&f.title)).collect();
    assert_eq!(
        names,
        ["<main> & \"co\"", "a\u{fffd}b 'x'", "日本語の関数名", "é"]
    );
    assert_eq!(
        s.frames[0].title,
        "<main> & \"co\" (5 things & stuff, 71.43%)"
    );
    assert_eq!(s.texts[0], ("title".to_string(), "T <&> \"q\"".to_string()));
    assert_eq!(s.texts[1], ("subtitle".to_string(), "S & s".to_string()));
    assert_eq!(s.comments, [" NOTES: n - - &lt;x&gt; -  "]);
    assert!(s.style.contains("font-family: \"Andale Mono\\\"\""));
    let nametype = s
        .root_attrs
        .iter()
        .find(|(k, _)| k == "fg:nametype")
        .unwrap();
    assert_eq!(nametype.1, "Fn: <'");
}

/// A carriage return in a name or a title, and a tab or line break in an attribute's text, is
/// read back as itself: written raw, an XML parser reads a carriage return as a line feed, and
/// all three as spaces in an attribute.
#[test]
fn line_breaks_and_tabs_in_names_and_options_read_back_as_themselves() {
    let p = folded(&[("main;lone\rcr", 5), ("main;crlf\r\nname", 2)]);
    let o = opts(&[("title", Some("T\r1")), ("nametype", Some("a\tb\nc\rd"))]);
    let (svg, _) = emit(&p, &o);
    let s = parse_svg(&svg);
    let names: Vec<&str> = s.frames.iter().map(|f| title_name(&f.title)).collect();
    assert_eq!(names, ["main", "crlf\r\nname", "lone\rcr"]);
    assert_eq!(s.texts[0], ("title".to_string(), "T\r1".to_string()));
    let nametype = s
        .root_attrs
        .iter()
        .find(|(k, _)| k == "fg:nametype")
        .unwrap();
    assert_eq!(nametype.1, "a\tb\nc\rd");
}

/// The viewer's name is the title before its last ` (`: a count name with ` (` in it must not
/// move that cut, in a flame graph or a differential one (where the count name is written twice).
#[test]
fn a_count_name_with_parentheses_keeps_frame_names_whole() {
    let p = folded(&[("main;a (b)", 3), ("main;c", 1)]);
    let o = opts(&[("countname", Some("ms (wall) (x"))]);
    let (svg, _) = emit(&p, &o);
    let s = parse_svg(&svg);
    let names: Vec<&str> = s.frames.iter().map(|f| title_name(&f.title)).collect();
    assert_eq!(names, ["main", "a (b)", "c"]);
    assert_eq!(
        s.frames[1].title,
        "a (b) (3 ms\u{a0}(wall)\u{a0}(x, 75.00%)"
    );
    let before = folded(&[("main;a (b)", 1), ("main;c", 1)]);
    let (d, _) = emit_diff_svg(&before, &p, &o);
    let names: Vec<&str> = d.frames.iter().map(|f| title_name(&f.title)).collect();
    assert_eq!(names, ["main", "a (b)", "c"]);
}

#[test]
fn narrow_frames_are_pruned_and_labels_truncated() {
    // 1180 px for 100 000 samples: 1 sample is 0.0118 px.
    let p = folded(&[
        ("main;wide_function_name_that_is_long", 99_000),
        ("main;narrow", 1),
        ("main;medium", 999),
    ]);
    let (svg, _) = emit(&p, &FlameOptions::default());
    let s = parse_svg(&svg);
    let names: Vec<&str> = s.frames.iter().map(|f| title_name(&f.title)).collect();
    assert_eq!(names, ["main", "medium", "wide_function_name_that_is_long"]);
    // medium is 11.8 px wide: room for (11.8 - 6) / 7.08 = 0 cells, so no label.
    assert_eq!(s.frames[1].label, "");
    // minwidth in percent: 1% of 100 000 is 1000, medium (999) goes too.
    let (svg, _) = emit(&p, &opts(&[("minwidth", Some("1%"))]));
    assert_eq!(parse_svg(&svg).frames.len(), 2);
    // minwidth 0 keeps everything with a value.
    let (svg, _) = emit(&p, &opts(&[("minwidth", Some("0"))]));
    assert_eq!(parse_svg(&svg).frames.len(), 4);
    // A label that does not fit is cut with an ellipsis.
    let p = folded(&[("a_rather_long_function_name", 1), ("b", 9)]);
    let (svg, _) = emit(&p, &FlameOptions::default());
    let s = parse_svg(&svg);
    // 118 px: (118 - 6) / 7.08 = 15 cells: 14 characters and the ellipsis.
    assert_eq!(s.frames[0].label, "a_rather_long_\u{2026}");
}

#[test]
fn icicle_graph_grows_down_and_reverse_puts_leaves_at_the_base() {
    let p = folded(&[("main;a;leaf", 3), ("main;b;leaf", 2)]);
    let (svg, _) = emit(&p, &opts(&[("inverted", None)]));
    let s = parse_svg(&svg);
    assert_eq!(s.texts[0].1, "Icicle Graph");
    assert!(s.frames[1].y > s.frames[0].y, "children below their parent");
    let (svg, _) = emit(&p, &opts(&[("reverse", None)]));
    let s = parse_svg(&svg);
    let got: Vec<(&str, i64, i64)> = s
        .frames
        .iter()
        .map(|f| (title_name(&f.title), f.fg_x, f.fg_w))
        .collect();
    assert_eq!(
        got,
        [
            ("leaf", 0, 5),
            ("a", 0, 3),
            ("main", 0, 3),
            ("b", 3, 2),
            ("main", 3, 2)
        ]
    );
}

#[test]
fn sort_by_weight_puts_the_widest_first() {
    let p = folded(&[("a", 1), ("b", 5), ("c", 3)]);
    let (svg, _) = emit(&p, &opts(&[("sort", Some("weight"))]));
    let names: Vec<String> = parse_svg(&svg)
        .frames
        .iter()
        .map(|f| title_name(&f.title).to_string())
        .collect();
    assert_eq!(names, ["b", "c", "a"]);
}

#[test]
fn colours_follow_names_across_profiles() {
    let p1 = folded(&[("main;parse", 3), ("main;emit", 1)]);
    let p2 = folded(&[("start;emit", 10), ("start;zzz;parse", 1)]);
    let fill = |p: &Profile, name: &str| {
        let (svg, _) = emit(p, &FlameOptions::default());
        parse_svg(&svg)
            .frames
            .into_iter()
            .find(|f| title_name(&f.title) == name)
            .unwrap()
            .fill
    };
    assert_eq!(fill(&p1, "parse"), fill(&p2, "parse"));
    assert_eq!(fill(&p1, "emit"), fill(&p2, "emit"));
    assert_ne!(fill(&p1, "parse"), fill(&p1, "emit"));
}

#[test]
fn dark_theme_changes_the_background_and_text() {
    let p = folded(&[("a", 1)]);
    let (light, _) = emit(&p, &FlameOptions::default());
    let (dark, _) = emit(&p, &opts(&[("dark", None)]));
    let dark = String::from_utf8(dark).unwrap();
    assert!(dark.contains("#1e1e24") && dark.contains("fill: #dcdcdc"));
    assert!(!String::from_utf8(light).unwrap().contains("#1e1e24"));
}

#[test]
fn value_columns_and_units() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("time_ns", "nanoseconds", ValueKind::Weight);
    b.add_value_type("bytes", "bytes", ValueKind::Weight);
    b.add_stack(&["a", "b"], &[1_500, 64]).unwrap();
    b.add_stack(&["a"], &[500, 4096]).unwrap();
    let p = b.finish();
    let (svg, _) = emit(&p, &FlameOptions::default());
    assert_eq!(
        parse_svg(&svg).frames[0].title,
        "a (2,000 nanoseconds, 100.00%)"
    );
    let (svg, _) = emit(&p, &opts(&[("value", Some("bytes"))]));
    assert_eq!(parse_svg(&svg).frames[0].title, "a (4,160 bytes, 100.00%)");
    let mut cx = Context::silent();
    let e = emit_flamegraph(
        &p.view(),
        &mut Vec::new(),
        &opts(&[("value", Some("calls"))]),
        &mut cx,
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "option value=calls: no value type 'calls' in this profile (it has: time_ns, bytes)"
    );
    // Fixed-point values keep their decimals.
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_stack(&["a"], &[3123]).unwrap();
    b.rescale(0, 2).unwrap();
    let mut p = b.finish();
    p.samples.values[0][0] = 3123;
    let (svg, _) = emit(&p, &FlameOptions::default());
    assert_eq!(
        parse_svg(&svg).frames[0].title,
        "a (31.23 samples, 100.00%)"
    );
}

#[test]
fn an_empty_profile_gives_a_picture_that_says_so() {
    let p = folded(&[]);
    let (svg, warnings) = emit(&p, &FlameOptions::default());
    let s = parse_svg(&svg);
    assert!(s.frames.is_empty());
    assert!(
        s.texts
            .iter()
            .any(|(id, t)| id == "message" && t == "Nothing to draw: the profile has no samples")
    );
    assert_eq!(
        warnings,
        ["the profile has no samples to draw; wrote an empty picture"]
    );
}

/// The message of an empty picture is cut to the image's width, as the title and subtitle are:
/// centred and 310 px wide, on a 200 px image it lost both ends ("o draw: the profile has no").
#[test]
fn the_empty_picture_message_is_cut_to_the_image_width() {
    let p = folded(&[]);
    let message = |width: &str, countname: &str| {
        let o = opts(&[("width", Some(width)), ("countname", Some(countname))]);
        let (svg, _) = emit(&p, &o);
        let s = parse_svg(&svg);
        let (_, t) = s.texts.iter().find(|(id, _)| id == "message").unwrap();
        t.clone()
    };
    // 1 200 px: whole.
    assert_eq!(
        message("1200", "samples"),
        "Nothing to draw: the profile has no samples"
    );
    // 200 px less the margins is 180 px: 25 characters of 7.2 px, the last one `…`.
    assert_eq!(message("200", "samples"), "Nothing to draw: the pro…");
    // A long countname on a default-width image.
    let long = "CPU time in units of a hundred and twenty-eight nanoseconds per tick of the clock";
    let m = message("400", long);
    assert!(m.ends_with('…') && m.chars().count() <= 52, "{m}");
}

/// 20 000 roots of one sample each: every one is narrower than 0.1 px of 1 180, so only `all`
/// is drawn (inferno's picture too), with a warning that says why, not "no samples".
#[test]
fn a_profile_whose_frames_are_all_too_narrow_still_draws_all() {
    let names: Vec<String> = (0..20_000).map(|i| format!("f{i}")).collect();
    let lines: Vec<(&str, i64)> = names.iter().map(|n| (n.as_str(), 1)).collect();
    let p = folded(&lines);
    let (svg, warnings) = emit(&p, &FlameOptions::default());
    let s = parse_svg(&svg);
    assert!(s.frames.is_empty());
    assert_eq!(s.all.unwrap().title, "all (20,000 samples, 100%)");
    assert_eq!(s.total, 20_000);
    assert_eq!(
        warnings,
        [
            "every frame is narrower than the minimum width (option minwidth): only `all` is \
          drawn; -O minwidth=0 draws every frame"
        ]
    );
    let (svg, warnings) = emit(&p, &opts(&[("minwidth", Some("0"))]));
    assert_eq!(parse_svg(&svg).frames.len(), 20_000);
    assert!(warnings.is_empty(), "{warnings:?}");
}

/// The count name is written into every frame's title: a long one is refused (a 131 KB one made
/// a 75 KB profile's SVG 215 MB), naming the option and quoting 40 bytes of it; one that comes
/// from the input (a unit, a callgrind event's name) is cut to 256 bytes.
#[test]
fn a_count_name_is_at_most_256_bytes() {
    let parse =
        |c: String| FlameOptions::from_options(&Options::new(vec![("countname".into(), Some(c))]));
    assert!(parse("é".repeat(128)).is_ok());
    let Err(e) = parse("x".repeat(257)) else {
        panic!("a 257-byte count name was taken")
    };
    assert!(
        e.message.starts_with("option countname=xxxx")
            && e.message.contains("at most 256 bytes")
            && e.message.contains("this one has 257")
            && e.message.len() < 200,
        "{}",
        e.message
    );
    // From the input: a unit of 100 000 bytes, cut in the titles.
    let mut b = ProfileBuilder::new();
    b.add_value_type("Ir", &"u".repeat(100_000), ValueKind::Weight);
    b.add_stack(&["main", "f"], &[5]).unwrap();
    let (svg, _) = emit(&b.finish(), &FlameOptions::default());
    let titles = parse_svg(&svg).frames;
    assert_eq!(titles.len(), 2, "main and f");
    for f in &titles {
        assert!(
            f.title.contains(&format!("5 {}…, 100", "u".repeat(256))),
            "{}",
            &f.title[..80]
        );
    }
    assert!(svg.len() < 30_000, "{} bytes", svg.len());
}

/// A control byte in the count name (a callgrind event's name) or the font family is replaced,
/// as in frame names: the SVG stays well-formed XML.
#[test]
fn control_bytes_in_the_count_name_and_font_are_replaced() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("Ir\u{1}x", "Ir\u{1}x", ValueKind::Weight);
    b.add_stack(&["main"], &[5]).unwrap();
    let p = b.finish();
    let (svg, _) = emit(&p, &opts(&[("fonttype", Some("a\u{2}b"))]));
    let s = parse_svg(&svg);
    assert_eq!(s.all.unwrap().title, "all (5 Ir\u{fffd}x, 100%)");
}

#[test]
fn flame_chart_draws_each_call() {
    let p = trace(&[
        "C main 0", "C g 5", "E 8", "C g 8", "E 20", "C f 20", "E 40", "E 41",
    ]);
    let (svg, warnings) = emit(&p, &opts(&[("flamechart", None)]));
    assert!(warnings.is_empty());
    // Sorting does not apply to a timeline: the same picture, and a warning.
    let (sorted, warnings) = emit(&p, &opts(&[("flamechart", None), ("sort", Some("weight"))]));
    assert_eq!(sorted, svg);
    assert_eq!(
        warnings,
        ["option sort=weight does not apply to a flame chart: it keeps time order"]
    );
    let s = parse_svg(&svg);
    assert_eq!(s.texts[0].1, "Flame Chart");
    let got: Vec<(&str, i64, i64)> = s
        .frames
        .iter()
        .map(|f| (title_name(&f.title), f.fg_x, f.fg_w))
        .collect();
    assert_eq!(
        got,
        [("main", 0, 41), ("g", 5, 3), ("g", 8, 12), ("f", 20, 20)]
    );
    assert!(s.frames[0].title.ends_with("(41 ticks, 100.00%)"));
    // The merged graph of the same trace merges the two calls of g.
    let (svg, _) = emit(&p, &FlameOptions::default());
    let got: Vec<(String, i64)> = parse_svg(&svg)
        .frames
        .iter()
        .map(|f| (title_name(&f.title).to_string(), f.fg_w))
        .collect();
    assert_eq!(
        got,
        [
            ("main".to_string(), 41),
            ("f".to_string(), 20),
            ("g".to_string(), 15)
        ]
    );
    // An aggregated profile can be charted, with a warning.
    let p = folded(&[("a;b", 1)]);
    let (_, warnings) = emit(&p, &opts(&[("flamechart", None)]));
    assert!(
        warnings[0].contains("does not keep time order"),
        "{warnings:?}"
    );
}

#[test]
fn the_plugin_entry_reads_the_host_options() {
    let p = folded(&[("a;b", 2)]);
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        let o = Options::new(vec![("title".into(), Some("From -O".into()))]);
        Flamegraph::emit(&p.view(), &mut out, &o, &mut Context::silent()).unwrap();
        out.flush().unwrap();
    }
    assert_eq!(parse_svg(&buf).texts[0].1, "From -O");
    let o = Options::new(vec![("sort".into(), Some("size".into()))]);
    let mut sink = Vec::new();
    let mut out = Output::from_writer(&mut sink);
    let e = Flamegraph::emit(&p.view(), &mut out, &o, &mut Context::silent()).unwrap_err();
    assert_eq!(e.status, profconv_plugin::Status::BAD_OPTIONS);
}

/// A negative value (a diff written as one column, a corrupt count) is drawn as zero with a
/// warning, in the merged graph (per call node) and in the flame chart (per sample); a value
/// of zero is nothing to report.
#[test]
fn negative_values_are_reported_and_drawn_as_zero() {
    let profile = |b_value: i64| {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.set_flags(profconv_plugin::ir::flags::ORDERED);
        b.add_stack(&["a", "b"], &[b_value]).unwrap();
        b.add_stack(&["a", "c"], &[5]).unwrap();
        b.finish()
    };
    let drawn = |svg: &[u8]| -> Vec<(String, i64, i64)> {
        parse_svg(svg)
            .frames
            .iter()
            .map(|f| (title_name(&f.title).to_string(), f.fg_x, f.fg_w))
            .collect()
    };
    let a_c = [("a".to_string(), 0, 5), ("c".to_string(), 0, 5)];
    let p = profile(-3);
    let (svg, warnings) = emit(&p, &FlameOptions::default());
    assert_eq!(drawn(&svg), a_c);
    assert_eq!(
        warnings,
        ["1 call nodes have a negative self samples; drawn as zero"]
    );
    let (svg, warnings) = emit(&p, &opts(&[("flamechart", None)]));
    assert_eq!(drawn(&svg), a_c);
    assert_eq!(warnings, ["samples with negative values are drawn as zero"]);
    let p = profile(0);
    for o in [FlameOptions::default(), opts(&[("flamechart", None)])] {
        let (svg, warnings) = emit(&p, &o);
        assert_eq!(drawn(&svg), a_c);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}

/// `normalize` and `negate` only mean something for a differential graph: either one given for
/// a plain profile is reported (not only both together), and the graph is drawn all the same.
#[test]
fn normalize_or_negate_alone_on_a_plain_graph_is_reported() {
    let p = folded(&[("a;b", 2)]);
    for flags in [&["normalize"][..], &["negate"], &["normalize", "negate"]] {
        let mut warnings = Vec::new();
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let mut buf = Vec::new();
        {
            let mut out = Output::from_writer(&mut buf);
            let o = Options::new(flags.iter().map(|f| (f.to_string(), None)).collect());
            Flamegraph::emit(&p.view(), &mut out, &o, &mut Context::with_sink(&mut sink)).unwrap();
            out.flush().unwrap();
        }
        assert_eq!(parse_svg(&buf).frames.len(), 2, "{flags:?}");
        assert_eq!(
            warnings,
            ["options normalize and negate only apply to differential flame graphs"],
            "{flags:?}"
        );
    }
}

fn emit_diff_svg(before: &Profile, after: &Profile, o: &FlameOptions) -> (Parsed, Vec<String>) {
    let mut warnings = Vec::new();
    let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
    let mut cx = Context::with_sink(&mut sink);
    let mut out = Vec::new();
    emit_diff_with(&before.view(), &after.view(), &mut out, o, &mut cx).unwrap();
    (parse_svg(&out), warnings)
}

/// Past 2^53 a change of 1 is the largest change drawn, so full blue, with its sign: it was
/// white, from the difference of two rounded doubles, and "0.00%" one way, "+0.00%" the other.
#[test]
fn a_change_of_one_past_2_pow_53_is_drawn() {
    let before = folded(&[("a;b", 9_007_199_254_740_993)]);
    let after = folded(&[("a;b", 9_007_199_254_740_992)]);
    let (s, _) = emit_diff_svg(&before, &after, &FlameOptions::default());
    let b = s
        .frames
        .iter()
        .find(|f| title_name(&f.title) == "b")
        .unwrap();
    assert_eq!(b.fill, "rgb(0,0,255)", "{}", b.title);
    assert!(b.title.contains("self -1 samples, -0.00%"), "{}", b.title);
}

#[test]
fn differential_graph_has_the_after_shape_and_self_change_colours() {
    let before = folded(&[
        ("main;grow", 10),
        ("main;shrink", 30),
        ("main;same", 5),
        ("main;gone", 5),
    ]);
    let after = folded(&[
        ("main;grow", 40),
        ("main;shrink", 10),
        ("main;same", 5),
        ("main;new", 5),
    ]);
    let (s, warnings) = emit_diff_svg(&before, &after, &FlameOptions::default());
    assert_eq!(s.texts[0].1, "Differential Flame Graph");
    assert!(
        s.texts[1]
            .1
            .starts_with("shape: after; colour: change of self samples")
    );
    assert_eq!(
        warnings,
        [
            "10.00% of the before profile's samples are on call paths with nothing after \
          (absent from the after profile, or of total 0 there); they cannot be drawn in the after profile's shape \
          (swap the inputs to see them)"
        ]
    );
    // A share that rounds to 0.00 % is said as below 0.01 %, not as none.
    let tiny = folded(&[("main;grow", 100_000), ("main;gone", 1)]);
    let (_, warnings) = emit_diff_svg(&tiny, &after, &FlameOptions::default());
    assert!(
        warnings[0].starts_with("<0.01% of the before profile's samples"),
        "{warnings:?}"
    );
    // Nor one that rounds to 100.00 % while some of before is matched (it said "100.00%").
    let most = folded(&[("main;grow", 1), ("main;gone", 100_000)]);
    let (_, warnings) = emit_diff_svg(&most, &after, &FlameOptions::default());
    assert!(
        warnings[0].starts_with(">99.99% of the before profile's samples"),
        "{warnings:?}"
    );
    let by_name = |n: &str| s.frames.iter().find(|f| title_name(&f.title) == n).unwrap();
    assert_eq!(s.total, 60);
    assert_eq!(by_name("main").fg_w, 60);
    // grow: +30 is the largest change: full red. shrink: -20: blue. same: near white.
    assert_eq!(by_name("grow").fill, "rgb(255,0,0)");
    assert_eq!(by_name("shrink").fill, "rgb(70,70,255)");
    assert_eq!(by_name("same").fill, "rgb(250,250,250)");
    assert_eq!(by_name("new").fill, "rgb(255,175,175)");
    assert_eq!(by_name("main").fill, "rgb(250,250,250)");
    assert_eq!(
        by_name("grow").title,
        "grow (40 samples, 66.67%; before 10, self +30 samples, +50.00%)"
    );
    assert_eq!(
        by_name("shrink").title,
        "shrink (10 samples, 16.67%; before 30, self -20 samples, -33.33%)"
    );
    assert_eq!(
        by_name("main").title,
        "main (60 samples, 100.00%; before 50, self ±0 samples, 0.00%)"
    );
    // negate swaps the hues; normalize scales before (50) to after's total (60) first.
    let (s, _) = emit_diff_svg(&before, &after, &opts(&[("negate", None)]));
    let grow = s
        .frames
        .iter()
        .find(|f| title_name(&f.title) == "grow")
        .unwrap();
    assert_eq!(grow.fill, "rgb(0,0,255)");
    let (s, _) = emit_diff_svg(&before, &after, &opts(&[("normalize", None)]));
    let same = s
        .frames
        .iter()
        .find(|f| title_name(&f.title) == "same")
        .unwrap();
    assert_eq!(
        same.title,
        "same (5 samples, 8.33%; before 6.00, self -1.00 samples, -1.67%)"
    );
    // Scaled values keep two decimals, and the percentage is the exact change's: before 1
    // and 2 scaled to after's total of 2 are 2/3 and 4/3, changes of +1/3 and -1/3.
    let (s, _) = emit_diff_svg(
        &folded(&[("a", 1), ("b", 2)]),
        &folded(&[("a", 1), ("b", 1)]),
        &opts(&[("normalize", None), ("minwidth", Some("0"))]),
    );
    let titles: Vec<&str> = s.frames.iter().map(|f| f.title.as_str()).collect();
    assert!(titles.contains(&"a (1 samples, 50.00%; before 0.67, self +0.33 samples, +16.67%)"));
    assert!(titles.contains(&"b (1 samples, 50.00%; before 1.33, self -0.33 samples, -16.67%)"));
    // The same profile twice: nothing changed, all near white.
    let (s, w) = emit_diff_svg(&after, &after, &FlameOptions::default());
    assert!(w.is_empty());
    assert!(s.frames.iter().all(|f| f.fill == "rgb(250,250,250)"));
}

/// A diff of two profiles that count one thing (`Ir`, callgrind's) says so: its tooltips said
/// "samples" (the columns are `before` and `after`); two that count different things still do.
#[test]
fn a_combined_profile_names_what_both_sides_count() {
    let side = |name: &str| {
        let mut b = ProfileBuilder::new();
        b.add_value_type(name, "count", ValueKind::Weight);
        b.add_stack(&["main", "f"], &[3]).unwrap();
        b.finish()
    };
    let titles = |before: &Profile, after: &Profile| {
        let combined =
            profconv_plugin::ir::diff::combine(&before.view(), 0, &after.view(), 0).unwrap();
        let mut buf = Vec::new();
        {
            let mut out = Output::from_writer(&mut buf);
            let mut cx = Context::silent();
            Flamegraph::emit(&combined.view(), &mut out, &Options::default(), &mut cx).unwrap();
            out.flush().unwrap();
        }
        parse_svg(&buf)
            .frames
            .into_iter()
            .map(|f| f.title)
            .collect::<Vec<_>>()
    };
    let same = titles(&side("Ir"), &side("Ir"));
    assert!(same.iter().all(|t| t.contains(" Ir, ")), "{same:?}");
    let apart = titles(&side("Ir"), &side("samples"));
    assert!(apart.iter().all(|t| t.contains(" samples, ")), "{apart:?}");
}

/// `profconv diff` hands the emitter one profile holding both sides' paths: a path only before
/// has it with an after value of 0, is not drawn, and is reported as in `emit_diff`.
#[test]
fn a_combined_profile_reports_what_only_before_has() {
    let before = folded(&[("main;same", 5), ("main;gone", 5)]);
    let after = folded(&[("main;same", 5)]);
    let combined = profconv_plugin::ir::diff::combine(&before.view(), 0, &after.view(), 0).unwrap();
    let mut warnings = Vec::new();
    let mut buf = Vec::new();
    {
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let mut cx = Context::with_sink(&mut sink);
        let mut out = Output::from_writer(&mut buf);
        Flamegraph::emit(&combined.view(), &mut out, &Options::default(), &mut cx).unwrap();
        out.flush().unwrap();
    }
    assert_eq!(
        warnings,
        [
            "50.00% of the before profile's samples are on call paths with nothing after \
          (absent from the after profile, or of total 0 there); they cannot be drawn in the after profile's shape \
          (swap the inputs to see them)"
        ]
    );
    let s = parse_svg(&buf);
    assert!(s.frames.iter().all(|f| title_name(&f.title) != "gone"));
    assert_eq!(s.total, 5);
    // The two profiles given apart say the same.
    let (_, apart) = emit_diff_svg(&before, &after, &FlameOptions::default());
    assert_eq!(apart, warnings);
}

/// In `profconv diff`'s profile both sides are columns of the same call nodes, so each node is
/// compared with itself: two functions of one name in different files (`f` of a.c and of b.c
/// under `main`) keep their own before values. Matching by names gave both before values to
/// the first `f`, whose box showed the second's change too.
#[test]
fn a_combined_profile_compares_each_call_node_with_itself() {
    let side = |fa: i64, fb: i64| {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let main = b.func("main");
        let main = b.frame(main);
        let root = b.stack(NONE, main);
        for (file, v) in [("a.c", fa), ("b.c", fb)] {
            let f = b.func_with("f", Some(file), None, None);
            let f = b.frame(f);
            let s = b.stack(root, f);
            b.push_sample(s, None, &[v]);
        }
        b.finish()
    };
    let (before, after) = (side(0, 20), side(10, 20));
    let combined = profconv_plugin::ir::diff::combine(&before.view(), 0, &after.view(), 0).unwrap();
    let titles = |options: Options, name: &str| {
        let mut buf = Vec::new();
        {
            let mut out = Output::from_writer(&mut buf);
            Flamegraph::emit(&combined.view(), &mut out, &options, &mut Context::silent()).unwrap();
            out.flush().unwrap();
        }
        let mut titles: Vec<String> = parse_svg(&buf)
            .frames
            .into_iter()
            .filter(|f| title_name(&f.title) == name)
            .map(|f| f.title)
            .collect();
        titles.sort();
        titles
    };
    assert_eq!(
        titles(Options::default(), "f"),
        [
            "f (10 samples, 33.33%; before 0, self +10 samples, +33.33%)",
            "f (20 samples, 66.67%; before 20, self ±0 samples, 0.00%)",
        ]
    );
    // Reversed (`f;main`), the two `f`s are roots, and each `main` under them keeps its own
    // values: the sides were reversed apart, and matched by names again.
    let reverse = Options::new(vec![("reverse".into(), None)]);
    assert_eq!(
        titles(reverse, "main"),
        [
            "main (10 samples, 33.33%; before 0, self +10 samples, +33.33%)",
            "main (20 samples, 66.67%; before 20, self ±0 samples, 0.00%)",
        ]
    );
}

#[test]
fn the_public_entry_points_take_a_dyn_writer() {
    // What the CLI has: `Sink::writer()` is a `&mut dyn Write` (an unbuffered file).
    let p = folded(&[("a;b", 2)]);
    let mut bytes: Vec<u8> = Vec::new();
    let w: &mut dyn Write = &mut bytes;
    emit_diff(
        &p.view(),
        &p.view(),
        w,
        &Options::default(),
        &mut Context::silent(),
    )
    .unwrap();
    assert_eq!(parse_svg(&bytes).frames.len(), 2);
    let mut bytes: Vec<u8> = Vec::new();
    let w: &mut dyn Write = &mut bytes;
    emit_flamegraph(
        &p.view(),
        w,
        &FlameOptions::default(),
        &mut Context::silent(),
    )
    .unwrap();
    assert_eq!(parse_svg(&bytes).frames.len(), 2);
}

/// A palette does not colour a differential graph (its frames are red and blue by their
/// change): `-O colors=mem` was accepted and ignored without a word.
#[test]
fn a_palette_on_a_differential_graph_is_reported() {
    let p = folded(&[("a;b", 1)]);
    let o = FlameOptions {
        palette: crate::color::Palette::Mem,
        ..FlameOptions::default()
    };
    let (_, warnings) = emit_diff_svg(&p, &p, &o);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("option colors does not apply to a differential")),
        "{warnings:?}"
    );
    let (_, warnings) = emit_diff_svg(&p, &p, &FlameOptions::default());
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn differential_options_are_checked() {
    let p = folded(&[("a", 1)]);
    let o = Options::new(vec![("flamechart".into(), None)]);
    let e = emit_diff(
        &p.view(),
        &p.view(),
        &mut Vec::new(),
        &o,
        &mut Context::silent(),
    )
    .unwrap_err();
    assert!(e.message.contains("cannot be a flame chart"));
    let o = Options::new(vec![("value".into(), Some("ticks".into()))]);
    let e = emit_diff(
        &p.view(),
        &p.view(),
        &mut Vec::new(),
        &o,
        &mut Context::silent(),
    )
    .unwrap_err();
    assert!(
        e.message.ends_with("(in the after profile)"),
        "{}",
        e.message
    );
}

/// [`folded`] with values of `decimals` decimals (`(stack, value × 10^decimals)`).
fn folded_fixed(lines: &[(&str, i64)], decimals: u32) -> Profile {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.rescale(0, decimals).unwrap();
    for (stack, n) in lines {
        let names: Vec<&str> = stack.split(';').collect();
        b.add_stack(&names, &[*n]).unwrap();
    }
    b.finish()
}

/// A before with finer decimals than after's keeps them in the tooltips (`a;b 0.25 1`,
/// `a;c 7.5 3`: before 0.25 was shown as 0 and a change of +0.75 as +1, beside +18.75 %).
#[test]
fn a_before_with_finer_decimals_is_shown_with_them() {
    let before = folded_fixed(&[("a;b", 25), ("a;c", 750)], 2);
    let after = folded(&[("a;b", 1), ("a;c", 3)]);
    let (s, _) = emit_diff_svg(&before, &after, &FlameOptions::default());
    let titles: Vec<&str> = s.frames.iter().map(|f| f.title.as_str()).collect();
    for want in [
        "a (4 samples, 100.00%; before 7.75, self ±0.00 samples, 0.00%)",
        "b (1 samples, 25.00%; before 0.25, self +0.75 samples, +18.75%)",
        "c (3 samples, 75.00%; before 7.50, self -4.50 samples, -112.50%)",
    ] {
        assert!(titles.contains(&want), "{want}: {titles:?}");
    }
}

/// Before in after's finer decimals may pass 64 bits: shown in full (it was clamped to
/// 9,223,372,036.854775807, beside a percentage of the true change).
#[test]
fn values_scaled_past_64_bits_are_shown_in_full() {
    let before = folded(&[("a;b", 10_000_000_000), ("a;c", 3)]);
    let after = folded_fixed(&[("a;b", 1_500_000_000), ("a;c", 1)], 9);
    let (s, _) = emit_diff_svg(&before, &after, &FlameOptions::default());
    let titles: Vec<&str> = s.frames.iter().map(|f| f.title.as_str()).collect();
    let want = "b (1.500000000 samples, 100.00%; before 10,000,000,000.000000000, self \
                -9,999,999,998.500000000 samples, -666666666122.22%)";
    assert!(titles.contains(&want), "{titles:?}");
}

/// `normalize` scales before by after's total over before's exactly: with totals past 2^53 a
/// double gave digits that contradicted each other (children's before values adding up to more
/// than the whole's, a change of ±0 beside one of hundreds).
#[test]
fn normalized_values_are_exact_past_2_pow_53() {
    let before = folded(&[("a", 1), ("b", 2)]);
    let after = folded(&[("a", 3_333_333_333_333_333), ("b", 6_666_666_666_666_667)]);
    let o = opts(&[("normalize", None), ("minwidth", Some("0"))]);
    let (s, _) = emit_diff_svg(&before, &after, &o);
    let titles: Vec<&str> = s.frames.iter().map(|f| f.title.as_str()).collect();
    for want in [
        "a (3,333,333,333,333,333 samples, 33.33%; before 3,333,333,333,333,333.33, self -0.33 samples, -0.00%)",
        "b (6,666,666,666,666,667 samples, 66.67%; before 6,666,666,666,666,666.67, self +0.33 samples, +0.00%)",
    ] {
        assert!(titles.contains(&want), "{want}: {titles:?}");
    }
    // Past 9.2e16 no extra digits, and still exact: before 1 of 3 at after's total of
    // 2^63 − 1 is 3 074 457 345 618 258 602.33…, shown as …602.
    let max = i64::MAX;
    let after = folded(&[("a", max / 3), ("b", max - max / 3)]);
    let (s, _) = emit_diff_svg(&before, &after, &o);
    let a = s
        .frames
        .iter()
        .find(|f| title_name(&f.title) == "a")
        .unwrap();
    assert!(
        a.title
            .contains("before 3,074,457,345,618,258,602, self ±0 samples"),
        "{}",
        a.title
    );
}

/// Shown as an image (`<img>`, a forge's preview, rsvg-convert), the picture has no buttons on
/// the title's line, so the file's title takes the whole width: 350 px wide, "Flame Graph" was
/// cut to "Flame G…" (the room between the buttons only the script shows) while 340 px showed
/// it whole. The script cuts it again beside its buttons (browser test
/// `exact_places_far_past_2_pow_53_and_a_title_clear_of_the_buttons`).
#[test]
fn the_static_title_takes_the_whole_width() {
    let p = folded(&[("main;a", 3), ("main;b", 1)]);
    for width in ["340", "350", "360", "500"] {
        let (svg, _) = emit(&p, &opts(&[("width", Some(width))]));
        let s = parse_svg(&svg);
        assert_eq!(
            s.texts[0],
            ("title".into(), "Flame Graph".into()),
            "{width}"
        );
    }
    let long = "Differential Flame Graph of two long profile runs";
    let (svg, _) = emit(&p, &opts(&[("width", Some("400")), ("title", Some(long))]));
    // 380 px at 10.2 px a character (17 px font, 0.6 em): 37 characters, the last one `…`.
    let title = &parse_svg(&svg).texts[0].1;
    assert_eq!(title, &format!("{}…", &long[..36]));
}

/// The stylesheet is scoped to the graph by its root's class: pasted into an HTML page it
/// styled the page's own `#search` and `#title`, and scoped by the type selector `svg`
/// Inkscape (which does not match it on the root) lost the title's size and showed the hidden
/// buttons in the static picture.
#[test]
fn the_stylesheet_is_scoped_by_the_root_class() {
    let p = folded(&[("main;a", 3)]);
    let (svg, _) = emit(&p, &opts(&[]));
    let svg = String::from_utf8(svg).unwrap();
    let root = svg.lines().find(|l| l.starts_with("<svg ")).unwrap();
    assert!(root.contains(" class=\"profconv-fg\" "), "{root}");
    let css = &svg[svg.find("<style").unwrap()..svg.find("</style>").unwrap()];
    let rules: Vec<&str> = css.lines().filter(|l| l.contains('{')).collect();
    assert!(!rules.is_empty());
    for rule in rules {
        let selectors = &rule[..rule.find('{').unwrap()];
        for s in selectors.split(',') {
            assert!(s.trim().starts_with(".profconv-fg "), "{rule}");
        }
    }
}

/// Each frame's tooltip holds its function's whole name, so a long name called through deep
/// recursion makes the picture grow with depth × length: a PVM trace naming one function of
/// 1 MB and calling it 5 000 deep (1.3 KB gzipped) made a 5 GB SVG, with no bound, where the
/// folded and speedscope writers refuse theirs. Over `max-size` the emitter refuses before
/// writing anything, says why and how to get the picture; the bound is a lower one on the real
/// size, so a picture exactly as large as its bound is written.
#[test]
fn a_long_name_deep_in_recursion_is_refused_over_max_size() {
    let long = "n".repeat(10_000);
    let stack = vec![long.as_str(); 200].join(";");
    let p = folded(&[(stack.as_str(), 3), ("main", 1)]);
    let (whole, _) = emit(&p, &opts(&[("max-size", Some("0"))]));
    assert!(whole.len() > 200 * 10_000, "{} bytes", whole.len());
    // A bound of the picture's own size passes; one of 1 MB does not.
    let size = whole.len().to_string();
    let (same, _) = emit(&p, &opts(&[("max-size", Some(size.as_str()))]));
    assert_eq!(same, whole);
    let mut sink = |_: u32, _: &str| {};
    let mut cx = Context::with_sink(&mut sink);
    let mut out = Vec::new();
    let e = emit_flamegraph(
        &p.view(),
        &mut out,
        &opts(&[("max-size", Some("1000000"))]),
        &mut cx,
    )
    .unwrap_err();
    assert!(out.is_empty(), "{} bytes written", out.len());
    assert!(
        e.message
            .contains("the flame graph would take at least 2.0 MB")
            && e.message.contains("202 frames")
            && e.message.contains("the longest has 10000 bytes")
            && e.message.contains("over the 1000000-byte bound")
            && e.message.contains("-O max-size=BYTES (0: none)"),
        "{}",
        e.message
    );
    // The same for a differential graph, and by default (2 GiB) for a picture that big.
    let mut out = Vec::new();
    let e = emit_diff_with(
        &p.view(),
        &p.view(),
        &mut out,
        &opts(&[("max-size", Some("1000000"))]),
        &mut cx,
    )
    .unwrap_err();
    assert!(out.is_empty() && e.message.contains("over the 1000000-byte bound"));
    assert_eq!(FlameOptions::default().max_size, Some(1 << 31));
    assert_eq!(opts(&[]).max_size, Some(1 << 31));
}
