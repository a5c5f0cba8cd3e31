//! The Firefox Profiler's processed profile format, version 55, as hand-written serde structs.
//! The stack table and the sample columns are not stored: their structs compute each value from
//! the IR while they are written, and the `.json.gz` file is written by a direct writer
//! ([`crate::compact`]) that gives serde_json's compact bytes for these structs, on a second
//! thread while this one compresses ([`emit_firefox`]).
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

use crate::categories::{Category, categorize};
use crate::common::{
    Fill, Num, UnitKind, aggregate_per_stack, product_name, scaled, stack_rank_and_spare,
    thread_name, time_column, time_origin, unit_kind,
};
use crate::compact::{CHUNK, Chunks, Item};
use flate2::{Compression, GzBuilder};
use profconv_plugin::ir::{NO_ADDRESS, NONE, ProfileRef, ValueKind};
use profconv_plugin::{Context, PluginError, one_value_column};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use std::io::{self, Write};
use std::sync::{Mutex, mpsc};

/// `meta.preprocessedProfileVersion`.
pub const PROCESSED_PROFILE_VERSION: u32 = 55;
/// `meta.version`: the Gecko format version a v55 processed file declares.
pub const GECKO_VERSION: u32 = 24;
/// `meta.interval` in milliseconds when the profile does not say (`sample_interval_ms`
/// metadata), and always when the column drawn is not in `samples` (`-O value=calls`): one unit
/// of a count on the time axis.
pub const INTERVAL_MS: f64 = 1.0;
/// gzip compression level (fixed, so the output bytes are too).
pub const GZIP_LEVEL: u32 = 1;

/// What the emitter was asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirefoxOptions<'a> {
    /// The value type written as the sample weight (default: the first weight).
    pub value: Option<&'a str>,
}

/// The whole file. The threads' tables are built one thread at a time while they are written
/// ([`Threads`]), and the stack table, the only table as large as the profile, is streamed from
/// the IR's columns without being stored.
#[derive(Serialize)]
pub struct FxProfile<'r, 'p> {
    meta: Meta,
    libs: [(); 0],
    pages: [(); 0],
    counters: [(); 0],
    threads: Threads<'r, 'p>,
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
struct Thread<'a, 'p> {
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
    string_array: &'a [&'p str],
    func_table: &'a FuncTable,
    frame_table: &'a FrameTable,
    stack_table: StackTable<'a, 'p>,
    resource_table: &'a ResourceTable,
    native_symbols: NativeSymbols,
    samples: Samples<'a>,
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

/// The stack table of one thread: its used stacks in IR order, renumbered through the
/// scratch maps of [`Scratch`].
#[derive(Serialize)]
struct StackTable<'a, 'p> {
    frame: StackColumn<'a, 'p>,
    prefix: StackColumn<'a, 'p>,
    length: usize,
}

/// Which stacks a thread uses, in IR order.
enum Used {
    /// Every stack (an aggregated profile with one thread): the numbering is the IR's, so
    /// nothing is looked up.
    All,
    /// Most stacks: those marked in [`Scratch::stack`], found by a scan.
    Dense,
    /// A few: their sorted list.
    Sparse(Vec<u32>),
}

/// One column of a [`StackTable`], computed from the IR while it is written.
struct StackColumn<'a, 'p> {
    p: &'a ProfileRef<'p>,
    sc: &'a Scratch,
    used: &'a Used,
    len: usize,
    prefix: bool,
}

impl StackColumn<'_, '_> {
    /// Hands the column's values to `sink`.
    fn write<K: Sink>(&self, sink: K) -> K::Out {
        let (p, sc) = (self.p, self.sc);
        let frame = |st: u32| sc.frame[p.stack_frame[st as usize] as usize];
        let prefix = |st: u32| match p.stack_prefix[st as usize] {
            NONE => None,
            pre => Some(sc.stack[pre as usize]),
        };
        match (self.used, self.prefix) {
            (Used::All, false) => sink.items(p.stack_frame.iter().map(|&fr| sc.frame[fr as usize])),
            (Used::All, true) => sink.items(p.stack_prefix.iter().map(|&pre| opt(pre))),
            (Used::Dense, false) => sink.items(sc.dense_used().map(frame)),
            (Used::Dense, true) => sink.items(sc.dense_used().map(prefix)),
            (Used::Sparse(v), false) => sink.items(v.iter().map(|&st| frame(st))),
            (Used::Sparse(v), true) => sink.items(v.iter().map(|&st| prefix(st))),
        }
    }
}

impl Serialize for StackColumn<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.write(SerdeSink(s, self.len))
    }
}

/// Where a column's values go: a serde serializer ([`SerdeSink`]) or the compact writer
/// ([`ChunkSink`]), so both write the same values.
trait Sink {
    type Out;
    fn items<T: Item + Serialize>(self, items: impl Iterator<Item = T>) -> Self::Out;
}

/// A column as a serde sequence of `.1` elements.
struct SerdeSink<S>(S, usize);

impl<S: Serializer> Sink for SerdeSink<S> {
    type Out = Result<S::Ok, S::Error>;
    fn items<T: Item + Serialize>(self, items: impl Iterator<Item = T>) -> Self::Out {
        seq(self.0, self.1, items)
    }
}

/// A column by [`Chunks::array`] (the same bytes as serde_json's compact output).
struct ChunkSink<'w, F>(&'w mut Chunks<F>);

impl<F: FnMut(Vec<u8>) -> io::Result<Vec<u8>>> Sink for ChunkSink<'_, F> {
    type Out = io::Result<()>;
    fn items<T: Item + Serialize>(self, items: impl Iterator<Item = T>) -> Self::Out {
        self.0.array(items)
    }
}

/// Writes `len` items as a JSON array.
fn seq<S: Serializer, T: Serialize>(
    s: S,
    len: usize,
    items: impl Iterator<Item = T>,
) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(len))?;
    for item in items {
        seq.serialize_element(&item)?;
    }
    seq.end()
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
struct Samples<'a> {
    stack: SampleColumn<'a>,
    time: SampleColumn<'a>,
    weight: SampleColumn<'a>,
    weight_type: &'static str,
    length: usize,
}

/// One column of [`Samples`], from the thread's samples (stacks renumbered through
/// [`Scratch::stack`] unless the thread uses every stack).
struct SampleColumn<'a> {
    raw: &'a ThreadSamples,
    of: &'a SampleSource<'a, 'a>,
    sc: &'a Scratch,
    /// [`Used::All`]: the stacks keep their IR numbers.
    all: bool,
    what: SampleField,
}

#[derive(Clone, Copy)]
enum SampleField {
    Stack,
    Time,
    Weight,
}

impl SampleColumn<'_> {
    /// Hands the column's values to `sink`.
    fn write<K: Sink>(&self, sink: K) -> K::Out {
        let stack = |st: u32| match self.all {
            true => opt(st),
            false => (st != NONE).then(|| self.sc.stack[st as usize]),
        };
        match (self.raw, self.what) {
            (ThreadSamples::Stored(raw), SampleField::Stack) => {
                sink.items(raw.iter().map(|r| stack(r.stack)))
            }
            (ThreadSamples::Stored(raw), SampleField::Time) => {
                sink.items(raw.iter().map(|r| r.time))
            }
            (ThreadSamples::Stored(raw), SampleField::Weight) => {
                sink.items(raw.iter().map(|r| r.weight))
            }
            (
                ThreadSamples::Ordered {
                    samples,
                    null_after,
                    ..
                },
                what,
            ) => {
                let of = self.of;
                let slots = of.slots(samples, null_after);
                match what {
                    SampleField::Stack => sink.items(slots.map(|o| stack(o.stack))),
                    SampleField::Time => sink.items(slots.map(|o| of.time(&o))),
                    SampleField::Weight => sink.items(slots.map(|o| of.weight(&o))),
                }
            }
        }
    }
}

impl Serialize for SampleColumn<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.write(SerdeSink(s, self.raw.len()))
    }
}

/// A thread's output samples: stored when they are one per distinct stack (an aggregated
/// profile), else made from the IR's samples each time a column reads them (an ordered profile,
/// a sample or two for each of the IR's: stored, they took 40 bytes each, as much memory again
/// as a trace's profile).
enum ThreadSamples {
    Stored(Vec<RawSample>),
    /// The thread's IR samples in time order, a bit per sample set where a `null` sample
    /// follows it, and how many output samples they make.
    Ordered {
        samples: Vec<u32>,
        null_after: Vec<u64>,
        len: usize,
    },
}

impl ThreadSamples {
    /// How many output samples.
    fn len(&self) -> usize {
        match self {
            ThreadSamples::Stored(raw) => raw.len(),
            ThreadSamples::Ordered { len, .. } => *len,
        }
    }
}

/// One output sample of an ordered profile: IR sample `i` on its stack, or the `null` sample
/// (`stack` is `NONE`) where sample `i` ends.
struct Slot {
    stack: u32,
    i: usize,
}

/// The output samples of an ordered profile's thread ([`SampleSource::slots`]).
struct Slots<'s> {
    stack_of: &'s [u32],
    samples: &'s [u32],
    null_after: &'s [u64],
    /// The next of `samples`.
    k: usize,
    /// Whether a `null` sample comes next (after sample `k - 1`).
    null_next: bool,
}

impl Iterator for Slots<'_> {
    type Item = Slot;

    #[inline]
    fn next(&mut self) -> Option<Slot> {
        if std::mem::take(&mut self.null_next) {
            let i = self.samples[self.k - 1] as usize;
            return Some(Slot { stack: NONE, i });
        }
        let k = self.k;
        let i = *self.samples.get(k)? as usize;
        self.k += 1;
        self.null_next = self.null_after[k / 64] >> (k % 64) & 1 == 1;
        Some(Slot {
            stack: self.stack_of[i],
            i,
        })
    }
}

/// What an ordered profile's output samples are made from (nothing for an aggregated one).
struct SampleSource<'a, 'p> {
    p: &'a ProfileRef<'p>,
    weight: &'a Weight,
    axis: Option<&'a Axis<'p>>,
}

impl SampleSource<'_, '_> {
    /// Where a `null` sample follows each of `samples` (a thread's, in time order) on the
    /// timeline, a bit per sample: where one ends before the next starts, and after the last,
    /// so that the stack chart shows each interval exactly.
    fn null_after(&self, samples: &[u32]) -> Vec<u64> {
        let mut bits = vec![0u64; samples.len().div_ceil(64)];
        let (p, Some(axis)) = (self.p, self.axis) else {
            return bits;
        };
        for (k, &i) in samples.iter().enumerate() {
            let i = i as usize;
            let end = axis.start(i) + axis.dur(p, i);
            let next = samples.get(k + 1).map(|&j| j as usize);
            if next.is_none_or(|j| axis.start(j) > end || axis.gap_between(p, i, j)) {
                bits[k / 64] |= 1 << (k % 64);
            }
        }
        bits
    }

    /// The output samples: each of `samples`, followed by a `null` sample where `null_after`
    /// says.
    fn slots<'s>(&'s self, samples: &'s [u32], null_after: &'s [u64]) -> Slots<'s> {
        Slots {
            stack_of: self.p.sample_stack,
            samples,
            null_after,
            k: 0,
            null_next: false,
        }
    }

    /// Where a sample starts, or where a `null` sample's sample ends.
    fn time(&self, o: &Slot) -> Num {
        let Some(axis) = self.axis else {
            return Num::I(0);
        };
        let at = match o.stack {
            NONE => axis.start(o.i) + axis.dur(self.p, o.i),
            _ => axis.start(o.i),
        };
        scaled(at, axis.exp10)
    }

    fn weight(&self, o: &Slot) -> Num {
        match (o.stack, self.weight.col) {
            (NONE, _) => Num::I(0),
            (_, None) => Num::I(1),
            (_, Some(c)) => self.weight.num(self.p.sample_values[c][o.i]),
        }
    }
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
#[derive(Clone, Copy)]
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
///
/// When the host allows more than one thread (`--threads`), the JSON is generated on a second
/// thread and handed over in chunks (128 KiB, at most 4 waiting) to this thread, which
/// compresses and writes them: deflate and JSON generation run at the same time. The bytes
/// written are the same as with one thread (also the fallback when no thread can be started).
pub fn emit_firefox(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: FirefoxOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let profile = build_profile(p, opts, cx)?;
    let mut gz = GzBuilder::new()
        .mtime(0)
        .write(out, Compression::new(GZIP_LEVEL));
    if cx.threads() > 1 {
        write_pipelined(&profile, &mut gz)?;
    } else {
        write_in_turn(&profile, &mut gz)?;
    }
    gz.finish()?.flush()?;
    Ok(())
}

/// Chunks that may wait for the compressor (bounds the memory in flight: `QUEUE + 2` chunks of
/// [`CHUNK`] bytes).
const QUEUE: usize = 4;

/// Writes `doc` as compact JSON ([`FxProfile::write_compact`]) on a second thread and
/// compresses it into `sink` on this one.
fn write_pipelined(doc: &FxProfile<'_, '_>, sink: &mut impl Write) -> Result<(), PluginError> {
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
    let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let producer = std::thread::Builder::new()
            .name("profconv-firefox-json".to_string())
            .spawn_scoped(scope, move || {
                let mut w = Chunks::new(|full: Vec<u8>| {
                    tx.send(full).map_err(|_| {
                        io::Error::new(io::ErrorKind::BrokenPipe, "the compressor stopped")
                    })?;
                    Ok(back_rx
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(CHUNK)))
                });
                doc.write_compact(&mut w)?;
                w.hand()?;
                Ok::<(), io::Error>(())
            });
        let Ok(producer) = producer else {
            return write_in_turn(doc, sink);
        };
        let mut written = Ok(());
        for mut chunk in rx.iter() {
            written = sink.write_all(&chunk);
            if written.is_err() {
                break;
            }
            chunk.clear();
            // The producer may have finished; then the buffer is simply dropped.
            let _ = back_tx.send(chunk);
        }
        // Unblocks a producer still sending after a write error (its send then fails).
        drop(rx);
        let produced = match producer.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        written?;
        Ok(produced?)
    })
}

/// [`write_pipelined`] without a second thread: the same chunks, generated and written in turn.
fn write_in_turn(doc: &FxProfile<'_, '_>, sink: &mut impl Write) -> Result<(), PluginError> {
    let mut w = Chunks::new(|full: Vec<u8>| {
        sink.write_all(&full)?;
        Ok(full)
    });
    doc.write_compact(&mut w)?;
    Ok(w.hand()?)
}

/// The uncompressed compact JSON that [`emit_firefox`] compresses (for tests).
#[cfg(test)]
pub(crate) fn firefox_json_compact(
    p: &ProfileRef<'_>,
    opts: FirefoxOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<(Vec<u8>, Vec<u8>), PluginError> {
    let profile = build_profile(p, opts, cx)?;
    let mut out = Vec::new();
    let mut w = Chunks::new(|full: Vec<u8>| {
        out.extend_from_slice(&full);
        Ok(full)
    });
    profile.write_compact(&mut w)?;
    w.hand()?;
    drop(w);
    let by_serde = serde_json::to_vec(&profile).map_err(json_error)?;
    Ok((out, by_serde))
}

impl FxProfile<'_, '_> {
    /// The file as compact JSON: the same bytes as `serde_json::to_writer(self)`, but the
    /// stack table and the sample columns are written by [`Chunks::array`] rather than element by
    /// element through the serializer (tests compare the two).
    fn write_compact<F>(&self, w: &mut Chunks<F>) -> io::Result<()>
    where
        F: FnMut(Vec<u8>) -> io::Result<Vec<u8>>,
    {
        w.raw(b"{\"meta\":")?;
        w.value(&self.meta)?;
        w.raw(b",\"libs\":[],\"pages\":[],\"counters\":[],\"threads\":[")?;
        let mut first = true;
        self.threads.each(|th| {
            if !first {
                w.raw(b",")?;
            }
            first = false;
            th.write_compact(w)
        })?;
        w.raw(b"]}")
    }
}

impl Thread<'_, '_> {
    /// See [`FxProfile::write_compact`]; the keys are those of the derived `Serialize`.
    fn write_compact<F>(&self, w: &mut Chunks<F>) -> io::Result<()>
    where
        F: FnMut(Vec<u8>) -> io::Result<Vec<u8>>,
    {
        w.raw(b"{\"name\":")?;
        w.value(self.name)?;
        w.raw(b",\"processType\":")?;
        w.value(self.process_type)?;
        w.raw(b",\"processName\":")?;
        w.value(self.process_name)?;
        w.raw(b",\"pid\":")?;
        w.value(&self.pid)?;
        w.raw(b",\"tid\":")?;
        w.value(&self.tid)?;
        w.raw(b",\"isMainThread\":")?;
        w.value(&self.is_main_thread)?;
        w.raw(b",\"processStartupTime\":")?;
        w.value(&self.process_startup_time)?;
        w.raw(b",\"processShutdownTime\":")?;
        w.value(&self.process_shutdown_time)?;
        w.raw(b",\"registerTime\":")?;
        w.value(&self.register_time)?;
        w.raw(b",\"unregisterTime\":")?;
        w.value(&self.unregister_time)?;
        w.raw(b",\"pausedRanges\":")?;
        w.value(&self.paused_ranges)?;
        w.raw(b",\"stringArray\":")?;
        w.value(self.string_array)?;
        w.raw(b",\"funcTable\":")?;
        w.value(self.func_table)?;
        w.raw(b",\"frameTable\":")?;
        w.value(self.frame_table)?;
        let st = &self.stack_table;
        w.raw(b",\"stackTable\":{\"frame\":")?;
        st.frame.write(ChunkSink(&mut *w))?;
        w.raw(b",\"prefix\":")?;
        st.prefix.write(ChunkSink(&mut *w))?;
        w.raw(b",\"length\":")?;
        w.value(&st.length)?;
        w.raw(b"},\"resourceTable\":")?;
        w.value(self.resource_table)?;
        w.raw(b",\"nativeSymbols\":")?;
        w.value(&self.native_symbols)?;
        let s = &self.samples;
        w.raw(b",\"samples\":{\"stack\":")?;
        s.stack.write(ChunkSink(&mut *w))?;
        w.raw(b",\"time\":")?;
        s.time.write(ChunkSink(&mut *w))?;
        w.raw(b",\"weight\":")?;
        s.weight.write(ChunkSink(&mut *w))?;
        w.raw(b",\"weightType\":")?;
        w.value(s.weight_type)?;
        w.raw(b",\"length\":")?;
        w.value(&s.length)?;
        w.raw(b"},\"markers\":")?;
        w.value(&self.markers)?;
        w.raw(b"}")
    }
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

/// Decides everything about the file that can fail or warn (the weight, the timeline, each
/// thread's samples); the tables are built while it is written.
pub fn build_profile<'r, 'p>(
    p: &'r ProfileRef<'p>,
    opts: FirefoxOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<FxProfile<'r, 'p>, PluginError> {
    let col = one_value_column(p, opts.value, cx)?;
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
    // The profile's sampling interval is that of its samples (Deep.data's quanta); another
    // column drawn (`-O value=calls`) is laid out at 1 ms a unit, like every other count: a
    // Deep.data profile's calls at 50 ms each made a timeline of weeks.
    let interval = match col {
        Some(c) if p.value_type_unit(c) != "samples" => INTERVAL_MS,
        _ => sample_interval(p),
    };
    let by_thread = p.samples_by_thread();
    let (rank, spare) = match p.is_ordered() {
        true => (None, Vec::new()),
        false => {
            let (rank, spare) = stack_rank_and_spare(p);
            (Some(rank), spare)
        }
    };
    let product = product_name(p);
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
    // One NONE per stack for aggregation, then the thread's stack map.
    let mut acc = match rank {
        Some(_) => spare,
        None => vec![NONE; p.n_stacks()],
    };
    let mut raw = Vec::with_capacity(by_thread.len());
    for samples in by_thread {
        raw.push(match (&rank, &axis) {
            (Some(rank), _) => ThreadSamples::Stored(aggregated_samples(
                p, &samples, &weight, rank, &mut acc, interval,
            )?),
            (None, Some(axis)) => {
                let source = SampleSource {
                    p,
                    weight: &weight,
                    axis: Some(axis),
                };
                let null_after = source.null_after(&samples);
                let nulls: u32 = null_after.iter().map(|b| b.count_ones()).sum();
                let len = samples.len() + nulls as usize;
                ThreadSamples::Ordered {
                    samples,
                    null_after,
                    len,
                }
            }
            (None, None) => ThreadSamples::Stored(Vec::new()),
        });
    }
    drop(rank);
    let n = raw.len() as u32;
    // The profiler opens on this thread: the first with a sample on a stack (not a run with no
    // call, or one that a transform such as focus-func emptied). Every IR sample has a stack.
    let selected = raw
        .iter()
        .position(|r| match r {
            ThreadSamples::Stored(raw) => raw.iter().any(|s| s.stack != NONE),
            ThreadSamples::Ordered { samples, .. } => !samples.is_empty(),
        })
        .unwrap_or(0) as u32;
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
        initial_selected_threads: (n > 1).then(|| vec![selected]),
    };
    Ok(FxProfile {
        meta,
        libs: [],
        pages: [],
        counters: [],
        threads: Threads {
            p,
            scratch: Mutex::new(Scratch::new(p, acc)),
            raw,
            of_func: cats.of_func,
            weight_type: weight.weight_type,
            weight,
            axis,
        },
    })
}

/// The `threads` array: each thread's samples, decided up front (an ordered profile's are made
/// again from the IR's for each column); its tables are built when it is written, in scratch
/// maps shared by all threads.
struct Threads<'r, 'p> {
    p: &'r ProfileRef<'p>,
    /// Index maps, reset after each thread (a mutex only so that the file can be written on
    /// another thread).
    scratch: Mutex<Scratch>,
    raw: Vec<ThreadSamples>,
    /// Each func's category ([`crate::Categories::of_func`]).
    of_func: Vec<Option<(u32, u32)>>,
    weight_type: &'static str,
    /// The sample weight and (ordered profiles) the timeline, which make the samples of
    /// [`ThreadSamples::Ordered`].
    weight: Weight,
    axis: Option<Axis<'p>>,
}

impl Threads<'_, '_> {
    /// Calls `f` with each thread, its tables built in the scratch maps (and reset after).
    fn each<E>(&self, mut f: impl FnMut(&Thread<'_, '_>) -> Result<(), E>) -> Result<(), E> {
        let p = self.p;
        let mut sc = self
            .scratch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let sc = &mut *sc;
        let of = SampleSource {
            p,
            weight: &self.weight,
            axis: self.axis.as_ref(),
        };
        for (t, raw) in self.raw.iter().enumerate() {
            let tables = match raw {
                ThreadSamples::Stored(v) => {
                    build_tables(p, v.len(), v.iter().map(|r| r.stack), &self.of_func, sc)
                }
                ThreadSamples::Ordered { samples, len, .. } => build_tables(
                    p,
                    *len,
                    samples.iter().map(|&i| p.sample_stack[i as usize]),
                    &self.of_func,
                    sc,
                ),
            };
            let name = thread_name(p, t);
            let scr = &*sc;
            let column = |prefix| StackColumn {
                p,
                sc: scr,
                used: &tables.used,
                len: tables.n_stacks,
                prefix,
            };
            let all = matches!(tables.used, Used::All);
            let sample = |what| SampleColumn {
                raw,
                of: &of,
                sc: scr,
                all,
                what,
            };
            f(&Thread {
                name,
                process_type: "default",
                process_name: name,
                pid: (t + 1).to_string(),
                tid: t as u32 + 1,
                is_main_thread: true,
                process_startup_time: 0,
                process_shutdown_time: None,
                register_time: 0,
                unregister_time: None,
                paused_ranges: [],
                string_array: &tables.strings,
                func_table: &tables.funcs,
                frame_table: &tables.frames,
                stack_table: StackTable {
                    frame: column(false),
                    prefix: column(true),
                    length: tables.n_stacks,
                },
                resource_table: &tables.resources,
                native_symbols: NativeSymbols::default(),
                samples: Samples {
                    stack: sample(SampleField::Stack),
                    time: sample(SampleField::Time),
                    weight: sample(SampleField::Weight),
                    weight_type: self.weight_type,
                    length: raw.len(),
                },
                markers: Markers::default(),
            })?;
            sc.reset(p, &tables);
        }
        Ok(())
    }
}

impl Serialize for Threads<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.raw.len()))?;
        self.each(|th| seq.serialize_element(th))?;
        seq.end()
    }
}

/// One sample per distinct stack of the thread, with its self value, in depth-first order, at
/// the running sum of the (absolute) weights, then a `null` sample where the last one ends.
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
    // Weights in ms are the time axis; counts and bytes advance it by the interval a unit.
    let exact = weight.weight_type == "tracing-ms" || interval == 1.0;
    let ms = |at: i128| match exact {
        true => at as f64 * 10f64.powi(weight.exp10 - weight.decimals as i32),
        false => at as f64 / 10f64.powi(weight.decimals as i32) * interval,
    };
    // The profiler reads times as doubles and keeps the samples before the profile's end, the
    // last sample's time plus the interval. From 2^52 intervals on, that sum rounds back to the
    // last time, and the last samples would leave its call tree (weights adding up to that
    // much: 10^7 samples of 10^9 cycles). Such a timeline is scaled to end at 2^51 intervals:
    // its shape is kept, and the weights, which make the call tree, are not changed.
    let total: i128 = rows.iter().map(|&(_, v)| (v as i128).abs()).sum();
    let limit = interval * 2f64.powi(51);
    let squeeze = (ms(total) > limit).then(|| limit / ms(total));
    let time = |at: i128| match squeeze {
        Some(k) => float_num(ms(at) * k),
        None if exact => scaled(at, weight.exp10 - weight.decimals as i32),
        None => float_num(ms(at)),
    };
    // Running time in the weight column's fixed point (i128: sums of i64 cannot overflow it).
    let mut at: i128 = 0;
    for (stack, v) in rows {
        out.push(RawSample {
            stack,
            time: time(at),
            weight: weight.num(v),
        });
        at += (v as i128).abs();
    }
    // The last sample ends at the whole weight, as the ordered path's do: without this `null`
    // sample the profiler ends it one interval after it starts (`a;c 50` drawn 1 ms wide, a 7 ns
    // leaf as 1 ms beside 1.5 µs of the rest).
    if !out.is_empty() {
        out.push(RawSample {
            stack: NONE,
            time: time(at),
            weight: Num::I(0),
        });
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
    /// Subtracted from the given times ([`time_origin`]).
    origin: i128,
    /// Otherwise the running sum of the durations, over all samples in order.
    starts: Vec<i128>,
    /// On a running sum of real time (2. below), the sample times in their own clock (ticks)
    /// and that clock's column: where they show a gap between two samples (no call open, its
    /// length in real time unknown), the two are kept apart by a `null` sample of no length.
    gaps: Option<(&'a [i64], usize)>,
    exp10: i32,
    /// What the timeline is, for the profile's metadata.
    what: String,
}

impl Axis<'_> {
    fn start(&self, i: usize) -> i128 {
        match self.given {
            Some(t) => t[i] as i128 - self.origin,
            None => self.starts[i],
        }
    }

    fn dur(&self, p: &ProfileRef<'_>, i: usize) -> i128 {
        self.col
            .map_or(1, |c| (p.sample_values[c][i] as i128).abs())
    }

    /// Whether the clock shows time with no call open between sample `i` and sample `j`, the
    /// next one of its thread, where the timeline itself cannot ([`Self::gaps`]).
    fn gap_between(&self, p: &ProfileRef<'_>, i: usize, j: usize) -> bool {
        self.gaps.is_some_and(|(t, c)| {
            i128::from(t[j]) > i128::from(t[i]) + (p.sample_values[c][i] as i128).abs()
        })
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

/// How the timeline's description says its times were moved ([`time_origin`]).
fn from_origin(origin: i128) -> String {
    match origin {
        0 => String::new(),
        o => format!(", less {o}, the earliest: past 2^53 a double rounds them"),
    }
}

/// Chooses the timeline of an ordered profile:
///
/// 1. the sample times, when their clock (the `time_unit` metadata) is a time unit;
/// 2. else the first `Weight` column in a time unit (`time_ns`): its running sum, so the
///    timeline is real time, without the gaps when no call was open (their length is unknown;
///    where the sample times show one, a `null` sample of no length marks it);
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
    // Where the sample times start from, once (a pass over every sample).
    let origin = monotonic.map_or(0, time_origin);
    if let (Some(t), Some(c), Some(u)) = (monotonic, clock, clock_unit) {
        if let Some(exp10) = time_exp10(p, u, c) {
            return (
                Axis {
                    col: Some(c),
                    given: Some(t),
                    origin,
                    starts: Vec::new(),
                    gaps: None,
                    exp10,
                    what: format!("sample times ({u}){}", from_origin(origin)),
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
                origin: 0,
                starts: running(Some(c)),
                gaps: monotonic.zip(clock).filter(|&(_, k)| k != c),
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
                origin,
                starts: Vec::new(),
                gaps: None,
                exp10,
                what: format!("sample times ({name}, 1 = 1 ms){}", from_origin(origin)),
            },
            fell_back,
        ),
        None => (
            Axis {
                col: clock,
                given: None,
                origin: 0,
                starts: running(clock),
                gaps: None,
                exp10,
                what: format!("running sum of {name} (1 = 1 ms)"),
            },
            fell_back,
        ),
    }
}

/// Index maps from IR rows to a thread's rows, reused across threads (reset after each).
struct Scratch {
    /// New index of each IR stack the thread uses, else `NONE`.
    stack: Vec<u32>,
    frame: Vec<u32>,
    func: Vec<u32>,
    string: Vec<u32>,
    resource: Vec<u32>,
}

impl Scratch {
    /// `stack` holds one `NONE` per stack.
    fn new(p: &ProfileRef<'_>, stack: Vec<u32>) -> Self {
        Scratch {
            stack,
            frame: vec![NONE; p.n_frames()],
            func: vec![NONE; p.n_funcs()],
            string: vec![NONE; p.strings.len()],
            resource: vec![NONE; p.strings.len()],
        }
    }

    /// The used stacks of [`Used::Dense`], in IR order.
    fn dense_used(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.stack.len() as u32).filter(|&s| self.stack[s as usize] != NONE)
    }

    /// Unmarks what `t` marked.
    fn reset(&mut self, p: &ProfileRef<'_>, t: &Tables<'_>) {
        match &t.used {
            Used::All | Used::Dense => self.stack.fill(NONE),
            Used::Sparse(v) => {
                for &s in v {
                    self.stack[s as usize] = NONE;
                }
            }
        }
        for &f in &t.used_frames {
            self.frame[f as usize] = NONE;
        }
        for &f in &t.used_funcs {
            self.func[f as usize] = NONE;
            let r = p.func_resource[f as usize];
            if r != NONE {
                self.resource[r as usize] = NONE;
            }
        }
        for &s in &t.used_strings {
            self.string[s as usize] = NONE;
        }
    }
}

/// A thread's tables but the stack table (which [`StackColumn`] writes from the IR and the
/// scratch maps): the rows its samples reach, renumbered in IR order.
struct Tables<'p> {
    used: Used,
    n_stacks: usize,
    strings: Vec<&'p str>,
    funcs: FuncTable,
    frames: FrameTable,
    resources: ResourceTable,
    used_frames: Vec<u32>,
    used_funcs: Vec<u32>,
    used_strings: Vec<u32>,
}

/// Marks the stacks `raw` (the stacks of the thread's `n_raw` output samples, `NONE` for a
/// `null` one) reaches and numbers them, their frames, funcs, resources and strings in `sc`, in
/// IR stack order.
fn build_tables<'p>(
    p: &ProfileRef<'p>,
    n_raw: usize,
    raw: impl Iterator<Item = u32>,
    of_func: &[Option<(u32, u32)>],
    sc: &mut Scratch,
) -> Tables<'p> {
    // The stacks reached: each sample's stack and its prefixes. With samples on a good part of
    // the stacks (aggregated profiles), marking the samples' stacks and then every marked
    // stack's prefix in one backward pass (`prefix[i] < i`) reads memory in order; otherwise
    // each sample walks up to the first marked prefix. Either way the used stacks are listed
    // only while they are few: past an eighth of all stacks, a scan in IR order is cheaper than
    // a sort and needs no list.
    let n = p.n_stacks();
    let mut list: Vec<u32> = Vec::new();
    let mut count = 0usize;
    if n_raw >= n / 64 && n > 0 {
        for st in raw {
            if st != NONE {
                sc.stack[st as usize] = 0;
            }
        }
        for s in (0..n).rev() {
            if sc.stack[s] != NONE {
                count += 1;
                let pre = p.stack_prefix[s];
                if pre != NONE {
                    sc.stack[pre as usize] = 0;
                }
            }
        }
        if count <= n / 8 {
            list.extend((0..n as u32).filter(|&s| sc.stack[s as usize] != NONE));
        }
    } else {
        for mut s in raw {
            while s != NONE && sc.stack[s as usize] == NONE {
                sc.stack[s as usize] = 0;
                count += 1;
                if count <= n / 8 {
                    list.push(s);
                }
                s = p.stack_prefix[s as usize];
            }
        }
        list.sort_unstable();
    }
    let used = if count == n {
        Used::All
    } else if count > n / 8 {
        drop(list);
        Used::Dense
    } else {
        Used::Sparse(list)
    };

    let mut t = Tables {
        used,
        n_stacks: count,
        strings: Vec::new(),
        funcs: FuncTable::default(),
        frames: FrameTable::default(),
        resources: ResourceTable::default(),
        used_frames: Vec::new(),
        used_funcs: Vec::new(),
        used_strings: Vec::new(),
    };
    let Scratch {
        stack: sc_stack,
        frame: sc_frame,
        func: sc_func,
        string: sc_string,
        resource: sc_resource,
    } = sc;
    let (strings, used_strings) = (&mut t.strings, &mut t.used_strings);
    let mut intern = |id: u32| -> u32 {
        let slot = &mut sc_string[id as usize];
        if *slot == NONE {
            *slot = strings.len() as u32;
            strings.push(p.strings.get(id));
            used_strings.push(id);
        }
        *slot
    };
    let (funcs, frames, resources) = (&mut t.funcs, &mut t.frames, &mut t.resources);
    let mut visit = |s: u32| {
        let fr = p.stack_frame[s as usize];
        if sc_frame[fr as usize] == NONE {
            let f = p.frame_func[fr as usize];
            if sc_func[f as usize] == NONE {
                let fi = f as usize;
                let res = match p.func_resource[fi] {
                    NONE => -1,
                    r => {
                        if sc_resource[r as usize] == NONE {
                            sc_resource[r as usize] = resources.name.len() as u32;
                            let n = intern(r);
                            resources.name.push(n);
                        }
                        sc_resource[r as usize] as i64
                    }
                };
                sc_func[fi] = funcs.name.len() as u32;
                t.used_funcs.push(f);
                let n = intern(p.func_name[fi]);
                funcs.name.push(n);
                funcs.resource.push(res);
                funcs.file_name.push(match p.func_file[fi] {
                    NONE => None,
                    file => Some(intern(file)),
                });
                funcs.line_number.push(opt(p.func_line[fi]));
            }
            sc_frame[fr as usize] = frames.func.len() as u32;
            t.used_frames.push(fr);
            frames.func.push(sc_func[f as usize]);
            let cat = of_func.get(f as usize).copied().flatten();
            frames.category.push(cat.map(|c| c.0));
            frames.subcategory.push(cat.map(|c| c.1));
            frames.address.push(match p.frame_address[fr as usize] {
                NO_ADDRESS => Num::I(-1),
                a => Num::U(a),
            });
            frames.line.push(opt(p.frame_line[fr as usize]));
        }
    };
    match &t.used {
        Used::All => (0..n as u32).for_each(&mut visit),
        Used::Dense => {
            let mut new = 0;
            for s in 0..n as u32 {
                if sc_stack[s as usize] != NONE {
                    visit(s);
                    sc_stack[s as usize] = new;
                    new += 1;
                }
            }
        }
        Used::Sparse(list) => {
            for (new, &s) in list.iter().enumerate() {
                visit(s);
                sc_stack[s as usize] = new as u32;
            }
        }
    }

    let nfunc = t.funcs.name.len();
    t.funcs.is_js = Fill(false, nfunc);
    t.funcs.relevant_for_js = Fill(false, nfunc);
    t.funcs.column_number = Fill(None, nfunc);
    t.funcs.length = nfunc;
    let nframe = t.frames.func.len();
    t.frames.inline_depth = Fill(0, nframe);
    t.frames.native_symbol = Fill(None, nframe);
    t.frames.inner_window_id = Fill(0, nframe);
    t.frames.column = Fill(None, nframe);
    t.frames.length = nframe;
    let nres = t.resources.name.len();
    t.resources.lib = Fill(None, nres);
    t.resources.host = Fill(None, nres);
    t.resources.kind = Fill(0, nres);
    t.resources.length = nres;
    t
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

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::ProfileBuilder;

    #[test]
    fn one_thread_or_two_write_the_same_bytes() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let frames = profconv_plugin::ir::testing::numbered_frames(&mut b, 300);
        for i in 0..20_000usize {
            let mut s = NONE;
            for f in [i % 300, (i / 300) % 300, (i * 31 + 7) % 300] {
                s = b.stack(s, frames[f]);
            }
            b.add_to_stack(s, &[1]).unwrap();
        }
        let p = b.finish();
        let v = p.view();
        let doc = build_profile(&v, FirefoxOptions::default(), &mut Context::silent()).unwrap();
        let (mut two, mut one) = (Vec::new(), Vec::new());
        write_pipelined(&doc, &mut two).unwrap();
        write_in_turn(&doc, &mut one).unwrap();
        assert!(two.len() > 4 * CHUNK, "{} bytes: several chunks", two.len());
        assert!(one == two);
        assert_eq!(serde_json::to_vec(&doc).unwrap(), one);
    }

    /// A sink that fails after some bytes: the error comes back, and the generating thread
    /// stops instead of blocking forever.
    #[test]
    fn a_write_error_stops_both_threads() {
        struct Failing(usize);
        impl Write for Failing {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                if self.0 < buf.len() {
                    return Err(io::Error::other("disk full"));
                }
                self.0 -= buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let f = b.func("f");
        let fr = b.frame(f);
        let mut s = NONE;
        for _ in 0..200_000 {
            s = b.stack(s, fr);
        }
        b.add_to_stack(s, &[1]).unwrap();
        let p = b.finish();
        let v = p.view();
        let doc = build_profile(&v, FirefoxOptions::default(), &mut Context::silent()).unwrap();
        let err = write_pipelined(&doc, &mut Failing(CHUNK)).unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
    }
}
