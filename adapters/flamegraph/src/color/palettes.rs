//! Which hue a frame gets in each palette, and the shade ranges of each hue (flamegraph.pl's
//! ranges, so pictures look familiar).

use super::{Palette, Rgb};
use profconv_plugin::Annotation;

/// A hue with a range of shades.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hue {
    /// Reds to yellows.
    Hot,
    /// Greens to aquas.
    Mem,
    /// Greys to blues.
    Io,
    /// Reds.
    Red,
    /// Greens.
    Green,
    /// Blues.
    Blue,
    /// Aquas.
    Aqua,
    /// Yellows.
    Yellow,
    /// Purples.
    Purple,
    /// Oranges.
    Orange,
}

impl Hue {
    /// The shade picked by three hash fractions in `0..=1`.
    pub fn shade(self, v1: f64, v2: f64, v3: f64) -> Rgb {
        let c = |base: u8, span: f64, v: f64| base.saturating_add((span * v) as u8);
        match self {
            Hue::Hot => Rgb(c(205, 50.0, v3), c(0, 230.0, v1), c(0, 55.0, v2)),
            Hue::Mem => Rgb(0, c(190, 50.0, v2), c(0, 210.0, v1)),
            Hue::Io => {
                let r = c(80, 60.0, v1);
                Rgb(r, r, c(190, 55.0, v2))
            }
            Hue::Red => {
                let g = c(50, 80.0, v1);
                Rgb(c(200, 55.0, v1), g, g)
            }
            Hue::Green => {
                let r = c(50, 60.0, v1);
                Rgb(r, c(200, 55.0, v1), r)
            }
            Hue::Blue => {
                let r = c(80, 60.0, v1);
                Rgb(r, r, c(205, 50.0, v1))
            }
            Hue::Aqua => {
                let g = c(165, 55.0, v1);
                Rgb(c(50, 60.0, v1), g, g)
            }
            Hue::Yellow => {
                let r = c(175, 55.0, v1);
                Rgb(r, r, c(50, 20.0, v1))
            }
            Hue::Purple => {
                let r = c(190, 65.0, v1);
                Rgb(r, c(80, 60.0, v1), r)
            }
            Hue::Orange => Rgb(c(190, 65.0, v1), c(90, 65.0, v1), 0),
        }
    }
}

/// `name` without its annotation suffix ([`Annotation`]: kernel, JIT, inlined, waker), if it
/// has one. Annotations select hues and are not shown.
pub fn strip_annotation(name: &str) -> &str {
    Annotation::split(name).0
}

/// What is hashed for the shade: the name without annotation and without a DTrace
/// ``module` `` prefix, so one function has one colour whichever module reported it.
pub fn colour_key(name: &str) -> &str {
    without_module(strip_annotation(name))
}

/// `name` without a DTrace ``module` `` prefix (`libstd.dylib`std::fs::File::sync_all`).
fn without_module(name: &str) -> &str {
    match name.rfind('`') {
        Some(i) if i + 1 < name.len() => &name[i + 1..],
        _ => name,
    }
}

/// The hue of `name` in `palette`.
pub fn hue(palette: Palette, name: &str) -> Hue {
    match palette {
        Palette::Hot => Hue::Hot,
        Palette::Mem => Hue::Mem,
        Palette::Io => Hue::Io,
        Palette::Wakeup | Palette::Aqua => Hue::Aqua,
        Palette::Red => Hue::Red,
        Palette::Green => Hue::Green,
        Palette::Blue => Hue::Blue,
        Palette::Yellow => Hue::Yellow,
        Palette::Purple => Hue::Purple,
        Palette::Orange => Hue::Orange,
        Palette::Java => java(name),
        Palette::Js => js(name),
        Palette::Perl => perl(name),
        Palette::Python => python(name),
        Palette::Rust => rust(name),
    }
}

fn java(name: &str) -> Hue {
    match Annotation::of(name) {
        Some(Annotation::Jit) => return Hue::Green,
        Some(Annotation::Inlined) => return Hue::Aqua,
        Some(Annotation::Kernel) => return Hue::Orange,
        Some(Annotation::Waker) | None => {}
    }
    let n = name.strip_prefix('L').unwrap_or(name);
    let java_pkg = [
        "java/", "javax/", "jdk/", "net/", "org/", "com/", "io/", "sun/",
    ]
    .iter()
    .any(|p| n.starts_with(p));
    if java_pkg || name.contains(":::") {
        Hue::Green // Java
    } else if name.contains("::") {
        Hue::Yellow // C++
    } else {
        Hue::Red // native, system
    }
}

fn js(name: &str) -> Hue {
    let annotation = Annotation::of(name);
    if annotation == Some(Annotation::Jit) {
        return if name.contains('/') {
            Hue::Green
        } else {
            Hue::Aqua
        };
    }
    if annotation == Some(Annotation::Kernel) {
        Hue::Orange
    } else if name.contains("::") {
        Hue::Yellow // C++ (V8, Node internals)
    } else if name.find('/').is_some_and(|i| name[i..].contains(".js")) {
        Hue::Green // JavaScript with a source location: a path, then `.js` (flamegraph.pl's)
    } else if name.contains(':') {
        Hue::Aqua // built-ins
    } else if name == " " {
        Hue::Green // a missing symbol, as flamegraph.pl draws it
    } else {
        Hue::Red
    }
}

fn perl(name: &str) -> Hue {
    if Annotation::of(name) == Some(Annotation::Kernel) {
        Hue::Orange
    } else if name.contains("Perl") || name.contains(".pl") {
        Hue::Green
    } else if name.contains("::") {
        Hue::Yellow
    } else {
        Hue::Red
    }
}

fn python(name: &str) -> Hue {
    // Native frames (py-spy --native: `f (libc.so.6)`, `g (_json.c:1159)`, bare addresses).
    let native = name.starts_with("0x") || names_shared_library(name) || name.contains(".c:");
    // Path components, of POSIX and of Windows paths.
    let mut parts = name.split(['/', '\\']);
    if Annotation::of(name) == Some(Annotation::Kernel) || native {
        Hue::Orange
    } else if name.contains("site-packages") || name.contains("dist-packages") {
        Hue::Aqua // third-party packages
    } else if parts.any(is_python_home)
        || ["<frozen", "<built-in", "<method"]
            .iter()
            .any(|p| name.starts_with(p))
        // py-spy names a frozen module's frame `f (<frozen importlib._bootstrap>:1176)`.
        || name.contains(" (<frozen ")
    {
        Hue::Yellow // the standard library, the interpreter
    } else {
        Hue::Red // the program
    }
}

/// A shared library's name in `name`: `.so` at the end or before `.`, `)`, `]`, `:` or a
/// space (`libc.so.6`, `(_json.so)`), not the start of a word (`Resolver.solve`).
fn names_shared_library(name: &str) -> bool {
    name.match_indices(".so").any(|(i, _)| {
        matches!(
            name.as_bytes().get(i + 3),
            None | Some(b'.' | b')' | b']' | b':' | b' ')
        )
    })
}

/// A path component naming a Python installation or interpreter: `python3.11`, `Python311`,
/// `python` (inferno's rule).
fn is_python_home(part: &str) -> bool {
    part.strip_prefix("python")
        .or_else(|| part.strip_prefix("Python"))
        .is_some_and(|version| version.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

fn rust(name: &str) -> Hue {
    if Annotation::of(name) == Some(Annotation::Kernel) {
        return Hue::Orange;
    }
    // DTrace names a frame `module`function` (macOS, cargo-flamegraph): the standard library's
    // frames were drawn as other Rust code.
    let name = without_module(name);
    let n = name.trim_start_matches(['<', '&']);
    let n = n.strip_prefix("dyn ").unwrap_or(n);
    if ["core::", "std::", "alloc::"]
        .iter()
        .any(|p| n.starts_with(p))
    {
        Hue::Orange // the standard library
    } else if name.contains("::") {
        Hue::Aqua // other Rust code
    } else {
        Hue::Yellow // not Rust (C, the kernel, the runtime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_palettes_split_frames_by_origin() {
        assert_eq!(hue(Palette::Java, "Interpreter_[j]"), Hue::Green);
        assert_eq!(hue(Palette::Java, "foo_[i]"), Hue::Aqua);
        assert_eq!(hue(Palette::Java, "sys_write_[k]"), Hue::Orange);
        assert_eq!(hue(Palette::Java, "Ljava/lang/Thread:::run"), Hue::Green);
        assert_eq!(hue(Palette::Java, "JavaThread::run"), Hue::Yellow);
        assert_eq!(hue(Palette::Java, "start_thread"), Hue::Red);
        assert_eq!(hue(Palette::Rust, "core::ptr::drop_in_place"), Hue::Orange);
        assert_eq!(
            hue(Palette::Rust, "<alloc::vec::Vec<T> as Drop>::drop"),
            Hue::Orange
        );
        assert_eq!(hue(Palette::Rust, "serde_json::de::from_str"), Hue::Aqua);
        assert_eq!(hue(Palette::Rust, "memcpy"), Hue::Yellow);
        assert_eq!(
            hue(
                Palette::Python,
                "get (/usr/lib/python3/dist-packages/requests/api.py:76)"
            ),
            Hue::Aqua
        );
        assert_eq!(
            hue(
                Palette::Python,
                "<module> (/usr/lib/python3.11/runpy.py:86)"
            ),
            Hue::Yellow
        );
        assert_eq!(hue(Palette::Python, "work (app.py:12)"), Hue::Red);
        // A method named `so…` is not a shared library (`.so` was matched anywhere).
        assert_eq!(
            hue(
                Palette::Python,
                "Resolver.solve (/venv/lib/python3.11/site-packages/resolvelib/resolvers.py:92)"
            ),
            Hue::Aqua
        );
        assert_eq!(
            hue(Palette::Python, "Table.sort_rows (app.py:40)"),
            Hue::Red
        );
        assert_eq!(hue(Palette::Python, "f (_json.so)"), Hue::Orange);
        assert_eq!(
            hue(Palette::Python, "g (libpython3.11.so.1.0)"),
            Hue::Orange
        );
        // The standard library of a Windows installation, the interpreter's own frame.
        assert_eq!(
            hue(
                Palette::Python,
                "loads (C:\\Python311\\Lib\\json\\__init__.py:346)"
            ),
            Hue::Yellow
        );
        assert_eq!(hue(Palette::Python, "python3"), Hue::Yellow);
        assert_eq!(
            hue(Palette::Python, "<method 'join' of 'str' objects>"),
            Hue::Yellow
        );
        assert_eq!(hue(Palette::Python, "python_helper (app.py:3)"), Hue::Red);
        // A missing symbol (a frame of one space) is green in flamegraph.pl's js palette.
        assert_eq!(hue(Palette::Js, " "), Hue::Green);
        // A path is JavaScript when a `.js` follows its `/`, as in flamegraph.pl and inferno:
        // an unsymbolised library (`/usr/lib/libx`) or a bare `foo.js` is not.
        assert_eq!(hue(Palette::Js, "a/b.js"), Hue::Green);
        assert_eq!(hue(Palette::Js, "/usr/lib/libx"), Hue::Red);
        assert_eq!(hue(Palette::Js, "foo.js"), Hue::Red);
        assert_eq!(
            hue(Palette::Python, "scanner_call (_json.c:1159)"),
            Hue::Orange
        );
        assert_eq!(
            hue(Palette::Python, "0x7f7a1284524a (libc.so.6)"),
            Hue::Orange
        );
        assert_eq!(hue(Palette::Perl, "Perl_pp_entersub"), Hue::Green);
        assert_eq!(
            hue(Palette::Js, "LazyCompile:~f /app/x.js:3_[j]"),
            Hue::Green
        );
    }

    /// DTrace's `module`function` names (inferno-collapse-dtrace keeps the module) are
    /// coloured by the function: `std::` orange, other Rust aqua, C yellow, as without it.
    #[test]
    fn the_rust_palette_looks_past_a_dtrace_module() {
        for (name, want) in [
            ("cru-ds-fdsync-v1`std::fs::File::sync_all", Hue::Orange),
            (
                "inferno-collapse-dtrace.exe`alloc::alloc::alloc",
                Hue::Orange,
            ),
            (
                "prog`<core::str::Chars as core::iter::Iterator>::next",
                Hue::Orange,
            ),
            ("prog`serde_json::de::from_str", Hue::Aqua),
            ("libsystem_kernel.dylib`__psynch_cvwait", Hue::Yellow),
        ] {
            assert_eq!(hue(Palette::Rust, name), want, "{name}");
            let bare = &name[name.rfind('`').unwrap() + 1..];
            assert_eq!(hue(Palette::Rust, bare), want, "{bare}");
        }
    }

    #[test]
    fn annotations_and_module_prefixes_do_not_change_the_shade() {
        assert_eq!(strip_annotation("write_[k]"), "write");
        assert_eq!(strip_annotation("write"), "write");
        assert_eq!(colour_key("libc.so.6`malloc"), "malloc");
        assert_eq!(colour_key("malloc_[k]"), "malloc");
        assert_eq!(colour_key("`"), "`");
    }

    /// py-spy puts a frozen module's name where the file goes, after the function's name: its
    /// frames are the standard library's, with py-spy's default (relative) file names too.
    #[test]
    fn py_spy_frozen_module_frames_are_the_standard_library() {
        for name in [
            "_find_and_load (<frozen importlib._bootstrap>:1176)",
            "<module> (<frozen site>:616)",
            "_call_with_frames_removed (<frozen importlib._bootstrap>)",
        ] {
            assert_eq!(hue(Palette::Python, name), Hue::Yellow, "{name}");
        }
        assert_eq!(hue(Palette::Python, "main (prog.py:27)"), Hue::Red);
    }
}
