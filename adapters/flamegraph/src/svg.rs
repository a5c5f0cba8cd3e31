//! Writing the SVG: one self-contained file with its style, its script and every frame already
//! laid out, so that with scripts disabled it is still a readable picture (labels truncated with
//! an ellipsis to fit their frames, native tooltips from `<title>`).
//!
//! Layout of the file:
//!
//! ```text
//! <svg … fg:fontsize fg:fontwidth fg:xpad fg:inverted fg:nametype fg:searchcolor>  config for the script
//!   <!-- NOTES: … -->            (with -O notes)
//!   <defs> background gradient </defs> <style> … </style> <script> … </script>
//!   background, title, subtitle, details line, Reset Zoom, Search, ic, Matched
//!   <g id="frames" fg:total="T">
//!     <g><title>NAME (VALUE UNIT, P%)</title><rect x y width height fill fg:x fg:w/><text x y>LABEL</text></g>
//!     …  parents before children
//!   </g>
//! </svg>
//! ```
//!
//! `fg:x` and `fg:w` are exact: the frame's left edge and width in the value column's stored
//! integers (fixed point, see the IR's `decimals`), which the script uses to zoom and to sum
//! matches. `x`/`width` are pixels with at most two decimals.
//!
//! Elements are written with quick-xml (which escapes every text and attribute); per frame the
//! writer reuses its element and text buffers, so drawing allocates nothing per frame once the
//! buffers have grown.

use crate::attrs::{FlameOptions, XPAD};
use crate::color::{Rgb, Theme};
use crate::merge::{Frame, Layout};
use profconv_plugin::ir::NONE;
use quick_xml::Writer;
use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesCData, BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::name::QName;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// The embedded script (hover, zoom, search); see `flamegraph.js`.
pub const SCRIPT: &str = include_str!("flamegraph.js");

/// Namespace of the `fg:` attributes.
pub const FG_NAMESPACE: &str = "urn:profconv:flamegraph";

/// Padding between a frame's left edge and its label, in pixels (and as much on the right).
const LABEL_PAD: f64 = 3.0;

/// Everything a frame's tooltip and fill come from.
pub trait Describe {
    /// The frame's function name as in the profile (annotations included).
    fn name(&self, f: &Frame) -> &str;
    /// The frame's fill; `name` is [`Describe::name`].
    fn fill(&self, f: &Frame, name: &str) -> Rgb;
    /// Appends more tooltip text after the value and percentage, inside the parentheses. It
    /// must not contain ` (`: the script finds the name before the last ` (`.
    fn extra(&self, f: &Frame, out: &mut String) {
        let _ = (f, out);
    }
}

/// What the picture shows, besides the frames.
pub struct Picture<'a> {
    /// Options (sizes, fonts, texts).
    pub opts: &'a FlameOptions,
    /// The title (chosen from the mode when not given).
    pub title: &'a str,
    /// What a value counts (`samples`, `nanoseconds`).
    pub countname: &'a str,
    /// Fixed-point decimals of the values.
    pub decimals: u32,
    /// Colours around the frames.
    pub theme: Theme,
}

/// Vertical geometry.
struct Geometry {
    /// Image height.
    height: f64,
    /// Top of the topmost row of frames in an icicle graph.
    frames_top: f64,
    /// Bottom of the row of roots in a flame graph.
    frames_bottom: f64,
    /// Baseline of the title.
    title_y: f64,
    /// Baseline of the subtitle.
    subtitle_y: f64,
    /// Baseline of the details line and the match percentage.
    details_y: f64,
}

impl Geometry {
    fn new(o: &FlameOptions, rows: u32) -> Geometry {
        let fs = o.font_size;
        let top = fs * 3.0 + if o.subtitle.is_some() { fs * 2.0 } else { 0.0 };
        let bottom = fs * 2.0 + 10.0;
        let frames = f64::from(rows) * f64::from(o.frame_height);
        let height = (top + frames + bottom).ceil();
        Geometry {
            height,
            frames_top: top,
            frames_bottom: top + frames,
            title_y: fs * 2.0,
            subtitle_y: fs * 4.0,
            details_y: height - bottom / 2.0,
        }
    }

    /// Top of a frame at `depth`.
    fn frame_y(&self, o: &FlameOptions, depth: u32) -> f64 {
        let fh = f64::from(o.frame_height);
        if o.inverted {
            self.frames_top + f64::from(depth) * fh
        } else {
            self.frames_bottom - f64::from(depth + 1) * fh
        }
    }
}

/// The fewest bytes any frame takes besides its name: `<g><title> (…)</title>`, the `<rect>`
/// with its seven attributes and the `<text>` (about 120 with one-digit numbers).
const FRAME_BYTES: u128 = 100;

/// Refuses, before anything is written, a picture whose frames would take more than
/// `max_size` bytes (`None`: no bound). Each frame's tooltip holds its function's whole name,
/// so the picture grows with the depth times the names' length, which a small input can make
/// huge (one long name in a trace's name table, called through deep recursion).
pub fn check_size(
    layout: &Layout,
    describe: &impl Describe,
    max_size: Option<u64>,
) -> Result<(), profconv_plugin::PluginError> {
    let Some(max) = max_size else {
        return Ok(());
    };
    let names: u128 = layout
        .frames
        .iter()
        .map(|f| crate::color::display_name(describe.name(f)).len() as u128)
        .sum();
    let frames = layout.frames.len() as u128;
    let bytes = names + frames * FRAME_BYTES;
    if bytes <= u128::from(max) {
        return Ok(());
    }
    let longest = layout
        .frames
        .iter()
        .map(|f| crate::color::display_name(describe.name(f)).len())
        .max()
        .unwrap_or(0);
    Err(profconv_plugin::PluginError::unsupported(format!(
        "the flame graph would take at least {}: {frames} frames, whose names (each frame's \
         tooltip holds its whole name; the longest has {longest} bytes) add up to {}; over the {max}-byte \
         bound. Omit narrow frames (-O minwidth=N%), shorten the stacks (-T collapse-rec, -T \
         max-depth:N), write a format that stores each name once (firefox, callgrind), or \
         raise the bound: -O max-size=BYTES (0: none)",
        profconv_plugin::human_bytes(bytes),
        profconv_plugin::human_bytes(names),
    )))
}

/// Writes the whole picture.
pub fn write_svg<W: Write>(
    out: W,
    pic: &Picture<'_>,
    layout: &Layout,
    describe: &impl Describe,
) -> io::Result<()> {
    let o = pic.opts;
    let geo = Geometry::new(o, layout.max_depth + 1);
    let mut w = Writer::new(out);
    let mut num = String::new();
    write_head(&mut w, pic, &geo, &mut num)?;

    let mut group = BytesStart::new("g");
    group.push_attribute(("id", "frames"));
    num.clear();
    let _ = write!(num, "{}", layout.total);
    group.push_attribute(("fg:total", num.as_str()));
    w.write_event(Event::Start(group))?;
    w.get_mut().write_all(b"\n")?;

    let scale = o.plot_width() / layout.total.max(1) as f64;
    let char_w = o.font_size * o.font_width;
    let text_dy = f64::from(o.frame_height) / 2.0 + o.font_size / 3.0;
    let mut rect = BytesStart::new("rect").into_owned();
    let mut text = BytesStart::new("text").into_owned();
    let mut title = String::new();
    let mut label = String::new();
    let mut escaped = String::new();
    let mut fill = String::new();
    let mut height = String::new();
    push_px(&mut height, f64::from(o.frame_height) - 1.0);
    for f in &layout.frames {
        let raw_name = describe.name(f);
        let name = xml_safe(crate::color::display_name(raw_name));
        let x = f64::from(XPAD) + f.x as f64 * scale;
        let width = f.w as f64 * scale;
        let y = geo.frame_y(o, f.depth);

        title.clear();
        title.push_str(&name);
        title.push_str(" (");
        push_value(&mut title, f.w, pic.decimals);
        title.push(' ');
        title.push_str(pic.countname);
        title.push_str(", ");
        if f.node == NONE {
            title.push_str("100%"); // the frame under everything, titled as the anchors do
        } else {
            push_percent(&mut title, f.w, layout.total);
        }
        describe.extra(f, &mut title);
        title.push(')');

        w.write_event(Event::Start(BytesStart::new("g")))?;
        w.write_event(Event::Start(BytesStart::new("title")))?;
        escaped.clear();
        push_escaped(&mut escaped, &title);
        w.write_event(Event::Text(BytesText::from_escaped(escaped.as_str())))?;
        w.write_event(Event::End(BytesEnd::new("title")))?;

        // Numbers go into one scratch string; attributes borrow slices of it.
        num.clear();
        let r_x = push_range(&mut num, |s| push_px(s, x));
        let r_y = push_range(&mut num, |s| push_px(s, y));
        let r_w = push_range(&mut num, |s| push_px(s, width));
        let r_fx = push_range(&mut num, |s| {
            let _ = write!(s, "{}", f.x);
        });
        let r_fw = push_range(&mut num, |s| {
            let _ = write!(s, "{}", f.w);
        });
        let r_tx = push_range(&mut num, |s| push_px(s, x + LABEL_PAD));
        let r_ty = push_range(&mut num, |s| push_px(s, y + text_dy));
        fill.clear();
        let _ = write!(fill, "{}", describe.fill(f, raw_name));

        rect.clear_attributes();
        rect.push_attribute(("x", &num[r_x.0..r_x.1]));
        rect.push_attribute(("y", &num[r_y.0..r_y.1]));
        rect.push_attribute(("width", &num[r_w.0..r_w.1]));
        rect.push_attribute(("height", height.as_str()));
        rect.push_attribute(("fill", fill.as_str()));
        rect.push_attribute(("fg:x", &num[r_fx.0..r_fx.1]));
        rect.push_attribute(("fg:w", &num[r_fw.0..r_fw.1]));
        w.write_event(Event::Empty(rect.borrow()))?;

        text.clear_attributes();
        text.push_attribute(("x", &num[r_tx.0..r_tx.1]));
        text.push_attribute(("y", &num[r_ty.0..r_ty.1]));
        w.write_event(Event::Start(text.borrow()))?;
        label.clear();
        fit_label(&name, width - 2.0 * LABEL_PAD, char_w, &mut label);
        if !label.is_empty() {
            escaped.clear();
            push_escaped(&mut escaped, &label);
            w.write_event(Event::Text(BytesText::from_escaped(escaped.as_str())))?;
        }
        w.write_event(Event::End(BytesEnd::new("text")))?;
        w.write_event(Event::End(BytesEnd::new("g")))?;
        w.get_mut().write_all(b"\n")?;
    }
    w.write_event(Event::End(BytesEnd::new("g")))?;
    w.get_mut().write_all(b"\n")?;
    w.write_event(Event::End(BytesEnd::new("svg")))?;
    w.get_mut().write_all(b"\n")?;
    Ok(())
}

/// Writes a picture without frames that says why (an empty profile).
pub fn write_message_svg<W: Write>(out: W, pic: &Picture<'_>, message: &str) -> io::Result<()> {
    let geo = Geometry::new(pic.opts, 1);
    let mut w = Writer::new(out);
    let mut num = String::new();
    write_head(&mut w, pic, &geo, &mut num)?;
    let mut t = BytesStart::new("text");
    t.push_attribute(("id", "message"));
    num.clear();
    push_px(&mut num, f64::from(pic.opts.width) / 2.0);
    t.push_attribute(("x", num.as_str()));
    num.clear();
    push_px(&mut num, geo.frames_top + f64::from(pic.opts.frame_height));
    t.push_attribute(("y", num.as_str()));
    t.push_attribute(("text-anchor", "middle"));
    w.write_event(Event::Start(t))?;
    // Cut to the image's width as the title and subtitle are: centred, a message wider than a
    // narrow image (or a large font) lost both its ends ("o draw: the profile has no").
    let o = pic.opts;
    let mut fitted = String::new();
    fit_label(
        &xml_safe(message),
        f64::from(o.width - 2 * XPAD),
        o.font_size * o.font_width.max(crate::attrs::DEFAULT_FONT_WIDTH),
        &mut fitted,
    );
    w.write_event(Event::Text(escaped_text(&fitted)))?;
    w.write_event(Event::End(BytesEnd::new("text")))?;
    w.get_mut().write_all(b"\n")?;
    let mut g = BytesStart::new("g");
    g.push_attribute(("id", "frames"));
    g.push_attribute(("fg:total", "0"));
    w.write_event(Event::Empty(g))?;
    w.get_mut().write_all(b"\n")?;
    w.write_event(Event::End(BytesEnd::new("svg")))?;
    w.get_mut().write_all(b"\n")?;
    Ok(())
}

/// Everything before the frames: declaration, root element, notes, style, script, texts.
fn write_head<W: Write>(
    w: &mut Writer<W>,
    pic: &Picture<'_>,
    geo: &Geometry,
    num: &mut String,
) -> io::Result<()> {
    let o = pic.opts;
    let t = &pic.theme;
    let width = o.width;
    w.write_event(Event::Decl(BytesDecl::new(
        "1.0",
        Some("UTF-8"),
        Some("no"),
    )))?;
    w.get_mut().write_all(b"\n")?;

    let mut root = BytesStart::new("svg");
    root.push_attribute(("version", "1.1"));
    num.clear();
    let r_w = push_range(num, |s| {
        let _ = write!(s, "{width}");
    });
    let r_h = push_range(num, |s| push_px(s, geo.height));
    let r_vb = push_range(num, |s| {
        let _ = write!(s, "0 0 {width} ");
        push_px(s, geo.height);
    });
    let r_fs = push_range(num, |s| push_px(s, o.font_size));
    let r_fw = push_range(num, |s| {
        let _ = write!(s, "{}", o.font_width);
    });
    let r_pad = push_range(num, |s| {
        let _ = write!(s, "{XPAD}");
    });
    root.push_attribute(("width", &num[r_w.0..r_w.1]));
    root.push_attribute(("height", &num[r_h.0..r_h.1]));
    root.push_attribute(("viewBox", &num[r_vb.0..r_vb.1]));
    root.push_attribute(("xmlns", "http://www.w3.org/2000/svg"));
    root.push_attribute(("xmlns:fg", FG_NAMESPACE));
    root.push_attribute(("class", ROOT_CLASS));
    root.push_attribute(("onload", "fg_init(evt)"));
    root.push_attribute(("fg:fontsize", &num[r_fs.0..r_fs.1]));
    root.push_attribute(("fg:fontwidth", &num[r_fw.0..r_fw.1]));
    root.push_attribute(("fg:xpad", &num[r_pad.0..r_pad.1]));
    root.push_attribute(("fg:inverted", if o.inverted { "1" } else { "0" }));
    let mut nametype = String::new();
    push_escaped_attribute(&mut nametype, &xml_safe(&o.nametype));
    root.push_attribute(Attribute {
        key: QName(b"fg:nametype"),
        value: nametype.into_bytes().into(),
    });
    root.push_attribute(("fg:searchcolor", t.search));
    w.write_event(Event::Start(root))?;
    w.get_mut().write_all(b"\n")?;

    if let Some(notes) = &o.notes {
        let text = format!(" NOTES: {} ", comment_safe(&xml_safe(notes)));
        w.write_event(Event::Comment(BytesText::from_escaped(text)))?;
        w.get_mut().write_all(b"\n")?;
    }

    // Background gradient.
    w.write_event(Event::Start(BytesStart::new("defs")))?;
    let mut grad = BytesStart::new("linearGradient");
    grad.extend_attributes([
        ("id", "background"),
        ("x1", "0"),
        ("y1", "0"),
        ("x2", "0"),
        ("y2", "1"),
    ]);
    w.write_event(Event::Start(grad))?;
    for (offset, colour) in [("5%", t.background_top), ("95%", t.background_bottom)] {
        let mut stop = BytesStart::new("stop");
        stop.extend_attributes([("offset", offset), ("stop-color", colour)]);
        w.write_event(Event::Empty(stop))?;
    }
    w.write_event(Event::End(BytesEnd::new("linearGradient")))?;
    w.write_event(Event::End(BytesEnd::new("defs")))?;
    w.get_mut().write_all(b"\n")?;

    let mut style = BytesStart::new("style");
    style.push_attribute(("type", "text/css"));
    w.write_event(Event::Start(style))?;
    let css = stylesheet(o, t);
    w.write_event(Event::Text(BytesText::new(&css)))?;
    w.write_event(Event::End(BytesEnd::new("style")))?;
    w.get_mut().write_all(b"\n")?;

    let mut script = BytesStart::new("script");
    script.push_attribute(("type", "text/ecmascript"));
    w.write_event(Event::Start(script))?;
    w.write_event(Event::CData(BytesCData::new(SCRIPT)))?;
    w.write_event(Event::End(BytesEnd::new("script")))?;
    w.get_mut().write_all(b"\n")?;

    let mut bg = BytesStart::new("rect");
    bg.extend_attributes([
        ("x", "0"),
        ("y", "0"),
        ("width", "100%"),
        ("height", "100%"),
        ("fill", "url(#background)"),
    ]);
    w.write_event(Event::Empty(bg))?;
    w.get_mut().write_all(b"\n")?;

    let centre = f64::from(width) / 2.0;
    let left = f64::from(XPAD);
    let right = f64::from(width - XPAD);
    // Title and subtitle, centred, are cut to the image's width (less its margins): a long
    // subtitle (a differential graph's is 120 characters) ran off both sides of a narrow image.
    let span = right - left;
    let char_w = o.font_size * o.font_width.max(crate::attrs::DEFAULT_FONT_WIDTH);
    let fitted = |text: &str, span: f64, char_w: f64| {
        let mut out = String::new();
        fit_label(&xml_safe(text), span, char_w, &mut out);
        out
    };
    let title_char_w = char_w / o.font_size * (o.font_size + TITLE_EXTRA);
    // The file's title takes the whole line: the picture shown as an image (no script) has no
    // buttons beside it. With scripts on, the viewer cuts it again to keep clear of "Reset Zoom"
    // and "Reset Search"/"ic" (`fg_fit_title`).
    ui_text(
        w,
        num,
        "title",
        None,
        centre,
        geo.title_y,
        &fitted(pic.title, span, title_char_w),
    )?;
    if let Some(sub) = &o.subtitle {
        ui_text(
            w,
            num,
            "subtitle",
            None,
            centre,
            geo.subtitle_y,
            &fitted(sub, span, char_w),
        )?;
    }
    // The details line shows the hovered frame; a no-break space keeps its text node.
    ui_text(w, num, "details", None, left, geo.details_y, "\u{a0}")?;
    ui_text(
        w,
        num,
        "unzoom",
        Some("hide"),
        left,
        geo.title_y,
        "Reset Zoom",
    )?;
    // Both end where their text ends (text-anchor: end), "ic" at the right edge and "Search"
    // two characters before it, so neither covers the other at any font size, and "Search"
    // grows leftwards when it becomes "Reset Search". A character is at least a monospace one
    // here, whatever `fontwidth` says (the script moves "Search" if the font is wider still).
    ui_text(
        w,
        num,
        "search",
        Some("hide"),
        right - 4.0 * char_w,
        geo.title_y,
        "Search",
    )?;
    ui_text(w, num, "ignorecase", Some("hide"), right, geo.title_y, "ic")?;
    ui_text(w, num, "matched", None, right, geo.details_y, "\u{a0}")?;
    Ok(())
}

/// One of the texts around the frames.
fn ui_text<W: Write>(
    w: &mut Writer<W>,
    num: &mut String,
    id: &str,
    class: Option<&str>,
    x: f64,
    y: f64,
    content: &str,
) -> io::Result<()> {
    let mut t = BytesStart::new("text");
    t.push_attribute(("id", id));
    if let Some(c) = class {
        t.push_attribute(("class", c));
    }
    num.clear();
    let rx = push_range(num, |s| push_px(s, x));
    let ry = push_range(num, |s| push_px(s, y));
    t.push_attribute(("x", &num[rx.0..rx.1]));
    t.push_attribute(("y", &num[ry.0..ry.1]));
    w.write_event(Event::Start(t))?;
    w.write_event(Event::Text(escaped_text(content)))?;
    w.write_event(Event::End(BytesEnd::new("text")))?;
    w.get_mut().write_all(b"\n")
}

/// How much larger the title's font is than the other text's, in pixels.
const TITLE_EXTRA: f64 = 5.0;

/// The stylesheet.
/// The class of the root `<svg>`, which scopes the stylesheet to the graph.
const ROOT_CLASS: &str = "profconv-fg";

fn stylesheet(o: &FlameOptions, t: &Theme) -> String {
    let fs = o.font_size;
    let mut font = String::new();
    css_font_family(&o.font_type, &mut font);
    // Every selector starts with the root's class ([`ROOT_CLASS`]): the SVG's markup pasted
    // into an HTML page brings its stylesheet into the whole page, where `#search`, `#title`
    // or `.hide` also named the page's own elements (its search box drawn at 10 % opacity).
    // A class, not the type selector `svg`, which Inkscape does not match on the root (the
    // static picture lost its title's size and showed the hidden buttons).
    let mut css = String::new();
    let _ = write!(
        css,
        "\n.profconv-fg text {{ font-family: {font}; font-size: {fs}px; fill: {ui}; }}\n\
         .profconv-fg #title {{ text-anchor: middle; font-size: {title}px; }}\n\
         .profconv-fg #subtitle {{ text-anchor: middle; }}\n\
         .profconv-fg #unzoom, .profconv-fg #search, .profconv-fg #ignorecase {{ cursor: pointer; }}\n\
         .profconv-fg #search, .profconv-fg #ignorecase {{ opacity: 0.1; }}\n\
         .profconv-fg #search:hover, .profconv-fg #search.show, .profconv-fg #ignorecase:hover, .profconv-fg #ignorecase.show {{ opacity: 1; }}\n\
         .profconv-fg #matched, .profconv-fg #search, .profconv-fg #ignorecase {{ text-anchor: end; }}\n\
         .profconv-fg #frames g {{ cursor: pointer; }}\n\
         .profconv-fg #frames g:hover rect {{ stroke: {stroke}; stroke-width: 0.5; }}\n\
         .profconv-fg #frames text {{ fill: {frame}; pointer-events: none; }}\n\
         .profconv-fg .hide {{ display: none; }}\n\
         .profconv-fg .parent {{ opacity: 0.5; }}\n",
        ui = t.ui_text,
        title = fs + TITLE_EXTRA,
        stroke = t.hover_stroke,
        frame = t.frame_text,
    );
    css
}

/// A font family for CSS: a list of families as CSS writes it (`"DejaVu Sans Mono", monospace`,
/// `Verdana, sans-serif`), each family kept as it is when it is a plain name (words of letters,
/// digits, `-` and `_`, none starting with a digit or a lone `-`, and not a keyword such as
/// `inherit` or `default`, which a list cannot hold) and quoted otherwise; a quoted one is
/// written again, escaped. The value cannot end the declaration, and one family CSS would not
/// take does not cost the others. A value whose quotes do not pair is one quoted family.
fn css_font_family(font: &str, out: &mut String) {
    let font = xml_safe(font);
    let word = |w: &str| {
        let mut c = w.chars();
        let first = c.next();
        let starts = match first {
            Some('-') => c
                .clone()
                .next()
                .is_some_and(|d| d.is_alphabetic() || d == '_'),
            Some(f) => f.is_alphabetic() || f == '_' || !f.is_ascii(),
            None => false,
        };
        starts
            && w.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_') || !c.is_ascii())
    };
    let keyword = |s: &str| {
        [
            "inherit",
            "initial",
            "unset",
            "default",
            "revert",
            "revert-layer",
        ]
        .iter()
        .any(|k| s.eq_ignore_ascii_case(k))
    };
    let plain = |s: &str| !s.is_empty() && !keyword(s) && s.split(' ').all(word);
    let quoted = |s: &str, out: &mut String| {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                '\n' | '\r' => out.push(' '),
                _ => out.push(c),
            }
        }
        out.push('"');
    };
    // The families: split at commas outside quotes.
    let mut families = Vec::new();
    let (mut start, mut quote) = (0, None);
    for (i, c) in font.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ',') => {
                families.push(font[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    families.push(font[start..].trim());
    if quote.is_some() || families.iter().any(|f| f.is_empty()) {
        quoted(&font, out);
        return;
    }
    for (k, f) in families.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        // One whole quoted string, its own quote not inside.
        let inner = ['"', '\''].iter().find_map(|&q| {
            let inner = f.strip_prefix(q)?.strip_suffix(q)?;
            (!inner.contains(q)).then_some(inner)
        });
        match inner {
            Some(name) => quoted(name, out),
            None if plain(f) => out.push_str(f),
            None => quoted(f, out),
        }
    }
}

/// Appends `s` escaped for XML text, as quick-xml's `escape` does (`&`, `<`, `>`, `'`, `"`),
/// into a reused buffer instead of a new string; and a carriage return as `&#13;`, which a
/// parser would read as a line feed (XML's end-of-line handling).
pub fn push_escaped(out: &mut String, s: &str) {
    push_escaped_keeping(out, s, &['&', '<', '>', '\'', '"', '\r']);
}

/// Appends `s` escaped for an attribute's value: also its tabs and line feeds, which a parser
/// would read as spaces (attribute-value normalisation).
fn push_escaped_attribute(out: &mut String, s: &str) {
    push_escaped_keeping(out, s, &['&', '<', '>', '\'', '"', '\r', '\n', '\t']);
}

fn push_escaped_keeping(out: &mut String, s: &str, special: &[char]) {
    let mut rest = s;
    while let Some(i) = rest.find(special) {
        out.push_str(&rest[..i]);
        out.push_str(match rest.as_bytes()[i] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'\'' => "&apos;",
            b'"' => "&quot;",
            b'\r' => "&#13;",
            b'\n' => "&#10;",
            _ => "&#9;",
        });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// Text content written with [`push_escaped`].
fn escaped_text(s: &str) -> BytesText<'static> {
    let mut out = String::with_capacity(s.len());
    push_escaped(&mut out, s);
    BytesText::from_escaped(out)
}

/// Appends what `f` writes and returns its byte range.
fn push_range(s: &mut String, f: impl FnOnce(&mut String)) -> (usize, usize) {
    let start = s.len();
    f(s);
    (start, s.len())
}

/// Appends a pixel coordinate with at most two decimals (`12`, `12.5`, `12.34`): `{v:.2}`
/// with trailing zeros trimmed, written from the hundredths as an integer where that is the
/// same text (`{:.2}` of an `f64` costs 80–250 ns, and a picture of millions of frames writes
/// five coordinates each).
pub fn push_px(s: &mut String, v: f64) {
    let v = if v.abs() < 0.005 { 0.0 } else { v };
    let x = v * 100.0;
    // Below 1e9 hundredths the product's rounding error is under 1e-6, so away from a tie
    // (a fraction of .5, which `{:.2}` settles on the exact binary value) rounding the
    // product gives the digits `{:.2}` gives.
    if x.abs() < 1e9 && (x - x.floor() - 0.5).abs() > 1e-6 {
        let r = x.round() as i64;
        if r < 0 {
            s.push('-');
        }
        let m = r.unsigned_abs();
        let (int, cents) = (m / 100, m % 100);
        push_digits(s, int, None);
        if cents != 0 {
            s.push('.');
            s.push((b'0' + (cents / 10) as u8) as char);
            if cents % 10 != 0 {
                s.push((b'0' + (cents % 10) as u8) as char);
            }
        }
        return;
    }
    let start = s.len();
    let _ = write!(s, "{v:.2}");
    if s[start..].contains('.') {
        let keep = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(keep);
    }
}

/// Appends the decimal digits of `v`, with `separator` between groups of three if given.
fn push_digits(s: &mut String, v: impl Into<u128>, separator: Option<char>) {
    let v: u128 = v.into();
    let mut digits = [0u8; 39];
    let mut n = 0;
    let mut i = v;
    loop {
        digits[n] = b'0' + (i % 10) as u8;
        n += 1;
        i /= 10;
        if i == 0 {
            break;
        }
    }
    for k in (0..n).rev() {
        s.push(digits[k] as char);
        if let Some(sep) = separator
            && k > 0
            && k % 3 == 0
        {
            s.push(sep);
        }
    }
}

/// Appends a fixed-point value with thousands separators (`1,234,567`, `1,234.50`).
pub fn push_value(s: &mut String, v: i64, decimals: u32) {
    push_wide_value(s, i128::from(v), decimals);
}

/// [`push_value`] of a value past 64 bits (a differential graph's before, scaled to after's
/// decimals), in full.
pub fn push_wide_value(s: &mut String, v: i128, decimals: u32) {
    if v < 0 {
        s.push('-');
    }
    let mag = v.unsigned_abs();
    let scale = 10u128.pow(decimals.min(38));
    let (int, frac) = if decimals == 0 {
        (mag, 0)
    } else {
        (mag / scale, mag % scale)
    };
    push_digits(s, int, Some(','));
    if decimals > 0 {
        let _ = write!(s, ".{frac:0width$}", width = decimals as usize);
    }
}

/// Appends `part / whole` as a percentage with two decimals (`12.34%`).
pub fn push_percent(s: &mut String, part: i64, whole: i64) {
    push_percent_of(s, part as f64, whole);
}

/// [`push_percent`] of a part that need not be whole (a normalized difference).
pub fn push_percent_of(s: &mut String, part: f64, whole: i64) {
    let pc = if whole == 0 {
        0.0
    } else {
        part * 100.0 / whole as f64
    };
    let _ = write!(s, "{pc:.2}%");
}

/// Code points that take no character cell: they join the character before them (combining
/// marks, zero-width spaces and joiners, variation selectors, emoji skin tones and tags).
/// Sorted, inclusive; `flamegraph.js` has the same list (`fg_zero_cells`, checked by a test).
pub const ZERO_CELLS: &[(u32, u32)] = &[
    (0x300, 0x36f),
    (0x1ab0, 0x1aff),
    (0x1dc0, 0x1dff),
    (0x200b, 0x200f),
    (0x2060, 0x2064),
    (0x20d0, 0x20ff),
    (0xfe00, 0xfe0f),
    (0xfe20, 0xfe2f),
    (0xfeff, 0xfeff),
    (0x1f3fb, 0x1f3ff),
    (0xe0000, 0xe007f),
    (0xe0100, 0xe01ef),
];

/// Code points drawn two cells wide: East Asian wide characters, and emoji, some of which sit
/// in the BMP among narrow symbols (`☕`, `✅`, `⭐`). Sorted, inclusive; `flamegraph.js` has
/// the same list (`fg_wide_cells`).
pub const WIDE_CELLS: &[(u32, u32)] = &[
    (0x1100, 0x115f),
    (0x231a, 0x231b),
    (0x2329, 0x232a),
    (0x23e9, 0x23ec),
    (0x23f0, 0x23f0),
    (0x23f3, 0x23f3),
    (0x25fd, 0x25fe),
    (0x2614, 0x2615),
    (0x2648, 0x2653),
    (0x267f, 0x267f),
    (0x2693, 0x2693),
    (0x26a1, 0x26a1),
    (0x26aa, 0x26ab),
    (0x26bd, 0x26be),
    (0x26c4, 0x26c5),
    (0x26ce, 0x26ce),
    (0x26d4, 0x26d4),
    (0x26ea, 0x26ea),
    (0x26f2, 0x26f3),
    (0x26f5, 0x26f5),
    (0x26fa, 0x26fa),
    (0x26fd, 0x26fd),
    (0x2705, 0x2705),
    (0x270a, 0x270b),
    (0x2728, 0x2728),
    (0x274c, 0x274c),
    (0x274e, 0x274e),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2795, 0x2797),
    (0x27b0, 0x27b0),
    (0x27bf, 0x27bf),
    (0x2b1b, 0x2b1c),
    (0x2b50, 0x2b50),
    (0x2b55, 0x2b55),
    (0x2e80, 0xa4cf),
    (0xac00, 0xd7a3),
    (0xf900, 0xfaff),
    (0xfe30, 0xfe4f),
    (0xff00, 0xff60),
    (0xffe0, 0xffe6),
    (0x1f004, 0x1f004),
    (0x1f0cf, 0x1f0cf),
    (0x1f18e, 0x1f18e),
    (0x1f191, 0x1f19a),
    (0x1f200, 0x1faff),
    (0x20000, 0x3fffd),
];

/// Whether `c` is in one of the sorted inclusive `ranges`.
fn in_ranges(ranges: &[(u32, u32)], c: u32) -> bool {
    let i = ranges.partition_point(|&(_, last)| last < c);
    ranges.get(i).is_some_and(|&(first, _)| first <= c)
}

/// Width of a character in character cells: 0 for [`ZERO_CELLS`], 2 for [`WIDE_CELLS`], else
/// 1. The script counts with the same lists, so static and re-fitted labels agree.
pub fn char_cells(c: char) -> usize {
    let c = c as u32;
    if c < 0x300 {
        1
    } else if in_ranges(ZERO_CELLS, c) {
        0
    } else if in_ranges(WIDE_CELLS, c) {
        2
    } else {
        1
    }
}

/// Joins the emoji before and after it into one (`👨‍👩‍👧`).
const ZERO_WIDTH_JOINER: char = '\u{200d}';

/// A regional indicator (`🇫`): two of them draw one flag.
fn is_regional_indicator(c: char) -> bool {
    matches!(c, '\u{1f1e6}'..='\u{1f1ff}')
}

/// The label of a frame `px` pixels wide (padding excluded): the whole name if it fits, else as
/// many leading characters as fit followed by `…`, else nothing (fewer than 3 cells). The cut
/// keeps a character's combining marks (zero cells) with it and does not split a flag's pair
/// of regional indicators.
pub fn fit_label(name: &str, px: f64, char_w: f64, out: &mut String) {
    if px <= 0.0 {
        return;
    }
    let room = (px / char_w).floor() as usize;
    if room < 3 {
        return;
    }
    let cells: usize = name.chars().map(char_cells).sum();
    if cells <= room {
        out.push_str(name);
        return;
    }
    let mut used = 0;
    let mut indicators = 0; // regional indicators in a row at the end of the label
    // Where the last character joined to the ones after it by zero-width joiners (an emoji
    // sequence such as 👨‍👩‍👧) starts in `out`, and whether the last one pushed is a joiner.
    let (mut cluster, mut joined) = (out.len(), false);
    for c in name.chars() {
        let w = char_cells(c);
        if used + w > room - 1 {
            break;
        }
        if w > 0 && !joined {
            cluster = out.len();
        }
        out.push(c);
        used += w;
        joined = c == ZERO_WIDTH_JOINER;
        indicators = if is_regional_indicator(c) {
            indicators + 1
        } else {
            0
        };
    }
    if joined {
        // Cut inside a joined sequence: its start alone would draw another emoji (🏳️ of 🏳️‍🌈).
        out.truncate(cluster);
    } else if indicators % 2 == 1 {
        out.pop(); // half a flag
    }
    out.push('\u{2026}');
}

/// `s` with every character XML 1.0 does not allow (C0 controls other than tab, line feed and
/// carriage return; U+FFFE, U+FFFF) replaced by U+FFFD. Borrowed when nothing is replaced.
pub fn xml_safe(s: &str) -> Cow<'_, str> {
    let bad = |c: char| {
        (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}')
    };
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| if bad(c) { '\u{fffd}' } else { c })
            .collect(),
    )
}

/// Text that may stand inside `<!-- -->`: XML-escaped, no `--`, not ending in `-`.
fn comment_safe(s: &str) -> String {
    let escaped = quick_xml::escape::escape(s);
    let mut out = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        if c == '-' && out.ends_with('-') {
            out.push(' ');
        }
        out.push(c);
    }
    if out.ends_with('-') {
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `push_px` as `{:.2}` with trailing zeros trimmed writes it, for the coordinates layouts
    /// make (fractions of a width by a total, offsets, ties at .005) and random values.
    #[test]
    fn pixels_are_written_as_the_formatter_writes_them() {
        let reference = |v: f64| {
            let v = if v.abs() < 0.005 { 0.0 } else { v };
            let t = format!("{v:.2}");
            match t.contains('.') {
                true => t.trim_end_matches('0').trim_end_matches('.').to_string(),
                false => t,
            }
        };
        let mut rng = profconv_plugin::ir::testing::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut values = Vec::new();
        for total in [1u64, 3, 7, 60, 1000, 12_345, 1 << 40] {
            for k in 0..2000u64 {
                let part = k * total / 1999;
                values.push(part as f64 * 1180.0 / total as f64);
                values.push(10.0 + part as f64 * 1180.0 / total as f64);
            }
        }
        for k in -20_000i64..20_000 {
            values.push(k as f64 / 200.0); // every tie .xx5 and its neighbours
            values.push(k as f64 / 1000.0);
        }
        for _ in 0..200_000 {
            let bits = rng.below(u64::MAX);
            let v = f64::from_bits(bits);
            if v.is_finite() {
                values.push(v);
            }
            values.push((rng.below(1 << 40) as f64 - (1u64 << 39) as f64) / 997.0);
        }
        values.extend([
            1e7,
            1e7 + 0.005,
            9.999_999_5e6,
            -0.005,
            0.005,
            -0.004_999,
            1e300,
        ]);
        for v in values {
            let mut s = String::new();
            push_px(&mut s, v);
            assert_eq!(s, reference(v), "{v:e} ({:#x})", v.to_bits());
        }
    }

    #[test]
    fn numbers() {
        let mut s = String::new();
        let cases = [
            (0.0, "0"),
            (10.0, "10"),
            (10.5, "10.5"),
            (10.25, "10.25"),
            (10.256, "10.26"),
            (0.004, "0"),
            (-0.001, "0"),
            (1179.999, "1180"),
        ];
        for (v, want) in cases {
            s.clear();
            push_px(&mut s, v);
            assert_eq!(s, want, "{v}");
        }
        for (v, d, want) in [
            (0, 0, "0"),
            (999, 0, "999"),
            (1000, 0, "1,000"),
            (1234567, 0, "1,234,567"),
            (-1234, 0, "-1,234"),
            (123450, 2, "1,234.50"),
            (5, 3, "0.005"),
            (i64::MIN, 0, "-9,223,372,036,854,775,808"),
        ] {
            s.clear();
            push_value(&mut s, v, d);
            assert_eq!(s, want);
        }
        s.clear();
        push_percent(&mut s, 1, 3);
        assert_eq!(s, "33.33%");
    }

    #[test]
    fn labels_fit_their_frames() {
        let fit = |name: &str, px: f64| {
            let mut s = String::new();
            fit_label(name, px, 10.0, &mut s);
            s
        };
        assert_eq!(fit("main", 40.0), "main");
        assert_eq!(fit("main", 39.0), "ma\u{2026}");
        assert_eq!(fit("main", 30.0), "ma\u{2026}");
        assert_eq!(fit("main", 29.0), "");
        assert_eq!(fit("main", -5.0), "");
        // Wide characters take two cells; nothing is cut inside a character.
        assert_eq!(fit("日本語の関数", 80.0), "日本語\u{2026}");
        assert_eq!(fit("日本語の関数", 120.0), "日本語の関数");
        assert_eq!(fit("ééééé", 40.0), "ééé\u{2026}");
    }

    /// Emoji that are drawn two cells wide though they sit among narrow symbols (`☕` U+2615)
    /// take two cells: counted as one, 15 of them were drawn in a 16-cell frame, twice its
    /// width, over the frames beside it. A character's combining marks and an emoji's skin tone
    /// stay with it, and a flag (two regional indicators) is not cut in half.
    #[test]
    fn labels_of_emoji_and_marks_fit_their_frames_whole() {
        let fit = |name: &str, px: f64| {
            let mut s = String::new();
            fit_label(name, px, 10.0, &mut s);
            s
        };
        let cells = |s: &str| s.chars().map(char_cells).sum::<usize>();
        let coffee = "\u{2615}".repeat(20);
        let label = fit(&coffee, 160.0);
        assert!(cells(&label) <= 16, "{label} takes {} cells", cells(&label));
        assert_eq!(label, format!("{}\u{2026}", "\u{2615}".repeat(7)));
        // e + combining acute accent: one cell, never cut from its mark.
        assert_eq!(
            fit("e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}", 40.0),
            "e\u{301}e\u{301}e\u{301}\u{2026}"
        );
        assert_eq!(
            fit("e\u{301}e\u{301}e\u{301}e\u{301}", 40.0),
            "e\u{301}e\u{301}e\u{301}e\u{301}"
        );
        // Thumbs up with a skin tone: two cells, the tone kept.
        let thumbs = "\u{1f44d}\u{1f3fd}".repeat(6);
        assert_eq!(
            fit(&thumbs, 80.0),
            format!("{}\u{2026}", "\u{1f44d}\u{1f3fd}".repeat(3))
        );
        // A family (man ZWJ woman ZWJ girl ZWJ boy) cut in a 6-cell room: not its first two
        // members and a joiner, but nothing of it; a rainbow flag not as a white flag.
        let family = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}\u{200d}\u{1f466}";
        assert_eq!(fit(&format!("a{family}"), 60.0), "a\u{2026}");
        let rainbow = "\u{1f3f3}\u{fe0f}\u{200d}\u{1f308}";
        assert_eq!(fit(&format!("ab{rainbow}cd"), 50.0), "ab\u{2026}");
        // Flags 🇫🇷🇩🇪🇯🇵 in a 6-cell room: five cells before the ellipsis would end in half a
        // flag (🇯, drawn as a lone letter).
        let flags = "\u{1f1eb}\u{1f1f7}\u{1f1e9}\u{1f1ea}\u{1f1ef}\u{1f1f5}x";
        assert_eq!(
            fit(flags, 60.0),
            "\u{1f1eb}\u{1f1f7}\u{1f1e9}\u{1f1ea}\u{2026}"
        );
    }

    /// The script re-fits labels with the same cell counts as the Rust side: its
    /// `fg_zero_cells` and `fg_wide_cells` are [`ZERO_CELLS`] and [`WIDE_CELLS`], each sorted
    /// and without overlaps (the script's binary search needs that).
    #[test]
    fn the_script_counts_cells_with_the_same_ranges() {
        let script_ranges = |name: &str| -> Vec<(u32, u32)> {
            let start = SCRIPT.find(&format!("var {name} = [")).expect(name);
            let body = &SCRIPT[start..];
            let body = &body[body.find('[').unwrap() + 1..body.find("]];").unwrap() + 1];
            body.split(']')
                .filter_map(|pair| {
                    let pair = pair.trim_start_matches([',', ' ', '\n', '[']);
                    let (a, b) = pair.split_once(", ")?;
                    let hex = |x: &str| u32::from_str_radix(x.trim().trim_start_matches("0x"), 16);
                    Some((hex(a).unwrap(), hex(b).unwrap()))
                })
                .collect()
        };
        for (name, ranges) in [("fg_zero_cells", ZERO_CELLS), ("fg_wide_cells", WIDE_CELLS)] {
            assert_eq!(script_ranges(name), ranges, "{name}");
            assert!(ranges.iter().all(|&(a, b)| a <= b), "{name}");
            assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0), "{name}");
        }
        let (cells, bounds): (Vec<usize>, Vec<char>) = [
            (1, 'a'),
            (0, '\u{301}'),
            (2, '\u{2615}'),
            (1, '\u{2616}'),
            (2, '\u{1f600}'),
            (0, '\u{1f3fd}'),
            (2, '\u{3fffd}'),
            (1, '\u{3fffe}'),
        ]
        .into_iter()
        .unzip();
        assert_eq!(
            bounds.into_iter().map(char_cells).collect::<Vec<_>>(),
            cells
        );
    }

    #[test]
    fn escaping_matches_quick_xml() {
        for s in ["plain", "<a & 'b'> \"c\"", "", "&&", "日本<語>"] {
            let mut out = String::from("x");
            push_escaped(&mut out, s);
            assert_eq!(out, format!("x{}", quick_xml::escape::escape(s)));
        }
    }

    /// A list of families as CSS writes it keeps its quoted names: `"DejaVu Sans Mono",
    /// monospace` was quoted whole, one family of that name, which no font has (the browser's
    /// default serif was drawn, the monospace fallback lost).
    #[test]
    fn font_families_are_written_as_css_lists() {
        let css = |f: &str| {
            let mut out = String::new();
            css_font_family(f, &mut out);
            out
        };
        assert_eq!(css("Verdana, sans-serif"), "Verdana, sans-serif");
        assert_eq!(
            css("\"DejaVu Sans Mono\", monospace"),
            "\"DejaVu Sans Mono\", monospace"
        );
        assert_eq!(css("'Courier New',monospace"), "\"Courier New\", monospace");
        assert_eq!(css("a, \"b, c\""), "a, \"b, c\"");
        // Anything else is one family, quoted: it cannot end the declaration.
        assert_eq!(css("Andale Mono\""), "\"Andale Mono\\\"\"");
        assert_eq!(css("x; color: red"), "\"x; color: red\"");
        assert_eq!(css("\"a\" b, c"), "\"\\\"a\\\" b\", c");
        assert_eq!(css(""), "\"\"");
        // Names CSS would not take unquoted (a digit first, a lone `-`, a keyword) are quoted,
        // and the rest of the list is kept: the whole declaration was dropped.
        assert_eq!(
            css("3270 Nerd Font, monospace"),
            "\"3270 Nerd Font\", monospace"
        );
        assert_eq!(css("a, inherit"), "a, \"inherit\"");
        assert_eq!(css("-"), "\"-\"");
        assert_eq!(
            css("日本語フォント, monospace"),
            "日本語フォント, monospace"
        );
        assert_eq!(
            css("-apple-system, sans-serif"),
            "-apple-system, sans-serif"
        );
    }

    #[test]
    fn text_is_made_xml_safe() {
        assert!(matches!(xml_safe("plain <&>"), Cow::Borrowed(_)));
        assert_eq!(xml_safe("a\u{1}b\u{ffff}"), "a\u{fffd}b\u{fffd}");
        assert_eq!(comment_safe("a--b-"), "a- -b- ");
        assert_eq!(comment_safe("<x>"), "&lt;x&gt;");
        let mut s = String::new();
        css_font_family("Andale Mono\"", &mut s);
        assert_eq!(s, "\"Andale Mono\\\"\"");
        s.clear();
        css_font_family("Verdana, sans-serif", &mut s);
        assert_eq!(s, "Verdana, sans-serif");
    }

    #[test]
    fn the_script_fits_in_cdata() {
        assert!(!SCRIPT.contains("]]>"));
        assert!(SCRIPT.contains("function fg_init("));
    }
}
