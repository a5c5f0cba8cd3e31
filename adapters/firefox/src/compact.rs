//! Compact JSON written straight into fixed-size chunks, for the large columns of a file.
//!
//! The big tables (a profile's stack table has one row per distinct stack) are written here
//! number by number with `itoa`, without going through a serializer per element; everything
//! small goes through serde (`value`). The bytes are the same as `serde_json::to_writer`'s
//! (compact) for the same values: integers in decimal, `null` for `None`, floats through
//! serde_json itself.

use crate::common::Num;
use serde::Serialize;
use std::io::{self, Write};

/// Size of a chunk handed on (the last one may be shorter; one value longer than a chunk, such as
/// a huge string, makes its chunk longer).
pub const CHUNK: usize = 1 << 17;

/// Room kept for one array element: a comma and the longest integer (`-9223372036854775808`).
const ITEM: usize = 24;

/// A buffer handed on to `hand_on` (which returns an empty buffer to go on with) whenever the
/// next write would take it past [`CHUNK`] bytes.
pub struct Chunks<F> {
    buf: Vec<u8>,
    hand_on: F,
}

impl<F: FnMut(Vec<u8>) -> io::Result<Vec<u8>>> Chunks<F> {
    pub fn new(hand_on: F) -> Self {
        Chunks {
            buf: Vec::with_capacity(CHUNK),
            hand_on,
        }
    }

    /// Hands on what the buffer holds (call once at the end).
    pub fn hand(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let full = std::mem::take(&mut self.buf);
            self.buf = (self.hand_on)(full)?;
            self.buf.clear();
        }
        Ok(())
    }

    #[inline]
    fn room(&mut self, n: usize) -> io::Result<()> {
        if self.buf.len() + n > CHUNK {
            self.hand()?;
        }
        Ok(())
    }

    /// Bytes as they are (punctuation and keys).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.room(bytes.len())?;
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// A value through serde_json (compact).
    pub fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> io::Result<()> {
        serde_json::to_writer(&mut *self, v).map_err(io::Error::from)
    }

    /// `[a,b,...]`.
    pub fn array<T: Item>(&mut self, items: impl Iterator<Item = T>) -> io::Result<()> {
        self.raw(b"[")?;
        let mut sep = false;
        for item in items {
            self.room(ITEM)?;
            item.put(&mut self.buf, sep)?;
            sep = true;
        }
        self.raw(b"]")
    }
}

impl<F: FnMut(Vec<u8>) -> io::Result<Vec<u8>>> Write for Chunks<F> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.raw(data)?;
        Ok(data.len())
    }

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.raw(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An array element [`Chunks::array`] writes itself.
pub trait Item: Copy {
    /// Appends the element's JSON, after a comma if `comma` (at most [`ITEM`] bytes for
    /// integers).
    fn put(self, buf: &mut Vec<u8>, comma: bool) -> io::Result<()>;
}

impl Item for u32 {
    /// The bytes are assembled in a register and appended as one 16-byte array, then cut to
    /// length: no `memcpy` call for a few bytes, and no reading back of bytes just stored.
    #[inline]
    fn put(self, buf: &mut Vec<u8>, comma: bool) -> io::Result<()> {
        // The last digit first: each next one (to the left) shifts the others up a byte, so
        // the first digit ends in the lowest byte, which comes first in little-endian order.
        let (mut v, mut bytes, mut n) = (self, 0u128, 0);
        loop {
            bytes = (bytes << 8) | (b'0' + (v % 10) as u8) as u128;
            n += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        if comma {
            bytes = (bytes << 8) | b',' as u128;
            n += 1;
        }
        let len = buf.len();
        buf.extend_from_slice(&bytes.to_le_bytes());
        buf.truncate(len + n);
        Ok(())
    }
}

impl Item for Option<u32> {
    #[inline]
    fn put(self, buf: &mut Vec<u8>, comma: bool) -> io::Result<()> {
        match self {
            Some(v) => v.put(buf, comma),
            None => {
                buf.extend_from_slice(if comma { b",null" } else { b"null" });
                Ok(())
            }
        }
    }
}

impl Item for Num {
    #[inline]
    fn put(self, buf: &mut Vec<u8>, comma: bool) -> io::Result<()> {
        if comma {
            buf.push(b',');
        }
        match self {
            Num::I(v) => buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
            Num::U(v) => buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
            // Exactly as serde_json writes an f64 (shortest round trip; `null` if not finite).
            Num::F(v) => serde_json::to_writer(&mut *buf, &v).map_err(io::Error::from)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(
        f: impl FnOnce(&mut Chunks<&mut dyn FnMut(Vec<u8>) -> io::Result<Vec<u8>>>),
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut hand_on = |b: Vec<u8>| -> io::Result<Vec<u8>> {
            out.extend_from_slice(&b);
            Ok(b)
        };
        let mut w = Chunks::new(&mut hand_on as &mut dyn FnMut(Vec<u8>) -> io::Result<Vec<u8>>);
        f(&mut w);
        w.hand().unwrap();
        drop(w);
        out
    }

    #[test]
    fn columns_are_written_as_serde_json_writes_them() {
        let nums = [
            Num::I(0),
            Num::I(-1),
            Num::I(i64::MIN),
            Num::I(i64::MAX),
            Num::U(u64::MAX),
            Num::F(0.0015),
            Num::F(-31.23),
            Num::F(1e300),
            Num::F(f64::NAN),
        ];
        let opts = [Some(0u32), None, Some(u32::MAX), Some(7)];
        let mut ints: Vec<u32> = (0..100_000).map(|i| i * 4099).collect();
        ints.extend([
            0,
            9,
            10,
            99,
            100,
            999,
            1000,
            65535,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ]);
        ints.extend((0..10).map(|d| 10u32.pow(d)));
        ints.extend((1..10).map(|d| 10u32.pow(d) - 1));
        let got = compact(|w| {
            w.array(nums.iter().copied()).unwrap();
            w.array(opts.iter().copied()).unwrap();
            w.array(ints.iter().copied()).unwrap();
            w.array(std::iter::empty::<u32>()).unwrap();
            w.value(&("x", 1)).unwrap();
        });
        let mut want = serde_json::to_vec(&nums).unwrap();
        want.extend(serde_json::to_vec(&opts).unwrap());
        want.extend(serde_json::to_vec(&ints).unwrap());
        want.extend(b"[]");
        want.extend(serde_json::to_vec(&("x", 1)).unwrap());
        assert!(want.len() > 2 * CHUNK, "crosses chunks");
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}
