//! Input (file or stdin, gzip undone, head kept for sniffing) and atomic output.

use flate2::bufread::GzDecoder;
use profconv_plugin::host::{Blocking, MappedFile};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A path as messages show it: lossy for bytes that are not UTF-8 (as `Path::display`), and
/// with control characters escaped (`\n` as the two characters `\` `n`), so that a file name
/// cannot print a line that reads as one of profconv's own, nor move the terminal's cursor.
pub fn shown(path: &Path) -> String {
    profconv_plugin::escape_controls(&path.display().to_string()).into_owned()
}

/// Bytes read ahead for sniffing.
pub const HEAD: usize = 16 * 1024;

/// An opened input: its first bytes (for sniffing) and a reader that yields everything.
pub struct OpenInput {
    /// Name for messages (`<stdin>` or the path).
    pub name: String,
    /// Path (for extensions); `-` for stdin.
    pub path: PathBuf,
    /// The first bytes of the (decompressed) content.
    pub head: Vec<u8>,
    /// The rest after `head`.
    rest: Box<dyn Read>,
    /// Size when known (uncompressed files).
    pub size_hint: Option<u64>,
    /// A gzip-compressed regular file: its (compressed) size, and how many of its bytes the
    /// decoder has consumed so far, which the progress bar shows against that size.
    compressed: Option<(u64, Arc<AtomicU64>)>,
    /// The file, when it is not compressed (it may then be mapped instead of read).
    file: Option<File>,
    /// A gzip-compressed input (a file or stdin): its stream can be read on to check it
    /// ([`check_gzip_rest`]), as the parallel reader reads ahead on stdin too.
    pub gzip_file: bool,
    /// The format was chosen by the input's content alone, not by `--from` nor by its name: a
    /// parse error then says so (a folded file whose first lines look like a debugger trace).
    pub detected_by_content: bool,
}

/// Buffer of the file's reader (see `OpenInput::open`).
const RAW_BUFFER: usize = 64 << 10;

/// A reader whose first read fails with the error it holds, and which is then at its end.
struct FailsOnce(Option<io::Error>);

impl Read for FailsOnce {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}

/// A reader that stays at its end once it has reached it: a terminal reports the end of input
/// (Ctrl-D) to one read only, and the next waits for more typing.
struct Fused<R> {
    inner: R,
    ended: bool,
}

impl<R: Read> Read for Fused<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended || buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        self.ended = n == 0;
        Ok(n)
    }
}

/// A regular file read (not mapped) to its end: an end met before the size the file had when
/// it was opened, now that it is shorter, is an error, not the end of the input. Another program
/// truncated or rewrote the file under the reading (`>` on it, `truncate`, a log rotation): a
/// mapped file faults there, which ends the run with an error (`MappedFile::on_truncation`),
/// but read, the part before the cut was converted as the whole profile, with exit 0 (a
/// streaming parser such as callgrind's, a file read under an address-space limit, a gzip file
/// cut between members).
struct Unshrunk {
    file: Blocking<File>,
    /// The file's length when it was opened.
    size: u64,
    /// Bytes read so far.
    read: u64,
}

impl Read for Unshrunk {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read += n as u64;
        if n == 0 && !buf.is_empty() && self.read < self.size {
            // A file that says it is larger than it reads (some files of /sys) has not shrunk.
            if let Ok(now) = self.file.0.metadata().map(|m| m.len())
                && now < self.size
            {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the file shrank while it was being read (another program truncated or \
                         rewrote it): it had {} bytes, and ended after {}; nothing was written",
                        self.size, self.read
                    ),
                ));
            }
        }
        Ok(n)
    }
}

impl OpenInput {
    /// Opens `path` (`-` is stdin); gzip input is decompressed transparently.
    pub fn open(path: &Path) -> io::Result<OpenInput> {
        let mut file = None;
        let (name, raw, size): (String, Box<dyn Read>, Option<u64>) = if path == Path::new("-") {
            // Open for writing only (`0>file`): Rust's stdin takes the EBADF of its reads for
            // the end of the input, which was then an empty profile and exit 0.
            #[cfg(unix)]
            if profconv_plugin::host::write_only_descriptor(0) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "standard input is open for writing only, not for reading (Bad file \
                     descriptor)",
                ));
            }
            // Fused: a terminal's end of input (Ctrl-D) is given once, and every read after it
            // (the head's, then the parser's) waited for another.
            let stdin = Fused {
                inner: Blocking(io::stdin()),
                ended: false,
            };
            ("<stdin>".into(), Box::new(stdin), None)
        } else {
            let f = File::open(path)?;
            if f.metadata()?.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a directory",
                ));
            }
            // Only a regular file's length is its size: a FIFO's (`<(cmd)`, `mkfifo`) or a
            // device's is 0 whatever it holds, and was passed on as a known size of 0.
            let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
            file = f.try_clone().ok();
            // A FIFO or a descriptor's path (`/dev/fd/N` shares the open file on the BSDs and
            // macOS) may be non-blocking too.
            let reader: Box<dyn Read> = match size {
                Some(size) => Box::new(Unshrunk {
                    file: Blocking(f),
                    size,
                    read: 0,
                }),
                None => Box::new(Blocking(f)),
            };
            (shown(path), reader, size)
        };
        // Small enough that a parser reading a block of 1 MiB (as the folded and PVM readers
        // do) reads straight into its own buffer: std's `BufReader` passes a read at least as
        // large as its capacity through once its buffer is empty, instead of copying every byte
        // once more (3.5 % of a 1 GB folded conversion). Small reads are still buffered.
        let mut raw = BufReader::with_capacity(RAW_BUFFER, raw);
        let mut magic = Vec::with_capacity(2);
        (&mut raw).take(2).read_to_end(&mut magic)?;
        let chained = Cursor::new(magic.clone()).chain(raw);
        let gzip_file = magic == [0x1f, 0x8b];
        let mut compressed = None;
        let (mut reader, size_hint): (Box<dyn Read>, _) = if gzip_file {
            file = None;
            let consumed = Arc::new(AtomicU64::new(0));
            compressed = size.map(|size| (size, Arc::clone(&consumed)));
            let decoder = GzipReader::new(chained, consumed);
            (Box::new(BufReader::with_capacity(1 << 20, decoder)), None)
        } else {
            (Box::new(chained), size)
        };
        let mut head = Vec::with_capacity(HEAD);
        if let Err(e) = (&mut reader).take(HEAD as u64).read_to_end(&mut head) {
            // Data after the last gzip member, met while reading the head: the bytes before it
            // were checked by their members' checksums, so the parser reads them first, and
            // the error comes after them (a bad line among them is the error, as in a larger
            // file, where the parser reaches it before the reading reaches the data).
            if !corrupt_gzip(&e).is_some_and(|c| c.after_last_member) {
                return Err(e);
            }
            reader = Box::new(FailsOnce(Some(e)));
        }
        Ok(OpenInput {
            name,
            path: path.to_path_buf(),
            head,
            rest: reader,
            size_hint,
            compressed,
            file,
            gzip_file,
            detected_by_content: false,
        })
    }

    /// The whole file mapped into memory, when it is an uncompressed regular file large enough
    /// to gain by it, with the progress bar to draw, if any. A parser that tells how far it has
    /// read (`tracked`: it releases the input behind it) moves the bar; for any other the bar
    /// counts the bytes read, and a parser reading a mapped file reads none, so then the file
    /// is read, not mapped. No bar without `bar` (`--quiet`). `None` when mapping fails too:
    /// the file is then read.
    pub fn mapped(
        &self,
        tracked: bool,
        bar: bool,
    ) -> Option<(MappedFile, Option<indicatif::ProgressBar>)> {
        let shows = bar && shows_progress(self.counted());
        // A parser that releases the input behind it reads a file too large for an address-
        // space limit: mapped, it would count whole.
        let read = tracked
            && self
                .size_hint
                .is_some_and(profconv_plugin::host::read_rather_than_map);
        match &self.file {
            Some(f) if (tracked || !shows) && !read => {
                let mapped = MappedFile::new(f)?;
                let bar = shows
                    .then(|| progress_bar(&self.name, self.counted()))
                    .flatten();
                Some((mapped, bar))
            }
            _ => None,
        }
    }

    /// Reads on through a gzip input's stream, bounded as [`check_gzip_rest`] is, and returns
    /// its corruption if it has one: what a failure on the garbage it decompressed into
    /// (detection that knew no format) is to report instead.
    pub fn gzip_corruption(&mut self) -> Option<io::Error> {
        match self.gzip_file {
            // Any error, data after the last member too: nothing was read as a profile.
            true => gzip_rest_error(&mut self.rest, true),
            false => None,
        }
    }

    /// What a progress bar for this input counts.
    fn counted(&self) -> Counted {
        match (&self.compressed, self.size_hint) {
            (Some((size, consumed)), _) => Counted::Compressed {
                size: *size,
                consumed: consumed.load(Ordering::Relaxed),
            },
            (None, Some(size)) => Counted::File(size),
            (None, None) => Counted::Stream,
        }
    }

    /// The input as a reader, its head first; with a progress bar when `progress` (and the
    /// input is large or of unknown size, like a pipe, and stderr a terminal). The bar counts
    /// the bytes read, or for a gzip file of known size the compressed bytes its decoder has
    /// consumed, against that size.
    pub fn into_reader(self, progress: bool) -> Box<dyn Read> {
        let counted = self.counted();
        let bar = progress
            .then(|| progress_bar(&self.name, counted))
            .flatten();
        let reader = Cursor::new(self.head).chain(self.rest);
        match (bar, self.compressed) {
            (Some(bar), Some((_, consumed))) => Box::new(CompressedProgress {
                inner: reader,
                bar,
                consumed,
            }),
            (Some(bar), None) => Box::new(bar.wrap_read(reader)),
            (None, _) => Box::new(reader),
        }
    }
}

/// A gzip file's decompressed content, moving the progress bar to the compressed bytes its
/// decoder has consumed after each read.
struct CompressedProgress<R> {
    inner: R,
    bar: indicatif::ProgressBar,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for CompressedProgress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.set_position(self.consumed.load(Ordering::Relaxed));
        Ok(n)
    }
}

/// Corrupt or truncated gzip data: the input is malformed (not an I/O failure), at `offset`
/// bytes into the compressed input (how far the decoder had read when it gave up).
#[derive(Debug)]
pub struct CorruptGzip {
    /// Compressed bytes consumed by the decoder when the error was found.
    pub offset: u64,
    /// What is wrong, e.g. `the gzip stream ends unexpectedly`.
    pub detail: String,
    /// The data is after the last whole member: every byte decompressed before it was checked
    /// by its member's checksum, so it spoils none of them.
    pub after_last_member: bool,
}

impl CorruptGzip {
    /// The message without the offset (for `FILE: byte N: message`).
    pub fn what(&self) -> String {
        format!("corrupt or truncated gzip data: {}", self.detail)
    }
}

impl std::fmt::Display for CorruptGzip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "corrupt or truncated gzip data at byte {} of the compressed input: {}",
            self.offset, self.detail
        )
    }
}

impl std::error::Error for CorruptGzip {}

/// The gzip details of a read error, when the compressed data (not the reading) was at fault.
pub fn corrupt_gzip(e: &io::Error) -> Option<&CorruptGzip> {
    e.get_ref()?.downcast_ref::<CorruptGzip>()
}

/// The compressed bytes under the gzip decoder: counts what the decoder consumed (shared with
/// the progress bar, as `shared`), and notes whether reading them failed (then the decoder's
/// error is an I/O error, not bad data).
struct Compressed<R> {
    inner: R,
    consumed: u64,
    shared: Arc<AtomicU64>,
    read_failed: bool,
}

impl<R: BufRead> Read for Compressed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Compressed<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self.inner.fill_buf() {
            Ok(b) => Ok(b),
            Err(e) => {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.read_failed = true;
                }
                Err(e)
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        self.consumed += amt as u64;
        // Once per block the decoder takes in, not per byte.
        self.shared.store(self.consumed, Ordering::Relaxed);
        self.inner.consume(amt);
    }
}

/// A multi-member gzip decoder whose errors about the data are [`CorruptGzip`] (with the
/// compressed byte offset), while errors reading the file stay as they are. Members are decoded
/// one after the other, so that data after the last one that is not a gzip member is reported
/// where it starts.
struct GzipReader<R: BufRead> {
    /// The current member's decoder (once it is at its end, its reader is where the next
    /// member starts); `None` once the input is done.
    decoder: Option<GzDecoder<Compressed<R>>>,
    /// Compressed offset where the current member starts, and how many members came before.
    member_start: u64,
    members_done: u64,
    /// Where the member just finished ends, while what follows it is being looked at (kept
    /// across a read interrupted there).
    member_end: Option<u64>,
    /// The current member (not the first) starts with gzip's magic bytes: if it fails before
    /// its header is read, it was cut short, not data of another kind.
    starts_as_gzip: bool,
}

impl<R: BufRead> GzipReader<R> {
    /// The decoder of `inner`, telling in `consumed` how many of its bytes it has consumed.
    fn new(inner: R, consumed: Arc<AtomicU64>) -> Self {
        GzipReader {
            decoder: Some(GzDecoder::new(Compressed {
                inner,
                consumed: 0,
                shared: consumed,
                read_failed: false,
            })),
            member_start: 0,
            members_done: 0,
            member_end: None,
            starts_as_gzip: true,
        }
    }

    /// The decoder's error `e`, as a [`CorruptGzip`] when the data is at fault. `trailing` is
    /// where a member after the first starts when it failed before its header was read: data
    /// after the last member, or (`starts_as_gzip`) a member cut short in its header.
    fn error(
        e: io::Error,
        compressed: &Compressed<R>,
        trailing: Option<u64>,
        starts_as_gzip: bool,
    ) -> io::Error {
        if compressed.read_failed || e.kind() == io::ErrorKind::Interrupted {
            return e;
        }
        let mut detail = if e.kind() == io::ErrorKind::UnexpectedEof {
            "the gzip stream ends unexpectedly".to_string()
        } else {
            format!("gzip stream: {e}")
        };
        let mut offset = compressed.consumed;
        let after_last_member = trailing.is_some() && !starts_as_gzip;
        if let Some(start) = trailing {
            // A member ended well and what follows is not a whole member: point at its start.
            detail = match starts_as_gzip {
                true => {
                    "a gzip member cut short in its header (the member before it ends here)".into()
                }
                // The decoder's own words (an unexpected end, a bad header) are about a member
                // these bytes were never meant to be.
                false => "unexpected data after the last gzip member (which ends at this byte): \
                          not another member; gzip(1) ignores such data with a warning"
                    .into(),
            };
            offset = start;
        }
        io::Error::new(
            io::ErrorKind::InvalidData,
            CorruptGzip {
                offset,
                detail,
                after_last_member,
            },
        )
    }
}

impl<R: BufRead> Read for GzipReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let (members_done, member_start) = (self.members_done, self.member_start);
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(0);
            };
            match decoder.read(buf) {
                Ok(0) if !buf.is_empty() => {
                    // The member ended (trailer checked): another may follow. The decoder
                    // stays in place until it does, so that an error or an interruption here
                    // is met again by the next read, never taken for the input's end.
                    let compressed = decoder.get_mut();
                    let end = *self.member_end.get_or_insert(compressed.consumed);
                    // Zero bytes after the last member (padding to a block size, as tar and dd
                    // leave) are skipped, as gzip(1) skips them.
                    loop {
                        let zeros = match compressed.fill_buf() {
                            Ok([]) => {
                                self.decoder = None;
                                return Ok(0);
                            }
                            Ok(b) => b.iter().take_while(|&&x| x == 0).count(),
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => return Err(e),
                        };
                        if zeros == 0 {
                            break;
                        }
                        compressed.consume(zeros);
                    }
                    if compressed.consumed > end {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            CorruptGzip {
                                offset: end,
                                detail: "zero bytes and then other data (data after the last \
                                         gzip member, which ends here)"
                                    .into(),
                                after_last_member: true,
                            },
                        ));
                    }
                    // Not empty (the loop stopped on a byte that is not zero).
                    let next = compressed.fill_buf().unwrap_or_default();
                    self.starts_as_gzip = next.starts_with(&[0x1f, 0x8b]) || next == [0x1f];
                    let compressed = self.decoder.take().expect("a decoder").into_inner();
                    self.member_end = None;
                    self.members_done += 1;
                    self.member_start = compressed.consumed;
                    self.decoder = Some(GzDecoder::new(compressed));
                }
                Ok(n) => return Ok(n),
                Err(e) => {
                    // The header not read yet, after a member: not a whole member.
                    let trailing =
                        (members_done > 0 && decoder.header().is_none()).then_some(member_start);
                    return Err(Self::error(
                        e,
                        decoder.get_ref(),
                        trailing,
                        self.starts_as_gzip,
                    ));
                }
            }
        }
    }
}

/// Inputs smaller than this convert too fast for a progress bar to help.
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// The same for a gzip file, by its compressed size: a quarter. Profiles gzip 3.4× (a callgrind
/// file) to 50× (folded stacks), so a gzip file this large holds about 54 MiB or more, and its
/// decompression takes time of its own.
const GZIP_PROGRESS_MIN_BYTES: u64 = PROGRESS_MIN_BYTES / 4;

/// What a progress bar counts.
#[derive(Clone, Copy, Debug)]
enum Counted {
    /// The bytes of a stream of unknown size (a pipe, stdin, gzip data from either).
    Stream,
    /// The bytes of a file of this size.
    File(u64),
    /// The compressed bytes of a gzip file of `size` bytes that its decoder has consumed
    /// (`consumed` of them so far, for the head).
    Compressed { size: u64, consumed: u64 },
}

/// Whether an input gets a progress bar: stderr is a terminal and the input is large or of
/// unknown size.
fn shows_progress(counted: Counted) -> bool {
    use std::io::IsTerminal;
    io::stderr().is_terminal()
        && match counted {
            Counted::Stream => true,
            Counted::File(size) => size >= PROGRESS_MIN_BYTES,
            Counted::Compressed { size, .. } => size >= GZIP_PROGRESS_MIN_BYTES,
        }
}

fn progress_bar(name: &str, counted: Counted) -> Option<indicatif::ProgressBar> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
    if !shows_progress(counted) {
        return None;
    }
    // Hidden where indicatif would hide it (`TERM=dumb`).
    if ProgressDrawTarget::stderr().is_hidden() {
        return None;
    }
    let target = || ProgressDrawTarget::term_like_with_hz(Box::new(BarTerm::stderr()), 20);
    // One row of the terminal: the name takes the room the rest leaves (`wide_msg`, cut short
    // if need be), and the rest fits 80 columns (69 of them, numbers padded so that the name
    // does not shift as they grow). A line that wraps is two rows, and what erases the bar with
    // a single `\r\x1b[2K` (the handler of a file truncated under the parse) left its first.
    // A gzip file's bar counts its compressed bytes (and their rate), which `gz` before them
    // says, in three columns of its bar's.
    let bar = match counted {
        Counted::File(total) => ProgressBar::with_draw_target(Some(total), target()).with_style(
            ProgressStyle::with_template(
                "{wide_msg} [{bar:20}] {bytes:>10}/{total_bytes} {bytes_per_sec:>12} eta {eta:>3}",
            )
            .ok()?
            .progress_chars("=> "),
        ),
        Counted::Compressed { size, consumed } => {
            let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::hidden())
                .with_style(
                    ProgressStyle::with_template(
                        "{wide_msg} [{bar:17}] gz {bytes:>10}/{total_bytes} {bytes_per_sec:>12} \
                         eta {eta:>3}",
                    )
                    .ok()?
                    .progress_chars("=> "),
                )
                .with_position(consumed);
            // The rate and ETA measured from the bytes consumed for the head, before the bar:
            // counted as its first step, their jump from 0 showed GiB/s, slow to fade.
            bar.tick();
            bar.reset_eta();
            bar.set_draw_target(target());
            bar
        }
        Counted::Stream => ProgressBar::with_draw_target(None, target()).with_style(
            ProgressStyle::with_template("{wide_msg} {spinner} {bytes:>10} {bytes_per_sec:>12}")
                .ok()?,
        ),
    };
    // Control characters escaped: a file name must not drive the terminal or break the bar.
    let bar = bar
        .with_message(profconv_plugin::quote_input(name.as_bytes(), usize::MAX))
        .with_finish(ProgressFinish::AndClear);
    if let Ok(mut drawn) = PROGRESS.lock() {
        *drawn = Some(bar.downgrade());
    }
    Some(bar)
}

/// Stderr as the progress bar's terminal, two columns narrower than it is. indicatif pads the
/// bar's line to the width it is given and leaves the cursor at its end: on the full width the
/// cursor waits in the last column, and the `^C` a terminal echoes for Ctrl-C (or a key typed
/// ahead) went onto the next row, whose clearing (`on_interrupt`, the next redraw) then left
/// the bar's own row on the screen. Two columns keep the echo on the bar's row.
///
/// Nothing is drawn while profconv is in the background of the terminal (`profconv … &`, or
/// Ctrl-Z then `bg`): the bar was drawn over the shell's prompt and what the user typed after
/// it, and with `stty tostop` its first draw stopped the conversion ("Stopped (tty output)").
/// Back in the foreground (`fg`), it is drawn again, on the row the cursor is on.
#[derive(Debug)]
struct BarTerm(console::Term);

impl BarTerm {
    fn stderr() -> BarTerm {
        BarTerm(console::Term::buffered_stderr())
    }

    /// `draw` unless the process is in the background of the terminal.
    fn unless_background(
        &self,
        draw: impl FnOnce(&console::Term) -> io::Result<()>,
    ) -> io::Result<()> {
        #[cfg(unix)]
        if profconv_plugin::host::in_background_of(2) {
            return Ok(());
        }
        draw(&self.0)
    }
}

impl indicatif::TermLike for BarTerm {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(2).max(1)
    }
    fn height(&self) -> u16 {
        self.0.size().0
    }
    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        self.unless_background(|t| t.move_cursor_up(n))
    }
    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        self.unless_background(|t| t.move_cursor_down(n))
    }
    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        self.unless_background(|t| t.move_cursor_right(n))
    }
    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        self.unless_background(|t| t.move_cursor_left(n))
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        self.unless_background(|t| t.write_line(s))
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.unless_background(|t| t.write_str(s))
    }
    fn clear_line(&self) -> io::Result<()> {
        self.unless_background(|t| t.clear_line())
    }
    fn flush(&self) -> io::Result<()> {
        self.unless_background(|t| t.flush())
    }
}

/// The progress bar being drawn, if any: weak, so that the bar still clears itself when its
/// reader is dropped.
static PROGRESS: std::sync::Mutex<Option<indicatif::WeakProgressBar>> = std::sync::Mutex::new(None);

fn drawn_progress() -> Option<indicatif::ProgressBar> {
    PROGRESS.lock().ok()?.as_ref()?.upgrade()
}

/// Runs `print` (a message to stderr) with the progress bar, if one is drawn, out of its way: a
/// warning printed during the parse is not appended to the bar's line and then partly erased
/// by its next redraw.
pub fn above_progress(print: impl FnOnce()) {
    match drawn_progress() {
        Some(bar) => bar.suspend(print),
        None => print(),
    }
}

/// Buffer of stdout and of devices and pipes: half the SDK's emit buffer, so the blocks an
/// emitter hands over (nearly that full) go straight to the system call, and only small writes
/// are gathered (copying every block once more was 15 % of a PVM trace's conversion to folded
/// stacks on stdout: 2.9 GB copied).
const DIRECT_BUFFER: usize = profconv_plugin::EMIT_BUFFER / 2;

/// Where output goes: stdout, a device or pipe written directly, or a temp file renamed over
/// the target when complete.
pub enum Sink {
    Stdout(io::BufWriter<Blocking<io::Stdout>>),
    /// A target that is not a regular file (`/dev/null`, a FIFO, `/dev/stdout`): renaming over
    /// it would replace the device itself, so it is written in place.
    Direct(io::BufWriter<Blocking<File>>),
    File {
        tmp: tempfile::NamedTempFile,
        target: PathBuf,
    },
}

/// The temp file of the conversion under way, removed if the process is interrupted or
/// terminated (SIGINT, SIGTERM, SIGHUP).
static PENDING_TEMP: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

fn set_pending(path: Option<PathBuf>) {
    profconv_plugin::host::remove_on_abort(path.as_deref());
    if let Ok(mut p) = PENDING_TEMP.lock() {
        *p = path;
    }
}

/// Set once the output is complete and in place (renamed over the target, or flushed).
static OUTPUT_DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The interrupt handler: removes the pending temp file, if any, clears the progress bar and
/// ends the process by the signal that came (exit `code` where none was noted). The lock is
/// held until the process ends, so no new temp file can appear in between. Once the output is
/// complete, an interrupt changes nothing: the run, done but for freeing its memory, ends as it
/// would have (ending by the signal would say the output was not written, and it was).
pub fn on_interrupt(code: i32) {
    let mut p = PENDING_TEMP.lock().unwrap_or_else(|p| p.into_inner());
    if OUTPUT_DONE.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    if let Some(path) = p.take() {
        let _ = std::fs::remove_file(path);
    }
    if let Some(bar) = drawn_progress() {
        bar.finish_and_clear();
    }
    profconv_plugin::host::end_by_interrupt(code)
}

/// Acts on an interrupt that has arrived ([`on_interrupt`]), on this thread, whether or not the
/// thread that acts on interrupts has run yet.
pub fn end_if_interrupted() {
    if profconv_plugin::host::interrupted() {
        on_interrupt(130);
    }
}

impl Sink {
    /// `-` is stdout; an existing non-regular file is written directly; anything else goes to a
    /// temp file beside the target (after following symlinks), so the final rename is atomic
    /// and replaces the file the user named, not a link to it. `by_stdout` is how the same
    /// output is written through stdout (`--to FMT -o - > FILE`), for the hint when the
    /// directory takes no new file.
    pub fn create(target: &Path, by_stdout: &str) -> io::Result<Sink> {
        if target == Path::new("-") {
            stdout_writable()?;
            return Ok(Sink::Stdout(io::BufWriter::with_capacity(
                DIRECT_BUFFER,
                Blocking(io::stdout()),
            )));
        }
        // `/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`: a descriptor this process already has
        // open (often a file the shell opened for `> out`). Resolving it to that file and
        // renaming a temp file over it would cut the shell's own writes out of the file, before
        // and after ours; write through the descriptor instead, as `> /dev/stdout` does.
        match open_descriptor(target) {
            Some(1) => {
                stdout_writable()?;
                return Ok(Sink::Stdout(io::BufWriter::with_capacity(
                    DIRECT_BUFFER,
                    Blocking(io::stdout()),
                )));
            }
            // Another descriptor: written through a duplicate of it, at the position its other
            // writes share (opening the path again would start a position of its own, which
            // the shell's next write to the descriptor overwrites, and fails for a socket).
            #[cfg(unix)]
            Some(n) => {
                if profconv_plugin::host::read_only_descriptor(n) {
                    return Err(not_for_writing(&format!("descriptor {n}")));
                }
                let f = profconv_plugin::host::duplicate_descriptor(n)?;
                return Ok(Sink::Direct(io::BufWriter::with_capacity(
                    DIRECT_BUFFER,
                    Blocking(f),
                )));
            }
            #[cfg(not(unix))]
            Some(_) => {}
            None => {}
        }
        // `nodir/` (or `nodir/.`) names a directory: a file cannot be made under that name
        // (the rename would fail after the whole conversion, saying "not a directory").
        let bytes = target.as_os_str().as_encoded_bytes();
        let names_a_directory = [&b"/"[..], b"/.", b"/.."]
            .iter()
            .any(|e| bytes.ends_with(e))
            || bytes == b"."
            || bytes == b"..";
        if names_a_directory && !target.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "names a directory (it ends in `/`, `/.` or `/..`), and no directory is there: \
                 give a file name",
            ));
        }
        let target = match std::fs::metadata(target) {
            Ok(meta) if !meta.is_file() => {
                if meta.is_dir() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "is a directory",
                    ));
                }
                // A FIFO another user made in /tmp is read by them: refused before it is
                // opened, as the system refuses the shell's `> fifo` (fs.protected_fifos).
                #[cfg(unix)]
                if let Some(dir) = std::fs::canonicalize(target)
                    .ok()
                    .and_then(|t| t.parent().map(Path::to_path_buf))
                    && let Some(why) = planted(&meta, &dir)
                {
                    return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
                }
                let f = std::fs::OpenOptions::new().write(true).open(target)?;
                return Ok(Sink::Direct(io::BufWriter::with_capacity(
                    DIRECT_BUFFER,
                    Blocking(f),
                )));
            }
            Ok(_) => std::fs::canonicalize(target)?,
            // The system refuses to follow a link `fs.protected_symlinks` protects (another
            // user's, in a world-writable sticky directory such as /tmp): not resolved by hand,
            // which would write where the system would not.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && protected_link(target) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "{e}: the system does not let this user follow this symbolic link \
                         (another user's link in a world-writable sticky directory, \
                         fs.protected_symlinks), so it is not written through"
                    ),
                ));
            }
            // A name longer than the file system takes (ENAMETOOLONG): refused now, not by
            // the rename after the whole conversion.
            Err(e) if profconv_plugin::host::name_too_long(&e) => return Err(e),
            // Not there yet (or not reachable: said below, with the directory): a new file.
            Err(_) => link_target(target)?,
        };
        // A file being replaced: the new one gets its mode (and owner, where allowed), as `>`
        // or `sed -i` keep them, and one the user may not write is not replaced behind its
        // permissions' back.
        let existing = std::fs::metadata(&target).ok().filter(|m| m.is_file());
        if existing.is_some()
            && let Some(attribute) = profconv_plugin::host::replacing_forbidden_by(&target)
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("the file is {attribute} (see `lsattr`), so it cannot be replaced"),
            ));
        }
        if existing.is_some() && !profconv_plugin::host::may_write(&target) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the file is not writable (its permissions do not let this user write it), so it is not replaced",
            ));
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Errors name the directory, not the temp file's internal name (the caller names the
        // target): check the directory first, and drop tempfile's `at path ".profconv-…"`.
        let in_dir = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {e}", shown(&dir)),
            )
        };
        match std::fs::metadata(&dir) {
            Ok(meta) if !meta.is_dir() => {
                return Err(in_dir(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "not a directory",
                )));
            }
            Ok(_) => {}
            Err(e) => return Err(in_dir(e)),
        }
        // Another user's file in /tmp: replacing it would hand them the output (its owner and
        // mode are kept), which the system refuses the shell's `> file` (fs.protected_regular),
        // root's too.
        #[cfg(unix)]
        if let Some(old) = &existing
            && let Some(why) = planted(old, &dir)
        {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
        }
        // A temp file made in an append-only directory could be neither renamed into place nor
        // removed: it would stay, and nobody could delete it.
        match profconv_plugin::host::replacing_forbidden_by(&dir) {
            Some(profconv_plugin::host::Unreplaceable::AppendOnly) => {
                return Err(in_dir(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the directory is append-only (see `lsattr -d`): a file made in it could be \
                     neither renamed into place nor removed",
                )));
            }
            Some(attribute) => {
                return Err(in_dir(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("the directory is {attribute} (see `lsattr -d`)"),
                )));
            }
            None => {}
        }
        // The access ACL of a file being replaced: the new file gets it. Until then its group
        // has only what the ACL gives the group (the mode's group bits are the ACL's mask).
        #[cfg(unix)]
        let acl = match &existing {
            Some(_) => profconv_plugin::host::access_acl(&target).ok().flatten(),
            None => None,
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".profconv-").suffix(".tmp");
        // Like any new file (0666 less the umask), not tempfile's private 0600; a file being
        // replaced gives its own mode from the start (the umask can only narrow it), so a
        // private file is never readable by others, not even while it is written.
        #[cfg(unix)]
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            let mode = existing
                .as_ref()
                .map_or(0o666, |m| m.permissions().mode() & 0o777);
            acl_narrowed(mode, acl.as_deref())
        };
        // The lock is held from creating the file to recording it, so an interrupt in between
        // waits and then finds the file to remove.
        let mut pending = PENDING_TEMP.lock().unwrap_or_else(|p| p.into_inner());
        let tmp = builder
            .make_in(&dir, |path| {
                // Named for removal on an abort or an ending signal before it is made: a
                // signal the moment after finds it (named after, it could be left behind).
                profconv_plugin::host::remove_on_abort(Some(path));
                let mut options = std::fs::OpenOptions::new();
                options.read(true).write(true).create_new(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
                // Not made (the name was another's, and another is tried): not to be removed.
                options.open(path).inspect_err(|_| {
                    profconv_plugin::host::remove_on_abort(None);
                })
            })
            .map_err(|e| {
                profconv_plugin::host::remove_on_abort(None);
                let text = e.to_string();
                // tempfile appends ` at path "<temp file>"`; keep only the system's reason.
                let mut reason = text.split(" at path ").next().unwrap_or(&text).to_string();
                // A file the user may write, in a directory they may not: atomic replacement
                // needs a new file beside it, which the shell's `> file` does not.
                if existing.is_some() && e.kind() == io::ErrorKind::PermissionDenied {
                    reason.push_str(&format!(
                        " (the output is written to a new file beside the target and renamed \
                         over it; to overwrite the file itself, use `{by_stdout}`)"
                    ));
                }
                in_dir(io::Error::new(e.kind(), reason))
            })?;
        *pending = Some(tmp.path().to_path_buf());
        drop(pending);
        #[cfg(unix)]
        if let Some(old) = &existing
            && let Err(e) = keep_owner_and_mode(tmp.as_file(), old, &dir, acl.as_deref())
        {
            drop(tmp);
            set_pending(None);
            return Err(e);
        }
        Ok(Sink::File { tmp, target })
    }

    /// Whether the output goes to a terminal (`-`, `/dev/stdout` or `/dev/tty` there).
    pub fn is_terminal(&self) -> bool {
        use std::io::IsTerminal;
        match self {
            Sink::Stdout(_) => io::stdout().is_terminal(),
            Sink::Direct(w) => w.get_ref().0.is_terminal(),
            Sink::File { .. } => false,
        }
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Stdout(w) => w,
            Sink::Direct(w) => w,
            Sink::File { tmp, .. } => tmp.as_file_mut(),
        }
    }

    /// Flushes and, for a file, renames it into place. Dropping a `Sink` without committing
    /// deletes the temp file: a failed run leaves nothing behind.
    pub fn commit(self) -> io::Result<()> {
        let done = |r: io::Result<()>| {
            if r.is_ok() {
                OUTPUT_DONE.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            r
        };
        // An interrupt that has arrived by the time the output is put in place came before it
        // was complete, even if the thread that acts on it has not run yet: on a busy machine
        // it ran after the rename, found the output complete, and the run ended 0, and a
        // shell loop went on (29 of 72 SIGINTs sent during a small conversion on a busy 2-core
        // machine). It is acted on here, as it would have been; one that comes later finds
        // the output complete.
        match self {
            Sink::Stdout(mut w) => {
                end_if_interrupted();
                done(w.flush())
            }
            Sink::Direct(mut w) => {
                end_if_interrupted();
                done(w.flush())
            }
            Sink::File { tmp, target } => {
                // A failed sync (EIO, a full disk or quota found late, as on NFS) means the
                // data may not be there: fail, and the drop removes the temp file, rather than
                // rename a short file over the target. A file system without fsync is fine.
                if let Err(e) = tmp.as_file().sync_all()
                    && !matches!(
                        e.kind(),
                        io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput
                    )
                {
                    drop(tmp);
                    set_pending(None);
                    return Err(e);
                }
                end_if_interrupted();
                // The lock is held from the rename to marking the output done, so an interrupt
                // comes either before (the temp file is removed, the target untouched) or after.
                let pending = PENDING_TEMP.lock().unwrap_or_else(|p| p.into_inner());
                let renamed = done(match tmp.persist(&target) {
                    Ok(_) => Ok(()),
                    // A file something is mounted over (`mount --bind`, a container's
                    // `-v out.svg:/out.svg`) cannot be renamed over (EBUSY, after the whole
                    // conversion): its content is replaced in place, as `> file` and `cp`
                    // replace it. The output is whole by now, so a failed conversion still
                    // leaves the old content; only a failure of this copy itself does not.
                    // The temp file is removed (dropped) before the lock is let go.
                    Err(e) if e.error.kind() == io::ErrorKind::ResourceBusy => {
                        copy_in_place(e.file.as_file(), &target)
                    }
                    Err(e) => Err(e.error),
                });
                drop(pending);
                set_pending(None);
                renamed
            }
        }
    }
}

/// Writes the whole of `from` (the complete temp file) over the content of `target`, which
/// keeps its inode (and so its owner, mode and ACL): for a target that cannot be renamed over.
/// An error after `target` was truncated says that it may now hold part of the output.
fn copy_in_place(from: &File, target: &Path) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut from = from;
    from.seek(SeekFrom::Start(0))?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(target)?;
    let partial = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!(
                "{e}; the file is mounted over (a bind mount), so it could not be replaced \
                 atomically and was being rewritten in place: it may now hold only part of the output"
            ),
        )
    };
    io::copy(&mut from, &mut to).map_err(partial)?;
    match to.sync_all() {
        Err(e)
            if !matches!(
                e.kind(),
                io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput
            ) =>
        {
            Err(partial(e))
        }
        _ => Ok(()),
    }
}

/// `mode` with the group's bits no wider than the access ACL `acl` gives the owning group
/// (with an ACL, a mode's group bits are the ACL's mask, which may be wider).
#[cfg(unix)]
fn acl_narrowed(mode: u32, acl: Option<&[u8]>) -> u32 {
    match acl {
        Some(acl) => {
            (mode & !0o070) | (profconv_plugin::host::acl_group_bits(acl).unwrap_or(0) & mode)
        }
        None => mode,
    }
}

/// Gives the new file `new` (still a temp file) the owner and mode of the file `old` it is to
/// replace: the owner where this user may set it (root; a group the user is in), then the
/// permission bits (not set-id bits: an output is no program; not the group's unless the group
/// is kept), then `old`'s access ACL `acl` (as `sed -i` and `cp -p` keep it; none if the group
/// is not kept), as far as the file system allows. Fails, before anything is written,
/// when the rename would: in a sticky directory (`/tmp`) only the file's or the directory's
/// owner may replace a file.
#[cfg(unix)]
fn keep_owner_and_mode(
    new: &File,
    old: &std::fs::Metadata,
    dir: &Path,
    acl: Option<&[u8]>,
) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let me = new.metadata()?.uid();
    if me != 0
        && old.uid() != me
        && let Ok(d) = std::fs::metadata(dir)
        && d.mode() & 0o1000 != 0
        && d.uid() != me
    {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the file belongs to another user in {}, a sticky directory, where only its owner may replace it",
                shown(dir)
            ),
        ));
    }
    let _ = std::os::unix::fs::fchown(new, Some(old.uid()), Some(old.gid()));
    let _ = std::os::unix::fs::fchown(new, None, Some(old.gid()));
    // The group's bits go only to the old group: under another one they would give access to
    // people the old file did not. A file system that refuses modes (vfat, some network
    // mounts) keeps its own: that is no reason to fail the conversion.
    let mut mode = acl_narrowed(old.mode() & 0o777, acl);
    let group_kept = new.metadata()?.gid() == old.gid();
    if !group_kept {
        mode &= !0o070;
    }
    let _ = new.set_permissions(std::fs::Permissions::from_mode(mode));
    // Without the old ACL (none, or another group), none inherited from the directory's
    // default ACL either: the mode just set is the whole of the access.
    let acl = acl.filter(|_| group_kept);
    if profconv_plugin::host::set_access_acl(new, acl).is_err() && acl.is_some() {
        // The narrowed mode stands: the named entries are lost, no one gains access.
        let _ = new.set_permissions(std::fs::Permissions::from_mode(mode));
    }
    Ok(())
}

/// Why an existing output `meta` in directory `dir` is not written: it is what the kernel's
/// `fs.protected_regular` and `fs.protected_fifos` keep a shell's `> file` from opening, a
/// file or FIFO in a sticky directory anyone may write to (/tmp) that belongs neither to this
/// user nor to the directory's owner: another user put it there, for root too, and writing it
/// gives them the output (a FIFO is read by its maker; a replaced file keeps its owner and
/// mode). `None`: not such a file.
#[cfg(unix)]
fn planted(meta: &std::fs::Metadata, dir: &Path) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = std::fs::metadata(dir).ok()?;
    let owner = meta.uid();
    (d.permissions().mode() & 0o1002 == 0o1002
        && owner != profconv_plugin::host::effective_uid()
        && owner != d.uid())
    .then(|| {
        format!(
            "the {} belongs to another user (uid {owner}) in {}, a sticky directory anyone may \
             write to: writing it would give them the output, and the system refuses `> file` \
             there too (fs.protected_regular, fs.protected_fifos); remove it or choose another name",
            if meta.is_file() { "file" } else { "special file" },
            shown(dir)
        )
    })
}

/// Whether `path` is a symbolic link the kernel's `fs.protected_symlinks` keeps this user from
/// following: in a sticky directory anyone may write to, owned neither by the directory's owner
/// nor by this user.
fn protected_link(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let Ok(link) = std::fs::symlink_metadata(path) else {
            return false;
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let Ok(d) = std::fs::metadata(dir) else {
            return false;
        };
        // This process's user owns its /proc entry (Linux); elsewhere, not known.
        let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        // The setting itself (Linux): off, the link was not what the system refused.
        let on = std::fs::read_to_string("/proc/sys/fs/protected_symlinks")
            .is_ok_and(|v| v.trim() != "0");
        on && link.is_symlink()
            && d.permissions().mode() & 0o1002 == 0o1002
            && link.uid() != d.uid()
            && me.is_none_or(|u| u != link.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Where a new output file named `path` goes: `path` itself, or, when `path` is a symbolic link
/// to a file that does not exist yet, the link's target (as `> link` in a shell creates it), so
/// the rename puts the file there instead of replacing the link with a file.
fn link_target(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // The kernel's own bound on links followed in one path.
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(to) => {
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                }
            }
            Err(_) => return Ok(p),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "too many levels of symbolic links",
    ))
}

/// An error when stdout is open for reading only (`1<file`): Rust's stdout takes the EBADF of
/// every write for success, so the output would vanish and the run end with exit 0. Checked
/// before any input is read. (A closed stdout, `>&-`, is not told from `/dev/null`.)
pub fn stdout_writable() -> io::Result<()> {
    #[cfg(unix)]
    if profconv_plugin::host::read_only_descriptor(1) {
        return Err(not_for_writing("standard output"));
    }
    Ok(())
}

fn not_for_writing(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{what} is open for reading only, not for writing (Bad file descriptor)"),
    )
}

/// The descriptor number when `path`, or a symbolic link on the way from it, names an open
/// descriptor of this process: `/dev/fd/N` or `/proc/self/fd/N` (also `/proc/<own pid>/fd/N`
/// and `/proc/thread-self/fd/N`); `/dev/stdout` is a link to `/proc/self/fd/1`.
fn open_descriptor(path: &Path) -> Option<u32> {
    let own = std::process::id().to_string();
    let mut p = path.to_path_buf();
    let is_own_fd_dir = |dir: &Path| {
        dir == Path::new("/dev/fd")
            || dir.strip_prefix("/proc").is_ok_and(|rest| {
                let c: Vec<_> = rest.components().map(|c| c.as_os_str()).collect();
                match c[..] {
                    [who, fd] => {
                        fd == "fd" && (who == "self" || who == "thread-self" || *who == *own)
                    }
                    // `/proc/thread-self` resolved.
                    [who, task, _, fd] => *who == *own && task == "task" && fd == "fd",
                    _ => false,
                }
            })
    };
    for _ in 0..40 {
        let dir = p.parent()?;
        // As written, or resolved (`../../dev/fd/1` from a directory below the root,
        // `/proc/self/fd/../fd/1`): the same descriptor.
        let names_own_fd = is_own_fd_dir(dir)
            || (!dir.as_os_str().is_empty() && dir.canonicalize().is_ok_and(|d| is_own_fd_dir(&d)));
        if names_own_fd {
            return p.file_name()?.to_str()?.parse().ok();
        }
        let to = std::fs::read_link(&p).ok()?;
        p = if to.is_relative() { dir.join(to) } else { to };
    }
    None
}

/// Decompressed bytes [`check_gzip_rest`] reads at most.
pub const GZIP_CHECK_BOUND: u64 = 64 << 20;

/// Reads what is left of a gzip file's stream, up to [`GZIP_CHECK_BOUND`] decompressed bytes,
/// and returns the error of a corrupt or truncated stream found there. A parser that failed on
/// garbage a corrupt stream decompressed into reports that corruption instead, as the parallel
/// reader (which reads ahead of the parsing) already did: the message is the same whatever the
/// thread count. A stream good that far (or a gzip bomb) keeps the parser's error, and so does
/// one whose members were whole, with data after the last: what the parser read was checked.
pub fn check_gzip_rest(reader: &mut impl Read) -> Option<io::Error> {
    gzip_rest_error(reader, false)
}

/// The error of a corrupt gzip stream in what is left of `reader` (bounded as
/// [`check_gzip_rest`]), data after the last member counted only when `after_last`.
fn gzip_rest_error(reader: &mut impl Read, after_last: bool) -> Option<io::Error> {
    let mut sink = io::sink();
    match io::copy(&mut reader.take(GZIP_CHECK_BOUND), &mut sink) {
        Err(e) if corrupt_gzip(&e).is_some_and(|c| after_last || !c.after_last_member) => Some(e),
        _ => None,
    }
}

/// Reads `r` to its end or to `cap` bytes, whichever comes first, into `out`, whose capacity
/// never passes `cap` (`read_to_end` doubles it: a stream just past 1 GiB reserved 2 GiB, and
/// under a 2 GB memory limit the bound's own message became "out of memory").
pub fn read_bounded(r: &mut impl Read, cap: usize, out: &mut Vec<u8>) -> io::Result<()> {
    let mut len = out.len();
    loop {
        if len == out.len() {
            if len >= cap {
                break;
            }
            let grow = len.max(1 << 16).min(cap - len);
            out.reserve_exact(grow);
            out.resize(len + grow, 0);
        }
        match r.read(&mut out[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                out.truncate(len);
                return Err(e);
            }
        }
    }
    out.truncate(len);
    Ok(())
}

/// True when writing failed because the reader went away (`| head`): exit quietly.
pub fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{GzipReader, read_bounded};
    use std::io::{self, BufRead, Cursor, Read, Write};

    /// In a child process of a test: sets the host's interrupt handler with a thread that never
    /// acts (one that has not run yet, as on a busy machine), sends this process SIGINT and
    /// waits until the signal is noted.
    #[cfg(target_os = "linux")]
    pub(crate) fn interrupt_that_no_thread_acts_on() {
        profconv_plugin::host::handle_interrupts_unless_ignored(|| {
            let _ = ctrlc::set_handler(|| {});
        });
        let me = std::process::id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-s", "INT", &me])
            .status()
            .unwrap();
        assert!(sent.success());
        while !profconv_plugin::host::interrupted() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Runs test `name` of this binary alone in a child process, with `var` set to `value`
    /// (the test then does what ends that process, and its parent checks how it ended).
    #[cfg(target_os = "linux")]
    pub(crate) fn run_test_as_child(
        name: &str,
        var: &str,
        value: &std::ffi::OsStr,
    ) -> std::process::Output {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(var, value)
            .output()
            .unwrap()
    }

    /// An interrupt that arrived before the output was put in place ends the run by the
    /// signal, with no output and no temp file, even when the thread that acts on interrupts
    /// has not run by then (here it never does; on a busy machine it ran after the rename): the
    /// output was renamed into place and the run ended 0, so that a shell loop of small
    /// conversions went on after Ctrl-C one time in three. Runs itself as a child process (the
    /// ending is the process's).
    #[cfg(target_os = "linux")]
    #[test]
    fn an_interrupt_before_the_output_is_complete_ends_the_run_whatever_thread_acts_on_it() {
        use std::os::unix::process::ExitStatusExt;
        const CHILD: &str = "PROFCONV_TEST_UNHANDLED_INTERRUPT_CHILD";
        const NAME: &str = "io::tests::an_interrupt_before_the_output_is_complete_ends_the_run_whatever_thread_acts_on_it";
        if let Some(dir) = std::env::var_os(CHILD) {
            let mut sink =
                super::Sink::create(&std::path::Path::new(&dir).join("out"), "-").unwrap();
            sink.writer().write_all(b"whole\n").unwrap();
            interrupt_that_no_thread_acts_on();
            println!("committed: {:?}", sink.commit());
            std::process::exit(0);
        }
        let d = tempfile::tempdir().unwrap();
        let out = run_test_as_child(NAME, CHILD, d.path().as_os_str());
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.signal(), Some(2), "{:?}: {said}", out.status);
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// A stream read whole up to a bound takes at most the bound in memory (the capacity is
    /// exact), and stops there; a shorter one is read to its end.
    #[test]
    fn a_bounded_read_never_reserves_past_its_bound() {
        let cap = (1 << 20) + 12_345;
        let mut out = Vec::new();
        read_bounded(&mut io::repeat(7).take(3 << 20), cap, &mut out).unwrap();
        assert_eq!(out.len(), cap);
        assert!(
            out.capacity() <= cap,
            "capacity {} past {cap}",
            out.capacity()
        );
        assert!(out.iter().all(|&b| b == 7));
        let mut out = Vec::new();
        read_bounded(&mut Cursor::new(vec![1u8; 100_000]), cap, &mut out).unwrap();
        assert_eq!(out, vec![1u8; 100_000]);
    }

    /// A FIFO named as the input (`<(cmd)`, `mkfifo`) has no known size: its length, 0, was
    /// passed to the parser as the input's size (`InputStream::size_hint`), and no progress
    /// spinner was drawn for it as for a pipe on stdin.
    #[cfg(unix)]
    #[test]
    fn a_fifo_named_as_the_input_has_no_known_size() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("in.folded");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(&fifo, b"a;b 1\n").unwrap())
        };
        let input = super::OpenInput::open(&fifo).unwrap();
        writer.join().unwrap();
        assert_eq!(input.head, b"a;b 1\n");
        assert_eq!(input.size_hint, None);
    }

    /// A regular file truncated while it is read (not mapped: a streaming parser's input such
    /// as callgrind's, a file read under an address-space limit, a gzip file) is an error where
    /// the reading meets the cut, not the input's end: the part before it was converted as the
    /// whole profile, with exit 0, while a mapped file ends the run with an error there.
    #[test]
    fn a_file_that_shrinks_while_it_is_read_is_an_error_not_a_shorter_input() {
        // Lines that gzip cannot shrink much, so that a member is larger than what the head's
        // reading takes in at once.
        let lines = |from: u64| -> Vec<u8> {
            let mut x = from.wrapping_mul(6364136223846793005) | 1;
            let mut out = Vec::new();
            for _ in 0..20_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                out.extend_from_slice(format!("main;f{:016x} 1\n", x).as_bytes());
            }
            out
        };
        let gzip = |data: &[u8]| {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(data).unwrap();
            enc.finish().unwrap()
        };
        let first = gzip(&lines(1));
        let plain = [lines(1), lines(2)].concat();
        let cases = [
            // Cut at a line's end: read on, it is a valid shorter profile.
            ("in.folded", plain.clone(), plain.len() as u64 / 2),
            // Cut between two gzip members: read on, a valid shorter stream.
            (
                "in.folded.gz",
                [first.clone(), gzip(&lines(2))].concat(),
                first.len() as u64,
            ),
        ];
        let d = tempfile::tempdir().unwrap();
        for (name, content, cut) in cases {
            let path = d.path().join(name);
            std::fs::write(&path, &content).unwrap();
            let mut reader = super::OpenInput::open(&path).unwrap().into_reader(false);
            let mut start = vec![0; 20_000];
            reader.read_exact(&mut start).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(cut)
                .unwrap();
            let mut rest = Vec::new();
            let e = reader.read_to_end(&mut rest).unwrap_err();
            assert!(
                e.to_string().contains(&format!(
                    "the file shrank while it was being read (another program truncated or \
                     rewrote it): it had {} bytes",
                    content.len()
                )),
                "{name}: {e}"
            );
            // Not cut: read whole, without an error.
            std::fs::write(&path, &content).unwrap();
            let mut all = Vec::new();
            super::OpenInput::open(&path)
                .unwrap()
                .into_reader(false)
                .read_to_end(&mut all)
                .unwrap();
            assert_eq!(all.len(), plain.len(), "{name}");
        }
    }

    /// A reader whose first `fill_buf` at `at` is interrupted (EINTR), as a signal can do.
    struct InterruptedOnce {
        data: Cursor<Vec<u8>>,
        at: u64,
        done: bool,
    }

    impl Read for InterruptedOnce {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = std::io::Read::read(&mut self.fill_buf()?, buf)?;
            self.consume(n);
            Ok(n)
        }
    }

    impl BufRead for InterruptedOnce {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            if !self.done && self.data.position() == self.at {
                self.done = true;
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            self.data.fill_buf()
        }
        fn consume(&mut self, n: usize) {
            self.data.consume(n)
        }
    }

    /// A read interrupted just after a member (where the reader looks for the next one) is
    /// retried and the next member read; it used to end the input there, silently.
    #[test]
    fn an_interrupted_read_between_gzip_members_loses_nothing() {
        let member = |text: &str| {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(text.as_bytes()).unwrap();
            enc.finish().unwrap()
        };
        let first = member("a;b 1\n");
        let data = [first.clone(), member("a;c 2\n")].concat();
        let mut reader = GzipReader::new(
            InterruptedOnce {
                data: Cursor::new(data),
                at: first.len() as u64,
                done: false,
            },
            Default::default(),
        );
        let mut out = String::new();
        reader.read_to_string(&mut out).unwrap();
        assert_eq!(out, "a;b 1\na;c 2\n");
    }
}
