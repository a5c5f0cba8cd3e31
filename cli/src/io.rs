//! Input (file or stdin, gzip undone, head kept for sniffing) and atomic output.

use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Write};
use std::path::{Path, PathBuf};

/// Bytes read ahead for sniffing.
const HEAD: usize = 16 * 1024;

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
}

impl OpenInput {
    /// Opens `path` (`-` is stdin); gzip input is decompressed transparently.
    pub fn open(path: &Path) -> io::Result<OpenInput> {
        let (name, raw, size): (String, Box<dyn Read>, Option<u64>) = if path == Path::new("-") {
            ("<stdin>".into(), Box::new(io::stdin()), None)
        } else {
            let f = File::open(path)?;
            if f.metadata()?.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a directory",
                ));
            }
            let size = f.metadata().ok().map(|m| m.len());
            (path.display().to_string(), Box::new(f), size)
        };
        let mut raw = BufReader::with_capacity(1 << 20, raw);
        let mut magic = Vec::with_capacity(2);
        (&mut raw).take(2).read_to_end(&mut magic)?;
        let chained = Cursor::new(magic.clone()).chain(raw);
        let (mut reader, size_hint): (Box<dyn Read>, _) = if magic == [0x1f, 0x8b] {
            (
                Box::new(BufReader::with_capacity(
                    1 << 20,
                    MultiGzDecoder::new(chained),
                )),
                None,
            )
        } else {
            (Box::new(chained), size)
        };
        let mut head = Vec::with_capacity(HEAD);
        (&mut reader).take(HEAD as u64).read_to_end(&mut head)?;
        Ok(OpenInput {
            name,
            path: path.to_path_buf(),
            head,
            rest: reader,
            size_hint,
        })
    }

    /// A reader over the whole content (head included), with a progress bar on stderr when
    /// stderr is a terminal and the input is large (or of unknown size, like a pipe).
    pub fn into_reader(self) -> Box<dyn Read> {
        let name = self.name.clone();
        let size = self.size_hint;
        let reader = Cursor::new(self.head).chain(self.rest);
        match progress_bar(&name, size) {
            Some(bar) => Box::new(bar.wrap_read(reader)),
            None => Box::new(reader),
        }
    }
}

/// Inputs smaller than this convert too fast for a progress bar to help.
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

fn progress_bar(name: &str, size: Option<u64>) -> Option<indicatif::ProgressBar> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
    use std::io::IsTerminal;
    if !io::stderr().is_terminal() || size.is_some_and(|s| s < PROGRESS_MIN_BYTES) {
        return None;
    }
    let bar = match size {
        Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .ok()?
                .progress_chars("=> "),
            ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{msg} {spinner} {bytes} {bytes_per_sec}").ok()?,
        ),
    };
    Some(
        bar.with_message(name.to_string())
            .with_finish(ProgressFinish::AndClear),
    )
}

/// Where output goes: stdout, a device or pipe written directly, or a temp file renamed over
/// the target when complete.
pub enum Sink {
    Stdout(io::BufWriter<io::Stdout>),
    /// A target that is not a regular file (`/dev/null`, a FIFO, `/dev/stdout`): renaming over
    /// it would replace the device itself, so it is written in place.
    Direct(io::BufWriter<File>),
    File {
        tmp: tempfile::NamedTempFile,
        target: PathBuf,
    },
}

/// The temp file of the conversion under way, removed if the user interrupts it (Ctrl-C).
static PENDING_TEMP: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

fn set_pending(path: Option<PathBuf>) {
    if let Ok(mut p) = PENDING_TEMP.lock() {
        *p = path;
    }
}

/// Removes the pending temp file, if any (called from the interrupt handler).
pub fn remove_pending_temp() {
    if let Ok(mut p) = PENDING_TEMP.lock() {
        if let Some(path) = p.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Sink {
    /// `-` is stdout; an existing non-regular file is written directly; anything else goes to a
    /// temp file beside the target (after following symlinks), so the final rename is atomic
    /// and replaces the file the user named, not a link to it.
    pub fn create(target: &Path) -> io::Result<Sink> {
        if target == Path::new("-") {
            return Ok(Sink::Stdout(io::BufWriter::with_capacity(
                1 << 16,
                io::stdout(),
            )));
        }
        let target = match std::fs::metadata(target) {
            Ok(meta) if !meta.is_file() => {
                if meta.is_dir() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "is a directory",
                    ));
                }
                let f = std::fs::OpenOptions::new().write(true).open(target)?;
                return Ok(Sink::Direct(io::BufWriter::with_capacity(1 << 16, f)));
            }
            Ok(_) => std::fs::canonicalize(target)?,
            Err(_) => target.to_path_buf(),
        };
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".profconv-").suffix(".tmp");
        #[cfg(unix)]
        {
            // Like any new file (0666 less the umask), not tempfile's private 0600.
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder.tempfile_in(dir)?;
        set_pending(Some(tmp.path().to_path_buf()));
        Ok(Sink::File { tmp, target })
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
        match self {
            Sink::Stdout(mut w) => w.flush(),
            Sink::Direct(mut w) => w.flush(),
            Sink::File { tmp, target } => {
                tmp.as_file().sync_all().ok();
                let done = tmp.persist(&target).map(|_| ()).map_err(|e| e.error);
                set_pending(None);
                done
            }
        }
    }
}

/// True when writing failed because the reader went away (`| head`): exit quietly.
pub fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}
