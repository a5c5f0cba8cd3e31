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
    index: HashTable<StrId>,
    hasher: FixedState,
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
            let hash = table.hasher.hash_one(s.as_bytes());
            let (blob, offsets, hasher) = (&table.blob, &table.offsets, &table.hasher);
            let bytes = |i: StrId| bytes_of(blob, offsets, i);
            if table
                .index
                .find(hash, |&o| bytes(o) == s.as_bytes())
                .is_none()
            {
                table
                    .index
                    .insert_unique(hash, id, |&o| hasher.hash_one(bytes(o)));
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
        let hash = self.hasher.hash_one(s.as_bytes());
        let (blob, offsets) = (&self.blob, &self.offsets);
        let eq = |&id: &StrId| bytes_of(blob, offsets, id) == s.as_bytes();
        if let Some(&id) = self.index.find(hash, eq) {
            return id;
        }
        let id = self.len() as StrId;
        self.blob.push_str(s);
        self.offsets.push(self.blob.len() as u64);
        let (blob, offsets, hasher) = (&self.blob, &self.offsets, &self.hasher);
        self.index.insert_unique(hash, id, |&other| {
            hasher.hash_one(bytes_of(blob, offsets, other))
        });
        id
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        let hash = self.hasher.hash_one(s.as_bytes());
        self.index
            .find(hash, |&id| self.get(id).as_bytes() == s.as_bytes())
            .copied()
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
