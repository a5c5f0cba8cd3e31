//! Bulk appends for readers that know their tables up front (Deep.data and other graph formats).
//!
//! [`ProfileBuilder`] deduplicates every stack through its trie and aggregates samples per stack,
//! which costs a lookup and an index entry per stack. A reader whose input already is a tree
//! (one stack per node, in an order where parents come first) needs neither: it knows which
//! stacks are new and how many rows it will write. [`ProfileBuilder::into_bulk`] turns the
//! builder into a [`BulkBuilder`] for that last phase:
//!
//! * [`BulkBuilder::push_stack`] appends a stack without any lookup, and
//!   [`BulkBuilder::push_row`] a sample row to every column at once;
//!   [`BulkBuilder::add_to_row`] adds (checked) into a row already pushed;
//! * [`BulkBuilder::reserve_stacks`] / [`BulkBuilder::reserve_samples`] reserve what a reader's
//!   record counts announce (exactly, when made once up front), so the columns do not grow by
//!   reallocation;
//! * funcs, frames and strings are still interned and deduplicated (delegated to the builder).
//!
//! # Invariants
//!
//! The conversion consumes the builder, so the trie and the per-stack sample index, which the
//! bulk appends do not maintain, can never be used again: [`ProfileBuilder::stack`] and
//! [`ProfileBuilder::add_to_stack`] are not reachable from a `BulkBuilder`, and there is no way
//! back. (Keeping the trie consistent instead would cost the very index entry per stack that
//! bulk appends exist to avoid.) Every append checks what the IR requires of a profile, so the
//! result always passes [`crate::ProfileRef::validate`]:
//!
//! * a stack's prefix is [`NONE`] or an existing stack (so `prefix[i] < i`), its frame an
//!   existing frame, and there are fewer than `u32::MAX` stacks;
//! * a row's stack exists and it has one value per value type; the row also gets the thread
//!   column's current thread and the time column's last time, as [`ProfileBuilder::push_sample`]
//!   gives a row without a time, when the profile has those columns;
//! * sums into rows are checked: an overflow is an error, never a wrap.
//!
//! What the caller promises instead of the trie: **bulk stacks are not deduplicated**. Appending
//! a (prefix, frame) pair twice gives two stacks with the same path. The IR allows this (the call
//! tree and every emitter combine them, as they combine frames of one function), but a reader
//! that wants distinct stacks must only append a stack it knows to be new, for example one
//! whose prefix was itself appended since its last child. Stacks made with
//! [`ProfileBuilder::stack`] before the conversion are kept with their ids, and are valid
//! prefixes.

use super::ProfileBuilder;
use crate::profile::{IrError, NONE, Profile};
use crate::strings::StrId;

/// A [`ProfileBuilder`] in its bulk phase: stacks and sample rows appended in order, without
/// deduplication or aggregation. Made by [`ProfileBuilder::into_bulk`]; see the module
/// documentation for the invariants.
pub struct BulkBuilder {
    b: ProfileBuilder,
}

impl ProfileBuilder {
    /// Ends the deduplicating phase: from here on stacks and sample rows are appended in bulk
    /// (no trie, no per-stack aggregation). Consumes the builder, so its stack index can never
    /// be used on stacks it did not see.
    pub fn into_bulk(self) -> BulkBuilder {
        BulkBuilder { b: self }
    }
}

impl BulkBuilder {
    /// Interns a string.
    #[inline]
    pub fn intern(&mut self, s: &str) -> StrId {
        self.b.intern(s)
    }

    /// The func named `name` with no file, line or resource (deduplicated).
    #[inline]
    pub fn func(&mut self, name: &str) -> u32 {
        self.b.func(name)
    }

    /// The func with this name, file, first line and resource (deduplicated).
    pub fn func_with(
        &mut self,
        name: &str,
        file: Option<&str>,
        line: Option<u32>,
        resource: Option<&str>,
    ) -> u32 {
        self.b.func_with(name, file, line, resource)
    }

    /// The frame of `func` with no address or line (deduplicated).
    #[inline]
    pub fn frame(&mut self, func: u32) -> u32 {
        self.b.frame(func)
    }

    /// The frame of `func` at an address and/or line (deduplicated).
    pub fn frame_at(&mut self, func: u32, address: Option<u64>, line: Option<u32>) -> u32 {
        self.b.frame_at(func, address, line)
    }

    /// Number of stacks so far.
    #[inline]
    pub fn n_stacks(&self) -> usize {
        self.b.profile.stacks.prefix.len()
    }

    /// Number of sample rows so far.
    #[inline]
    pub fn n_samples(&self) -> usize {
        self.b.profile.samples.stack.len()
    }

    /// Number of value columns (the length of every row).
    #[inline]
    pub fn n_value_types(&self) -> usize {
        self.b.profile.value_types.len()
    }

    /// Room for exactly `additional` more stacks (a reader that knows its node count; nothing
    /// is allocated beyond that).
    pub fn reserve_stacks(&mut self, additional: usize) {
        let s = &mut self.b.profile.stacks;
        s.prefix.reserve_exact(additional);
        s.frame.reserve_exact(additional);
    }

    /// Storage to reuse for the stack table's two columns and the sample rows' stack column:
    /// each `Vec` given, cleared, becomes the storage of its column if that column is still
    /// empty and has less capacity than the `Vec` (otherwise the column keeps its own, and the
    /// `Vec` given is dropped). A reader
    /// done with tables of its own hands them over this way before reserving, so that pages it
    /// has already touched are not fresh pages again (each fresh page costs a page fault); what
    /// a column holds is the same either way, only its capacity differs (capacity beyond what
    /// the column takes stays allocated with the profile: give no more than that).
    pub fn reuse_storage(
        &mut self,
        stack_prefix: Vec<u32>,
        stack_frame: Vec<u32>,
        sample_stack: Vec<u32>,
    ) {
        let p = &mut self.b.profile;
        for (column, mut spare) in [
            (&mut p.stacks.prefix, stack_prefix),
            (&mut p.stacks.frame, stack_frame),
            (&mut p.samples.stack, sample_stack),
        ] {
            if column.is_empty() && spare.capacity() > column.capacity() {
                spare.clear();
                *column = spare;
            }
        }
    }

    /// Room for `additional` more sample rows in every sample column (exactly that many when
    /// the columns are still empty).
    pub fn reserve_samples(&mut self, additional: usize) {
        self.b.reserve_samples(additional);
    }

    /// Appends the stack `prefix` ([`NONE`] for a root) + `frame` without looking for an equal
    /// one (see the module documentation: bulk stacks are not deduplicated). Errors when the
    /// prefix or the frame does not exist, or when the stack table is full.
    #[inline]
    pub fn push_stack(&mut self, prefix: u32, frame: u32) -> Result<u32, IrError> {
        let stacks = &mut self.b.profile.stacks;
        let n = stacks.prefix.len();
        if (prefix != NONE && prefix as usize >= n)
            || frame as usize >= self.b.profile.frames.func.len()
            || n >= NONE as usize
        {
            return Err(self.bad_stack(prefix, frame));
        }
        stacks.prefix.push(prefix);
        stacks.frame.push(frame);
        Ok(n as u32)
    }

    #[cold]
    #[inline(never)]
    fn bad_stack(&self, prefix: u32, frame: u32) -> IrError {
        let n = self.n_stacks();
        let frames = self.b.profile.frames.func.len();
        IrError::Invalid(if n >= NONE as usize {
            format!("more than {} stacks", NONE - 1)
        } else if frame as usize >= frames {
            format!("stack {n}: frame {frame} does not exist (there are {frames})")
        } else {
            format!("stack {n}: prefix {prefix} is not an earlier stack")
        })
    }

    /// Appends one sample row on `stack`, one value per value column; returns the row's index.
    /// The row has no time of its own: with a time column it repeats the last time, as
    /// [`ProfileBuilder::push_sample`] does; with a thread column it gets the current thread.
    #[inline]
    pub fn push_row(&mut self, stack: u32, values: &[i64]) -> Result<u32, IrError> {
        let p = &mut self.b.profile;
        let n = p.samples.stack.len();
        if stack as usize >= p.stacks.prefix.len()
            || values.len() != p.value_types.len()
            || n >= NONE as usize
        {
            return Err(self.bad_row(stack, values.len()));
        }
        let s = &mut p.samples;
        s.stack.push(stack);
        if let Some(col) = &mut s.time {
            col.push(col.last().copied().unwrap_or(0));
        }
        if let Some(col) = &mut s.thread {
            col.push(self.b.current_thread);
        }
        for (col, &v) in s.values.iter_mut().zip(values) {
            col.push(v);
        }
        Ok(n as u32)
    }

    #[cold]
    #[inline(never)]
    fn bad_row(&self, stack: u32, n_values: usize) -> IrError {
        let n = self.n_samples();
        IrError::Invalid(if n >= NONE as usize {
            format!("more than {} sample rows", NONE - 1)
        } else if n_values != self.n_value_types() {
            format!(
                "sample {n}: {n_values} values for {} value columns",
                self.n_value_types()
            )
        } else {
            format!("sample {n}: stack {stack} does not exist")
        })
    }

    /// Adds `values` into the row `row` (already pushed), column by column; an overflow is an
    /// error and leaves the row unchanged.
    pub fn add_to_row(&mut self, row: u32, values: &[i64]) -> Result<(), IrError> {
        let s = &mut self.b.profile.samples;
        let r = row as usize;
        if r >= s.stack.len() || values.len() != s.values.len() {
            return Err(IrError::Invalid(format!(
                "adding {} values to sample {row} of {} (with {} value columns)",
                values.len(),
                s.stack.len(),
                s.values.len()
            )));
        }
        for (col, &v) in s.values.iter().zip(values) {
            if col[r].checked_add(v).is_none() {
                return Err(IrError::Overflow(format!(
                    "{} + {v} in sample {row}",
                    col[r]
                )));
            }
        }
        for (col, &v) in s.values.iter_mut().zip(values) {
            col[r] += v;
        }
        Ok(())
    }

    /// Read access to what was built so far.
    pub fn profile(&self) -> &Profile {
        &self.b.profile
    }

    /// The finished profile.
    pub fn finish(self) -> Profile {
        self.b.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValueKind;

    fn builder() -> ProfileBuilder {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_value_type("calls", "calls", ValueKind::Count);
        b
    }

    #[test]
    fn appends_a_tree_in_preorder_with_checked_rows() {
        let mut b = builder();
        // A stack made by the deduplicating phase stays, with its id, as a prefix.
        let fa = b.func("a");
        let a = b.frame(fa);
        let root = b.stack(NONE, a);
        let mut k = b.into_bulk();
        let fb = k.func("b");
        let b_fr = k.frame(fb);
        let b_at = k.frame_at(fb, None, Some(7));
        let fc = k.func_with("c", Some("c.m"), Some(3), Some("mod"));
        let c = k.frame(fc);
        assert_eq!(k.func("b"), fb, "funcs are still deduplicated");
        k.reserve_stacks(4);
        k.reserve_samples(3);
        let s_b = k.push_stack(root, b_fr).unwrap();
        let s_call = k.push_stack(root, b_at).unwrap();
        let s_c = k.push_stack(s_call, c).unwrap();
        let r0 = k.push_row(root, &[0, 1]).unwrap();
        let r1 = k.push_row(s_b, &[2, 1]).unwrap();
        let r2 = k.push_row(s_c, &[5, 3]).unwrap();
        assert_eq!((r0, r1, r2), (0, 1, 2));
        k.add_to_row(r2, &[1, 0]).unwrap();
        assert_eq!((k.n_stacks(), k.n_samples(), k.n_value_types()), (4, 3, 2));
        let p = k.finish();
        assert_eq!(p.stacks.prefix, vec![NONE, 0, 0, 2]);
        assert_eq!(p.stacks.frame, vec![a, b_fr, b_at, c]);
        assert_eq!(p.samples.stack, vec![0, 1, 3]);
        assert_eq!(p.samples.values, vec![vec![0, 2, 6], vec![1, 1, 3]]);
        p.view().validate().unwrap();
        let tree = crate::CallTree::build(&p.view()).unwrap();
        // a > b (both b stacks, one func) > c
        assert_eq!(tree.len(), 3);
        assert_eq!(tree.grand_total(0), 8);
    }

    #[test]
    fn reused_storage_holds_the_same_columns_and_keeps_what_a_column_has() {
        // A stack made before the bulk phase: the stack columns keep their own storage.
        let mut b = builder();
        let f = b.func("f");
        let fr = b.frame(f);
        let root = b.stack(NONE, fr);
        let mut k = b.into_bulk();
        let spare = |len: usize| vec![7u32; len];
        k.reuse_storage(spare(100), spare(100), spare(50));
        // The stack columns had an entry: kept; the empty sample column took the spare one,
        // cleared, with its capacity.
        assert_eq!(k.profile().stacks.prefix, vec![NONE]);
        assert!(k.profile().samples.stack.is_empty());
        assert!(k.profile().samples.stack.capacity() >= 50);
        let s = k.push_stack(root, fr).unwrap();
        k.push_row(s, &[1, 2]).unwrap();
        let p = k.finish();
        assert_eq!(p.stacks.prefix, vec![NONE, 0]);
        assert_eq!(p.stacks.frame, vec![fr, fr]);
        assert_eq!(p.samples.stack, vec![1]);
        p.view().validate().unwrap();
        // Every column empty: each takes its spare storage, and grows past it as needed.
        let mut k = builder().into_bulk();
        let f = k.func("f");
        let fr = k.frame(f);
        k.reuse_storage(spare(2), spare(2), spare(2));
        k.reserve_stacks(3);
        let mut prefix = NONE;
        for _ in 0..3 {
            prefix = k.push_stack(prefix, fr).unwrap();
            k.push_row(prefix, &[1, 0]).unwrap();
        }
        let p = k.finish();
        assert_eq!(p.stacks.prefix, vec![NONE, 0, 1]);
        assert_eq!(p.stacks.frame, vec![fr; 3]);
        assert_eq!(p.samples.stack, vec![0, 1, 2]);
        p.view().validate().unwrap();
    }

    #[test]
    fn stacks_are_not_deduplicated_and_the_call_tree_merges_them() {
        let mut k = builder().into_bulk();
        let f = k.func("f");
        let fr = k.frame(f);
        let s1 = k.push_stack(NONE, fr).unwrap();
        let s2 = k.push_stack(NONE, fr).unwrap();
        assert_ne!(s1, s2);
        k.push_row(s1, &[1, 1]).unwrap();
        k.push_row(s2, &[2, 1]).unwrap();
        let p = k.finish();
        p.view().validate().unwrap();
        let tree = crate::CallTree::build(&p.view()).unwrap();
        assert_eq!(tree.len(), 1);
        assert_eq!(tree.grand_total(0), 3);
    }

    #[test]
    fn every_append_keeps_the_ir_invariants() {
        let mut k = builder().into_bulk();
        let f = k.func("f");
        let fr = k.frame(f);
        // No stack yet: any prefix is a forward reference.
        assert!(matches!(k.push_stack(0, fr), Err(IrError::Invalid(_))));
        let s = k.push_stack(NONE, fr).unwrap();
        assert!(matches!(k.push_stack(s + 1, fr), Err(IrError::Invalid(_))));
        assert!(matches!(k.push_stack(s, fr + 1), Err(IrError::Invalid(_))));
        assert!(matches!(
            k.push_row(s + 1, &[1, 1]),
            Err(IrError::Invalid(_))
        ));
        assert!(matches!(k.push_row(s, &[1]), Err(IrError::Invalid(_))));
        assert!(matches!(k.add_to_row(0, &[1, 1]), Err(IrError::Invalid(_))));
        let r = k.push_row(s, &[i64::MAX - 1, 5]).unwrap();
        assert!(matches!(k.add_to_row(r, &[1, 1]), Ok(())));
        // The overflow in column 0 leaves column 1 unchanged too.
        assert!(matches!(
            k.add_to_row(r, &[1, 1]),
            Err(IrError::Overflow(_))
        ));
        assert_eq!(k.profile().samples.values, vec![vec![i64::MAX], vec![6]]);
        assert_eq!(k.n_stacks(), 1, "failed appends append nothing");
        k.finish().view().validate().unwrap();
    }

    #[test]
    fn rows_get_the_current_thread_and_the_last_time() {
        let mut b = builder();
        let f = b.func("f");
        let fr = b.frame(f);
        let s = b.stack(NONE, fr);
        b.add_thread("t0");
        let t1 = b.add_thread("t1");
        b.push_sample(s, Some(40), &[1, 0]);
        let mut k = b.into_bulk();
        k.reserve_samples(1);
        k.push_row(s, &[2, 0]).unwrap();
        let p = k.finish();
        assert_eq!(p.samples.time.as_deref(), Some(&[40, 40][..]));
        assert_eq!(p.samples.thread.as_deref(), Some(&[t1, t1][..]));
        p.view().validate().unwrap();
    }
}
