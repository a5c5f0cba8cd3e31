//! speedscope's JSON file format (`https://www.speedscope.app/file-format-schema.json`).
//!
//! * `shared.frames`: one frame per IR func (name, `file`, `line` where known), so speedscope's
//!   call tree merges exactly what profconv's does.
//! * One profile per IR thread (or one for a profile without threads), named after it.
//! * An ordered trace with exact calls (a `calls` count column) becomes an **evented** profile:
//!   open (`O`) and close (`C`) events rebuilt from the time-ordered samples, a new call wherever a
//!   sample starts one, so back-to-back calls of one function stay apart.
//! * Anything else becomes a **sampled** profile: for an ordered profile, one sample per IR sample
//!   in time order; for an aggregated one, one sample per distinct stack with its self value, in
//!   depth-first order with siblings by name.

use crate::common::{
    Num, UnitKind, aggregate_per_stack, calls_column, product_name, scaled, stack_rank_and_spare,
    thread_name, time_column, time_origin, unit_kind,
};
use profconv_plugin::ir::{CallNodes, NONE, ProfileRef, path_sums};
use profconv_plugin::{Context, PluginError, human_bytes, one_value_column};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use std::io::{BufWriter, Write};
use std::rc::Rc;

/// The schema URL speedscope recognises the format by.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// Stacks deeper than this get a warning: speedscope itself fails on them ("Something went
/// wrong"; 1.25.0 in Chromium 148 opens a chain of 3 800 functions, not one of 4 000, sampled or
/// evented). The limit is the browser's JavaScript stack, so the warning starts lower.
pub const SPEEDSCOPE_DEPTH_WARNING: u64 = 3_000;

/// What the emitter was asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpeedscopeOptions<'a> {
    /// The value type written as the weight (default: the first weight).
    pub value: Option<&'a str>,
    /// The most bytes the sampled profiles' stacks may take, checked before anything is
    /// written; `None` (the `Default`): no bound. The plugin's default is [`MAX_SIZE`] (option
    /// `max-size`).
    pub max_size: Option<u64>,
}

/// Default [`SpeedscopeOptions::max_size`]: 2 GiB. speedscope cannot open a file of 2 GB or
/// more (the browser's `FileReader` gives it no buffer past that: speedscope issue #372; it
/// reads files past V8's 512 MB string limit since its pull request #385), so a larger one would
/// be written for nothing.
pub const MAX_SIZE: u64 = 1 << 31;

/// [`MAX_SIZE`] as the option's documented default.
pub const MAX_SIZE_TEXT: &str = "2147483648";

#[derive(Serialize)]
struct File<'r, 'p> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared<'p>,
    profiles: Vec<Profile<'r, 'p>>,
    name: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: u32,
    exporter: &'static str,
}

#[derive(Serialize)]
struct Shared<'p> {
    frames: Vec<Frame<'p>>,
}

#[derive(Serialize)]
struct Frame<'p> {
    name: &'p str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'p str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Profile<'r, 'p> {
    Evented(Evented<'r, 'p>),
    Sampled(Sampled<'r, 'p>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Evented<'r, 'p> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'p str,
    unit: &'static str,
    start_value: Num,
    end_value: Num,
    events: Events<'r, 'p>,
}

/// A thread's open and close events, made from its samples while they are written (a trace of
/// 10 M events stored them all first: 40 bytes each, as much memory again as the profile).
struct Events<'r, 'p> {
    p: &'r ProfileRef<'p>,
    nodes: Rc<PathNodes>,
    /// The thread's samples, in time order.
    samples: Vec<u32>,
    /// The `calls` column.
    calls: usize,
    /// The weight column (`None`: each sample weighs 1).
    col: Option<usize>,
    decimals: u32,
    /// Sample times in the weight's clock, when usable (else the weights are laid end to end).
    times: Option<&'p [i64]>,
    /// Where the times start from.
    origin: i128,
}

impl Events<'_, '_> {
    /// Where each sample starts on the profile's axis, in order, with its end.
    fn spans(&self) -> impl Iterator<Item = (usize, i128, i128)> + '_ {
        let mut running: i128 = 0;
        self.samples.iter().map(move |&i| {
            let i = i as usize;
            let start = self.times.map_or(running, |t| t[i] as i128 - self.origin);
            let v = self.col.map_or(1, |c| self.p.sample_values[c][i]);
            let end = start + (v as i128).abs();
            running = end;
            (i, start, end)
        })
    }

    /// The first sample's start, the last one's end, and the deepest sample (how many calls
    /// are open at once, at most): what the profile's header and the depth warning need,
    /// without making the events.
    fn extent(&self) -> (i128, i128, u64) {
        let (mut first, mut end, mut deep) = (None, 0, 0u64);
        for (i, start, e) in self.spans() {
            first.get_or_insert(start);
            end = e;
            let leaf = self.nodes.of_stack[self.p.sample_stack[i] as usize];
            deep = deep.max(u64::from(self.nodes.depth[leaf as usize]));
        }
        (first.unwrap_or(0), end, deep)
    }

    /// Calls `event` with each event in order: a call closes when a sample leaves it, opens when
    /// a sample enters it (or starts a new call of it), and everything closes at a gap.
    fn walk<E>(&self, mut event: impl FnMut(Event) -> Result<(), E>) -> Result<(), E> {
        let (p, nodes) = (self.p, &*self.nodes);
        let num = |v: i128| scaled(v, -(self.decimals as i32));
        // Funcs of the open calls from the root, and their path nodes.
        let mut open: Vec<u32> = Vec::new();
        let mut open_nodes: Vec<u32> = Vec::new();
        // Nodes the sample opens, deepest first.
        let mut fresh: Vec<u32> = Vec::new();
        let mut prev_end: Option<i128> = None;
        // Closes the open calls past the first `keep`, innermost first.
        let close_to = |open: &mut Vec<u32>,
                        keep: usize,
                        at: i128,
                        event: &mut dyn FnMut(Event) -> Result<(), E>| {
            while open.len() > keep {
                let f = open.pop().unwrap_or(NONE);
                event(Event {
                    kind: "C",
                    frame: f,
                    at: num(at),
                })?;
            }
            Ok(())
        };
        for (i, start, end) in self.spans() {
            if let Some(e) = prev_end.filter(|&e| start > e) {
                close_to(&mut open, 0, e, &mut event)?;
                open_nodes.clear();
            }
            // Walk up from the sample's node to the deepest open call on its path: equal
            // nodes at equal depth mean equal paths from the root.
            let leaf = nodes.of_stack[p.sample_stack[i] as usize];
            fresh.clear();
            let mut node = leaf;
            while node != NONE {
                let d = nodes.depth[node as usize] as usize;
                if d <= open_nodes.len() && open_nodes[d - 1] == node {
                    break;
                }
                fresh.push(node);
                node = nodes.parent[node as usize];
            }
            let mut keep = if node == NONE {
                0
            } else {
                nodes.depth[node as usize] as usize
            };
            if p.sample_values[self.calls][i] > 0 && fresh.is_empty() && keep > 0 {
                // A new call of the function already open here.
                keep -= 1;
                fresh.push(leaf);
            }
            close_to(&mut open, keep, start, &mut event)?;
            open_nodes.truncate(keep);
            for &n in fresh.iter().rev() {
                let f = nodes.func[n as usize];
                event(Event {
                    kind: "O",
                    frame: f,
                    at: num(start),
                })?;
                open.push(f);
                open_nodes.push(n);
            }
            prev_end = Some(end);
        }
        close_to(&mut open, 0, prev_end.unwrap_or(0), &mut event)
    }
}

impl Serialize for Events<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        self.walk(|e| seq.serialize_element(&e))?;
        seq.end()
    }
}

#[derive(Serialize)]
struct Event {
    #[serde(rename = "type")]
    kind: &'static str,
    frame: u32,
    at: Num,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Sampled<'r, 'p> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'p str,
    unit: &'static str,
    start_value: Num,
    end_value: Num,
    samples: Stacks<'r, 'p>,
    weights: Vec<Num>,
}

/// Each sample's stack as frame (func) indices, root first, written from the IR's stack table
/// without storing it.
struct Stacks<'r, 'p> {
    p: &'r ProfileRef<'p>,
    stacks: Vec<u32>,
}

impl Serialize for Stacks<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.stacks.len()))?;
        let mut path = Vec::new();
        for &stack in &self.stacks {
            func_path(self.p, stack, &mut path);
            seq.serialize_element(&path)?;
        }
        seq.end()
    }
}

/// The funcs of `stack` from the root (iteratively).
fn func_path(p: &ProfileRef<'_>, stack: u32, path: &mut Vec<u32>) {
    path.clear();
    let mut s = stack;
    while s != NONE {
        path.push(p.stack_func(s));
        s = p.stack_prefix[s as usize];
    }
    path.reverse();
}

/// The bytes of each stack's frame list as a sampled profile writes it: each frame's index and
/// a separator (`[3,14,15]` is 7 + 1).
pub(crate) fn written_stack_len(p: &ProfileRef<'_>) -> Vec<u64> {
    let own = |s: usize| p.stack_func(s as u32).checked_ilog10().unwrap_or(0) as u64 + 2;
    path_sums(p.n_stacks(), |s| p.stack_prefix[s], own)
}

/// The bound on a sampled profile's size: every sample holds its whole stack, so the output grows
/// with the square of the depth.
struct SizeBound {
    max: u64,
    /// `written_stack_len`, made for the first sampled profile.
    len: Vec<u64>,
    /// Each stack's depth, made once, when a stack long enough to be deep is first added.
    depth: Vec<u64>,
    /// Bytes projected so far: each sample's stack, its separator and a one-digit weight.
    bytes: u128,
    samples: usize,
    /// The deepest stack added, when one may be deeper than [`SPEEDSCOPE_DEPTH_WARNING`]
    /// (else 0).
    deep: u64,
}

impl SizeBound {
    /// Adds a profile's samples; an error once over the bound, before anything is written.
    fn add(&mut self, p: &ProfileRef<'_>, stacks: &[u32]) -> Result<(), PluginError> {
        if self.len.is_empty() {
            self.len = written_stack_len(p);
        }
        self.bytes += stacks
            .iter()
            .map(|&s| self.len[s as usize] as u128 + 3)
            .sum::<u128>();
        self.samples += stacks.len();
        // Each frame takes at least two bytes (a digit and a comma): a stack shorter than twice
        // the depth warned about is not that deep, so depths are counted only for a long one.
        let longest = stacks.iter().map(|&s| self.len[s as usize]).max();
        let long = longest.is_some_and(|l| l > 2 * SPEEDSCOPE_DEPTH_WARNING);
        if long || self.bytes > self.max as u128 {
            // Depths in one pass over the stacks, made once (a walk per sample would be
            // quadratic in the depth, a pass per thread quadratic in the threads).
            if self.depth.is_empty() {
                self.depth = path_sums(p.n_stacks(), |s| p.stack_prefix[s], |_| 1);
            }
        }
        let deepest = || stacks.iter().map(|&s| self.depth[s as usize]).max();
        if long {
            self.deep = self.deep.max(deepest().unwrap_or(0));
        }
        if self.bytes <= self.max as u128 {
            return Ok(());
        }
        let deepest = deepest().unwrap_or(0);
        Err(PluginError::unsupported(format!(
            "the speedscope output would take at least {}: {} samples, stacks up to {deepest} \
             frames deep, each sample holding its whole stack; over the {}-byte bound. Shorten \
             the stacks (-T collapse-rec, -T max-depth:N), write a format that does not repeat \
             them (firefox, flamegraph, callgrind), or raise the bound: -O max-size=BYTES (0: none)",
            human_bytes(self.bytes),
            self.samples,
            self.max
        )))
    }
}

/// Call nodes by func path: stacks whose funcs from the root are equal share a node, and a
/// node's ancestors are its path, so one comparison of node ids compares whole paths. Lets the
/// evented emitter find where a sample's path leaves the open calls in time proportional to
/// the calls opened and closed, not to the depth (a million nested calls stay linear).
struct PathNodes {
    /// Node of each IR stack.
    of_stack: Vec<u32>,
    /// Parent node, or `NONE` for a root.
    parent: Vec<u32>,
    /// The node's func.
    func: Vec<u32>,
    /// Number of funcs on the path (a root has 1).
    depth: Vec<u32>,
}

impl PathNodes {
    /// The IR's call nodes (made by parent node and func, numbered in first-seen order), with
    /// their depths.
    fn new(p: &ProfileRef<'_>) -> Self {
        let CallNodes {
            parent,
            func,
            stack_node,
        } = CallNodes::build(p);
        // Parents come before their children.
        let mut depth: Vec<u32> = Vec::with_capacity(parent.len());
        for &up in &parent {
            let d = match up {
                NONE => 1,
                up => depth[up as usize] + 1,
            };
            depth.push(d);
        }
        PathNodes {
            of_stack: stack_node,
            parent,
            func,
            depth,
        }
    }
}

/// speedscope's unit for an IR unit.
fn speedscope_unit(unit: &str) -> &'static str {
    match unit_kind(unit) {
        UnitKind::Time { speedscope, .. } => speedscope,
        UnitKind::Bytes => "bytes",
        UnitKind::Other => "none",
    }
}

/// Writes `p` as a speedscope JSON file.
pub fn emit_speedscope(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: SpeedscopeOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let file = build_file(p, opts, cx)?;
    let mut w = BufWriter::with_capacity(1 << 17, out);
    serde_json::to_writer(&mut w, &file).map_err(|e| {
        if e.is_io() {
            PluginError::from(std::io::Error::from(e))
        } else {
            PluginError::internal(format!("cannot serialize the profile: {e}"))
        }
    })?;
    w.flush()?;
    Ok(())
}

/// The speedscope JSON, pretty-printed (for tests and inspection).
pub fn speedscope_json_pretty(
    p: &ProfileRef<'_>,
    opts: SpeedscopeOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<String, PluginError> {
    let file = build_file(p, opts, cx)?;
    serde_json::to_string_pretty(&file)
        .map_err(|e| PluginError::internal(format!("cannot serialize the profile: {e}")))
}

fn build_file<'r, 'p>(
    p: &'r ProfileRef<'p>,
    opts: SpeedscopeOptions<'_>,
    cx: &mut Context<'_>,
) -> Result<File<'r, 'p>, PluginError> {
    let col = one_value_column(p, opts.value, cx)?;
    let (unit, decimals) = match col {
        Some(c) => (
            speedscope_unit(p.value_type_unit(c)),
            p.value_types[c].decimals,
        ),
        None => ("none", 0),
    };
    let value = |i: usize| col.map_or(1, |c| p.sample_values[c][i]);
    let num = |v: i128| scaled(v, -(decimals as i32));
    let frames = (0..p.n_funcs())
        .map(|f| Frame {
            name: p.func_name_str(f as u32),
            file: (p.func_file[f] != NONE).then(|| p.strings.get(p.func_file[f])),
            line: (p.func_line[f] != NONE).then_some(p.func_line[f]),
        })
        .collect();
    let calls = calls_column(p);
    let evented = p.is_ordered() && calls.is_some();
    // The sample times are usable for events when they are in the weight's own clock.
    let times = p
        .sample_time
        .filter(|_| col.is_some() && col == time_column(p));
    // The rank's spare array (one NONE per stack) is the scratch map of the aggregation.
    let (rank, mut acc) = match p.is_ordered() {
        true => (None, Vec::new()),
        false => {
            let (rank, spare) = stack_rank_and_spare(p);
            (Some(rank), spare)
        }
    };
    let mut dropped = 0usize;
    // Without a bound (max-size=0) its per-stack lengths still tell which stacks may be deep.
    let mut bound = SizeBound {
        max: opts.max_size.unwrap_or(u64::MAX),
        len: Vec::new(),
        depth: Vec::new(),
        bytes: 0,
        samples: 0,
        deep: 0,
    };
    let mut profiles = Vec::new();
    // The path nodes of the whole profile, made once for every thread (per thread, a trace of
    // many runs took their number times its stacks).
    let mut path_nodes: Option<Rc<PathNodes>> = None;
    // Where the events' times start from: the same for every run, so their timelines stay
    // comparable.
    let origin = times.map_or(0, time_origin);
    for (t, samples) in p.samples_by_thread().into_iter().enumerate() {
        let name = thread_name(p, t);
        if let (true, Some(calls)) = (evented, calls) {
            let times = times.filter(|t| {
                samples
                    .windows(2)
                    .all(|w| t[w[0] as usize] <= t[w[1] as usize])
            });
            let nodes = path_nodes.get_or_insert_with(|| Rc::new(PathNodes::new(p)));
            // The events are made while they are written; their extent is known now.
            let events = Events {
                p,
                nodes: Rc::clone(nodes),
                samples,
                calls,
                col,
                decimals,
                times,
                origin,
            };
            let (first, end, deep) = events.extent();
            bound.deep = bound.deep.max(deep);
            profiles.push(Profile::Evented(Evented {
                kind: "evented",
                name,
                unit,
                start_value: num(first),
                end_value: num(end),
                events,
            }));
            continue;
        }
        let rows: Vec<(u32, i64)> = match &rank {
            // Aggregated: per stack (call node), in depth-first order.
            Some(rank) => aggregate_per_stack(p, &samples, col, rank, &mut acc)?,
            // Ordered: every sample, in time order.
            None => samples
                .iter()
                .map(|&i| (p.sample_stack[i as usize], value(i as usize)))
                .collect(),
        };
        let mut stacks = Vec::with_capacity(rows.len());
        let mut weights = Vec::with_capacity(rows.len());
        let mut total: i128 = 0;
        for (stack, v) in rows {
            if v < 0 {
                dropped += 1;
            }
            if v <= 0 {
                continue;
            }
            stacks.push(stack);
            weights.push(num(v as i128));
            total += v as i128;
        }
        bound.add(p, &stacks)?;
        profiles.push(Profile::Sampled(Sampled {
            kind: "sampled",
            name,
            unit,
            start_value: Num::I(0),
            end_value: num(total),
            samples: Stacks { p, stacks },
            weights,
        }));
    }
    if dropped > 0 {
        cx.warn(&format!(
            "speedscope cannot show negative weights: {dropped} samples left out"
        ));
    }
    if bound.deep > SPEEDSCOPE_DEPTH_WARNING {
        cx.warn(&format!(
            "stacks up to {} frames deep: speedscope may fail to open the file (1.25 in \
             Chromium opens 3 800 frames, and shows \"Something went wrong\" at 4 000); cut them \
             with -T max-depth:N or -T collapse-rec, or write firefox or flamegraph",
            bound.deep
        ));
    }
    // speedscope opens on this profile: the first that shows anything (a run with no call, or
    // one that a transform such as focus-func emptied, opened as "No symbols found").
    let active = profiles
        .iter()
        .position(|prof| match prof {
            Profile::Evented(e) => !e.events.samples.is_empty(),
            Profile::Sampled(s) => !s.samples.stacks.is_empty(),
        })
        .unwrap_or(0);
    Ok(File {
        schema: SCHEMA,
        shared: Shared { frames },
        profiles,
        name: product_name(p),
        active_profile_index: active as u32,
        exporter: concat!("profconv ", env!("CARGO_PKG_VERSION")),
    })
}
