//! The emitters' memory on a long trace: what every sample makes (speedscope's open and close
//! events, the Firefox Profiler's sample rows) is written as it is made, not stored first. A
//! 10 M-event PVM trace stored 40 bytes per event or sample: 870 MB (speedscope) and 770 MB
//! (Firefox) in all, against the profile's 430 MB. Measured by counting this test binary's heap
//! bytes (allocations are deterministic, unlike time); the tests take turns, so that no other
//! test allocates meanwhile.

use profconv_firefox::{FirefoxOptions, SpeedscopeOptions, emit_firefox, emit_speedscope};
use profconv_plugin::Context;
use profconv_plugin::counting_alloc::{CountingAlloc, peak_of};
use profconv_plugin::ir::{Profile, ProfileBuilder, TraceBuilder, ValueKind, flags};
use std::io::Read;
use std::sync::Mutex;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// Held by the test measuring.
static MEASURING: Mutex<()> = Mutex::new(());

/// Calls in the trace of [`many_calls`].
const N: i64 = 100_000;

/// A trace where `main` calls `f` `n` times, back to back with a tick of `main` between two:
/// two stacks, `2n + 1` samples, `2n + 2` events.
fn many_calls(n: i64) -> Profile {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    let main = b.func("main");
    let main = b.frame(main);
    let f = b.func("f");
    let f = b.frame(f);
    t.enter(&mut b, main, &[0]).unwrap();
    for i in 0..n {
        t.enter(&mut b, f, &[2 * i + 1]).unwrap();
        t.exit(&mut b, &[2 * i + 2]).unwrap();
    }
    t.exit(&mut b, &[2 * n + 1]).unwrap();
    b.set_flags(flags::ORDERED);
    b.add_meta("time_unit", "ticks");
    b.finish()
}

#[test]
fn speedscope_events_are_written_as_they_are_made_not_stored() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let p = many_calls(N);
    let v = p.view();
    let opts = SpeedscopeOptions {
        value: None,
        max_size: None,
    };
    // The output is right: every call of `f` opens and closes.
    let mut json = Vec::new();
    emit_speedscope(&v, &mut json, opts, &mut Context::silent()).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let prof = &doc["profiles"][0];
    assert_eq!(prof["type"], "evented");
    let events = 2 * N as usize + 2;
    assert_eq!(prof["events"].as_array().unwrap().len(), events);
    drop((doc, json));

    // Written to a sink, it takes a few bytes per event (the thread's sample list), not the
    // events themselves (40 bytes each).
    let extra = peak_of(|| {
        emit_speedscope(&v, &mut std::io::sink(), opts, &mut Context::silent()).unwrap();
    });
    assert!(
        extra < 8 * events,
        "{extra} bytes for {events} events ({:.1} per event)",
        extra as f64 / events as f64
    );
}

#[test]
fn firefox_samples_are_written_as_they_are_made_not_stored() {
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let p = many_calls(N);
    let v = p.view();
    let opts = FirefoxOptions { value: None };
    // The output is right: every sample, and a `null` one where the last ends.
    let mut gz = Vec::new();
    emit_firefox(&v, &mut gz, opts, &mut Context::silent()).unwrap();
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut json)
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let samples = &doc["threads"][0]["samples"];
    let n = 2 * N as usize + 2;
    assert_eq!(samples["length"], n);
    assert_eq!(samples["stack"].as_array().unwrap().len(), n);
    assert_eq!(samples["time"][n - 1], 2 * N + 1);
    drop((doc, json, gz));

    // Compressed to a sink, it takes a few bytes per sample (the thread's sample list) and the
    // compressor's tables, not the samples' rows (40 bytes each).
    let extra = peak_of(|| {
        emit_firefox(&v, &mut std::io::sink(), opts, &mut Context::silent()).unwrap();
    });
    assert!(
        extra < 8 * n + (1 << 20),
        "{extra} bytes for {n} samples ({:.1} per sample)",
        extra as f64 / n as f64
    );
}
