//! Colours: a frame's fill from its function name (or, in a differential graph, from how much
//! it grew), and the theme around the frames.
//!
//! A frame's colour depends on nothing but its name and the palette: the name is hashed with
//! FNV-1a (64 bit, implemented here, followed by a fixed bit mixer) and the hash picks the shade
//! inside the palette's hue range. So a function keeps its colour across runs, across profiles
//! and across profconv versions, and no colour depends on frame order or on a random seed (the
//! anchors' default colours change with frame order or need `--hash`/`--deterministic`).

mod palettes;

pub use palettes::Hue;

use std::fmt;
use std::str::FromStr;

/// A palette (`-O colors=NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Palette {
    /// Warm reds and yellows (the classic CPU flame graph).
    Hot,
    /// Greens (memory).
    Mem,
    /// Blues (I/O).
    Io,
    /// Aqua (wake-ups, off-CPU).
    Wakeup,
    /// Java mixed-mode: JIT, inlined, kernel and native frames apart.
    Java,
    /// JavaScript (Node.js perf maps).
    Js,
    /// Perl.
    Perl,
    /// Python: third-party packages, the standard library and the program apart.
    Python,
    /// Rust: core/std/alloc, other Rust paths and non-Rust frames apart.
    Rust,
    /// One hue.
    Red,
    /// One hue.
    Green,
    /// One hue.
    Blue,
    /// One hue.
    Aqua,
    /// One hue.
    Yellow,
    /// One hue.
    Purple,
    /// One hue.
    Orange,
}

impl Palette {
    /// The names `-O colors=` accepts, in the order of the docs.
    pub const NAMES: &'static [&'static str] = &[
        "hot", "mem", "io", "wakeup", "java", "js", "perl", "python", "rust", "red", "green",
        "blue", "aqua", "yellow", "purple", "orange",
    ];

    const ALL: [Palette; 16] = [
        Palette::Hot,
        Palette::Mem,
        Palette::Io,
        Palette::Wakeup,
        Palette::Java,
        Palette::Js,
        Palette::Perl,
        Palette::Python,
        Palette::Rust,
        Palette::Red,
        Palette::Green,
        Palette::Blue,
        Palette::Aqua,
        Palette::Yellow,
        Palette::Purple,
        Palette::Orange,
    ];

    /// The palette's name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl FromStr for Palette {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let i = Self::NAMES.iter().position(|n| *n == s).ok_or(())?;
        Ok(Self::ALL[i])
    }
}

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl fmt::Display for Rgb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rgb({},{},{})", self.0, self.1, self.2)
    }
}

/// 64-bit FNV-1a of `bytes`, then a fixed finalizer (splitmix64's) so that every bit of the
/// result depends on every input byte (plain FNV-1a's low bits vary little for short names).
pub fn name_hash(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The name shown for a frame: without its annotation suffix (`_[k]`, `_[j]`, `_[i]`, `_[w]`),
/// which only chooses the colour.
pub fn display_name(name: &str) -> &str {
    palettes::strip_annotation(name)
}

/// The fill of a frame named `name` (the name as in the profile, annotations included:
/// `_[k]`, `_[j]`, `_[i]`, `_[w]` select hues in the language palettes).
pub fn frame_color(palette: Palette, name: &str) -> Rgb {
    // Separator frames (`-` between user and kernel stacks, `--` in chain graphs).
    match name {
        "-" => return Rgb(160, 160, 160),
        "--" => return Rgb(110, 110, 110),
        _ => {}
    }
    let hue = palettes::hue(palette, name);
    let h = name_hash(palettes::colour_key(name).as_bytes());
    let v1 = (h & 0xffff) as f64 / 65535.0;
    let v2 = ((h >> 16) & 0xffff) as f64 / 65535.0;
    let v3 = ((h >> 32) & 0xffff) as f64 / 65535.0;
    hue.shade(v1, v2, v3)
}

/// The fill of a frame in a differential graph: `delta` is the growth of its self value
/// (after − before), `max` the largest |delta| drawn. Red grows, blue shrinks (swapped with
/// `negate`), the stronger the larger |delta|; unchanged frames are near white.
pub fn diff_color(delta: f64, max: f64, negate: bool) -> Rgb {
    if delta == 0.0 || max <= 0.0 || !delta.is_finite() {
        return Rgb(250, 250, 250);
    }
    let strength = (delta.abs() / max).min(1.0);
    let c = (210.0 * (1.0 - strength)).round() as u8;
    if (delta > 0.0) != negate {
        Rgb(255, c, c)
    } else {
        Rgb(c, c, 255)
    }
}

/// Colours around the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// Background gradient, top.
    pub background_top: &'static str,
    /// Background gradient, bottom.
    pub background_bottom: &'static str,
    /// Title, buttons and details text.
    pub ui_text: &'static str,
    /// Frame labels (drawn on the frames' light fills, in both themes).
    pub frame_text: &'static str,
    /// Fill of the frames a search matched.
    pub search: &'static str,
    /// Outline of the frame under the pointer.
    pub hover_stroke: &'static str,
}

/// The theme for `palette` (the background follows flamegraph.pl's choice per palette).
pub fn theme(palette: Palette, dark: bool) -> Theme {
    if dark {
        return Theme {
            background_top: "#1e1e24",
            background_bottom: "#2c2c34",
            ui_text: "#dcdcdc",
            frame_text: "#000000",
            search: "#e600e6",
            hover_stroke: "#ffffff",
        };
    }
    let (top, bottom) = match palette {
        Palette::Mem => ("#eef2ee", "#e0ffe0"),
        Palette::Io | Palette::Wakeup => ("#f8f8f8", "#e8e8e8"),
        Palette::Hot
        | Palette::Java
        | Palette::Js
        | Palette::Perl
        | Palette::Python
        | Palette::Rust => ("#eeeeee", "#eeeeb0"),
        _ => ("#f8f8f8", "#e8e8e8"),
    };
    Theme {
        background_top: top,
        background_bottom: bottom,
        ui_text: "#000000",
        frame_text: "#000000",
        search: "#e600e6",
        hover_stroke: "#000000",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_values() {
        // The published FNV-1a 64 test vectors, before the finalizer.
        fn fnv(bytes: &[u8]) -> u64 {
            let mut h = 0xcbf2_9ce4_8422_2325u64;
            for &b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            h
        }
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv(b"foobar"), 0x8594_4171_f739_67e8);
        // And the mixed hash is a pure function of the bytes (pinned so it never drifts).
        assert_eq!(name_hash(b"main"), name_hash(b"main"));
        assert_ne!(name_hash(b"main"), name_hash(b"mains"));
    }

    #[test]
    fn a_name_keeps_its_colour() {
        let a = frame_color(Palette::Hot, "std::io::copy");
        assert_eq!(a, frame_color(Palette::Hot, "std::io::copy"));
        // Pinned: changing the hash or the palette ranges changes every user's pictures.
        assert_eq!(frame_color(Palette::Hot, "main"), Rgb(223, 131, 53));
        assert_eq!(frame_color(Palette::Hot, "-"), Rgb(160, 160, 160));
    }

    #[test]
    fn every_palette_name_round_trips() {
        for (i, n) in Palette::NAMES.iter().enumerate() {
            let p: Palette = n.parse().unwrap();
            assert_eq!(p as usize, i);
            assert_eq!(p.name(), *n);
            // Every palette gives a colour for any name.
            let _ = frame_color(p, "x_[k]");
        }
        assert!("Hot".parse::<Palette>().is_err());
    }

    #[test]
    fn differential_colours() {
        assert_eq!(diff_color(0.0, 10.0, false), Rgb(250, 250, 250));
        assert_eq!(diff_color(10.0, 10.0, false), Rgb(255, 0, 0));
        assert_eq!(diff_color(-10.0, 10.0, false), Rgb(0, 0, 255));
        assert_eq!(diff_color(5.0, 10.0, false), Rgb(255, 105, 105));
        assert_eq!(diff_color(5.0, 10.0, true), Rgb(105, 105, 255));
    }
}
