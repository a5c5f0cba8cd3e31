//! The Firefox Profiler's processed profile format, version 55, as hand-written serde structs.
//!
//! Version 55 is the last version with every table inside its thread; the profiler upgrades it
//! to its current version on load, and rejects versions newer than its own, so the version is
//! pinned ([`PROCESSED_PROFILE_VERSION`]).
//!
//! Mapping, per output thread (one per IR thread, or one named `Main`):
//!
//! * strings: one `stringArray` per thread, each string once;
//! * IR funcs → `funcTable` (name, `fileName`, `lineNumber`, `resource`); IR frames →
//!   `frameTable` (func, `address`, `line`, category); IR stacks → `stackTable` (frame,
//!   `prefix`); IR func resources → `resourceTable`. Only rows the thread's samples reach are
//!   written, renumbered in IR order, so a prefix always comes before its children;
//! * samples: an **ordered** profile (a trace) keeps its samples in time order on a timeline
//!   (its sample times, or real time from a time column: [`time_axis`]),
//!   with a `null`-stack sample wherever a sample ends before the next begins (and after the
//!   last), so the stack chart shows each interval exactly; an **aggregated** profile gets one
//!   sample per distinct stack with its self value, in depth-first order with siblings by name,
//!   at the running sum of the weights, so the stack chart looks like a flame graph.

use crate::categories::{Categories, Category, categorize};
use crate::common::{
    Fill, Num, UnitKind, aggregate_per_stack, product_name, samples_by_thread, scaled, stack_rank,
    thread_name, time_column, unit_kind, weight_column,
};
use flate2::{Compression, GzBuilder};
use profconv_plugin::ir::{NO_ADDRESS, NONE, ProfileRef, ValueKind};
use profconv_plugin::{Context, PluginError};
use serde::Serialize;
use std::io::{BufWriter, Write};

/// `meta.preprocessedProfileVersion`.
pub const PROCESSED_PROFILE_VERSION: u32 = 55;
/// `meta.version`: the Gecko format version a v55 processed file declares.
pub const GECKO_VERSION: u32 = 24;
/// `meta.interval` in milliseconds when the profile does not say (`sample_interval_ms`
/// metadata): one unit of a sample count on the time axis.
pub const INTERVAL_MS: f64 = 1.0;
/// gzip compression level (fixed, so the output bytes are too).
pub const GZIP_LEVEL: u32 = 1;

/// What the emitter was asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirefoxOptions<'a> {
    /// The value type written as the sample weight (default: the first weight).
    pub value: Option<&'a str>,
}

/// The whole file.
#[derive(Serialize)]
pub struct FxProfile<'p> {
    meta: Meta,
    libs: [(); 0],
    pages: [(); 0],
    counters: [(); 0],
    threads: Vec<Thread<'p>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    preprocessed_profile_version: u32,
    version: u32,
    interval: f64,
    start_time: f64,
    process_type: u32,
    product: String,
    imported_from: String,
    stackwalk: u32,
    symbolicated: bool,
    uses_only_one_stack_type: bool,
    source_code_is_not_on_searchfox: bool,
    keep_profile_thread_order: bool,
    marker_schema: [(); 0],
    categories: Vec<Category>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_visible_threads: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_selected_threads: Option<Vec<u32>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Thread<'p> {
    name: &'p str,
    process_type: &'static str,
    process_name: &'p str,
    pid: String,
    tid: u32,
    is_main_thread: bool,
    process_startup_time: u32,
    process_shutdown_time: Option<u32>,
    register_time: u32,
    unregister_time: Option<u32>,
    paused_ranges: [(); 0],
    string_array: Vec<&'p str>,
    func_table: FuncTable,
    frame_table: FrameTable,
    stack_table: StackTable,
    resource_table: ResourceTable,
    native_symbols: NativeSymbols,
    samples: Samples,
    markers: Markers,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct FuncTable {
    name: Vec<u32>,
    #[serde(rename = "isJS")]
    is_js: Fill<bool>,
    #[serde(rename = "relevantForJS")]
    relevant_for_js: Fill<bool>,
    resource: Vec<i64>,
    file_name: Vec<Option<u32>>,
    line_number: Vec<Option<u32>>,
    column_number: Fill<Option<u32>>,
    length: usize,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct FrameTable {
    func: Vec<u32>,
    category: Vec<Option<u32>>,
    subcategory: Vec<Option<u32>>,
    address: Vec<Num>,
    inline_depth: Fill<u32>,
    native_symbol: Fill<Option<u32>>,
    #[serde(rename = "innerWindowID")]
    inner_window_id: Fill<u32>,
    line: Vec<Option<u32>>,
    column: Fill<Option<u32>>,
    length: usize,
}

#[derive(Serialize, Default)]
struct StackTable {
    frame: Vec<u32>,
    prefix: Vec<Option<u32>>,
    length: usize,
}

#[derive(Serialize, Default)]
struct ResourceTable {
    lib: Fill<Option<u32>>,
    name: Vec<u32>,
    host: Fill<Option<u32>>,
    #[serde(rename = "type")]
    kind: Fill<u32>,
    length: usize,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct NativeSymbols {
    lib_index: [(); 0],
    address: [(); 0],
    name: [(); 0],
    function_size: [(); 0],
    length: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Samples {
    stack: Vec<Option<u32>>,
    time: Vec<Num>,
    weight: Vec<Num>,
    weight_type: &'static str,
    length: usize,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Markers {
    data: [(); 0],
    name: [(); 0],
    start_time: [(); 0],
    end_time: [(); 0],
    phase: [(); 0],
    category: [(); 0],
    length: usize,
}

impl<T: Default> Default for Fill<T> {
    fn default() -> Self {
        Fill(T::default(), 0)
    }
}

/// One output sample before renumbering: an IR stack (or `NONE` for `null`), a time in ms and a
/// weight.
struct RawSample {
    stack: u32,
    time: Num,
    weight: Num,
}

/// The sample weight: which column, and how its values become the profiler's weight type.
struct Weight {
    col: Option<usize>,
    decimals: u32,
    /// Power of ten from the column's unit to the written weight (ns → ms: -6).
    exp10: i32,
    weight_type: &'static str,
}

impl Weight {
    fn of(p: &ProfileRef<'_>, col: Option<usize>) -> Weight {
        let Some(c) = col else {
            return Weight {
                col: None,
                decimals: 0,
                exp10: 0,
                weight_type: "samples",
            };
        };
        let (exp10, weight_type) = match unit_kind(p.value_type_unit(c)) {
            UnitKind::Time { exp10_to_ms, .. } => (exp10_to_ms, "tracing-ms"),
            UnitKind::Bytes => (0, "bytes"),
            UnitKind::Other => (0, "samples"),
        };
        Weight {
            col,
            decimals: p.value_types[c].decimals,
            exp10,
            weight_type,
        }
    }

    fn num(&self, v: i64) -> Num {
        scaled(v as i128, self.exp10 - self.decimals as i32)
    }
}

/// Writes `p` as a gzip-compressed v55 processed profile.
pub fn emit_firefox(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: FirefoxOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let profile = build_profile(p, opts, cx)?;
    let gz = GzBuilder::new()
        .mtime(0)
        .write(out, Compression::new(GZIP_LEVEL));
    let mut w = BufWriter::with_capacity(1 << 17, gz);
    serde_json::to_writer(&mut w, &profile).map_err(json_error)?;
    let gz = w
        .into_inner()
        .map_err(|e| PluginError::from(e.into_error()))?;
    gz.finish()?.flush()?;
    Ok(())
}

/// The uncompressed JSON, pretty-printed (for tests and inspection).
pub fn firefox_json_pretty(
    p: &ProfileRef<'_>,
    opts: FirefoxOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<String, PluginError> {
    let profile = build_profile(p, opts, cx)?;
    serde_json::to_string_pretty(&profile).map_err(json_error)
}

fn json_error(e: serde_json::Error) -> PluginError {
    if e.is_io() {
        PluginError::from(std::io::Error::from(e))
    } else {
        PluginError::internal(format!("cannot serialize the profile: {e}"))
    }
}

/// Builds the file's structure (borrowing `p`'s strings).
pub fn build_profile<'p>(
    p: &ProfileRef<'p>,
    opts: FirefoxOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<FxProfile<'p>, PluginError> {
    let col = weight_column(p, opts.value)?;
    let weight = Weight::of(p, col);
    if let Some(c) = col {
        if weight.weight_type == "samples" && !matches!(p.value_type_unit(c), "count" | "samples") {
            cx.info(&format!(
                "the Firefox Profiler has no weight type for '{}' ({}); written as 'samples'",
                p.value_type_name(c),
                p.value_type_unit(c)
            ));
        }
    }
    let cats = categorize(p);
    let interval = sample_interval(p);
    let by_thread = samples_by_thread(p);
    let rank = (!p.is_ordered()).then(|| stack_rank(p));
    let mut scratch = Scratch::new(p);
    let product = product_name(p);
    let mut threads = Vec::with_capacity(by_thread.len());
    let axis = match rank {
        Some(_) => None,
        None => {
            let (axis, fell_back) = time_axis(p, &by_thread);
            if fell_back {
                cx.warn("sample times go backwards; they are not used as the timeline");
            }
            cx.info(&format!("timeline: {}", axis.what));
            Some(axis)
        }
    };
    for (t, samples) in by_thread.iter().enumerate() {
        let raw = match (&rank, &axis) {
            (Some(rank), _) => {
                aggregated_samples(p, samples, &weight, rank, &mut scratch.acc, interval)?
            }
            (None, Some(axis)) => ordered_samples(p, samples, &weight, axis),
            (None, None) => Vec::new(),
        };
        let name = thread_name(p, t);
        threads.push(build_thread(p, name, t, &raw, &weight, &cats, &mut scratch));
    }
    let n = threads.len() as u32;
    let meta = Meta {
        preprocessed_profile_version: PROCESSED_PROFILE_VERSION,
        version: GECKO_VERSION,
        interval,
        start_time: 0.0,
        process_type: 0,
        imported_from: p.meta("source_format").unwrap_or("profconv").to_string(),
        product,
        stackwalk: 0,
        symbolicated: true,
        uses_only_one_stack_type: true,
        source_code_is_not_on_searchfox: true,
        keep_profile_thread_order: true,
        marker_schema: [],
        categories: cats.list,
        initial_visible_threads: (n > 1).then(|| (0..n).collect()),
        initial_selected_threads: (n > 1).then(|| vec![0]),
    };
    Ok(FxProfile {
        meta,
        libs: [],
        pages: [],
        counters: [],
        threads,
    })
}

/// One sample per distinct stack of the thread, with its self value, in depth-first order, at
/// the running sum of the (absolute) weights.
fn aggregated_samples(
    p: &ProfileRef<'_>,
    samples: &[u32],
    weight: &Weight,
    rank: &[u32],
    acc: &mut [u32],
    interval: f64,
) -> Result<Vec<RawSample>, PluginError> {
    let rows = aggregate_per_stack(p, samples, weight.col, rank, acc)?;
    let mut out = Vec::with_capacity(rows.len());
    // Running time in the weight column's fixed point (i128: sums of i64 cannot overflow it).
    let mut at: i128 = 0;
    for (stack, v) in rows {
        // Weights in ms are the time axis; counts and bytes advance it by the interval a unit.
        let time = if weight.weight_type == "tracing-ms" || interval == 1.0 {
            scaled(at, weight.exp10 - weight.decimals as i32)
        } else {
            float_num(at as f64 / 10f64.powi(weight.decimals as i32) * interval)
        };
        out.push(RawSample {
            stack,
            time,
            weight: weight.num(v),
        });
        at += (v as i128).abs();
    }
    Ok(out)
}

/// The timeline of an ordered profile: where each sample starts and how long it lasts, in one
/// clock, and the power of ten from that clock's fixed point to milliseconds.
struct Axis<'a> {
    /// The column holding each sample's duration (`None`: every sample lasts 1).
    col: Option<usize>,
    /// The profile's own sample times, when they are the timeline.
    given: Option<&'a [i64]>,
    /// Otherwise the running sum of the durations, over all samples in order.
    starts: Vec<i128>,
    exp10: i32,
    /// What the timeline is, for the profile's metadata.
    what: String,
}

impl Axis<'_> {
    fn start(&self, i: usize) -> i128 {
        match self.given {
            Some(t) => t[i] as i128,
            None => self.starts[i],
        }
    }

    fn dur(&self, p: &ProfileRef<'_>, i: usize) -> i128 {
        self.col
            .map_or(1, |c| (p.sample_values[c][i] as i128).abs())
    }
}

fn time_exp10(p: &ProfileRef<'_>, unit: &str, col: usize) -> Option<i32> {
    match unit_kind(unit) {
        UnitKind::Time { exp10_to_ms, .. } => {
            Some(exp10_to_ms - p.value_types[col].decimals as i32)
        }
        _ => None,
    }
}

/// Chooses the timeline of an ordered profile:
///
/// 1. the sample times, when their clock (the `time_unit` metadata) is a time unit;
/// 2. else the first `Weight` column in a time unit (`time_ns`): its running sum, so the
///    timeline is real time, without the gaps when no call was open (their length is unknown);
/// 3. else the sample times in their own clock (ticks), one unit drawn as 1 ms;
/// 4. else the running sum of the clock column (or one unit per sample).
///
/// Sample times that go backwards within a thread are not used (`true` is returned).
fn time_axis<'a>(p: &ProfileRef<'a>, threads: &[Vec<u32>]) -> (Axis<'a>, bool) {
    let clock = time_column(p);
    let monotonic = p.sample_time.filter(|t| {
        threads.iter().all(|samples| {
            samples
                .windows(2)
                .all(|w| t[w[0] as usize] <= t[w[1] as usize])
        })
    });
    let fell_back = p.sample_time.is_some() && monotonic.is_none();
    let clock_unit = clock.map(|c| {
        p.meta("time_unit")
            .filter(|u| unit_kind(u) != UnitKind::Other)
            .unwrap_or_else(|| p.value_type_unit(c))
    });
    let running = |col: Option<usize>| {
        let mut at: i128 = 0;
        (0..p.n_samples())
            .map(|i| {
                let start = at;
                at += col.map_or(1, |c| (p.sample_values[c][i] as i128).abs());
                start
            })
            .collect::<Vec<i128>>()
    };
    if let (Some(t), Some(c), Some(u)) = (monotonic, clock, clock_unit) {
        if let Some(exp10) = time_exp10(p, u, c) {
            return (
                Axis {
                    col: Some(c),
                    given: Some(t),
                    starts: Vec::new(),
                    exp10,
                    what: format!("sample times ({u})"),
                },
                fell_back,
            );
        }
    }
    let real = (0..p.value_types.len()).find(|&c| {
        p.value_types[c].kind == ValueKind::Weight
            && time_exp10(p, p.value_type_unit(c), c).is_some()
    });
    if let Some(c) = real {
        let exp10 = time_exp10(p, p.value_type_unit(c), c).unwrap_or(0);
        return (
            Axis {
                col: Some(c),
                given: None,
                starts: running(Some(c)),
                exp10,
                what: format!("running sum of {}", p.value_type_name(c)),
            },
            fell_back,
        );
    }
    let exp10 = -(clock.map_or(0, |c| p.value_types[c].decimals) as i32);
    let name = clock.map_or("samples", |c| p.value_type_name(c));
    match monotonic {
        Some(t) => (
            Axis {
                col: clock,
                given: Some(t),
                starts: Vec::new(),
                exp10,
                what: format!("sample times ({name}, 1 = 1 ms)"),
            },
            fell_back,
        ),
        None => (
            Axis {
                col: clock,
                given: None,
                starts: running(clock),
                exp10,
                what: format!("running sum of {name} (1 = 1 ms)"),
            },
            fell_back,
        ),
    }
}

/// The thread's samples in time order on `axis`, with a `null` sample where one ends before the
/// next starts and after the last, so the stack chart shows each interval exactly.
fn ordered_samples(
    p: &ProfileRef<'_>,
    samples: &[u32],
    weight: &Weight,
    axis: &Axis<'_>,
) -> Vec<RawSample> {
    let mut out = Vec::with_capacity(samples.len() + 1);
    for (k, &i) in samples.iter().enumerate() {
        let i = i as usize;
        let start = axis.start(i);
        let end = start + axis.dur(p, i);
        out.push(RawSample {
            stack: p.sample_stack[i],
            time: scaled(start, axis.exp10),
            weight: weight
                .col
                .map_or(Num::I(1), |c| weight.num(p.sample_values[c][i])),
        });
        let next = samples.get(k + 1).map(|&j| axis.start(j as usize));
        if next.is_none_or(|n| n > end) {
            out.push(RawSample {
                stack: NONE,
                time: scaled(end, axis.exp10),
                weight: Num::I(0),
            });
        }
    }
    out
}

/// Index maps from IR rows to a thread's rows, reused across threads (reset after each).
struct Scratch {
    stack: Vec<u32>,
    frame: Vec<u32>,
    func: Vec<u32>,
    string: Vec<u32>,
    resource: Vec<u32>,
    /// For [`aggregate_per_stack`].
    acc: Vec<u32>,
}

impl Scratch {
    fn new(p: &ProfileRef<'_>) -> Self {
        Scratch {
            stack: vec![NONE; p.n_stacks()],
            frame: vec![NONE; p.n_frames()],
            func: vec![NONE; p.n_funcs()],
            string: vec![NONE; p.strings.len()],
            resource: vec![NONE; p.strings.len()],
            acc: vec![NONE; p.n_stacks()],
        }
    }
}

/// A thread's tables: the rows its samples reach, renumbered in IR order.
fn build_thread<'p>(
    p: &ProfileRef<'p>,
    name: &'p str,
    index: usize,
    raw: &[RawSample],
    weight: &Weight,
    cats: &Categories,
    sc: &mut Scratch,
) -> Thread<'p> {
    // The stacks reached: each sample's stack and its prefixes (each walk stops at a marked one).
    let mut used: Vec<u32> = Vec::new();
    for r in raw {
        let mut s = r.stack;
        while s != NONE && sc.stack[s as usize] == NONE {
            sc.stack[s as usize] = 0;
            used.push(s);
            s = p.stack_prefix[s as usize];
        }
    }
    if used.len() > p.n_stacks() / 8 {
        // Dense (the usual case): one pass in IR order instead of a sort.
        used.clear();
        used.extend((0..p.n_stacks() as u32).filter(|&s| sc.stack[s as usize] != NONE));
    } else {
        used.sort_unstable();
    }

    let mut strings: Vec<&'p str> = Vec::new();
    let mut used_strings: Vec<u32> = Vec::new();
    let mut intern = |id: u32, sc_string: &mut Vec<u32>| -> u32 {
        let slot = &mut sc_string[id as usize];
        if *slot == NONE {
            *slot = strings.len() as u32;
            strings.push(p.strings.get(id));
            used_strings.push(id);
        }
        *slot
    };
    let mut funcs = FuncTable::default();
    let mut frames = FrameTable::default();
    let mut stacks = StackTable::default();
    let mut resources = ResourceTable::default();
    let (mut used_frames, mut used_funcs, mut used_resources) =
        (Vec::new(), Vec::new(), Vec::new());

    for &s in &used {
        let fr = p.stack_frame[s as usize];
        if sc.frame[fr as usize] == NONE {
            let f = p.frame_func[fr as usize];
            if sc.func[f as usize] == NONE {
                let fi = f as usize;
                let res = match p.func_resource[fi] {
                    NONE => -1,
                    r => {
                        if sc.resource[r as usize] == NONE {
                            sc.resource[r as usize] = resources.name.len() as u32;
                            let n = intern(r, &mut sc.string);
                            resources.name.push(n);
                            used_resources.push(r);
                        }
                        sc.resource[r as usize] as i64
                    }
                };
                sc.func[fi] = funcs.name.len() as u32;
                used_funcs.push(f);
                let n = intern(p.func_name[fi], &mut sc.string);
                funcs.name.push(n);
                funcs.resource.push(res);
                funcs.file_name.push(match p.func_file[fi] {
                    NONE => None,
                    file => Some(intern(file, &mut sc.string)),
                });
                funcs.line_number.push(opt(p.func_line[fi]));
            }
            sc.frame[fr as usize] = frames.func.len() as u32;
            used_frames.push(fr);
            frames.func.push(sc.func[f as usize]);
            let cat = cats.of_func.get(f as usize).copied().flatten();
            frames.category.push(cat.map(|c| c.0));
            frames.subcategory.push(cat.map(|c| c.1));
            frames.address.push(match p.frame_address[fr as usize] {
                NO_ADDRESS => Num::I(-1),
                a => Num::U(a),
            });
            frames.line.push(opt(p.frame_line[fr as usize]));
        }
        let new = stacks.frame.len() as u32;
        stacks.frame.push(sc.frame[fr as usize]);
        stacks.prefix.push(match p.stack_prefix[s as usize] {
            NONE => None,
            pre => Some(sc.stack[pre as usize]),
        });
        sc.stack[s as usize] = new;
    }

    let n = raw.len();
    let mut samples = Samples {
        stack: Vec::with_capacity(n),
        time: Vec::with_capacity(n),
        weight: Vec::with_capacity(n),
        weight_type: weight.weight_type,
        length: n,
    };
    for r in raw {
        samples.stack.push(match r.stack {
            NONE => None,
            s => Some(sc.stack[s as usize]),
        });
        samples.time.push(r.time);
        samples.weight.push(r.weight);
    }

    // Reset the scratch maps for the next thread.
    for &s in &used {
        sc.stack[s as usize] = NONE;
    }
    for &f in &used_frames {
        sc.frame[f as usize] = NONE;
    }
    for &f in &used_funcs {
        sc.func[f as usize] = NONE;
    }
    for &r in &used_resources {
        sc.resource[r as usize] = NONE;
    }
    for &s in &used_strings {
        sc.string[s as usize] = NONE;
    }

    let nfunc = funcs.name.len();
    funcs.is_js = Fill(false, nfunc);
    funcs.relevant_for_js = Fill(false, nfunc);
    funcs.column_number = Fill(None, nfunc);
    funcs.length = nfunc;
    let nframe = frames.func.len();
    frames.inline_depth = Fill(0, nframe);
    frames.native_symbol = Fill(None, nframe);
    frames.inner_window_id = Fill(0, nframe);
    frames.column = Fill(None, nframe);
    frames.length = nframe;
    stacks.length = stacks.frame.len();
    let nres = resources.name.len();
    resources.lib = Fill(None, nres);
    resources.host = Fill(None, nres);
    resources.kind = Fill(0, nres);
    resources.length = nres;

    Thread {
        name,
        process_type: "default",
        process_name: name,
        pid: (index + 1).to_string(),
        tid: index as u32 + 1,
        is_main_thread: true,
        process_startup_time: 0,
        process_shutdown_time: None,
        register_time: 0,
        unregister_time: None,
        paused_ranges: [],
        string_array: strings,
        func_table: funcs,
        frame_table: frames,
        stack_table: stacks,
        resource_table: resources,
        native_symbols: NativeSymbols::default(),
        samples,
        markers: Markers::default(),
    }
}

/// The sampling interval in ms: the `sample_interval_ms` metadata if it is a positive number,
/// else [`INTERVAL_MS`].
fn sample_interval(p: &ProfileRef<'_>) -> f64 {
    p.meta("sample_interval_ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(INTERVAL_MS)
}

/// A float as a JSON number (an integer when it is one).
fn float_num(x: f64) -> Num {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        Num::I(x as i64)
    } else {
        Num::F(x)
    }
}

fn opt(v: u32) -> Option<u32> {
    (v != NONE).then_some(v)
}
