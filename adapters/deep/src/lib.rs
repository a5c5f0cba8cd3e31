//! Mercury deep profiler data files (`Deep.data`, format versions 8 and 9), read into the IR.
//!
//! * [`read_file`]: the header and the four record kinds (call-site-static, call-site-dynamic,
//!   proc-static, proc-dynamic), stored by id, with every reference checked. Nothing is
//!   allocated from the header's counts before they are checked against the bytes present.
//! * [`build_tree`]: the proc-dynamic graph, which is cyclic wherever recursion happened, as a
//!   tree: one node per proc-dynamic under the call-site-dynamic that first reaches it in the
//!   writer's preorder walk; other links only add recursive calls. Each call-site-dynamic's own
//!   costs land in exactly one node, so nothing is counted twice. Iterative: any depth works.
//! * [`to_profile`]: the tree as IR stacks and samples, with the value columns of [`COLUMNS`].
//!
//! See `docs/formats/deep-data.md` for the mapping and its limits.

mod convert;
mod model;
mod read;
mod tree;

pub use convert::{COLUMNS, DeepOptions, NameStyle, ProcNames, proc_module, proc_name, to_profile};
pub use model::{
    CallSiteDynamic, CallSiteStatic, CallSiteText, Coverage, DeepFile, Header, ID_PREFIX, Label,
    Measures, ProcDynamic, ProcHead, ProcStatic, kind, m, read_file,
};
pub use tree::{NodeCosts, PdTree, build_tree};

use profconv_plugin::ir::{NONE, Profile};
use profconv_plugin::{Context, Format, Input, OptionDesc, Options, PluginError};
use std::fmt::Write as _;
use std::io::Read;

/// The Deep.data format.
pub struct Deep;

impl Format for Deep {
    const ID: &'static str = "deep";
    const DESCRIPTION: &'static str =
        "Mercury deep profiler data (Deep.data, versions 8 and 9): call graph as a call tree";
    const EXTENSIONS: &'static str = "data";
    const OPTIONS: &'static [OptionDesc] = &[
        OptionDesc::string(
            "names",
            "short",
            "procedure names, `short` (module.name/arity, then -MODE when the mode is not 0) or `mdprof` (module.name/arity+1-MODE, +1 for functions only)",
        ).parse_only(),
        OptionDesc::flag(
            "call-sites",
            "one call node per call site: a procedure a caller reaches from several call sites is named with its call site `[file:line goal]`",
        ).parse_only(),
    ];
    const CAN_PARSE: bool = true;
    const CAN_SNIFF: bool = true;
    /// Records refer to each other by id in any order: the whole file is needed.
    const STREAMING_INPUT: bool = false;

    fn sniff(head: &[u8]) -> u32 {
        sniff(head)
    }

    fn check_parse_options(options: &Options) -> Result<(), PluginError> {
        deep_options(options).map(drop)
    }

    fn parse(
        input: &mut Input<'_>,
        options: &Options,
        cx: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        let opts = deep_options(options)?;
        if let Some(data) = input.whole() {
            return parse_deep(data, &opts, cx);
        }
        let mut data = Vec::new();
        input.read_to_end(&mut data)?;
        parse_deep(&data, &opts, cx)
    }
}

/// The reader's options, checked.
fn deep_options(options: &Options) -> Result<DeepOptions, PluginError> {
    let names = match options.get("names") {
        None | Some("" | "short") => NameStyle::Short,
        Some("mdprof") => NameStyle::Mdprof,
        Some(other) => {
            return Err(PluginError::bad_option(format!(
                "option names={}: expected `short` or `mdprof`",
                profconv_plugin::quote_input(other.as_bytes(), 40)
            )));
        }
    };
    Ok(DeepOptions {
        names,
        call_sites: options.flag("call-sites"),
    })
}

/// 100 when `head` starts with the identifying line's prefix, else 0.
pub fn sniff(head: &[u8]) -> u32 {
    if head.starts_with(ID_PREFIX) { 100 } else { 0 }
}

/// Reads a whole Deep.data file into an IR profile; warnings go to `cx`.
pub fn parse_deep(
    data: &[u8],
    opts: &DeepOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let mut file = read_file(data)?;
    for w in &file.warnings {
        cx.warn(w);
    }
    let tree = build_tree(&file)?;
    check_totals(&file, cx);
    let (b, tree) = convert::name_nodes(&file, tree, opts)?;
    // What the rows pass does not read is freed before it makes the IR's rows, which lowers the
    // peak (by 100 MB for a long run's 2.9 million proc-dynamics); the two tables of listed
    // call-site-dynamics become storage of the IR instead.
    let spare = [
        std::mem::take(&mut file.refs),
        std::mem::take(&mut file.ref_css),
    ];
    drop((
        std::mem::take(&mut file.pd),
        std::mem::take(&mut file.slot_kind),
    ));
    let profile = convert::add_rows(&file, tree, b, spare)?;
    // Names are decoded lossily where they are named; a replacement character in the profile's
    // strings is what that left (a name holding U+FFFD itself is as rare as it is harmless).
    if profile.view().strings.blob.contains('\u{fffd}') {
        cx.warn(
            "names that are not UTF-8; invalid bytes are replaced with U+FFFD (names that differ \
             only there are read as one)",
        );
    }
    Ok(profile)
}

/// Warns when the call-site-dynamics' quanta or call sequences do not add up to the header's
/// (counters of very long runs can wrap at 2^32; samples before the first call are lost).
fn check_totals(f: &DeepFile<'_>, cx: &mut Context<'_>) {
    let h = &f.header;
    let q = f.sum_quanta;
    if q != h.user_quanta as i128 {
        cx.warn(&format!(
            "the call-site-dynamics hold {q} quanta but the header counts {} user quanta",
            h.user_quanta
        ));
    }
    let c = f.sum_call_seqs;
    if c != h.call_seqs as i128 {
        cx.warn(&format!(
            "the call-site-dynamics hold {c} call sequences but the header counts {}",
            h.call_seqs
        ));
    }
}

/// Per tree node, the totals (own + descendants) of the additive measurements (quanta, call
/// seqs, allocs, words; the other entries hold the node's own port counts). A total that
/// overflows is an error at the record of the proc-dynamic whose total it is.
pub fn tree_totals(
    f: &DeepFile<'_>,
    costs: &[NodeCosts],
    t: &PdTree,
) -> Result<Vec<[i64; m::N]>, PluginError> {
    let mut total: Vec<[i64; m::N]> = costs.iter().map(|c| c.own).collect();
    for n in (1..t.len()).rev() {
        let p = t.parent[n] as usize;
        let child = total[n];
        for k in [m::QUANTA, m::CALL_SEQS, m::ALLOCS, m::WORDS] {
            total[p][k] = total[p][k].checked_add(child[k]).ok_or_else(|| {
                let pd = t.pd[p];
                PluginError::invalid_input(format!(
                    "the total measurements of proc-dynamic {pd} (itself and its callees) overflow 64 bits"
                ))
                .at_offset(f.pd[pd as usize].offset)
            })?;
        }
    }
    Ok(total)
}

/// The proc-dynamic tree as text, one node per line in preorder (file order), two spaces of
/// indent per depth: `NAME calls=C rec=R q=SELF/TOTAL call_seqs=S/T allocs=S/T words=S/T`, then
/// the port counts that are not zero and ` [KIND file:line]` of the call site that reaches the
/// node over its tree edge (none for the root). For tests and for
/// comparing with the fixtures' expected trees, which list one node per proc-dynamic.
pub fn render_pd_tree(
    f: &DeepFile<'_>,
    t: &PdTree,
    style: NameStyle,
) -> Result<String, PluginError> {
    let costs = t.costs(f)?;
    let totals = tree_totals(f, &costs, t)?;
    let mut depth = vec![0usize; t.len()];
    let mut out = String::new();
    let mut name = String::new();
    let names = ProcNames::new(f, style)?;
    for n in 0..t.len() {
        if t.parent[n] != NONE {
            depth[n] = depth[t.parent[n] as usize] + 1;
        }
        let own = &costs[n].own;
        let tot = &totals[n];
        for _ in 0..depth[n] {
            out.push_str("  ");
        }
        let ps = f.pd[t.pd[n] as usize].ps;
        names.write(ps, &f.proc_head(ps)?.label, &mut name);
        let _ = write!(
            out,
            "{name} calls={} rec={} q={}/{} call_seqs={}/{} allocs={}/{} words={}/{}",
            costs[n].calls,
            costs[n].recursive_calls,
            own[m::QUANTA],
            tot[m::QUANTA],
            own[m::CALL_SEQS],
            tot[m::CALL_SEQS],
            own[m::ALLOCS],
            tot[m::ALLOCS],
            own[m::WORDS],
            tot[m::WORDS]
        );
        for (k, label) in [
            (m::EXITS, "exits"),
            (m::FAILS, "fails"),
            (m::REDOS, "redos"),
            (m::EXCPS, "excps"),
        ] {
            if own[k] != 0 {
                let _ = write!(out, " {label}={}", own[k]);
            }
        }
        if t.css[n] != 0 {
            let css = &f.css[t.css[n] as usize];
            let site = f.call_site_text(t.css[n])?;
            let file = if site.file.is_empty() {
                f.proc_head(css.owner)?.file
            } else {
                site.file
            };
            let _ = write!(
                out,
                " [{} {}:{}]",
                kind::name(css.kind),
                String::from_utf8_lossy(file),
                css.line
            );
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
