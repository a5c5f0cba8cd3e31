//! Helpers for text formats: the byte-order mark, and input quoted in messages.

use std::fmt::Write as _;

/// The UTF-8 byte-order mark that Windows editors and tools write at the start of a text file
/// (U+FEFF): text readers skip it.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The error for a text input that starts with a UTF-16 byte-order mark and an ASCII
/// character among its first seven (PowerShell 5.1's `>` writes UTF-16 LE so), which a reader
/// of UTF-8 would otherwise report as some unexpected character on line 1. The character's NUL
/// byte is what tells UTF-16 from a Latin-1 name that starts with `ÿþ` (Latin-1 text has no
/// NUL); the first character need not be ASCII (`Ωmain;a 1`, `中文;a 1`: the `;` is). `files`
/// names the format's files in the message (`"callgrind files"`); `None` for any other start.
pub fn utf16_input_error(head: &[u8], files: &str) -> Option<crate::PluginError> {
    // Code units 2 bytes each, the high byte at `high`: is one of the first seven ASCII?
    let ascii_unit = |rest: &[u8], high: usize| {
        rest.chunks_exact(2)
            .take(7)
            .any(|u| u[high] == 0 && u[1 - high] != 0 && u[1 - high].is_ascii())
    };
    let encoding = match head {
        [0xFF, 0xFE, rest @ ..] if ascii_unit(rest, 1) => "UTF-16 LE",
        [0xFE, 0xFF, rest @ ..] if ascii_unit(rest, 0) => "UTF-16 BE",
        _ => return None,
    };
    Some(
        crate::PluginError::invalid_input(format!(
            "the input is {encoding} text (it starts with a UTF-16 byte-order mark): {files} are \
             UTF-8 (or ASCII); convert it first (e.g. `iconv -f UTF-16 -t UTF-8`)"
        ))
        .at_offset(0)
        .at_line(1, 1),
    )
}

/// A compressed input the host does not decompress (it takes off one layer of gzip only), from
/// its first bytes (its magic number): what it is, and the command that decompresses it to
/// stdout. `None` for any other start. The magic numbers are long enough, or followed by a block
/// header (bzip2), that no text starts so by chance. A reader that sees gzip's own magic number
/// (with its only method, deflate) was given data the host already took one layer off: the file
/// was compressed twice.
pub fn compression_of(head: &[u8]) -> Option<(&'static str, &'static str)> {
    const BZIP2_BLOCK: &[u8] = &[0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const BZIP2_END: &[u8] = &[0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    match head {
        [0x28, 0xB5, 0x2F, 0xFD, ..] => Some(("zstd-compressed", "zstd -dc")),
        [0xFD, b'7', b'z', b'X', b'Z', 0, ..] => Some(("xz-compressed", "xz -dc")),
        [b'B', b'Z', b'h', b'1'..=b'9', rest @ ..]
            if rest.starts_with(BZIP2_BLOCK) || rest.starts_with(BZIP2_END) =>
        {
            Some(("bzip2-compressed", "bzip2 -dc"))
        }
        [0x04, 0x22, 0x4D, 0x18, ..] => Some(("lz4-compressed", "lz4 -dc")),
        [b'P', b'K', 3, 4, ..] => Some(("a zip archive", "unzip -p")),
        [0x1F, 0x8B, 0x08, ..] => Some(("gzip-compressed twice", "gzip -dc")),
        _ => None,
    }
}

/// The error for a text input that no text reader can read as it is: compressed by another
/// tool than gzip ([`compression_of`]; the host decompresses gzip), or UTF-16
/// ([`utf16_input_error`]). `head` is the input's first bytes (16 are enough), `files` names
/// the format's files in the message. Without it such an input reads as a first line of
/// binary bytes, with warnings about them and an error about some character.
pub fn not_text_error(head: &[u8], files: &str) -> Option<crate::PluginError> {
    if let Some((what, command)) = compression_of(head) {
        return Some(
            crate::PluginError::invalid_input(format!(
                "the input is {what}, and only one layer of gzip is decompressed ({files} are text): \
                 decompress it first (`{command} FILE | profconv … -` reads it from a pipe)"
            ))
            .at_offset(0)
            .at_line(1, 1),
        );
    }
    utf16_input_error(head, files)
}

/// Whether `text` starts as a JSON object or an array of objects (`{"` or `[{"`, blanks
/// between; leading blanks skipped): a profile of another tool (a Firefox Profiler, speedscope
/// or Chrome profile). A root frame is a process, thread or function name, which seldom starts
/// so (`[unknown]`, `{closure}`, `[{closure}]`, `["x"]` do not count; a frame `{"x"}` does).
pub fn starts_as_json(text: &[u8]) -> bool {
    let object = |rest: &[u8]| match rest.trim_ascii_start().split_first() {
        Some((b'{', rest)) => rest.trim_ascii_start().first() == Some(&b'"'),
        _ => false,
    };
    match text.trim_ascii_start().split_first() {
        Some((b'[', rest)) => object(rest),
        _ => object(text),
    }
}

/// `text` with its control characters escaped as Rust's `escape_debug` writes them (a newline
/// as the two characters `\` `n`, ESC as `\u{1b}`), for a name shown in a message (a path, a
/// system's error text): it cannot then print a line that reads as one of profconv's own, nor
/// move the terminal's cursor; its bidirectional overrides and isolates too (`\u{202e}`), which
/// would draw the rest of the message reversed.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    use profconv_ir::text::is_bidi_control;
    if !text.contains(|c: char| c.is_control() || is_bidi_control(c)) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if c.is_control() => out.extend(c.escape_debug()),
            c if is_bidi_control(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out.into()
}

/// Input text for a message: at most about `max` bytes of it (then `…`), characters that
/// are invisible or control characters escaped as Rust's `escape_debug` writes them (`\0`,
/// `\t`, `\u{feff}`), bytes that are not UTF-8 as `\xNN`, so that a message never carries
/// raw control bytes (NULs of UTF-16 input, escape sequences) or hides what is in the line.
/// Quotes and backslashes are left as they are.
pub fn quote_input(bytes: &[u8], max: usize) -> String {
    // The first `max` bytes, without a character cut in two.
    let look = &bytes[..bytes.len().min(max.saturating_add(3))];
    let mut end = 0;
    for chunk in look.utf8_chunks() {
        let (valid, invalid) = (chunk.valid(), chunk.invalid());
        if end + valid.len() > max {
            let mut k = max - end;
            while !valid.is_char_boundary(k) {
                k -= 1;
            }
            end += k;
            break;
        }
        end += valid.len();
        if end + invalid.len() > max {
            end = max;
            break;
        }
        end += invalid.len();
    }
    let mut s = String::with_capacity(end + 8);
    for chunk in bytes[..end].utf8_chunks() {
        let mut rest = chunk.valid();
        while let Some(i) = rest.find(['\'', '"', '\\']) {
            s.extend(rest[..i].escape_debug());
            s.push_str(&rest[i..i + 1]);
            rest = &rest[i + 1..];
        }
        s.extend(rest.escape_debug());
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    if end < bytes.len() {
        s.push('…');
    }
    s
}

/// The annotation suffix of a frame name in folded stacks, as perf's and FlameGraph's
/// `stackcollapse-*` scripts write it (`do_syscall_64_[k]`): what the frame is, which the
/// writers show by colour or category, not in the name. One convention, read in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Annotation {
    /// `_[k]`: kernel code.
    Kernel,
    /// `_[j]`: JIT-compiled code.
    Jit,
    /// `_[i]`: inlined code.
    Inlined,
    /// `_[w]`: a waker's stack (off-wake time graphs).
    Waker,
}

impl Annotation {
    /// `name` without its annotation suffix, and the annotation; `name` itself and `None`
    /// when it has none.
    pub fn split(name: &str) -> (&str, Option<Annotation>) {
        let a = match name.as_bytes() {
            [.., b'_', b'[', b'k', b']'] => Annotation::Kernel,
            [.., b'_', b'[', b'j', b']'] => Annotation::Jit,
            [.., b'_', b'[', b'i', b']'] => Annotation::Inlined,
            [.., b'_', b'[', b'w', b']'] => Annotation::Waker,
            _ => return (name, None),
        };
        // The suffix is 4 ASCII bytes: what precedes it ends on a character boundary.
        (&name[..name.len() - 4], Some(a))
    }

    /// The annotation `name` ends with, if any.
    pub fn of(name: &str) -> Option<Annotation> {
        Annotation::split(name).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_annotation_is_the_last_four_bytes_only() {
        use Annotation::*;
        for (name, want) in [
            ("do_syscall_64_[k]", ("do_syscall_64", Some(Kernel))),
            ("Interpreter_[j]", ("Interpreter", Some(Jit))),
            ("foo_[i]", ("foo", Some(Inlined))),
            ("wake_[w]", ("wake", Some(Waker))),
            ("_[k]", ("", Some(Kernel))),
            ("é_[k]", ("é", Some(Kernel))),
            ("f_[k] ", ("f_[k] ", None)),
            ("f_[x]", ("f_[x]", None)),
            ("f[k]", ("f[k]", None)),
            ("_[k]_[j]", ("_[k]", Some(Jit))),
            ("", ("", None)),
        ] {
            assert_eq!(Annotation::split(name), want, "{name:?}");
            assert_eq!(Annotation::of(name), want.1, "{name:?}");
        }
    }

    #[test]
    fn quoted_input_escapes_invisible_and_control_characters() {
        assert_eq!(quote_input(b"plain text", 40), "plain text");
        assert_eq!(
            quote_input("caf\u{e9} \u{3bb}".as_bytes(), 40),
            "caf\u{e9} \u{3bb}"
        );
        assert_eq!(
            quote_input("\u{feff}# callgrind format".as_bytes(), 40),
            "\\u{feff}# callgrind format"
        );
        assert_eq!(
            quote_input(b"#\0 \0c\0\t\x1b[31m\x7f", 40),
            "#\\0 \\0c\\0\\t\\u{1b}[31m\\u{7f}"
        );
        assert_eq!(
            quote_input("a\u{200b}b\u{202e}c\u{a0}".as_bytes(), 40),
            "a\\u{200b}b\\u{202e}c\\u{a0}"
        );
        // Quotes and backslashes as they are; bytes that are not UTF-8 as \xNN.
        assert_eq!(quote_input(br#"it's "C:\x""#, 40), r#"it's "C:\x""#);
        assert_eq!(quote_input(b"caf\xe9\xff\xfe", 40), "caf\\xe9\\xff\\xfe");
        // Cut at a character boundary.
        assert_eq!(quote_input(b"abcdef", 3), "abc…");
        assert_eq!(quote_input("ab\u{e9}d".as_bytes(), 3), "ab…");
        assert_eq!(quote_input("a\u{1f600}".as_bytes(), 4), "a…");
        assert_eq!(quote_input("a\u{1f600}".as_bytes(), 5), "a\u{1f600}");
        assert_eq!(quote_input(b"a\x80\x80\x80\x80\x80", 3), "a\\x80\\x80…");
        assert_eq!(quote_input(b"", 3), "");
    }
}
