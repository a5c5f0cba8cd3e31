//! Finding the stacks that already exist along several paths at once.
//!
//! Following one path down the stack index is a chain of dependent memory accesses: each step
//! needs the stack the previous one found, and on a large profile most steps miss the caches.
//! Different paths do not depend on each other, so [`ProfileBuilder::find_paths`] takes their
//! steps in turns and their misses overlap (the folded parser's batches of lines: −12 % CPU on
//! 1 GB; absorbing a parallel piece's chains of stacks: −7 % wall). It only finds: the caller
//! then makes what is missing in its own order, so stack ids do not depend on the turns.

use super::ProfileBuilder;
use crate::children::Lookup;
use crate::profile::NONE;
use std::ops::Range;

/// Where a path of [`ProfileBuilder::find_paths`] hangs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathStart {
    /// Under this stack ([`NONE`]: the path's first stack is a root).
    Stack(u32),
    /// Under the stack found at this position (of an earlier path). When that path is among
    /// the ones taking turns with this one, this one waits until it has passed the position;
    /// if the stack there is not found, nothing of this path is looked up.
    At(usize),
}

/// Paths that take their steps in turns.
const TURNS: usize = 64;

impl ProfileBuilder {
    /// The stacks that exist along `paths`, written to `out`.
    ///
    /// A path `(start, range)` covers positions `range`: the stack at its first position is the
    /// child of `start` by frame `frame(position)`, and each next one the child of the one
    /// before. Each stack found is written to `out[position]`; a path stops at its first stack
    /// that does not exist, leaving `out` as it was from there on. Up to 64 paths go in turns,
    /// one step each. Nothing is made.
    pub fn find_paths(
        &self,
        paths: &[(PathStart, Range<usize>)],
        frame: impl Fn(usize) -> u32,
        out: &mut [u32],
    ) {
        for group in paths.chunks(TURNS) {
            // The next position and the last stack found of each path still walking, and the
            // child table it waits on (its slot was asked for in the previous turn).
            let mut at = [0usize; TURNS];
            let mut leaf = [NONE; TURNS];
            let mut table: [Option<(usize, u32)>; TURNS] = [None; TURNS];
            let mut walking = [0u8; TURNS];
            let mut active = 0;
            for (k, (_, range)) in group.iter().enumerate() {
                if !range.is_empty() {
                    at[k] = range.start;
                    walking[active] = k as u8;
                    active += 1;
                }
            }
            // For a path that starts under an earlier position of another path of the group,
            // that path (a path waits only for one that starts before it: no cycle); and
            // whether each path has stopped.
            let mut owner = [u8::MAX; TURNS];
            let mut stopped = [false; TURNS];
            // Paths in position order (as callers make them) are searched by halving.
            let sorted = group.is_sorted_by_key(|(_, r)| r.start);
            let owner_of = |p: usize| match sorted {
                true => Some(group.partition_point(|(_, r)| r.start <= p))
                    .filter(|&o| o > 0 && group[o - 1].1.contains(&p))
                    .map(|o| o - 1),
                false => group.iter().position(|(_, r)| r.contains(&p)),
            };
            for (k, (start, range)) in group.iter().enumerate() {
                if let PathStart::At(p) = *start
                    && p < range.start
                    && let Some(o) = owner_of(p)
                {
                    owner[k] = o as u8;
                }
            }
            while active > 0 {
                let mut w = 0;
                while w < active {
                    let k = walking[w] as usize;
                    let (start, range) = &group[k];
                    let i = at[k];
                    let key = frame(i);
                    let found = match table[k].take() {
                        Some((t, log)) => self.trie.get_in_table(t, log, key),
                        None => {
                            let parent = if i > range.start {
                                Some(leaf[k])
                            } else {
                                match *start {
                                    PathStart::Stack(s) => Some(s),
                                    PathStart::At(p) if out[p] != NONE => Some(out[p]),
                                    PathStart::At(p) => {
                                        let o = owner[k] as usize;
                                        if o < TURNS && !stopped[o] && at[o] <= p {
                                            // Its parent's path has not got there yet.
                                            w += 1;
                                            continue;
                                        }
                                        None
                                    }
                                }
                            };
                            match parent.map(|p| self.trie.get_inline(p, key)) {
                                Some(Lookup::Done(found)) => found,
                                Some(Lookup::InTable { at: t, log }) => {
                                    // The parent's children are in a table: its slot is loaded
                                    // while the other paths take their turns.
                                    self.trie.prefetch_slot(t, log, key);
                                    table[k] = Some((t, log));
                                    w += 1;
                                    continue;
                                }
                                None => None,
                            }
                        }
                    };
                    if let Some(s) = found {
                        out[i] = s;
                        leaf[k] = s;
                        at[k] = i + 1;
                        if at[k] < range.end {
                            // Its entry is loaded while the other paths take their turns.
                            self.trie.prefetch(s);
                            w += 1;
                            continue;
                        }
                    }
                    // Not found, or at its end: this path stops.
                    stopped[k] = true;
                    active -= 1;
                    walking[w] = walking[active];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ValueKind;
    use crate::testing::XorShift;

    #[test]
    fn finds_what_exists_along_each_path_and_stops_at_the_first_missing() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let fr: Vec<u32> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| {
                let f = b.func(n);
                b.frame(f)
            })
            .collect();
        let a = b.stack(NONE, fr[0]);
        let ab = b.stack(a, fr[1]);
        let abc = b.stack(ab, fr[2]);
        let d = b.stack(NONE, fr[3]);
        // Positions: 0..3 a;b;c; 3..5 a;d (d missing under a); 5..6 d; 6..8 b;c under
        // position 0 (a); 8..9 a under position 4 (never found, so not the root a); 9..10 c
        // under position 1 (ab, found in a later turn than this path's first: it waits); an
        // empty path.
        let frames = [0, 1, 2, 0, 3, 3, 1, 2, 0, 2];
        let paths = [
            (PathStart::Stack(NONE), 0..3),
            (PathStart::Stack(NONE), 3..5),
            (PathStart::Stack(NONE), 5..6),
            (PathStart::At(0), 6..8),
            (PathStart::At(4), 8..9),
            (PathStart::At(1), 9..10),
            (PathStart::Stack(abc), 10..10),
        ];
        let mut out = vec![NONE; 10];
        b.find_paths(&paths, |i| fr[frames[i]], &mut out);
        assert_eq!(out, vec![a, ab, abc, a, NONE, d, ab, abc, NONE, abc]);
        // More paths than take turns together: the same stacks.
        let many: Vec<(PathStart, Range<usize>)> =
            (0..200).map(|_| (PathStart::Stack(NONE), 0..3)).collect();
        let mut out = vec![NONE; 3];
        b.find_paths(&many, |i| fr[frames[i]], &mut out);
        assert_eq!(out, vec![a, ab, abc]);
        // A path under its own position, or under a later path's: nothing to wait for.
        let odd = [
            (PathStart::At(0), 0..1),
            (PathStart::At(2), 1..2),
            (PathStart::Stack(NONE), 2..3),
        ];
        let mut out = vec![NONE; 3];
        b.find_paths(&odd, |_| fr[0], &mut out);
        assert_eq!(out, vec![NONE, NONE, a]);
        // Paths out of position order: the one under position 1 still waits for its path.
        let unordered = [
            (PathStart::Stack(NONE), 3..4),
            (PathStart::Stack(NONE), 0..2),
            (PathStart::At(1), 2..3),
        ];
        let mut out = vec![NONE; 4];
        b.find_paths(&unordered, |i| fr[[0, 1, 2, 3][i]], &mut out);
        assert_eq!(out, vec![a, ab, abc, d]);
    }

    /// Paths through nodes with many children (kept in tables, whose slots are loaded a turn
    /// ahead) find what a walk with `find_stack` finds, one path at a time.
    #[test]
    fn finds_through_child_tables_what_one_walk_at_a_time_finds() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let fr = crate::testing::numbered_frames(&mut b, 12);
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n);
        for _ in 0..400 {
            let mut s = NONE;
            for _ in 0..1 + next(5) {
                s = b.stack(s, fr[next(12) as usize]);
            }
        }
        let frames: Vec<u32> = (0..3000).map(|_| fr[next(12) as usize]).collect();
        let mut paths = Vec::new();
        let mut i = 0;
        while i < frames.len() {
            let len = (1 + next(6) as usize).min(frames.len() - i);
            paths.push((PathStart::Stack(NONE), i..i + len));
            i += len;
        }
        let mut out = vec![NONE; frames.len()];
        b.find_paths(&paths, |i| frames[i], &mut out);
        let mut expected = vec![NONE; frames.len()];
        for (_, range) in &paths {
            let mut s = NONE;
            for i in range.clone() {
                match b.find_stack(s, frames[i]) {
                    Some(found) => (s, expected[i]) = (found, found),
                    None => break,
                }
            }
        }
        assert_eq!(out, expected);
        assert!(out.iter().filter(|&&s| s != NONE).count() > 1000);
    }
}
