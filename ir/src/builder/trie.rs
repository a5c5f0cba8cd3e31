//! The stack table's index: the stack with a given prefix and leaf frame, found without hashing
//! in the common case, and appended to the table when it is new.
//!
//! Each stack has a 16-byte node holding its first two children inline, so finding a child of a
//! stack with one or two children (most of them) costs no memory access beyond the parent's
//! node, which the walk from the root has just loaded, and a new suffix of a stack needs no
//! lookup at all. A stack with more children gets its own small open-addressing table in a
//! shared pool, so finding one of them is one more access to a table that holds only that
//! stack's children, not a probe into one hash of every child in the profile (which misses the
//! caches once that hash outgrows them: measured on a PVM trace with 2.5 M such children, the
//! per-node tables took 40 % off the parse). Roots are the children of a node of their own.

use crate::profile::{NONE, StackTable};

/// Children kept inline in a node.
const INLINE: usize = 2;
/// `stack[0]` of a node whose children are in a table; `frame` then holds the table's place.
const SPILLED: u32 = u32::MAX - 1;
/// An empty table slot (no child has frame and stack both `u32::MAX`).
const EMPTY: u64 = u64::MAX;
/// log2 of a new table's slots.
const FIRST_LOG: u32 = 3;

/// A stack's first children (`NONE` in unused slots), or the place of its child table.
#[derive(Clone, Copy)]
struct Node {
    frame: [u32; INLINE],
    stack: [u32; INLINE],
}

const CHILDLESS: Node = Node {
    frame: [NONE; INLINE],
    stack: [NONE; INLINE],
};

/// The index of a [`StackTable`] being built.
pub(super) struct StackTrie {
    /// One node per stack, by stack id.
    nodes: Vec<Node>,
    /// The roots' node.
    roots: Node,
    /// Child tables: at a table's place a header (children << 8 | log2 slots), then its slots,
    /// each `frame << 32 | stack`. A table that grows moves to the end; the old one is left
    /// unused (the tables' total stays below twice the live ones).
    tables: Vec<u64>,
}

impl Default for StackTrie {
    fn default() -> Self {
        StackTrie {
            nodes: Vec::new(),
            roots: CHILDLESS,
            tables: Vec::new(),
        }
    }
}

#[inline]
fn slot(frame: u32, log: u32) -> usize {
    ((frame as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - log)) as usize
}

impl StackTrie {
    /// Room for `additional` more stacks.
    pub(super) fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    #[inline]
    fn node_mut(&mut self, prefix: u32) -> &mut Node {
        if prefix == NONE {
            &mut self.roots
        } else {
            &mut self.nodes[prefix as usize]
        }
    }

    /// The stack `(prefix, frame)` of `stacks` ([`NONE`] prefix for a root), appended if new.
    #[inline]
    pub(super) fn get_or_push(&mut self, stacks: &mut StackTable, prefix: u32, frame: u32) -> u32 {
        let node = if prefix == NONE {
            self.roots
        } else {
            self.nodes[prefix as usize]
        };
        if node.stack[0] != SPILLED {
            for k in 0..INLINE {
                if node.stack[k] == NONE {
                    let s = self.push(stacks, prefix, frame);
                    let n = self.node_mut(prefix);
                    n.frame[k] = frame;
                    n.stack[k] = s;
                    return s;
                }
                if node.frame[k] == frame {
                    return node.stack[k];
                }
            }
            // One child too many to keep inline: all of them go to a table of their own.
            let s = self.push(stacks, prefix, frame);
            let at = self.new_table(FIRST_LOG);
            for k in 0..INLINE {
                self.put(at, FIRST_LOG, node.frame[k], node.stack[k]);
            }
            self.put(at, FIRST_LOG, frame, s);
            self.tables[at] = ((INLINE as u64 + 1) << 8) | FIRST_LOG as u64;
            self.point_to(prefix, at);
            return s;
        }
        let mut at = node.frame[0] as usize | ((node.frame[1] as usize) << 16 << 16);
        let header = self.tables[at];
        let (children, mut log) = (header >> 8, (header & 0xff) as u32);
        let mask = (1usize << log) - 1;
        let mut i = slot(frame, log);
        loop {
            let e = self.tables[at + 1 + i];
            if e == EMPTY {
                break;
            }
            if (e >> 32) as u32 == frame {
                return e as u32;
            }
            i = (i + 1) & mask;
        }
        let s = self.push(stacks, prefix, frame);
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
            self.point_to(prefix, at);
        }
        self.put(at, log, frame, s);
        self.tables[at] = ((children + 1) << 8) | log as u64;
        s
    }

    fn push(&mut self, stacks: &mut StackTable, prefix: u32, frame: u32) -> u32 {
        stacks.prefix.push(prefix);
        stacks.frame.push(frame);
        self.nodes.push(CHILDLESS);
        (stacks.prefix.len() - 1) as u32
    }

    /// A table of `2^log` empty slots; returns its place.
    fn new_table(&mut self, log: u32) -> usize {
        let at = self.tables.len();
        self.tables.resize(at + 1 + (1 << log), EMPTY);
        at
    }

    fn put(&mut self, at: usize, log: u32, frame: u32, stack: u32) {
        let mask = (1usize << log) - 1;
        let mut i = slot(frame, log);
        while self.tables[at + 1 + i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.tables[at + 1 + i] = ((frame as u64) << 32) | stack as u64;
    }

    fn point_to(&mut self, prefix: u32, at: usize) {
        let at = at as u64;
        *self.node_mut(prefix) = Node {
            frame: [at as u32, (at >> 32) as u32],
            stack: [SPILLED, NONE],
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (prefix, frame) pair finds the stack it made, through inline children, a first
    /// table and several growths, for roots and for inner stacks alike.
    #[test]
    fn children_are_found_inline_and_in_growing_tables() {
        let mut trie = StackTrie::default();
        let mut stacks = StackTable::default();
        let mut made = Vec::new();
        for round in 0..2 {
            for prefix in [NONE, 0, 1] {
                for frame in (0..500u32).map(|f| f.wrapping_mul(2_654_435_761) % 100_000) {
                    let s = trie.get_or_push(&mut stacks, prefix, frame);
                    if round == 0 {
                        made.push((prefix, frame, s));
                    }
                    assert_eq!(stacks.prefix[s as usize], prefix);
                    assert_eq!(stacks.frame[s as usize], frame);
                }
            }
        }
        assert_eq!(stacks.prefix.len(), 3 * 500, "no stack made twice");
        for (prefix, frame, s) in made {
            assert_eq!(trie.get_or_push(&mut stacks, prefix, frame), s);
        }
        assert_eq!(stacks.prefix.len(), 3 * 500);
    }
}
