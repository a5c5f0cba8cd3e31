//! The profile tables (seed 002's model): strings, funcs, frames, stacks, samples.
//!
//! A [`Profile`] owns its columns; a [`ProfileRef`] borrows them, from a `Profile` or from a
//! plugin's memory across the ABI. Every algorithm reads a `ProfileRef`, so a profile produced by
//! a plugin is never copied just to be read.

use crate::strings::{StrId, StringTable};
use std::fmt;

/// "No value" for an index or line column.
pub const NONE: u32 = u32::MAX;
/// "No address" for the frame address column.
pub const NO_ADDRESS: u64 = u64::MAX;

/// Profile-wide flags (a bit set).
pub mod flags {
    /// Samples are in time order: emitters may draw a timeline (flame chart, stack chart).
    pub const ORDERED: u32 = 1;
}

/// How a value column adds up along the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ValueKind {
    /// A cost (samples, ticks, nanoseconds, bytes): a node's total is its self value plus its
    /// children's totals.
    Weight = 0,
    /// An event count of the node itself (exact calls, unfinished calls): never summed into the
    /// parent. A sample with `calls = 1` on stack S records one entry into S's call node.
    Count = 1,
}

impl ValueKind {
    /// The kind for its ABI code, if known.
    pub fn from_code(code: u32) -> Option<ValueKind> {
        match code {
            0 => Some(ValueKind::Weight),
            1 => Some(ValueKind::Count),
            _ => None,
        }
    }
}

/// One value column's description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueType {
    /// Short name users type (`samples`, `ticks`, `time_ns`, `calls`).
    pub name: StrId,
    /// Unit (`count`, `ticks`, `nanoseconds`, `bytes`).
    pub unit: StrId,
    /// How the column aggregates.
    pub kind: ValueKind,
    /// Fixed-point scale: the stored integer is the value times 10^decimals (folded stacks may
    /// carry fractional counts; integers keep sums exact and overflow detectable).
    pub decimals: u32,
}

/// Errors about a profile's structure or arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IrError {
    /// A table invariant does not hold (a plugin produced an inconsistent profile).
    Invalid(String),
    /// A sum or a rescale does not fit in 64 bits.
    Overflow(String),
    /// A transform would make a profile beyond its bound (memory must not grow without one).
    TooLarge(String),
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IrError::Invalid(m) => write!(f, "invalid profile: {m}"),
            IrError::Overflow(m) => write!(f, "value overflow: {m}"),
            IrError::TooLarge(m) => write!(f, "too large: {m}"),
        }
    }
}

impl std::error::Error for IrError {}

/// Functions: one row per distinct function (name, file, line, resource).
#[derive(Clone, Debug, Default)]
pub struct FuncTable {
    /// Function name.
    pub name: Vec<StrId>,
    /// Source file, or [`NONE`].
    pub file: Vec<StrId>,
    /// First line of the function, or [`NONE`].
    pub line: Vec<u32>,
    /// Module, library or category, or [`NONE`].
    pub resource: Vec<StrId>,
}

/// Frames: one row per distinct place in a function (address or line).
#[derive(Clone, Debug, Default)]
pub struct FrameTable {
    /// The function this frame belongs to.
    pub func: Vec<u32>,
    /// Code address, or [`NO_ADDRESS`].
    pub address: Vec<u64>,
    /// Line executing in this frame, or [`NONE`].
    pub line: Vec<u32>,
}

impl FuncTable {
    /// The rows from `start` on, ids unchanged in their columns.
    pub fn rows_from(&self, start: usize) -> FuncTable {
        // Destructured whole: a new column is a compile error here, not a column left out.
        let FuncTable {
            name,
            file,
            line,
            resource,
        } = self;
        FuncTable {
            name: name[start..].to_vec(),
            file: file[start..].to_vec(),
            line: line[start..].to_vec(),
            resource: resource[start..].to_vec(),
        }
    }

    /// Appends `other`'s rows.
    pub fn append(&mut self, other: &FuncTable) {
        let FuncTable {
            name,
            file,
            line,
            resource,
        } = other;
        self.name.extend_from_slice(name);
        self.file.extend_from_slice(file);
        self.line.extend_from_slice(line);
        self.resource.extend_from_slice(resource);
    }
}

impl FrameTable {
    /// The rows from `start` on, ids unchanged in their columns.
    pub fn rows_from(&self, start: usize) -> FrameTable {
        let FrameTable {
            func,
            address,
            line,
        } = self;
        FrameTable {
            func: func[start..].to_vec(),
            address: address[start..].to_vec(),
            line: line[start..].to_vec(),
        }
    }

    /// Appends `other`'s rows.
    pub fn append(&mut self, other: &FrameTable) {
        let FrameTable {
            func,
            address,
            line,
        } = other;
        self.func.extend_from_slice(func);
        self.address.extend_from_slice(address);
        self.line.extend_from_slice(line);
    }
}

/// Stacks as a prefix tree over frames: `prefix[i] < i` or [`NONE`] for a root.
#[derive(Clone, Debug, Default)]
pub struct StackTable {
    /// Parent stack, or [`NONE`].
    pub prefix: Vec<u32>,
    /// Leaf frame of this stack.
    pub frame: Vec<u32>,
}

/// Samples: a stack, an optional start time, and one value per value type.
#[derive(Clone, Debug, Default)]
pub struct SampleTable {
    /// Stack of each sample.
    pub stack: Vec<u32>,
    /// Start time, when the input had one (in the unit of the clock the parser names in the
    /// `time_unit` metadata; for traces, the first clock column).
    pub time: Option<Vec<i64>>,
    /// Thread of each sample (an index into [`Profile::threads`]), when the profile has threads.
    pub thread: Option<Vec<u32>>,
    /// One column per value type, each `stack.len()` long.
    pub values: Vec<Vec<i64>>,
}

/// An owned profile.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Bit set of [`flags`].
    pub flags: u32,
    /// Every string of the profile.
    pub strings: StringTable,
    /// Functions.
    pub funcs: FuncTable,
    /// Frames.
    pub frames: FrameTable,
    /// Stacks.
    pub stacks: StackTable,
    /// Value columns' descriptions, in column order.
    pub value_types: Vec<ValueType>,
    /// Samples.
    pub samples: SampleTable,
    /// Metadata pairs (key, value), in insertion order.
    pub meta: Vec<(StrId, StrId)>,
    /// Thread names: independent timelines (a kernel run, a process, a thread). Call trees merge
    /// them; emitters that show timelines (flame charts, the Firefox Profiler) keep them apart.
    pub threads: Vec<StrId>,
}

/// Per stack, whether a sample is on it or below it (a stack table's prefixes come before
/// their children, so one backward pass marks every ancestor).
pub fn live_stacks(prefix: &[u32], sample_stack: &[u32]) -> Vec<bool> {
    let mut live = vec![false; prefix.len()];
    for &s in sample_stack {
        live[s as usize] = true;
    }
    for s in (0..prefix.len()).rev() {
        let p = prefix[s];
        if live[s] && p != NONE {
            live[p as usize] = true;
        }
    }
    live
}

impl Profile {
    /// Removes the stacks with no sample on them or below them, keeping the others in their
    /// order (ids shift down); returns how many went. A transform that drops samples (`drop`,
    /// `focus`) or moves them (`collapse-rec`) leaves such stacks behind, and a call tree
    /// would show them as nodes of total 0 (`f;g 2` with `drop:f;g` kept `f`).
    pub fn drop_stacks_without_samples(&mut self) -> usize {
        let n = self.stacks.prefix.len();
        let live = live_stacks(&self.stacks.prefix, &self.samples.stack);
        if live.iter().all(|&l| l) {
            return 0;
        }
        let mut new_id = vec![NONE; n];
        let mut k = 0;
        for s in 0..n {
            if !live[s] {
                continue;
            }
            let p = self.stacks.prefix[s];
            self.stacks.prefix[k] = if p == NONE { NONE } else { new_id[p as usize] };
            self.stacks.frame[k] = self.stacks.frame[s];
            new_id[s] = k as u32;
            k += 1;
        }
        self.stacks.prefix.truncate(k);
        self.stacks.frame.truncate(k);
        for s in &mut self.samples.stack {
            *s = new_id[*s as usize];
        }
        n - k
    }

    /// A borrowed view of every column.
    pub fn view(&self) -> ProfileRef<'_> {
        ProfileRef {
            flags: self.flags,
            strings: StringsRef {
                blob: self.strings.blob(),
                offsets: self.strings.offsets(),
            },
            func_name: &self.funcs.name,
            func_file: &self.funcs.file,
            func_line: &self.funcs.line,
            func_resource: &self.funcs.resource,
            frame_func: &self.frames.func,
            frame_address: &self.frames.address,
            frame_line: &self.frames.line,
            stack_prefix: &self.stacks.prefix,
            stack_frame: &self.stacks.frame,
            value_types: self.value_types.clone(),
            sample_stack: &self.samples.stack,
            sample_time: self.samples.time.as_deref(),
            sample_thread: self.samples.thread.as_deref(),
            thread_name: &self.threads,
            sample_values: self.samples.values.iter().map(|c| c.as_slice()).collect(),
            meta_key: self.meta.iter().map(|m| m.0).collect(),
            meta_value: self.meta.iter().map(|m| m.1).collect(),
        }
    }
}

/// Borrowed strings: a UTF-8 blob and `n + 1` offsets.
#[derive(Clone, Copy, Debug)]
pub struct StringsRef<'a> {
    /// Every string back to back.
    pub blob: &'a str,
    /// Offsets into `blob`, one more than the number of strings.
    pub offsets: &'a [u64],
}

impl<'a> StringsRef<'a> {
    /// Number of strings.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// True when there is no string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// String `id`; the empty string if `id` is out of range or [`NONE`].
    #[inline]
    pub fn get(&self, id: StrId) -> &'a str {
        let i = id as usize;
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => self.blob.get(a as usize..b as usize).unwrap_or(""),
            _ => "",
        }
    }
}

/// A borrowed profile: the same columns as [`Profile`], as slices.
#[derive(Clone, Debug)]
pub struct ProfileRef<'a> {
    /// Bit set of [`flags`].
    pub flags: u32,
    /// Strings.
    pub strings: StringsRef<'a>,
    /// [`FuncTable::name`].
    pub func_name: &'a [u32],
    /// [`FuncTable::file`].
    pub func_file: &'a [u32],
    /// [`FuncTable::line`].
    pub func_line: &'a [u32],
    /// [`FuncTable::resource`].
    pub func_resource: &'a [u32],
    /// [`FrameTable::func`].
    pub frame_func: &'a [u32],
    /// [`FrameTable::address`].
    pub frame_address: &'a [u64],
    /// [`FrameTable::line`].
    pub frame_line: &'a [u32],
    /// [`StackTable::prefix`].
    pub stack_prefix: &'a [u32],
    /// [`StackTable::frame`].
    pub stack_frame: &'a [u32],
    /// Value columns' descriptions.
    pub value_types: Vec<ValueType>,
    /// [`SampleTable::stack`].
    pub sample_stack: &'a [u32],
    /// [`SampleTable::time`].
    pub sample_time: Option<&'a [i64]>,
    /// [`SampleTable::thread`].
    pub sample_thread: Option<&'a [u32]>,
    /// [`SampleTable::values`].
    pub sample_values: Vec<&'a [i64]>,
    /// [`Profile::threads`].
    pub thread_name: &'a [u32],
    /// Metadata keys.
    pub meta_key: Vec<u32>,
    /// Metadata values.
    pub meta_value: Vec<u32>,
}

impl<'a> ProfileRef<'a> {
    /// Number of funcs.
    pub fn n_funcs(&self) -> usize {
        self.func_name.len()
    }
    /// Number of frames.
    pub fn n_frames(&self) -> usize {
        self.frame_func.len()
    }
    /// Number of stacks.
    pub fn n_stacks(&self) -> usize {
        self.stack_prefix.len()
    }
    /// Number of samples.
    pub fn n_samples(&self) -> usize {
        self.sample_stack.len()
    }
    /// The sum of value column `col` if no value is negative and the sum fits in an `i64`, else
    /// `None`. When it is `Some`, every total of a stack or call node (a sum of some of those
    /// values) fits too, and is at most that sum: an emitter can then skip checking totals one
    /// by one, or keep them in a narrower type.
    pub fn nonnegative_sum(&self, col: usize) -> Option<i64> {
        self.sample_values[col].iter().try_fold(0i64, |sum, &v| {
            (v >= 0).then(|| sum.checked_add(v)).flatten()
        })
    }
    /// Number of threads (0: the profile does not distinguish any).
    pub fn n_threads(&self) -> usize {
        self.thread_name.len()
    }
    /// The thread of sample `i` (0 when the profile has no threads).
    pub fn sample_thread_of(&self, i: usize) -> u32 {
        self.sample_thread.map_or(0, |t| t[i])
    }
    /// Sample indices of each thread, in sample order: one list per thread, or one list with
    /// every sample when the profile has at most one thread. One pass over the samples, so an
    /// emitter writing thread after thread does not scan every sample per thread.
    pub fn samples_by_thread(&self) -> Vec<Vec<u32>> {
        let n = self.n_samples();
        if self.n_threads() <= 1 {
            return vec![(0..n as u32).collect()];
        }
        let mut lists = vec![Vec::new(); self.n_threads()];
        for i in 0..n {
            let t = self.sample_thread_of(i) as usize;
            // `validate` guarantees the index; a bad one goes to the first thread, not a panic.
            let t = if t < lists.len() { t } else { 0 };
            lists[t].push(i as u32);
        }
        lists
    }

    /// The name of a func.
    #[inline]
    pub fn func_name_str(&self, func: u32) -> &'a str {
        self.strings.get(self.func_name[func as usize])
    }

    /// The func of a stack's leaf frame.
    #[inline]
    pub fn stack_func(&self, stack: u32) -> u32 {
        self.frame_func[self.stack_frame[stack as usize] as usize]
    }

    /// True when samples are in time order.
    pub fn is_ordered(&self) -> bool {
        self.flags & flags::ORDERED != 0
    }

    /// Name of value type `i`.
    pub fn value_type_name(&self, i: usize) -> &'a str {
        self.strings.get(self.value_types[i].name)
    }

    /// Unit of value type `i`.
    pub fn value_type_unit(&self, i: usize) -> &'a str {
        self.strings.get(self.value_types[i].unit)
    }

    /// Index of the value type named `name`.
    pub fn value_type_index(&self, name: &str) -> Option<usize> {
        (0..self.value_types.len()).find(|&i| self.value_type_name(i) == name)
    }

    /// The first [`ValueKind::Weight`] column: what a viewer shows by default.
    pub fn default_weight(&self) -> Option<usize> {
        self.value_types
            .iter()
            .position(|v| v.kind == ValueKind::Weight)
    }

    /// The value of metadata `key`, if present.
    pub fn meta(&self, key: &str) -> Option<&'a str> {
        self.meta_key
            .iter()
            .zip(&self.meta_value)
            .find(|(k, _)| self.strings.get(**k) == key)
            .map(|(_, v)| self.strings.get(*v))
    }

    /// Copies every column into an owned [`Profile`].
    pub fn to_owned_profile(&self) -> Profile {
        Profile {
            flags: self.flags,
            strings: StringTable::from_parts(self.strings.blob, self.strings.offsets),
            funcs: FuncTable {
                name: self.func_name.to_vec(),
                file: self.func_file.to_vec(),
                line: self.func_line.to_vec(),
                resource: self.func_resource.to_vec(),
            },
            frames: FrameTable {
                func: self.frame_func.to_vec(),
                address: self.frame_address.to_vec(),
                line: self.frame_line.to_vec(),
            },
            stacks: StackTable {
                prefix: self.stack_prefix.to_vec(),
                frame: self.stack_frame.to_vec(),
            },
            value_types: self.value_types.clone(),
            samples: SampleTable {
                stack: self.sample_stack.to_vec(),
                time: self.sample_time.map(|t| t.to_vec()),
                thread: self.sample_thread.map(|t| t.to_vec()),
                values: self.sample_values.iter().map(|c| c.to_vec()).collect(),
            },
            meta: self
                .meta_key
                .iter()
                .copied()
                .zip(self.meta_value.iter().copied())
                .collect(),
            threads: self.thread_name.to_vec(),
        }
    }

    /// Checks every invariant a reader relies on: equal column lengths, indices in range,
    /// prefixes before their children, string offsets on character boundaries.
    ///
    /// The host runs this on every profile a plugin returns, so a buggy plugin gives an error
    /// instead of a panic or a wrong picture. Cost: one pass over each column.
    pub fn validate(&self) -> Result<(), IrError> {
        let bad = |m: String| Err(IrError::Invalid(m));
        let offs = self.strings.offsets;
        if offs.is_empty() || offs[0] != 0 {
            return bad("string offsets must start with 0".into());
        }
        let mut prev = 0u64;
        for (i, &o) in offs.iter().enumerate() {
            if o < prev || o > self.strings.blob.len() as u64 {
                return bad(format!("string offset {i} out of order or past the blob"));
            }
            if !self.strings.blob.is_char_boundary(o as usize) {
                return bad(format!("string offset {i} splits a UTF-8 character"));
            }
            prev = o;
        }
        let n_str = self.strings.len() as u64;
        let str_ok = |s: u32, opt: bool| (s as u64) < n_str || (opt && s == NONE);
        self.check_column_lengths()?;
        let nf = self.n_funcs();
        for i in 0..nf {
            if !str_ok(self.func_name[i], false)
                || !str_ok(self.func_file[i], true)
                || !str_ok(self.func_resource[i], true)
            {
                return bad(format!("func {i} names a string that does not exist"));
            }
        }
        let nfr = self.n_frames();
        if let Some(i) = self.frame_func.iter().position(|&f| f as usize >= nf) {
            return bad(format!("frame {i} names a func that does not exist"));
        }
        let ns = self.n_stacks();
        let stack = |i: usize| {
            let p = self.stack_prefix[i];
            if p != NONE && p as usize >= i {
                return bad(format!(
                    "stack {i} has prefix {p}, which does not come before it"
                ));
            }
            if self.stack_frame[i] as usize >= nfr {
                return bad(format!("stack {i} names a frame that does not exist"));
            }
            Ok(())
        };
        // Every stack, twice a conversion (the host checks a parser's profile, the emitter what
        // it is lent): blocks are checked without a branch per stack, and a block that fails is
        // checked again stack by stack for the first error.
        const BLOCK: usize = 1 << 12;
        match (u32::try_from(ns), u32::try_from(nfr)) {
            (Ok(_), Ok(nfr)) => {
                let blocks = self
                    .stack_prefix
                    .chunks(BLOCK)
                    .zip(self.stack_frame.chunks(BLOCK));
                for (b, (prefix, frame)) in blocks.enumerate() {
                    let base = (b * BLOCK) as u32;
                    let mut wrong = false;
                    for ((&p, &f), i) in prefix.iter().zip(frame).zip(base..) {
                        // `p >= i` unless `p` is NONE, which wraps to 0.
                        wrong |= (p.wrapping_add(1) > i) | (f >= nfr);
                    }
                    if wrong {
                        (b * BLOCK..(b * BLOCK + prefix.len())).try_for_each(stack)?;
                    }
                }
            }
            _ => (0..ns).try_for_each(stack)?,
        }
        if let Some(i) = self.sample_stack.iter().position(|&s| s as usize >= ns) {
            return bad(format!("sample {i} names a stack that does not exist"));
        }
        if let Some(t) = self.sample_thread {
            if let Some(i) = t.iter().position(|&t| t as usize >= self.thread_name.len()) {
                return bad(format!("sample {i} names a thread that does not exist"));
            }
        }
        if let Some(i) = self.thread_name.iter().position(|&s| !str_ok(s, false)) {
            return bad(format!("thread {i} names a string that does not exist"));
        }
        for (i, v) in self.value_types.iter().enumerate() {
            if !str_ok(v.name, false) || !str_ok(v.unit, false) {
                return bad(format!("value type {i} names a string that does not exist"));
            }
            if v.decimals > 18 {
                return bad(format!(
                    "value type {i} has {} decimals (at most 18)",
                    v.decimals
                ));
            }
        }
        if self.meta_key.len() != self.meta_value.len()
            || self
                .meta_key
                .iter()
                .chain(&self.meta_value)
                .any(|&s| !str_ok(s, false))
        {
            return bad("metadata names strings that do not exist".into());
        }
        Ok(())
    }

    /// Checks that each table's columns have one length (and that there is one value column
    /// per value type): the part of [`ProfileRef::validate`] that costs nothing. A plugin runs
    /// it before lending its profile to the host, whose view of a table takes its length from
    /// one column: a shorter one would be read past its end.
    pub fn check_column_lengths(&self) -> Result<(), IrError> {
        let bad = |m: &str| Err(IrError::Invalid(m.to_string()));
        let nf = self.n_funcs();
        if [
            self.func_file.len(),
            self.func_line.len(),
            self.func_resource.len(),
        ]
        .iter()
        .any(|&l| l != nf)
        {
            return bad("func columns differ in length");
        }
        let nfr = self.n_frames();
        if self.frame_address.len() != nfr || self.frame_line.len() != nfr {
            return bad("frame columns differ in length");
        }
        if self.stack_frame.len() != self.n_stacks() {
            return bad("stack columns differ in length");
        }
        let n = self.n_samples();
        if self.sample_time.is_some_and(|t| t.len() != n) {
            return bad("sample time column has the wrong length");
        }
        if self.sample_thread.is_some_and(|t| t.len() != n) {
            return bad("sample thread column has the wrong length");
        }
        if self.sample_values.len() != self.value_types.len() {
            return bad("one value column per value type is required");
        }
        if self.sample_values.iter().any(|c| c.len() != n) {
            return bad("a sample value column has the wrong length");
        }
        if self.meta_key.len() != self.meta_value.len() {
            return bad("metadata keys and values differ in number");
        }
        Ok(())
    }
}

/// `n` zeros, written: for a table that is then added to at scattered places (a value per
/// stack or call node summed from the samples). `vec![0; n]` takes fresh zero pages from the
/// system untouched, and adding to a cell of a page never touched reads it first, which maps
/// the shared zero page, then writes it, which faults again for a page of its own: two page
/// faults a page instead of one (8.4 k more for the stack totals of the flame graph of a 1 GB
/// folded file: about 2 % of that conversion's CPU).
pub fn zeros<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    // The optimiser turns an allocation followed by zeroing all of it into `calloc` (fresh
    // pages, untouched: the very thing to avoid). Letting the pointer escape between the two
    // keeps the zeroing a write.
    std::hint::black_box(v.as_mut_ptr());
    v.resize(n, T::default());
    v
}

/// For `n` nodes numbered parents first (a stack table, a call tree: `parent(i) < i` or
/// [`NONE`]), the sum of `own` along each node's path from its root, the node included: with
/// `own` 1, each node's depth counting its root as 1; with a name's length, the length of its
/// path's text. One pass, no recursion.
pub fn path_sums(n: usize, parent: impl Fn(usize) -> u32, own: impl Fn(usize) -> u64) -> Vec<u64> {
    let mut sum = vec![0u64; n];
    for i in 0..n {
        sum[i] = match parent(i) {
            NONE => own(i),
            q => sum[q as usize] + own(i),
        };
    }
    sum
}

/// Formats a fixed-point value: `12345` with 2 decimals is `123.45`.
pub fn format_fixed(value: i64, decimals: u32) -> String {
    let mut out = String::new();
    write_fixed(&mut out, value, decimals);
    out
}

/// Appends a fixed-point value to `out` (see [`format_fixed`]).
pub fn write_fixed(out: &mut String, value: i64, decimals: u32) {
    use std::fmt::Write;
    if decimals == 0 {
        // Emitters write one number per line of output: no formatting machinery.
        out.push_str(itoa::Buffer::new().format(value));
        return;
    }
    let scale = 10u128.pow(decimals);
    let mag = value.unsigned_abs() as u128;
    let sign = if value < 0 { "-" } else { "" };
    let _ = write!(
        out,
        "{sign}{}.{:0width$}",
        mag / scale,
        mag % scale,
        width = decimals as usize
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stack table is checked a block of stacks at a time: the first bad stack is the one
    /// named, in the first block or a later one, at a block's edges or inside it, for a prefix
    /// that does not come before its stack (itself, later, or a stack that does not exist) and
    /// for a frame that does not exist.
    #[test]
    fn validate_names_the_first_bad_stack_whichever_block_it_is_in() {
        let n = 3 * 4096 + 17;
        let good = || {
            let mut b = crate::ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            for i in 0..3 {
                let f = b.func(&format!("f{i}"));
                b.frame(f);
            }
            let mut p = b.finish();
            p.stacks.prefix = (0..n)
                .map(|i| if i % 5 == 0 { NONE } else { i as u32 - 1 })
                .collect();
            p.stacks.frame = (0..n).map(|i| (i % 3) as u32).collect();
            p
        };
        assert!(good().view().validate().is_ok());
        let message = |p: &Profile| match p.view().validate() {
            Err(IrError::Invalid(m)) => m,
            other => panic!("{other:?}"),
        };
        for at in [0, 1, 4095, 4096, 4097, 2 * 4096 + 7, n - 1] {
            for prefix in [at as u32, at as u32 + 1, u32::MAX - 1] {
                let mut p = good();
                p.stacks.prefix[at] = prefix;
                // A later stack is bad too: the first is named.
                if at < n - 1 {
                    p.stacks.prefix[n - 1] = (n - 1) as u32;
                }
                assert_eq!(
                    message(&p),
                    format!("stack {at} has prefix {prefix}, which does not come before it")
                );
            }
            let mut p = good();
            p.stacks.frame[at] = 3;
            p.stacks.frame[n - 1] = u32::MAX;
            assert_eq!(
                message(&p),
                format!("stack {at} names a frame that does not exist")
            );
            // Both wrong in one stack: the prefix is named, as it is checked first.
            p.stacks.prefix[at] = at as u32;
            assert_eq!(
                message(&p),
                format!("stack {at} has prefix {at}, which does not come before it")
            );
        }
    }

    /// `zeros` gives zeros whose pages are already the process's own (resident), so that
    /// adding to a cell later faults once, not twice: the resident size grows by the table's
    /// size when it is made (a `vec![0; n]` would leave it unchanged until written).
    #[cfg(target_os = "linux")]
    #[test]
    fn zeros_are_written_into_pages_of_their_own() {
        let resident = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
            let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
            kib * 1024
        };
        const N: usize = 64 << 20;
        let before = resident();
        let z: Vec<u64> = zeros(N / 8);
        let grew = resident().saturating_sub(before);
        assert_eq!(z.len(), N / 8);
        assert!(z.iter().all(|&v| v == 0));
        // Other tests run at the same time: allow for some of them freeing memory.
        assert!(
            grew >= (N as u64) * 3 / 4,
            "resident size grew by {grew} bytes only"
        );
    }

    /// The sum when every value is at least zero and it fits; `None` for a negative value or
    /// an overflow.
    #[test]
    fn nonnegative_sum_is_the_sum_only_when_every_total_fits() {
        use crate::ProfileBuilder;
        let sum_of = |values: &[i64]| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            for (i, &v) in values.iter().enumerate() {
                b.add_stack(&[format!("f{i}")], &[v]).unwrap();
            }
            b.finish().view().nonnegative_sum(0)
        };
        assert_eq!(sum_of(&[]), Some(0));
        assert_eq!(sum_of(&[1, 0, 41]), Some(42));
        assert_eq!(sum_of(&[5, -1, 9]), None);
        assert_eq!(sum_of(&[i64::MAX - 1, 1]), Some(i64::MAX));
        assert_eq!(sum_of(&[i64::MAX, 1]), None);
    }

    /// Two roots, a chain under one, siblings: depths from 1, and sums of each node's own value.
    #[test]
    fn path_sums_add_along_each_path() {
        let parent = [NONE, 0, 1, 1, NONE, 4];
        let depth = path_sums(parent.len(), |i| parent[i], |_| 1);
        assert_eq!(depth, [1, 2, 3, 3, 1, 2]);
        let own = [5, 1, 10, 100, 7, 3];
        assert_eq!(
            path_sums(parent.len(), |i| parent[i], |i| own[i]),
            [5, 6, 16, 106, 7, 10]
        );
        assert!(path_sums(0, |_| NONE, |_| 1).is_empty());
    }

    #[test]
    fn fixed_point_formatting() {
        assert_eq!(format_fixed(12345, 2), "123.45");
        assert_eq!(format_fixed(5, 3), "0.005");
        assert_eq!(format_fixed(-5, 1), "-0.5");
        assert_eq!(format_fixed(42, 0), "42");
        assert_eq!(format_fixed(i64::MIN, 0), i64::MIN.to_string());
    }
}
