//! The call graph a callgrind file describes, as read: functions, self costs per position, call
//! edges with call counts and inclusive costs. [`crate::build_profile`] turns it into a tree.

use profconv_plugin::ir::NONE;
use std::collections::HashMap;

/// Costs: one value per event column per row. Rows are stored `pitch` values apart, `stride`
/// of them used; a later part of the file that adds events widens every row, the pitch growing
/// geometrically (so many `events:` lines each adding one event copy the table only a
/// logarithmic number of times).
#[derive(Clone, Debug, Default)]
pub struct Costs {
    /// Values from one row to the next.
    pitch: usize,
    /// Columns used.
    stride: usize,
    data: Vec<i64>,
}

impl Costs {
    /// Number of columns.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.pitch).unwrap_or(0)
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[i64] {
        &self.data[i * self.pitch..i * self.pitch + self.stride]
    }

    /// Values allocated (rows × stride).
    pub(crate) fn cells(&self) -> usize {
        self.data.len()
    }

    /// Values a new row allocates.
    pub(crate) fn row_cells(&self) -> usize {
        self.pitch
    }

    pub(crate) fn push_zero(&mut self) -> usize {
        let i = self.len();
        self.data.resize(self.data.len() + self.pitch, 0);
        i
    }

    /// Adds `v` to column `col` of row `i`; false on overflow.
    pub(crate) fn add(&mut self, i: usize, col: usize, v: i64) -> bool {
        let cell = &mut self.data[i * self.pitch + col];
        match cell.checked_add(v) {
            Some(s) => {
                *cell = s;
                true
            }
            None => false,
        }
    }

    /// The pitch `widen(width, cap)` would give.
    fn pitch_for(&self, width: usize, cap: usize) -> usize {
        if width <= self.pitch {
            self.pitch
        } else if self.data.is_empty() {
            width
        } else {
            width.max(self.pitch.saturating_mul(2).min(cap))
        }
    }

    /// Values allocated after `widen(width, cap)`.
    pub(crate) fn cells_after_widen(&self, width: usize, cap: usize) -> usize {
        self.len().saturating_mul(self.pitch_for(width, cap))
    }

    /// Widens every row to `width` columns (new columns are 0); the pitch at least doubles
    /// (up to `cap`) when it grows.
    pub(crate) fn widen(&mut self, width: usize, cap: usize) {
        if width <= self.stride {
            return;
        }
        let pitch = self.pitch_for(width, cap);
        if pitch != self.pitch {
            let rows = self.len();
            let mut data = vec![0i64; rows * pitch];
            for r in 0..rows {
                let from = &self.data[r * self.pitch..(r + 1) * self.pitch];
                data[r * pitch..r * pitch + self.pitch].copy_from_slice(from);
            }
            self.data = data;
            self.pitch = pitch;
        }
        self.stride = width;
    }

    /// True when column `col` of every row times `factor` fits.
    pub(crate) fn column_scales(&self, col: usize, factor: i64) -> bool {
        (0..self.len()).all(|r| {
            self.data[r * self.pitch + col]
                .checked_mul(factor)
                .is_some()
        })
    }

    /// Multiplies column `col` of every row by `factor` (checked by [`Self::column_scales`]).
    pub(crate) fn scale_column(&mut self, col: usize, factor: i64) {
        for r in 0..self.len() {
            let i = r * self.pitch + col;
            self.data[i] = self.data[i].saturating_mul(factor);
        }
    }

    /// Keeps the columns whose `keep` is true, in their order.
    pub(crate) fn keep_columns(&mut self, keep: &[bool]) {
        let cols: Vec<usize> = (0..self.stride).filter(|&c| keep[c]).collect();
        let rows = self.len();
        let mut data = Vec::with_capacity(rows * cols.len());
        for r in 0..rows {
            let row = &self.data[r * self.pitch..r * self.pitch + self.stride];
            data.extend(cols.iter().map(|&c| row[c]));
        }
        self.data = data;
        self.pitch = cols.len();
        self.stride = cols.len();
    }
}

/// An event column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Short name (`Ir`).
    pub name: String,
    /// Long name from an `event:` line, if any.
    pub long_name: Option<String>,
}

/// A function: (object, file, name), each an index into [`Graph::strings`] ([`NONE`]: never
/// given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Func {
    /// Object (`ob=`/`cob=`).
    pub object: u32,
    /// Source file (`fl=`, or `fi=`/`fe=` for inlined code, `cfi=`/`cfl=` for a callee).
    pub file: u32,
    /// Name (`fn=`/`cfn=`).
    pub name: u32,
    /// True when some `fn=` line named this function (its own block).
    pub has_block: bool,
    /// For code of another file inlined into a function (`fi=`/`fe=`): that function
    /// ([`NONE`] otherwise).
    pub inlined_into: u32,
    /// The target line of the first `calls=` into it (its first line; 0: unknown).
    pub line: u32,
}

/// Self cost of a function at a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SelfCost {
    /// The function.
    pub func: u32,
    /// Instruction address (with `positions: instr ...`), else `None`.
    pub addr: Option<u64>,
    /// Line (0: no line information).
    pub line: u32,
}

/// A call edge: calls from a function at a call site into a callee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Edge {
    /// Calling function.
    pub caller: u32,
    /// Call site address (with instruction positions), else `None`.
    pub addr: Option<u64>,
    /// Call site line (0: no line information).
    pub line: u32,
    /// Called function.
    pub callee: u32,
    /// Sum of the `calls=` counts.
    pub calls: u64,
}

/// The positions the call tree's frames keep (`-O positions`): a flame graph draws none, and
/// each position of a node's function is a stack of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Positions {
    /// The file's: instruction addresses and lines (`--dump-instr=yes`), or lines.
    #[default]
    Instr,
    /// Lines, no addresses: a function's costs at the instructions of one line are one item.
    Line,
    /// None: one self cost per function, one call edge per caller and callee.
    Function,
}

impl Positions {
    /// The option's values, as `-O positions=` takes them.
    pub const NAMES: [(&'static str, Positions); 3] = [
        ("instr", Positions::Instr),
        ("line", Positions::Line),
        ("function", Positions::Function),
    ];

    /// What is kept of a position.
    fn keep(self, addr: Option<u64>, line: u32) -> (Option<u64>, u32) {
        match self {
            Positions::Instr => (addr, line),
            Positions::Line => (None, line),
            Positions::Function => (None, 0),
        }
    }
}

/// Rows (`items` with their `costs`) merged by the key `keyed` makes of each: one row per key,
/// in first-seen order, the key itself, to which `join` adds each row's fields the key leaves
/// out (call counts), and the costs added; `overflow` names a row whose sum leaves 64 bits.
fn merge_rows<T: Copy + Eq + std::hash::Hash>(
    items: &[T],
    costs: &Costs,
    keyed: impl Fn(&T) -> T,
    join: impl Fn(&mut T, &T),
    overflow: impl Fn(&T) -> String,
) -> Result<(Vec<T>, Costs), String> {
    let mut index: HashMap<T, usize> = HashMap::new();
    let mut merged: Vec<T> = Vec::new();
    let mut merged_costs = Costs {
        pitch: costs.pitch,
        stride: costs.stride,
        data: Vec::new(),
    };
    for (i, item) in items.iter().enumerate() {
        let key = keyed(item);
        let row = match index.get(&key) {
            Some(&row) => row,
            None => {
                index.insert(key, merged.len());
                merged.push(key);
                merged_costs.push_zero()
            }
        };
        join(&mut merged[row], item);
        for (k, &v) in costs.row(i).iter().enumerate() {
            if !merged_costs.add(row, k, v) {
                return Err(overflow(item));
            }
        }
    }
    Ok((merged, merged_costs))
}

/// Everything a callgrind file said, aggregated: memory grows with distinct functions,
/// positions and edges, not with the file's size.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Every distinct name (objects, files, functions), in first-seen order.
    pub strings: Vec<String>,
    /// Event columns (the union of every part's `events:` line, by name).
    pub events: Vec<Event>,
    /// Functions, in first-seen order.
    pub funcs: Vec<Func>,
    /// Self-cost positions, in first-seen order; their costs are the rows of `self_costs`.
    pub selfs: Vec<SelfCost>,
    /// Costs of `selfs`.
    pub self_costs: Costs,
    /// Call edges, in first-seen order; their inclusive costs are the rows of `edge_costs`.
    pub edges: Vec<Edge>,
    /// Inclusive costs of `edges`.
    pub edge_costs: Costs,
    /// Sum of the `summary:` lines, per event column.
    pub summary: Option<Vec<i64>>,
    /// Sum of the `totals:` lines, per event column.
    pub totals: Option<Vec<i64>>,
    /// Header facts worth keeping (`creator`, `cmd`, `positions`).
    pub meta: Vec<(String, String)>,
    /// Number of parts read.
    pub parts: u32,
    /// The synthetic caller profconv's writer adds (its `desc: Root caller:` line), whose calls
    /// were left out: not a function of the profile.
    pub root_caller: Option<u32>,
}

impl Graph {
    /// A string by index (`""` for [`NONE`]).
    pub fn str(&self, id: u32) -> &str {
        if id == NONE {
            return "";
        }
        self.strings.get(id as usize).map_or("", |s| s.as_str())
    }

    /// `file:name` as callgrind_annotate names a function (`???` for no file).
    pub fn annotate_name(&self, f: u32) -> String {
        let func = &self.funcs[f as usize];
        let file = if func.file == NONE {
            "???"
        } else {
            self.str(func.file)
        };
        format!("{file}:{}", self.str(func.name))
    }

    /// Leaves out the call edges `caller` makes (and their costs), keeping the others in order.
    pub(crate) fn drop_calls_of(&mut self, caller: u32) {
        let mut costs = Costs {
            pitch: self.edge_costs.pitch,
            stride: self.edge_costs.stride,
            data: Vec::new(),
        };
        let mut kept = Vec::with_capacity(self.edges.len());
        for (i, e) in self.edges.iter().enumerate() {
            if e.caller != caller {
                let at = self.edge_costs.pitch * i;
                costs
                    .data
                    .extend_from_slice(&self.edge_costs.data[at..at + self.edge_costs.pitch]);
                kept.push(*e);
            }
        }
        self.edges = kept;
        self.edge_costs = costs;
    }

    /// Whether some self cost or call edge has a position that `p` drops.
    pub fn has_positions_beyond(&self, p: Positions) -> bool {
        let beyond = |addr, line| p.keep(addr, line) != (addr, line);
        self.selfs.iter().any(|s| beyond(s.addr, s.line))
            || self.edges.iter().any(|e| beyond(e.addr, e.line))
    }

    /// Keeps only the positions `p` keeps: a function's self costs at positions that become
    /// alike are one, as are a caller's call edges into one callee (calls and costs added), in
    /// first-seen order. Errs (naming the function) when a sum leaves 64 bits.
    pub fn merge_positions(&mut self, p: Positions) -> Result<(), String> {
        if !self.has_positions_beyond(p) {
            return Ok(());
        }
        let (selfs, self_costs) = merge_rows(
            &self.selfs,
            &self.self_costs,
            |s| {
                let (addr, line) = p.keep(s.addr, s.line);
                SelfCost { addr, line, ..*s }
            },
            |_, _| {},
            |s| {
                format!(
                    "the self costs of `{}` at one position do not fit in 64 bits",
                    self.annotate_name(s.func)
                )
            },
        )?;
        let (edges, edge_costs) = merge_rows(
            &self.edges,
            &self.edge_costs,
            |e| {
                let (addr, line) = p.keep(e.addr, e.line);
                Edge {
                    addr,
                    line,
                    calls: 0,
                    ..*e
                }
            },
            // The calls of the file (but self-calls) add up to at most 2^63-1.
            |into, e| into.calls = into.calls.saturating_add(e.calls),
            |e| {
                format!(
                    "the inclusive costs of the calls from `{}` to `{}` do not fit in 64 bits",
                    self.annotate_name(e.caller),
                    self.annotate_name(e.callee)
                )
            },
        )?;
        (self.selfs, self.self_costs) = (selfs, self_costs);
        (self.edges, self.edge_costs) = (edges, edge_costs);
        Ok(())
    }

    /// Keeps the event columns whose `keep` is true (one per event), in their order.
    pub(crate) fn keep_events(&mut self, keep: &[bool]) {
        let mut k = keep.iter();
        self.events.retain(|_| *k.next().unwrap_or(&true));
        self.self_costs.keep_columns(keep);
        self.edge_costs.keep_columns(keep);
        for sums in [&mut self.summary, &mut self.totals].into_iter().flatten() {
            let mut k = keep.iter();
            sums.retain(|_| *k.next().unwrap_or(&true));
        }
    }

    /// Xdebug (PHP) names its two events by their units and writes no `event:` long names:
    /// `Time_(10ns)` in units of 10 ns (Xdebug 3.1 on; `Time_(µs)` in microseconds in Xdebug
    /// 3.0), `Memory_(bytes)` in bytes. Read as counts they had no unit (speedscope shows such
    /// a file as a time and a size). The time becomes `Time` in nanoseconds (its costs times 10,
    /// or 1000, so that folded counts stay whole numbers, which inferno needs, and the two
    /// versions' profiles compare), or, should that overflow or another event be named `Time`,
    /// keeps its costs as written: microseconds with two decimals, or microseconds; the memory
    /// keeps its name, in bytes.
    pub(crate) fn read_xdebug_units(&mut self) {
        let taken = |g: &Self, name: &str| g.events.iter().any(|e| e.name == name);
        for k in 0..self.events.len() {
            if self.events[k].long_name.is_some() {
                continue;
            }
            match self.events[k].name.as_str() {
                "Memory_(bytes)" => self.events[k].long_name = Some("Memory (bytes)".into()),
                // Xdebug 3.0 writes a MICRO SIGN (U+00B5); U+03BC as well, as NFKC gives.
                name @ ("Time_(10ns)" | "Time_(\u{b5}s)" | "Time_(\u{3bc}s)") => {
                    let (factor, as_written) = match name {
                        "Time_(10ns)" => (10, "Time (microseconds/10^2)"),
                        _ => (1000, "Time (microseconds)"),
                    };
                    let sums_fit = [&self.summary, &self.totals]
                        .into_iter()
                        .flatten()
                        .all(|s| s.get(k).is_none_or(|v| v.checked_mul(factor).is_some()));
                    if !taken(self, "Time")
                        && sums_fit
                        && self.self_costs.column_scales(k, factor)
                        && self.edge_costs.column_scales(k, factor)
                        && self.column_total_scales(k, factor)
                    {
                        self.self_costs.scale_column(k, factor);
                        self.edge_costs.scale_column(k, factor);
                        for sums in [&mut self.summary, &mut self.totals].into_iter().flatten() {
                            if let Some(v) = sums.get_mut(k) {
                                *v *= factor;
                            }
                        }
                        self.events[k].name = "Time".into();
                        self.events[k].long_name = Some("Time (nanoseconds)".into());
                    } else {
                        self.events[k].long_name = Some(as_written.into());
                    }
                }
                // `go tool pprof -callgrind` names its event `TYPE(UNIT)` (`cpu(ms)`,
                // `delay(ns)`, `alloc_space(B)`); a unit of one time or bytes keeps that unit.
                name => {
                    let unit = name
                        .strip_suffix(')')
                        .and_then(|s| s.rsplit_once('('))
                        .map(|(_, unit)| unit)
                        .filter(|u| matches!(*u, "ns" | "us" | "ms" | "s" | "B"));
                    if let Some(unit) = unit {
                        self.events[k].long_name = Some(format!("{name} ({unit})"));
                    }
                }
            }
        }
    }

    /// True when the self costs of column `col` still add up to a 64-bit value once multiplied
    /// by `factor`. Each cost fitting is not enough: two of 5e17 fit times 10, their total does
    /// not, and the profile was refused.
    fn column_total_scales(&self, col: usize, factor: i64) -> bool {
        let total: i128 = (0..self.self_costs.len())
            .map(|i| i128::from(self.self_costs.row(i)[col]))
            .sum();
        total * i128::from(factor) <= i128::from(i64::MAX)
    }

    /// Sum of the self costs, per event column.
    pub fn self_total(&self) -> Vec<i64> {
        let mut t = vec![0i64; self.events.len()];
        for i in 0..self.selfs.len() {
            for (k, v) in self.self_costs.row(i).iter().enumerate() {
                t[k] = t[k].saturating_add(*v);
            }
        }
        t
    }
}
