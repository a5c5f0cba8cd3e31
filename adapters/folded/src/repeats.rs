//! [`RepeatedStacks`]: the leaf stack of each stack text already in the profile, so that a line
//! repeating an earlier line's stack costs one hash of its text and one probe, instead of a
//! name lookup and a step down the stack index for each of its frames.
//!
//! Unsorted folded files repeat stacks: 30 % of the lines of the generated 1 GB benchmark file
//! repeat an earlier line's stack, and a collapser that does not sum (or a concatenation of
//! several captures) repeats far more. Reading only the first line of each stack measured 0.35 s
//! less CPU on that file's 1.9 s.
//!
//! The texts are not kept (a line is about 1 KB there): a text is known by its 128-bit XXH3 hash,
//! seeded anew in every process (so texts cannot be chosen in advance to collide). A slot keeps
//! 96 of those bits (the upper half, whose low bits also pick the slot, so the slot's place adds
//! none, and 32 more); two different stack texts would be taken for one only if they agreed in
//! all 96, which for a million distinct stacks has odds around 10⁻¹⁷, far below those of a
//! memory error.

use prefetch_index::prefetch_index;
use profconv_plugin::ir::NONE;
use xxhash_rust::xxh3::xxh3_128_with_secret;

/// What is kept of a stack text's hash.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct TextKey {
    /// The hash's upper half: its low bits give the slot.
    hi: u64,
    /// 32 more bits of it.
    lo: u32,
}

/// A key and its leaf stack, in 16 bytes.
#[derive(Clone, Copy)]
struct Slot {
    hi: u64,
    lo: u32,
    /// `NONE` in an empty slot.
    leaf: u32,
}

impl Slot {
    #[inline]
    fn key(&self) -> TextKey {
        TextKey {
            hi: self.hi,
            lo: self.lo,
        }
    }
}

const EMPTY: Slot = Slot {
    hi: 0,
    lo: 0,
    leaf: NONE,
};

/// The most slots (8 MiB): past three quarters of them, new texts are no longer remembered
/// (memory stays bounded; repeats of the texts remembered are still found).
const MAX_SLOTS: usize = 1 << 19;

/// Lines looked up between two checks of how many repeat.
const WINDOW: u32 = 1 << 16;

/// Leaf stacks by stack text (16 bytes a slot, at most three quarters used), behind a bitmap.
///
/// Turned off for good (its memory freed) at the end of a window of [`WINDOW`] lookups of which
/// fewer than a quarter found their text: every line pays a hash and each new text an insertion,
/// which lines that seldom repeat do not earn back (kept on, a 723 MB file of distinct lines took
/// 0.15 s more). Measured, one thread: the generated 1 GB file, 30 % of whose lines repeat, 5 %
/// less CPU; 1 GB of 1 000 distinct stacks, 60 % less.
pub(crate) struct RepeatedStacks {
    /// Empty once turned off.
    slots: Vec<Slot>,
    /// Bit `lo % (64 * seen.len())` set for each key in `slots`: most new texts are told new
    /// here, in a bitmap small enough for the caches (8 bits a slot: a sixteenth of the slots'
    /// size), without the cache miss of a probe into the slots (measured: that miss was 7 % of
    /// the 1 GB parse).
    seen: Vec<u64>,
    used: usize,
    /// XXH3's secret, from the seed (deriving it for each text, as `xxh3_128_with_seed` does
    /// for texts over 240 bytes, costs more than hashing them).
    secret: [u8; 192],
    /// Lookups and texts found in the current window.
    lookups: u32,
    found: u32,
}

impl RepeatedStacks {
    pub(crate) fn new(seed: u64) -> Self {
        RepeatedStacks {
            slots: vec![EMPTY; 1 << 10],
            seen: vec![0; (1 << 10) / 8],
            used: 0,
            secret: secret_of(seed),
            lookups: 0,
            found: 0,
        }
    }

    /// A table that is off from the start.
    pub(crate) fn off() -> Self {
        RepeatedStacks {
            slots: Vec::new(),
            seen: Vec::new(),
            used: 0,
            secret: [0; 192],
            lookups: 0,
            found: 0,
        }
    }

    /// Whether texts are still looked up and remembered.
    #[inline]
    pub(crate) fn on(&self) -> bool {
        !self.slots.is_empty()
    }

    #[inline]
    fn seen_bit(&self, key: TextKey) -> (usize, u64) {
        let bit = key.lo as usize & (self.seen.len() * 64 - 1);
        (bit / 64, 1 << (bit % 64))
    }

    /// The key of the stack text `text` (`a;b;c`).
    #[inline]
    pub(crate) fn key(&self, text: &[u8]) -> TextKey {
        let h = xxh3_128_with_secret(text, &self.secret);
        TextKey {
            hi: (h >> 64) as u64,
            lo: h as u32,
        }
    }

    /// Starts loading the bitmap's word and the first slot that [`Self::insert`] writes for
    /// `key` (a hint: nothing is read, nothing changes).
    #[inline]
    pub(crate) fn prefetch(&self, key: TextKey) {
        if self.on() {
            prefetch_index(&self.slots, key.hi as usize & (self.slots.len() - 1));
            prefetch_index(&self.seen, self.seen_bit(key).0);
        }
    }

    /// The leaf stack of the text of `key`, or `NONE` if it has not been [`Self::insert`]ed (or
    /// the table is off).
    #[inline]
    pub(crate) fn get(&mut self, key: TextKey) -> u32 {
        if !self.on() {
            return NONE;
        }
        let leaf = self.find(key);
        self.lookups += 1;
        self.found += (leaf != NONE) as u32;
        if self.lookups == WINDOW {
            if self.found < WINDOW / 4 {
                *self = RepeatedStacks::off();
            }
            (self.lookups, self.found) = (0, 0);
        }
        leaf
    }

    #[inline]
    fn find(&self, key: TextKey) -> u32 {
        let (w, b) = self.seen_bit(key);
        if self.seen[w] & b == 0 {
            return NONE;
        }
        let mask = self.slots.len() - 1;
        let mut i = key.hi as usize & mask;
        loop {
            let s = self.slots[i];
            if s.leaf == NONE || s.key() == key {
                return s.leaf;
            }
            i = (i + 1) & mask;
        }
    }

    /// Remembers `leaf` as the stack of the text of `key` (kept if it is already known: a text
    /// always gives the same stack).
    #[inline]
    pub(crate) fn insert(&mut self, key: TextKey, leaf: u32) {
        debug_assert_ne!(leaf, NONE);
        if !self.on() || self.used * 4 >= MAX_SLOTS * 3 {
            return;
        }
        let mask = self.slots.len() - 1;
        let mut i = key.hi as usize & mask;
        loop {
            let s = &mut self.slots[i];
            if s.leaf == NONE {
                *s = Slot {
                    hi: key.hi,
                    lo: key.lo,
                    leaf,
                };
                break;
            }
            if s.key() == key {
                debug_assert_eq!(s.leaf, leaf, "one text, two stacks");
                return;
            }
            i = (i + 1) & mask;
        }
        let (w, b) = self.seen_bit(key);
        self.seen[w] |= b;
        self.used += 1;
        if self.used * 4 > self.slots.len() * 3 && self.slots.len() < MAX_SLOTS {
            self.grow();
        }
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; size]);
        self.seen = vec![0; size / 8];
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.leaf != NONE) {
            let (w, b) = self.seen_bit(s.key());
            self.seen[w] |= b;
            let mut i = s.hi as usize & mask;
            while self.slots[i].leaf != NONE {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

/// A 192-byte XXH3 secret from `seed` (splitmix64).
fn secret_of(seed: u64) -> [u8; 192] {
    let mut out = [0u8; 192];
    let mut x = seed;
    for chunk in out.chunks_exact_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_text_keeps_its_stack_through_growth() {
        let mut t = RepeatedStacks::new(0x5eed);
        let texts: Vec<String> = (0..5000).map(|i| format!("main;work_{i};leaf")).collect();
        for (i, text) in texts.iter().enumerate() {
            let k = t.key(text.as_bytes());
            assert_eq!(t.get(k), NONE, "{text} is new");
            t.insert(k, i as u32);
            // Inserting again keeps it.
            t.insert(k, i as u32);
        }
        assert!(t.slots.len() >= 5000 * 4 / 3, "grew to {}", t.slots.len());
        for (i, text) in texts.iter().enumerate() {
            assert_eq!(t.get(t.key(text.as_bytes())), i as u32, "{text}");
        }
        // Texts that differ in one byte, or only in length, are different keys.
        assert_eq!(t.get(t.key(b"main;work_1;lea")), NONE);
        assert_eq!(t.get(t.key(b"main;work_1;leaf;")), NONE);
        assert_eq!(t.get(t.key(b"main;work_1;leag")), NONE);
        assert_eq!(t.used, 5000);
    }

    /// The secret is SplitMix64's output from the seed (its published first values from 0),
    /// so a text's key depends on the process's seed: texts cannot be chosen in advance to
    /// collide.
    #[test]
    fn the_secret_is_splitmix64_of_the_seed() {
        let s = secret_of(0);
        for (i, want) in [
            0xE220_A839_7B1D_CDAF_u64,
            0x6E78_9E6A_A1B9_65F4,
            0x06C4_5D18_8009_454F,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(s[8 * i..8 * i + 8], want.to_le_bytes(), "word {i}");
        }
        let text = b"main;work;leaf";
        assert_ne!(
            RepeatedStacks::new(1).key(text),
            RepeatedStacks::new(2).key(text)
        );
    }

    fn key(i: u64) -> TextKey {
        TextKey {
            hi: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            lo: (i >> 7) as u32 ^ i as u32,
        }
    }

    #[test]
    fn a_window_where_few_texts_repeat_turns_the_table_off() {
        let mut t = RepeatedStacks::new(1);
        for i in 0..WINDOW as u64 - 1 {
            assert_eq!(t.get(key(i)), NONE);
            t.insert(key(i), i as u32);
        }
        assert!(t.on());
        // The window's last lookup: none found, so off, its memory freed.
        assert_eq!(t.get(key(0)), 0);
        assert!(!t.on());
        assert_eq!((t.slots.capacity(), t.seen.capacity()), (0, 0));
        assert_eq!(t.get(key(1)), NONE);
        t.insert(key(1), 1);
        assert_eq!(t.get(key(1)), NONE);
    }

    #[test]
    fn a_window_where_a_quarter_repeat_keeps_it() {
        let mut t = RepeatedStacks::new(1);
        for i in 0..3 * WINDOW as u64 {
            // Every fourth lookup is of the text before.
            let k = if i % 4 == 3 { key(i - 1) } else { key(i) };
            if t.get(k) == NONE {
                t.insert(k, i as u32);
            }
        }
        assert!(t.on());
        assert_eq!(t.get(key(0)), 0);
    }

    /// The bitmap tells most texts never inserted new without a probe into the slots (its
    /// point: the probe's cache miss was 7 % of a 1 GB parse), so each key sets a bit of its own.
    #[test]
    fn most_new_texts_are_told_new_by_the_bitmap() {
        let mut t = RepeatedStacks::new(1);
        for i in 0..1000 {
            t.insert(key(i), i as u32);
        }
        let bits: u32 = t.seen.iter().map(|w| w.count_ones()).sum();
        assert!(bits > 900, "{bits} bits for 1000 keys");
        let told_new = (1000..11_000)
            .filter(|&i| {
                let (w, b) = t.seen_bit(key(i));
                t.seen[w] & b == 0
            })
            .count();
        assert!(told_new > 8000, "{told_new} of 10000 told new");
        // Each inserted text is still found through its bit.
        assert!((0..1000).all(|i| t.find(key(i)) == i as u32));
    }

    /// The slots double only when an insertion takes them past three quarters full: a file of
    /// few distinct stacks keeps the first 1,024 slots (16 KiB), not the 8 MiB of the most.
    #[test]
    fn the_table_grows_only_past_three_quarters_full() {
        let mut t = RepeatedStacks::new(1);
        for i in 0..768 {
            t.insert(key(i), i as u32);
        }
        assert_eq!((t.slots.len(), t.seen.len()), (1024, 128));
        t.insert(key(768), 768);
        assert_eq!((t.slots.len(), t.seen.len()), (2048, 256));
    }

    #[test]
    fn memory_is_bounded_and_the_first_texts_stay_found() {
        let mut t = RepeatedStacks::new(1);
        let n = MAX_SLOTS as u64;
        for i in 0..n {
            t.insert(key(i), i as u32);
        }
        assert_eq!(t.slots.len(), MAX_SLOTS);
        assert_eq!(t.used, MAX_SLOTS * 3 / 4);
        assert_eq!(t.find(key(0)), 0);
        assert_eq!(t.find(key(n * 3 / 4 - 1)), (n * 3 / 4 - 1) as u32);
        assert_eq!(t.find(key(n * 3 / 4)), NONE);
    }
}
