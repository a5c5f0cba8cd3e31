//! What both readers (pvmtrace events, the debugger's own files) share: display names and
//! their frames, kernel runs as IR threads, unfinished/trapped marks, diagnostics, and the
//! final touches on the profile (columns, thread names, metadata, dropping runs).

use profconv_plugin::ir::{
    NONE, Profile, ProfileBuilder, StrId, ValueKind, ValueType, flags as ir_flags,
};
use profconv_plugin::{Context, PluginError};
use std::collections::BTreeMap;

/// Identifier kinds of the Octez profiler (`function_call` in `profiling.ml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Internal s`: `%interpreter(s)`.
    Internal,
    /// `CallDirect i` with no name: `function[i]`.
    Direct,
    /// `CallRef t`: `function_ref[t]`.
    Ref,
    /// `Function name`.
    Function,
}

impl Kind {
    /// The func's `resource`: the kind of the first call seen with this display name.
    pub(crate) fn resource(self) -> &'static str {
        match self {
            Kind::Internal => "internal",
            Kind::Direct => "direct",
            Kind::Ref => "ref",
            Kind::Function => "function",
        }
    }

    /// The kind guessed from a display name (debugger files carry no kinds).
    pub(crate) fn of_display(name: &str) -> Kind {
        let bracketed = |prefix: &str| {
            name.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(']'))
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
        };
        if name.starts_with("%interpreter(") && name.ends_with(')') {
            Kind::Internal
        } else if bracketed("function[") {
            Kind::Direct
        } else if bracketed("function_ref[") {
            Kind::Ref
        } else {
            Kind::Function
        }
    }
}

/// Indices below this are cached in a vector; above, in a map (an index is input-controlled,
/// so it never sizes an allocation beyond this).
const DENSE: u32 = 1 << 20;

/// A u32 → frame cache: dense for small keys, a map for the rest.
#[derive(Default)]
pub(crate) struct IndexCache {
    dense: Vec<u32>,
    sparse: BTreeMap<u32, u32>,
}

impl IndexCache {
    #[inline(always)]
    pub(crate) fn get(&self, i: u32) -> Option<u32> {
        if i < DENSE {
            self.dense.get(i as usize).copied().filter(|&f| f != NONE)
        } else {
            self.sparse.get(&i).copied()
        }
    }

    pub(crate) fn set(&mut self, i: u32, frame: u32) {
        if i < DENSE {
            if i as usize >= self.dense.len() {
                self.dense.resize(i as usize + 1, NONE);
            }
            self.dense[i as usize] = frame;
        } else {
            self.sparse.insert(i, frame);
        }
    }
}

/// One frame per display name (identity by display name, spec B.4); the func keeps the kind
/// of the first call seen with that name as its `resource`.
#[derive(Default)]
pub(crate) struct Frames {
    by_str: Vec<u32>,
}

impl Frames {
    #[inline]
    pub(crate) fn named(&mut self, b: &mut ProfileBuilder, name: &str, kind: Kind) -> u32 {
        let id = b.intern(name) as usize;
        if let Some(&fr) = self.by_str.get(id) {
            if fr != NONE {
                return fr;
            }
        }
        let func = b.func_with(name, None, None, Some(kind.resource()));
        let fr = b.frame(func);
        if id >= self.by_str.len() {
            self.by_str.resize(id + 1, NONE);
        }
        self.by_str[id] = fr;
        fr
    }
}

/// A name from input bytes: UTF-8 as is; otherwise each byte is one Latin-1 character, which
/// is how the debugger writes the characters U+0080..U+00FF of a name (spec A.2).
pub(crate) fn latin1_or_utf8(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.into(), false),
        Err(_) => (bytes.iter().map(|&c| c as char).collect(), true),
    }
}

pub(crate) use profconv_plugin::quote_input as quote;

/// Warning kinds: each is shown for its first few occurrences, then counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Warn {
    TickBackwards,
    TimeBackwards,
    DuplicateName,
    EndMismatch,
    OpenAtRunEnd,
    Truncated,
    TrapNothingOpen,
    PartialTime,
    Section,
    NotUtf8,
    MaxDepth,
    Dropped,
}

const N_WARN: usize = 12;
/// Every kind, by its index in [`Diag`]'s counts.
const WARNS: [Warn; N_WARN] = [
    Warn::TickBackwards,
    Warn::TimeBackwards,
    Warn::DuplicateName,
    Warn::EndMismatch,
    Warn::OpenAtRunEnd,
    Warn::Truncated,
    Warn::TrapNothingOpen,
    Warn::PartialTime,
    Warn::Section,
    Warn::NotUtf8,
    Warn::MaxDepth,
    Warn::Dropped,
];
const _: () = {
    let mut k = 0;
    while k < N_WARN {
        assert!(
            WARNS[k] as usize == k,
            "WARNS lists the kinds in their order"
        );
        k += 1;
    }
};
/// Occurrences of one kind shown before the rest are only counted.
const SHOWN: u64 = 10;

impl Warn {
    /// What the warnings of this kind are about, for the count of those not shown.
    fn about(self) -> &'static str {
        match self {
            Warn::TickBackwards => "ticks going backwards",
            Warn::TimeBackwards => "timestamps going backwards",
            Warn::DuplicateName => "indices named twice",
            Warn::EndMismatch => "ends of a call that is not the innermost open one",
            Warn::OpenAtRunEnd => "calls still open at the end of a kernel run",
            Warn::Truncated => "calls still open at the end of the trace",
            Warn::TrapNothingOpen => "traps with no open call",
            Warn::PartialTime => "events without a timestamp",
            Warn::Section => "sections (SB, SE) that do not pair",
            Warn::NotUtf8 => "names that are not UTF-8",
            Warn::MaxDepth => "stacks at the debugger's depth limit",
            Warn::Dropped => "runs left out",
        }
    }

    /// Whether `-O strict` turns this warning into an error (the event-stream checks of the
    /// spec; not the notes about the debugger's own file layout or about compat mode).
    fn escalates(self) -> bool {
        !matches!(self, Warn::MaxDepth | Warn::Dropped | Warn::NotUtf8)
    }
}

/// Where a warning is: 1-based line (0: none), input offset, 1-based column.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct At {
    pub line: u64,
    pub offset: u64,
    pub col: u64,
}

impl At {
    pub(crate) fn line(line: u64, offset: u64) -> At {
        At {
            line,
            offset,
            col: 1,
        }
    }
}

/// Warnings (or, in strict mode, errors), always with the line.
pub(crate) struct Diag {
    pub strict: bool,
    counts: [u64; N_WARN],
}

impl Diag {
    pub(crate) fn new(strict: bool) -> Self {
        Diag {
            strict,
            counts: [0; N_WARN],
        }
    }

    /// A warning at `at` (line 0: none). `msg` gives what is wrong and, for the warning, what
    /// the reader does about it (left out of the error that `-O strict` makes of it).
    pub(crate) fn warn(
        &mut self,
        cx: &mut Context<'_>,
        kind: Warn,
        at: At,
        msg: impl FnOnce() -> (String, String),
    ) -> Result<(), PluginError> {
        let line = at.line;
        if self.strict && kind.escalates() {
            let (fact, _) = msg();
            let e = PluginError::invalid_input(format!("{fact} (an error with -O strict)"));
            return Err(if line > 0 {
                e.at_offset(at.offset).at_line(line, at.col)
            } else {
                e
            });
        }
        let n = &mut self.counts[kind as usize];
        *n += 1;
        if *n <= SHOWN {
            let (fact, then) = msg();
            let text = if then.is_empty() {
                fact
            } else {
                format!("{fact}; {then}")
            };
            if line > 0 {
                cx.warn(&format!("line {line}: {text}"));
            } else {
                cx.warn(&text);
            }
        }
        Ok(())
    }

    /// One line per kind whose later occurrences were not shown, naming the kind (the last
    /// warning shown may be of another).
    pub(crate) fn summarize(&self, cx: &mut Context<'_>) {
        for (k, &n) in self.counts.iter().enumerate() {
            if n > SHOWN {
                cx.warn(&format!(
                    "{} more warnings about {} were not shown",
                    n - SHOWN,
                    WARNS[k].about()
                ));
            }
        }
    }
}

/// Why a call was closed by the reader rather than by an `E`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Closed by `R`, `T` or the end of the input.
    Unfinished = 0,
    /// Closed by `X`.
    Trapped = 1,
}

/// One kernel run (IR thread).
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// `reboot`, `yield`, ... (the text of its `R`).
    pub reason: Option<String>,
    /// Calls started in the run.
    pub calls: u64,
    /// Why the debugger would call it inconsistent (trap, calls closed by the reader).
    pub inconsistent: Option<String>,
}

/// Value columns that the readers fill, by index.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cols {
    pub ticks: usize,
    pub calls: Option<usize>,
    pub time: Option<usize>,
}

/// The profile under construction, shared by both readers.
pub(crate) struct Model {
    pub b: ProfileBuilder,
    pub frames: Frames,
    pub ordered: bool,
    pub runs: Vec<Run>,
    /// Runs that have their IR thread (threads are created in run order; thread = run index).
    threads: usize,
    /// Ordered mode: (sample row, mark).
    marks_ordered: Vec<(u32, Mark)>,
    /// Aggregated mode: (thread, stack) → counts (bounded by the rows themselves).
    marks_agg: BTreeMap<(u32, u32), [i64; 2]>,
    pub meta: Vec<(String, String)>,
}

impl Model {
    pub(crate) fn new(ordered: bool) -> Self {
        Model {
            b: ProfileBuilder::new(),
            frames: Frames::default(),
            ordered,
            runs: vec![Run::default()],
            threads: 0,
            marks_ordered: Vec::new(),
            marks_agg: BTreeMap::new(),
            meta: Vec::new(),
        }
    }

    /// Index of the current run.
    pub(crate) fn run(&self) -> usize {
        self.runs.len() - 1
    }

    /// Makes sure the current run has its thread (and every earlier run too), current. A
    /// single run needs no thread column (its samples are all thread 0): the column is created
    /// when a second run starts, so single-run traces save a column and a lookup per event.
    #[inline]
    pub(crate) fn ensure_thread(&mut self) {
        let want = self.runs.len();
        if want > 1 {
            while self.threads < want {
                self.threads += 1;
                self.b.add_thread(&format!("run {}", self.threads));
            }
        }
    }

    /// Records that the call on `stack` was closed by the reader. In ordered mode this is a
    /// zero-valued sample at `time` (so the mark sits on that very call); aggregated, a count
    /// on the (run, stack) row.
    pub(crate) fn mark(&mut self, stack: u32, time: i64, zeros: &[i64], mark: Mark) {
        if self.ordered {
            let row = self.b.profile().samples.stack.len() as u32;
            self.b.push_sample(stack, Some(time), zeros);
            self.marks_ordered.push((row, mark));
        } else {
            let thread = self.run() as u32;
            let e = self.marks_agg.entry((thread, stack)).or_insert([0, 0]);
            e[mark as usize] += 1;
        }
    }

    /// Builds the profile: drops the time column if `drop_time`, adds the `unfinished` and
    /// `trapped` columns when some call has them, names the threads, adds metadata, and with
    /// `compat` leaves out the inconsistent runs.
    pub(crate) fn finish(
        mut self,
        cols: Option<Cols>,
        drop_time: bool,
        compat: bool,
        diag: &mut Diag,
        cx: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        if self.ordered {
            self.b.set_flags(ir_flags::ORDERED);
            self.meta.push(("time_unit".into(), "ticks".into()));
        }
        self.ensure_thread();
        let names: Vec<StrId> = self
            .runs
            .iter()
            .enumerate()
            .map(|(k, r)| match &r.reason {
                Some(reason) => self.b.intern(&format!("run {} ({reason})", k + 1)),
                None => self.b.intern(&format!("run {}", k + 1)),
            })
            .collect();
        let inconsistent: Vec<String> = self
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.inconsistent.is_some())
            .map(|(k, _)| (k + 1).to_string())
            .collect();
        if !inconsistent.is_empty() {
            let key = if compat {
                "dropped_runs"
            } else {
                "inconsistent_runs"
            };
            self.meta.push((key.into(), inconsistent.join(",")));
        }
        let any_marks = !self.marks_ordered.is_empty() || !self.marks_agg.is_empty();
        let mark_types = any_marks.then(|| {
            let count = self.b.intern("count");
            [self.b.intern("unfinished"), self.b.intern("trapped")].map(|name| ValueType {
                name,
                unit: count,
                kind: ValueKind::Count,
                decimals: 0,
            })
        });
        for (k, v) in &self.meta {
            self.b.add_meta(k, v);
        }
        let mut p = self.b.finish();
        p.threads = names;
        if let (Some(c), true) = (cols, drop_time) {
            if let Some(t) = c.time {
                p.value_types.remove(t);
                p.samples.values.remove(t);
            }
        }
        if let Some(types) = mark_types {
            let n = p.samples.stack.len();
            let mut cols = [vec![0i64; n], vec![0i64; n]];
            for &(row, m) in &self.marks_ordered {
                cols[m as usize][row as usize] += 1;
            }
            if !self.marks_agg.is_empty() {
                for i in 0..n {
                    let thread = p.samples.thread.as_ref().map_or(0, |t| t[i]);
                    if let Some(c) = self.marks_agg.get(&(thread, p.samples.stack[i])) {
                        cols[0][i] = c[0];
                        cols[1][i] = c[1];
                    }
                }
            }
            for (t, c) in types.into_iter().zip(cols) {
                p.value_types.push(t);
                p.samples.values.push(c);
            }
        }
        if compat && !inconsistent.is_empty() {
            let keep: Vec<bool> = self.runs.iter().map(|r| r.inconsistent.is_none()).collect();
            for (k, r) in self.runs.iter().enumerate() {
                if let Some(why) = &r.inconsistent {
                    diag.warn(cx, Warn::Dropped, At::default(), || {
                        (
                            format!("run {} left out (debugger-compat): {why}", k + 1),
                            "the debugger reports it as inconsistent and does not write it".into(),
                        )
                    })?;
                }
            }
            p = drop_threads(p, &keep);
        }
        Ok(p)
    }
}

/// The profile without the samples of the threads not in `keep`, and without the stacks only
/// they used (so no empty call node is left behind). Kept threads keep their names. Stacks are
/// made as the kept samples first use them (a path root first), so the order in which call
/// nodes are first seen is that of the kept runs alone, as if the others had not been read.
pub(crate) fn drop_threads(p: Profile, keep: &[bool]) -> Profile {
    let view = p.view();
    let mut b = ProfileBuilder::with_tables_of(&view);
    b.start_thread_column();
    let thread_of = |i: usize| view.sample_thread.map_or(0, |t| t[i]) as usize;
    let kept = |i: usize| keep.get(thread_of(i)).copied().unwrap_or(true);
    let mut map = vec![NONE; view.n_stacks()];
    // The stacks of a path not made yet, leaf first.
    let mut path: Vec<u32> = Vec::new();
    let mut new_thread = Vec::with_capacity(keep.len());
    let mut names = Vec::new();
    for (t, &name) in view.thread_name.iter().enumerate() {
        if keep.get(t).copied().unwrap_or(true) {
            new_thread.push(names.len() as u32);
            names.push(name);
        } else {
            new_thread.push(NONE);
        }
    }
    let mut row = vec![0i64; view.value_types.len()];
    for i in 0..view.n_samples() {
        if !kept(i) {
            continue;
        }
        if let Some(&t) = new_thread.get(thread_of(i)) {
            b.set_thread(t);
        }
        for (c, col) in view.sample_values.iter().enumerate() {
            row[c] = col[i];
        }
        let stack = view.sample_stack[i];
        if map[stack as usize] == NONE {
            let mut up = stack;
            while up != NONE && map[up as usize] == NONE {
                path.push(up);
                up = view.stack_prefix[up as usize];
            }
            let mut made = if up == NONE { NONE } else { map[up as usize] };
            while let Some(s) = path.pop() {
                made = b.stack(made, view.stack_frame[s as usize]);
                map[s as usize] = made;
            }
        }
        let time = view.sample_time.map(|t| t[i]);
        b.push_sample(map[stack as usize], time, &row);
    }
    let mut out = b.finish();
    out.threads = names;
    out
}
