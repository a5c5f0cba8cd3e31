//! Reading a Deep.data file into its four record tables, stored by id (spec §3–§10), then
//! checking that every reference resolves (spec §11).
//!
//! Nothing is allocated from the header's claims before they are checked against the bytes that
//! follow: every record needs a minimum number of bytes, so counts that the rest of the file
//! cannot hold are an error, and the id-indexed tables are at most a small multiple of the input
//! size. Lists inside records (slots, call sites, coverage points) are read item by item; each
//! item consumes input, so a claimed length never drives an allocation or an endless loop.

use crate::read::{DErr, PResult, Problem, byte, fixed64, num, skip_nums, string};
use nom::Parser;
use nom::bytes::complete::tag;
use nom::character::complete::digit1;
use nom::error::context;
use profconv_plugin::{MAX_VALUE, PluginError, too_large};

/// The identifying line's prefix (spec §3.1).
pub const ID_PREFIX: &[u8] = b"Mercury deep profiler data version ";
/// mdprof reads at most this many bytes looking for the identifying line's newline.
const ID_LINE_MAX: usize = ID_PREFIX.len() + 10;

/// Record tokens (spec §4).
const TOKEN_END: u8 = 0;
const TOKEN_CSS: u8 = 1;
const TOKEN_CSD: u8 = 2;
const TOKEN_PS: u8 = 3;
const TOKEN_PD: u8 = 4;

/// Index of each measurement in [`Measures::values`].
pub mod m {
    /// Profiling samples.
    pub const QUANTA: usize = 0;
    /// Call sequence counts (calls counted at call ports).
    pub const CALL_SEQS: usize = 1;
    /// Heap allocations.
    pub const ALLOCS: usize = 2;
    /// Heap words allocated.
    pub const WORDS: usize = 3;
    /// Exit port events.
    pub const EXITS: usize = 4;
    /// Fail port events.
    pub const FAILS: usize = 5;
    /// Redo port events.
    pub const REDOS: usize = 6;
    /// Exits by exception.
    pub const EXCPS: usize = 7;
    /// Number of measurements kept per proc-dynamic.
    pub const N: usize = 8;
}

/// The presence mask's bits rearranged so that bit k says whether the k-th value follows:
/// mask bits 0–2 (calls, exits, fails) stay, bits 6–8 (redos, excps, quanta) become 3–5, bits
/// 3–5 (call seqs, allocs, words) become 6–8.
#[inline(always)]
fn value_order(mask: u64) -> u32 {
    ((mask & 0x7) | ((mask >> 6) & 0x7) << 3 | ((mask >> 3) & 0x7) << 6) as u32
}
const KNOWN_MASK: u64 = 0x01ff;

/// The coverage field of the header flags (spec §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// No coverage data.
    None,
    /// Proc-statics carry a count per coverage point.
    Static,
    /// Proc-dynamics carry a count per coverage point of their procedure.
    Dynamic,
}

impl Coverage {
    /// `none`, `static` or `dynamic`.
    pub fn name(self) -> &'static str {
        match self {
            Coverage::None => "none",
            Coverage::Static => "static",
            Coverage::Dynamic => "dynamic",
        }
    }
}

/// The file header (spec §3).
#[derive(Clone, Debug)]
pub struct Header<'a> {
    /// Format version, 8 or 9.
    pub version: u32,
    /// The program's `argv[0]`.
    pub program: &'a [u8],
    /// The raw flags word.
    pub flags: u64,
    /// Bytes per machine word (the unit of `words`).
    pub word_size: u32,
    /// Canonical flag (the writer always sets it).
    pub canonical: bool,
    /// Which coverage sections the records carry.
    pub coverage: Coverage,
    /// Number of call-site-dynamic records.
    pub n_csd: u32,
    /// Number of call-site-static records.
    pub n_css: u32,
    /// Number of proc-dynamic records.
    pub n_pd: u32,
    /// Number of proc-static records.
    pub n_ps: u32,
    /// Clock ticks per second of the profiled machine (0 if unknown).
    pub ticks_per_sec: u64,
    /// Samples that hit profiler bookkeeping (attributed to nobody).
    pub instrument_quanta: u64,
    /// Samples charged to call-site-dynamics.
    pub user_quanta: u64,
    /// Total number of call events.
    pub call_seqs: u64,
    /// The root proc-dynamic (the runtime's pseudo-procedure).
    pub root_pd: u32,
    /// Byte offset of the first record.
    pub records_at: usize,
}

/// A procedure's identity (spec §7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Label<'a> {
    /// Not read (absent record).
    #[default]
    Absent,
    /// A user-defined predicate (tag 0) or function (tag 1).
    User {
        /// Tag 1.
        is_func: bool,
        /// The module that qualifies the name.
        decl_module: &'a [u8],
        /// The module whose code defines it.
        def_module: &'a [u8],
        /// The procedure's name.
        name: &'a [u8],
        /// Pred-form arity (a function's counts its result).
        arity: u32,
        /// Mode number, from 0.
        mode: u32,
    },
    /// A compiler-generated unify/compare/index procedure (tag 2).
    Special {
        /// The type's name.
        type_name: &'a [u8],
        /// The type's module.
        type_module: &'a [u8],
        /// The module whose code defines the procedure.
        def_module: &'a [u8],
        /// `__Unify__`, `__Compare__`, `__CompareRep__` or `__Index__`.
        pred_name: &'a [u8],
        /// Number of type parameters.
        type_arity: u32,
        /// Mode number.
        mode: u32,
    },
}

/// A proc-static record (spec §5.2): what the tree and the checks need. Its label, file, line and
/// interface flag stay in the input, checked while reading, and are decoded again by
/// [`DeepFile::proc_head`] for the procedures that are named (the tables stay small: a file can
/// hold a whole standard library's procedures, few of them called).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcStatic {
    /// Byte offset of the record (0: not read).
    pub offset: u64,
    /// Its call sites: `DeepFile::ps_css[css_start..css_start + n_css]`.
    pub css_start: u32,
    /// Number of call sites.
    pub n_css: u32,
    /// Number of coverage points.
    pub n_coverage: u32,
    /// A user-defined function (label tag 1).
    pub is_func: bool,
    /// A proc-dynamic names it: the procedure was called.
    pub called: bool,
    /// A hash of a user procedure's short name (module, name, arity, mode); 0 for others.
    pub short_hash: u32,
}

/// The hash [`ProcStatic::short_hash`] keeps (never 0 for a user procedure): a fingerprint
/// of the short name's lengths, arity, mode and the name's first and last bytes, cheap enough
/// for every proc-static (hashing whole names cost 8 % of reading a file of mostly
/// proc-statics); equal names give equal fingerprints, and candidates are compared whole.
pub fn short_hash(label: &Label<'_>) -> u32 {
    let Label::User {
        decl_module,
        name,
        arity,
        mode,
        ..
    } = *label
    else {
        return 0;
    };
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        let n = b.len().min(8);
        w[..n].copy_from_slice(&b[..n]);
        u64::from_le_bytes(w)
    };
    let tail = |b: &[u8]| word(&b[b.len().saturating_sub(8)..]);
    let mut h = (name.len() as u64) << 32 | decl_module.len() as u64;
    for v in [
        u64::from(arity) << 32 | u64::from(mode),
        word(name),
        tail(name),
        tail(decl_module),
    ] {
        h = (h ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    ((h >> 32) as u32).max(1)
}

/// A procedure's label, file, line and interface flag (a proc-static's first fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcHead<'a> {
    /// The procedure.
    pub label: Label<'a>,
    /// Source file.
    pub file: &'a [u8],
    /// Line of the procedure.
    pub line: u32,
    /// Exported from its module.
    pub interface: bool,
}

/// Call-site kinds (spec §6).
pub mod kind {
    /// First-order call of a known procedure: one call-site-dynamic or none.
    pub const NORMAL: u8 = 0;
    /// Unify/compare/index through the generic builtins: a list.
    pub const SPECIAL: u8 = 1;
    /// Closure call: a list.
    pub const HIGHER_ORDER: u8 = 2;
    /// Type-class method call: a list.
    pub const METHOD: u8 = 3;
    /// Foreign code calling back into Mercury: a list.
    pub const CALLBACK: u8 = 4;

    /// The kind's name.
    pub fn name(k: u8) -> &'static str {
        match k {
            NORMAL => "normal",
            SPECIAL => "special",
            HIGHER_ORDER => "higher_order",
            METHOD => "method",
            CALLBACK => "callback",
            _ => "unknown",
        }
    }
}

/// A call-site-static record (spec §5.1): what the tree and the checks need. Its file and goal
/// path stay in the input and are decoded again by [`DeepFile::call_site_text`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CallSiteStatic {
    /// Byte offset of the record (0: not read).
    pub offset: u64,
    /// Call-site kind ([`kind`]).
    pub kind: u8,
    /// The called proc-static of a normal call, else 0.
    pub callee_ps: u32,
    /// Line of the call.
    pub line: u32,
    /// The proc-static listing this call site (0: none).
    pub owner: u32,
}

/// A call site's file and goal path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallSiteText<'a> {
    /// File of the call (version 9; empty: the procedure's file).
    pub file: &'a [u8],
    /// Goal path of the call inside its procedure.
    pub goal_path: &'a [u8],
}

/// A proc-dynamic record (spec §5.3).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcDynamic {
    /// Byte offset of the record (0: not read).
    pub offset: u64,
    /// Its procedure.
    pub ps: u32,
    /// Its slots: `DeepFile::slot_kind[slot_start..slot_start + n_slots]`.
    pub slot_start: u32,
    /// Number of slots.
    pub n_slots: u32,
    /// Its call-site-dynamics in slot order, list entries in file order:
    /// `DeepFile::refs[ref_start..ref_start + n_refs]` (call site of each in `ref_css`).
    pub ref_start: u32,
    /// Number of call-site-dynamics listed.
    pub n_refs: u32,
    /// Number of coverage counts (dynamic coverage).
    pub n_coverage: u32,
}

/// A call-site-dynamic record (spec §5.4). Its measurements stay in the input: they are checked
/// while reading and decoded again, cheaply, by [`DeepFile::measures`] when needed.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallSiteDynamic {
    /// Byte offset of the record (0: not read).
    pub offset: u64,
    /// The callee proc-dynamic.
    pub callee: u32,
    /// The proc-dynamic whose slot lists it (0: none yet).
    pub owner: u32,
}

/// The measurements of one call-site-dynamic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measures {
    /// Values by [`m`] index (0 when absent).
    pub values: [i64; m::N],
    /// Calls made through it: the explicit count if present (mask bit 0x1), else
    /// exits + fails + excps − redos (spec §8.2).
    pub calls: i64,
}

pub(crate) enum MeasureError<'a> {
    Syntax(nom::Err<DErr<'a>>),
    Mask(&'a [u8], u64),
    TooLarge(&'a [u8], u64),
    Overflow,
    /// Redos, and exits + fails + excps, fewer.
    MoreRedos(i64, i128),
}

/// The mask and values of a call-site-dynamic (spec §8.1), after its callee, into `ms`.
#[inline(always)]
pub(crate) fn measures<'a>(i: &'a [u8], ms: &mut Measures) -> Result<&'a [u8], MeasureError<'a>> {
    let mask_at = i;
    let (mut i, mask) = field(num(i), "the measurement mask (a variable-length number)")
        .map_err(MeasureError::Syntax)?;
    if mask & !KNOWN_MASK != 0 {
        return Err(MeasureError::Mask(mask_at, mask));
    }
    // Values in the order they follow (calls, exits, fails, redos, excps, quanta, call seqs,
    // allocs, words).
    let mut vals = [0i64; 9];
    let mut order = value_order(mask);
    // Fast path: every value is a one-byte number (most are small counts).
    let n_values = order.count_ones() as usize;
    if let Some(bytes) = i.get(..n_values) {
        if bytes.iter().all(|&b| b < 0x80) {
            for &b in bytes {
                let k = order.trailing_zeros() as usize;
                order &= order - 1;
                if let Some(slot) = vals.get_mut(k) {
                    *slot = b as i64;
                }
            }
            i = &i[n_values..];
        }
    }
    while order != 0 {
        let k = order.trailing_zeros() as usize;
        order &= order - 1;
        let at = i;
        let (rest, v) = field(num(i), "a measurement value (a variable-length number)")
            .map_err(MeasureError::Syntax)?;
        i = rest;
        let v = i64::try_from(v).map_err(|_| MeasureError::TooLarge(at, v))?;
        if let Some(slot) = vals.get_mut(k) {
            *slot = v;
        }
    }
    store_measures(mask, vals, ms)?;
    Ok(i)
}

/// The measurements of a call-site-dynamic read before (so well formed), as [`measures`] gives
/// them, without the grammar: `None` where a number is longer than nine bytes (then
/// [`measures`] reads it). Decoding them again for the IR through the grammar took a tenth of
/// a long run's profile's parse.
#[inline]
fn measures_again(i: &[u8], ms: &mut Measures) -> Option<()> {
    let (mask, mut k) = quick_num(i, 0)?;
    let mut vals = [0i64; 9];
    let mut order = value_order(mask & KNOWN_MASK);
    while order != 0 {
        let j = order.trailing_zeros() as usize;
        order &= order - 1;
        let (v, next) = quick_num(i, k)?;
        *vals.get_mut(j)? = v as i64;
        k = next;
    }
    store_measures(mask, vals, ms).ok()
}

/// `vals` (in file order: calls, exits, fails, redos, excps, quanta, call seqs, allocs, words)
/// into `ms`, with the calls derived when `mask` has none.
#[inline(always)]
fn store_measures<'a>(
    mask: u64,
    vals: [i64; 9],
    ms: &mut Measures,
) -> Result<(), MeasureError<'a>> {
    let [
        calls,
        exits,
        fails,
        redos,
        excps,
        quanta,
        call_seqs,
        allocs,
        words,
    ] = vals;
    let mut values = [0i64; m::N];
    values[m::EXITS] = exits;
    values[m::FAILS] = fails;
    values[m::REDOS] = redos;
    values[m::EXCPS] = excps;
    values[m::QUANTA] = quanta;
    values[m::CALL_SEQS] = call_seqs;
    values[m::ALLOCS] = allocs;
    values[m::WORDS] = words;
    ms.values = values;
    let explicit_calls = (mask & 1 != 0).then_some(calls);
    let v = &ms.values;
    ms.calls = match explicit_calls {
        Some(c) => c,
        None => {
            // In 128 bits: each value is below 2^63, so only the result can overflow.
            let ends = v[m::EXITS] as i128 + v[m::FAILS] as i128 + v[m::EXCPS] as i128;
            match i64::try_from(ends - v[m::REDOS] as i128) {
                Ok(c) if c >= 0 => c,
                // A redo re-enters a call that exited, and ends again: never more redos than
                // ends.
                Ok(_) => return Err(MeasureError::MoreRedos(v[m::REDOS], ends)),
                Err(_) => return Err(MeasureError::Overflow),
            }
        }
    };
    Ok(())
}

/// Adds the innermost context (what was being read) to an error: nom's `context`, inlined.
#[inline(always)]
pub(crate) fn field<'a, T>(r: PResult<'a, T>, what: &'static str) -> PResult<'a, T> {
    r.map_err(|e| {
        e.map(|mut d| {
            if d.what.is_none() {
                d.what = Some(what);
            }
            d
        })
    })
}

/// A whole Deep.data file, records by id (index 0 of each table is unused: ids start at 1).
#[derive(Clone, Debug)]
pub struct DeepFile<'a> {
    /// The header.
    pub header: Header<'a>,
    /// Proc-statics by id.
    pub ps: Vec<ProcStatic>,
    /// Call-site-statics by id.
    pub css: Vec<CallSiteStatic>,
    /// Proc-dynamics by id.
    pub pd: Vec<ProcDynamic>,
    /// Call-site-dynamics by id.
    pub csd: Vec<CallSiteDynamic>,
    /// The input (call-site-dynamic measurements are decoded from it when needed).
    pub data: &'a [u8],
    /// Sum of the quanta of all call-site-dynamics.
    pub sum_quanta: i128,
    /// Sum of the call sequence counts of all call-site-dynamics.
    pub sum_call_seqs: i128,
    /// Call-site-static ids listed by proc-statics.
    pub ps_css: Vec<u32>,
    /// Slot kinds of proc-dynamics.
    pub slot_kind: Vec<u8>,
    /// Call-site-dynamic ids listed by proc-dynamics.
    pub refs: Vec<u32>,
    /// The call-site-static of each entry of `refs`: its proc-static's call site at the entry's
    /// slot. (The loader keeps the slot, read before the proc-static, and the final checks
    /// look the call site up, once per entry, in file order: the tree walk would otherwise look
    /// it up in the proc-static's list at random places.)
    pub ref_css: Vec<u32>,
    /// Coverage points described in proc-statics.
    pub coverage_points: u64,
    /// Coverage counts carried by proc-dynamics.
    pub coverage_counts: u64,
    /// Byte offset of a top-level end token, if the file has one.
    pub end_token_at: Option<u64>,
    /// Non-fatal oddities, for the host's log.
    pub warnings: Vec<String>,
}

/// A record-level failure: a syntax error (converted with its record's context) or a finished
/// message.
pub(crate) enum Fail<'a> {
    Syntax(DErr<'a>),
    Semantic(PluginError),
}

impl<'a> DeepFile<'a> {
    /// A record's body after its token and id, if it was read.
    fn body(&self, offset: u64) -> Option<&'a [u8]> {
        let data = self.data;
        (offset != 0)
            .then(|| data.get(offset as usize + 1..))
            .flatten()
            .and_then(|i| skip_nums(i, 1))
    }

    /// Proc-static `ps`'s label, file, line and interface flag, decoded again from the input
    /// (checked when it was read). Id 0 (none) gives [`Label::Absent`] and an empty file.
    pub fn proc_head(&self, ps: u32) -> Result<ProcHead<'a>, PluginError> {
        let Some(p) = self.ps.get(ps as usize).filter(|p| p.offset != 0) else {
            return Ok(ProcHead::default());
        };
        self.body(p.offset)
            .and_then(|i| ps_head(self.data, i, ps).ok())
            .map(|(_, head)| head)
            .ok_or_else(|| {
                PluginError::internal(format!("proc-static {ps} cannot be decoded again"))
            })
    }

    /// Call-site-static `css`'s file and goal path, decoded again from the input (checked when
    /// it was read). Id 0 (none) gives empty strings.
    pub fn call_site_text(&self, css: u32) -> Result<CallSiteText<'a>, PluginError> {
        let Some(c) = self.css.get(css as usize).filter(|c| c.offset != 0) else {
            return Ok(CallSiteText::default());
        };
        let h = &self.header;
        self.body(c.offset)
            .and_then(|i| css_fields(self.data, i, css, h.version, h.n_ps).ok())
            .map(|(_, site)| site.text)
            .ok_or_else(|| {
                PluginError::internal(format!("call-site-static {css} cannot be decoded again"))
            })
    }
}

impl DeepFile<'_> {
    /// The measurements of call-site-dynamic `csd` (an id of this file).
    pub fn measures(&self, csd: u32) -> Result<Measures, PluginError> {
        let mut ms = Measures::default();
        self.measures_into(csd, &mut ms)?;
        Ok(ms)
    }

    /// [`DeepFile::measures`] into `ms`.
    #[inline]
    pub fn measures_into(&self, csd: u32, ms: &mut Measures) -> Result<(), PluginError> {
        let decoded = self
            .csd
            .get(csd as usize)
            .filter(|c| c.offset != 0)
            .and_then(|c| self.data.get(c.offset as usize + 1..))
            .and_then(|i| skip_nums(i, 2)) // the id and the callee
            .and_then(|i| measures_again(i, ms).or_else(|| measures(i, ms).ok().map(|_| ())));
        match decoded {
            Some(_) => Ok(()),
            None => Err(PluginError::internal(format!(
                "call-site-dynamic {csd} cannot be decoded again"
            ))),
        }
    }
}

impl<'a> From<nom::Err<DErr<'a>>> for Fail<'a> {
    fn from(e: nom::Err<DErr<'a>>) -> Self {
        match e {
            nom::Err::Error(e) | nom::Err::Failure(e) => Fail::Syntax(e),
            // Only complete parsers are used.
            nom::Err::Incomplete(_) => Fail::Semantic(PluginError::internal(
                "a streaming parser asked for more input",
            )),
        }
    }
}

fn invalid(offset: u64, msg: String) -> PluginError {
    PluginError::invalid_input(msg).at_offset(offset)
}

/// Describes a syntax error: what was expected at which byte, inside which record.
fn syntax_error(
    data: &[u8],
    e: &DErr<'_>,
    record: Option<(&str, u64, Option<u64>)>,
) -> PluginError {
    let at = (data.len() - e.at.len()) as u64;
    let what = e.what.unwrap_or("more data");
    let found = match &e.problem {
        Problem::Eof => format!("the end of the file (byte {})", data.len()),
        Problem::NumTooLong => format!(
            "a variable-length number that does not end within {} bytes (every byte has the continuation bit 0x80)",
            crate::read::MAX_NUM_BYTES
        ),
        Problem::NumOverflow => "a variable-length number that does not fit in 64 bits".to_string(),
        Problem::StrTooLong { len } => format!(
            "a string of {len} bytes, but the file ends {} bytes after its length",
            data.len() as u64 - at - num_len(e.at)
        ),
        Problem::Nom(_) => match e.at.first() {
            Some(b) => format!("byte 0x{b:02x}"),
            None => format!("the end of the file (byte {})", data.len()),
        },
    };
    let inside = match record {
        Some((kind, start, Some(id))) => format!(" in {kind} {id} (record at byte {start})"),
        Some((kind, start, None)) => format!(" in the {kind} record at byte {start}"),
        None => String::new(),
    };
    let runs_out = matches!(e.problem, Problem::Eof | Problem::StrTooLong { .. });
    let cut = if runs_out && record.is_some() {
        " (the file is cut in the middle of a record)"
    } else {
        ""
    };
    invalid(at, format!("expected {what}{inside}, found {found}{cut}"))
}

/// The length in bytes of the `num` at the start of `i` (for messages).
fn num_len(i: &[u8]) -> u64 {
    i.iter().position(|&b| b < 0x80).map_or(i.len(), |p| p + 1) as u64
}

/// A field's description without its encoding: `the callee proc-dynamic id`.
fn plain(what: &str) -> &str {
    what.split(" (").next().unwrap_or(what)
}

fn record_name(token: u8) -> &'static str {
    match token {
        TOKEN_CSS => "call-site-static",
        TOKEN_CSD => "call-site-dynamic",
        TOKEN_PS => "proc-static",
        _ => "proc-dynamic",
    }
}

/// The identifying line: the prefix, a decimal version, a newline (spec §3.1).
fn id_line(i: &[u8]) -> PResult<'_, &[u8]> {
    let (i, _) = context(
        "the identifying line `Mercury deep profiler data version N` (not a Mercury deep profiler data file)",
        tag(ID_PREFIX),
    )
    .parse(i)?;
    let (i, digits) = context("the decimal version number", digit1).parse(i)?;
    let (i, _) = context("a newline after the version number", tag(&b"\n"[..])).parse(i)?;
    Ok((i, digits))
}

/// Reads the header and every record, then checks references (spec §11 steps 1–5).
pub fn read_file(data: &[u8]) -> Result<DeepFile<'_>, PluginError> {
    let header = read_header(data)?;
    let mut l = Loader::new(data, header);
    l.records()?;
    l.validate()?;
    Ok(l.f)
}

fn read_header(data: &[u8]) -> Result<Header<'_>, PluginError> {
    // A Deep.data file compressed by another tool than gzip (which the host decompresses) is
    // said to be one, not only "not a Mercury deep profiler data file".
    if let Some((what, command)) = profconv_plugin::compression_of(data) {
        return Err(invalid(
            0,
            format!(
                "the input is {what}, and only one layer of gzip is decompressed: decompress it first \
                 (`{command} FILE | profconv … -` reads it from a pipe)"
            ),
        ));
    }
    let err = |e: nom::Err<DErr<'_>>| match Fail::from(e) {
        Fail::Syntax(e) => syntax_error(data, &e, None),
        Fail::Semantic(p) => p,
    };
    if !data.is_empty() && data.len() < ID_PREFIX.len() && ID_PREFIX.starts_with(data) {
        // nom's complete-input `tag` fails at byte 0; the bytes there are right, the rest is
        // missing.
        return Err(invalid(
            data.len() as u64,
            "the file ends inside the identifying line `Mercury deep profiler data version N` (cut short?)".into(),
        ));
    }
    let (i, digits) = id_line(data).map_err(err)?;
    let line_len = data.len() - i.len();
    if line_len > ID_LINE_MAX {
        return Err(invalid(
            ID_PREFIX.len() as u64,
            format!(
                "the identifying line is {line_len} bytes long; mdprof reads at most {ID_LINE_MAX} (not a Mercury deep profiler data file)"
            ),
        ));
    }
    let version = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse::<u32>().ok())
        .unwrap_or(u32::MAX);
    if version != 8 && version != 9 {
        return Err(invalid(
            ID_PREFIX.len() as u64,
            format!(
                "unsupported Deep.data version {} (versions 8 and 9 are read; 8 is written by Mercury 11.01 to 22.01, 9 since 2025)",
                String::from_utf8_lossy(digits)
            ),
        ));
    }
    let (i, program) = context("the program name (a string)", string)
        .parse(i)
        .map_err(err)?;
    let flags_at = (data.len() - i.len()) as u64;
    let (i, flags) = context("the flags word (8 bytes)", fixed64)
        .parse(i)
        .map_err(err)?;
    let word_size = (flags & 0xff) as u32;
    let canonical = (flags >> 8) & 3;
    let compression = (flags >> 10) & 3;
    let coverage = match (flags >> 12) & 3 {
        0 => Coverage::None,
        1 => Coverage::Static,
        2 => Coverage::Dynamic,
        _ => {
            return Err(invalid(
                flags_at,
                format!(
                    "flags 0x{flags:x}: coverage field 3 is invalid (0 none, 1 static, 2 dynamic)"
                ),
            ));
        }
    };
    if flags >> 14 != 0 {
        return Err(invalid(
            flags_at,
            format!("flags 0x{flags:x}: bits above bit 13 are set (only 0x3fff is defined)"),
        ));
    }
    if canonical > 1 {
        return Err(invalid(
            flags_at,
            format!("flags 0x{flags:x}: canonical field {canonical} is invalid (0 or 1)"),
        ));
    }
    if compression != 0 {
        return Err(invalid(
            flags_at,
            format!(
                "flags 0x{flags:x}: compressed data (field {compression}) is not supported (never implemented by Mercury)"
            ),
        ));
    }
    let mut counts = [0u64; 4];
    let mut i = i;
    for (k, what) in [
        "the number of call-site-dynamic records (8 bytes)",
        "the number of call-site-static records (8 bytes)",
        "the number of proc-dynamic records (8 bytes)",
        "the number of proc-static records (8 bytes)",
    ]
    .into_iter()
    .enumerate()
    {
        let (rest, c) = context(what, fixed64).parse(i).map_err(err)?;
        counts[k] = c;
        i = rest;
    }
    let counts_at = flags_at + 8;
    let mut nums = [0u64; 5];
    // Where the last of them (the root proc-dynamic id) starts: a `num` can take several bytes.
    let mut root_at = 0;
    for (k, what) in [
        "the clock ticks per second (a variable-length number)",
        "the instrumentation quanta (a variable-length number)",
        "the user quanta (a variable-length number)",
        "the call sequence count (a variable-length number)",
        "the root proc-dynamic id (a variable-length number)",
    ]
    .into_iter()
    .enumerate()
    {
        root_at = data.len() - i.len();
        let (rest, v) = context(what, num).parse(i).map_err(err)?;
        nums[k] = v;
        i = rest;
    }
    let records_at = data.len() - i.len();
    let [n_csd, n_css, n_pd, n_ps] = counts;
    check_counts(
        counts_at,
        version,
        coverage,
        [n_csd, n_css, n_pd, n_ps],
        i.len() as u64,
    )?;
    let root_pd = u32::try_from(nums[4])
        .ok()
        .filter(|&r| r >= 1 && r as u64 <= n_pd)
        .ok_or_else(|| {
            invalid(
                root_at as u64,
                format!(
                    "the root proc-dynamic id {} does not name one of the {n_pd} proc-dynamic records",
                    nums[4]
                ),
            )
        })?;
    Ok(Header {
        version,
        program,
        flags,
        word_size,
        canonical: canonical == 1,
        coverage,
        n_csd: n_csd as u32,
        n_css: n_css as u32,
        n_pd: n_pd as u32,
        n_ps: n_ps as u32,
        ticks_per_sec: nums[0],
        instrument_quanta: nums[1],
        user_quanta: nums[2],
        call_seqs: nums[3],
        root_pd,
        records_at,
    })
}

/// The header's record counts must fit in the bytes that follow it: each record needs at least
/// a few bytes (token, id and its fixed fields, each at least one byte).
fn check_counts(
    at: u64,
    version: u32,
    coverage: Coverage,
    counts: [u64; 4],
    remaining: u64,
) -> Result<(), PluginError> {
    let min_css = if version >= 9 { 6 } else { 5 };
    let min_pd = if coverage == Coverage::Dynamic { 5 } else { 4 };
    let min_ps = if coverage == Coverage::None { 12 } else { 13 };
    let mins = [4u128, min_css, min_pd, min_ps];
    let names = [
        "call-site-dynamic",
        "call-site-static",
        "proc-dynamic",
        "proc-static",
    ];
    let need: u128 = counts.iter().zip(mins).map(|(&c, m)| c as u128 * m).sum();
    if need > remaining as u128 {
        let claims: Vec<String> = counts
            .iter()
            .zip(names)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        return Err(invalid(
            at,
            format!(
                "the header claims {} records, which need at least {need} bytes, but only {remaining} bytes follow the header (the file is truncated, or the counts are corrupt)",
                claims.join(", ")
            ),
        ));
    }
    for (&c, n) in counts.iter().zip(names) {
        if c >= u32::MAX as u64 {
            return Err(invalid(
                at,
                format!(
                    "the header claims {c} {n} records; at most {} are supported",
                    u32::MAX - 1
                ),
            ));
        }
    }
    if counts[2] == 0 {
        return Err(invalid(
            at,
            "the header counts no proc-dynamic records (a file whose writer did not finish has zero counts)".into(),
        ));
    }
    Ok(())
}

/// A `num` of at most nine bytes (63 bits) at `body[at..]`, and where it ends; `None` for a
/// longer one or one cut by the end (the general path's `num` reads and reports those).
#[inline(always)]
fn quick_num(body: &[u8], at: usize) -> Option<(u64, usize)> {
    let first = *body.get(at)?;
    if first < 0x80 {
        return Some((first as u64, at + 1));
    }
    let mut v = (first & 0x7f) as u64;
    let rest = body.get(at + 1..)?;
    for (k, &b) in rest.iter().take(8).enumerate() {
        v = (v << 7) | (b & 0x7f) as u64;
        if b < 0x80 {
            return Some((v, at + k + 2));
        }
    }
    None
}

/// Byte offset of `rest` in `data` (a suffix of it).
#[inline]
fn offset_in(data: &[u8], rest: &[u8]) -> u64 {
    (data.len() - rest.len()) as u64
}

/// A reference to a record of `kind` (1..=count), read as a `num` (`data`: the whole input).
#[inline(always)]
fn reference<'a>(
    data: &[u8],
    i: &'a [u8],
    what: &'static str,
    count: u32,
    kind_name: &str,
) -> Result<(&'a [u8], u32), Fail<'a>> {
    let (rest, v) = field(num(i), what)?;
    if v == 0 || v > count as u64 {
        return Err(Fail::Semantic(invalid(
            offset_in(data, i),
            format!(
                "{} is {v}, but there is no {kind_name} {v} (the header counts {count})",
                plain(what)
            ),
        )));
    }
    Ok((rest, v as u32))
}

/// A `num` that must fit in 32 bits.
#[inline(always)]
fn small<'a>(data: &[u8], i: &'a [u8], what: &'static str) -> Result<(&'a [u8], u32), Fail<'a>> {
    let (rest, v) = field(num(i), what)?;
    let v = u32::try_from(v).map_err(|_| {
        Fail::Semantic(invalid(
            offset_in(data, i),
            format!("{} is {v}, more than 32 bits", plain(what)),
        ))
    })?;
    Ok((rest, v))
}

/// A proc-static's label, file, line and interface byte (spec §5.2), after its id; the loader
/// reads the call sites and coverage points that follow.
#[inline]
fn ps_head<'a>(data: &[u8], i: &'a [u8], id: u32) -> Result<(&'a [u8], ProcHead<'a>), Fail<'a>> {
    let tag_at = offset_in(data, i);
    let (i, tag) = field(byte(i), "the procedure label tag (one byte)")?;
    let (i, label) = match tag {
        0 | 1 => {
            let (i, decl_module) = field(string(i), "the declaring module (a string)")?;
            let (i, def_module) = field(string(i), "the defining module (a string)")?;
            let (i, name) = field(string(i), "the procedure name (a string)")?;
            let (i, arity) = small(data, i, "the arity (a variable-length number)")?;
            let (i, mode) = small(data, i, "the mode number (a variable-length number)")?;
            (
                i,
                Label::User {
                    is_func: tag == 1,
                    decl_module,
                    def_module,
                    name,
                    arity,
                    mode,
                },
            )
        }
        2 => {
            let (i, type_name) = field(string(i), "the type name (a string)")?;
            let (i, type_module) = field(string(i), "the type's module (a string)")?;
            let (i, def_module) = field(string(i), "the defining module (a string)")?;
            let (i, pred_name) = field(string(i), "the predicate name (a string)")?;
            let (i, type_arity) = small(data, i, "the type arity (a variable-length number)")?;
            let (i, mode) = small(data, i, "the mode number (a variable-length number)")?;
            (
                i,
                Label::Special {
                    type_name,
                    type_module,
                    def_module,
                    pred_name,
                    type_arity,
                    mode,
                },
            )
        }
        t => {
            return Err(Fail::Semantic(invalid(
                tag_at,
                format!(
                    "proc-static {id}: unknown procedure label tag {t} (0 predicate, 1 function, 2 compiler-generated)"
                ),
            )));
        }
    };
    let (i, file) = field(string(i), "the source file name (a string)")?;
    let (i, line) = small(data, i, "the line number (a variable-length number)")?;
    let (i, interface) = field(byte(i), "the in-interface byte")?;
    let head = ProcHead {
        label,
        file,
        line,
        interface: interface != 0,
    };
    Ok((i, head))
}

/// The fields of a call-site-static (spec §5.1), after its id.
struct CssFields<'a> {
    kind: u8,
    callee_ps: u32,
    text: CallSiteText<'a>,
    line: u32,
}

/// A call-site-static's fields (spec §5.1), after its id; `n_ps` bounds the callee.
#[inline]
fn css_fields<'a>(
    data: &[u8],
    i: &'a [u8],
    id: u32,
    version: u32,
    n_ps: u32,
) -> Result<(&'a [u8], CssFields<'a>), Fail<'a>> {
    let kind_at = offset_in(data, i);
    let (i, kind) = field(byte(i), "the call-site kind (one byte)")?;
    if kind > kind::CALLBACK {
        return Err(Fail::Semantic(invalid(
            kind_at,
            format!(
                "call-site-static {id}: unknown call-site kind {kind} (0 normal, 1 special, 2 higher-order, 3 method, 4 callback)"
            ),
        )));
    }
    let mut i = i;
    let mut callee_ps = 0;
    if kind == kind::NORMAL {
        let (rest, c) = reference(
            data,
            i,
            "the callee proc-static id (a variable-length number)",
            n_ps,
            "proc-static",
        )?;
        let (rest, _subst) = field(string(rest), "the type substitution (a string)")?;
        callee_ps = c;
        i = rest;
    }
    let mut file: &[u8] = &[];
    if version >= 9 {
        let (rest, f) = field(string(i), "the call site's file name (a string)")?;
        file = f;
        i = rest;
    }
    let (i, line) = small(data, i, "the line number (a variable-length number)")?;
    let (i, goal_path) = field(string(i), "the goal path (a string)")?;
    let text = CallSiteText { file, goal_path };
    Ok((
        i,
        CssFields {
            kind,
            callee_ps,
            text,
            line,
        },
    ))
}

struct Loader<'a> {
    data: &'a [u8],
    f: DeepFile<'a>,
}

impl<'a> Loader<'a> {
    fn new(data: &'a [u8], header: Header<'a>) -> Self {
        // Bounded by the input size: `check_counts` has compared the counts with it.
        let f = DeepFile {
            ps: vec![ProcStatic::default(); header.n_ps as usize + 1],
            css: vec![CallSiteStatic::default(); header.n_css as usize + 1],
            pd: vec![ProcDynamic::default(); header.n_pd as usize + 1],
            csd: vec![CallSiteDynamic::default(); header.n_csd as usize + 1],
            data,
            sum_quanta: 0,
            sum_call_seqs: 0,
            // Each call-site-static and call-site-dynamic is listed at most once.
            ps_css: Vec::with_capacity(header.n_css as usize),
            slot_kind: Vec::new(),
            refs: Vec::with_capacity(header.n_csd as usize),
            ref_css: Vec::with_capacity(header.n_csd as usize),
            coverage_points: 0,
            coverage_counts: 0,
            end_token_at: None,
            warnings: Vec::new(),
            header,
        };
        Loader { data, f }
    }

    #[inline]
    fn off(&self, rest: &[u8]) -> u64 {
        offset_in(self.data, rest)
    }

    /// The record loop (spec §4): until the end of the file or a top-level end token.
    fn records(&mut self) -> Result<(), PluginError> {
        let data = self.data;
        let mut i = &data[self.f.header.records_at..];
        while let Some(&token) = i.first() {
            let start = self.off(i);
            if token == TOKEN_END {
                self.f.end_token_at = Some(start);
                if i.len() > 1 {
                    self.f.warnings.push(format!(
                        "{} bytes after the end token at byte {start} were ignored",
                        i.len() - 1
                    ));
                }
                break;
            }
            if token > TOKEN_PD {
                return Err(invalid(
                    start,
                    format!(
                        "unknown record token {token} (expected 1 call-site-static, 2 call-site-dynamic, 3 proc-static, 4 proc-dynamic, or 0 to end)"
                    ),
                ));
            }
            let body = &i[1..];
            let fast = match token {
                TOKEN_PD => self.pd_fast(body, start),
                TOKEN_CSD => self.csd_fast(body, start),
                _ => None,
            };
            if let Some(rest) = fast {
                i = rest;
                continue;
            }
            let (rest, id) = match field(num(body), "the record id (a variable-length number)") {
                Ok(x) => x,
                Err(e) => {
                    return Err(match Fail::from(e) {
                        Fail::Syntax(e) => {
                            syntax_error(data, &e, Some((record_name(token), start, None)))
                        }
                        Fail::Semantic(p) => p,
                    });
                }
            };
            let id = self.check_new_id(token, id, start)?;
            let r = match token {
                TOKEN_CSS => self.css(rest, id),
                TOKEN_CSD => self.csd(rest, id, start),
                TOKEN_PS => self.ps(rest, id),
                _ => self.pd(rest, id),
            };
            i = match r {
                Ok(rest) => rest,
                Err(Fail::Syntax(e)) => {
                    let record = Some((record_name(token), start, Some(id as u64)));
                    return Err(syntax_error(data, &e, record));
                }
                Err(Fail::Semantic(p)) => return Err(p),
            };
        }
        Ok(())
    }

    /// An id must be in 1..=count and seen for the first time; records its offset.
    fn check_new_id(&mut self, token: u8, id: u64, start: u64) -> Result<u32, PluginError> {
        let h = &self.f.header;
        let count = match token {
            TOKEN_CSS => h.n_css,
            TOKEN_CSD => h.n_csd,
            TOKEN_PS => h.n_ps,
            _ => h.n_pd,
        };
        if id == 0 || id > count as u64 {
            let name = record_name(token);
            return Err(invalid(
                start + 1,
                format!(
                    "{name} record at byte {start} has id {id}, outside 1..={count} (the header's count of {name} records)"
                ),
            ));
        }
        let k = id as usize;
        let slot = match token {
            TOKEN_CSS => &mut self.f.css[k].offset,
            TOKEN_CSD => &mut self.f.csd[k].offset,
            TOKEN_PS => &mut self.f.ps[k].offset,
            _ => &mut self.f.pd[k].offset,
        };
        if *slot != 0 {
            let first = *slot;
            let name = record_name(token);
            return Err(invalid(
                start,
                format!("a second {name} record with id {id} (the first is at byte {first})"),
            ));
        }
        *slot = start;
        Ok(id as u32)
    }

    /// A call-site-dynamic (token 2) whose fields are all as the common case has them (numbers
    /// of at most 9 bytes, ids in range, no overflow), read without the grammar's bookkeeping;
    /// `None`, with nothing changed, for any other, which the general path then reads and
    /// reports on. The two paths store the same things. Call-site-dynamics and proc-dynamics
    /// are 92 % of a long run's profile; read through the grammar they took 0.45 s per 100 MB.
    #[inline]
    fn csd_fast(&mut self, body: &'a [u8], start: u64) -> Option<&'a [u8]> {
        let h = &self.f.header;
        let (id, k) = quick_num(body, 0)?;
        if id == 0 || id > h.n_csd as u64 || self.f.csd[id as usize].offset != 0 {
            return None;
        }
        let (callee, k) = quick_num(body, k)?;
        if callee == 0 || callee > h.n_pd as u64 {
            return None;
        }
        let (mask, mut k) = quick_num(body, k)?;
        if mask & !KNOWN_MASK != 0 {
            return None;
        }
        // As `measures` orders them: calls, exits, fails, redos, excps, quanta, call seqs,
        // allocs, words; nine bytes hold at most 63 bits, so each fits an `i64`.
        let mut vals = [0i64; 9];
        let mut order = value_order(mask);
        while order != 0 {
            let j = order.trailing_zeros() as usize;
            order &= order - 1;
            let (v, next) = quick_num(body, k)?;
            *vals.get_mut(j)? = v as i64;
            k = next;
        }
        // The derived calls must not overflow (`measures`' check).
        let mut ms = Measures::default();
        store_measures(mask, vals, &mut ms).ok()?;
        let c = &mut self.f.csd[id as usize];
        c.offset = start;
        c.callee = callee as u32;
        self.f.sum_quanta += ms.values[m::QUANTA] as i128;
        self.f.sum_call_seqs += ms.values[m::CALL_SEQS] as i128;
        Some(&body[k..])
    }

    /// A proc-dynamic (token 4) of the common shape (numbers of at most 9 bytes, one-byte
    /// coverage counts, every id in range and listed once), read as [`Self::csd_fast`] reads
    /// its records; `None`, with nothing changed, for any other.
    #[inline]
    fn pd_fast(&mut self, body: &'a [u8], start: u64) -> Option<&'a [u8]> {
        let h = &self.f.header;
        let (n_pd, n_ps, n_csd) = (h.n_pd, h.n_ps, h.n_csd);
        let dynamic = h.coverage == Coverage::Dynamic;
        let (id, k) = quick_num(body, 0)?;
        if id == 0 || id > n_pd as u64 || self.f.pd[id as usize].offset != 0 {
            return None;
        }
        let (ps, k) = quick_num(body, k)?;
        if ps == 0 || ps > n_ps as u64 {
            return None;
        }
        let (n_slots, mut k) = quick_num(body, k)?;
        // Each slot takes two bytes at least (`length`'s check).
        if n_slots.saturating_mul(2) > (body.len() - k) as u64 {
            return None;
        }
        let mut n_coverage = 0;
        if dynamic {
            let (n, next) = quick_num(body, k)?;
            let counts = body.get(next..next.checked_add(usize::try_from(n).ok()?)?)?;
            if counts.iter().any(|&b| b >= 0x80) {
                return None;
            }
            n_coverage = n as u32;
            k = next + counts.len();
        }
        let slot_start = self.f.slot_kind.len();
        let ref_start = self.f.refs.len();
        let id = id as u32;
        // Owners are set as the slots are read, and taken back if the record turns out not to
        // be of the common shape (a second listing of one call-site-dynamic among them).
        let undo = |f: &mut DeepFile<'a>| {
            for &c in &f.refs[ref_start..] {
                f.csd[c as usize].owner = 0;
            }
            f.refs.truncate(ref_start);
            f.ref_css.truncate(ref_start);
            f.slot_kind.truncate(slot_start);
        };
        for slot in 0..n_slots as u32 {
            let Some(&kind) = body.get(k).filter(|&&k| k <= kind::CALLBACK) else {
                undo(&mut self.f);
                return None;
            };
            k += 1;
            self.f.slot_kind.push(kind);
            loop {
                if kind != kind::NORMAL && body.get(k) == Some(&0) {
                    k += 1;
                    break;
                }
                let Some((c, next)) = quick_num(body, k) else {
                    undo(&mut self.f);
                    return None;
                };
                k = next;
                if kind == kind::NORMAL && c == 0 {
                    break;
                }
                let owner = match (c, self.f.csd.get_mut(c as usize)) {
                    (1.., Some(csd)) if c <= n_csd as u64 && csd.owner == 0 => &mut csd.owner,
                    _ => {
                        undo(&mut self.f);
                        return None;
                    }
                };
                *owner = id;
                self.f.refs.push(c as u32);
                self.f.ref_css.push(slot);
                if kind == kind::NORMAL {
                    break;
                }
            }
        }
        if dynamic {
            self.f.coverage_counts += n_coverage as u64;
        }
        let n_refs = (self.f.refs.len() - ref_start) as u32;
        let p = &mut self.f.pd[id as usize];
        p.offset = start;
        p.ps = ps as u32;
        p.slot_start = slot_start as u32;
        p.n_slots = n_slots as u32;
        p.ref_start = ref_start as u32;
        p.n_refs = n_refs;
        p.n_coverage = n_coverage;
        Some(&body[k..])
    }

    /// A list length: each item needs at least `min_item` bytes of what remains.
    #[inline(always)]
    fn length(
        &self,
        i: &'a [u8],
        what: &'static str,
        min_item: u64,
    ) -> Result<(&'a [u8], u32), Fail<'a>> {
        let (rest, n) = field(num(i), what)?;
        if n.saturating_mul(min_item) > rest.len() as u64 {
            return Err(Fail::Semantic(invalid(
                self.off(i),
                format!(
                    "{} is {n}; they need at least {} bytes but only {} remain",
                    plain(what),
                    n.saturating_mul(min_item),
                    rest.len()
                ),
            )));
        }
        Ok((rest, n as u32))
    }

    /// Call-site-static (token 1), after its id.
    fn css(&mut self, i: &'a [u8], id: u32) -> Result<&'a [u8], Fail<'a>> {
        let h = &self.f.header;
        let (i, site) = css_fields(self.data, i, id, h.version, h.n_ps)?;
        let c = &mut self.f.css[id as usize];
        c.kind = site.kind;
        c.callee_ps = site.callee_ps;
        c.line = site.line;
        Ok(i)
    }

    /// Call-site-dynamic (token 2), after its id: callee, mask, values (checked, then left in
    /// the input).
    fn csd(&mut self, i: &'a [u8], id: u32, start: u64) -> Result<&'a [u8], Fail<'a>> {
        let n_pd = self.f.header.n_pd;
        let (i, callee) = reference(
            self.data,
            i,
            "the callee proc-dynamic id (a variable-length number)",
            n_pd,
            "proc-dynamic",
        )?;
        let mut ms = Measures::default();
        let i = measures(i, &mut ms).map_err(|e| match e {
            MeasureError::Syntax(e) => Fail::from(e),
            MeasureError::Mask(at, mask) => Fail::Semantic(invalid(
                self.off(at),
                format!(
                    "call-site-dynamic {id}: measurement mask 0x{mask:x} has bits outside 0x1ff"
                ),
            )),
            MeasureError::TooLarge(at, v) => Fail::Semantic(invalid(
                self.off(at),
                format!(
                    "call-site-dynamic {id}: {}",
                    too_large(format_args!("measurement {v}"), MAX_VALUE)
                ),
            )),
            MeasureError::Overflow => Fail::Semantic(invalid(
                start,
                format!("call-site-dynamic {id}: exits + fails + excps − redos overflows 64 bits"),
            )),
            MeasureError::MoreRedos(redos, ends) => Fail::Semantic(invalid(
                start,
                format!(
                    "call-site-dynamic {id}: {redos} redos, more than its exits + fails + excps ({ends}): its calls (exits + fails + excps − redos) would be negative"
                ),
            )),
        })?;
        self.f.sum_quanta += ms.values[m::QUANTA] as i128;
        self.f.sum_call_seqs += ms.values[m::CALL_SEQS] as i128;
        self.f.csd[id as usize].callee = callee;
        Ok(i)
    }

    /// Proc-static (token 3), after its id.
    fn ps(&mut self, i: &'a [u8], id: u32) -> Result<&'a [u8], Fail<'a>> {
        // The head is checked here and decoded again when the procedure is named.
        let (i, head) = ps_head(self.data, i, id)?;
        let is_func = matches!(head.label, Label::User { is_func: true, .. });
        let hash = short_hash(&head.label);
        let (mut i, n_css) =
            self.length(i, "the number of call sites (a variable-length number)", 1)?;
        let css_start = self.f.ps_css.len() as u32;
        let n_css_total = self.f.header.n_css;
        for _ in 0..n_css {
            let at = self.off(i);
            let (rest, css) = reference(
                self.data,
                i,
                "a call-site-static id (a variable-length number)",
                n_css_total,
                "call-site-static",
            )?;
            let owner = &mut self.f.css[css as usize].owner;
            if *owner != 0 {
                let first = *owner;
                return Err(Fail::Semantic(invalid(
                    at,
                    format!(
                        "proc-static {id} lists call-site-static {css}, already listed by proc-static {first}"
                    ),
                )));
            }
            *owner = id;
            self.f.ps_css.push(css);
            i = rest;
        }
        let mut n_coverage = 0;
        let coverage = self.f.header.coverage;
        if coverage != Coverage::None {
            let min = if coverage == Coverage::Static { 3 } else { 2 };
            let (rest, n) = self.length(
                i,
                "the number of coverage points (a variable-length number)",
                min,
            )?;
            i = rest;
            for _ in 0..n {
                let (rest, _goal) = field(string(i), "a coverage point's goal path (a string)")?;
                let type_at = self.off(rest);
                let (rest, cp_type) = field(
                    num(rest),
                    "a coverage point's type (a variable-length number)",
                )?;
                if cp_type > 1 {
                    return Err(Fail::Semantic(invalid(
                        type_at,
                        format!(
                            "proc-static {id}: unknown coverage point type {cp_type} (0 after goal, 1 branch arm)"
                        ),
                    )));
                }
                i = rest;
                if coverage == Coverage::Static {
                    let (rest, _count) = field(
                        num(i),
                        "a coverage point's count (a variable-length number)",
                    )?;
                    i = rest;
                }
            }
            n_coverage = n;
            self.f.coverage_points += n as u64;
        }
        let p = &mut self.f.ps[id as usize];
        p.css_start = css_start;
        p.n_css = n_css;
        p.n_coverage = n_coverage;
        p.is_func = is_func;
        p.short_hash = hash;
        Ok(i)
    }

    /// Proc-dynamic (token 4), after its id.
    fn pd(&mut self, i: &'a [u8], id: u32) -> Result<&'a [u8], Fail<'a>> {
        let n_ps = self.f.header.n_ps;
        let (i, ps) = reference(
            self.data,
            i,
            "the proc-static id (a variable-length number)",
            n_ps,
            "proc-static",
        )?;
        let (mut i, n_slots) = self.length(
            i,
            "the number of call-site slots (a variable-length number)",
            2,
        )?;
        let mut n_coverage = 0;
        if self.f.header.coverage == Coverage::Dynamic {
            let (rest, n) = self.length(
                i,
                "the number of coverage counts (a variable-length number)",
                1,
            )?;
            i = rest;
            match i.get(..n as usize) {
                // Fast path: every count is a one-byte number.
                Some(counts) if counts.iter().all(|&b| b < 0x80) => i = &i[n as usize..],
                _ => {
                    for _ in 0..n {
                        let (rest, _count) =
                            field(num(i), "a coverage count (a variable-length number)")?;
                        i = rest;
                    }
                }
            }
            n_coverage = n;
            self.f.coverage_counts += n as u64;
        }
        let slot_start = self.f.slot_kind.len() as u32;
        let ref_start = self.f.refs.len() as u32;
        let n_csd = self.f.header.n_csd;
        for slot in 0..n_slots {
            let kind_at = self.off(i);
            let (rest, k) = field(byte(i), "a slot's call-site kind (one byte)")?;
            i = rest;
            if k > kind::CALLBACK {
                return Err(Fail::Semantic(invalid(
                    kind_at,
                    format!(
                        "proc-dynamic {id}: slot {slot} has unknown call-site kind {k} (0..=4)"
                    ),
                )));
            }
            self.f.slot_kind.push(k);
            loop {
                // A normal slot holds one id (0: no call); a list ends with a 00 byte.
                if k != kind::NORMAL && i.first() == Some(&0) {
                    i = &i[1..];
                    break;
                }
                let at = self.off(i);
                let (rest, csd) = field(
                    num(i),
                    if k == kind::NORMAL {
                        "a normal slot's call-site-dynamic id (a variable-length number)"
                    } else {
                        "a call-site-dynamic id or the 00 byte ending the slot's list"
                    },
                )?;
                i = rest;
                if k == kind::NORMAL && csd == 0 {
                    break;
                }
                if csd == 0 {
                    // A list ends with a 00 byte; a 0 written in more bytes (`80 00`) is no id.
                    return Err(Fail::Semantic(invalid(
                        at,
                        format!(
                            "proc-dynamic {id}: slot {slot} lists call-site-dynamic 0, which does not exist (ids start at 1; the list's end is one 00 byte)"
                        ),
                    )));
                }
                if csd > n_csd as u64 {
                    return Err(Fail::Semantic(invalid(
                        at,
                        format!(
                            "proc-dynamic {id}: slot {slot} lists call-site-dynamic {csd}, but the header counts {n_csd}"
                        ),
                    )));
                }
                let csd = csd as u32;
                let owner = &mut self.f.csd[csd as usize].owner;
                if *owner != 0 {
                    let first = *owner;
                    return Err(Fail::Semantic(invalid(
                        at,
                        format!(
                            "proc-dynamic {id} lists call-site-dynamic {csd}, already listed by proc-dynamic {first} (its costs would count twice)"
                        ),
                    )));
                }
                *owner = id;
                self.f.refs.push(csd);
                self.f.ref_css.push(slot);
                if k == kind::NORMAL {
                    break;
                }
            }
        }
        let p = &mut self.f.pd[id as usize];
        p.ps = ps;
        p.slot_start = slot_start;
        p.n_slots = n_slots;
        p.ref_start = ref_start;
        p.n_refs = self.f.refs.len() as u32 - ref_start;
        p.n_coverage = n_coverage;
        Ok(i)
    }

    /// After the loop: every id of the header's counts was read, and the records agree with
    /// each other (spec §11 step 5). Also marks the called proc-statics and turns each
    /// listed call-site-dynamic's slot into its call-site-static ([`DeepFile::ref_css`]).
    ///
    /// One pass over each table checks everything; only when a check fails are the tables
    /// searched again, check by check, for the error to report ([`Self::first_error`]). (A
    /// pass per check read the two largest tables twice each.)
    fn validate(&mut self) -> Result<(), PluginError> {
        if self.check_all() {
            return Ok(());
        }
        Err(self.first_error().unwrap_or_else(|| {
            PluginError::internal("the records' checks failed, but none reports why".to_string())
        }))
    }

    /// True when every check of [`Self::validate`] holds; marks and converts as it goes.
    fn check_all(&mut self) -> bool {
        let f = &self.f;
        if f.css.iter().skip(1).any(|c| c.offset == 0)
            || f.ps.iter().skip(1).any(|p| p.offset == 0)
            || f.csd.iter().skip(1).any(|c| c.offset == 0 || c.owner == 0)
        {
            return false;
        }
        // The kinds of each procedure's call sites, laid out like `ps_css`, so that a
        // proc-dynamic's slot kinds compare with one contiguous slice.
        let site_kind: Vec<u8> = f.ps_css.iter().map(|&c| f.css[c as usize].kind).collect();
        let dynamic = f.header.coverage == Coverage::Dynamic;
        let DeepFile {
            ps: ps_table,
            pd,
            ps_css,
            slot_kind,
            ref_css,
            ..
        } = &mut self.f;
        for p in pd.iter().skip(1) {
            if p.offset == 0 {
                return false;
            }
            // Marked here, where the entry is loaded anyway (marking it while reading the
            // proc-dynamic was a store at a random place per record).
            let ps = &mut ps_table[p.ps as usize];
            ps.called = true;
            if p.n_slots != ps.n_css || (dynamic && p.n_coverage != ps.n_coverage) {
                return false;
            }
            let slots = p.slot_start as usize..(p.slot_start + p.n_slots) as usize;
            let sites = ps.css_start as usize..(ps.css_start + ps.n_css) as usize;
            if slot_kind[slots] != site_kind[sites.clone()] {
                return false;
            }
            // Each listed call-site-dynamic's slot becomes its call-site-static (a slot is
            // below `n_slots`, which is the procedure's number of call sites).
            let site_css = &ps_css[sites];
            for r in &mut ref_css[p.ref_start as usize..(p.ref_start + p.n_refs) as usize] {
                *r = site_css[*r as usize];
            }
        }
        true
    }

    /// The first failed check of [`Self::validate`], in the spec's order (`None` when every
    /// check holds).
    fn first_error(&self) -> Option<PluginError> {
        let len = self.data.len() as u64;
        let f = &self.f;
        // An end token stops the record loop before the end of the data: a missing record is
        // then before that token, and the bytes after it are no hint of a cut.
        let missing = |name: &str, count: u32, id: usize| match f.end_token_at {
            Some(at) => {
                let after = len - at - 1;
                invalid(
                    at,
                    format!(
                        "the header counts {count} {name} records, but {name} {id} is not in the file: the record list ended at the end token (0) at byte {at}{}",
                        if after > 0 {
                            format!(", and the {after} bytes after it were ignored")
                        } else {
                            String::new()
                        }
                    ),
                )
            }
            None => invalid(
                len,
                format!(
                    "the header counts {count} {name} records, but {name} {id} is not in the file (it ends at byte {len}; cut at a record boundary?)"
                ),
            ),
        };
        if let Some(k) = (1..f.css.len()).find(|&k| f.css[k].offset == 0) {
            return Some(missing("call-site-static", f.header.n_css, k));
        }
        if let Some(k) = (1..f.csd.len()).find(|&k| f.csd[k].offset == 0) {
            return Some(missing("call-site-dynamic", f.header.n_csd, k));
        }
        if let Some(k) = (1..f.ps.len()).find(|&k| f.ps[k].offset == 0) {
            return Some(missing("proc-static", f.header.n_ps, k));
        }
        if let Some(k) = (1..f.pd.len()).find(|&k| f.pd[k].offset == 0) {
            return Some(missing("proc-dynamic", f.header.n_pd, k));
        }
        for (k, c) in f.csd.iter().enumerate().skip(1) {
            if c.owner == 0 {
                return Some(invalid(
                    c.offset,
                    format!(
                        "call-site-dynamic {k} is not listed in any proc-dynamic's slots (it has no caller)"
                    ),
                ));
            }
        }
        // The kinds of each procedure's call sites, laid out like `ps_css`, so that a
        // proc-dynamic's slot kinds compare with one contiguous slice.
        let site_kind: Vec<u8> = f.ps_css.iter().map(|&c| f.css[c as usize].kind).collect();
        for (k, p) in f.pd.iter().enumerate().skip(1) {
            let ps = &f.ps[p.ps as usize];
            if p.n_slots != ps.n_css {
                return Some(invalid(
                    p.offset,
                    format!(
                        "proc-dynamic {k} has {} slots, but its proc-static {} has {} call sites",
                        p.n_slots, p.ps, ps.n_css
                    ),
                ));
            }
            if f.header.coverage == Coverage::Dynamic && p.n_coverage != ps.n_coverage {
                return Some(invalid(
                    p.offset,
                    format!(
                        "proc-dynamic {k} has {} coverage counts, but its proc-static {} has {} coverage points",
                        p.n_coverage, p.ps, ps.n_coverage
                    ),
                ));
            }
            let slots = p.slot_start as usize..(p.slot_start + p.n_slots) as usize;
            let sites = ps.css_start as usize..(ps.css_start + ps.n_css) as usize;
            if f.slot_kind[slots.clone()] == site_kind[sites.clone()] {
                continue;
            }
            for s in 0..p.n_slots {
                let css = f.ps_css[sites.start + s as usize];
                let sk = f.slot_kind[slots.start + s as usize];
                let ck = f.css[css as usize].kind;
                if sk != ck {
                    return Some(invalid(
                        p.offset,
                        format!(
                            "proc-dynamic {k}: slot {s} is {} but its call-site-static {css} is {}",
                            kind::name(sk),
                            kind::name(ck)
                        ),
                    ));
                }
            }
        }
        None
    }
}
