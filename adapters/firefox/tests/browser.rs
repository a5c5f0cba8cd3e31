//! Browser test: the real speedscope (the npm package, `tests/package.json`) in headless
//! Chromium loads profconv's speedscope output and shows the expected functions and totals.
//!
//! * speedscope's static build (`node_modules/speedscope/dist/release`) and the converted files
//!   are served by a small HTTP server of this test on 127.0.0.1 (an ephemeral port; it stops by
//!   itself when the test ends, passed or failed, or after [`SERVE_LIMIT`]).
//! * Chromium opens `index.html#profileURL=...&view=sandwich` and prints the DOM
//!   (`--dump-dom`); the sandwich view is a table of every function with its total and self
//!   value, which the test reads and compares with profconv's numbers. It also takes a screenshot
//!   of the time-ordered flame chart (`$CARGO_TARGET_TMPDIR/speedscope-*.png`) for people to look
//!   at.
//! * WebGL (speedscope draws with it) runs on Chromium's software renderer (SwiftShader).
//!
//! Needs: `chromium` (Debian package; or `PROFCONV_CHROMIUM=/path`), `npm` with the npm registry
//! reachable the first time (the test runs `npm ci` in `tests/` when `node_modules` is missing).
//! Without chromium or npm the test prints `SKIPPED: ...` and passes, unless
//! `PROFCONV_REQUIRE_BROWSER=1` (no chromium) or `PROFCONV_REQUIRE_CLIENTS=1` (no node or npm) is
//! set, as CI sets them: then it fails.

use profconv_firefox::Speedscope;
use profconv_plugin::ir::{Profile, ProfileBuilder, TraceBuilder, ValueKind, flags};
use profconv_plugin::{Context, Format, Input, Options, Output};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Says why the test does not run, or fails with that message when `required` is set (CI sets
/// it: there a missing client must not pass unnoticed).
fn skip(required: &str, msg: &str) {
    assert!(
        std::env::var_os(required).is_none(),
        "{msg} ({required} is set)"
    );
    eprintln!("{msg}");
}

/// The first of these programs that runs (`--version` exits 0).
fn find_program(candidates: &[&str]) -> Option<String> {
    candidates.iter().find_map(|c| {
        Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()
            .filter(|s| s.success())
            .map(|_| c.to_string())
    })
}

fn chromium() -> Option<String> {
    if let Ok(p) = std::env::var("PROFCONV_CHROMIUM") {
        return Some(p);
    }
    find_program(&["chromium", "chromium-browser", "google-chrome"])
}

/// speedscope's static build, installed with `npm ci` if it is not there yet.
fn speedscope_dist(npm: &str) -> PathBuf {
    let dist = tests_dir().join("node_modules/speedscope/dist/release");
    if !dist.join("index.html").is_file() {
        let status = Command::new(npm)
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(tests_dir())
            .status()
            .expect("run npm ci");
        assert!(
            status.success(),
            "`npm ci` in {} failed: cannot install speedscope",
            tests_dir().display()
        );
    }
    assert!(dist.join("index.html").is_file(), "no {}", dist.display());
    dist
}

/// How long one Chromium run may take.
const CHROMIUM_LIMIT: Duration = Duration::from_secs(60);

/// How long the server serves at most: longer than the test may take, each of its two cases
/// allowed three loads of the table and a screenshot. It stopped after two minutes: where
/// Chromium needs 30 s a page (a busy or slow machine), the last pages found no server.
const SERVE_LIMIT: Duration = Duration::from_secs(2 * 4 * CHROMIUM_LIMIT.as_secs() + 60);

/// Sets `stop` when dropped: the server stops when the test ends, also by a failed assertion.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Serves files from `roots` (first match wins) until `stop` is set or [`SERVE_LIMIT`] has
/// passed.
fn serve(roots: Vec<PathBuf>, stop: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let deadline = Instant::now() + SERVE_LIMIT;
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            match listener.accept() {
                Ok((stream, _)) => {
                    let _ = handle(stream, &roots);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    port
}

fn handle(stream: TcpStream, roots: &[PathBuf]) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let rel = path.trim_start_matches('/');
    let rel = if rel.is_empty() { "index.html" } else { rel };
    let file = (!rel.contains(".."))
        .then(|| roots.iter().map(|r| r.join(rel)).find(|f| f.is_file()))
        .flatten();
    let mut stream = stream;
    match file {
        Some(f) => {
            let body = std::fs::read(&f)?;
            let kind = match f.extension().and_then(|e| e.to_str()).unwrap_or("") {
                "html" => "text/html; charset=utf-8",
                "js" => "text/javascript",
                "css" => "text/css",
                "json" => "application/json",
                "wasm" => "application/wasm",
                "png" => "image/png",
                "woff2" => "font/woff2",
                _ => "application/octet-stream",
            };
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(&body)?;
        }
        None => {
            stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
        }
    }
    stream.flush()
}

/// Runs headless Chromium with `args` and the page `url`; returns stdout. Killed after
/// [`CHROMIUM_LIMIT`].
fn run_chromium(chromium: &str, args: &[&str], url: &str) -> String {
    let profile_dir = std::env::temp_dir().join(format!(
        "profconv-chromium-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let _ = std::fs::remove_dir_all(&profile_dir);
    std::fs::create_dir_all(&profile_dir).expect("chromium profile dir");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // speedscope draws with WebGL: use the software renderer.
            "--enable-unsafe-swiftshader",
            "--use-angle=swiftshader",
            "--virtual-time-budget=10000",
            "--window-size=1200,700",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + CHROMIUM_LIMIT;
    loop {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {CHROMIUM_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&profile_dir);
    reader.join().expect("reader")
}

/// An expected row of speedscope's sandwich table: function, total, self.
type Row = (&'static str, &'static str, &'static str);

/// The rows of speedscope's sandwich table: (name, total, self) as displayed.
fn sandwich_rows(dom: &str) -> Vec<(String, String, String)> {
    let strip = |s: &str| {
        let mut out = String::new();
        let mut in_tag = false;
        for c in s.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
            .trim()
            .to_string()
    };
    let Some(start) = dom.find("Symbol Name") else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for row in dom[start..].split("<tr").skip(1) {
        let row = row.split("</tr>").next().unwrap_or("");
        let cells: Vec<String> = row
            .split("<td")
            .skip(1)
            .map(|c| strip(&format!("<td{}", c.split("</td>").next().unwrap_or(""))))
            .collect();
        if cells.len() == 3 {
            // "2 (67%)" -> "2"
            let num = |s: &str| s.split(" (").next().unwrap_or(s).to_string();
            rows.push((cells[2].clone(), num(&cells[0]), num(&cells[1])));
        }
    }
    rows.sort();
    rows
}

fn seed_001() -> Profile {
    profconv_folded::parse_folded(
        &mut Input::from_slice(b"A;B;C;D;E 1\nA;B;C;F;G 1\nA;B;H;F 1\n"),
        false,
        &mut Context::silent(),
    )
    .expect("parse")
}

fn seed_000() -> Profile {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    let mut frame = |name: &str| {
        let f = b.func(name);
        b.frame(f)
    };
    let (f, g, h) = (frame("f"), frame("g"), frame("h"));
    t.enter(&mut b, f, &[0]).unwrap();
    t.enter(&mut b, g, &[10]).unwrap();
    t.enter(&mut b, h, &[30]).unwrap();
    t.exit(&mut b, &[60]).unwrap();
    t.exit(&mut b, &[100]).unwrap();
    t.exit(&mut b, &[160]).unwrap();
    b.set_flags(flags::ORDERED);
    b.add_meta("source_format", "pvm");
    b.add_meta("time_unit", "ticks");
    b.finish()
}

fn speedscope_json(p: &Profile) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        Speedscope::emit(
            &p.view(),
            &mut out,
            &Options::default(),
            &mut Context::silent(),
        )
        .expect("emit");
        out.flush().expect("flush");
    }
    buf
}

#[test]
fn speedscope_in_headless_chromium_shows_names_and_totals() {
    let Some(chromium) = chromium() else {
        skip(
            "PROFCONV_REQUIRE_BROWSER",
            "SKIPPED: speedscope browser test: no chromium (apt-get install chromium, or set PROFCONV_CHROMIUM)",
        );
        return;
    };
    let (Some(_node), Some(npm)) = (find_program(&["node"]), find_program(&["npm"])) else {
        skip(
            "PROFCONV_REQUIRE_CLIENTS",
            "SKIPPED: speedscope browser test: no node/npm to install speedscope",
        );
        return;
    };
    let dist = speedscope_dist(&npm);
    let work = std::env::temp_dir().join(format!("profconv-speedscope-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("work dir");
    let cases: [(&str, Profile, &[Row]); 2] = [
        (
            "seed-001",
            seed_001(),
            &[
                ("A", "3", "0"),
                ("B", "3", "0"),
                ("C", "2", "0"),
                ("D", "1", "0"),
                ("E", "1", "1"),
                ("F", "2", "1"),
                ("G", "1", "1"),
                ("H", "1", "0"),
            ],
        ),
        (
            "seed-000",
            seed_000(),
            &[("f", "160", "70"), ("g", "90", "60"), ("h", "30", "30")],
        ),
    ];
    for (name, profile, _) in &cases {
        std::fs::write(
            work.join(format!("{name}.speedscope.json")),
            speedscope_json(profile),
        )
        .expect("write profile");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let port = serve(vec![dist, work.clone()], stop.clone());
    let _stop = StopOnDrop(stop);
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    for (name, _, expected) in &cases {
        let profile_url = format!("http://127.0.0.1:{port}/{name}.speedscope.json");
        let page = format!("http://127.0.0.1:{port}/index.html#profileURL={profile_url}");
        let want: Vec<(String, String, String)> = expected
            .iter()
            .map(|(n, t, s)| (n.to_string(), t.to_string(), s.to_string()))
            .collect();
        // On a loaded machine the DOM can be dumped before the table is drawn: try again then.
        let mut rows = Vec::new();
        for attempt in 1..=3 {
            let dom = run_chromium(&chromium, &["--dump-dom"], &format!("{page}&view=sandwich"));
            assert!(
                !dom.contains("Something went wrong"),
                "{name}: speedscope failed to import the file"
            );
            rows = sandwich_rows(&dom);
            if rows == want {
                break;
            }
            eprintln!("{name}: attempt {attempt}: the sandwich table shows {rows:?}, retrying");
        }
        assert_eq!(
            rows, want,
            "{name}: speedscope's sandwich table (name, total, self)"
        );
        let shot = shots.join(format!("speedscope-{name}.png"));
        let _ = std::fs::remove_file(&shot);
        run_chromium(
            &chromium,
            &[&format!("--screenshot={}", shot.display())],
            &page,
        );
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(png.starts_with(b"\x89PNG"), "{name}: screenshot is a PNG");
        eprintln!(
            "{name}: speedscope shows {rows:?}; screenshot {}",
            shot.display()
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}
