//! [`FrameNames`]: the frame of each name a line holds, found in one pass over the line's
//! bytes.
//!
//! Every frame of a folded line is a name to intern, and on unsorted input nearly every frame
//! is (95 % of a generated 1 GB file's frames differ from the line before's). Through the IR's
//! string table that is a `memchr` for the `;`, a hash of the name, a probe, a `memcmp` against
//! the table's copy, then the func and frame of the string: about 35 ns a frame, half of the
//! whole parse, even when every table is in the caches. Here one loop reads the name eight bytes
//! at a time, finding the `;` and hashing as it goes; a slot holds the hash, the name's place
//! in a copy of the names and the frame, so a hit is one probe and a comparison of words, all
//! inline. The IR interns a name the first time it is seen, so the frames are the ones it
//! would give.

/// One name: its hash's upper half, length, place in `FrameNames::text`, and frame.
#[derive(Clone, Copy)]
struct Slot {
    tag: u32,
    len: u32,
    at: u32,
    frame: u32,
}

const EMPTY: Slot = Slot {
    tag: 0,
    len: 0,
    at: 0,
    frame: u32::MAX,
};

/// Frames by name, in front of the IR's interning.
pub(crate) struct FrameNames {
    slots: Vec<Slot>,
    /// The names back to back.
    text: Vec<u8>,
    used: usize,
    /// The hash's seed, new in every process: names cannot be made to collide in advance (the
    /// frames do not depend on it, only where the slots are).
    pub(crate) seed: u64,
}

const SEMI: u64 = u64::from_ne_bytes([b';'; 8]);
const LOW: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
const K: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline(always)]
fn word(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(K).rotate_left(29)
}

/// Where the name starting at `start` ends (its `;` or the end of `b`) and its hash from `seed`.
#[inline(always)]
pub(crate) fn scan(b: &[u8], start: usize, seed: u64) -> (usize, u64) {
    let mut h = seed;
    let mut i = start;
    while i + 8 <= b.len() {
        let w = word(b, i);
        let x = w ^ SEMI;
        // The lowest byte of `x` that is zero (a `;` in `w`) sets its high bit here; bytes
        // above a zero may be set too, so only the lowest counts.
        let z = x.wrapping_sub(LOW) & !x & HIGH;
        if z != 0 {
            let k = (z.trailing_zeros() / 8) as usize;
            let keep = if k == 0 {
                0
            } else {
                w & (u64::MAX >> (64 - 8 * k))
            };
            return (i + k, mix(h, keep ^ ((k as u64) << 59)));
        }
        h = mix(h, w);
        i += 8;
    }
    let mut tail = 0u64;
    let mut k = 0;
    while i + k < b.len() && b[i + k] != b';' {
        tail |= (b[i + k] as u64) << (8 * k);
        k += 1;
    }
    (i + k, mix(h, tail ^ ((k as u64) << 59)))
}

/// `a == b` for names of equal length, a word at a time, inline.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    let mut i = 0;
    while i + 8 <= n {
        if word(a, i) != word(b, i) {
            return false;
        }
        i += 8;
    }
    if n >= 8 {
        // The last word, overlapping the ones compared.
        return word(a, n - 8) == word(b, n - 8);
    }
    let mut ok = true;
    while i < n {
        ok &= a[i] == b[i];
        i += 1;
    }
    ok
}

impl FrameNames {
    pub(crate) fn new() -> Self {
        FrameNames {
            slots: vec![EMPTY; 1 << 10],
            text: Vec::new(),
            used: 0,
            seed: {
                use std::hash::{BuildHasher, Hasher};
                std::collections::hash_map::RandomState::new()
                    .build_hasher()
                    .finish()
            },
        }
    }

    /// The frame of `name` (whose hash [`scan`] gave), or the one `make` gives, remembered.
    #[inline]
    pub(crate) fn frame(&mut self, name: &[u8], hash: u64, make: impl FnOnce() -> u32) -> u32 {
        let tag = (hash >> 32) as u32;
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let s = self.slots[i];
            if s.frame == u32::MAX {
                break;
            }
            if s.tag == tag && s.len as usize == name.len() {
                let at = s.at as usize;
                if same(name, &self.text[at..at + name.len()]) {
                    return s.frame;
                }
            }
            i = (i + 1) & mask;
        }
        let frame = make();
        // Names beyond 4 GiB of them are not remembered (the IR still interns them).
        let Ok(at) = u32::try_from(self.text.len()) else {
            return frame;
        };
        if u32::try_from(name.len()).is_err() || frame == u32::MAX {
            return frame;
        }
        self.text.extend_from_slice(name);
        self.slots[i] = Slot {
            tag,
            len: name.len() as u32,
            at,
            frame,
        };
        self.used += 1;
        if self.used * 2 > self.slots.len() {
            self.grow();
        }
        frame
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; size]);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.frame != u32::MAX) {
            let at = s.at as usize;
            let (_, hash) = scan(&self.text[at..at + s.len as usize], 0, self.seed);
            let mut i = hash as usize & mask;
            while self.slots[i].frame != u32::MAX {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names of every length around the word size (ASCII, ending in a NUL byte, two-byte UTF-8),
    /// some sharing prefixes; the tests put a `;` after them at several alignments.
    fn names() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for len in 0..40 {
            out.push((0..len).map(|i| b'a' + (i % 26) as u8).collect());
            out.push(
                (0..len)
                    .map(|i| if i == len - 1 { 0 } else { b'x' })
                    .collect(),
            );
            out.push("é".repeat(len / 2).into_bytes());
        }
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn scan_finds_each_separator_and_hashes_a_name_as_it_hashes_alone() {
        let names = names();
        let scan = |b: &[u8], start| scan(b, start, 0x1234_5678_9abc_def0);
        for a in &names {
            let alone = scan(a, 0);
            assert_eq!(alone.0, a.len());
            for b in &names {
                // `a;b` from any starting place in a longer buffer.
                for lead in [0usize, 1, 7, 8, 9] {
                    let mut line = vec![b'z'; lead];
                    line.extend_from_slice(a);
                    line.push(b';');
                    line.extend_from_slice(b);
                    let (end, hash) = scan(&line, lead);
                    assert_eq!(end, lead + a.len(), "{a:?} then {b:?}");
                    assert_eq!(hash, alone.1, "{a:?} then {b:?}");
                    assert_eq!(scan(&line, end + 1), (line.len(), scan(b, 0).1));
                }
            }
        }
    }

    #[test]
    fn each_name_keeps_the_frame_it_was_first_given() {
        let mut table = FrameNames::new();
        let mut made = 0u32;
        let mut all: Vec<Vec<u8>> = names();
        // Enough names for the table to grow several times.
        all.extend((0..5000).map(|i| format!("module::function_{i}").into_bytes()));
        for round in 0..2 {
            for (i, name) in all.iter().enumerate() {
                let frame = table.frame(name, scan(name, 0, table.seed).1, || {
                    made += 1;
                    i as u32
                });
                assert_eq!(
                    frame,
                    i as u32,
                    "round {round}: {:?}",
                    String::from_utf8_lossy(name)
                );
            }
        }
        assert_eq!(made as usize, all.len(), "each name made once");
    }

    /// The slots double only when a name takes them past half full: 512 names keep the first
    /// 1,024 slots, the 513th doubles them.
    #[test]
    fn the_table_grows_only_past_half_full() {
        let mut table = FrameNames::new();
        for i in 0..513u32 {
            let name = format!("f{i}").into_bytes();
            let hash = scan(&name, 0, table.seed).1;
            assert_eq!(table.frame(&name, hash, || i), i);
            let want = if i < 512 { 1024 } else { 2048 };
            assert_eq!(table.slots.len(), want, "after {} names", i + 1);
        }
    }

    #[test]
    fn words_compare_at_every_length() {
        for n in 0..24 {
            let a: Vec<u8> = (0..n as u8).collect();
            assert!(same(&a, &a.clone()));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 1;
                assert!(!same(&a, &b), "length {n}, byte {i}");
            }
        }
    }
}
