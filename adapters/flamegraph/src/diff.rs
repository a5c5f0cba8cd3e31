//! Differential flame graphs: two profiles of one program, before and after a change.
//!
//! The picture has the shape of the **after** profile (its call tree, widths and values); each
//! frame is coloured by the growth of its **self** value from before to after: red grew, blue
//! shrank, the stronger the larger the change relative to the largest change drawn; near white
//! unchanged. This is what inferno and flamegraph.pl draw. The two columns of one profile
//! (`profconv diff`'s) have the same call nodes, each compared with itself; two profiles given
//! apart are matched by their paths of function names from the root, so they may come from
//! different formats.
//!
//! Beyond the anchors, each tooltip also gives the before value of the node's total, so a
//! parent whose children all grew shows the growth in its tooltip (inferno #295), and the
//! share of before's value on stacks that do not exist after is reported as a warning (those
//! frames cannot be drawn in the after shape; draw the reverse diff to see them).
//!
//! `normalize` scales before to after's total first (inferno-diff-folded `-n`), so a longer
//! run does not make everything look red. `negate` swaps the colours.

use crate::attrs::FlameOptions;
use crate::color::{self, Palette, Rgb};
use crate::merge::{self, Frame};
use crate::svg::{self, Describe, Picture};
use crate::{count_name, value_column};
use foldhash::HashMap;
use foldhash::HashMapExt;
use profconv_plugin::ir::{CallTree, NONE, ProfileRef};
use profconv_plugin::{Context, Options, PluginError, warn_if_counts};
use std::io::Write;

/// Writes a differential flame graph of `before` → `after` with the user's `-O` options
/// (the same keys as the flamegraph emitter, plus `normalize` and `negate`).
///
/// This is what a `profconv diff BEFORE AFTER -o diff.svg` command calls after parsing both
/// inputs. Writes through a 64 KiB buffer, so `out` may be a plain file; warnings (stacks only
/// in before, negative values) go to `cx`. Errors: [`Status::BAD_OPTIONS`] for a bad option,
/// [`Status::INVALID_INPUT`] for a value sum that overflows, [`Status::IO`] for a failed write.
///
/// [`Status::BAD_OPTIONS`]: profconv_plugin::Status::BAD_OPTIONS
/// [`Status::INVALID_INPUT`]: profconv_plugin::Status::INVALID_INPUT
/// [`Status::IO`]: profconv_plugin::Status::IO
pub fn emit_diff<W: Write + ?Sized>(
    before: &ProfileRef<'_>,
    after: &ProfileRef<'_>,
    out: &mut W,
    options: &Options,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let o = FlameOptions::from_options(options)?;
    emit_diff_with(before, after, out, &o, cx)
}

/// [`emit_diff`] with options already parsed.
pub fn emit_diff_with<W: Write + ?Sized>(
    before: &ProfileRef<'_>,
    after: &ProfileRef<'_>,
    out: &mut W,
    o: &FlameOptions,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let mut buf = std::io::BufWriter::with_capacity(1 << 16, out);
    diff_unbuffered(before, after, &mut buf, o, cx)?;
    buf.flush()?;
    Ok(())
}

fn diff_unbuffered<W: Write + ?Sized>(
    before: &ProfileRef<'_>,
    after: &ProfileRef<'_>,
    out: &mut W,
    o: &FlameOptions,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    if o.flamechart {
        return Err(PluginError::bad_option(
            "option flamechart: a differential flame graph merges both profiles into call \
             trees; it cannot be a flame chart",
        ));
    }
    if o.palette != Palette::Hot {
        // The frames are coloured by their change, red and blue, whatever the palette.
        cx.warn(
            "option colors does not apply to a differential flame graph: its frames are \
             coloured by their change, red for growth and blue for shrinkage (-O negate swaps them)",
        );
    }
    if o.reverse {
        let (b, a) = (crate::reversed(before)?, crate::reversed(after)?);
        return draw_diff(&b.view(), &a.view(), out, o, cx);
    }
    draw_diff(before, after, out, o, cx)
}

/// The self value of `node` in column `col` (its number of samples without a column).
fn self_value(tree: &CallTree, col: Option<usize>, node: usize) -> i64 {
    match col {
        Some(c) => tree.self_values[c][node],
        None => i64::from(tree.sample_count[node]),
    }
}

/// Before's values on after's call nodes, in before's own fixed-point units (as stored):
/// [`Scale`] takes them to after's units where they are shown, exactly.
struct Matched<'a> {
    on_nodes: BeforeOnNodes<'a>,
    /// Before's self values on paths after does not have.
    unmatched: i128,
    /// Before's total.
    total_before_all: i128,
}

/// Before's self value and total on each of after's call nodes.
enum BeforeOnNodes<'a> {
    /// Two profiles: before's nodes summed onto after's of the same path of names.
    Mapped {
        self_before: Vec<i128>,
        total_before: Vec<i128>,
    },
    /// One profile's two columns (`profconv diff`): the nodes are the same, and before's values
    /// are read from the one call tree as they are (self clamped at zero, as drawn).
    Same {
        self_before: &'a [i64],
        total_before: &'a [i64],
        /// After's widths: a node of width 0 is not drawn, nor is before's value on it.
        widths: &'a [i64],
    },
}

impl Matched<'_> {
    fn self_before(&self, n: usize) -> i128 {
        match &self.on_nodes {
            BeforeOnNodes::Mapped { self_before, .. } => self_before[n],
            BeforeOnNodes::Same {
                self_before,
                widths,
                ..
            } => match widths[n] > 0 {
                true => i128::from(self_before[n].max(0)),
                false => 0,
            },
        }
    }

    fn total_before(&self, n: usize) -> i128 {
        match &self.on_nodes {
            BeforeOnNodes::Mapped { total_before, .. } => total_before[n],
            BeforeOnNodes::Same {
                total_before,
                widths,
                ..
            } => match widths[n] > 0 {
                true => i128::from(total_before[n]),
                false => 0,
            },
        }
    }
}

/// Before's stored values to after's: `× num / den`, a ratio of integers (the decimals' power
/// of ten, or with `normalize` after's total over before's), so that shown values are exact
/// where a double would round past 2^53.
#[derive(Clone, Copy)]
struct Scale {
    num: i128,
    den: i128,
}

impl Scale {
    /// `v` in after's units × `unit`, rounded half away from zero. Every factor is below
    /// 2^63 and `num × unit` is kept below 9.2e18 by the caller, so the product fits in i128.
    fn times(self, v: i128, unit: i128) -> i128 {
        let n = v * self.num * unit;
        let q = n / self.den;
        let r = n % self.den;
        if 2 * r.abs() >= self.den {
            q + n.signum()
        } else {
            q
        }
    }
}

/// One profile of the two: its call tree, the value column drawn and each node's width.
struct Side<'a, 'p> {
    p: &'a ProfileRef<'p>,
    tree: &'a CallTree,
    col: Option<usize>,
    widths: &'a [i64],
}

/// Matches before's call nodes to after's by their path of function names (two profiles given
/// apart). A before value on a node that after has with width 0 cannot be drawn either, and
/// counts as unmatched.
fn match_nodes(before: &Side<'_, '_>, after: &Side<'_, '_>) -> Matched<'static> {
    let (tb, ta) = (before.tree, after.tree);
    let (before_p, after_p) = (before.p, after.p);
    // Function names as dense keys (two funcs of one name share a key).
    // foldhash, not SipHash: these maps see every node of both trees (a differential file of
    // 2 M stacks spent a quarter of its drawing in them).
    let mut name_key: HashMap<&str, u32> = HashMap::new();
    let key_a: Vec<u32> = (0..after_p.n_funcs() as u32)
        .map(|f| {
            let n = name_key.len() as u32;
            *name_key.entry(after_p.func_name_str(f)).or_insert(n)
        })
        .collect();
    let key_b: Vec<u32> = (0..before_p.n_funcs() as u32)
        .map(|f| {
            name_key
                .get(before_p.func_name_str(f))
                .copied()
                .unwrap_or(NONE)
        })
        .collect();
    // (after parent, name key) → after node; the first node wins for a repeated name.
    let mut child: HashMap<(u32, u32), u32> = HashMap::with_capacity(ta.len());
    for n in 0..ta.len() {
        let k = key_a[ta.func[n] as usize];
        child.entry((ta.parent[n], k)).or_insert(n as u32);
    }
    let mut self_before = vec![0; ta.len()];
    let mut total_before = vec![0; ta.len()];
    let (mut unmatched, mut total_before_all) = (0, 0);
    let mut to_after = vec![NONE; tb.len()];
    // Parents come before children, so one forward pass maps every node.
    for n in 0..tb.len() {
        let par = tb.parent[n];
        let mapped_parent = if par == NONE {
            NONE
        } else {
            to_after[par as usize]
        };
        let k = key_b[tb.func[n] as usize];
        let hit = if (par != NONE && mapped_parent == NONE) || k == NONE {
            None
        } else {
            child.get(&(mapped_parent, k)).copied()
        };
        let s = i128::from(self_value(tb, before.col, n).max(0));
        match hit {
            Some(a) if after.widths[a as usize] > 0 => {
                to_after[n] = a;
                self_before[a as usize] += s;
                total_before[a as usize] += i128::from(before.widths[n]);
            }
            // After has the path but nothing on it: not drawn (nor anything below it).
            Some(a) => {
                to_after[n] = a;
                unmatched += s;
            }
            None => unmatched += s,
        }
        total_before_all += s;
    }
    Matched {
        on_nodes: BeforeOnNodes::Mapped {
            self_before,
            total_before,
        },
        unmatched,
        total_before_all,
    }
}

/// [`Matched`] for the two columns of one profile, whose call tree `tree` holds before's
/// column `before_col`: each node is its own match.
fn same_nodes<'a>(
    tree: &'a CallTree,
    before_col: usize,
    before_widths: &'a [i64],
    widths: &'a [i64],
) -> Matched<'a> {
    let self_before = &tree.self_values[before_col];
    let (mut unmatched, mut total_before_all) = (0, 0);
    for (&s, &w) in self_before.iter().zip(widths) {
        let s = i128::from(s.max(0));
        if w <= 0 {
            unmatched += s;
        }
        total_before_all += s;
    }
    Matched {
        on_nodes: BeforeOnNodes::Same {
            self_before,
            total_before: before_widths,
            widths,
        },
        unmatched,
        total_before_all,
    }
}

/// Whether `before` and `after` are two columns of one profile (as `profconv diff` gives
/// them): the same stacks, frames and functions, so the same call nodes.
fn same_profile(before: &ProfileRef<'_>, after: &ProfileRef<'_>) -> bool {
    fn same<T>(a: &[T], b: &[T]) -> bool {
        std::ptr::eq(a, b)
    }
    same(before.stack_prefix, after.stack_prefix)
        && same(before.stack_frame, after.stack_frame)
        && same(before.frame_func, after.frame_func)
        && same(before.func_name, after.func_name)
        && same(before.sample_stack, after.sample_stack)
}

struct DiffDescribe<'a, 'p> {
    after: &'a ProfileRef<'p>,
    tree: &'a CallTree,
    col: Option<usize>,
    matched: &'a Matched<'a>,
    max_delta: f64,
    negate: bool,
    scale: Scale,
    decimals: u32,
    /// Digits shown past after's own: 2 when before was scaled by `normalize`, before's
    /// further ones when it has more.
    extra_decimals: u32,
    countname: &'a str,
    total: i64,
}

impl DiffDescribe<'_, '_> {
    /// The change of `node`'s self value, in after's units (for colours and percentages).
    fn delta(&self, node: u32) -> f64 {
        if node == NONE {
            return 0.0;
        }
        let n = node as usize;
        // Subtracted exactly, then made a double: past 2^53 the two doubles are rounded, and
        // a change of 1 was drawn white (and its percentage had no sign).
        let after = i128::from(self_value(self.tree, self.col, n).max(0));
        let (num, den) = (self.scale.num, self.scale.den);
        (after * den - self.matched.self_before(n) * num) as f64 / den as f64
    }

    /// The change, exactly, × 10^`extra_decimals`.
    fn delta_exact(&self, node: u32, unit: i128) -> i128 {
        if node == NONE {
            return 0;
        }
        let n = node as usize;
        i128::from(self_value(self.tree, self.col, n).max(0)) * unit
            - self.scale.times(self.matched.self_before(n), unit)
    }
}

impl Describe for DiffDescribe<'_, '_> {
    fn name(&self, f: &Frame) -> &str {
        if f.func == NONE {
            return merge::ALL;
        }
        self.after.func_name_str(f.func)
    }
    fn fill(&self, f: &Frame, _: &str) -> Rgb {
        color::diff_color(self.delta(f.node), self.max_delta, self.negate)
    }
    fn extra(&self, f: &Frame, out: &mut String) {
        // Before values are shown with `extra_decimals` more digits (the fraction `normalize`
        // keeps, or before's own finer decimals), and the percentage comes from the unrounded
        // change.
        let unit = 10i128.pow(self.extra_decimals);
        let decimals = self.decimals + self.extra_decimals;
        let before_total = if f.node == NONE {
            self.matched.total_before_all
        } else {
            self.matched.total_before(f.node as usize)
        };
        // In full: scaled to after's decimals, a value may pass 64 bits (it was clamped, and
        // contradicted the percentage beside it).
        out.push_str("; before ");
        svg::push_wide_value(out, self.scale.times(before_total, unit), decimals);
        out.push_str(", self ");
        let delta = self.delta(f.node);
        let d = self.delta_exact(f.node, unit);
        out.push(if d > 0 {
            '+'
        } else if d < 0 {
            '-'
        } else {
            '±'
        });
        svg::push_wide_value(out, d.saturating_abs(), decimals);
        out.push(' ');
        out.push_str(self.countname);
        out.push_str(", ");
        if d > 0 {
            out.push('+');
        }
        svg::push_percent_of(out, if d == 0 { 0.0 } else { delta }, self.total);
    }
}

fn draw_diff<W: Write + ?Sized>(
    before: &ProfileRef<'_>,
    after: &ProfileRef<'_>,
    out: &mut W,
    o: &FlameOptions,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let name = o.value.as_deref();
    let ca = value_column(after, name).map_err(|e| in_profile(e, "after"))?;
    let cb = value_column(before, name).map_err(|e| in_profile(e, "before"))?;
    warn_if_counts(after, ca, cx);
    let countname = count_name(after, ca, o);
    // `profconv diff`'s two columns of one profile have the same call nodes: one tree holds
    // both (after's column, then before's), and needs no matching by names (two trees, a map
    // of every node and a copy of before's values took 7 times the memory of a plain graph).
    let both = match (ca, cb) {
        (Some(a), Some(b)) if same_profile(before, after) => {
            let mut both = after.clone();
            both.value_types = vec![after.value_types[a], before.value_types[b]];
            both.sample_values = vec![after.sample_values[a], before.sample_values[b]];
            Some(both)
        }
        _ => None,
    };
    let (after, before, ca, cb) = match &both {
        Some(both) => (both, both, Some(0), Some(1)),
        None => (after, before, ca, cb),
    };
    // Each side's one value column (or sample counts) is all the drawing reads.
    let ta = match both {
        Some(_) => CallTree::build_columns(after, &[0, 1])?,
        None => CallTree::build_columns(after, ca.as_slice())?,
    };
    let tb = match both {
        Some(_) => None,
        None => Some(CallTree::build_columns(before, cb.as_slice())?),
    };
    let tb = tb.as_ref().unwrap_or(&ta);
    let (widths, negatives) = merge::node_widths(after, &ta, ca);
    if negatives > 0 {
        cx.warn(&format!(
            "{negatives} call nodes of the after profile have a negative self {countname}; \
             drawn as zero"
        ));
    }
    let total = merge::total_of_roots(&ta, &widths);
    let (wb, _) = merge::node_widths(before, tb, cb);
    let total_before = merge::total_of_roots(tb, &wb);
    // Before's values in after's fixed-point units, then (normalize) at after's total.
    let dec_a = ca.map_or(0, |c| after.value_types[c].decimals);
    let dec_b = cb.map_or(0, |c| before.value_types[c].decimals);
    let pow10 = |d: u32| 10i128.pow(d.min(18));
    let normalized = o.normalize && total_before > 0;
    let scale = match normalized {
        true => Scale {
            num: i128::from(total),
            den: i128::from(total_before),
        },
        false => Scale {
            num: pow10(dec_a.saturating_sub(dec_b)),
            den: pow10(dec_b.saturating_sub(dec_a)),
        },
    };
    // Two more digits for a scaled before only where they fit: a total of 9.2e16 or more shows
    // as it is; before's finer decimals are shown as they are.
    let extra_decimals = match normalized {
        true if total == total_before => 0,
        true if (total as f64) * 100.0 < 9.2e18 => 2u32.min(18u32.saturating_sub(dec_a)),
        true => 0,
        false => dec_b.saturating_sub(dec_a).min(18u32.saturating_sub(dec_a)),
    };
    let matched = match (&both, cb) {
        (Some(_), Some(cb)) => same_nodes(&ta, cb, &wb, &widths),
        _ => match_nodes(
            &Side {
                p: before,
                tree: tb,
                col: cb,
                widths: &wb,
            },
            &Side {
                p: after,
                tree: &ta,
                col: ca,
                widths: &widths,
            },
        ),
    };
    let layout = merge::merged(after, &ta, &widths, o.min_value(total), o.sort);
    let mut describe = DiffDescribe {
        after,
        tree: &ta,
        col: ca,
        matched: &matched,
        max_delta: 0.0,
        negate: o.negate,
        scale,
        decimals: dec_a,
        extra_decimals,
        countname: &countname,
        total,
    };
    describe.max_delta = layout
        .frames
        .iter()
        .map(|f| describe.delta(f.node).abs())
        .fold(0.0, f64::max);
    if matched.unmatched > 0 && total_before > 0 {
        let share = matched.unmatched as f64 / total_before as f64 * 100.0;
        // A share that rounds to 0.00 is not none, nor one that rounds to 100.00 all: said as
        // below the first or above the last value the two digits show.
        let share = match share {
            s if s < 0.005 => "<0.01".to_string(),
            s if s >= 99.995 && matched.unmatched < i128::from(total_before) => {
                ">99.99".to_string()
            }
            s => format!("{s:.2}"),
        };
        // In before's own unit: the two may differ (ticks against samples).
        let before_unit = count_name(before, cb, o);
        cx.warn(&format!(
            "{share}% of the before profile's {before_unit} are on call paths with nothing \
             after (absent from the after profile, or of total 0 there); they cannot be drawn in the after \
             profile's shape (swap the inputs to see them)"
        ));
    }
    let title = o
        .title
        .clone()
        .unwrap_or_else(|| "Differential Flame Graph".to_string());
    let (grew, shrank) = if o.negate {
        ("blue", "red")
    } else {
        ("red", "blue")
    };
    let mut opts = o.clone();
    if opts.subtitle.is_none() {
        opts.subtitle = Some(format!(
            "shape: after; colour: change of self {countname} from before ({grew} grew, {shrank} \
             shrank){}",
            if o.normalize {
                "; before scaled to after's total"
            } else {
                ""
            }
        ));
    }
    let pic = Picture {
        opts: &opts,
        title: &title,
        countname: &countname,
        decimals: dec_a,
        theme: color::theme(Palette::Hot, o.dark),
    };
    if layout.total <= 0 {
        cx.warn(&format!(
            "the after profile has no {countname} to draw; wrote an empty picture"
        ));
        let msg = format!("Nothing to draw: the after profile has no {countname}");
        svg::write_message_svg(out, &pic, &msg)?;
        return Ok(());
    }
    crate::warn_if_all_pruned(&layout, cx);
    let mut layout = layout;
    layout.add_all_frame();
    svg::check_size(&layout, &describe, o.max_size)?;
    svg::write_svg(out, &pic, &layout, &describe)?;
    Ok(())
}

fn in_profile(mut e: PluginError, which: &str) -> PluginError {
    e.message = format!("{} (in the {which} profile)", e.message);
    e
}
