//! Building a [`Profile`]: interning, deduplicated funcs/frames/stacks, and samples.
//!
//! Two ways in:
//! * stacks of names with weights ([`ProfileBuilder::add_stack`], folded-style, aggregated per
//!   stack so memory grows with distinct stacks, not input lines);
//! * enter/exit events with clocks ([`TraceBuilder`], seed 000's algorithm), which keeps the time
//!   order for flame charts or aggregates, as asked.
//!
//! `trace.rs` holds the trace builder; `mod.rs` the tables and their deduplication.

use crate::children::ChildIndex;
use crate::profile::{
    FrameTable, FuncTable, IrError, NO_ADDRESS, NONE, Profile, ProfileRef, ValueKind, ValueType,
};
use crate::strings::StrId;
use crate::strings::StringTable;
use foldhash::fast::FixedState;
use hashbrown::HashMap;

mod absorb;
pub use absorb::PieceMaps;
mod bulk;
mod paths;
mod trace;

pub use bulk::BulkBuilder;
pub use paths::PathStart;
pub use trace::TraceBuilder;

type FastMap<K, V> = HashMap<K, V, FixedState>;

fn fast_map<K, V>() -> FastMap<K, V> {
    HashMap::with_hasher(FixedState::with_seed(0x5354_4143_4b53_0001))
}

/// Builds a [`Profile`] row by row, deduplicating funcs, frames and stacks.
pub struct ProfileBuilder {
    profile: Profile,
    /// Name-only funcs by name (the common case: folded stacks, traces).
    func_of_name: Vec<u32>,
    /// Funcs with a file, line or resource, by their full key.
    func_by_key: FastMap<(StrId, StrId, u32, StrId), u32>,
    /// The address-less, line-less frame of each func.
    plain_frame_of_func: Vec<u32>,
    /// Frames with an address or line, by their full key.
    frame_by_key: FastMap<(u32, u64, u32), u32>,
    /// The stack table's index: the stack of each (prefix, frame).
    trie: ChildIndex,
    /// Sample row of each stack when samples are aggregated (for the current thread; rows of
    /// other threads are found in `sample_of_thread_stack`).
    sample_of_stack: Vec<u32>,
    sample_of_thread_stack: FastMap<(u32, u32), u32>,
    /// Thread given to new samples, once the profile has threads.
    current_thread: u32,
    /// Strings, funcs and frames already handed over by [`Self::take_piece`].
    piece_base: [usize; 3],
}

impl Default for ProfileBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ProfileBuilder {
    /// An empty builder with no value types.
    pub fn new() -> Self {
        ProfileBuilder {
            profile: Profile::default(),
            func_of_name: Vec::new(),
            func_by_key: fast_map(),
            plain_frame_of_func: Vec::new(),
            frame_by_key: fast_map(),
            trie: ChildIndex::default(),
            sample_of_stack: Vec::new(),
            sample_of_thread_stack: fast_map(),
            current_thread: 0,
            piece_base: [0; 3],
        }
    }

    /// A builder holding `p`'s strings, funcs, frames, value types, metadata and flags with
    /// their ids unchanged, and no stacks or samples: transforms rebuild those.
    pub fn with_tables_of(p: &ProfileRef<'_>) -> Self {
        let mut b = ProfileBuilder::new();
        let prof = &mut b.profile;
        prof.flags = p.flags;
        prof.strings = StringTable::from_parts(p.strings.blob, p.strings.offsets);
        prof.funcs = FuncTable {
            name: p.func_name.to_vec(),
            file: p.func_file.to_vec(),
            line: p.func_line.to_vec(),
            resource: p.func_resource.to_vec(),
        };
        prof.frames = FrameTable {
            func: p.frame_func.to_vec(),
            address: p.frame_address.to_vec(),
            line: p.frame_line.to_vec(),
        };
        prof.value_types = p.value_types.clone();
        prof.threads = p.thread_name.to_vec();
        prof.samples.values = vec![Vec::new(); p.value_types.len()];
        prof.meta = p
            .meta_key
            .iter()
            .copied()
            .zip(p.meta_value.iter().copied())
            .collect();
        b
    }

    /// Adds a value column; returns its index.
    pub fn add_value_type(&mut self, name: &str, unit: &str, kind: ValueKind) -> usize {
        let name = self.intern(name);
        let unit = self.intern(unit);
        self.profile.value_types.push(ValueType {
            name,
            unit,
            kind,
            decimals: 0,
        });
        let n = self.profile.samples.stack.len();
        self.profile.samples.values.push(vec![0; n]);
        self.profile.value_types.len() - 1
    }

    /// Number of value columns.
    pub fn n_value_types(&self) -> usize {
        self.profile.value_types.len()
    }

    /// The fixed-point decimals of column `col`.
    pub fn decimals(&self, col: usize) -> u32 {
        self.profile.value_types[col].decimals
    }

    /// Raises column `col` to `decimals` fractional digits, multiplying what it holds already.
    pub fn rescale(&mut self, col: usize, decimals: u32) -> Result<(), IrError> {
        let old = self.profile.value_types[col].decimals;
        if decimals <= old {
            return Ok(());
        }
        let factor = 10i64
            .checked_pow(decimals - old)
            .ok_or_else(|| IrError::Overflow(format!("{decimals} decimals")))?;
        // Check every value before changing any: a failed rescale leaves the column as it was
        // (a parser that skips the offending line goes on with consistent sums).
        let column = &mut self.profile.samples.values[col];
        if let Some(v) = column.iter().find(|v| v.checked_mul(factor).is_none()) {
            return Err(IrError::Overflow(format!(
                "rescaling {v} to {decimals} decimals"
            )));
        }
        for v in column.iter_mut() {
            *v *= factor;
        }
        self.profile.value_types[col].decimals = decimals;
        Ok(())
    }

    /// Adds a thread (a kernel run, a process) and makes it current; returns its index. Samples
    /// added before the first thread belong to it.
    pub fn add_thread(&mut self, name: &str) -> u32 {
        let id = self.intern(name);
        self.profile.threads.push(id);
        let t = (self.profile.threads.len() - 1) as u32;
        if self.profile.samples.thread.is_none() {
            self.profile.samples.thread = Some(vec![0; self.profile.samples.stack.len()]);
        }
        self.current_thread = t;
        t
    }

    /// Gives samples a thread column (threads already known, as after `with_tables_of`).
    pub fn start_thread_column(&mut self) {
        if self.profile.samples.thread.is_none() {
            self.profile.samples.thread = Some(vec![0; self.profile.samples.stack.len()]);
        }
    }

    /// Makes `thread` current for the samples that follow.
    pub fn set_thread(&mut self, thread: u32) {
        debug_assert!((thread as usize) < self.profile.threads.len().max(1));
        self.current_thread = thread;
    }

    /// Sets profile flags (see [`crate::flags`]).
    pub fn set_flags(&mut self, flags: u32) {
        self.profile.flags |= flags;
    }

    /// Adds a metadata pair.
    pub fn add_meta(&mut self, key: &str, value: &str) {
        let k = self.intern(key);
        let v = self.intern(value);
        self.profile.meta.push((k, v));
    }

    /// Interns a string.
    #[inline]
    pub fn intern(&mut self, s: &str) -> StrId {
        self.profile.strings.intern(s)
    }

    /// The func named `name` with no file, line or resource.
    #[inline]
    pub fn func(&mut self, name: &str) -> u32 {
        let id = self.intern(name) as usize;
        if id >= self.func_of_name.len() {
            self.func_of_name.resize(id + 1, NONE);
        }
        let f = self.func_of_name[id];
        if f != NONE {
            return f;
        }
        let f = self.push_func(id as StrId, NONE, NONE, NONE);
        self.func_of_name[id] = f;
        f
    }

    /// The func with this name, file, first line and resource (each optional).
    pub fn func_with(
        &mut self,
        name: &str,
        file: Option<&str>,
        line: Option<u32>,
        resource: Option<&str>,
    ) -> u32 {
        if file.is_none() && line.is_none() && resource.is_none() {
            return self.func(name);
        }
        let key = (
            self.intern(name),
            file.map_or(NONE, |f| self.intern(f)),
            line.unwrap_or(NONE),
            resource.map_or(NONE, |r| self.intern(r)),
        );
        if let Some(&f) = self.func_by_key.get(&key) {
            return f;
        }
        let f = self.push_func(key.0, key.1, key.2, key.3);
        self.func_by_key.insert(key, f);
        f
    }

    fn push_func(&mut self, name: StrId, file: StrId, line: u32, resource: StrId) -> u32 {
        let t = &mut self.profile.funcs;
        t.name.push(name);
        t.file.push(file);
        t.line.push(line);
        t.resource.push(resource);
        (t.name.len() - 1) as u32
    }

    /// The frame of `func` with no address or line.
    #[inline]
    pub fn frame(&mut self, func: u32) -> u32 {
        let i = func as usize;
        if i >= self.plain_frame_of_func.len() {
            self.plain_frame_of_func.resize(i + 1, NONE);
        }
        let fr = self.plain_frame_of_func[i];
        if fr != NONE {
            return fr;
        }
        let fr = self.push_frame(func, NO_ADDRESS, NONE);
        self.plain_frame_of_func[i] = fr;
        fr
    }

    /// The frame of `func` at an address and/or line.
    pub fn frame_at(&mut self, func: u32, address: Option<u64>, line: Option<u32>) -> u32 {
        if address.is_none() && line.is_none() {
            return self.frame(func);
        }
        let key = (func, address.unwrap_or(NO_ADDRESS), line.unwrap_or(NONE));
        if let Some(&fr) = self.frame_by_key.get(&key) {
            return fr;
        }
        let fr = self.push_frame(key.0, key.1, key.2);
        self.frame_by_key.insert(key, fr);
        fr
    }

    fn push_frame(&mut self, func: u32, address: u64, line: u32) -> u32 {
        let t = &mut self.profile.frames;
        t.func.push(func);
        t.address.push(address);
        t.line.push(line);
        (t.func.len() - 1) as u32
    }

    /// The stack whose prefix is `prefix` ([`NONE`] for a root) and leaf is `frame`.
    #[inline]
    pub fn stack(&mut self, prefix: u32, frame: u32) -> u32 {
        let stacks = &mut self.profile.stacks;
        self.trie.get_or_make(prefix, frame, || {
            stacks.prefix.push(prefix);
            stacks.frame.push(frame);
            (stacks.prefix.len() - 1) as u32
        })
    }

    /// The stacks `leaf;frames[0]`, `leaf;frames[0];frames[1]` … written to `out` (as long as
    /// `frames`), each made by [`stack`](Self::stack) in turn; returns the last (`leaf` if
    /// `frames` is empty). When `leaf` is the last stack made and has no child yet (a line's
    /// stacks after its first new one), none of them can exist: they are made with no lookup.
    pub fn stacks_below(&mut self, leaf: u32, frames: &[u32], out: &mut [u32]) -> u32 {
        debug_assert_eq!(out.len(), frames.len());
        let n = self.profile.stacks.prefix.len();
        if frames.is_empty()
            || leaf == NONE
            || leaf as usize + 1 != n
            || !self.trie.is_childless(leaf)
        {
            let mut s = leaf;
            for (o, &frame) in out.iter_mut().zip(frames) {
                s = self.stack(s, frame);
                *o = s;
            }
            return s;
        }
        let first = n as u32;
        let stacks = &mut self.profile.stacks;
        stacks.prefix.reserve(frames.len());
        stacks.prefix.push(leaf);
        stacks
            .prefix
            .extend(first..first + (frames.len() - 1) as u32);
        stacks.frame.extend_from_slice(frames);
        self.trie.push_chain(leaf, frames, first);
        for (o, id) in out.iter_mut().zip(first..) {
            *o = id;
        }
        first + (frames.len() - 1) as u32
    }

    /// The stack `prefix` + `frame` if it exists (made by [`stack`](Self::stack)).
    #[inline]
    pub fn find_stack(&self, prefix: u32, frame: u32) -> Option<u32> {
        self.trie.get(prefix, frame)
    }

    /// The stack of `names`, root first (each a name-only func). Empty `names` gives [`NONE`].
    pub fn stack_of_names<S: AsRef<str>>(&mut self, names: &[S]) -> u32 {
        let mut stack = NONE;
        for n in names {
            let f = self.func(n.as_ref());
            let fr = self.frame(f);
            stack = self.stack(stack, fr);
        }
        stack
    }

    /// Appends one sample row (time-ordered input). `values` has one entry per value type.
    pub fn push_sample(&mut self, stack: u32, time: Option<i64>, values: &[i64]) {
        debug_assert_eq!(values.len(), self.profile.value_types.len());
        let s = &mut self.profile.samples;
        if let Some(t) = time {
            let n = s.stack.len();
            s.time.get_or_insert_with(|| vec![0; n]).push(t);
        } else if let Some(col) = &mut s.time {
            col.push(col.last().copied().unwrap_or(0));
        }
        s.stack.push(stack);
        if let Some(col) = &mut s.thread {
            col.push(self.current_thread);
        }
        for (col, &v) in s.values.iter_mut().zip(values) {
            col.push(v);
        }
    }

    /// Starts loading where [`Self::add_to_stack`] finds the sample row of `stack` (a hint:
    /// nothing is read, nothing changes).
    #[inline]
    pub fn prefetch_sample_of(&self, stack: u32) {
        prefetch_index::prefetch_index(&self.sample_of_stack, stack as usize);
    }

    /// Adds `values` to the aggregated sample of `stack` (one row per distinct stack, in
    /// first-seen order). Sums are checked: an overflow is an error, never a wrap.
    #[inline]
    pub fn add_to_stack(&mut self, stack: u32, values: &[i64]) -> Result<(), IrError> {
        let i = stack as usize;
        if i >= self.sample_of_stack.len() {
            self.sample_of_stack.resize(i + 1, NONE);
        }
        let mut row = self.sample_of_stack[i];
        if let (Some(threads), true) = (&self.profile.samples.thread, row != NONE) {
            if threads[row as usize] != self.current_thread {
                // This stack has a row in another thread: rows per (thread, stack).
                row = self
                    .sample_of_thread_stack
                    .get(&(self.current_thread, stack))
                    .copied()
                    .unwrap_or(NONE);
                if row == NONE {
                    let new = self.profile.samples.stack.len() as u32;
                    self.sample_of_thread_stack
                        .insert((self.current_thread, stack), new);
                    self.push_sample(stack, None, values);
                    return Ok(());
                }
            }
        }
        if row == NONE {
            self.sample_of_stack[i] = self.profile.samples.stack.len() as u32;
            self.push_sample(stack, None, values);
            return Ok(());
        }
        for (col, &v) in self.profile.samples.values.iter_mut().zip(values) {
            let cell = &mut col[row as usize];
            *cell = cell
                .checked_add(v)
                .ok_or_else(|| IrError::Overflow(format!("{cell} + {v}")))?;
        }
        Ok(())
    }

    /// Adds a weight to the stack of `names` (aggregated); the convenient path for tests.
    pub fn add_stack<S: AsRef<str>>(&mut self, names: &[S], values: &[i64]) -> Result<(), IrError> {
        let stack = self.stack_of_names(names);
        if stack == NONE {
            return Err(IrError::Invalid("a sample needs at least one frame".into()));
        }
        self.add_to_stack(stack, values)
    }

    /// Room for `additional` more stacks (a hint from a reader that knows its input's size;
    /// nothing is allocated for stacks that never come beyond this reservation).
    pub fn reserve_stacks(&mut self, additional: usize) {
        self.profile.stacks.prefix.reserve(additional);
        self.profile.stacks.frame.reserve(additional);
        self.trie.reserve(additional);
    }

    /// Room for `additional` more sample rows in every sample column.
    pub fn reserve_samples(&mut self, additional: usize) {
        let s = &mut self.profile.samples;
        s.stack.reserve(additional);
        if let Some(t) = &mut s.time {
            t.reserve(additional);
        }
        if let Some(t) = &mut s.thread {
            t.reserve(additional);
        }
        for col in &mut s.values {
            col.reserve(additional);
        }
    }

    /// Read access to what was built so far.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The finished profile.
    pub fn finish(self) -> Profile {
        self.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `stacks_below` makes the stacks `stack` makes one at a time, with the same ids, whether
    /// it takes its no-lookup path (below the newest, childless stack) or not (below a root,
    /// an older stack, a stack with a child, or stacks that exist); lookups find them after.
    #[test]
    fn stacks_below_makes_what_stack_makes_one_at_a_time() {
        let fr: Vec<u32> = (0..6).collect();
        // (start: a stack made by the previous step's path, by its index in it), frames
        let steps: &[(Option<usize>, &[u32])] = &[
            (None, &[0, 1, 2, 3]),
            (Some(3), &[4, 5]),
            (Some(1), &[3, 4]),
            (Some(1), &[3, 4, 5]),
            (None, &[0, 1, 2]),
            (None, &[]),
            (Some(0), &[5]),
        ];
        let mut one = ProfileBuilder::new();
        let mut bulk = ProfileBuilder::new();
        for b in [&mut one, &mut bulk] {
            for name in ["a", "b", "c", "d", "e", "f"] {
                let f = b.func(name);
                b.frame(f);
            }
        }
        let (mut prev_one, mut prev_bulk): (Vec<u32>, Vec<u32>) = (vec![], vec![]);
        for &(start, frames) in steps {
            let leaf_one = start.map_or(NONE, |i| prev_one[i]);
            let leaf_bulk = start.map_or(NONE, |i| prev_bulk[i]);
            let mut path_one = vec![];
            let mut s = leaf_one;
            for &f in frames {
                s = one.stack(s, fr[f as usize]);
                path_one.push(s);
            }
            let mut path_bulk = vec![NONE; frames.len()];
            let last = bulk.stacks_below(leaf_bulk, frames, &mut path_bulk);
            assert_eq!(path_bulk, path_one);
            assert_eq!(last, path_one.last().copied().unwrap_or(leaf_bulk));
            if !frames.is_empty() {
                (prev_one, prev_bulk) = (path_one, path_bulk);
            }
        }
        assert_eq!(bulk.profile().stacks.prefix, one.profile().stacks.prefix);
        assert_eq!(bulk.profile().stacks.frame, one.profile().stacks.frame);
        let n = one.profile().stacks.prefix.len() as u32;
        for s in 0..n {
            let (pre, f) = (
                one.profile().stacks.prefix[s as usize],
                one.profile().stacks.frame[s as usize],
            );
            assert_eq!(bulk.find_stack(pre, f), Some(s), "stack {s}");
            assert_eq!(bulk.stack(pre, f), s, "stack {s} is not made again");
        }
        assert_eq!(bulk.profile().stacks.prefix.len() as u32, n);
    }

    #[test]
    fn stacks_are_a_deduplicated_prefix_tree() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a", "b", "c"], &[1]).unwrap();
        b.add_stack(&["a", "b", "d"], &[2]).unwrap();
        b.add_stack(&["a", "b", "c"], &[3]).unwrap();
        let p = b.finish();
        assert_eq!(p.stacks.prefix, vec![NONE, 0, 1, 1]);
        assert_eq!(p.samples.stack, vec![2, 3]);
        assert_eq!(p.samples.values[0], vec![4, 2]);
        assert_eq!(p.funcs.name.len(), 4);
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[i64::MAX]).unwrap();
        assert!(matches!(
            b.add_stack(&["a"], &[1]),
            Err(IrError::Overflow(_))
        ));
        assert!(matches!(b.rescale(0, 1), Err(IrError::Overflow(_))));
        // A failed rescale changes nothing, not even the values before the one that overflows.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[5]).unwrap();
        b.add_stack(&["b"], &[i64::MAX / 2]).unwrap();
        assert!(b.rescale(0, 1).is_err());
        assert_eq!(b.profile().samples.values[0], vec![5, i64::MAX / 2]);
        assert_eq!(b.decimals(0), 0);
    }
}

#[cfg(test)]
mod thread_tests {
    use super::*;

    #[test]
    fn aggregated_rows_are_per_thread_and_the_tree_merges_threads() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let run1 = b.add_thread("run 1");
        b.add_stack(&["kernel_run", "f"], &[5]).unwrap();
        let run2 = b.add_thread("run 2");
        b.add_stack(&["kernel_run", "f"], &[7]).unwrap();
        b.set_thread(run1);
        b.add_stack(&["kernel_run", "f"], &[1]).unwrap();
        let p = b.finish();
        assert_eq!(p.samples.values[0], vec![6, 7]);
        assert_eq!(p.samples.thread.as_deref(), Some(&[run1, run2][..]));
        p.view().validate().unwrap();
        let tree = crate::CallTree::build(&p.view()).unwrap();
        assert_eq!(tree.grand_total(0), 13);
        let t = crate::transform::apply(&p.view(), &crate::Transform::MaxDepth(1))
            .unwrap()
            .0;
        assert_eq!(
            t.samples.thread.as_deref(),
            Some(&[run1, run2][..]),
            "transforms keep threads"
        );
        assert_eq!(t.threads.len(), 2);
    }
}
