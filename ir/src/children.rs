//! [`ChildIndex`]: the child of a node with a given key (the stack with a given prefix and leaf
//! frame, the call node with a given parent and func), found without hashing in the common
//! case, and made when it is new. Nodes are numbered 0, 1, 2 … in the order they are made.
//!
//! Each node has an 8-byte entry holding its first child inline, so finding the child of a
//! stack with one child (87 % of the stacks of a large folded profile) costs no memory access
//! beyond the parent's entry, which the walk from the root has just loaded, and a new suffix of
//! a stack needs no lookup at all. A node with more children gets its own small open-addressing
//! table in a shared pool, so finding one of them is one more access to a table that holds
//! only that node's children, not a probe into one hash of every child in the profile (which
//! misses the caches once that hash outgrows them: measured on a PVM trace with 2.5 M such
//! children, the per-node tables took 40 % off the parse). Entries of 16 bytes holding two
//! children inline were measured slower on the 1 GB folded benchmark: their memory (and on
//! this VM its page faults) cost more than the table lookups of the 5 % of stacks with two
//! children. Roots are the children of an entry of their own.

use crate::profile::NONE;

/// `child` of an entry whose children are in a table is `SPILLED + log2 of its slots`, and
/// `key` the table's place, so a lookup goes straight to the slot (the table's header, one more
/// dependent cache miss, is read only to add a child). Node ids stay below it.
const SPILLED: u32 = u32::MAX - 64;
/// An empty table slot (no child has key and id both `u32::MAX`).
const EMPTY: u64 = u64::MAX;
/// log2 of a new table's slots (two children, then up to three before it grows).
const FIRST_LOG: u32 = 2;

/// A node's first child (key and id; `NONE` if it has none), or its child table's place.
#[derive(Clone, Copy)]
struct Entry {
    key: u32,
    child: u32,
}

const CHILDLESS: Entry = Entry {
    key: NONE,
    child: NONE,
};

/// What a parent's entry tells of a child ([`ChildIndex::get_inline`]).
pub(crate) enum Lookup {
    Done(Option<u32>),
    /// In the parent's table, at `at` with `2^log` slots.
    InTable {
        at: usize,
        log: u32,
    },
}

/// Where a child is, or where a new one goes.
enum Place {
    Found(u32),
    /// The parent has no child yet: the new one goes inline.
    Inline,
    /// The parent's inline child has another key (the parent's entry, as read).
    InlineFull(Entry),
    /// Not in the parent's table: its place and the log2 of its slots.
    Table {
        at: usize,
        log: u32,
    },
}

/// Children by (parent, key) for nodes numbered in the order they are made.
pub(crate) struct ChildIndex {
    /// One entry per node, by node id.
    nodes: Vec<Entry>,
    /// The roots' entry.
    roots: Entry,
    /// Child tables: at a table's place a header (children << 8 | log2 slots), then its slots,
    /// each `key << 32 | child`. A table that grows moves to the end; the old one is left
    /// unused (the tables' total stays below twice the live ones).
    tables: Vec<u64>,
}

impl Default for ChildIndex {
    fn default() -> Self {
        ChildIndex {
            nodes: Vec::new(),
            roots: CHILDLESS,
            tables: Vec::new(),
        }
    }
}

/// The place and log2 of the slots of a spilled entry's table, if it is one.
#[inline]
fn table_of(node: Entry) -> Option<(usize, u32)> {
    (node.child >= SPILLED && node.child != NONE).then(|| (node.key as usize, node.child - SPILLED))
}

#[inline]
fn slot(key: u32, log: u32) -> usize {
    ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - log)) as usize
}

impl ChildIndex {
    /// Room for `additional` more nodes.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    /// Starts loading the entry of `node` into the caches (a hint: nothing is read).
    #[inline]
    pub(crate) fn prefetch(&self, node: u32) {
        prefetch_index::prefetch_index(&self.nodes, node as usize);
    }

    #[inline]
    fn entry(&self, parent: u32) -> Entry {
        if parent == NONE {
            self.roots
        } else {
            self.nodes[parent as usize]
        }
    }

    #[inline]
    fn entry_mut(&mut self, parent: u32) -> &mut Entry {
        if parent == NONE {
            &mut self.roots
        } else {
            &mut self.nodes[parent as usize]
        }
    }

    /// The child of `parent` with `key` as far as the parent's entry tells: found or missing
    /// when the children are inline, or the parent's table (to [`Self::prefetch_slot`] and
    /// then [`Self::get_in_table`]), so that a caller walking several paths in turns can load
    /// the table's slot while it steps the others.
    #[inline]
    pub(crate) fn get_inline(&self, parent: u32, key: u32) -> Lookup {
        let node = self.entry(parent);
        match table_of(node) {
            Some((at, log)) => Lookup::InTable { at, log },
            None => Lookup::Done((node.key == key && node.child != NONE).then_some(node.child)),
        }
    }

    /// Starts loading the slot where the table at `at` keeps `key` (a hint: nothing is read).
    #[inline]
    pub(crate) fn prefetch_slot(&self, at: usize, log: u32, key: u32) {
        prefetch_index::prefetch_index(&self.tables, at + 1 + slot(key, log));
    }

    /// The child with `key` in the table at `at` (from [`Self::get_inline`]).
    #[inline]
    pub(crate) fn get_in_table(&self, at: usize, log: u32, key: u32) -> Option<u32> {
        let mask = (1usize << log) - 1;
        let mut i = slot(key, log);
        loop {
            let e = self.tables[at + 1 + i];
            if e == EMPTY {
                return None;
            }
            if (e >> 32) as u32 == key {
                return Some(e as u32);
            }
            i = (i + 1) & mask;
        }
    }

    /// Where the child of `parent` with `key` is, or where it would go.
    #[inline]
    fn find(&self, parent: u32, key: u32) -> Place {
        let node = self.entry(parent);
        match table_of(node) {
            Some((at, log)) => match self.get_in_table(at, log, key) {
                Some(child) => Place::Found(child),
                None => Place::Table { at, log },
            },
            None if node.child == NONE => Place::Inline,
            None if node.key == key => Place::Found(node.child),
            None => Place::InlineFull(node),
        }
    }

    /// The child of `parent` ([`NONE`] for a root) with `key`, if there is one.
    #[inline]
    pub(crate) fn get(&self, parent: u32, key: u32) -> Option<u32> {
        match self.find(parent, key) {
            Place::Found(child) => Some(child),
            _ => None,
        }
    }

    /// The child of `parent` ([`NONE`] for a root) with `key`; when there is none, `make()`
    /// makes it and returns its id, which must be the number of nodes made so far.
    #[inline]
    pub(crate) fn get_or_make(&mut self, parent: u32, key: u32, make: impl FnOnce() -> u32) -> u32 {
        match self.find(parent, key) {
            Place::Found(child) => child,
            Place::Inline => {
                let s = self.push(make);
                *self.entry_mut(parent) = Entry { key, child: s };
                s
            }
            Place::InlineFull(node) => {
                // A second child: both go to a table of their own.
                let s = self.push(make);
                let at = self.new_table(FIRST_LOG);
                self.put(at, FIRST_LOG, node.key, node.child);
                self.put(at, FIRST_LOG, key, s);
                self.tables[at] = (2 << 8) | FIRST_LOG as u64;
                self.point_to(parent, at, FIRST_LOG);
                s
            }
            Place::Table { mut at, mut log } => {
                let s = self.push(make);
                let children = self.tables[at] >> 8;
                if (children + 1) * 4 > 3u64 << log {
                    // Over three quarters full: move to a table twice the size.
                    let old = at;
                    log += 1;
                    at = self.new_table(log);
                    for k in 0..1usize << (log - 1) {
                        let e = self.tables[old + 1 + k];
                        if e != EMPTY {
                            self.put(at, log, (e >> 32) as u32, e as u32);
                        }
                    }
                    self.point_to(parent, at, log);
                }
                self.put(at, log, key, s);
                self.tables[at] = ((children + 1) << 8) | log as u64;
                s
            }
        }
    }

    /// Whether `node` has no child yet.
    #[inline]
    pub(crate) fn is_childless(&self, node: u32) -> bool {
        self.entry(node).child == NONE
    }

    /// Makes nodes `first`, `first + 1` … (`first` the number of nodes so far), one per key of
    /// `keys`: the first the child of `parent` (which has no child) by `keys[0]`, each next one
    /// the only child of the one before by its key. No lookup: none of them can exist.
    pub(crate) fn push_chain(&mut self, parent: u32, keys: &[u32], first: u32) {
        let Some((&key, rest)) = keys.split_first() else {
            return;
        };
        debug_assert_eq!(
            first as usize,
            self.nodes.len(),
            "nodes are numbered in order"
        );
        debug_assert!(self.is_childless(parent));
        debug_assert!(
            (first as usize + keys.len()) < SPILLED as usize,
            "node ids stay below the spilled marks"
        );
        *self.entry_mut(parent) = Entry { key, child: first };
        self.nodes.reserve(keys.len());
        self.nodes.extend(
            rest.iter()
                .zip(first + 1..)
                .map(|(&key, child)| Entry { key, child }),
        );
        self.nodes.push(CHILDLESS);
    }

    fn push(&mut self, make: impl FnOnce() -> u32) -> u32 {
        let id = make();
        debug_assert_eq!(id as usize, self.nodes.len(), "nodes are numbered in order");
        debug_assert!(id < SPILLED, "node ids stay below the spilled marks");
        self.nodes.push(CHILDLESS);
        id
    }

    /// A table of `2^log` empty slots; returns its place.
    fn new_table(&mut self, log: u32) -> usize {
        let at = self.tables.len();
        self.tables.resize(at + 1 + (1 << log), EMPTY);
        at
    }

    fn put(&mut self, at: usize, log: u32, key: u32, child: u32) {
        let mask = (1usize << log) - 1;
        let mut i = slot(key, log);
        while self.tables[at + 1 + i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.tables[at + 1 + i] = ((key as u64) << 32) | child as u64;
    }

    fn point_to(&mut self, parent: u32, at: usize, log: u32) {
        // 32 GiB of child tables: more than a profile of 2^32 nodes can need in practice.
        let at = u32::try_from(at).expect("child tables beyond 2^32 words");
        *self.entry_mut(parent) = Entry {
            key: at,
            child: SPILLED + log,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (parent, key) pair finds the child it made, through inline children, a first table
    /// and several growths, for roots and for inner nodes alike.
    #[test]
    fn children_are_found_inline_and_in_growing_tables() {
        let mut index = ChildIndex::default();
        let mut made: Vec<(u32, u32)> = Vec::new(); // (parent, key) of each node id
        for _ in 0..2 {
            for parent in [NONE, 0, 1] {
                for key in (0..500u32).map(|k| k.wrapping_mul(2_654_435_761) % 100_000) {
                    let id = index.get_or_make(parent, key, || {
                        made.push((parent, key));
                        (made.len() - 1) as u32
                    });
                    assert_eq!(made[id as usize], (parent, key));
                }
            }
        }
        assert_eq!(made.len(), 3 * 500, "no child made twice");
    }
}
