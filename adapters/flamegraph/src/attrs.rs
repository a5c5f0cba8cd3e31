//! The emitter's options (`-O KEY[=VALUE]`): their declarations for `profconv formats` and
//! their parsed, checked form.
//!
//! Keys follow inferno's and flamegraph.pl's command-line words where they overlap (`title`,
//! `subtitle`, `notes`, `countname`, `nametype`, `width`, `height`, `fonttype`, `fontsize`,
//! `fontwidth`, `minwidth`, `colors`, `inverted`, `reverse`, `flamechart`, `negate`), so a user of
//! either tool finds the same word. `minwidth` is in pixels like flamegraph.pl's, or a
//! percentage of the total with `%` (inferno's `--minwidth` is always a percentage).

use crate::color::Palette;
use profconv_plugin::{OptionDesc, Options, PluginError, quote_input};

/// The options as declared to the host (`profconv formats` lists them).
pub const OPTIONS: &[OptionDesc] = &[
    OptionDesc::string(
        "title",
        "",
        "title (default: Flame Graph, Icicle Graph, Flame Chart or Differential Flame Graph)",
    ),
    OptionDesc::string("subtitle", "", "second line under the title"),
    OptionDesc::string(
        "notes",
        "",
        "text kept in an XML comment at the top of the file",
    ),
    OptionDesc::string(
        "countname",
        "",
        "what a value counts, shown in tooltips (default: the value type's unit, or its name \
         when the unit is `count`)",
    ),
    OptionDesc::string(
        "nametype",
        "Function:",
        "prefix of the details line on hover",
    ),
    OptionDesc::integer("width", "1200", "image width in pixels"),
    OptionDesc::integer("height", "16", "frame height in pixels"),
    OptionDesc::string("fonttype", "monospace", "font family"),
    OptionDesc::number("fontsize", "12", "font size in pixels"),
    OptionDesc::number(
        "fontwidth",
        "0.6",
        "average character width as a fraction of the font size (fits labels to frames)",
    ),
    OptionDesc::string(
        "minwidth",
        "0.1",
        "omit frames narrower than this many pixels, or than N% of the total with `%`",
    ),
    OptionDesc::flag("inverted", "icicle graph: roots at the top, growing down"),
    OptionDesc::flag(
        "reverse",
        "reverse every stack: leaf functions at the base (merged from the leaves)",
    ),
    OptionDesc::flag(
        "flamechart",
        "flame chart: samples in time order, siblings not merged (for ordered profiles)",
    ),
    OptionDesc::string(
        "sort",
        "name",
        "sibling order: name (alphabetical, comparable across profiles) or weight (widest first)",
    ),
    OptionDesc::string(
        "colors",
        "hot",
        "palette: hot, mem, io, wakeup, java, js, perl, python, rust, red, green, blue, aqua, \
         yellow, purple, orange (colours follow a hash of the name)",
    ),
    OptionDesc::flag("dark", "dark theme"),
    OptionDesc::string(
        "value",
        "",
        "the value type to draw (default: the first weight, e.g. samples or ticks)",
    ),
    OptionDesc::flag(
        "normalize",
        "differential: scale the before profile to the after profile's total first",
    ),
    OptionDesc::flag(
        "negate",
        "differential: swap the colours (blue for growth, red for shrinkage)",
    ),
    OptionDesc::integer(
        "max-size",
        MAX_SIZE_TEXT,
        "the most bytes the picture may take (0: no bound); each frame's tooltip holds its \
         whole name, so a long name called deep in recursion can make terabytes",
    ),
];

/// Default [`FlameOptions::max_size`]: 2 GiB, far more than a browser opens as one SVG
/// document. Each frame holds its whole name, so a name of 1 MB reached through 5 000 nested
/// calls (a 1.3 KB gzipped trace) is a 5 GB picture: without a bound a small input could fill
/// a disk.
pub const MAX_SIZE: u64 = 1 << 31;

/// [`MAX_SIZE`] as the option's documented default.
pub const MAX_SIZE_TEXT: &str = "2147483648";

/// The longest `countname`, in bytes.
pub const MAX_COUNT_NAME: usize = 256;
/// Default image width in pixels.
pub const DEFAULT_WIDTH: u32 = 1200;
/// Default frame height in pixels.
pub const DEFAULT_FRAME_HEIGHT: u32 = 16;
/// Default font size in pixels.
pub const DEFAULT_FONT_SIZE: f64 = 12.0;
/// Default character width as a fraction of the font size, for the default monospace font
/// (0.600 em in Liberation Mono and Courier, 0.602 in DejaVu Sans Mono and Menlo; inferno's 0.59
/// is for Verdana's average, and cut labels drawn in a monospace font reached past their frames).
pub const DEFAULT_FONT_WIDTH: f64 = 0.6;
/// Default minimum frame width in pixels (flamegraph.pl's default).
pub const DEFAULT_MIN_WIDTH_PX: f64 = 0.1;
/// Horizontal padding on each side of the frames, in pixels.
pub const XPAD: u32 = 10;

/// Below which width a frame is omitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MinWidth {
    /// Pixels of the drawing.
    Pixels(f64),
    /// Percent of the total.
    Percent(f64),
}

/// Sibling order in the merged graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// Alphabetical (bytewise) by function name: the same function sits in the same place in
    /// two profiles of one program, so they can be compared side by side.
    #[default]
    Name,
    /// Widest first, ties by name.
    Weight,
}

/// Every option, parsed and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct FlameOptions {
    /// Title; `None`: chosen from the mode.
    pub title: Option<String>,
    /// Subtitle, if any.
    pub subtitle: Option<String>,
    /// Notes for the XML comment, if any.
    pub notes: Option<String>,
    /// What a value counts; `None`: from the value type.
    pub countname: Option<String>,
    /// Prefix of the details line.
    pub nametype: String,
    /// Image width in pixels.
    pub width: u32,
    /// Frame height in pixels.
    pub frame_height: u32,
    /// Font family.
    pub font_type: String,
    /// Font size in pixels.
    pub font_size: f64,
    /// Character width as a fraction of the font size.
    pub font_width: f64,
    /// Pruning threshold.
    pub min_width: MinWidth,
    /// Icicle graph.
    pub inverted: bool,
    /// Reversed stacks.
    pub reverse: bool,
    /// Flame chart (time order, not merged).
    pub flamechart: bool,
    /// Sibling order.
    pub sort: SortOrder,
    /// Palette.
    pub palette: Palette,
    /// Dark theme.
    pub dark: bool,
    /// Value type to draw; `None`: the first weight.
    pub value: Option<String>,
    /// Differential: scale before to after's total.
    pub normalize: bool,
    /// Differential: swap the colours.
    pub negate: bool,
    /// The most bytes the picture may take, checked before anything is written; `None`: no
    /// bound (option `max-size`, default [`MAX_SIZE`]).
    pub max_size: Option<u64>,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            title: None,
            subtitle: None,
            notes: None,
            countname: None,
            nametype: "Function:".into(),
            width: DEFAULT_WIDTH,
            frame_height: DEFAULT_FRAME_HEIGHT,
            font_type: "monospace".into(),
            font_size: DEFAULT_FONT_SIZE,
            font_width: DEFAULT_FONT_WIDTH,
            min_width: MinWidth::Pixels(DEFAULT_MIN_WIDTH_PX),
            inverted: false,
            reverse: false,
            flamechart: false,
            sort: SortOrder::Name,
            palette: Palette::Hot,
            dark: false,
            value: None,
            normalize: false,
            negate: false,
            max_size: Some(MAX_SIZE),
        }
    }
}

impl FlameOptions {
    /// Parses and checks the host's options. Every error names the key and what it accepts.
    pub fn from_options(o: &Options) -> Result<FlameOptions, PluginError> {
        let d = FlameOptions::default();
        let text = |key: &str| o.get(key).filter(|v| !v.is_empty()).map(str::to_string);
        let width = o
            .parse_in("width", 2 * XPAD + 10..=1_000_000, "a width in pixels")?
            .unwrap_or(d.width);
        let frame_height = o
            .parse_in("height", 2..=1000, "a frame height in pixels")?
            .unwrap_or(d.frame_height);
        let font_size = o
            .parse_in("fontsize", 1.0..=200.0, "a size in pixels")?
            .unwrap_or(d.font_size);
        let font_width = o
            .parse_in("fontwidth", 0.05..=5.0, "a fraction of the font size")?
            .unwrap_or(d.font_width);
        let min_width = match o.get("minwidth") {
            None | Some("") => d.min_width,
            Some(v) => parse_min_width(v)?,
        };
        let sort = match o.get("sort") {
            None | Some("") | Some("name") => SortOrder::Name,
            Some("weight") => SortOrder::Weight,
            Some(v) => {
                return Err(PluginError::bad_option(format!(
                    "option sort={}: expected `name` or `weight`",
                    quote_input(v.as_bytes(), 40)
                )));
            }
        };
        let palette = match o.get("colors") {
            None | Some("") => d.palette,
            Some(v) => v.parse::<Palette>().map_err(|()| {
                PluginError::bad_option(format!(
                    "option colors={}: expected one of {}",
                    quote_input(v.as_bytes(), 40),
                    Palette::NAMES.join(", ")
                ))
            })?,
        };
        let countname = text("countname");
        if let Some(c) = countname.as_ref().filter(|c| c.len() > MAX_COUNT_NAME) {
            // Written into every frame's title: a long one would multiply the file's size.
            return Err(PluginError::bad_option(format!(
                "option countname={}: at most {MAX_COUNT_NAME} bytes (it is written into every \
                 frame's title); this one has {}",
                quote_input(c.as_bytes(), 40),
                c.len()
            )));
        }
        let flamechart = o.flag("flamechart");
        let reverse = o.flag("reverse");
        if flamechart && reverse {
            return Err(PluginError::bad_option(
                "options flamechart and reverse cannot be combined: a flame chart keeps each \
                 stack in time order from its root",
            ));
        }
        Ok(FlameOptions {
            title: text("title"),
            subtitle: text("subtitle"),
            notes: text("notes"),
            countname,
            nametype: o.get("nametype").map_or(d.nametype, str::to_string),
            width,
            frame_height,
            font_type: text("fonttype").unwrap_or(d.font_type),
            font_size,
            font_width,
            min_width,
            inverted: o.flag("inverted"),
            reverse,
            flamechart,
            sort,
            palette,
            dark: o.flag("dark"),
            value: text("value"),
            normalize: o.flag("normalize"),
            negate: o.flag("negate"),
            max_size: o.max_output_size_or("max-size", MAX_SIZE)?,
        })
    }

    /// Width of the drawing area (the image minus the padding), in pixels.
    pub fn plot_width(&self) -> f64 {
        f64::from(self.width - 2 * XPAD)
    }

    /// The smallest value drawn, for a graph whose root frames add up to `total`.
    ///
    /// A frame exactly as wide as the option says is drawn (only narrower ones are not): the
    /// threshold is the smallest whole value whose width, computed in the option's own unit
    /// (`w × plot / total` pixels, `w × 100 / total` percent), reaches the option. The product
    /// `px / plot × total` rounds either way, and 0.1 px of 177 000 samples came out above 15,
    /// so a frame of 15 (0.1 px exactly) was pruned.
    pub fn min_value(&self, total: i64) -> f64 {
        let t = total as f64;
        let (limit, per_total) = match self.min_width {
            MinWidth::Pixels(px) => (px, self.plot_width()),
            MinWidth::Percent(pc) => (pc, 100.0),
        };
        let estimate = limit / per_total * t;
        // Whole values are exact as doubles below 2^52 (and one more or less is too).
        if total <= 0 || estimate.is_nan() || estimate >= 4.5e15 {
            return estimate;
        }
        let reaches = |w: f64| w * per_total / t >= limit;
        let mut v = estimate.ceil();
        while v >= 1.0 && reaches(v - 1.0) {
            v -= 1.0;
        }
        while !reaches(v) {
            v += 1.0;
        }
        v
    }
}

/// `0.1` (pixels) or `0.01%` (percent of the total).
fn parse_min_width(v: &str) -> Result<MinWidth, PluginError> {
    let bad = || {
        PluginError::bad_option(format!(
            "option minwidth={}: expected pixels (`0.1`, not negative) or a percentage of the \
             total (`0.01%`, from 0 to 100)",
            quote_input(v.as_bytes(), 40)
        ))
    };
    let (num, percent) = match v.trim().strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (v.trim(), false),
    };
    let x: f64 = num.parse().map_err(|_| bad())?;
    if !x.is_finite() || x < 0.0 || (percent && x > 100.0) {
        return Err(bad());
    }
    Ok(if percent {
        MinWidth::Percent(x)
    } else {
        MinWidth::Pixels(x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, Option<&str>)]) -> Options {
        Options::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
                .collect(),
        )
    }

    #[test]
    fn defaults_without_options() {
        assert_eq!(
            FlameOptions::from_options(&Options::default()).unwrap(),
            FlameOptions::default()
        );
    }

    #[test]
    fn every_option_parses() {
        let o = FlameOptions::from_options(&opts(&[
            ("title", Some("T <&>")),
            ("subtitle", Some("S")),
            ("notes", Some("N")),
            ("countname", Some("ticks")),
            ("nametype", Some("Frame:")),
            ("width", Some("800")),
            ("height", Some("20")),
            ("fonttype", Some("Verdana")),
            ("fontsize", Some("10.5")),
            ("fontwidth", Some("0.6")),
            ("minwidth", Some("0.5%")),
            ("inverted", None),
            ("sort", Some("weight")),
            ("colors", Some("rust")),
            ("dark", None),
            ("value", Some("bytes")),
            ("normalize", None),
            ("negate", Some("true")),
        ]))
        .unwrap();
        assert_eq!(o.title.as_deref(), Some("T <&>"));
        assert_eq!(o.width, 800);
        assert_eq!(o.frame_height, 20);
        assert_eq!(o.font_size, 10.5);
        assert_eq!(o.min_width, MinWidth::Percent(0.5));
        assert!(o.inverted && o.dark && o.normalize && o.negate && !o.reverse);
        assert_eq!(o.sort, SortOrder::Weight);
        assert_eq!(o.palette, Palette::Rust);
        assert_eq!(o.value.as_deref(), Some("bytes"));
        assert_eq!(o.min_value(2000), 10.0);
    }

    #[test]
    fn bad_values_name_the_key_and_what_is_expected() {
        for (k, v, want) in [
            ("width", "5", "option width=5: expected a width"),
            (
                "width",
                "wide",
                "option width=wide: expected a width in pixels from 30 to",
            ),
            (
                "width",
                "-5",
                "option width=-5: expected a width in pixels from 30 to 1000000",
            ),
            (
                "fontsize",
                "1e308",
                "option fontsize=1e308: expected a size in pixels from 1 to 200",
            ),
            ("height", "0", "option height=0"),
            ("fontsize", "NaN", "option fontsize=NaN"),
            ("minwidth", "-1", "option minwidth=-1: expected pixels"),
            ("minwidth", "200%", "option minwidth=200%"),
            (
                "sort",
                "size",
                "option sort=size: expected `name` or `weight`",
            ),
            (
                "colors",
                "pink",
                "option colors=pink: expected one of hot, mem",
            ),
        ] {
            let e = FlameOptions::from_options(&opts(&[(k, Some(v))])).unwrap_err();
            assert_eq!(e.status, profconv_plugin::Status::BAD_OPTIONS);
            assert!(e.message.starts_with(want), "{k}={v}: {}", e.message);
        }
        let e = FlameOptions::from_options(&opts(&[("flamechart", None), ("reverse", None)]));
        assert!(e.unwrap_err().message.contains("cannot be combined"));
    }

    /// A frame exactly at the minimum width is drawn: 15 of 177 000 is 0.1 px of 1180, and
    /// 11 of 1000 is 1.1 %, but the thresholds were computed as 15.000000000000002 and
    /// 11.000000000000002.
    #[test]
    fn a_frame_exactly_at_the_minimum_width_is_drawn() {
        let o = FlameOptions::default();
        assert_eq!(o.min_value(177_000), 15.0);
        assert_eq!(o.min_value(82_600), 7.0);
        let pc = |p: f64| FlameOptions {
            min_width: MinWidth::Percent(p),
            ..FlameOptions::default()
        };
        assert_eq!(pc(1.1).min_value(1000), 11.0);
        assert_eq!(pc(2.7).min_value(1000), 27.0);
        // Just below the threshold stays pruned, and a threshold between two values is the
        // next whole value.
        assert_eq!(pc(1.1).min_value(999), 11.0);
        assert_eq!(pc(0.0).min_value(1000), 0.0);
        assert_eq!(o.min_value(0), 0.0);
        // Past 2^52 the estimate is used as it is.
        assert!(o.min_value(i64::MAX) > 7.8e14);
    }

    #[test]
    fn min_width_in_pixels_scales_with_the_plot() {
        let o = FlameOptions::default();
        // 0.1 px of 1180 px.
        let v = o.min_value(1_180_000);
        assert!((v - 100.0).abs() < 1e-9, "{v}");
    }
}
