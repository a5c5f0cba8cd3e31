//! Loaded plugins and their formats; choosing the input and output format.

use crate::discovery::{Candidate, Source};
use profconv_plugin::host::{self, FormatHandle, LoadedPlugin};
use std::path::Path;

/// A plugin that loaded, with where it was found.
pub struct Loaded {
    pub plugin: LoadedPlugin,
    pub source: Source,
}

/// A file that was not loaded, and why.
pub struct Rejected {
    pub candidate: Candidate,
    pub reason: String,
}

/// All plugins of this run.
#[derive(Default)]
pub struct Registry {
    pub loaded: Vec<Loaded>,
    pub rejected: Vec<Rejected>,
    /// Later plugins whose name or format id was already taken.
    pub shadowed: Vec<String>,
    /// The first format for each id, in discovery order.
    pub formats: Vec<FormatHandle>,
    /// What else may explain a missing format (a `--plugin` directory holding no plugin).
    pub notes: Vec<String>,
}

impl Registry {
    /// Loads every candidate; the first plugin of a name, and the first format of an id, win.
    pub fn load(candidates: Vec<Candidate>) -> Registry {
        let mut reg = Registry::default();
        let mut seen_paths = Vec::new();
        for c in candidates {
            let canon = c.path.canonicalize().unwrap_or_else(|_| c.path.clone());
            if seen_paths.contains(&canon) {
                continue;
            }
            seen_paths.push(canon);
            if let Some(reason) = c.refused.clone() {
                reg.rejected.push(Rejected {
                    reason,
                    candidate: c,
                });
                continue;
            }
            match host::load_library(&c.path) {
                Ok(plugin) => reg.add(plugin, c.source),
                Err(e) => reg.rejected.push(Rejected {
                    reason: e.to_string(),
                    candidate: c,
                }),
            }
        }
        reg
    }

    /// Plugins the user named as files that could not be loaded (an error for the run).
    pub fn explicit_failures(&self) -> impl Iterator<Item = &Rejected> {
        self.rejected.iter().filter(|r| r.candidate.explicit)
    }

    /// Plugins found by scanning a directory that could not be loaded (a warning).
    pub fn scanned_failures(&self) -> impl Iterator<Item = &Rejected> {
        self.rejected.iter().filter(|r| !r.candidate.explicit)
    }

    /// Adds a loaded plugin (also used for in-process plugins in tests).
    pub fn add(&mut self, plugin: LoadedPlugin, source: Source) {
        if let Some(first) = self
            .loaded
            .iter()
            .find(|l| l.plugin.info.name == plugin.info.name)
        {
            self.shadowed.push(format!(
                "plugin '{}' at {} is shadowed by the one at {}",
                plugin.info.name, plugin.info.origin, first.plugin.info.origin
            ));
            return;
        }
        for f in &plugin.formats {
            if let Some(other) = self.formats.iter().find(|o| o.id == f.id) {
                self.shadowed.push(format!(
                    "format '{}' of plugin '{}' is shadowed by plugin '{}'",
                    f.id, plugin.info.name, other.plugin.name
                ));
            } else {
                self.formats.push(f.clone());
            }
        }
        self.loaded.push(Loaded { plugin, source });
    }

    /// The format with this id.
    pub fn format(&self, id: &str) -> Option<&FormatHandle> {
        self.formats.iter().find(|f| f.id == id)
    }

    fn ids(&self, pred: impl Fn(&FormatHandle) -> bool) -> String {
        let ids: Vec<&str> = self
            .formats
            .iter()
            .filter(|f| pred(f))
            .map(|f| f.id.as_str())
            .collect();
        if ids.is_empty() {
            "none: no plugin was found; see `profconv formats`".into()
        } else {
            ids.join(", ")
        }
    }

    /// The ids of the formats that can be written, for messages.
    pub fn emitter_ids(&self) -> String {
        self.ids(FormatHandle::can_emit)
    }

    /// Explains a missing format, including plugins that were refused.
    fn missing(&self, id: &str, what: &str, pred: impl Fn(&FormatHandle) -> bool) -> String {
        let msg = format!(
            "no plugin can {what} format '{id}' (available: {})",
            self.ids(pred)
        );
        self.with_notes(msg)
    }

    /// `msg` and a note for each plugin that was refused or shadowed (a user's plugin named
    /// like a shipped one hides all of the shipped one's formats): a format a user expects may
    /// be missing for either reason.
    pub fn with_notes(&self, mut msg: String) -> String {
        for r in &self.rejected {
            msg.push_str(&format!("\n  note: {}", r.reason));
        }
        for s in self.shadowed.iter().chain(&self.notes) {
            msg.push_str(&format!("\n  note: {s}"));
        }
        msg
    }

    /// The parser for `--from ID`.
    pub fn parser(&self, id: &str) -> Result<&FormatHandle, String> {
        self.format(id)
            .filter(|f| f.can_parse())
            .ok_or_else(|| self.missing(id, "read", FormatHandle::can_parse))
    }

    /// The emitter for `--to ID`.
    pub fn emitter(&self, id: &str) -> Result<&FormatHandle, String> {
        self.format(id)
            .filter(|f| f.can_emit())
            .ok_or_else(|| self.missing(id, "write", FormatHandle::can_emit))
    }

    /// Formats whose declared extensions match `name`, or match it less one `.gz` (a `.gz`
    /// file is its format compressed): the longest suffix wins; a declared extension ending in
    /// `*` is a file-name prefix (`callgrind.out*`), which only a name without a matching
    /// suffix takes (`callgrind.out.4711.svg` is a picture of that profile, not the profile).
    pub fn by_file_name<'a>(
        &'a self,
        name: &str,
        pred: impl Fn(&FormatHandle) -> bool,
    ) -> Vec<&'a FormatHandle> {
        let declared: Vec<&[String]> = self.formats.iter().map(|f| &f.extensions[..]).collect();
        let mut out: Vec<&FormatHandle> = Vec::new();
        for i in best_by_name(name, &declared) {
            let f = &self.formats[i];
            if !out.iter().any(|o| o.id == f.id) {
                out.push(f);
            }
        }
        out.retain(|f| pred(f));
        out
    }

    /// Picks the parser for an input: sniffed content first, the extension to break ties or
    /// when no sniffer is confident.
    /// A sniffer that panics counts as 0 and is reported through `warn`.
    ///
    /// With the format, whether the input's name is one of that format's (`false`: chosen by
    /// content alone, against or without the name, which an error in the parse then says).
    pub fn detect_input(
        &self,
        head: &[u8],
        path: &Path,
        warn: &mut dyn FnMut(&str),
    ) -> Result<(&FormatHandle, bool), String> {
        let chosen = self.detect_format(head, path, warn)?;
        let (by_ext, _) = self.named_formats(path, FormatHandle::can_parse);
        Ok((chosen, by_ext.iter().any(|f| f.id == chosen.id)))
    }

    /// The formats `path`'s name is one of, among those `can` keeps, and the file name
    /// (lossy: the extensions are ASCII, so a name that is not UTF-8 still matches them). A
    /// compressed input is read decompressed: `perf.folded.gz` is named as `perf.folded`.
    fn named_formats(
        &self,
        path: &Path,
        can: fn(&FormatHandle) -> bool,
    ) -> (Vec<&FormatHandle>, String) {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        (self.by_file_name(&file_name, can), file_name)
    }

    fn detect_format(
        &self,
        head: &[u8],
        path: &Path,
        warn: &mut dyn FnMut(&str),
    ) -> Result<&FormatHandle, String> {
        let (by_ext, file_name) = self.named_formats(path, FormatHandle::can_parse);
        let mut scores: Vec<(u32, &FormatHandle)> = self
            .formats
            .iter()
            .filter(|f| f.can_parse())
            .map(|f| {
                let score = f.sniff(head).unwrap_or_else(|e| {
                    warn(&format!(
                        "format {} of plugin {}: {e}; it was not detected by content",
                        f.id, f.plugin.name
                    ));
                    0
                });
                (score, f)
            })
            .filter(|(s, _)| *s > 0)
            .collect();
        scores.sort_by_key(|s| std::cmp::Reverse(s.0));
        let top = scores.first().map_or(0, |s| s.0);
        let tied: Vec<&FormatHandle> = scores.iter().filter(|s| s.0 == top).map(|s| s.1).collect();
        if top >= 50 {
            if tied.len() == 1 {
                return Ok(tied[0]);
            }
            if let Some(f) = tied.iter().find(|f| by_ext.iter().any(|e| e.id == f.id)) {
                return Ok(f);
            }
            let ids: Vec<&str> = tied.iter().map(|f| f.id.as_str()).collect();
            return Err(format!(
                "the content looks like several formats ({}); choose one with --from",
                ids.join(", ")
            ));
        }
        // A profile of another tool that no reader takes, known by its first bytes, is said
        // before the name is trusted: `perf record` writes `perf.data`, which the Deep.data
        // reader's `.data` claimed ("not a Mercury deep profiler data file").
        if let Some(what) = foreign_profile_of(head) {
            return Err(what.to_string());
        }
        if let [only] = by_ext.as_slice() {
            return Ok(only);
        }
        // A name that several readers claim (two plugins declaring one extension) picks among
        // them by a weak guess of their own; else it is said, as for an output, and no weak
        // guess of another format takes the file.
        if by_ext.len() > 1 {
            // The best non-zero score among them (`scores` is sorted, best first; a tie goes
            // to the first loaded).
            if let Some((_, f)) = scores
                .iter()
                .find(|(_, f)| by_ext.iter().any(|e| e.id == f.id))
            {
                return Ok(f);
            }
            let ids: Vec<&str> = by_ext.iter().map(|f| f.id.as_str()).collect();
            return Err(format!(
                "'{}' could be {} by its name, and its content does not tell; choose one with --from",
                crate::io::shown(Path::new(&file_name)),
                ids.join(" or ")
            ));
        }
        // A weak guess (below 10: a long first line with a `;`) does not outweigh a name that
        // says the file is one profconv writes (`x.speedscope.json`, `x.svg`): that is said.
        let written = self
            .named_formats(path, |f| f.can_emit() && !f.can_parse())
            .0;
        if top > 0 && tied.len() == 1 && (top >= 10 || written.is_empty()) {
            return Ok(tied[0]);
        }
        if !self.formats.iter().any(FormatHandle::can_parse) {
            // `--from` cannot help: nothing can read.
            return Err(
                "no plugin that reads profiles is loaded, so no input can be read; see `profconv formats`"
                    .into(),
            );
        }
        // Named as a file profconv writes but cannot read (`a.svg`, `a.json.gz`): say so, as
        // `--from` only helps if the name is wrong.
        if let Some(f) = written.first() {
            return Err(format!(
                "'{}' is named as a {} file, a format profconv writes but cannot read; \
                 if it is in another format, choose that with --from (readable formats: {})",
                crate::io::shown(Path::new(&file_name)),
                f.id,
                self.ids(FormatHandle::can_parse)
            ));
        }
        // Bytes no reader recognises may still say what they are: say that, and how to read it.
        if let Some((what, command)) = profconv_plugin::compression_of(head) {
            return Err(format!(
                "the input is {what}, and profconv decompresses one layer of gzip only: decompress it first \
                 (`{command} FILE | profconv … -` reads it from a pipe)"
            ));
        }
        if let Some(e) = profconv_plugin::utf16_input_error(head, "text profiles") {
            return Err(e.message);
        }
        if looks_like_perf_script(head) {
            return Err(
                "the input looks like `perf script` output (sample lines, each with its frames), \
                 which profconv does not read: fold its stacks first, e.g. \
                 `inferno-collapse-perf FILE > FILE.folded` (or FlameGraph's \
                 stackcollapse-perf.pl), and convert that"
                    .into(),
            );
        }
        // What the bytes look like, when that helps: nothing at all (the command writing a
        // pipe failed), or JSON (a profile of a tool profconv writes for, not reads).
        let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
        let what = match head {
            [] => "the format of an empty input (no bytes)",
            _ if profconv_plugin::starts_as_json(text) => {
                "the input's format: it is JSON (a Firefox Profiler, speedscope or Chrome \
                 profile?), which no reader recognises, and its name says nothing"
            }
            _ => "the input's format from its content or name",
        };
        Err(self.with_notes(format!(
            "cannot tell {what}; choose one with --from (readable formats: {})",
            self.ids(FormatHandle::can_parse)
        )))
    }
}

/// Whether `head` reads as `perf script` text: a sample line (`comm pid time: period event:`)
/// followed by indented frames (`<tab>  7f3c2a1b func+0x1d (/usr/lib/libc.so.6)`), at least two
/// of them; or, recorded without `-g`, at least two sample lines that end in their one frame
/// (`  cprog  3102 50901.625298:  1001001 cpu-clock:  55e94d7501cf leaf+0x36 (/tmp/cprog)`).
/// Asked only of input no reader recognised, to say how to fold it.
fn looks_like_perf_script(head: &[u8]) -> bool {
    looks_like_perf_script_with_stacks(head)
        || head
            .split(|&b| b == b'\n')
            .filter(|line| is_perf_sample_with_frame(line))
            .nth(1)
            .is_some()
}

/// A `perf script` sample line without a call chain: a timestamp (`50901.625298:`), then, after
/// the event's name and `: `, the frame (`55e94d7501cf leaf+0x36 (/tmp/cprog)`).
fn is_perf_sample_with_frame(line: &[u8]) -> bool {
    let digits = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_digit);
    let is_timestamp = |word: &[u8]| {
        word.strip_suffix(b":")
            .and_then(|t| t.iter().position(|&b| b == b'.').map(|at| t.split_at(at)))
            .is_some_and(|(seconds, dot_fraction)| digits(seconds) && digits(&dot_fraction[1..]))
    };
    let body = line.trim_ascii();
    let frame = body
        .windows(2)
        .rposition(|w| w == b": ")
        .map(|at| body[at + 2..].trim_ascii_start());
    body.ends_with(b")")
        && body.split(|&b| b == b' ').any(is_timestamp)
        && frame.is_some_and(starts_with_address)
}

/// Whether `frame` starts as a `perf script` frame: an address in hex, then a space (the
/// symbol follows).
fn starts_with_address(frame: &[u8]) -> bool {
    let hex = frame.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    hex > 0 && frame.get(hex) == Some(&b' ')
}

/// `perf script` text recorded with call chains: a sample line, and at least two indented
/// frame lines.
fn looks_like_perf_script_with_stacks(head: &[u8]) -> bool {
    let is_frame = |line: &[u8]| {
        let body = line.trim_ascii();
        line.first().is_some_and(|b| *b == b'\t' || *b == b' ')
            && starts_with_address(body)
            && body.ends_with(b")")
    };
    let mut frames = 0;
    let mut sample_line = false;
    for line in head.split(|&b| b == b'\n') {
        if is_frame(line) {
            frames += 1;
        } else if line.first().is_some_and(|b| !b.is_ascii_whitespace()) && line.contains(&b':') {
            sample_line = true;
        }
    }
    sample_line && frames >= 2
}

/// What an input is, from its first bytes, when it is a profile of another tool that profconv
/// does not read but can read once converted (a message starting with `the input is `, an
/// error about the input); `None` otherwise. perf.data starts with `PERFILE2` (`PERFFILE` in
/// perf's first versions), reversed when recorded on a big-endian machine.
fn foreign_profile_of(head: &[u8]) -> Option<&'static str> {
    // perf writes the magic as a number in the recording machine's byte order.
    let magic = [b"PERFILE2", b"2ELIFREP", b"PERFFILE", b"ELIFFREP"];
    magic.iter().any(|m| head.starts_with(*m)).then_some(
        "the input is a perf.data file (the binary output of `perf record`), which profconv does \
         not read: fold its stacks first, e.g. `perf script -i FILE | inferno-collapse-perf > \
         FILE.folded` (or FlameGraph's stackcollapse-perf.pl), and convert that",
    )
}

/// The indexes of the extension lists in `declared` that match `name` best (see
/// [`Registry::by_file_name`]), in order.
fn best_by_name(name: &str, declared: &[&[String]]) -> Vec<usize> {
    let name = name.to_ascii_lowercase();
    // The longest declared prefix the name starts with: a suffix inside it (a plugin's `out` in
    // `callgrind.out`) is part of the prefix, not after it.
    let prefix_len = declared
        .iter()
        .flat_map(|exts| exts.iter())
        .filter_map(|e| e.strip_suffix('*'))
        .map(str::to_ascii_lowercase)
        .filter(|p| name.starts_with(p.as_str()))
        .map(|p| p.len())
        .max()
        .unwrap_or(0);
    let after_prefix = |len: usize| name.len() - len > prefix_len;
    // (a suffix matched after any prefix, its length): such a suffix outranks any prefix.
    let mut best = (false, 0usize);
    let mut out = Vec::new();
    for (i, exts) in declared.iter().enumerate() {
        for ext in exts.iter() {
            let ext = ext.to_ascii_lowercase();
            // An extension and one more `.gz` (`x.speedscope.json.gz`) is a longer match than a
            // shorter extension that ends in `.gz` (`json.gz`): a `.gz` file is read
            // decompressed, and written through gzip.
            let len = if let Some(prefix) = ext.strip_suffix('*') {
                // A lone `*` is no prefix: it claimed every name (`-o out.xyz` was written in
                // that plugin's format instead of asking for `--to`).
                (!prefix.is_empty() && name.starts_with(prefix)).then_some((false, prefix.len()))
            } else if name.ends_with(&format!(".{ext}")) {
                Some((after_prefix(ext.len()), ext.len()))
            } else {
                name.ends_with(&format!(".{ext}.gz"))
                    .then(|| (after_prefix(ext.len() + 3), ext.len() + 3))
            };
            if let Some(len) = len {
                if len > best {
                    best = len;
                    out.clear();
                }
                if len == best && out.last() != Some(&i) {
                    out.push(i);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod name_tests {
    use super::best_by_name;

    /// A name's own extension outranks a declared prefix (`callgrind.out.4711.svg` is a
    /// flame graph), but a suffix inside the prefix does not (a plugin's `out` in
    /// `callgrind.out`: the prefix was lost to it, and `-o callgrind.out` had no format).
    #[test]
    fn suffixes_after_a_prefix_outrank_it_and_those_inside_do_not() {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (grind, plug, svg, ff, ss) = (
            owned(&["callgrind", "callgrind.out*"]),
            owned(&["out"]),
            owned(&["svg"]),
            owned(&["json.gz"]),
            owned(&["speedscope.json"]),
        );
        let declared: Vec<&[String]> = vec![&grind, &plug, &svg, &ff, &ss];
        let best = |name| best_by_name(name, &declared);
        assert_eq!(best("callgrind.out"), [0]);
        assert_eq!(best("callgrind.out.4711"), [0]);
        assert_eq!(best("Callgrind.Out.4711.gz"), [0]);
        assert_eq!(best("callgrind.out.4711.svg"), [2]);
        assert_eq!(best("callgrind.out.4711.out"), [1]);
        assert_eq!(best("x.out"), [1]);
        assert_eq!(best("p.json.gz"), [3]);
        assert_eq!(best("p.speedscope.json.gz"), [4]);
        assert_eq!(best("p.txt"), Vec::<usize>::new());
    }

    /// An extension `*` alone (an empty prefix) matches no name: it claimed every one.
    #[test]
    fn a_lone_star_extension_claims_no_name() {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (tabs, svg) = (owned(&["tabs", "*"]), owned(&["svg"]));
        let declared: Vec<&[String]> = vec![&tabs, &svg];
        let best = |name| best_by_name(name, &declared);
        assert_eq!(best("out.xyz"), Vec::<usize>::new());
        assert_eq!(best("out.svg"), [1]);
        assert_eq!(best("in.tabs"), [0]);
    }
}

#[cfg(test)]
mod perf_script_tests {
    use super::looks_like_perf_script;

    /// `perf record` without `-g` gives `perf script` lines that hold their one frame (the
    /// command right-aligned in 16 columns): said as perf script output too, not "cannot tell".
    #[test]
    fn perf_script_without_call_chains_is_recognised() {
        let flat = b"           cprog  3102 50901.625298:    1001001 cpu-clock:      55e94d7501cf leaf+0x36 (/tmp/realprof/cprog)\n\
                     \x20          cprog  3102 50901.632202:    1001001 cpu-clock:  ffffffff815d4e66 vma_interval_tree_insert+0x36 ([kernel.kallsyms])\n";
        assert!(looks_like_perf_script(flat));
        // One such line is not enough, nor folded stacks or a log line with a time in it.
        assert!(!looks_like_perf_script(&flat[..flat.len() / 2]));
        assert!(!looks_like_perf_script(
            b"main;f (a.py:3) 5\nmain;g (b.py:4) 2\n"
        ));
        assert!(!looks_like_perf_script(
            b"12:00:01.5: started: 1f00 jobs (pid)\n12:00:02.5: started: 2f00 jobs (pid)\n"
        ));
    }
}
