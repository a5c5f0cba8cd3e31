//! Unit tests of both emitters on small profiles built in code.

use crate::check::{TreeNode, check_firefox, check_speedscope, gunzip, tree_text};
use crate::{Firefox, Speedscope};
use profconv_plugin::ir::{Profile, ProfileBuilder, TraceBuilder, ValueKind, flags};
use profconv_plugin::{Context, Format, Options, Output, PluginError, Status};
use serde_json::Value;
use std::io::Write;

fn emit<F: Format>(p: &Profile, options: &[(&str, &str)]) -> Result<Vec<u8>, PluginError> {
    emit_with::<F>(p, options, &mut Context::silent())
}

/// [`emit`] with the messages going to `cx`.
fn emit_with<F: Format>(
    p: &Profile,
    options: &[(&str, &str)],
    cx: &mut Context<'_>,
) -> Result<Vec<u8>, PluginError> {
    let opts = Options::new(
        options
            .iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect(),
    );
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        F::emit(&p.view(), &mut out, &opts, cx)?;
        out.flush()?;
    }
    Ok(buf)
}

fn firefox(p: &Profile, options: &[(&str, &str)]) -> (Vec<u8>, Value) {
    let gz = emit::<Firefox>(p, options).expect("firefox emit");
    assert_eq!(&gz[..4], &[0x1f, 0x8b, 0x08, 0x00], "gzip magic, no flags");
    assert_eq!(&gz[4..8], &[0, 0, 0, 0], "no mtime");
    let json = gunzip(&gz).expect("gunzip");
    check_firefox(&json).unwrap_or_else(|e| panic!("invalid Firefox profile: {e}"));
    // The direct writer's bytes are serde_json's for the same structure.
    let value = options.iter().find(|(k, _)| *k == "value").map(|(_, v)| *v);
    let (direct, by_serde) = crate::firefox::firefox_json_compact(
        &p.view(),
        crate::FirefoxOptions { value },
        &mut Context::silent(),
    )
    .expect("compact json");
    assert_eq!(
        String::from_utf8_lossy(&direct),
        String::from_utf8_lossy(&by_serde)
    );
    assert_eq!(json, direct, "the file is the compact JSON, compressed");
    (json.clone(), serde_json::from_slice(&json).expect("json"))
}

fn speedscope(p: &Profile, options: &[(&str, &str)]) -> (Vec<u8>, Value) {
    let json = emit::<Speedscope>(p, options).expect("speedscope emit");
    check_speedscope(&json).unwrap_or_else(|e| panic!("invalid speedscope file: {e}"));
    (json.clone(), serde_json::from_slice(&json).expect("json"))
}

fn seed_001() -> Profile {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_meta("source_format", "folded");
    for s in ["A;B;C;D;E", "A;B;C;F;G", "A;B;H;F"] {
        let names: Vec<&str> = s.split(';').collect();
        b.add_stack(&names, &[1]).unwrap();
    }
    b.finish()
}

/// Seed 000's example: f 0..160, g 10..100, h 30..60, with ticks and exact calls.
fn seed_000(ordered: bool) -> Profile {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), ordered);
    let fr = |b: &mut ProfileBuilder, n: &str| {
        let f = b.func(n);
        b.frame(f)
    };
    let (f, g, h) = (fr(&mut b, "f"), fr(&mut b, "g"), fr(&mut b, "h"));
    t.enter(&mut b, f, &[0]).unwrap();
    t.enter(&mut b, g, &[10]).unwrap();
    t.enter(&mut b, h, &[30]).unwrap();
    t.exit(&mut b, &[60]).unwrap();
    t.exit(&mut b, &[100]).unwrap();
    t.exit(&mut b, &[160]).unwrap();
    if ordered {
        b.set_flags(flags::ORDERED);
        b.add_meta("time_unit", "ticks");
    }
    b.add_meta("source_format", "pvm");
    b.finish()
}

fn node(path: &str, self_value: f64, total: f64) -> TreeNode {
    TreeNode {
        path: path.split(';').map(str::to_string).collect(),
        self_value,
        total,
    }
}

fn thread(v: &Value, i: usize) -> &Value {
    &v["threads"][i]
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap_or(-999))
        .collect()
}

#[test]
fn seed_001_firefox_tree_and_structure() {
    let (json, v) = firefox(&seed_001(), &[]);
    let s = check_firefox(&json).unwrap();
    assert_eq!(s.version, 55);
    assert_eq!(v["meta"]["preprocessedProfileVersion"], 55);
    assert_eq!(v["meta"]["product"], "profconv (folded)");
    assert_eq!(s.threads, ["Main"]);
    assert_eq!(s.weight_types, ["samples"]);
    assert_eq!(
        tree_text(&s.tree),
        "A self=0 total=3\n  B self=0 total=3\n    C self=0 total=2\n      D self=0 total=1\n        E self=1 total=1\n      F self=0 total=1\n        G self=1 total=1\n    H self=0 total=1\n      F self=1 total=1\n"
    );
    let t = thread(&v, 0);
    // One sample per stack with a self value, depth first by name, at the running sum; a
    // `null` sample where the last one ends.
    assert_eq!(ints(&t["samples"]["time"]), [0, 1, 2, 3]);
    assert_eq!(ints(&t["samples"]["weight"]), [1, 1, 1, 0]);
    assert_eq!(t["samples"]["stack"][3], serde_json::Value::Null);
    // Strings once, in one table.
    assert_eq!(t["stringArray"].as_array().unwrap().len(), 8);
}

#[test]
fn output_is_deterministic() {
    let a = emit::<Firefox>(&seed_000(true), &[]).unwrap();
    let b = emit::<Firefox>(&seed_000(true), &[]).unwrap();
    assert_eq!(a, b);
    let a = emit::<Speedscope>(&seed_001(), &[]).unwrap();
    let b = emit::<Speedscope>(&seed_001(), &[]).unwrap();
    assert_eq!(a, b);
}

#[test]
fn ordered_trace_keeps_time_order_with_an_end_marker() {
    let (json, v) = firefox(&seed_000(true), &[]);
    let t = thread(&v, 0);
    let samples = &t["samples"];
    // f [0,10) g [10,30) h [30,60) g [60,100) f [100,160), then the end (null stack).
    assert_eq!(ints(&samples["time"]), [0, 10, 30, 60, 100, 160]);
    assert_eq!(ints(&samples["weight"]), [10, 20, 30, 40, 60, 0]);
    assert!(samples["stack"][5].is_null());
    assert_eq!(
        samples["weightType"], "samples",
        "ticks are written as samples"
    );
    let s = check_firefox(&json).unwrap();
    assert_eq!(
        s.tree,
        [
            node("f", 70.0, 160.0),
            node("f;g", 60.0, 90.0),
            node("f;g;h", 30.0, 30.0)
        ]
    );
    assert_eq!(s.categories, ["Other"], "no phases, no kernel_run");
}

#[test]
fn aggregated_trace_has_one_sample_per_stack() {
    let (json, v) = firefox(&seed_000(false), &[]);
    let t = thread(&v, 0);
    // The last, `f;g;h` (30), ends at 160 (without the `null` sample the profiler ended it one
    // interval after it starts: a 1 ms box for 30 ticks).
    assert_eq!(ints(&t["samples"]["weight"]), [70, 60, 30, 0]);
    assert_eq!(ints(&t["samples"]["time"]), [0, 70, 130, 160]);
    assert_eq!(t["samples"]["stack"][3], serde_json::Value::Null);
    let s = check_firefox(&json).unwrap();
    assert_eq!(s.tree[0], node("f", 70.0, 160.0));
}

/// Weights adding up past 2^53: the real profiler keeps only samples before the last one's time
/// plus the interval, a sum that rounds back to the last time there, so the timeline is scaled
/// to end at 2^51 intervals (found by `snapshots/tests/firefox.rs`'s real-profiler test).
#[test]
fn an_aggregated_timeline_past_2_pow_52_is_scaled_to_fit_a_double() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_stack(&["main", "big"], &[9_007_199_254_740_993])
        .unwrap();
    b.add_stack(&["main", "small"], &[1]).unwrap();
    let p = b.finish();
    let (_, v) = firefox(&p, &[]);
    let samples = &thread(&v, 0)["samples"];
    let times: Vec<f64> = samples["time"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    let interval = v["meta"]["interval"].as_f64().unwrap();
    let last = *times.last().unwrap();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(
        last + interval > last,
        "{times:?}: the last sample is in the profile"
    );
    assert!(last <= interval * 2f64.powi(51), "{times:?}");
    assert!(
        last >= interval * 2f64.powi(50),
        "{times:?}: the shape is kept"
    );
    // The weights are not scaled.
    assert_eq!(
        samples["weight"],
        serde_json::json!([9_007_199_254_740_993i64, 1, 0])
    );
    // Below the bound, times stay the exact running sums.
    let (_, v) = firefox(&seed_000(false), &[]);
    assert_eq!(ints(&thread(&v, 0)["samples"]["time"]), [0, 70, 130, 160]);
}

#[test]
fn gaps_in_a_trace_get_a_null_sample() {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    let f = b.func("f");
    let f = b.frame(f);
    t.enter(&mut b, f, &[0]).unwrap();
    t.exit(&mut b, &[5]).unwrap();
    t.enter(&mut b, f, &[20]).unwrap();
    t.exit(&mut b, &[30]).unwrap();
    b.set_flags(flags::ORDERED);
    let p = b.finish();
    let (_, v) = firefox(&p, &[]);
    let samples = &thread(&v, 0)["samples"];
    assert_eq!(ints(&samples["time"]), [0, 5, 20, 30]);
    assert!(samples["stack"][1].is_null() && samples["stack"][3].is_null());
    // speedscope: two calls of f, closed in between.
    let (_, v) = speedscope(&p, &[]);
    let events: Vec<(String, i64)> = v["profiles"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["at"].as_i64().unwrap(),
            )
        })
        .collect();
    let expect: Vec<(String, i64)> = [("O", 0), ("C", 5), ("O", 20), ("C", 30)]
        .iter()
        .map(|(k, a)| (k.to_string(), *a))
        .collect();
    assert_eq!(events, expect);
}

/// A trace with real time beside its ticks is drawn on the running sum of its time (the length
/// of a gap with no call open is unknown in real time); a gap its ticks show is still kept by
/// a `null` sample of no length. Two calls of f, 10 ticks apart, were one box in the Firefox
/// Profiler's stack chart (two samples of one stack back to back).
#[test]
fn gaps_the_ticks_show_are_kept_on_a_timeline_of_real_time() {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let ns = b.add_value_type("time_ns", "nanoseconds", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks, ns], Some(calls), true);
    let f = b.func("f");
    let f = b.frame(f);
    let g = b.func("g");
    let g = b.frame(g);
    t.enter(&mut b, f, &[0, 0]).unwrap();
    t.exit(&mut b, &[10, 1000]).unwrap();
    t.enter(&mut b, f, &[20, 2000]).unwrap();
    t.enter(&mut b, g, &[25, 2500]).unwrap();
    t.exit(&mut b, &[27, 2700]).unwrap();
    t.exit(&mut b, &[30, 3000]).unwrap();
    b.set_flags(flags::ORDERED);
    let p = b.finish();
    let (json, v) = firefox(&p, &[]);
    let samples = &thread(&v, 0)["samples"];
    let stacks: Vec<bool> = samples["stack"]
        .as_array()
        .unwrap()
        .iter()
        .map(serde_json::Value::is_null)
        .collect();
    // f, the gap (no length), f, f;g, f, the end.
    assert_eq!(stacks, [false, true, false, false, false, true]);
    let times: Vec<f64> = samples["time"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    assert_eq!(times, [0.0, 0.001, 0.001, 0.0015, 0.0017, 0.002]);
    // Back-to-back calls (no gap in the ticks) are not cut.
    assert!(samples["stack"][2] == samples["stack"][4]);
    let s = check_firefox(&json).unwrap();
    assert_eq!(s.tree[0], node("f", 18.0, 20.0));
}

#[test]
fn speedscope_seed_000_is_evented_with_exact_calls() {
    let (json, v) = speedscope(&seed_000(true), &[]);
    let p = &v["profiles"][0];
    assert_eq!(p["type"], "evented");
    assert_eq!(p["unit"], "none");
    assert_eq!(p["endValue"], 160);
    let frames: Vec<&str> = v["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let events: Vec<String> = p["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {} {}",
                e["type"].as_str().unwrap(),
                frames[e["frame"].as_u64().unwrap() as usize],
                e["at"]
            )
        })
        .collect();
    assert_eq!(
        events,
        ["O f 0", "O g 10", "O h 30", "C h 60", "C g 100", "C f 160"]
    );
    let s = check_speedscope(&json).unwrap();
    assert_eq!(s.tree[1], node("f;g", 60.0, 90.0));
}

#[test]
fn back_to_back_calls_stay_apart_in_speedscope() {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    let (f, g) = {
        let f = b.func("f");
        let g = b.func("g");
        (b.frame(f), b.frame(g))
    };
    t.enter(&mut b, f, &[0]).unwrap();
    t.enter(&mut b, g, &[10]).unwrap();
    t.exit(&mut b, &[20]).unwrap();
    t.enter(&mut b, g, &[20]).unwrap();
    t.exit(&mut b, &[30]).unwrap();
    t.exit(&mut b, &[40]).unwrap();
    b.set_flags(flags::ORDERED);
    let p = b.finish();
    let (_, v) = speedscope(&p, &[]);
    let kinds: Vec<String> = v["profiles"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}{}@{}", e["type"].as_str().unwrap(), e["frame"], e["at"]))
        .collect();
    assert_eq!(
        kinds,
        ["O0@0", "O1@10", "C1@20", "O1@20", "C1@30", "C0@40"],
        "g is closed and opened again at 20"
    );
}

/// A trace of many runs (threads): one evented profile per run, each with its own calls (the
/// path nodes are made once for the whole profile, not once per run: 5 000 runs over 40 000
/// stacks took 11.6 s when they were).
#[test]
fn speedscope_of_many_runs_has_one_profile_per_run() {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let frames: Vec<u32> = (0..50)
        .map(|i| {
            let f = b.func(&format!("f{i}"));
            b.frame(f)
        })
        .collect();
    let mut now = 0;
    for run in 0..2000 {
        b.add_thread(&format!("run {run}"));
        let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
        t.enter(&mut b, frames[run % 50], &[now]).unwrap();
        t.exit(&mut b, &[now + 3]).unwrap();
        now += 5;
    }
    b.set_flags(flags::ORDERED);
    let p = b.finish();
    let (_, v) = speedscope(&p, &[]);
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2000);
    for (run, prof) in profiles.iter().enumerate().step_by(397) {
        let events: Vec<String> = prof["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| format!("{}{}", e["type"].as_str().unwrap(), e["frame"]))
            .collect();
        let f = run % 50;
        assert_eq!(events, [format!("O{f}"), format!("C{f}")], "run {run}");
    }
}

/// A run with no call before one with calls (a trace starting with `R`, or runs that
/// `-T focus-func` emptied): both viewers open on the run that shows something, not on an
/// empty first one (speedscope said "No symbols found").
#[test]
fn the_viewers_open_on_the_first_thread_with_samples() {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let f = b.func("f");
    let f = b.frame(f);
    b.add_thread("run 1 (reboot)");
    b.add_thread("run 2 (yield)");
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    t.enter(&mut b, f, &[10]).unwrap();
    t.exit(&mut b, &[20]).unwrap();
    b.set_flags(flags::ORDERED);
    b.add_meta("time_unit", "ticks");
    let p = b.finish();
    let (_, v) = speedscope(&p, &[]);
    assert_eq!(v["profiles"][0]["events"].as_array().unwrap().len(), 0);
    assert_eq!(v["activeProfileIndex"], 1);
    let (_, v) = firefox(&p, &[]);
    assert_eq!(thread(&v, 0)["samples"]["length"], 0);
    assert_eq!(v["meta"]["initialSelectedThreads"], serde_json::json!([1]));
    // With every thread empty, the first.
    let mut b = ProfileBuilder::new();
    b.add_value_type("ticks", "ticks", ValueKind::Weight);
    b.add_thread("a");
    b.add_thread("b");
    b.set_flags(flags::ORDERED);
    let p = b.finish();
    assert_eq!(speedscope(&p, &[]).1["activeProfileIndex"], 0);
    assert_eq!(
        firefox(&p, &[]).1["meta"]["initialSelectedThreads"],
        serde_json::json!([0])
    );
}

#[test]
fn speedscope_seed_001_is_sampled() {
    let (json, v) = speedscope(&seed_001(), &[]);
    let p = &v["profiles"][0];
    assert_eq!(p["type"], "sampled");
    assert_eq!(
        p["samples"],
        serde_json::json!([[0, 1, 2, 3, 4], [0, 1, 2, 5, 6], [0, 1, 7, 5]])
    );
    assert_eq!(p["weights"], serde_json::json!([1, 1, 1]));
    let s = check_speedscope(&json).unwrap();
    assert_eq!(s.tree.len(), 9);
    assert_eq!(s.tree[0], node("A", 0.0, 3.0));
}

/// Two threads, several value types, file and line information, an address.
fn rich() -> Profile {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_value_type("time_ns", "nanoseconds", ValueKind::Weight);
    b.add_value_type("alloc", "bytes", ValueKind::Weight);
    b.add_meta("source_format", "test");
    let main = b.func_with("main", Some("main.c"), Some(3), Some("app"));
    let work = b.func_with("work", Some("work.c"), Some(10), Some("libwork.so"));
    let m = b.frame_at(main, None, Some(5));
    let w1 = b.frame_at(work, Some(0x1234), Some(12));
    let w2 = b.frame_at(work, None, Some(14));
    let t1 = b.add_thread("thread one");
    let s0 = b.stack(profconv_plugin::ir::NONE, m);
    let s1 = b.stack(s0, w1);
    b.add_to_stack(s1, &[2, 1500, 64]).unwrap();
    let t2 = b.add_thread("thread two");
    let s2 = b.stack(s0, w2);
    b.add_to_stack(s2, &[3, 3_000_000, 128]).unwrap();
    b.set_thread(t1);
    b.add_to_stack(s0, &[1, 500, 0]).unwrap();
    let _ = t2;
    b.finish()
}

#[test]
fn threads_values_files_and_lines() {
    let p = rich();
    let (json, v) = firefox(&p, &[]);
    let s = check_firefox(&json).unwrap();
    assert_eq!(s.threads, ["thread one", "thread two"]);
    assert_eq!(
        v["meta"]["initialVisibleThreads"],
        serde_json::json!([0, 1])
    );
    // Thread two reaches only main and work@14.
    let t2 = thread(&v, 1);
    assert_eq!(t2["stackTable"]["length"], 2);
    assert_eq!(t2["frameTable"]["line"], serde_json::json!([5, 14]));
    assert_eq!(t2["frameTable"]["address"], serde_json::json!([-1, -1]));
    let t1 = thread(&v, 0);
    assert_eq!(t1["frameTable"]["address"], serde_json::json!([-1, 0x1234]));
    assert_eq!(t1["funcTable"]["lineNumber"], serde_json::json!([3, 10]));
    let strings = t1["stringArray"].as_array().unwrap();
    let file_of_work = t1["funcTable"]["fileName"][1].as_u64().unwrap() as usize;
    assert_eq!(strings[file_of_work], "work.c");
    assert_eq!(t1["resourceTable"]["length"], 2);
    assert_eq!(
        tree_text(&s.tree),
        "main self=1 total=6\n  work self=5 total=5\n",
        "threads merge by function identity"
    );

    // Time in ns becomes tracing-ms.
    let (json, v) = firefox(&p, &[("value", "time_ns")]);
    assert_eq!(thread(&v, 0)["samples"]["weightType"], "tracing-ms");
    assert_eq!(
        thread(&v, 1)["samples"]["weight"],
        serde_json::json!([3, 0])
    );
    let s = check_firefox(&json).unwrap();
    assert!(
        (s.tree[0].total - 3.002).abs() < 1e-12,
        "{}",
        s.tree[0].total
    );
    // Bytes.
    let (_, v) = firefox(&p, &[("value", "alloc")]);
    assert_eq!(thread(&v, 0)["samples"]["weightType"], "bytes");

    // speedscope: one profile per thread, frames with file and line.
    let (json, v) = speedscope(&p, &[("value", "time_ns")]);
    assert_eq!(v["profiles"].as_array().unwrap().len(), 2);
    assert_eq!(v["profiles"][1]["name"], "thread two");
    assert_eq!(v["profiles"][0]["unit"], "nanoseconds");
    assert_eq!(
        v["shared"]["frames"][1],
        serde_json::json!({"name": "work", "file": "work.c", "line": 10})
    );
    let s = check_speedscope(&json).unwrap();
    assert_eq!(s.tree[0].total, 3_002_000.0);
}

#[test]
fn unknown_value_is_a_bad_option() {
    for e in [
        emit::<Firefox>(&seed_001(), &[("value", "nope")]).unwrap_err(),
        emit::<Speedscope>(&seed_001(), &[("value", "nope")]).unwrap_err(),
    ] {
        assert_eq!(e.status, Status::BAD_OPTIONS);
        assert!(
            e.message.contains("nope") && e.message.contains("samples"),
            "{e}"
        );
    }
}

#[test]
fn fractional_and_negative_weights() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_stack(&["a", "b"], &[150]).unwrap();
    b.add_stack(&["a", "c"], &[-25]).unwrap();
    b.rescale(0, 2).unwrap(); // 150.00 and -25.00: integral values are written as integers
    let p = b.finish();
    let (json, v) = firefox(&p, &[]);
    let w = &thread(&v, 0)["samples"]["weight"];
    assert_eq!(w, &serde_json::json!([150, -25, 0]));
    let s = check_firefox(&json).unwrap();
    assert_eq!(s.tree[0], node("a", 0.0, 125.0));

    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.rescale(0, 2).unwrap();
    b.add_stack(&["a", "b"], &[150]).unwrap();
    b.add_stack(&["a", "c"], &[-25]).unwrap();
    let p = b.finish();
    let (_, v) = firefox(&p, &[]);
    assert_eq!(
        thread(&v, 0)["samples"]["weight"],
        serde_json::json!([1.5, -0.25, 0])
    );
    let mut warnings = Vec::new();
    let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
    let mut buf = Vec::new();
    {
        let mut out = Output::from_writer(&mut buf);
        Speedscope::emit(
            &p.view(),
            &mut out,
            &Options::default(),
            &mut Context::with_sink(&mut sink),
        )
        .unwrap();
        out.flush().unwrap();
    }
    assert!(warnings[0].contains("negative"), "{warnings:?}");
    let s = check_speedscope(&buf).unwrap();
    assert_eq!(s.tree[0], node("a", 0.0, 1.5));
}

#[test]
fn empty_profiles_are_valid() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    let p = b.finish();
    let (json, _) = firefox(&p, &[]);
    assert!(check_firefox(&json).unwrap().tree.is_empty());
    let (json, _) = speedscope(&p, &[]);
    assert!(check_speedscope(&json).unwrap().tree.is_empty());
    // No value column at all: every sample weighs 1.
    let mut b = ProfileBuilder::new();
    let s = b.stack_of_names(&["x"]);
    b.push_sample(s, None, &[]);
    b.push_sample(s, None, &[]);
    let p = b.finish();
    let (json, _) = firefox(&p, &[]);
    assert_eq!(check_firefox(&json).unwrap().tree, [node("x", 2.0, 2.0)]);
    let (json, _) = speedscope(&p, &[]);
    assert_eq!(check_speedscope(&json).unwrap().tree, [node("x", 2.0, 2.0)]);
}

#[test]
fn pvm_phases_are_categories() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("ticks", "ticks", ValueKind::Weight);
    b.add_stack(&["%interpreter(decode)"], &[5]).unwrap();
    b.add_stack(&["kernel_run", "kernel_loop"], &[7]).unwrap();
    let p = b.finish();
    let (json, v) = firefox(&p, &[]);
    let s = check_firefox(&json).unwrap();
    assert_eq!(s.categories, ["Other", "Interpreter", "Kernel"]);
    let t = thread(&v, 0);
    assert_eq!(t["frameTable"]["category"], serde_json::json!([1, 2, null]));
    assert_eq!(
        t["frameTable"]["subcategory"],
        serde_json::json!([1, 0, null])
    );
}

#[test]
fn a_very_deep_stack_needs_no_recursion() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    let names: Vec<String> = (0..100_000).map(|i| format!("f{}", i % 7)).collect();
    b.add_stack(&names, &[1]).unwrap();
    let p = b.finish();
    let gz = emit::<Firefox>(&p, &[]).unwrap();
    let json = gunzip(&gz).unwrap();
    let v: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(thread(&v, 0)["stackTable"]["length"], 100_000);
    let out = emit::<Speedscope>(&p, &[]).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["profiles"][0]["samples"][0].as_array().unwrap().len(),
        100_000
    );
}

/// Every sampled speedscope sample holds its whole stack, so deep stacks make an output that
/// grows with the square of the depth: over `max-size` it is an error before anything is written.
#[test]
fn sampled_output_over_the_size_bound_is_an_error_before_anything_is_written() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    // One sample on every stack of a chain 1 000 deep: funcs 0..9 are one digit, 10..99 two and
    // 100..999 three, so the samples' frame lists take 1000·999·3/2 bytes give or take the
    // shorter names; the projection is exact for the lists.
    let names: Vec<String> = (0..1000).map(|i| format!("f{i}")).collect();
    for d in 1..=1000 {
        b.add_stack(&names[..d], &[1]).unwrap();
    }
    let p = b.finish();
    let len = crate::speedscope::written_stack_len(&p.view());
    let projected: u64 = len.iter().map(|l| l + 3).sum();
    let out = emit::<Speedscope>(&p, &[("max-size", &projected.to_string())]).unwrap();
    assert!(out.len() as u64 > projected, "a lower bound");
    let v: Value = serde_json::from_slice(&out).unwrap();
    let samples = v["profiles"][0]["samples"].as_array().unwrap();
    // Each list is its projected length and a bracket.
    let lists: u64 = samples
        .iter()
        .map(|s| serde_json::to_string(s).unwrap().len() as u64)
        .sum();
    assert_eq!(
        lists,
        len.iter().map(|l| l + 1).sum::<u64>(),
        "each list, exactly"
    );
    for max in [projected - 1, 1] {
        let mut buf = Vec::new();
        let e = {
            let opts = Options::new(vec![("max-size".into(), Some(max.to_string()))]);
            let mut out = Output::from_writer(&mut buf);
            Speedscope::emit(&p.view(), &mut out, &opts, &mut Context::silent()).unwrap_err()
        };
        assert!(buf.is_empty(), "nothing written");
        assert_eq!(e.status, Status::UNSUPPORTED);
        assert!(
            e.message.contains(&format!(
                "at least {:.1} MB ({projected} bytes): 1000 samples, stacks up to 1000 frames deep",
                projected as f64 / 1e6
            )) && e.message.contains("-O max-size=BYTES (0: none)"),
            "{}",
            e.message
        );
    }
    // 0: no bound; the default bound is far above this file.
    assert_eq!(emit::<Speedscope>(&p, &[("max-size", "0")]).unwrap(), out);
    assert_eq!(emit::<Speedscope>(&p, &[]).unwrap(), out);
    let e = emit::<Speedscope>(&p, &[("max-size", "-1")]).unwrap_err();
    assert_eq!(e.status, Status::BAD_OPTIONS);
}

/// The default bound is the most speedscope opens (2 GiB): a chain 40 000 calls deep, one
/// sample per node (some 5 GB of frame lists), is refused by default, written with `0`.
#[test]
fn the_default_size_bound_is_what_speedscope_opens() {
    assert_eq!(crate::SPEEDSCOPE_MAX_SIZE, 1 << 31);
    assert_eq!(
        crate::speedscope::MAX_SIZE_TEXT,
        crate::SPEEDSCOPE_MAX_SIZE.to_string()
    );
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    let frames = profconv_plugin::ir::testing::numbered_frames(&mut b, 40_000);
    let mut stack = profconv_plugin::ir::NONE;
    for &fr in &frames {
        stack = b.stack(stack, fr);
        b.add_to_stack(stack, &[1]).unwrap();
    }
    let p = b.finish();
    let e = emit::<Speedscope>(&p, &[]).unwrap_err();
    assert!(
        e.message.contains("over the 2147483648-byte bound"),
        "{}",
        e.message
    );
}

#[test]
fn folded_input_through_both() {
    let text = b"main;parse;read 42\nmain;parse 8\nmain;write_[k] 50\n";
    let p = profconv_folded::parse_folded(
        &mut profconv_plugin::Input::from_slice(text),
        false,
        &mut Context::silent(),
    )
    .unwrap();
    let (json, _) = firefox(&p, &[]);
    let s = check_firefox(&json).unwrap();
    assert_eq!(s.categories, ["Other", "User", "Kernel"]);
    assert_eq!(s.tree[0], node("main", 0.0, 100.0));
    let (json, _) = speedscope(&p, &[]);
    assert_eq!(check_speedscope(&json).unwrap().tree[0].total, 100.0);
}

#[test]
fn a_trace_with_real_time_draws_its_timeline_in_real_time() {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let ns = b.add_value_type("time_ns", "nanoseconds", ValueKind::Weight);
    let mut t = TraceBuilder::new(&b, vec![ticks, ns], Some(calls), true);
    let (f, g) = {
        let f = b.func("f");
        let g = b.func("g");
        (b.frame(f), b.frame(g))
    };
    t.enter(&mut b, f, &[0, 1_000_000]).unwrap();
    t.enter(&mut b, g, &[10, 3_000_000]).unwrap();
    t.exit(&mut b, &[30, 3_500_000]).unwrap();
    t.exit(&mut b, &[40, 6_000_000]).unwrap();
    b.set_flags(flags::ORDERED);
    b.add_meta("time_unit", "ticks");
    let p = b.finish();
    let (_, v) = firefox(&p, &[]);
    let samples = &thread(&v, 0)["samples"];
    // f 2 ms, g 0.5 ms, f 2.5 ms of real time; the weights stay ticks.
    assert_eq!(
        samples["time"],
        serde_json::json!([0, 2, 2.5, 5]),
        "{samples}"
    );
    assert_eq!(samples["weight"], serde_json::json!([10, 20, 10, 0]));
    assert_eq!(samples["weightType"], "samples");
    // speedscope measures the weight (ticks) on its own axis.
    let (_, v) = speedscope(&p, &[]);
    assert_eq!(v["profiles"][0]["endValue"], 40);
    let (_, v) = speedscope(&p, &[("value", "time_ns")]);
    assert_eq!(v["profiles"][0]["unit"], "nanoseconds");
    assert_eq!(v["profiles"][0]["endValue"], 5_000_000);
}

/// A trace of 200 000 nested calls, each with self time, as speedscope events. The evented
/// emitter used to rebuild and compare every sample's whole path (quadratic: a million nested
/// calls from a PVM trace took minutes); now each sample costs what it opens and closes.
#[test]
fn speedscope_events_of_a_very_deep_trace_are_linear() {
    const N: i64 = 200_000;
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    let frames = profconv_plugin::ir::testing::numbered_frames(&mut b, 7);
    for i in 0..N {
        t.enter(&mut b, frames[(i % 7) as usize], &[i]).unwrap();
    }
    for i in 0..N {
        t.exit(&mut b, &[N + i]).unwrap();
    }
    b.set_flags(flags::ORDERED);
    b.add_meta("time_unit", "ticks");
    let p = b.finish();
    // Not through `check_speedscope`: its tree keeps every node's path (quadratic here).
    let json = emit::<Speedscope>(&p, &[]).unwrap();
    let v: Value = serde_json::from_slice(&json).unwrap();
    let prof = &v["profiles"][0];
    assert_eq!(prof["type"], "evented");
    let events = prof["events"].as_array().unwrap();
    assert_eq!(events.len(), 2 * N as usize);
    // Every call opens once, in order, and the innermost closes first.
    assert_eq!(events[0]["type"], "O");
    assert_eq!(events[0]["at"], 0);
    assert_eq!(events[N as usize - 1]["at"], N - 1);
    assert_eq!(events[N as usize]["type"], "C");
    assert_eq!(events[N as usize]["at"], N);
    assert_eq!(events[2 * N as usize - 1]["at"], 2 * N - 1);
}

#[test]
fn threads_with_few_of_many_stacks_and_a_large_table() {
    // Thread one reaches over 10 000 stacks (a table larger than a chunk, marked by a backward
    // pass and written by a scan); thread two a handful of them (marked by walks up from each
    // sample, listed); thread three a few hundred (backward pass, listed).
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    let funcs: Vec<u32> = (0..50)
        .map(|i| b.func(&format!("f{}", (i * 7) % 50)))
        .collect();
    let frames: Vec<u32> = funcs.iter().map(|&f| b.frame(f)).collect();
    let one = b.add_thread("one");
    let mut leaves = Vec::new();
    for i in 0..10_000usize {
        let mut s = profconv_plugin::ir::NONE;
        for d in 0..3 {
            s = b.stack(s, frames[(i / 50usize.pow(d as u32) + d) % 50]);
        }
        leaves.push(s);
        b.add_to_stack(s, &[1 + (i % 3) as i64]).unwrap();
    }
    let two = b.add_thread("two");
    for &s in leaves.iter().step_by(2000) {
        b.add_to_stack(s, &[5]).unwrap();
    }
    // Thread three: samples on one stack in 20, still few stacks in all.
    let three = b.add_thread("three");
    for &s in leaves.iter().step_by(20) {
        b.add_to_stack(s, &[1]).unwrap();
    }
    let _ = (one, two, three);
    let p = b.finish();
    assert!(p.view().n_stacks() > 8 * 20);
    let (_, v) = firefox(&p, &[]);
    let two = thread(&v, 1);
    assert_eq!(two["samples"]["length"], 5 + 1, "five stacks and the end");
    assert!(two["stackTable"]["length"].as_u64().unwrap() <= 15);
    assert!(thread(&v, 0)["stackTable"]["length"].as_u64().unwrap() > 10_000);
    let n3 = thread(&v, 2)["stackTable"]["length"].as_u64().unwrap();
    assert!(n3 > 500 && n3 < 1600, "{n3}");
}

/// The warnings speedscope's emitter gives for `p` with `options`.
fn speedscope_warnings(p: &Profile, options: &[(&str, &str)]) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
    let buf = emit_with::<Speedscope>(p, options, &mut Context::with_sink(&mut sink)).unwrap();
    // Not `check_speedscope`: its tree keeps every node's path (quadratic in the depth).
    let _: Value = serde_json::from_slice(&buf).unwrap();
    warnings
}

/// speedscope (1.25.0 in Chromium 148) shows "Something went wrong" for a chain of 4 000
/// functions, sampled or evented, though the file passes its schema: stacks deeper than
/// `SPEEDSCOPE_DEPTH_WARNING` get a warning, with and without the size bound.
#[test]
fn speedscope_warns_about_stacks_too_deep_for_speedscope() {
    let deep = 3_000; // crate::speedscope::SPEEDSCOPE_DEPTH_WARNING
    let chain = |n: usize| {
        let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        b.add_stack(&refs, &[1]).unwrap();
        b.add_stack(&["f0"], &[1]).unwrap();
        b.finish()
    };
    let is_depth = |w: &Vec<String>| w.iter().any(|m| m.contains("Something went wrong"));
    assert!(!is_depth(&speedscope_warnings(&chain(deep), &[])));
    for opts in [&[][..], &[("max-size", "0")][..]] {
        let w = speedscope_warnings(&chain(deep + 1), opts);
        assert!(is_depth(&w), "{opts:?}: {w:?}");
        assert!(w[0].starts_with("stacks up to 3001 frames deep"), "{w:?}");
    }

    // An evented trace: nested calls, as a PVM trace gives.
    let trace = |n: i64| {
        let mut b = ProfileBuilder::new();
        let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let calls = b.add_value_type("calls", "count", ValueKind::Count);
        let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
        let frames = profconv_plugin::ir::testing::numbered_frames(&mut b, n as usize);
        for i in 0..n {
            t.enter(&mut b, frames[i as usize], &[i]).unwrap();
        }
        for i in 0..n {
            t.exit(&mut b, &[n + i]).unwrap();
        }
        b.set_flags(flags::ORDERED);
        b.add_meta("time_unit", "ticks");
        b.finish()
    };
    assert!(!is_depth(&speedscope_warnings(&trace(deep as i64), &[])));
    let w = speedscope_warnings(&trace(deep as i64 + 1), &[]);
    assert!(is_depth(&w), "{w:?}");
}

/// Each sample's stack as `a;b;c` (`-` for a `null` stack), from a Firefox thread's tables.
fn sample_paths(t: &Value) -> Vec<String> {
    let strings = t["stringArray"].as_array().unwrap();
    let name = |frame: usize| {
        let func = t["frameTable"]["func"][frame].as_u64().unwrap() as usize;
        let s = t["funcTable"]["name"][func].as_u64().unwrap() as usize;
        strings[s].as_str().unwrap().to_string()
    };
    let path = |mut stack: usize| {
        let mut names = Vec::new();
        loop {
            names.push(name(
                t["stackTable"]["frame"][stack].as_u64().unwrap() as usize
            ));
            match t["stackTable"]["prefix"][stack].as_u64() {
                Some(p) => stack = p as usize,
                None => break,
            }
        }
        names.reverse();
        names.join(";")
    };
    t["samples"]["stack"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().map_or("-".to_string(), |s| path(s as usize)))
        .collect()
}

/// A function called from three lines of its caller (`main` calls `parse` at lines 11 and 13,
/// `hash` at 12; a callgrind file): in the aggregated timeline each call node's samples come
/// together, siblings by name, as in a flame graph. Ranked by stack (a frame per line), `parse`
/// was two boxes in the Firefox stack chart and in speedscope's time order, before `hash`.
#[test]
fn a_call_node_of_several_lines_is_one_box_in_the_timeline() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("Ir", "count", ValueKind::Weight);
    let main = b.func("main");
    let (parse, hash) = (b.func("parse"), b.func("hash"));
    for (line, callee) in [(11, parse), (12, hash), (13, parse)] {
        let caller = b.frame_at(main, None, Some(line));
        let s = b.stack(profconv_plugin::ir::NONE, caller);
        let callee = b.frame(callee);
        let s = b.stack(s, callee);
        b.add_to_stack(s, &[10]).unwrap();
    }
    let p = b.finish();
    let (_, v) = firefox(&p, &[]);
    let t = thread(&v, 0);
    assert_eq!(
        sample_paths(t),
        ["main;hash", "main;parse", "main;parse", "-"]
    );
    assert_eq!(ints(&t["samples"]["time"]), [0, 10, 20, 30]);
    let (_, v) = speedscope(&p, &[]);
    let frames = v["shared"]["frames"].as_array().unwrap();
    let names: Vec<Vec<&str>> = v["profiles"][0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    frames[f.as_u64().unwrap() as usize]["name"]
                        .as_str()
                        .unwrap()
                })
                .collect()
        })
        .collect();
    assert_eq!(
        names,
        [["main", "hash"], ["main", "parse"], ["main", "parse"]]
    );
}

/// Absolute ticks past 2^53 (a long-running PVM's) are written from the earliest, which a
/// browser reads exactly: written as they were, JavaScript's doubles put g at 16–32 instead of
/// 10–30 and made h (5 ticks) 0 long, in speedscope and in the Firefox Profiler's stack chart.
#[test]
fn ticks_past_2_pow_53_are_written_from_the_earliest() {
    let b = 110_000_000_000_000_005i64;
    let at = |d: i64| (b + d).to_string();
    let events = [
        format!("C f {}", at(0)),
        format!("C g {}", at(10)),
        format!("E {}", at(30)),
        format!("C h {}", at(40)),
        format!("E {}", at(45)),
        format!("E {}", at(100)),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let p = profconv_plugin::ir::testing::trace(&events);
    let (_, v) = firefox(&p, &[]);
    assert_eq!(
        ints(&thread(&v, 0)["samples"]["time"]),
        [0, 10, 30, 40, 45, 100]
    );
    let (_, v) = speedscope(&p, &[]);
    let profile = &v["profiles"][0];
    let events: Vec<(&str, i64)> = profile["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["at"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        events,
        [
            ("O", 0),
            ("O", 10),
            ("C", 30),
            ("O", 40),
            ("C", 45),
            ("C", 100)
        ]
    );
    assert_eq!(
        (&profile["startValue"], &profile["endValue"]),
        (&0.into(), &100.into())
    );
    // Below 2^53 times are written as they are.
    let p = profconv_plugin::ir::testing::trace(&["C f 1000", "E 1010"]);
    let (_, v) = firefox(&p, &[]);
    assert_eq!(ints(&thread(&v, 0)["samples"]["time"]), [1000, 1010]);
}

/// A fraction whose stored integer is past 2^53 is written as the double nearest it: the
/// integer was converted to a double first, then divided, rounding twice (771757970383.2308966
/// was written 771757970383.2308, where the nearest double prints 771757970383.231).
#[test]
fn large_fractions_are_rounded_once() {
    use crate::common::{Num, scaled};
    let v: i128 = 7_717_579_703_832_308_966;
    let Num::F(x) = scaled(v, -7) else {
        panic!("not a fraction")
    };
    assert_eq!(x, "771757970383.2308966".parse::<f64>().unwrap());
    assert_eq!(x.to_string(), "771757970383.231");
    // Small ones keep the one exact division.
    let Num::F(y) = scaled(25, -2) else {
        panic!("not a fraction")
    };
    assert_eq!(y, 0.25);
}

/// The profile's sampling interval (`sample_interval_ms`, Deep.data's 50 ms quanta) is that of
/// its samples: another column drawn is laid out at 1 ms a unit. The real profiler showed
/// mandelbrot's calls (`-O value=calls`) as a run of 58 days.
#[test]
fn the_sampling_interval_is_the_samples_own() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("quanta", "samples", ValueKind::Weight);
    b.add_value_type("words", "words", ValueKind::Weight);
    b.add_stack(&["main", "f"], &[3, 4000]).unwrap();
    b.add_stack(&["main", "g"], &[1, 6000]).unwrap();
    b.add_meta("sample_interval_ms", "50");
    let p = b.finish();
    let last_time = |v: &Value| {
        let times = thread(v, 0)["samples"]["time"].as_array().unwrap().clone();
        times.last().unwrap().as_f64().unwrap()
    };
    let (_, v) = firefox(&p, &[]);
    assert_eq!(v["meta"]["interval"].as_f64(), Some(50.0));
    assert_eq!(last_time(&v), 4.0 * 50.0);
    let (_, v) = firefox(&p, &[("value", "quanta")]);
    assert_eq!(v["meta"]["interval"].as_f64(), Some(50.0));
    let (_, v) = firefox(&p, &[("value", "words")]);
    assert_eq!(v["meta"]["interval"].as_f64(), Some(1.0));
    assert_eq!(last_time(&v), 10_000.0);
}

/// A profile with a calls column but no sample order (an aggregated one) has no timeline to
/// rebuild calls from: it is written sampled, one sample per stack, not evented.
#[test]
fn speedscope_of_an_aggregated_profile_with_calls_is_sampled() {
    let (_, v) = speedscope(&seed_000(false), &[]);
    let p = &v["profiles"][0];
    assert_eq!(p["type"], "sampled", "{p}");
    assert!(p.get("events").is_none(), "{p}");
    let (_, v) = speedscope(&seed_000(true), &[]);
    assert_eq!(v["profiles"][0]["type"], "evented");
}

/// Stacks of weight 0 are left out silently; only negative weights, which speedscope cannot
/// show, are counted in the warning.
#[test]
fn speedscope_counts_only_negative_weights_as_left_out() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("delta", "count", ValueKind::Weight);
    b.add_stack(&["main", "a"], &[2]).unwrap();
    b.add_stack(&["main", "b"], &[0]).unwrap();
    let p = b.finish();
    assert_eq!(speedscope_warnings(&p, &[]), Vec::<String>::new());
    let (_, v) = speedscope(&p, &[]);
    assert_eq!(v["profiles"][0]["weights"], serde_json::json!([2]));
    let mut b = ProfileBuilder::new();
    b.add_value_type("delta", "count", ValueKind::Weight);
    b.add_stack(&["main", "a"], &[2]).unwrap();
    b.add_stack(&["main", "b"], &[0]).unwrap();
    b.add_stack(&["main", "c"], &[-1]).unwrap();
    assert_eq!(
        speedscope_warnings(&b.finish(), &[]),
        ["speedscope cannot show negative weights: 1 samples left out"]
    );
}

/// An evented profile of a weight with decimals (ticks read as `2.5`) has its events at the
/// weight's values, not at its fixed-point integers.
#[test]
fn speedscope_events_of_a_weight_with_decimals_are_at_its_values() {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    b.add_value_type("calls", "count", ValueKind::Count);
    b.set_flags(flags::ORDERED);
    b.rescale(ticks, 1).unwrap();
    // f runs 1 tick, calls g for 1.5, and runs 1.5 more; no sample times: laid end to end.
    for (stack, v) in [
        (&["f"][..], [10, 1]),
        (&["f", "g"], [15, 1]),
        (&["f"], [15, 0]),
    ] {
        let s = b.stack_of_names(stack);
        b.push_sample(s, None, &v);
    }
    let p = b.finish();
    assert_eq!(p.value_types[ticks].decimals, 1);
    let (_, v) = speedscope(&p, &[]);
    let prof = &v["profiles"][0];
    assert_eq!(prof["type"], "evented");
    let at: Vec<f64> = prof["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["at"].as_f64().unwrap())
        .collect();
    assert_eq!(at, [0.0, 1.0, 2.5, 4.0]);
    assert_eq!(prof["endValue"].as_f64(), Some(4.0));
}

/// speedscope opens on the first profile that shows something: a first thread whose samples
/// all weigh nothing (left out) gives an empty sampled profile, and the file opens on the next.
#[test]
fn speedscope_opens_on_the_first_sampled_profile_with_samples() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_thread("idle");
    b.add_stack(&["main", "wait"], &[0]).unwrap();
    b.add_thread("busy");
    b.add_stack(&["main", "work"], &[3]).unwrap();
    let (_, v) = speedscope(&b.finish(), &[]);
    assert_eq!(v["profiles"][0]["name"], "idle");
    assert_eq!(v["profiles"][0]["samples"], serde_json::json!([]));
    assert_eq!(v["profiles"][1]["name"], "busy");
    assert_eq!(v["activeProfileIndex"], 1);
}

/// A sample that enters several calls at once (a trace whose samples skip levels, as a sampled
/// profile with a calls column does) opens each of them, outermost first, and closes them
/// innermost first: the events nest.
#[test]
fn speedscope_opens_every_call_a_sample_enters() {
    let mut b = ProfileBuilder::new();
    b.add_value_type("ticks", "ticks", ValueKind::Weight);
    b.add_value_type("calls", "count", ValueKind::Count);
    b.set_flags(flags::ORDERED);
    for (stack, v) in [
        (&["a"][..], [1, 1]),
        (&["a", "b", "c"], [2, 1]),
        (&["a"], [1, 0]),
    ] {
        let s = b.stack_of_names(stack);
        b.push_sample(s, None, &v);
    }
    let (_, v) = speedscope(&b.finish(), &[]);
    let frames = v["shared"]["frames"].as_array().unwrap();
    let prof = &v["profiles"][0];
    assert_eq!(prof["type"], "evented");
    let events: Vec<String> = prof["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let frame = &frames[e["frame"].as_u64().unwrap() as usize]["name"];
            format!(
                "{} {} {}",
                e["type"].as_str().unwrap(),
                frame.as_str().unwrap(),
                e["at"]
            )
        })
        .collect();
    assert_eq!(
        events,
        ["O a 0", "O b 1", "O c 1", "C c 3", "C b 3", "C a 4"]
    );
}
