//! Byte-level primitives of Deep.data as nom parsers (spec §2): `num` (big-endian base-128
//! variable-length unsigned integer), `fixed64` (little-endian 8 bytes), `str` (`num` length then
//! raw bytes) and raw bytes, plus the error type that remembers where and what failed.

use nom::error::{ContextError, ErrorKind, ParseError};
use nom::{IResult, Parser};

/// The longest `num` accepted: 10 bytes hold 70 bits, enough for any 64-bit value (spec §2).
pub(crate) const MAX_NUM_BYTES: usize = 10;

/// What went wrong at a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// The input ended before the item was complete.
    Eof,
    /// A `num` whose bytes all have the continuation bit set for more than 10 bytes.
    NumTooLong,
    /// A `num` whose value does not fit in 64 bits.
    NumOverflow,
    /// A string whose length is more than what remains of the input.
    StrTooLong { len: u64 },
    /// A nom parser failed (a tag or digit run that is not there).
    Nom(ErrorKind),
}

/// A syntax error: where it happened (the rest of the input there), what went wrong, and what
/// was being read (the innermost `context`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DErr<'a> {
    pub at: &'a [u8],
    pub problem: Problem,
    pub what: Option<&'static str>,
}

impl<'a> DErr<'a> {
    pub fn new(at: &'a [u8], problem: Problem) -> Self {
        DErr {
            at,
            problem,
            what: None,
        }
    }
}

impl<'a> ParseError<&'a [u8]> for DErr<'a> {
    fn from_error_kind(input: &'a [u8], kind: ErrorKind) -> Self {
        let problem = if kind == ErrorKind::Eof {
            Problem::Eof
        } else {
            Problem::Nom(kind)
        };
        DErr::new(input, problem)
    }

    fn append(_: &'a [u8], _: ErrorKind, other: Self) -> Self {
        other
    }
}

impl<'a> ContextError<&'a [u8]> for DErr<'a> {
    /// The innermost context names the field; outer ones are ignored.
    fn add_context(_input: &'a [u8], ctx: &'static str, mut other: Self) -> Self {
        if other.what.is_none() {
            other.what = Some(ctx);
        }
        other
    }
}

/// A nom result over bytes with [`DErr`].
pub(crate) type PResult<'a, T> = IResult<&'a [u8], T, DErr<'a>>;

fn fail<'a, T>(at: &'a [u8], problem: Problem) -> PResult<'a, T> {
    Err(nom::Err::Error(DErr::new(at, problem)))
}

/// `num`: 7-bit groups, most significant first; every byte but the last has bit 0x80 set.
/// At most [`MAX_NUM_BYTES`] bytes, and the value must fit in 64 bits.
#[inline(always)]
pub(crate) fn num(i: &[u8]) -> PResult<'_, u64> {
    match i {
        [b, rest @ ..] if *b < 0x80 => Ok((rest, *b as u64)),
        [b, c, rest @ ..] if *c < 0x80 => Ok((rest, ((*b & 0x7f) as u64) << 7 | *c as u64)),
        [b, c, d, rest @ ..] if *d < 0x80 => Ok((
            rest,
            ((*b & 0x7f) as u64) << 14 | ((*c & 0x7f) as u64) << 7 | *d as u64,
        )),
        _ => num_long(i),
    }
}

/// `num` of any length (up to three bytes are handled inline by [`num`]). The first
/// nine bytes hold at most 63 bits, so only the tenth can overflow.
#[inline(never)]
fn num_long(i: &[u8]) -> PResult<'_, u64> {
    let n = i.len().min(MAX_NUM_BYTES - 1);
    let mut v = 0u64;
    let mut k = 0;
    while k < n {
        let b = i[k];
        v = (v << 7) | (b & 0x7f) as u64;
        k += 1;
        if b < 0x80 {
            return Ok((&i[k..], v));
        }
    }
    match i.get(MAX_NUM_BYTES - 1) {
        None => fail(i, Problem::Eof),
        Some(&b) if b >= 0x80 => fail(i, Problem::NumTooLong),
        Some(_) if v > (u64::MAX >> 7) => fail(i, Problem::NumOverflow),
        Some(&b) => Ok((&i[MAX_NUM_BYTES..], (v << 7) | b as u64)),
    }
}

/// Skips `count` `num`s already checked by a parse (no decoding, no limits).
#[inline]
pub(crate) fn skip_nums(i: &[u8], count: usize) -> Option<&[u8]> {
    let mut k = 0;
    for _ in 0..count {
        k += i.get(k..)?.iter().position(|&b| b < 0x80)? + 1;
    }
    i.get(k..)
}

/// `str`: a `num` length, then that many raw bytes (returned as a slice of the input).
#[inline]
pub(crate) fn string(i: &[u8]) -> PResult<'_, &[u8]> {
    let (rest, len) = num(i)?;
    if len > rest.len() as u64 {
        return fail(i, Problem::StrTooLong { len });
    }
    let n = len as usize;
    Ok((&rest[n..], &rest[..n]))
}

/// One raw byte.
#[inline]
pub(crate) fn byte(i: &[u8]) -> PResult<'_, u8> {
    nom::number::complete::u8.parse(i)
}

/// `fixed64`: 8 bytes, least significant first.
#[inline]
pub(crate) fn fixed64(i: &[u8]) -> PResult<'_, u64> {
    nom::number::complete::le_u64.parse(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(bytes: &[u8]) -> Result<(usize, u64), Problem> {
        match num(bytes) {
            Ok((rest, v)) => Ok((bytes.len() - rest.len(), v)),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.problem),
            Err(nom::Err::Incomplete(_)) => unreachable!("complete parsers"),
        }
    }

    #[test]
    fn spec_examples() {
        assert_eq!(n(&[0x05]), Ok((1, 5)));
        assert_eq!(n(&[0x00]), Ok((1, 0)));
        assert_eq!(n(&[0x7f]), Ok((1, 127)));
        assert_eq!(n(&[0x81, 0x00]), Ok((2, 128)));
        assert_eq!(n(&[0x82, 0x0a]), Ok((2, 266)));
        assert_eq!(n(&[0x81, 0x80, 0x00, 0x55]), Ok((3, 16384)));
        // Redundant leading 0x80 groups are accepted, as mdprof does.
        assert_eq!(n(&[0x80, 0x80, 0x05]), Ok((3, 5)));
    }

    #[test]
    fn limits() {
        // u64::MAX: 1 then nine groups of 7 bits = 10 bytes.
        let mut max = vec![0x81];
        max.extend([0xff; 8]);
        max.push(0x7f);
        assert_eq!(n(&max), Ok((10, u64::MAX)));
        let mut over = vec![0x82];
        over.extend([0xff; 8]);
        over.push(0x7f);
        assert_eq!(n(&over), Err(Problem::NumOverflow));
        assert_eq!(n(&[0x80; 10]), Err(Problem::NumTooLong));
        assert_eq!(n(&[0x80; 64]), Err(Problem::NumTooLong));
        assert_eq!(n(&[0x80; 9]), Err(Problem::Eof));
        assert_eq!(n(&[]), Err(Problem::Eof));
    }

    #[test]
    fn strings() {
        assert_eq!(
            string(b"\x03abcd").map(|(r, s)| (r.len(), s)),
            Ok((1, &b"abc"[..]))
        );
        let e = string(b"\x05ab").unwrap_err();
        let nom::Err::Error(e) = e else { panic!() };
        assert_eq!(e.problem, Problem::StrTooLong { len: 5 });
    }
}
