//! The interned string table: one UTF-8 blob plus offsets, shared by every other table.

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Index of a string in a [`StringTable`].
pub type StrId = u32;

/// Interned strings stored back to back in one blob.
///
/// `offsets` has one more entry than there are strings; string `i` is
/// `blob[offsets[i]..offsets[i + 1]]`. Offsets are 64-bit so the blob is never capped at 4 GiB.
/// Hashing uses a fixed seed: interning order, and so every id, is deterministic.
#[derive(Clone)]
pub struct StringTable {
    blob: String,
    offsets: Vec<u64>,
    /// Each string's id and the 32 bits of its hash the table uses ([`table_hash`]): growing
    /// the table moves entries without reading or hashing their strings again (with millions
    /// of distinct names that was a sixth of a folded parse), and a probe compares the strings
    /// only when those bits agree.
    index: HashTable<(StrId, u32)>,
    hasher: FixedState,
}

/// The 32 bits of a string's hash kept in the index.
#[inline]
fn short_hash(hash: u64) -> u32 {
    (hash >> 32) as u32 ^ hash as u32
}

/// The index's hash of an entry: its 32 bits in both halves, so the table's bucket (low bits)
/// and tag (top bits) both come from them.
#[inline]
fn table_hash(short: u32) -> u64 {
    u64::from(short) << 32 | u64::from(short)
}

impl Default for StringTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for StringTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Orders the byte string `a` followed by the byte `a_end` against `b` followed by `b_end`
/// (a name and what follows it on a folded line, `;` or a space), with one `memcmp` of the
/// common length instead of comparing byte after byte.
#[inline]
pub fn cmp_terminated(a: &[u8], a_end: u8, b: &[u8], b_end: u8) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        Ordering::Equal => {}
        o => return o,
    }
    match a.len().cmp(&b.len()) {
        Ordering::Equal => a_end.cmp(&b_end),
        // `a + a_end` is the shorter unless `a_end` differs from `b`'s next byte.
        Ordering::Less => a_end.cmp(&b[n]).then(Ordering::Less),
        Ordering::Greater => a[n].cmp(&b_end).then(Ordering::Greater),
    }
}

/// Ids `0..n` ordered by their byte strings (`bytes(id)`, followed by the byte `end` when
/// given: a name and the `;` after it on a folded line), equal strings by id.
///
/// A most-significant-first radix sort by 8-byte chunks: one sort of (chunk, id) keys, then,
/// only within runs whose chunks are equal, a sort by the next chunk. With millions of names
/// a comparison sort reads two names at random places per comparison (cache misses), and
/// names that share a long prefix (`_ZN4core3ptr…`, `std::…`) defeat any fixed-length key;
/// here each name is read about once per 8 bytes of prefix it shares.
pub fn order_by_bytes<'a>(n: usize, bytes: impl Fn(u32) -> &'a [u8], end: Option<u8>) -> Vec<u32> {
    // The 8 bytes of the string from `at` (zero-padded, big-endian, so they order as the
    // bytes do) and how many of them exist (a shorter string orders first).
    let chunk = |id: u32, at: usize| -> (u64, u8) {
        let b = bytes(id);
        let len = b.len() + usize::from(end.is_some());
        let mut k = [0u8; 8];
        let have = len.saturating_sub(at).min(8);
        for (j, slot) in k.iter_mut().enumerate().take(have) {
            *slot = match b.get(at + j) {
                Some(&c) => c,
                None => end.unwrap_or(0),
            };
        }
        (u64::from_be_bytes(k), have as u8)
    };
    let mut keyed: Vec<(u64, u8, u32)> = (0..n as u32)
        .map(|id| {
            let (c, h) = chunk(id, 0);
            (c, h, id)
        })
        .collect();
    keyed.sort_unstable();
    // Runs of equal full chunks go on by the next chunk, until they differ or end.
    let mut todo: Vec<(usize, usize, usize)> = vec![(0, keyed.len(), 0)];
    while let Some((start, stop, at)) = todo.pop() {
        let mut i = start;
        while i < stop {
            let mut j = i + 1;
            while j < stop && keyed[j].0 == keyed[i].0 && keyed[j].1 == keyed[i].1 {
                j += 1;
            }
            // Equal and not ended (8 bytes present): the strings may still differ further on.
            if j - i > 1 && keyed[i].1 == 8 {
                let next = at + 8;
                for e in &mut keyed[i..j] {
                    let (c, h) = chunk(e.2, next);
                    (e.0, e.1) = (c, h);
                }
                keyed[i..j].sort_unstable();
                todo.push((i, j, next));
            }
            i = j;
        }
    }
    keyed.into_iter().map(|(_, _, id)| id).collect()
}

/// The bytes of string `id` in a blob and its offsets (one function for every lookup, so the
/// index's equality and rehash read strings exactly as [`StringTable::get`] does).
#[inline]
fn bytes_of<'a>(blob: &'a str, offsets: &[u64], id: StrId) -> &'a [u8] {
    let i = id as usize;
    &blob.as_bytes()[offsets[i] as usize..offsets[i + 1] as usize]
}

impl StringTable {
    /// An empty table.
    pub fn new() -> Self {
        StringTable {
            blob: String::new(),
            offsets: vec![0],
            index: HashTable::new(),
            hasher: FixedState::with_seed(0x5052_4643_4e56_4952),
        }
    }

    /// Rebuilds a table (and its index) from a blob and offsets already known to be valid.
    /// Ids are kept exactly, even when a string appears twice (another producer may not have
    /// deduplicated): the index then finds the first copy.
    pub fn from_parts(blob: &str, offsets: &[u64]) -> Self {
        let mut table = StringTable::new();
        table.blob.push_str(blob);
        table.offsets = offsets.to_vec();
        for id in 0..table.len() as StrId {
            let s = table.get(id);
            let short = short_hash(table.hasher.hash_one(s.as_bytes()));
            let (blob, offsets) = (&table.blob, &table.offsets);
            let bytes = |i: StrId| bytes_of(blob, offsets, i);
            if table
                .index
                .find(table_hash(short), |&(o, h)| {
                    h == short && bytes(o) == s.as_bytes()
                })
                .is_none()
            {
                table
                    .index
                    .insert_unique(table_hash(short), (id, short), |&(_, h)| table_hash(h));
            }
        }
        table
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True when no string was interned.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The string with id `id`. Panics if `id` is out of range (an internal invariant).
    pub fn get(&self, id: StrId) -> &str {
        let i = id as usize;
        &self.blob[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The id of `s`, adding it if it is new.
    #[inline]
    pub fn intern(&mut self, s: &str) -> StrId {
        let short = short_hash(self.hasher.hash_one(s.as_bytes()));
        let (blob, offsets) = (&self.blob, &self.offsets);
        let eq =
            |&(id, h): &(StrId, u32)| h == short && bytes_of(blob, offsets, id) == s.as_bytes();
        if let Some(&(id, _)) = self.index.find(table_hash(short), eq) {
            return id;
        }
        let id = self.len() as StrId;
        self.blob.push_str(s);
        self.offsets.push(self.blob.len() as u64);
        self.index
            .insert_unique(table_hash(short), (id, short), |&(_, h)| table_hash(h));
        id
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        let short = short_hash(self.hasher.hash_one(s.as_bytes()));
        self.index
            .find(table_hash(short), |&(id, h)| {
                h == short && self.get(id).as_bytes() == s.as_bytes()
            })
            .map(|&(id, _)| id)
    }

    /// The blob holding every string back to back.
    pub fn blob(&self) -> &str {
        &self.blob
    }

    /// The `len() + 1` offsets into [`blob`](Self::blob).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// Every string in id order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.offsets
            .windows(2)
            .map(|w| &self.blob[w[0] as usize..w[1] as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_ordered_by_their_bytes() {
        let mut rng = crate::testing::XorShift::new(7);
        for round in 0..300 {
            let n = 1 + rng.below(60) as usize;
            // Few letters, long shared prefixes, NUL and `;` bytes, empty strings.
            let prefix = "_ZN4core3ptr13drop_in_place".repeat(rng.below(3) as usize);
            let names: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let mut v =
                        prefix.as_bytes()[..rng.below(prefix.len() as u64 + 1) as usize].to_vec();
                    for _ in 0..rng.below(20) {
                        v.push(b"ab;\0 z-"[rng.below(7) as usize]);
                    }
                    v
                })
                .collect();
            for end in [None, Some(b';'), Some(b' ')] {
                let got = order_by_bytes(n, |i| &names[i as usize], end);
                let mut want: Vec<u32> = (0..n as u32).collect();
                let full = |i: u32| [names[i as usize].clone(), end.into_iter().collect()].concat();
                want.sort_by(|&a, &b| full(a).cmp(&full(b)).then(a.cmp(&b)));
                assert_eq!(got, want, "round {round} end {end:?}");
            }
        }
    }

    #[test]
    fn terminated_names_compare_as_their_bytes() {
        let parts: [&[u8]; 8] = [b"", b"a", b"a;", b"a ", b"ab", b"a\0", b";", b"\xff"];
        for a in parts {
            for b in parts {
                for ea in [b';', b' ', 0u8] {
                    for eb in [b';', b' ', 0u8] {
                        let plain = [a, &[ea][..]].concat().cmp(&[b, &[eb][..]].concat());
                        assert_eq!(cmp_terminated(a, ea, b, eb), plain, "{a:?}{ea} {b:?}{eb}");
                    }
                }
            }
        }
    }

    #[test]
    fn interning_is_idempotent_and_ordered() {
        let mut t = StringTable::new();
        let a = t.intern("alpha");
        let b = t.intern("beta");
        assert_eq!((a, b), (0, 1));
        assert_eq!(t.intern("alpha"), a);
        assert_eq!(t.get(b), "beta");
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup("gamma"), None);
        assert_eq!(t.intern(""), 2);
        assert_eq!(t.get(2), "");
        let copy = StringTable::from_parts(t.blob(), t.offsets());
        assert_eq!(copy.iter().collect::<Vec<_>>(), vec!["alpha", "beta", ""]);
        assert_eq!(copy.lookup("beta"), Some(1));
        // A foreign table with a duplicate keeps every id.
        let dup = StringTable::from_parts("abab", &[0, 2, 4]);
        assert_eq!(
            (dup.len(), dup.get(1), dup.lookup("ab")),
            (2, "ab", Some(0))
        );
    }
}
