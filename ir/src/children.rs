//! [`ChildIndex`]: the child of a node with a given key (the stack with a given prefix and leaf
//! frame, the call node with a given parent and func), found without hashing in the common
//! case, and made when it is new. Nodes are numbered 0, 1, 2 … in the order they are made.
//!
//! Each node has a 16-byte entry holding its first two children inline, so finding a child of a
//! stack with one or two children (most of them) costs no memory access beyond the parent's
//! node, which the walk from the root has just loaded, and a new suffix of a stack needs no
//! lookup at all. A node with more children gets its own small open-addressing table in a
//! shared pool, so finding one of them is one more access to a table that holds only that
//! node's children, not a probe into one hash of every child in the profile (which misses the
//! caches once that hash outgrows them: measured on a PVM trace with 2.5 M such children, the
//! per-node tables took 40 % off the parse). Roots are the children of an entry of their own.

use crate::profile::NONE;

/// Children kept inline in a node.
const INLINE: usize = 2;
/// `child[0]` of an entry whose children are in a table; `key` then holds the table's place
/// and `child[1]` the log2 of its slots (so a lookup goes straight to the slot: the table's
/// header, one more dependent cache miss, is read only to add a child).
const SPILLED: u32 = u32::MAX - 1;
/// An empty table slot (no child has key and id both `u32::MAX`).
const EMPTY: u64 = u64::MAX;
/// log2 of a new table's slots.
const FIRST_LOG: u32 = 3;

/// A node's first children (keys and ids; `NONE` in unused slots), or its child table's place.
#[derive(Clone, Copy)]
struct Entry {
    key: [u32; INLINE],
    child: [u32; INLINE],
}

const CHILDLESS: Entry = Entry {
    key: [NONE; INLINE],
    child: [NONE; INLINE],
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
    /// The parent's inline slot `k` is free.
    Inline(usize),
    /// The parent's inline slots are taken (the parent's entry, as read).
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

/// The place and log2 of the slots of a spilled entry's table.
#[inline]
fn table_of(node: Entry) -> (usize, u32) {
    let at = node.key[0] as usize | ((node.key[1] as usize) << 16 << 16);
    (at, node.child[1])
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
        if node.child[0] != SPILLED {
            for k in 0..INLINE {
                if node.child[k] == NONE {
                    return Lookup::Done(None);
                }
                if node.key[k] == key {
                    return Lookup::Done(Some(node.child[k]));
                }
            }
            return Lookup::Done(None);
        }
        let (at, log) = table_of(node);
        Lookup::InTable { at, log }
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
        if node.child[0] != SPILLED {
            for k in 0..INLINE {
                if node.child[k] == NONE {
                    return Place::Inline(k);
                }
                if node.key[k] == key {
                    return Place::Found(node.child[k]);
                }
            }
            return Place::InlineFull(node);
        }
        let (at, log) = table_of(node);
        match self.get_in_table(at, log, key) {
            Some(child) => Place::Found(child),
            None => Place::Table { at, log },
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
            Place::Inline(k) => {
                let s = self.push(make);
                let n = self.entry_mut(parent);
                n.key[k] = key;
                n.child[k] = s;
                s
            }
            Place::InlineFull(node) => {
                // One child too many to keep inline: all of them go to a table of their own.
                let s = self.push(make);
                let at = self.new_table(FIRST_LOG);
                for k in 0..INLINE {
                    self.put(at, FIRST_LOG, node.key[k], node.child[k]);
                }
                self.put(at, FIRST_LOG, key, s);
                self.tables[at] = ((INLINE as u64 + 1) << 8) | FIRST_LOG as u64;
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

    fn push(&mut self, make: impl FnOnce() -> u32) -> u32 {
        let id = make();
        debug_assert_eq!(id as usize, self.nodes.len(), "nodes are numbered in order");
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
        let at = at as u64;
        *self.entry_mut(parent) = Entry {
            key: [at as u32, (at >> 32) as u32],
            child: [SPILLED, log],
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
