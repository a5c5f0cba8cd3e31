//! The flame graph's script in a real browser (headless Chromium): hover, search (Ctrl-F with
//! the prompt answered, Ctrl-I for case-insensitive, `/`), click to zoom, Reset Zoom, and the
//! static picture with scripts disabled.
//!
//! The test draws a fixture, copies the SVG with a small driver script appended, opens it with
//! `chromium --headless --dump-dom` and reads back what the page shows (the details line, the
//! "Matched" percentage, which frames are highlighted, hidden or dimmed, the zoomed frame's
//! position), comparing each with what it computes here from the SVG's frames. It then takes
//! screenshots into `$CARGO_TARGET_TMPDIR/flamegraph-browser/`: the picture as opened, the
//! picture after the driver (zoomed and searched), and the picture with JavaScript disabled.
//!
//! Without Chromium the test is skipped with a message (install it with
//! `apt-get install -y chromium`, or point `PROFCONV_CHROMIUM` at a Chrome/Chromium binary);
//! with `PROFCONV_REQUIRE_BROWSER=1` a missing browser fails the test instead.

use profconv_flamegraph::Flamegraph;
use profconv_flamegraph::quick_xml::Reader;
use profconv_flamegraph::quick_xml::events::{BytesStart, Event};
use profconv_folded::parse_folded;
use profconv_plugin::{Context, Format, Input, Options, Output};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The profile drawn: py-spy with native frames (about 500 frames, names with spaces).
const FIXTURE: &str = "folded/perf/pyspy-native-threads.folded";
/// What the driver searches for (a plain word, so the expected matches are computed here with
/// `contains`; the page treats it as a regular expression).
const SEARCH: &str = "Encoder";
/// How long one browser run may take.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// The browser to use, if any.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PROFCONV_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// The browser, or `None` after printing `skipped` (the test then passes without it), unless
/// `PROFCONV_REQUIRE_BROWSER` is set, which makes a missing browser a failure.
fn browser_or_skip(skipped: &str) -> Option<PathBuf> {
    let browser = chromium();
    if browser.is_none() {
        assert!(
            std::env::var_os("PROFCONV_REQUIRE_BROWSER").is_none(),
            "{skipped}"
        );
        eprintln!("{skipped}");
    }
    browser
}

/// The browser and a fresh output directory `dir` under the tests' temporary directory, or
/// `None` when there is no browser (see [`browser_or_skip`]; `what` names the test).
fn browser_and_dir(what: &str, dir: &str) -> Option<(PathBuf, PathBuf)> {
    let browser = browser_or_skip(&format!(
        "SKIPPED flamegraph browser test ({what}): no chromium found"
    ))?;
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    Some((browser, out_dir))
}

/// A frame of the SVG.
/// The details line for `frame` hovered: its name isolated and a left-to-right mark, then
/// `rest` (its numbers).
fn details(frame: &Frame, rest: &str) -> String {
    format!("Function: \u{2068}{}\u{2069}\u{200e}{rest}", frame.name)
}

#[derive(Clone, Debug)]
struct Frame {
    title: String,
    name: String,
    y: String,
    fg_x: i64,
    fg_w: i64,
    /// Larger is deeper (the script's notion: -y in a flame graph).
    level: f64,
}

fn attr(e: &BytesStart<'_>, key: &str) -> Option<String> {
    e.attributes().map(|a| a.unwrap()).find_map(|a| {
        (a.key.as_ref() == key.as_bytes()).then(|| {
            a.normalized_value(profconv_flamegraph::quick_xml::XmlVersion::Implicit1_0)
                .unwrap()
                .into_owned()
        })
    })
}

/// The frames and `fg:total` of one of our SVGs (a flame graph, not inverted).
fn read_frames(svg: &str) -> (Vec<Frame>, i64) {
    let mut r = Reader::from_str(svg);
    let mut frames = Vec::new();
    let mut total = 0;
    let mut in_frames = false;
    let mut in_title = false;
    let mut title = String::new();
    loop {
        match r.read_event().expect("well-formed XML") {
            Event::Start(e) => {
                if attr(&e, "id").as_deref() == Some("frames") {
                    in_frames = true;
                    total = attr(&e, "fg:total").unwrap().parse().unwrap();
                } else if in_frames && e.name().as_ref() == b"title" {
                    in_title = true;
                    title.clear();
                }
            }
            Event::Text(t) if in_title => title.push_str(&t.xml10_content().unwrap()),
            Event::GeneralRef(g) if in_title => title.push_str(match g.as_ref() {
                b"amp" => "&",
                b"lt" => "<",
                b"gt" => ">",
                b"quot" => "\"",
                _ => "'",
            }),
            Event::End(_) => in_title = false,
            Event::Empty(e) if in_frames && e.name().as_ref() == b"rect" => {
                let y = attr(&e, "y").unwrap();
                frames.push(Frame {
                    name: title[..title.rfind(" (").unwrap()].to_string(),
                    title: title.clone(),
                    level: -y.parse::<f64>().unwrap(),
                    y,
                    fg_x: attr(&e, "fg:x").unwrap().parse().unwrap(),
                    fg_w: attr(&e, "fg:w").unwrap().parse().unwrap(),
                });
            }
            Event::Eof => break,
            _ => {}
        }
    }
    (frames, total)
}

/// "Matched: P%" as the script computes it: the share of `[lo, hi)` covered by matching frames
/// at `min_level` or deeper, overlaps counted once.
fn matched(
    frames: &[Frame],
    is_match: impl Fn(&str) -> bool,
    lo: i64,
    hi: i64,
    min_level: f64,
) -> String {
    let mut hits: Vec<(i64, i64)> = frames
        .iter()
        .filter(|f| {
            is_match(&f.name) && f.level >= min_level && f.fg_x >= lo && f.fg_x + f.fg_w <= hi
        })
        .map(|f| (f.fg_x, f.fg_x + f.fg_w))
        .collect();
    hits.sort();
    let (mut covered, mut end) = (0i64, i64::MIN);
    for (s, e) in hits {
        if s >= end {
            covered += e - s;
            end = e;
        } else if e > end {
            covered += e - end;
            end = e;
        }
    }
    format!("Matched: {:.2}%", covered as f64 * 100.0 / (hi - lo) as f64)
}

/// A JavaScript string literal.
fn js_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// The end of a driver script (after its `try` block): a failure is put as `error`, and the
/// lines put go into a hidden `<text id="fg-test-result">` that [`driver_result`] reads.
const DRIVER_END: &str = r#"    } catch (e) {
      put("error", e && e.stack ? e.stack : e);
    }
    var t = document.createElementNS("http://www.w3.org/2000/svg", "text");
    t.setAttribute("id", "fg-test-result");
    t.setAttribute("class", "hide");
    t.textContent = "\n" + lines.join("\n") + "\n";
    document.documentElement.appendChild(t);
  }
  window.addEventListener("load", function () { setTimeout(run, 0); });
})();
"#;

/// The start of a driver that finds frames by name: `put(key, value)` for the results,
/// `node(name)`, `mouse(node, type)`; it goes on with the driver's own functions and `run()`,
/// and ends with [`DRIVER_END`].
const DRIVER_BY_NAME: &str = r#"
(function () {
  var lines = [];
  function put(k, v) { lines.push(k + "=" + String(v).replace(/\n/g, " ")); }
  function node(name) {
    for (var i = 0; i < fg_nodes.length; i++) if (fg_nodes[i].name === name) return fg_nodes[i];
    throw new Error("no frame " + name);
  }
  function mouse(n, type) { n.rect.dispatchEvent(new MouseEvent(type, {bubbles: true, cancelable: true})); }
"#;

/// The driver: runs after the page's own `fg_init`, exercises the viewer through DOM events,
/// and writes `key=value` lines into a hidden `<text id="fg-test-result">`.
fn driver(zoom: &Frame, child: &Frame) -> String {
    let script = [
        r#"
(function () {
  var lines = [];
  function put(k, v) { lines.push(k + "=" + String(v).replace(/\n/g, " ")); }
  function frame(x, y) {
    for (var i = 0; i < fg_nodes.length; i++) {
      var n = fg_nodes[i];
      if (n.x === x && n.rect.getAttribute("y") === y) return n;
    }
    throw new Error("no frame at " + x + "," + y);
  }
  function key(k, ctrl) {
    document.documentElement.dispatchEvent(new KeyboardEvent("keydown", {key: k, ctrlKey: !!ctrl, bubbles: true, cancelable: true}));
  }
  function mouse(el, type) { el.dispatchEvent(new MouseEvent(type, {bubbles: true, cancelable: true})); }
  function count(pred) { var c = 0; for (var i = 0; i < fg_nodes.length; i++) if (pred(fg_nodes[i])) c++; return c; }
  function highlighted() { return count(function (n) { return n.rect.getAttribute("fill") === fg_searchcolor; }); }
  function hidden() { return count(function (n) { return n.g.classList.contains("hide"); }); }
  function text(id) { return document.getElementById(id).textContent; }
  function run() {
    try {
      put("frames", fg_nodes.length);
      var z = frame(ZOOM_X, ZOOM_Y), c = frame(CHILD_X, CHILD_Y);
      mouse(z.rect, "mouseover");
      put("details_hover", text("details"));
      mouse(z.rect, "mouseout");
      put("details_out", text("details").replace(/\u00a0/g, "(nbsp)"));
      var prompts = 0;
      window.prompt = function () { prompts++; return SEARCH; };
      key("f", true);
      put("prompts_ctrl_f", prompts);
      put("matched_cs", text("matched"));
      put("highlighted_cs", highlighted());
      put("search_button", text("search"));
      key("i", true);
      put("ic_class", document.getElementById("ignorecase").getAttribute("class"));
      put("matched_ci", text("matched"));
      put("highlighted_ci", highlighted());
      key("/", false);
      put("prompts_slash", prompts);
      mouse(z.rect, "click");
      put("zoom_rect", z.rect.getAttribute("x") + " " + z.rect.getAttribute("width"));
      put("zoom_label", z.text.textContent);
      put("hidden", hidden());
      put("parents", count(function (n) { return n.g.classList.contains("parent"); }));
      put("unzoom_class", document.getElementById("unzoom").getAttribute("class"));
      put("matched_zoomed", text("matched"));
      mouse(c.rect, "mouseover");
      put("details_zoomed", text("details"));
      put("location", window.location.search);
      mouse(document.getElementById("unzoom"), "click");
      put("hidden_after_reset", hidden());
      put("unzoom_class_after_reset", document.getElementById("unzoom").getAttribute("class"));
      put("matched_after_reset", text("matched"));
      // Leave the view zoomed and searched for the screenshot.
      mouse(z.rect, "click");
      mouse(c.rect, "mouseover");
      put("done", 1);
"#,
        DRIVER_END,
    ]
    .concat();
    script
        .replace("ZOOM_X", &zoom.fg_x.to_string())
        .replace("ZOOM_Y", &js_string(&zoom.y))
        .replace("CHILD_X", &child.fg_x.to_string())
        .replace("CHILD_Y", &js_string(&child.y))
        .replace("SEARCH", &js_string(SEARCH))
}

/// Runs the browser with `args` and the page `url`; stdout goes to `stdout_file`.
fn run_browser(bin: &Path, profile_dir: &Path, args: &[&str], url: &str, stdout_file: &Path) {
    let _ = std::fs::remove_dir_all(profile_dir);
    let out = std::fs::File::create(stdout_file).unwrap();
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile_dir.display()))
    .args(args)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::from(out))
    .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let start = Instant::now();
    loop {
        match child.try_wait().unwrap() {
            Some(status) => {
                assert!(
                    status.success(),
                    "{} {args:?} {url} exited with {status}",
                    bin.display()
                );
                return;
            }
            None if start.elapsed() > BROWSER_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} {args:?} {url} took longer than {BROWSER_TIMEOUT:?}",
                    bin.display()
                );
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Width and height of a PNG, from its header.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        b.len() > 24 && b.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        path.display()
    );
    let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (be(16), be(20))
}

/// Opens `page` (an SVG with a driver script) in headless Chromium with its own profile
/// directory `profile` under `out_dir`, and returns what the driver wrote into its hidden
/// `<text id="fg-test-result">`, unescaped (the DOM is kept in `out_dir/dom.xml`).
fn driver_result(browser: &Path, out_dir: &Path, profile: &str, page: &Path) -> String {
    let dom_file = out_dir.join("dom.xml");
    run_browser(
        browser,
        &out_dir.join(profile),
        &["--dump-dom"],
        &file_url(page),
        &dom_file,
    );
    let dom = std::fs::read_to_string(&dom_file).unwrap();
    let start = dom
        .find("id=\"fg-test-result\"")
        .unwrap_or_else(|| panic!("the driver left no result; page: {}", dom_file.display()));
    let body = &dom[dom[start..].find('>').unwrap() + start + 1..];
    body[..body.find("</text>").unwrap()]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

#[test]
fn search_and_zoom_in_chromium() {
    let Some(browser) = browser_or_skip(
        "SKIPPED flamegraph browser test: no chromium found (install it with \
         `apt-get install -y chromium`, or set PROFCONV_CHROMIUM=/path/to/chromium)",
    ) else {
        return;
    };
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("flamegraph-browser");
    std::fs::create_dir_all(&out_dir).unwrap();

    // Draw the fixture through the plugin entry, as the CLI would.
    let input = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(FIXTURE),
    )
    .unwrap();
    let profile = parse_folded(
        &mut Input::from_slice(&input),
        false,
        &mut Context::silent(),
    )
    .unwrap();
    let mut svg = Vec::new();
    {
        let mut out = Output::from_writer(&mut svg);
        let opts = Options::new(vec![(
            "title".into(),
            Some("py-spy --native: pywork.py".into()),
        )]);
        Flamegraph::emit(&profile.view(), &mut out, &opts, &mut Context::silent()).unwrap();
        out.flush().unwrap();
    }
    let svg = String::from_utf8(svg).unwrap();
    let (frames, total) = read_frames(&svg);
    let width: u32 = 1200;
    let height: u32 = {
        let h = &svg[svg.find("height=\"").unwrap() + 8..];
        h[..h.find('"').unwrap()].parse().unwrap()
    };

    // The frame to zoom into: the widest at the third level that is not everything; the
    // child to hover afterwards: its first descendant.
    let third = frames.iter().map(|f| f.level).fold(f64::INFINITY, f64::min) + 32.0;
    let zoom = frames
        .iter()
        .filter(|f| f.level == third && f.fg_w < total)
        .max_by_key(|f| f.fg_w)
        .expect("a frame to zoom into")
        .clone();
    let child = frames
        .iter()
        .find(|f| {
            f.level > zoom.level && f.fg_x >= zoom.fg_x && f.fg_x + f.fg_w <= zoom.fg_x + zoom.fg_w
        })
        .expect("a descendant")
        .clone();

    let plain = out_dir.join("flamegraph.svg");
    std::fs::write(&plain, &svg).unwrap();
    let driven_svg = svg.replacen(
        "</svg>",
        &format!(
            "<script type=\"text/ecmascript\"><![CDATA[{}]]></script>\n</svg>",
            driver(&zoom, &child)
        ),
        1,
    );
    let driven = out_dir.join("flamegraph-driven.svg");
    std::fs::write(&driven, &driven_svg).unwrap();

    // 1. What the page shows after the driver ran.
    let body = driver_result(&browser, &out_dir, "profile-dom", &driven);
    let results: Vec<(&str, &str)> = body.lines().filter_map(|l| l.split_once('=')).collect();
    let get = |k: &str| -> &str {
        results
            .iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {k} in the driver's results: {results:?}"))
    };
    assert!(
        results.iter().all(|(k, _)| *k != "error"),
        "the driver failed: {}",
        get("error")
    );
    assert_eq!(get("done"), "1");
    assert_eq!(get("frames"), frames.len().to_string());

    // Hover: the details line names the frame (isolated, U+2068 … U+2069, so that
    // right-to-left characters in a name cannot reorder the numbers), its value, unit and share.
    assert_eq!(
        get("details_hover"),
        details(&zoom, &zoom.title[zoom.name.len()..])
    );
    assert_eq!(get("details_out"), "(nbsp)");

    // Search: Ctrl-F asks (the prompt), matches are highlighted and measured.
    let cs = |n: &str| n.contains(SEARCH);
    let lower = SEARCH.to_lowercase();
    let ci = |n: &str| n.to_lowercase().contains(&lower);
    let n_cs = frames.iter().filter(|f| cs(&f.name)).count();
    let n_ci = frames.iter().filter(|f| ci(&f.name)).count();
    assert!(
        n_cs > 0 && n_ci > n_cs,
        "the fixture should tell the two searches apart"
    );
    let top = f64::NEG_INFINITY;
    assert_eq!(get("prompts_ctrl_f"), "1");
    assert_eq!(get("search_button"), "Reset Search");
    assert_eq!(get("highlighted_cs"), n_cs.to_string());
    assert_eq!(get("matched_cs"), matched(&frames, cs, 0, total, top));
    // Ctrl-I: case-insensitive, searched again.
    assert_eq!(get("ic_class"), "show");
    assert_eq!(get("highlighted_ci"), n_ci.to_string());
    assert_eq!(get("matched_ci"), matched(&frames, ci, 0, total, top));
    // `/` asks too.
    assert_eq!(get("prompts_slash"), "2");

    // Zoom: the clicked frame fills the width, its ancestors are dimmed, the rest is hidden.
    assert_eq!(get("zoom_rect"), "10 1180");
    // 1180 px hold (1180 - 6) / 7.08 = 165 characters: the whole name.
    assert!(zoom.name.chars().count() <= 165);
    assert_eq!(get("zoom_label"), zoom.name);
    let (zx, zw) = (zoom.fg_x, zoom.fg_w);
    let ancestors = frames
        .iter()
        .filter(|f| f.level < zoom.level && f.fg_x <= zx && f.fg_x + f.fg_w >= zx + zw)
        .count();
    let inside = frames
        .iter()
        .filter(|f| f.level >= zoom.level && f.fg_x >= zx && f.fg_x + f.fg_w <= zx + zw)
        .count();
    assert_eq!(get("parents"), ancestors.to_string());
    assert_eq!(
        get("hidden"),
        (frames.len() - ancestors - inside).to_string()
    );
    assert_eq!(get("unzoom_class"), "");
    assert_eq!(
        get("matched_zoomed"),
        matched(&frames, ci, zx, zx + zw, zoom.level)
    );
    // Hover inside the zoom: also the share of the zoomed frame.
    let share = format!("{:.2}%", child.fg_w as f64 * 100.0 / zw as f64);
    assert_eq!(
        get("details_zoomed"),
        details(
            &child,
            &format!(
                "{}; {share} of the zoomed frame)",
                &child.title[child.name.len()..child.title.len() - 1]
            )
        )
    );
    // The view is kept in the URL.
    let location = get("location");
    assert!(
        location.contains(&format!("x={zx}"))
            && location.contains("s=Encoder")
            && location.contains("i=1"),
        "location {location}"
    );
    // Reset Zoom shows everything again; the search stays.
    assert_eq!(get("hidden_after_reset"), "0");
    assert_eq!(get("unzoom_class_after_reset"), "hide");
    assert_eq!(get("matched_after_reset"), get("matched_ci"));

    // 2. Screenshots: as opened, after the driver (zoomed and searched), and as an image in
    // a web page (`<img>`: scripts never run there, as on a forge showing the file).
    let as_image = out_dir.join("as-image.html");
    std::fs::write(
        &as_image,
        "<!DOCTYPE html><html><body style=\"margin:0\"><img src=\"flamegraph.svg\"></body></html>\n",
    )
    .unwrap();
    let size = format!("--window-size={width},{height}");
    for (name, page) in [
        ("flamegraph.png", &plain),
        ("flamegraph-zoomed-searched.png", &driven),
        ("flamegraph-no-javascript.png", &as_image),
    ] {
        let png = out_dir.join(name);
        let _ = std::fs::remove_file(&png);
        let shot = format!("--screenshot={}", png.display());
        let args = [size.as_str(), shot.as_str()];
        run_browser(
            &browser,
            &out_dir.join("profile-shot"),
            &args,
            &file_url(page),
            &out_dir.join("shot.log"),
        );
        assert_eq!(png_size(&png), (width, height), "{}", png.display());
        eprintln!("screenshot: {}", png.display());
    }
}

/// Positions beyond 2^53 (here fractional counts with nine decimals, stored as integers ×10^9):
/// the sum of two doubles is rounded there, and the script used to decide with `x + w` which
/// frames lie inside the zoomed one, so a frame ending exactly where its parent ends could seem
/// to stick out: zooming into `B` hid its last child `C2` and left it out of "Matched". The
/// values are chosen so that `fl(fl(x_C2) + fl(w_C2)) > fl(fl(x_B) + fl(w_B))`. The link keeps
/// the exact position of the zoomed frame.
#[test]
fn zoom_beyond_2_pow_53_keeps_every_child() {
    let Some((browser, out_dir)) = browser_and_dir("2^53", "flamegraph-browser-2p53") else {
        return;
    };
    let folded =
        b"root;A 24732489.209496226\nroot;B;C1 3859155.010614073\nroot;B;C2 1201056.140443356\n";
    let svg = draw(folded, &[]);
    let (frames, _) = read_frames(&svg);
    let by_name = |n: &str| frames.iter().find(|f| f.name == n).unwrap().clone();
    let (b, c2) = (by_name("B"), by_name("C2"));
    // The case this test is about: exact containment, but not in doubles.
    assert_eq!(c2.fg_x + c2.fg_w, b.fg_x + b.fg_w);
    assert!(
        (c2.fg_x as f64) + (c2.fg_w as f64) > (b.fg_x as f64) + (b.fg_w as f64),
        "the values no longer round past the parent's edge"
    );
    let script = [
        r#"
(function () {
  var lines = [];
  function put(k, v) { lines.push(k + "=" + String(v)); }
  function node(name) {
    for (var i = 0; i < fg_nodes.length; i++) if (fg_nodes[i].name === name) return fg_nodes[i];
    throw new Error("no frame " + name);
  }
  function run() {
    try {
      var b = node("B");
      b.rect.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true}));
      ["A", "B", "C1", "C2", "root"].forEach(function (n) {
        var g = node(n).g.classList;
        put(n, g.contains("hide") ? "hidden" : g.contains("parent") ? "parent" : "shown");
      });
      put("c2_rect", node("C2").rect.getAttribute("x") + " " + node("C2").rect.getAttribute("width"));
      fg_do_search("^C");
      put("matched", document.getElementById("matched").textContent);
      put("location", window.location.search);
"#,
        DRIVER_END,
    ]
    .concat();
    let body = drive(&browser, &out_dir, "exact", &svg, &script);
    assert_results(
        &body,
        &[
            ("A", "hidden"),
            ("B", "shown"),
            ("C1", "shown"),
            ("C2", "shown"),
            ("root", "parent"),
            // After C1, from 10 px: 1180 × 3859155.010614073 / 5060211.151057429 px = 899.92 px.
            ("c2_rect", "909.92 280.08"),
            ("matched", "Matched: 100.00%"),
        ],
    );
    let results: Vec<(&str, &str)> = body.lines().filter_map(|l| l.split_once('=')).collect();
    let location = results
        .iter()
        .find(|(k, _)| *k == "location")
        .map(|(_, v)| *v)
        .unwrap_or("");
    assert!(
        location.contains(&format!("x={}", b.fg_x)),
        "the link keeps B's exact position {}: {location}",
        b.fg_x
    );
}

/// Far past 2^53 (a total of 9·10^15), frames one unit wide are placed from their exact
/// offset to the zoomed frame: the script took the difference of two doubles, so zooming into
/// `k` drew its four children at 10, 600, 1190 and 1190 px, and "Matched" summed doubles and
/// said 0.00 % for two of the four. A long title keeps clear of the buttons on its line.
#[test]
fn exact_places_far_past_2_pow_53_and_a_title_clear_of_the_buttons() {
    let Some((browser, out_dir)) = browser_and_dir("exact places", "flamegraph-browser-places")
    else {
        return;
    };
    let folded = b"a_big 9007199254740993\ny;filler 9990000000000\ny;m;filler 9990000000\n\
y;m;m;filler 9990000\ny;m;m;m;filler 9990\ny;m;m;m;m;filler 6\ny;m;m;m;m;k;c1 1\n\
y;m;m;m;m;k;c2 1\ny;m;m;m;m;k;c3 1\ny;m;m;m;m;k;c4 1\n";
    let title = "T".repeat(100) + &"W".repeat(200);
    let svg = draw(folded, &[("minwidth", "0"), ("title", &title)]);
    let script = [
        DRIVER_BY_NAME,
        r#"
  function box(id) { return document.getElementById(id).getBBox(); }
  function apart(a, b) { return a.x + a.width <= b.x || b.x + b.width <= a.x; }
  function run() {
    try {
      mouse(node("k"), "click");
      ["c1", "c2", "c3", "c4"].forEach(function (n) {
        put(n, node(n).rect.getAttribute("x") + " " + node(n).rect.getAttribute("width"));
      });
      fg_do_search("^c[13]$");
      put("matched", document.getElementById("matched").textContent);
      var t = box("title");
      put("title_clear", t.width > 0 && apart(t, box("unzoom")) && apart(t, box("search"))
        && apart(t, box("ignorecase")));
"#,
        DRIVER_END,
    ]
    .concat();
    let body = drive(&browser, &out_dir, "places", &svg, &script);
    assert_results(
        &body,
        &[
            ("c1", "10 295"),
            ("c2", "305 295"),
            ("c3", "600 295"),
            ("c4", "895 295"),
            ("matched", "Matched: 50.00%"),
            ("title_clear", "true"),
        ],
    );
}

/// Each `key=value` of `want` is among the lines the driver put in `body`.
fn assert_results(body: &str, want: &[(&str, &str)]) {
    let results: Vec<(&str, &str)> = body.lines().filter_map(|l| l.split_once('=')).collect();
    for &(k, v) in want {
        assert!(
            results.contains(&(k, v)),
            "{k}: want {v:?}; the page says {results:?}"
        );
    }
}

/// The SVG of a folded profile drawn with `opts` through the plugin entry.
fn draw(folded: &[u8], opts: &[(&str, &str)]) -> String {
    let profile = parse_folded(
        &mut Input::from_slice(folded),
        false,
        &mut Context::silent(),
    )
    .unwrap();
    let opts = Options::new(
        opts.iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect(),
    );
    let mut svg = Vec::new();
    {
        let mut out = Output::from_writer(&mut svg);
        Flamegraph::emit(&profile.view(), &mut out, &opts, &mut Context::silent()).unwrap();
        out.flush().unwrap();
    }
    String::from_utf8(svg).unwrap()
}

/// Opens `svg` with the driver `script` (ending in [`DRIVER_END`]) appended, as `name.svg` in
/// `out_dir`, and returns what the driver put.
fn drive(browser: &Path, out_dir: &Path, name: &str, svg: &str, script: &str) -> String {
    let driven = out_dir.join(format!("{name}.svg"));
    std::fs::write(
        &driven,
        svg.replacen(
            "</svg>",
            &format!("<script type=\"text/ecmascript\"><![CDATA[{script}]]></script>\n</svg>"),
            1,
        ),
    )
    .unwrap();
    driver_result(browser, out_dir, &format!("profile-{name}"), &driven)
}

/// What a review found in the viewer, each checked in the page: labels measured against the
/// browser's font (a fontwidth narrower than the font made cut labels reach past their frames),
/// the search buttons apart at a large font size, the zoom share only inside the zoom, the details
/// line following a zoom made under the mouse and cut to leave its numbers readable, a bad
/// expression ending the previous search, and a root as wide as `all` zooming in.
#[test]
fn labels_details_and_buttons_fit_in_chromium() {
    let Some((browser, out_dir)) = browser_and_dir("fitting", "flamegraph-browser-fit") else {
        return;
    };
    let long_x = "x".repeat(300);
    let long_y = "y".repeat(300);
    let folded = format!("main;{long_x} 50\nmain;{long_y} 30\nmain;foo;bar 20\n");
    let script = [
        DRIVER_BY_NAME,
        r#"
  function text(id) { return document.getElementById(id).textContent; }
  // Labels whose drawn text reaches past their frame's end (the text starts 3 px in).
  function overflowing() {
    var c = 0;
    for (var i = 0; i < fg_nodes.length; i++) {
      var n = fg_nodes[i];
      if (n.g.classList.contains("hide") || n.text.textContent === "") continue;
      if (n.text.getComputedTextLength() > +n.rect.getAttribute("width") - 3 + 0.01) c++;
    }
    return c;
  }
  function highlighted() {
    var c = 0;
    for (var i = 0; i < fg_nodes.length; i++) if (fg_nodes[i].rect.getAttribute("fill") === fg_searchcolor) c++;
    return c;
  }
  function run() {
    try {
      var cut = node(LONG_X).text.textContent;
      put("label_cut", cut.length > 3 && cut.charAt(cut.length - 1) === "\u2026");
      put("overflow_opened", overflowing());
      mouse(node("main"), "click");
      put("root_zoomed", fg_zoomed === node("main"));
      put("overflow_root_zoom", overflowing());
      fg_do_search("."); // "Matched: 100.00%" on the details line's right
      mouse(node(LONG_X), "mouseover");
      var d = text("details");
      put("details_cut", d.indexOf("\u2026") > 0);
      put("details_ends", d.substring(d.length - 30));
      var db = document.getElementById("details").getBBox(), mb = document.getElementById("matched").getBBox();
      put("details_room", db.width > 0 && mb.width > 0 && db.x + db.width < mb.x);
      // The longest text the right end shows (it overlapped the details line's numbers).
      fg_do_search("(");
      db = document.getElementById("details").getBBox(); mb = document.getElementById("matched").getBBox();
      put("details_room_bad", mb.width > 0 && db.x + db.width < mb.x);
      mouse(node(LONG_X), "mouseout");
      fg_reset_search();
      mouse(node("foo"), "mouseover");
      mouse(node("foo"), "click");
      put("details_after_zoom", text("details"));
      put("overflow_foo_zoom", overflowing());
      mouse(node("foo"), "mouseout");
      mouse(node("main"), "mouseover");
      put("details_parent", text("details"));
      mouse(node("main"), "mouseout");
      fg_do_search("foo");
      put("highlighted_foo", highlighted());
      fg_do_search("(");
      put("matched_bad", text("matched"));
      put("highlighted_bad", highlighted());
      put("search_bad", text("search"));
      put("location_bad", window.location.search);
      fg_do_search("ba");
      put("highlighted_ba", highlighted());
      var s = document.getElementById("search").getBBox(), ic = document.getElementById("ignorecase").getBBox();
      put("buttons_apart", s.x + s.width < ic.x);
      put("buttons_inside", ic.x + ic.width <= +document.documentElement.getAttribute("width"));
"#,
        DRIVER_END,
    ]
    .concat()
    .replace("LONG_X", &js_string(&long_x));
    // The default fontwidth, one narrower than the font (labels cut again by the script), and
    // a large font (buttons).
    for (name, opts) in [
        ("default", vec![]),
        ("narrow", vec![("fontwidth", "0.5")]),
        ("large", vec![("fontsize", "20")]),
    ] {
        let svg = draw(folded.as_bytes(), &opts);
        let body = drive(&browser, &out_dir, name, &svg, &script);
        let results: Vec<(&str, &str)> = body.lines().filter_map(|l| l.split_once('=')).collect();
        let get = |k: &str| -> &str {
            results
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| panic!("{name}: no {k} in the driver's results: {results:?}"))
        };
        let want = [
            ("label_cut", "true"),
            ("overflow_opened", "0"),
            ("root_zoomed", "true"),
            ("overflow_root_zoom", "0"),
            ("details_cut", "true"),
            (
                "details_ends",
                "(50 samples, 50.00%; 50.00% of the zoomed frame)",
            ),
            ("details_room", "true"),
            ("details_room_bad", "true"),
            (
                "details_after_zoom",
                "Function: \u{2068}foo\u{2069}\u{200e} (20 samples, 20.00%; 100.00% of the zoomed frame)",
            ),
            ("overflow_foo_zoom", "0"),
            (
                "details_parent",
                "Function: \u{2068}main\u{2069}\u{200e} (100 samples, 100.00%)",
            ),
            ("highlighted_foo", "1"),
            ("matched_bad", "Bad regular expression"),
            ("highlighted_bad", "0"),
            ("search_bad", "Search"),
            ("location_bad", "?OF_FOO"),
            ("highlighted_ba", "1"),
            ("buttons_apart", "true"),
            ("buttons_inside", "true"),
        ];
        let foo = read_frames(&svg)
            .0
            .into_iter()
            .find(|f| f.name == "foo")
            .unwrap();
        for (k, v) in want {
            let v = v.replace("OF_FOO", &format!("x={}&y={}", foo.fg_x, foo.y));
            let got = get(k);
            let ok = if k == "details_ends" {
                got.chars().count() == 30 && v.ends_with(got)
            } else {
                got == v
            };
            assert!(ok, "{name}: {k}: want {v:?}, the page says {got:?}");
        }
    }
}

/// What a hunt in the less used modes found, each checked in the page:
/// * a right-to-left override in a name (U+202E) mirrored the numbers after it on the details
///   line: the name is isolated (U+2068 … U+2069);
/// * WebKit (Safari, WebKitGTK) draws SVG text without isolates: the numbers after a Hebrew or
///   Arabic name were drawn into its right-to-left run ("Function: 31) معالجة samples, 1.17%"): a
///   left-to-right mark (U+200E) follows the isolate (Chromium, which honours the isolate, cannot
///   show that bug; the mark is checked to be there);
/// * a differential graph's details line of large values ran into "Matched" and off the image:
///   it is cut at its end when the name cut short is not enough;
/// * a differential graph's subtitle (about 120 characters) ran off both sides of a 700-pixel
///   image: title and subtitle are cut to the image.
#[test]
fn details_and_subtitles_stay_readable_in_chromium() {
    let Some((browser, out_dir)) = browser_and_dir("details", "flamegraph-browser-details") else {
        return;
    };
    let script = [
        DRIVER_BY_NAME,
        r#"
  function run() {
    try {
      var width = +document.documentElement.getAttribute("width");
      var sub = document.getElementById("subtitle").getBBox();
      put("subtitle_inside", sub.x >= 0 && sub.x + sub.width <= width);
      put("subtitle_cut", document.getElementById("subtitle").textContent.indexOf("\u2026") > 0);
      mouse(node(HOVER), "click");
      fg_do_search("x");
      mouse(node(HOVER), "mouseover");
      var d = document.getElementById("details"), m = document.getElementById("matched");
      var db = d.getBBox(), mb = m.getBBox();
      put("details_clear", db.width > 0 && mb.width > 0 && db.x + db.width < mb.x);
      put("details_inside", db.x + db.width <= width);
      // The name between the isolate's ends, with no control of its own that could end it or
      // outlive it; the numbers after it drawn left to right.
      var tc = d.textContent, open = tc.indexOf("\u2068"), close = tc.lastIndexOf("\u2069");
      put("details_isolated", open > 0 && close > open &&
        !/[\u202a-\u202e\u2066-\u2069]/.test(tc.substring(open + 1, close)));
      // The left-to-right mark after the isolate (for engines without isolates), then the numbers.
      put("details_ltr_mark", close > 0 && tc.charAt(close + 1) === "\u200e");
      var ltr = close > 0 && tc.length > close + 7;
      for (var i = close + 3; i < Math.min(tc.length, close + 15); i++)
        if (d.getStartPositionOfChar(i).x <= d.getStartPositionOfChar(i - 1).x) ltr = false;
      put("details_left_to_right", ltr);
"#,
        DRIVER_END,
    ]
    .concat();
    let rlo = "evil\u{202e}abc_reversed";
    // A name that closes the isolate itself, then overrides; one that opens an isolate of its own.
    let pdi_rlo = "evil\u{2069}\u{202e}abc";
    let rli = "\u{5d0}\u{5d1}\u{2067}";
    let hebrew = "\u{5e2}\u{5d9}\u{5d1}\u{5d5}\u{5d3}_\u{5e0}\u{5ea}\u{5d5}\u{5e0}\u{5d9}\u{5dd}";
    let cases = [
        (
            "diff-large",
            "main;a;x 1234567890123 2234567890123\nmain;b 987654321098 587654321098\nmain 5 5\n"
                .to_string(),
            vec![
                ("normalize", "true"),
                ("countname", "nanoseconds"),
                ("width", "700"),
            ],
            "x",
        ),
        (
            "override",
            format!("main;a;x 1 1\nmain;{rlo} 23 23\nmain;other 77 70\n"),
            vec![],
            rlo,
        ),
        (
            // Under about 240 px the line had no room and still showed a cut name and the
            // numbers, over Matched.
            "narrow",
            "main;a;x 1 1\nmain;b 23 23\nmain;other 77 70\n".to_string(),
            vec![("width", "200")],
            "b",
        ),
        (
            "closes-the-isolate",
            format!("main;{pdi_rlo} 123 123\nmain;plain 100 100\n"),
            vec![],
            pdi_rlo,
        ),
        (
            "opens-an-isolate",
            format!("main;{rli} 456 456\nmain;plain 100 100\n"),
            vec![],
            rli,
        ),
        (
            "right-to-left",
            format!("main;{hebrew} 56 56\nmain;plain 100 100\n"),
            vec![],
            hebrew,
        ),
    ];
    for (name, folded, opts, hover) in cases {
        let svg = draw(folded.as_bytes(), &opts);
        let body = drive(
            &browser,
            &out_dir,
            name,
            &svg,
            &script.replace("HOVER", &js_string(hover)),
        );
        let results: Vec<(&str, &str)> = body.lines().filter_map(|l| l.split_once('=')).collect();
        let get = |k: &str| -> &str {
            results
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| panic!("{name}: no {k} in the driver's results: {results:?}"))
        };
        let all = [
            "subtitle_inside",
            "details_clear",
            "details_inside",
            "details_isolated",
            "details_ltr_mark",
            "details_left_to_right",
        ];
        // A narrow image's line has no room for the name's isolate.
        let checked = if name == "narrow" {
            &all[..3]
        } else {
            &all[..]
        };
        for &k in checked {
            assert_eq!(get(k), "true", "{name}: {k}: {results:?}");
        }
        if name == "diff-large" {
            assert_eq!(get("subtitle_cut"), "true", "{results:?}");
        }
    }
}

/// The SVG inlined into an HTML page (its markup pasted into the page, as notebooks and report
/// generators do): the script took the document's root, `<html>`, for the SVG, whose width it
/// reads, so a click drew every frame 0 px wide at 0 and hovering showed nothing; and it found
/// its buttons by id in the whole page, so the page's own search box (`id="search"`) became
/// the Search button (a click in it asked for a regular expression), and `/` typed into it
/// was taken for the search key; and its stylesheet styled the page's elements of those ids
/// (the search box at 10 % opacity, a heading `id="title"` at 17 px). The page's elements are
/// now left alone.
#[test]
fn an_svg_inlined_into_html_zooms_and_leaves_the_page_alone() {
    let Some((browser, out_dir)) = browser_and_dir("inlined", "flamegraph-browser-inlined") else {
        return;
    };
    let svg = draw(b"main;foo 3\nmain;bar 2\n", &[]);
    let script = [
        DRIVER_BY_NAME,
        r##"
  function run() {
    try {
      var prompts = 0;
      window.prompt = function () { prompts++; return null; };
      var svg = document.querySelector("svg");
      mouse(node("foo"), "mouseover");
      mouse(node("foo"), "click");
      put("foo_rect", node("foo").rect.getAttribute("x") + " " + node("foo").rect.getAttribute("width"));
      put("details", svg.querySelector("#details").textContent);
      var box = document.querySelector("input");
      box.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true}));
      var slash = new KeyboardEvent("keydown", {key: "/", bubbles: true, cancelable: true});
      box.dispatchEvent(slash);
      put("prompts", prompts);
      put("slash_kept", !slash.defaultPrevented);
      put("page_title", document.querySelector("h1").textContent);
      put("box_class", box.getAttribute("class"));
      put("box_opacity", getComputedStyle(box).opacity);
      put("page_title_size", getComputedStyle(document.querySelector("h1")).fontSize);
"##,
        DRIVER_END,
    ]
    .concat();
    // The SVG's markup without its XML declaration, the driver appended inside it.
    let svg = svg[svg.find("<svg").unwrap()..].replacen(
        "</svg>",
        &format!("<script type=\"text/ecmascript\"><![CDATA[{script}]]></script>\n</svg>"),
        1,
    );
    let page = out_dir.join("inlined.html");
    std::fs::write(
        &page,
        format!(
            "<!DOCTYPE html>\n<html><body><h1 id=\"title\">Report</h1>\n\
             <input id=\"search\" class=\"box\">\n{svg}</body></html>\n"
        ),
    )
    .unwrap();
    let body = driver_result(&browser, &out_dir, "profile-inlined", &page);
    assert_results(
        &body,
        &[
            ("foo_rect", "10 1180"),
            (
                "details",
                "Function: \u{2068}foo\u{2069}\u{200e} (3 samples, 60.00%; 100.00% of the zoomed frame)",
            ),
            ("prompts", "0"),
            ("slash_kept", "true"),
            ("page_title", "Report"),
            ("box_class", "box"),
            // The page's own style: the SVG's stylesheet is for the SVG's elements.
            ("box_opacity", "1"),
            ("page_title_size", "32px"),
        ],
    );
}

/// Ctrl-Shift-I (Ctrl-Alt-I, Cmd-Option-I) opens the browser's developer tools: the viewer took
/// it for Ctrl-I, cancelled it (which keeps them closed in Chromium) and toggled the
/// case-insensitive search instead. Ctrl-I alone still toggles it.
#[test]
fn ctrl_shift_i_is_left_to_the_browser() {
    let Some((browser, out_dir)) = browser_and_dir("ctrl-shift-i", "flamegraph-browser-keys")
    else {
        return;
    };
    let svg = draw(b"main;foo 3\nmain;bar 2\n", &[]);
    let script = [
        DRIVER_BY_NAME,
        r#"
  function key(k, mods) {
    var e = new KeyboardEvent("keydown", Object.assign({key: k, bubbles: true, cancelable: true}, mods));
    document.documentElement.dispatchEvent(e);
    return (e.defaultPrevented ? "cancelled" : "kept") + " " + fg_ignorecase;
  }
  function run() {
    try {
      put("ctrl_shift_i", key("I", {ctrlKey: true, shiftKey: true}));
      put("ctrl_alt_i", key("i", {ctrlKey: true, altKey: true}));
      put("cmd_option_i", key("i", {metaKey: true, altKey: true}));
      put("ctrl_i", key("i", {ctrlKey: true}));
"#,
        DRIVER_END,
    ]
    .concat();
    let body = drive(&browser, &out_dir, "keys", &svg, &script);
    assert_results(
        &body,
        &[
            ("ctrl_shift_i", "kept false"),
            ("ctrl_alt_i", "kept false"),
            ("cmd_option_i", "kept false"),
            ("ctrl_i", "cancelled true"),
        ],
    );
}
