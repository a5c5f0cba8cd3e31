//! The proc-dynamic tree into the IR: one stack and one sample row per tree node, the row
//! carrying the node's own costs, its calls and its port counts.
//!
//! * Funcs: one per referenced proc-static (created lazily), named `module.name/arity`, with the
//!   procedure's file, line and module (the IR func's resource).
//! * Frames: a node's own frame has no line; the frame of a caller *at a call site* carries the
//!   call site's line (the convention of the IR and the Firefox Profiler: a non-leaf frame is the
//!   place where the call happened). A node's stack is therefore
//!   `<parent's prefix> + parent@call-site-line + node`.

use crate::model::{DeepFile, Label, Measures, m};
use crate::tree::PdTree;
use profconv_plugin::PluginError;
use profconv_plugin::ir::{IrError, NONE, Profile, ProfileBuilder, ValueKind};
use std::fmt::Write as _;

/// How procedures are named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NameStyle {
    /// `module.name/arity` (pred-form arity; `-MODE` appended when the mode is not 0);
    /// compiler-generated procedures `__Unify__ for module.type/arity` (` mode N` when N ≠ 0).
    #[default]
    Short,
    /// mdprof's display strings: `module.name/arity-MODE`, `+1` before the mode for functions
    /// (`float.float/2+1-0`); `Unify for module.type/arity` (` mode N` when N ≠ 0).
    Mdprof,
}

/// Conversion options.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeepOptions {
    /// How procedures are named.
    pub names: NameStyle,
    /// Keep one call node per call site: a procedure that a caller reaches from several call
    /// sites gets its call site in its name, so the IR's call tree, which combines siblings of
    /// the same function, keeps them apart (instances reached through one site stay one node).
    pub call_sites: bool,
}

/// The IR's value columns, in order (the first is the default weight).
pub const COLUMNS: [(&str, &str, ValueKind); 10] = [
    ("quanta", "samples", ValueKind::Weight),
    ("calls", "calls", ValueKind::Count),
    // Each port count is its own unit, so that a flame graph of one (`-O value=fails`) says
    // which it draws: its tooltips name the unit (they all said `events`, and recursive calls
    // were `calls`, like the calls).
    ("recursive_calls", "recursive calls", ValueKind::Count),
    ("exits", "exits", ValueKind::Count),
    ("fails", "fails", ValueKind::Count),
    ("redos", "redos", ValueKind::Count),
    ("excps", "exceptions", ValueKind::Count),
    ("call_seqs", "calls", ValueKind::Weight),
    ("allocs", "allocations", ValueKind::Weight),
    ("words", "words", ValueKind::Weight),
];

/// Where each column's value comes from: a measurement index, or the tree's calls (`None`,
/// column 1) and recursive calls (column 2).
const SOURCE: [Option<usize>; 10] = [
    Some(m::QUANTA),
    None,
    None,
    Some(m::EXITS),
    Some(m::FAILS),
    Some(m::REDOS),
    Some(m::EXCPS),
    Some(m::CALL_SEQS),
    Some(m::ALLOCS),
    Some(m::WORDS),
];

/// UTF-8 text of a name, with a lossy fallback (names are almost always ASCII: check fast).
fn lossy(s: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(s) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(s),
    }
}

/// Writes the name of a procedure into `out` (cleared first).
pub fn proc_name(label: &Label<'_>, style: NameStyle, out: &mut String) {
    proc_name_marked(label, style, false, out);
}

/// [`proc_name`], with a function's `+1` in the short style too when `mark_function` (a
/// predicate has the same short name: `map.lookup/3` and the function `map.lookup/3+1`, which
/// the standard library pairs by the hundred; see [`ProcNames`]).
fn proc_name_marked(label: &Label<'_>, style: NameStyle, mark_function: bool, out: &mut String) {
    out.clear();
    match *label {
        Label::Absent => out.push_str("<unknown procedure>"),
        Label::User {
            is_func,
            decl_module,
            name,
            arity,
            mode,
            ..
        } => {
            let name = lossy(name);
            // mdprof shows a type-specialised procedure under its own name, with the
            // substitution after the mode (`create_refined_proc_ids` in mdprof's
            // read_profile.m): `TypeSpecOf__pred__lookup__[K = int]_0_1` is
            // `map.lookup/3-0 [K = int]`.
            let type_spec = match style {
                NameStyle::Mdprof => mdprof_type_spec(&name),
                NameStyle::Short => None,
            };
            out.push_str(&lossy(decl_module));
            out.push('.');
            out.push_str(type_spec.map_or(&*name, |(n, _)| n));
            out.push('/');
            push_u32(out, arity);
            match style {
                NameStyle::Short => {
                    if is_func && mark_function {
                        out.push_str("+1");
                    }
                    if mode != 0 {
                        out.push('-');
                        push_u32(out, mode);
                    }
                }
                NameStyle::Mdprof => {
                    if is_func {
                        out.push_str("+1");
                    }
                    out.push('-');
                    push_u32(out, mode);
                    if let Some((_, subst)) = type_spec {
                        out.push_str(" [");
                        out.push_str(subst);
                        out.push(']');
                    }
                }
            }
        }
        Label::Special {
            type_name,
            type_module,
            pred_name,
            type_arity,
            mode,
            ..
        } => {
            let pred = lossy(pred_name);
            let pred = match style {
                NameStyle::Short => &*pred,
                NameStyle::Mdprof => pred.trim_start_matches("__").trim_end_matches("__"),
            };
            let _ = write!(
                out,
                "{pred} for {}.{}/{type_arity}",
                lossy(type_module),
                lossy(type_name)
            );
            if mode != 0 {
                let _ = write!(out, " mode {mode}");
            }
        }
    }
}

/// The procedure name and type substitution of a type-specialised procedure's mangled name
/// (`TypeSpecOf__pred__lookup__[K = int]_0_1`: `lookup`, `K = int`), as mdprof takes them
/// apart; `None` for any other name (mdprof then shows the name as it is).
fn mdprof_type_spec(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("TypeSpecOf__")?;
    let rest = ["pred__", "func__", "pred_or_func__"]
        .iter()
        .find_map(|p| rest.strip_prefix(p))?;
    let at = rest.find("__[")?;
    let subst = &rest[at + 3..];
    let subst = &subst[..subst.find(']').unwrap_or(subst.len())];
    Some((&rest[..at], subst))
}

/// Appends a number in decimal (no formatting machinery: names are built for every procedure).
fn push_u32(out: &mut String, v: u32) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// The module qualifying a procedure (the declaring module; a type's module for
/// compiler-generated procedures).
pub fn proc_module<'a>(label: &Label<'a>) -> &'a [u8] {
    match *label {
        Label::Absent => b"",
        Label::User { decl_module, .. } => decl_module,
        Label::Special { type_module, .. } => type_module,
    }
}

/// A user procedure's short name, as parts: declaring module, name, arity, mode.
fn short_key<'a>(label: &Label<'a>) -> Option<(&'a [u8], &'a [u8], u32, u32)> {
    match *label {
        Label::User {
            decl_module,
            name,
            arity,
            mode,
            ..
        } => Some((decl_module, name, arity, mode)),
        _ => None,
    }
}

/// How the procedures of one file are named: [`proc_name`] in the chosen style, and in the
/// short style a called function whose short name a predicate of the file has (called or not,
/// so that two profiles of one program name it alike) is marked `+1`, so that the two stay two
/// functions (in folded stacks, callgrind, and the transforms that match names, a function
/// calling its predicate read as recursion).
pub struct ProcNames {
    style: NameStyle,
    /// The proc-statics of the functions to mark, ascending.
    marked: Vec<u32>,
}

impl ProcNames {
    /// The names of `f`'s procedures in `style`.
    ///
    /// Candidates are found by the short names' fingerprints the loader kept; only they are
    /// decoded again, each once (decoding every predicate cost 50 % of reading a file of mostly
    /// proc-statics; comparing each function with each candidate, quadratic time).
    pub fn new(f: &DeepFile<'_>, style: NameStyle) -> Result<Self, PluginError> {
        use std::collections::HashSet;
        type Fast = foldhash::fast::FixedState;
        let mut marked = Vec::new();
        if style != NameStyle::Short {
            return Ok(ProcNames { style, marked });
        }
        let functions: HashSet<u32, Fast> =
            f.ps.iter()
                .filter(|p| p.called && p.is_func)
                .map(|p| p.short_hash)
                .collect();
        if functions.is_empty() {
            return Ok(ProcNames { style, marked });
        }
        // The predicates that may share a function's short name: their fingerprints, and their
        // names decoded once.
        let (mut hashes, mut predicates) = (
            HashSet::with_hasher(Fast::default()),
            HashSet::with_hasher(Fast::default()),
        );
        for (ps, p) in f.ps.iter().enumerate() {
            if !p.is_func && p.short_hash != 0 && functions.contains(&p.short_hash) {
                hashes.insert(p.short_hash);
                predicates.insert(short_key(&f.proc_head(ps as u32)?.label));
            }
        }
        for (ps, p) in f.ps.iter().enumerate() {
            if p.called
                && p.is_func
                && hashes.contains(&p.short_hash)
                && predicates.contains(&short_key(&f.proc_head(ps as u32)?.label))
            {
                marked.push(ps as u32);
            }
        }
        Ok(ProcNames { style, marked })
    }

    /// Writes the name of the procedure `ps`, of label `label`, into `out` (cleared first).
    pub fn write(&self, ps: u32, label: &Label<'_>, out: &mut String) {
        let marked = self.marked.binary_search(&ps).is_ok();
        proc_name_marked(label, self.style, marked, out);
    }
}

/// Builds the IR profile of a read file and its tree.
///
/// Strings, funcs and frames are interned by [`ProfileBuilder`] (each name once); stacks and
/// sample rows are then appended through its bulk phase ([`ProfileBuilder::into_bulk`]) in
/// preorder, with their sizes reserved: one stack and one sample row per tree node (plus one
/// stack per distinct call place of a caller), so nothing needs the builder's per-stack lookups.
/// Two sibling nodes of one function reached from one line get two stacks, which the call tree
/// combines as it combines any frames of one function.
pub fn to_profile(
    f: &DeepFile<'_>,
    t: &PdTree,
    opts: &DeepOptions,
) -> Result<Profile, PluginError> {
    let (b, t) = name_nodes(f, t.clone(), opts)?;
    add_rows(f, t, b, [Vec::new(), Vec::new()])
}

/// The funcs and frames of [`to_profile`], with its metadata: the first of its two passes, taking
/// the tree. Each page of memory touched for the first time costs a page fault (some 2 µs on the
/// development VM, with the kernel's clearing), and a long run's profile has millions of nodes,
/// so the conversion makes as few fresh pages as it can: the tree's `pd` and `css` arrays, read
/// by this pass node by node, then hold each node's own frame and the frame of its call place
/// (written where the node's entry was read), so it needs no per-node arrays of its own (34 MB
/// for 2.9 million nodes). Gives the builder and the tree so changed, for [`add_rows`]; the
/// file's proc-dynamics, slots and static records are not read after it.
pub(crate) fn name_nodes(
    f: &DeepFile<'_>,
    mut t: PdTree,
    opts: &DeepOptions,
) -> Result<(ProfileBuilder, PdTree), PluginError> {
    let n = t.len();
    let mut b = ProfileBuilder::new();
    for (name, unit, kind) in COLUMNS {
        b.add_value_type(name, unit, kind);
    }
    add_meta(&mut b, f, &t);
    let renamed = if opts.call_sites {
        same_procedure_siblings(f, &t)
    } else {
        Vec::new()
    };
    let is_renamed = |k: usize| renamed.get(k).copied().unwrap_or(false);
    // Funcs and frames: per node its own (line-less) frame, and the frame of its parent at the
    // call site that reaches it.
    let names = ProcNames::new(f, opts.names)?;
    let mut func_of_ps = vec![NONE; f.ps.len()];
    let mut frame_of_css = vec![NONE; f.css.len()];
    let mut name = String::new();
    for k in 0..n {
        prefetch_proc_head(f, &t, k);
        // And the call site's entry and cached frame (`t.css` is read in order).
        if let Some(&css) = t.css.get(k + AHEAD) {
            prefetch_index::prefetch_index(&f.css, css as usize);
            prefetch_index::prefetch_index(&frame_of_css, css as usize);
        }
        let ps = f.pd[t.pd[k] as usize].ps;
        let func = if is_renamed(k) {
            call_site_func(&mut b, f, &t, k, &names, &mut name)?
        } else {
            func_for(&mut b, f, &mut func_of_ps, ps, &names, &mut name)?
        };
        // Node k's own frame, in place of its proc-dynamic (read above, and not read again).
        t.pd[k] = b.frame(func);
        let parent = t.parent[k];
        if parent != NONE {
            let css = t.css[k] as usize;
            // The caller's func, from its own frame (a parent comes before its children).
            let own = t.pd[parent as usize];
            let caller = b.profile().frames.func[own as usize];
            // The frame of the call place, in place of the call site (read here only).
            t.css[k] = if is_renamed(parent as usize) {
                frame_at_line(&mut b, caller, f.css[css].line)
            } else {
                // A call site belongs to one procedure: its frame is the same in every caller.
                if frame_of_css[css] == NONE {
                    frame_of_css[css] = frame_at_line(&mut b, caller, f.css[css].line);
                }
                frame_of_css[css]
            };
        }
    }
    Ok((b, t))
}

/// The stacks and sample rows of [`to_profile`], its second pass, after [`name_nodes`]: reads
/// the file's call-site-dynamics (and the input) only. The tree's `node_of`, once the links are
/// sorted, and `spare` (tables done with, such as the file's `refs` and `ref_css`) become the
/// storage of the IR's stack table and sample stack column
/// ([`profconv_plugin::ir::BulkBuilder::reuse_storage`]): pages already touched, not fresh ones.
pub(crate) fn add_rows(
    f: &DeepFile<'_>,
    mut t: PdTree,
    b: ProfileBuilder,
    spare: [Vec<u32>; 2],
) -> Result<Profile, PluginError> {
    let n = t.len();
    let (own_frame, call_frame) = (&t.pd, &t.css);
    // Stacks and samples, in preorder (a parent's stacks before its children's). A separate
    // pass from the names: with fewer memory streams at a time, both passes run faster than
    // one merged pass (measured: 15-25 % for the whole parse).
    let mut b = b.into_bulk();
    // The other links (recursion, clique members), by the node they reach, each node's in walk
    // order: their costs go into that node's row, their calls as recursive calls, added while
    // the row is made (adding them afterwards into rows at random places cost a cache miss
    // per column and link).
    let mut links: Vec<u64> = t
        .link_csds
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let callee = f.csd.get(c as usize).map_or(0, |r| r.callee);
            let k = t.node_of.get(callee as usize).copied().unwrap_or(NONE);
            (u64::from(k) << 32) | i as u64
        })
        .collect();
    links.sort_unstable();
    // No more capacity than the columns can take (stack ids of 2 per node at most), so that a
    // file of many links keeps no part of its tables alive with the profile.
    let fit = |mut v: Vec<u32>, most: usize| {
        v.clear();
        v.shrink_to(most);
        v
    };
    let [prefix, frame] = spare;
    b.reuse_storage(
        fit(prefix, 2 * n),
        fit(frame, 2 * n),
        fit(std::mem::take(&mut t.node_of), n),
    );
    b.reserve_stacks(2 * n);
    b.reserve_samples(n);
    let mut next_link = 0;
    // The first link (in walk order) whose costs cannot be added: the error the links give,
    // reported after the tree edges' (whose errors come first).
    let mut link_error: Option<(usize, PluginError)> = None;
    // The nodes on the path from the root to the current one, each with its own stack, the
    // stack its own frame is pushed on, and the last call place (frame, stack) made under it,
    // which its next children from the same place share. Nodes are in depth-first preorder
    // (as `build_tree` numbers them), so a node's parent is on the path of the node before.
    let mut path: Vec<PathEntry> = Vec::new();
    let mut row = [0i64; COLUMNS.len()];
    let mut ms = Measures::default();
    for k in 0..n {
        let parent = t.parent[k];
        let pre = if parent == NONE {
            path.clear();
            NONE
        } else {
            while path.last().is_some_and(|e| e.node != parent) {
                path.pop();
            }
            let Some(e) = path.last_mut() else {
                return Err(PluginError::internal(format!(
                    "the proc-dynamic tree is not in depth-first preorder at node {k}"
                )));
            };
            let fr = call_frame[k];
            if fr == e.own_frame {
                e.own_stack // a call site without a line
            } else if e.last_frame == fr {
                e.last_stack
            } else {
                let s = b.push_stack(e.prefix, fr).map_err(ir_error)?;
                e.last_frame = fr;
                e.last_stack = s;
                s
            }
        };
        let own = own_frame[k];
        let own_stack = b.push_stack(pre, own).map_err(ir_error)?;
        path.push(PathEntry {
            node: k as u32,
            own_frame: own,
            own_stack,
            prefix: pre,
            last_frame: NONE,
            last_stack: NONE,
        });
        // The tree edge's costs and calls (the root has none, but gets its row: every node
        // exists in the IR, whatever its values).
        if t.csd[k] == 0 {
            ms = Measures::default();
        } else {
            f.measures_into(t.csd[k], &mut ms)?;
        }
        fill_row(&mut row, &ms, ms.calls, 0);
        while let Some(&key) = links.get(next_link) {
            if key >> 32 != k as u64 {
                break;
            }
            next_link += 1;
            let i = key as u32 as usize;
            if link_error.as_ref().is_some_and(|e| e.0 < i) {
                continue;
            }
            let c = t.link_csds[i];
            if let Err(e) = add_link(f, c, &mut row, &mut ms) {
                link_error = Some((i, e));
            }
        }
        b.push_row(own_stack, &row).map_err(ir_error)?;
    }
    if let Some((_, e)) = link_error {
        return Err(e);
    }
    if next_link != links.len() {
        return Err(PluginError::internal(
            "a recursion link reaches no node of the tree".to_string(),
        ));
    }
    Ok(b.finish())
}

/// A node on the path from the root in the stacks and rows pass of [`to_profile`].
struct PathEntry {
    node: u32,
    own_frame: u32,
    own_stack: u32,
    /// The stack its own frame is pushed on.
    prefix: u32,
    /// The last call place made under it: its frame and stack.
    last_frame: u32,
    last_stack: u32,
}

/// Adds the costs of link `c` (a call-site-dynamic that is not its callee's tree edge) into
/// the row of its callee's node, its calls as recursive calls; on an overflow, the row is
/// unchanged.
fn add_link(
    f: &DeepFile<'_>,
    c: u32,
    row: &mut [i64; COLUMNS.len()],
    ms: &mut Measures,
) -> Result<(), PluginError> {
    f.measures_into(c, ms)?;
    let mut add = [0i64; COLUMNS.len()];
    fill_row(&mut add, ms, 0, ms.calls);
    let mut sum = *row;
    for (s, &v) in sum.iter_mut().zip(&add) {
        match s.checked_add(v) {
            Some(x) => *s = x,
            None => {
                return Err(PluginError::invalid_input(format!(
                    "the values of proc-dynamic {} overflow 64 bits",
                    f.csd[c as usize].callee
                ))
                .at_offset(f.csd[c as usize].offset));
            }
        }
    }
    *row = sum;
    Ok(())
}

/// How many nodes ahead the naming walk over the tree starts loading records. A node's
/// proc-static and call-site records are at random places in the input and in the record
/// tables, each reached through a table entry that is itself a cache (and TLB) miss on a large
/// file; the loads are started in stages `AHEAD` nodes apart, each stage using what the one
/// before loaded, so they are in the caches when their node's turn comes. (The measurements
/// read in the second walk were tried the same way: no change, as the tree's order follows the
/// file's there.)
const AHEAD: usize = 8;

/// Starts loading what naming a later node needs: the proc-dynamic entry of node
/// `k + 3 * AHEAD`, the proc-static entry of node `k + 2 * AHEAD`, and the proc-static record in
/// the input of node `k + AHEAD`.
#[inline]
fn prefetch_proc_head(f: &DeepFile<'_>, t: &PdTree, k: usize) {
    if let Some(&pd) = t.pd.get(k + 3 * AHEAD) {
        prefetch_index::prefetch_index(&f.pd, pd as usize);
    }
    if let Some(&pd) = t.pd.get(k + 2 * AHEAD) {
        let ps = f.pd.get(pd as usize).map_or(0, |p| p.ps);
        prefetch_index::prefetch_index(&f.ps, ps as usize);
    }
    if let Some(&pd) = t.pd.get(k + AHEAD) {
        let ps = f.pd.get(pd as usize).map_or(0, |p| p.ps);
        let at = f.ps.get(ps as usize).map_or(0, |p| p.offset);
        prefetch_index::prefetch_index(f.data, at as usize);
    }
}

/// An IR builder error: the appends are checked, and a check failing here is a bug.
#[cold]
fn ir_error(e: IrError) -> PluginError {
    PluginError::internal(format!("building the IR: {e}"))
}

#[inline]
fn fill_row(row: &mut [i64; COLUMNS.len()], ms: &Measures, calls: i64, recursive_calls: i64) {
    for (k, src) in SOURCE.iter().enumerate() {
        row[k] = match src {
            Some(i) => ms.values[*i],
            None if k == 1 => calls,
            None => recursive_calls,
        };
    }
}

/// The frame of `func` at a call site's line (line 0: unknown).
fn frame_at_line(b: &mut ProfileBuilder, func: u32, line: u32) -> u32 {
    if line == 0 {
        b.frame(func)
    } else {
        b.frame_at(func, None, Some(line))
    }
}

/// Nodes that share their parent and procedure with a sibling reached from another call site:
/// `-O call-sites` names them apart.
fn same_procedure_siblings(f: &DeepFile<'_>, t: &PdTree) -> Vec<bool> {
    let mut keyed: Vec<(u32, u32, u32, u32)> = (1..t.len())
        .map(|n| (t.parent[n], f.pd[t.pd[n] as usize].ps, t.css[n], n as u32))
        .collect();
    keyed.sort_unstable();
    let mut renamed = vec![false; t.len()];
    // Only siblings from two call sites or more: those of one site (instances through one
    // higher-order or callback site) would get one name, and be one node again anyway.
    for group in keyed.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        if group.first().map(|g| g.2) != group.last().map(|g| g.2) {
            for g in group {
                renamed[g.3 as usize] = true;
            }
        }
    }
    renamed
}

/// The func of node `n` named with its call site: `NAME [FILE:LINE GOAL_PATH]`.
fn call_site_func(
    b: &mut ProfileBuilder,
    f: &DeepFile<'_>,
    t: &PdTree,
    n: usize,
    names: &ProcNames,
    name: &mut String,
) -> Result<u32, PluginError> {
    let ps = f.pd[t.pd[n] as usize].ps;
    let p = f.proc_head(ps)?;
    names.write(ps, &p.label, name);
    let site = f.call_site_text(t.css[n])?;
    let css = &f.css[t.css[n] as usize];
    let site_file = if site.file.is_empty() {
        f.proc_head(css.owner)?.file
    } else {
        site.file
    };
    let _ = write!(name, " [{}", lossy(site_file));
    // Line 0 is no line.
    if css.line != 0 {
        let _ = write!(name, ":{}", css.line);
    }
    if !site.goal_path.is_empty() {
        let _ = write!(name, " {}", lossy(site.goal_path));
    } else if css.line == 0 {
        // Nothing else tells such sites apart (the runtime's callback sites under the root):
        // the call-site-static's number does.
        let _ = write!(name, " #{}", t.css[n]);
    }
    name.push(']');
    let file = lossy(p.file);
    let module = lossy(proc_module(&p.label));
    Ok(b.func_with(
        name,
        (!file.is_empty()).then_some(&*file),
        (p.line != 0).then_some(p.line),
        (!module.is_empty()).then_some(&*module),
    ))
}

fn func_for(
    b: &mut ProfileBuilder,
    f: &DeepFile<'_>,
    func_of_ps: &mut [u32],
    ps: u32,
    names: &ProcNames,
    name: &mut String,
) -> Result<u32, PluginError> {
    let cached = func_of_ps[ps as usize];
    if cached != NONE {
        return Ok(cached);
    }
    let p = f.proc_head(ps)?;
    names.write(ps, &p.label, name);
    let file = lossy(p.file);
    let module = lossy(proc_module(&p.label));
    let line = (p.line != 0).then_some(p.line);
    let func = b.func_with(
        name,
        (!file.is_empty()).then_some(&*file),
        line,
        (!module.is_empty()).then_some(&*module),
    );
    func_of_ps[ps as usize] = func;
    Ok(func)
}

/// Header facts and what the conversion did, as metadata (insertion order is fixed).
fn add_meta(b: &mut ProfileBuilder, f: &DeepFile<'_>, t: &PdTree) {
    let h = &f.header;
    b.add_meta("source_format", "deep");
    b.add_meta("deep_version", &h.version.to_string());
    b.add_meta("program_name", &lossy(h.program));
    b.add_meta("word_size", &h.word_size.to_string());
    b.add_meta("ticks_per_second", &h.ticks_per_sec.to_string());
    if h.ticks_per_sec > 0 {
        // The runtime's timer fires every 5 clock ticks (spec §8.4); mdprof counts 1 tick.
        b.add_meta("sample_interval_ms", &ms(5000, h.ticks_per_sec));
        b.add_meta("mdprof_sample_interval_ms", &ms(1000, h.ticks_per_sec));
    }
    b.add_meta("user_quanta", &h.user_quanta.to_string());
    b.add_meta("instrumentation_quanta", &h.instrument_quanta.to_string());
    b.add_meta("call_seqs", &h.call_seqs.to_string());
    b.add_meta("coverage", h.coverage.name());
    b.add_meta("proc_dynamics", &h.n_pd.to_string());
    b.add_meta("call_site_dynamics", &h.n_csd.to_string());
    b.add_meta("proc_statics", &h.n_ps.to_string());
    b.add_meta("call_site_statics", &h.n_css.to_string());
    b.add_meta("recursion_links", &t.link_csds.len().to_string());
}

/// `num / den` milliseconds as a short decimal (at most 6 fractional digits).
fn ms(num: u64, den: u64) -> String {
    let whole = num / den;
    let mut rem = num % den;
    let mut s = whole.to_string();
    if rem != 0 {
        s.push('.');
        for _ in 0..6 {
            rem *= 10;
            s.push(char::from(b'0' + (rem / den) as u8));
            rem %= den;
            if rem == 0 {
                break;
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_text() {
        assert_eq!(ms(5000, 100), "50");
        assert_eq!(ms(1000, 100), "10");
        assert_eq!(ms(5000, 60), "83.333333");
        assert_eq!(ms(5000, 1000), "5");
    }

    #[test]
    fn names() {
        let mut s = String::new();
        let func = Label::User {
            is_func: true,
            decl_module: b"float",
            def_module: b"float",
            name: b"float",
            arity: 2,
            mode: 0,
        };
        proc_name(&func, NameStyle::Short, &mut s);
        assert_eq!(s, "float.float/2");
        proc_name(&func, NameStyle::Mdprof, &mut s);
        assert_eq!(s, "float.float/2+1-0");
        let pred = Label::User {
            is_func: false,
            decl_module: b"list",
            def_module: b"list",
            name: b"append",
            arity: 3,
            mode: 1,
        };
        proc_name(&pred, NameStyle::Short, &mut s);
        assert_eq!(s, "list.append/3-1");
        proc_name(&pred, NameStyle::Mdprof, &mut s);
        assert_eq!(s, "list.append/3-1");
        let special = Label::Special {
            type_name: b"list",
            type_module: b"list",
            def_module: b"term_to_xml",
            pred_name: b"__Unify__",
            type_arity: 1,
            mode: 1,
        };
        proc_name(&special, NameStyle::Short, &mut s);
        assert_eq!(s, "__Unify__ for list.list/1 mode 1");
        proc_name(&special, NameStyle::Mdprof, &mut s);
        assert_eq!(s, "Unify for list.list/1 mode 1");
        assert_eq!(proc_module(&special), b"list");
        let mut s = String::new();
        for v in [0, 7, 10, 4_294_967_295] {
            s.clear();
            push_u32(&mut s, v);
            assert_eq!(s, v.to_string());
        }
    }

    #[test]
    fn mdprof_names_show_type_specialisations_as_mdprof_does() {
        let mut s = String::new();
        let array_pred = |name: &'static [u8]| Label::User {
            is_func: false,
            decl_module: b"array",
            def_module: b"array",
            name,
            arity: 5,
            mode: 0,
        };
        // A type specialisation, as the compiler names it (794 of them in the real mandelbrot
        // profile) and as mdprof shows it.
        let spec = array_pred(b"TypeSpecOf__pred_or_func__merge_subarrays__[T = string]_0_1");
        proc_name(&spec, NameStyle::Mdprof, &mut s);
        assert_eq!(s, "array.merge_subarrays/5-0 [T = string]");
        proc_name(&spec, NameStyle::Short, &mut s);
        assert_eq!(
            s,
            "array.TypeSpecOf__pred_or_func__merge_subarrays__[T = string]_0_1/5"
        );
        proc_name(
            &array_pred(b"TypeSpecOf__lookup"),
            NameStyle::Mdprof,
            &mut s,
        );
        assert_eq!(s, "array.TypeSpecOf__lookup/5-0");
    }
}
