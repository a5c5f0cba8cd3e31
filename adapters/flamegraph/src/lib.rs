//! Interactive SVG flame graphs, icicle graphs, flame charts and differential flame graphs, in
//! the style of inferno's `flamegraph` module and Brendan Gregg's flamegraph.pl.
//!
//! One concern per module, so each can be read alone:
//!
//! * [`attrs`]: the `-O` options, declared for the host and parsed into [`FlameOptions`];
//! * [`color`]: palettes (a hash of the function name picks the shade, so a function keeps its
//!   colour across runs and profiles), differential colours, themes;
//! * [`merge`]: which frames are drawn and where, in value units: the merged call tree (from
//!   the IR's `CallTree`, or straight from the stack table when that is already the call tree,
//!   which saves building it for large profiles) or the time-ordered flame chart, pruned below
//!   the minimum width before anything is written;
//! * [`svg`]: the SVG itself, written with quick-xml, with its embedded script
//!   (`flamegraph.js`: hover details, click to zoom, regular-expression search);
//! * `diff`: two profiles compared ([`emit_diff`]).
//!
//! The output is deterministic: the same profile and options give the same bytes.

pub mod attrs;
pub mod color;
mod diff;
pub mod merge;
pub mod svg;

pub use attrs::FlameOptions;
pub use diff::{emit_diff, emit_diff_with};
/// The XML library the SVG is written with, for callers that read it back (tests).
pub use quick_xml;

use attrs::SortOrder;
use color::{Palette, Rgb};
use merge::{ChartColumns, Frame, Layout};
use profconv_plugin::ir::{CallTree, NONE, ProfileRef, Transform, ValueKind};
use profconv_plugin::{
    Context, Format, OptionDesc, Options, Output, PluginError, value_column, warn_if_counts,
};
use std::io::Write;
use svg::{Describe, Picture};

/// The flamegraph format (emit only).
pub struct Flamegraph;

impl Format for Flamegraph {
    const ID: &'static str = "flamegraph";
    const DESCRIPTION: &'static str =
        "interactive SVG flame graph, icicle graph or flame chart (hover, zoom, search)";
    const EXTENSIONS: &'static str = "svg";
    const OPTIONS: &'static [OptionDesc] = attrs::OPTIONS;
    const CAN_EMIT: bool = true;

    fn check_emit_options(options: &Options) -> Result<(), PluginError> {
        FlameOptions::from_options(options).map(drop)
    }

    fn emit(
        profile: &ProfileRef<'_>,
        output: &mut Output<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<(), PluginError> {
        let o = FlameOptions::from_options(options)?;
        if diff_sides(profile).is_some() {
            // `profconv diff`: one profile with `before` and `after` columns, both drawn.
            if let Some(v) = &o.value {
                return Err(PluginError::bad_option(format!(
                    "option value={}: a differential profile (from `profconv diff`, or a folded \
                     file with two counts a line) is drawn with both of its columns, before and \
                     after; with `profconv diff`, --value NAME chooses the value type compared",
                    profconv_plugin::quote_input(v.as_bytes(), 40)
                )));
            }
            // Reversed once, whole, so that the two sides stay columns of one profile (their
            // call nodes the same), as they are unreversed.
            let reversed = match o.reverse {
                true => Some(reversed(profile)?),
                false => None,
            };
            let whole = reversed
                .as_ref()
                .map_or_else(|| profile.clone(), |r| r.view());
            let Some((before, after)) = diff_sides(&whole) else {
                return Err(PluginError::internal(
                    "a reversed differential profile lost its columns",
                ));
            };
            let o = FlameOptions {
                reverse: false,
                ..o
            };
            return diff::emit_diff_with(&before, &after, output, &o, cx);
        }
        if o.normalize || o.negate {
            cx.warn("options normalize and negate only apply to differential flame graphs");
        }
        // `Output` is buffered already.
        emit_unbuffered(profile, output, &o, cx)
    }
}

/// The two sides of a profile built by `profconv diff` (metadata `diff` = `before,after`), as
/// views that share its tables and keep one value column each.
fn diff_sides<'a>(p: &ProfileRef<'a>) -> Option<(ProfileRef<'a>, ProfileRef<'a>)> {
    if p.meta("diff") != Some(profconv_plugin::ir::diff::DIFF_COLUMNS) {
        return None;
    }
    let side = |name: &str| {
        let col = p.value_type_index(name)?;
        let mut v = p.clone();
        v.value_types = vec![p.value_types[col]];
        v.sample_values = vec![p.sample_values[col]];
        Some(v)
    };
    Some((side("before")?, side("after")?))
}

/// `p` with every stack reversed (option `reverse`).
fn reversed(p: &ProfileRef<'_>) -> Result<profconv_plugin::ir::Profile, PluginError> {
    let (reversed, _) =
        profconv_plugin::ir::transform::apply(p, &Transform::Invert).map_err(|e| {
            let mut e = PluginError::from(e);
            e.message = format!("option reverse: {}", e.message);
            e
        })?;
    Ok(reversed)
}

/// Writes `p` as an SVG flame graph (or icicle graph, or flame chart, as `o` says), through a
/// 64 KiB buffer (so `out` may be a plain file).
pub fn emit_flamegraph<W: Write + ?Sized>(
    p: &ProfileRef<'_>,
    out: &mut W,
    o: &FlameOptions,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let mut buf = std::io::BufWriter::with_capacity(1 << 16, out);
    emit_unbuffered(p, &mut buf, o, cx)?;
    buf.flush()?;
    Ok(())
}

fn emit_unbuffered<W: Write + ?Sized>(
    p: &ProfileRef<'_>,
    out: &mut W,
    o: &FlameOptions,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    if o.reverse {
        // Leaf functions at the base: the call tree of the reversed stacks.
        let reversed = reversed(p)?;
        return draw(&reversed.view(), out, o, cx);
    }
    draw(p, out, o, cx)
}

/// A profile with a total whose every frame is narrower than `minwidth` (many small roots, or a
/// long flame chart) is drawn as its `all` frame alone, as inferno does, and said so.
fn warn_if_all_pruned(layout: &Layout, cx: &mut Context<'_>) {
    if layout.frames.is_empty() {
        cx.warn(
            "every frame is narrower than the minimum width (option minwidth): only `all` is \
             drawn; -O minwidth=0 draws every frame",
        );
    }
}

/// What a value counts: the option, else the column's unit, or its name when the unit is a
/// plain `count` (`samples`, `calls`; `samples` for the `before` and `after` of a differential
/// profile). Characters XML does not allow (a control byte in a callgrind event's name) are
/// replaced, as in frame names: it is written into every frame's title.
///
/// The viewer takes a frame's name as the title before its last ` (`, so a count name holding
/// ` (` (`-O countname="ms (wall)"`) would cut names short for search and zoom labels: its
/// space before `(` is written as a no-break space (U+00A0), which looks the same. A name from
/// the input longer than [`attrs::MAX_COUNT_NAME`] bytes (the option refuses one) is cut there
/// with `…`: a 100 KB callgrind event name made a 20 MB picture of 200 frames.
fn count_name(p: &ProfileRef<'_>, col: Option<usize>, o: &FlameOptions) -> String {
    let name = match (&o.countname, col) {
        (Some(c), _) => c.as_str(),
        (None, None) => "samples",
        (None, Some(c)) => {
            let unit = p.value_type_unit(c);
            if !unit.is_empty() && unit != "count" {
                unit
            } else if p.meta("diff") == Some(profconv_plugin::ir::diff::DIFF_COLUMNS) {
                // The columns of a differential profile are named `before` and `after`: what
                // both count (`Ir`), when the sides name it alike.
                p.meta(profconv_plugin::ir::diff::DIFF_VALUE)
                    .unwrap_or("samples")
            } else {
                p.value_type_name(c)
            }
        }
    };
    let mut cut = name.len().min(attrs::MAX_COUNT_NAME);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let name = match cut < name.len() {
        true => format!("{}…", &name[..cut]),
        false => name.to_string(),
    };
    svg::xml_safe(&name).replace(" (", "\u{a0}(")
}

/// Frames named by their function, coloured by name.
struct ByName<'a, 'p> {
    p: &'a ProfileRef<'p>,
    palette: Palette,
}

impl Describe for ByName<'_, '_> {
    fn name(&self, f: &Frame) -> &str {
        if f.func == NONE {
            return merge::ALL;
        }
        self.p.func_name_str(f.func)
    }
    fn fill(&self, _: &Frame, name: &str) -> Rgb {
        color::frame_color(self.palette, name)
    }
}

/// The frames of the merged graph: from the stack table when it is the call tree where it
/// matters (no tree to build), else from the IR's `CallTree`.
fn merged_layout(
    p: &ProfileRef<'_>,
    col: Option<usize>,
    o: &FlameOptions,
    countname: &str,
    cx: &mut Context<'_>,
) -> Result<Layout, PluginError> {
    let (layout, negatives) =
        match merge::merged_from_stacks(p, col, |total| o.min_value(total), o.sort) {
            Some(fast) => fast,
            None => {
                let tree = CallTree::build_columns(p, col.as_slice())?;
                let (widths, negatives) = merge::node_widths(p, &tree, col);
                let total = merge::total_of_roots(&tree, &widths);
                let layout = merge::merged(p, &tree, &widths, o.min_value(total), o.sort);
                (layout, negatives)
            }
        };
    if negatives > 0 {
        cx.warn(&format!(
            "{negatives} call nodes have a negative self {countname}; drawn as zero"
        ));
    }
    Ok(layout)
}

fn draw<W: Write + ?Sized>(
    p: &ProfileRef<'_>,
    out: &mut W,
    o: &FlameOptions,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let col = value_column(p, o.value.as_deref())?;
    warn_if_counts(p, col, cx);
    let countname = count_name(p, col, o);
    let mut layout: Layout = if o.flamechart {
        if !p.is_ordered() {
            cx.warn(
                "this profile does not keep time order (it was aggregated): the flame chart \
                 shows its samples in stored order, which is not a timeline",
            );
        }
        if o.sort == SortOrder::Weight {
            cx.warn("option sort=weight does not apply to a flame chart: it keeps time order");
        }
        if col.is_some_and(|c| p.sample_values[c].iter().any(|&v| v < 0)) {
            cx.warn("samples with negative values are drawn as zero");
        }
        // The chart reads values from the samples; the tree gives only its shape.
        let tree = CallTree::build_columns(p, &[])?;
        let calls = p
            .value_type_index("calls")
            .filter(|&c| p.value_types[c].kind == ValueKind::Count);
        let total = merge::chart_total(p, col);
        let cols = ChartColumns { value: col, calls };
        merge::flamechart(p, &tree, cols, total, o.min_value(total))
    } else {
        merged_layout(p, col, o, &countname, cx)?
    };
    let title = o.title.clone().unwrap_or_else(|| {
        if o.flamechart {
            "Flame Chart"
        } else if o.inverted {
            "Icicle Graph"
        } else {
            "Flame Graph"
        }
        .to_string()
    });
    let pic = Picture {
        opts: o,
        title: &title,
        countname: &countname,
        decimals: col.map_or(0, |c| p.value_types[c].decimals),
        theme: color::theme(o.palette, o.dark),
    };
    if layout.total <= 0 {
        let msg = format!("Nothing to draw: the profile has no {countname}");
        cx.warn(&format!(
            "the profile has no {countname} to draw; wrote an empty picture"
        ));
        svg::write_message_svg(out, &pic, &msg)?;
        return Ok(());
    }
    warn_if_all_pruned(&layout, cx);
    layout.add_all_frame();
    let describe = ByName {
        p,
        palette: o.palette,
    };
    svg::check_size(&layout, &describe, o.max_size)?;
    svg::write_svg(out, &pic, &layout, &describe)?;
    Ok(())
}

#[cfg(test)]
mod tests;
