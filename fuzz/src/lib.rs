//! What each fuzz target checks, shared with the replay test
//! (`snapshots/tests/fuzz_corpus_replay.rs` includes this file with `#[path]`), so CI replays
//! the committed corpus through exactly the code the fuzzer ran.
//!
//! Nothing here may use input-derived `unwrap()`: a panic is the failure the fuzzer looks for.

use profconv_ir::{
    CallTree, NONE, ProfileRef, StringsRef, TreeOrder, TreeTextOptions, ValueKind, ValueType,
    render_tree,
};
use profconv_plugin::{Context, Format, Input, Options, Output};

/// Parses `data` with `F` (in memory, default options); when that succeeds, runs the host's
/// checks on the result: validate, call tree, tree text, and the folded emitter.
pub fn parse_and_check<F: Format>(data: &[u8]) {
    let mut cx = Context::silent();
    let parsed = F::parse(
        &mut Input::from_slice(data),
        &Options::new(Vec::new()),
        &mut cx,
    );
    if let Ok(profile) = parsed {
        let view = profile.view();
        if view.validate().is_err() {
            // A parser must only return profiles the host accepts.
            panic!("{} returned a profile that fails validation", F::ID);
        }
        check_valid(&view, false);
    }
}

/// The folded parser gives the same profile, warnings and error on three threads with small
/// pieces (cut anywhere, even inside a line's count) as on one, whatever the input: the
/// identical-output rule of `--threads`.
pub fn folded_threads_agree(data: &[u8]) {
    let piece_size = 1 + data.first().map_or(0, |&b| usize::from(b) % 61);
    let batch_lines = 1 + data.get(1).map_or(0, |&b| usize::from(b) % 64);
    let whole = profconv_folded::PIECE_SIZE;
    for skip_bad_lines in [false, true] {
        // Line by line on one thread: the reference.
        let one = folded_outcome(data, skip_bad_lines, 1, whole, 1);
        let batched = folded_outcome(data, skip_bad_lines, 1, whole, batch_lines);
        if one != batched {
            panic!(
                "batches of {batch_lines} lines differ from one line at a time:\n{one}\n---\n{batched}"
            );
        }
        let many = folded_outcome(data, skip_bad_lines, 3, piece_size, batch_lines);
        if one != many {
            panic!("3 threads with {piece_size}-byte pieces differ from one:\n{one}\n---\n{many}");
        }
    }
}

fn folded_outcome(
    data: &[u8],
    skip_bad_lines: bool,
    threads: usize,
    piece_size: usize,
    batch_lines: usize,
) -> String {
    let mut messages = Vec::new();
    let mut sink = |_: u32, m: &str| messages.push(m.to_string());
    let mut cx = Context::with_sink(&mut sink).with_threads(threads);
    let opts = profconv_folded::ParseOptions {
        skip_bad_lines,
        threads,
        piece_size,
        batch_lines,
        // Batched from the first line when batches are asked for, so small inputs test them.
        batch_from_stacks: if batch_lines > 1 { 0 } else { usize::MAX },
        ..profconv_folded::ParseOptions::default()
    };
    let result =
        match profconv_folded::parse_folded_with(&mut Input::from_slice(data), opts, &mut cx) {
            // Every table (no hash maps inside: the text is deterministic).
            Ok(p) => format!("{p:?}"),
            Err(e) => format!("error {e} at {:?}", e.byte_offset),
        };
    format!("{result}\n{messages:?}")
}

/// Builds the call tree and renders it; with `all_emitters`, also runs every emitter.
/// Errors are fine (a tree whose totals overflow is refused); panics are not.
pub fn check_valid(view: &ProfileRef<'_>, all_emitters: bool) {
    if let Ok(tree) = CallTree::build(view) {
        for order in [TreeOrder::Total, TreeOrder::FirstSeen] {
            let opts = TreeTextOptions {
                value: None,
                all_values: true,
                order,
            };
            let _ = render_tree(view, &tree, &opts);
        }
    }
    emit::<profconv_folded::Folded>(view);
    if all_emitters {
        emit::<profconv_callgrind::Callgrind>(view);
        emit::<profconv_flamegraph::Flamegraph>(view);
        emit::<profconv_firefox::Firefox>(view);
        emit::<profconv_firefox::Speedscope>(view);
        emit::<profconv_pvm::PvmSummary>(view);
    }
}

fn emit<F: Format>(view: &ProfileRef<'_>) {
    let mut buf: Vec<u8> = Vec::new();
    let mut cx = Context::silent();
    let mut out = Output::from_writer(&mut buf);
    let _ = F::emit(view, &mut out, &Options::new(Vec::new()), &mut cx);
}

/// Reads the fuzz input as a stream of small numbers.
struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    /// 0..n (n > 0).
    fn below(&mut self, n: u32) -> u32 {
        u32::from(self.byte()) % n
    }
    /// An index that is usually valid: 0..n, sometimes n (out of range) or NONE.
    fn index(&mut self, n: u32, allow_none: bool) -> u32 {
        let b = self.byte();
        match b {
            255 => NONE,
            254 if !allow_none => n,
            254 => NONE,
            253 => n,
            _ if n == 0 => 0,
            _ => u32::from(b) % n,
        }
    }
    fn i64(&mut self) -> i64 {
        match self.byte() {
            0..=199 => i64::from(self.byte()),
            200..=219 => -i64::from(self.byte()),
            220..=229 => i64::MAX - i64::from(self.byte()),
            230..=239 => i64::MIN + i64::from(self.byte()),
            _ => {
                let mut v = 0u64;
                for _ in 0..8 {
                    v = (v << 8) | u64::from(self.byte());
                }
                v as i64
            }
        }
    }
}

/// Column sets a plugin could return, from fuzz bytes; see the `host_profile` target.
pub fn host_profile(data: &[u8]) {
    let mut b = Bytes { data };
    // Strings: a blob of names, with offsets that are usually right.
    let pool = [
        "", "main", "a", "b;c", "x y", "é", "<&>\"'", "calls", "samples", "count",
    ];
    let n_str = b.below(10) as usize;
    let mut blob = String::new();
    let mut offsets = vec![0u64];
    for _ in 0..n_str {
        blob.push_str(pool[b.below(pool.len() as u32) as usize]);
        offsets.push(blob.len() as u64);
    }
    if b.below(16) == 0 {
        let i = b.below(offsets.len() as u32) as usize;
        offsets[i] = u64::from(b.byte());
    }
    let ns = n_str as u32;
    let nfunc = b.below(8);
    let mut func_name = Vec::new();
    let mut func_file = Vec::new();
    let mut func_line = Vec::new();
    let mut func_resource = Vec::new();
    for _ in 0..nfunc {
        func_name.push(b.index(ns, false));
        func_file.push(b.index(ns, true));
        func_line.push(u32::from(b.byte()));
        func_resource.push(b.index(ns, true));
    }
    let nframe = b.below(8);
    let mut frame_func = Vec::new();
    let mut frame_address = Vec::new();
    let mut frame_line = Vec::new();
    for _ in 0..nframe {
        frame_func.push(b.index(nfunc, false));
        frame_address.push(if b.below(2) == 0 {
            profconv_ir::NO_ADDRESS
        } else {
            u64::from(b.byte())
        });
        frame_line.push(u32::from(b.byte()));
    }
    // Stacks: sometimes a long chain (deep trees must not recurse).
    let mut stack_prefix = Vec::new();
    let mut stack_frame = Vec::new();
    let nstack = b.below(16);
    for i in 0..nstack {
        stack_prefix.push(b.index(i, true));
        stack_frame.push(b.index(nframe, false));
    }
    if nframe > 0 && b.below(8) == 0 {
        let depth = 1000 + 100 * b.below(50);
        let frame = b.index(nframe, false);
        for _ in 0..depth {
            let n = stack_prefix.len() as u32;
            stack_prefix.push(if n == 0 { NONE } else { n - 1 });
            stack_frame.push(frame);
        }
    }
    let nstacks = stack_prefix.len() as u32;
    let ntypes = b.below(4);
    let mut value_types = Vec::new();
    for _ in 0..ntypes {
        value_types.push(ValueType {
            name: b.index(ns, false),
            unit: b.index(ns, false),
            kind: if b.below(2) == 0 {
                ValueKind::Weight
            } else {
                ValueKind::Count
            },
            decimals: b.below(21),
        });
    }
    let nsamples = b.below(24);
    let mut sample_stack = Vec::new();
    for _ in 0..nsamples {
        sample_stack.push(if nstacks > 0 && b.below(4) == 0 {
            nstacks - 1
        } else {
            b.index(nstacks, false)
        });
    }
    let mut values: Vec<Vec<i64>> = Vec::new();
    for _ in 0..ntypes {
        values.push((0..nsamples).map(|_| b.i64()).collect());
    }
    if ntypes > 0 && b.below(16) == 0 {
        let c = b.below(ntypes) as usize;
        values[c].push(1);
    }
    let time: Option<Vec<i64>> =
        (b.below(2) == 0).then(|| (0..nsamples).map(|_| b.i64()).collect());
    let nthreads = b.below(4);
    let thread_name: Vec<u32> = (0..nthreads).map(|_| b.index(ns, false)).collect();
    let thread: Option<Vec<u32>> =
        (b.below(2) == 0).then(|| (0..nsamples).map(|_| b.index(nthreads, false)).collect());
    let nmeta = b.below(4);
    let meta_key: Vec<u32> = (0..nmeta).map(|_| b.index(ns, false)).collect();
    let meta_value: Vec<u32> = (0..nmeta).map(|_| b.index(ns, false)).collect();
    let flags = u32::from(b.byte());

    let view = ProfileRef {
        flags,
        strings: StringsRef {
            blob: &blob,
            offsets: &offsets,
        },
        func_name: &func_name,
        func_file: &func_file,
        func_line: &func_line,
        func_resource: &func_resource,
        frame_func: &frame_func,
        frame_address: &frame_address,
        frame_line: &frame_line,
        stack_prefix: &stack_prefix,
        stack_frame: &stack_frame,
        value_types,
        sample_stack: &sample_stack,
        sample_time: time.as_deref(),
        sample_thread: thread.as_deref(),
        sample_values: values.iter().map(|c| c.as_slice()).collect(),
        thread_name: &thread_name,
        meta_key,
        meta_value,
    };
    if view.validate().is_ok() {
        check_valid(&view, true);
        // What the host does with a foreign profile before using it.
        let owned = view.to_owned_profile();
        let _ = owned.view().validate();
    }
}
