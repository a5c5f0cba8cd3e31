//! Callgrind emitter.
//!
//! The IR's stacks are a prefix tree of frames; callgrind wants a graph of functions: self cost
//! per (function, position) and, per call edge (caller, call site, callee), a call count and the
//! inclusive cost spent in the callee. Everything is computed per distinct stack (never per
//! sample and frame) in one iterative depth-first walk over the stack table's chains (runs of
//! consecutive stacks, each the child of the one before), so the work grows with the number of
//! distinct stacks and memory is read mostly in order. Call lines are summed per (call site,
//! callee) through a hash table keyed by those two numbers; only the distinct call lines are
//! sorted (never the map iterated), so the output is deterministic.
//!
//! * **Functions** are (object, file, name) triples: the IR func's resource, file and name. IR
//!   funcs that differ only in their first line are one callgrind function (readers identify
//!   functions by object, file and name). A missing file or object is written `???`, as
//!   callgrind does; an empty name too (name compression cannot define an empty name).
//! * **Positions** are the frame's line (0: no line); `positions: instr line` with the frame's
//!   address (0 when it has none) when any frame of the profile has an address. A call's target
//!   position (`calls=N TARGET`) is the callee's first line (the IR func's line, else 0).
//! * **Self costs**: the values of the samples on a stack go to its leaf function at the leaf
//!   frame's position.
//! * **Inlined code**: a stack whose function has its parent's name and object and another file
//!   (the reader's reading of `fi=`/`fe=` code) is no call: its self costs and calls are written
//!   in the parent function's block under `fi=`, then `fe=` ([`inlined_stacks`]); except a
//!   piece inside a piece, and a (function, piece) pair with a call anywhere in the `calls`
//!   column, which stay calls.
//! * **Inclusive costs on call lines**: a sample's value is charged, for every function on its
//!   stack except the root's, to the call into that function's *outermost* frame on the stack.
//!   Each sample is thus counted at most once per call edge and at most once in the incoming
//!   calls of every function, which is what callgrind_annotate (`--inclusive=yes`) and
//!   KCachegrind show as a function's inclusive cost: it never exceeds the total, even with
//!   recursion, and self-recursive edges (`f -> f`) carry no cost. One walk over the stacks.
//!   A function that starts stacks and is also called gets a call from a synthetic `(root)`
//!   with its root subtrees' costs ([`RootEntries`]). A call of no cost that closes a cycle of
//!   calls (made only from inside recursion, or of zero samples) is left out when its callee has
//!   another call that stays: gprof2dot cannot apportion weightless edges in cycles. The header
//!   counts what was left out.
//! * **Call counts**: the `calls` column's exact counts; else, for `ORDERED` profiles, seed 003's
//!   estimate (consecutive samples of one thread that share a prefix are the same calls); else
//!   a lower bound, the number of distinct calling contexts (caller stacks) of the edge. The
//!   header says which.

use foldhash::fast::FixedState;
use hashbrown::HashMap;
use profconv_plugin::ir::strings::order_by_bytes;
use profconv_plugin::ir::{NO_ADDRESS, NONE, ProfileRef, ValueKind, path_sums};
use profconv_plugin::{PluginError, unknown_value_type};
use std::io::Write;

/// What to write.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmitOptions<'a> {
    /// The only weight column to write (default: every weight column, in column order).
    pub value: Option<&'a str>,
}

/// Where the `calls=` counts come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallRule {
    /// The profile's `calls` column.
    Exact,
    /// Seed 003's estimate from the sample order.
    Estimated,
    /// Distinct calling contexts: a lower bound.
    Contexts,
}

/// Writes `p` as a callgrind profile (after checking it with [`ProfileRef::validate`]).
pub fn emit_callgrind(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: EmitOptions<'_>,
) -> Result<(), PluginError> {
    p.validate()?;
    emit_callgrind_validated(p, out, opts)
}

/// Writes `p`, which has passed [`ProfileRef::validate`], as a callgrind profile. The plugin
/// entry point uses this: the SDK validates every profile a host passes to an emitter. An
/// invalid profile may make it panic (an index out of range).
pub fn emit_callgrind_validated(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: EmitOptions<'_>,
) -> Result<(), PluginError> {
    let cols = weight_columns(p, opts.value)?;
    let nc = cols.len();
    let calls_col = p
        .value_type_index("calls")
        .filter(|&c| p.value_types[c].kind == ValueKind::Count);
    for &c in &cols {
        if let Some(i) = p.sample_values[c].iter().position(|&v| v < 0) {
            return Err(PluginError::unsupported(format!(
                "sample {i} has a negative {} ({}): callgrind costs are unsigned",
                p.value_type_name(c),
                p.sample_values[c][i]
            )));
        }
    }
    // A calls column with no call in it (`-T invert` zeroes counts: no node of an inverted tree
    // is a call) counts nothing: the counts are then those of a profile without one.
    let empty_calls =
        calls_col.is_some_and(|c| p.n_samples() > 0 && p.sample_values[c].iter().all(|&v| v == 0));
    let rule = if calls_col.is_some() && !empty_calls {
        CallRule::Exact
    } else if p.is_ordered() && !empty_calls {
        CallRule::Estimated
    } else {
        CallRule::Contexts
    };
    // The grand totals, checked. Every value is at least 0, so no sum of some of them (a self
    // cost, a subtree total, a call line's cost) can overflow once these fit.
    let mut grand = vec![0i64; nc];
    for (k, &c) in cols.iter().enumerate() {
        for &v in p.sample_values[c] {
            grand[k] = checked_add(grand[k], v)?;
        }
    }

    let ns = p.n_stacks();
    if ns >= GROUP_LIMIT as usize {
        // Call-line groups are numbered below 2^31 (see `Acc`).
        return Err(PluginError::unsupported(format!(
            "{ns} stacks: the callgrind emitter handles fewer than 2^31"
        )));
    }
    let cg = CgFuncs::new(p);
    let inlined = inlined_stacks(p, &cg, calls_col);
    let sites = Sites::new(p, &cg, &inlined);
    let n_sites = sites.cg.len();
    if n_sites >= LIVE as usize {
        return Err(PluginError::unsupported(format!(
            "{n_sites} call sites: the callgrind emitter handles fewer than 2^31"
        )));
    }

    // Per stack: call site, self values (the walk below sums them into subtree totals) and
    // whether a sample ends there (then: on it or below). Per call site: self costs, and
    // whether a sample ends there.
    let mut nodes: Vec<Node> = p
        .stack_frame
        .iter()
        .map(|&fr| Node {
            cost: 0,
            site: sites.of_frame[fr as usize],
        })
        .collect();
    for (&(q, _), &site) in inlined.iter().zip(&sites.of_inlined) {
        nodes[q as usize].site = site;
    }
    drop(inlined);
    let mut rest = vec![0i64; ns * (nc - 1)];
    let mut site_self = vec![0i64; n_sites * nc];
    let mut site_sampled = vec![false; n_sites];
    let mut calls = vec![0i64; if rule == CallRule::Contexts { 0 } else { ns }];
    for i in 0..p.n_samples() {
        let s = p.sample_stack[i] as usize;
        let node = &mut nodes[s];
        let site = (node.site & !LIVE) as usize;
        node.site |= LIVE;
        node.cost += p.sample_values[cols[0]][i];
        site_sampled[site] = true;
        for (k, &c) in cols.iter().enumerate() {
            let v = p.sample_values[c][i];
            if k > 0 {
                rest[s * (nc - 1) + k - 1] += v;
            }
            site_self[site * nc + k] += v;
        }
        if let Some(c) = calls_col.filter(|_| rule == CallRule::Exact) {
            calls[s] = calls[s].saturating_add(p.sample_values[c][i].max(0));
        }
    }
    if rule == CallRule::Estimated {
        estimate_calls(p, &sites.frame_cg, &mut calls);
    }
    // Subtree totals, and the call lines: one per (caller's call site, callee), summed over
    // every stack with a parent that has a sample on it or below (or calls).
    let chains = Chains::new(p);
    let mut walk = Walk {
        edges: EdgeGroups::new(nc),
        open: vec![0u32; cg.names.len()],
        nodes,
        rest,
    };
    let cx = WalkCx {
        site_cg: &sites.cg,
        site_piece: &sites.piece,
        chains: &chains,
        calls: &calls,
        rule,
        nc,
    };
    walk.run(&cx);
    drop(chains);
    let Walk {
        edges,
        open,
        nodes,
        rest,
    } = walk;
    // What each function that starts a stack costs there (see `RootEntries`).
    let roots = RootEntries::new(p, &sites, &nodes, &rest, nc);
    drop((open, nodes, rest));
    let edges = edges.finish();

    let mut order: Vec<u32> = (0..edges.keys.len() as u32).collect();
    order.sort_unstable_by_key(|&g| edges.keys[g as usize]);
    let mut body_edges: Vec<MergedEdge> = order
        .iter()
        .map(|&g| {
            let g = g as usize;
            let key = edges.keys[g];
            let site = (key >> 32) as usize;
            MergedEdge {
                caller: sites.cg[site],
                piece: sites.piece[site],
                addr: sites.addr[site],
                line: sites.line[site],
                callee: key as u32,
                calls: edges.calls[g].max(0) as u64,
                cost: g * nc,
            }
        })
        .collect();
    let mut costs = edges.costs;

    // Root functions that are also called get their starts of stacks as calls from a caller of
    // their own (see `RootEntries`).
    let root_called = roots.called(&body_edges, &cg);
    let root_name = if root_called.contains(&true) {
        cg.unused_name(ROOT_CALLER)
    } else {
        String::new()
    };
    let mut cg = cg;
    let root_caller = roots.add_caller(
        &root_called,
        &mut cg,
        &root_name,
        &mut body_edges,
        &mut costs,
        |s| match rule {
            CallRule::Contexts => 1,
            _ => calls[s as usize].max(0) as u64,
        },
    );
    // Calls of no cost that close a cycle of calls: the calls made only from inside recursion
    // (the callee is already on every stack they are on), and calls whose samples are all 0
    // between functions that call each other. Left in, they make readers see cycles with
    // weightless edges, which gprof2dot cannot apportion (it asserts) once the cycle is called
    // from outside. They are left out when their callee has another call that stays, so
    // readers still know it is called; self-calls stay (every reader ignores them or counts
    // them as zero).
    let (dropped, dropped_calls) =
        leave_out_weightless_cycle_calls(&mut body_edges, &costs, nc, cg.names.len());
    let mut zero_calls = 0u64;
    for e in &mut body_edges {
        if e.calls == 0 {
            zero_calls += 1;
            e.calls = 1;
        }
    }

    let notes = Notes {
        rule,
        empty_calls,
        zero_calls,
        dropped: (dropped, dropped_calls),
        root_caller,
    };
    let mut w = Writer {
        out,
        buf: Vec::with_capacity(1 << 12),
        name_out: vec![0; cg.names.len()],
        file_out: vec![0; cg.files.len()],
        ob_out: vec![0; cg.obs.len()],
        next_name: 1,
        next_file: 1,
        next_ob: 1,
        has_addr: sites.has_addr,
    };
    w.header(p, &cg, &cols, calls_col, &notes, &grand)?;

    // Functions in order; per function its self lines (call sites in position order), then its
    // call lines.
    let sampled: Vec<u32> = (0..n_sites as u32)
        .filter(|&s| site_sampled[s as usize])
        .collect();
    let (mut si, mut ei) = (0usize, 0usize);
    let mut cur_ob = NONE;
    let mut cur_file = NONE;
    while si < sampled.len() || ei < body_edges.len() {
        let f = match (sampled.get(si), body_edges.get(ei)) {
            (Some(&s), Some(e)) => sites.cg[s as usize].min(e.caller),
            (Some(&s), None) => sites.cg[s as usize],
            (None, Some(e)) => e.caller,
            (None, None) => break,
        };
        w.function(&cg, f, &mut cur_ob, &mut cur_file)?;
        // Its own code, then each piece inlined into it (in file order) under `fi=`, then `fe=`
        // back to its file (readers take `fn=`'s file from the last `fl=`, `fi=` or `fe=`).
        let mut in_piece = false;
        loop {
            let s_piece = sampled
                .get(si)
                .filter(|&&s| sites.cg[s as usize] == f)
                .map(|&s| sites.piece[s as usize]);
            let e_piece = body_edges
                .get(ei)
                .filter(|e| e.caller == f)
                .map(|e| e.piece);
            let seg = |piece: u32| match piece {
                NONE => 0,
                c => cg.file_group[c as usize] + 1,
            };
            let piece = match (s_piece, e_piece) {
                (Some(a), Some(b)) => {
                    if seg(a) <= seg(b) {
                        a
                    } else {
                        b
                    }
                }
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => break,
            };
            if piece != NONE {
                w.file_of(b"fi=", &cg, piece as usize);
                w.flush_line()?;
                in_piece = true;
            }
            while si < sampled.len()
                && sites.cg[sampled[si] as usize] == f
                && sites.piece[sampled[si] as usize] == piece
            {
                let s = sampled[si] as usize;
                w.cost_line(
                    sites.addr[s],
                    sites.line[s],
                    &site_self[s * nc..(s + 1) * nc],
                )?;
                si += 1;
            }
            while ei < body_edges.len()
                && body_edges[ei].caller == f
                && body_edges[ei].piece == piece
            {
                let e = &body_edges[ei];
                w.call(&cg, f, e, &costs[e.cost..e.cost + nc])?;
                ei += 1;
            }
        }
        if in_piece {
            w.file_of(b"fe=", &cg, f as usize);
            w.flush_line()?;
        }
    }
    w.buf.clear();
    w.buf.extend_from_slice(b"\ntotals:");
    for &v in &grand {
        w.buf.push(b' ');
        push_u64(&mut w.buf, v as u64);
    }
    w.buf.push(b'\n');
    w.flush_line()?;
    Ok(())
}

/// The weight columns written as events.
fn weight_columns(p: &ProfileRef<'_>, value: Option<&str>) -> Result<Vec<usize>, PluginError> {
    if let Some(name) = value {
        let Some(c) = p.value_type_index(name) else {
            return Err(unknown_value_type(p, name));
        };
        if p.value_types[c].kind != ValueKind::Weight {
            return Err(PluginError::bad_option(format!(
                "option value={name}: value type '{name}' is a count, not a cost; callgrind events are costs"
            )));
        }
        return Ok(vec![c]);
    }
    let cols: Vec<usize> = (0..p.value_types.len())
        .filter(|&c| p.value_types[c].kind == ValueKind::Weight)
        .collect();
    if cols.is_empty() {
        return Err(PluginError::unsupported(
            "the profile has no weight (cost) column; callgrind needs at least one event",
        ));
    }
    Ok(cols)
}

fn checked_add(a: i64, b: i64) -> Result<i64, PluginError> {
    a.checked_add(b).ok_or_else(|| {
        PluginError::invalid_input(format!("value overflow: {a} + {b} does not fit in 64 bits"))
    })
}

/// Callgrind functions: IR funcs grouped by (resource, file, name), numbered in that order.
struct CgFuncs<'a> {
    /// Callgrind function of each IR func.
    of_func: Vec<u32>,
    /// Per callgrind function: name, file, object (None: `???`), first line (0: unknown).
    names: Vec<&'a str>,
    files: Vec<Option<&'a str>>,
    obs: Vec<Option<&'a str>>,
    line: Vec<u32>,
    /// Per callgrind function: index of its name, file and object among the distinct ones.
    name_group: Vec<u32>,
    file_group: Vec<u32>,
    ob_group: Vec<u32>,
}

impl<'a> CgFuncs<'a> {
    fn new(p: &ProfileRef<'a>) -> Self {
        let nf = p.n_funcs();
        // Names are told apart as readers read them back: two that read back the same (` f`
        // and `f`, a line break and a space) are one function, or the readers would merge them
        // anyway and see calls between them (a recursion the outermost rule did not know:
        // inclusive costs past 100 %). Few names read back otherwise, so only those are kept.
        let read_back: HashMap<u32, String, FixedState> = (0..p.strings.len() as u32)
            .filter_map(|s| read_back(p.strings.get(s)).map(|r| (s, r)))
            .collect();
        let bytes = |s: u32| -> &[u8] {
            if !read_back.is_empty()
                && let Some(r) = read_back.get(&s)
            {
                return r.as_bytes();
            }
            p.strings.get(s).as_bytes()
        };
        let opt = |s: u32| -> Option<&'a str> {
            let v = p.strings.get(s);
            (s != NONE && !v.is_empty()).then_some(v)
        };
        // Every string's rank in byte order (equal strings share one; 0 is kept for none),
        // by one radix sort, so that functions sort by integers: a comparison sort of
        // (object, file, name) string triples read them at random places (2 M shuffled names:
        // 6.5 s).
        let by_bytes = order_by_bytes(p.strings.len(), bytes, None);
        let mut rank = vec![0u32; p.strings.len()];
        let mut r = 0u32;
        for (k, &s) in by_bytes.iter().enumerate() {
            if k == 0 || bytes(by_bytes[k - 1]) != bytes(s) {
                r += 1;
            }
            rank[s as usize] = r;
        }
        // A missing file or object is written `???`, as one named so.
        let opt_rank = |s: u32| match s == NONE || bytes(s) == b"???" {
            true => 0,
            false => rank[s as usize],
        };
        let key = |f: usize| {
            (
                opt_rank(p.func_resource[f]),
                opt_rank(p.func_file[f]),
                rank[p.func_name[f] as usize],
            )
        };
        let keys: Vec<_> = (0..nf).map(key).collect();
        let mut order: Vec<u32> = (0..nf as u32).collect();
        order.sort_unstable_by_key(|&f| (keys[f as usize], f));
        let mut of_func = vec![0u32; nf];
        let (mut names, mut files, mut obs, mut line) = (vec![], vec![], vec![], vec![]);
        let mut prev = None;
        for &f in &order {
            let k = keys[f as usize];
            if prev != Some(k) {
                let fu = f as usize;
                names.push(p.strings.get(p.func_name[fu]));
                files.push(opt(p.func_file[fu]));
                obs.push(opt(p.func_resource[fu]));
                line.push(0u32);
                prev = Some(k);
            }
            let id = names.len() - 1;
            of_func[f as usize] = id as u32;
            let l = p.func_line[f as usize];
            if l != NONE && (line[id] == 0 || l < line[id]) {
                line[id] = l;
            }
        }
        let name_group = groups(&names);
        let file_group = groups(&files);
        let ob_group = groups(&obs);
        CgFuncs {
            of_func,
            names,
            files,
            obs,
            line,
            name_group,
            file_group,
            ob_group,
        }
    }

    /// `name`, with `'` appended while a function has that name as readers read it back (line
    /// breaks written as spaces, leading blanks dropped: [`read_back`]).
    fn unused_name(&self, name: &str) -> String {
        let read_back: hashbrown::HashSet<String, FixedState> = self
            .names
            .iter()
            .map(|n| read_back(n).unwrap_or_else(|| n.to_string()))
            .collect();
        let mut name = name.to_string();
        while read_back.contains(&name) {
            name.push('\'');
        }
        name
    }

    /// Appends a function with no file, object or line, named `name`; returns its number.
    fn add_synthetic(&mut self, name: &'a str) -> u32 {
        let next = |g: &[u32]| g.iter().max().map_or(0, |&m| m + 1);
        // The same group as the functions without a file (or object), when there are some.
        let none_group = |values: &[Option<&str>], g: &[u32]| {
            values
                .iter()
                .position(Option::is_none)
                .map_or_else(|| next(g), |i| g[i])
        };
        let file_group = none_group(&self.files, &self.file_group);
        let ob_group = none_group(&self.obs, &self.ob_group);
        self.name_group.push(next(&self.name_group));
        self.file_group.push(file_group);
        self.ob_group.push(ob_group);
        self.names.push(name);
        self.files.push(None);
        self.obs.push(None);
        self.line.push(0);
        (self.names.len() - 1) as u32
    }
}

/// For each item, a number for its value: equal values get the same number, numbered in
/// first-seen order.
fn groups<T: Eq + std::hash::Hash + Copy>(items: &[T]) -> Vec<u32> {
    let mut seen: HashMap<T, u32, FixedState> =
        HashMap::with_capacity_and_hasher(items.len(), FixedState::with_seed(0x6367));
    items
        .iter()
        .map(|&v| {
            let n = seen.len() as u32;
            *seen.entry(v).or_insert(n)
        })
        .collect()
}

/// Call sites: distinct (callgrind function, piece, address, line) of the frames, numbered in
/// that order, so sorting by site sorts by function, then piece, then position. A frame's site
/// has no piece; a stack of code inlined from another file into its parent's function
/// ([`inlined_stacks`]) gets a site of that function with a piece: the callgrind function the
/// code is of (same name and object, another file), written under `fi=` in its host's block.
struct Sites {
    /// Per frame: its callgrind function and its site.
    frame_cg: Vec<u32>,
    of_frame: Vec<u32>,
    /// Per inlined stack (as `inlined` lists them): its site.
    of_inlined: Vec<u32>,
    /// Per site: function, piece ([`NONE`]: its own code), address (0: none), line (0: none).
    cg: Vec<u32>,
    piece: Vec<u32>,
    addr: Vec<u64>,
    line: Vec<u32>,
    /// Whether any frame has an address (`positions: instr line`).
    has_addr: bool,
}

impl Sites {
    /// `inlined`: the stacks of inlined code, with the function they are inlined into.
    fn new(p: &ProfileRef<'_>, cg: &CgFuncs<'_>, inlined: &[(u32, u32)]) -> Self {
        let nfr = p.n_frames();
        let frame_cg: Vec<u32> = p
            .frame_func
            .iter()
            .map(|&f| cg.of_func[f as usize])
            .collect();
        let pos = |fr: usize| -> (u64, u32) {
            let addr = match p.frame_address[fr] {
                NO_ADDRESS => 0,
                a => a,
            };
            // A frame without a line (a leaf's own cost, in most readers) is placed at its
            // function's line when the profile knows it: readers then show the cost in the
            // function's source instead of at an unknown line 0.
            let line = match p.frame_line[fr] {
                NONE => cg.line[frame_cg[fr] as usize],
                l => l,
            };
            (addr, line)
        };
        // Entries below `nfr` are frames, those above inlined stacks; a piece sorts by its file
        // after the function's own code (0).
        let key = |e: u32| {
            let e = e as usize;
            if e < nfr {
                let (a, l) = pos(e);
                (frame_cg[e], 0, NONE, a, l)
            } else {
                let (q, host) = inlined[e - nfr];
                let fr = p.stack_frame[q as usize] as usize;
                let piece = frame_cg[fr];
                let (a, l) = pos(fr);
                (host, cg.file_group[piece as usize] + 1, piece, a, l)
            }
        };
        let mut order: Vec<u32> = (0..(nfr + inlined.len()) as u32).collect();
        order.sort_unstable_by_key(|&e| key(e));
        let mut of_frame = vec![0u32; nfr];
        let mut of_inlined = vec![0u32; inlined.len()];
        let (mut site_cg, mut piece, mut addr, mut line) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut prev = None;
        for &e in &order {
            let k = key(e);
            if prev != Some(k) {
                site_cg.push(k.0);
                piece.push(k.2);
                addr.push(k.3);
                line.push(k.4);
                prev = Some(k);
            }
            let site = (site_cg.len() - 1) as u32;
            match (e as usize).checked_sub(nfr) {
                None => of_frame[e as usize] = site,
                Some(i) => of_inlined[i] = site,
            }
        }
        Sites {
            frame_cg,
            of_frame,
            of_inlined,
            cg: site_cg,
            piece,
            addr,
            line,
            has_addr: p.frame_address.iter().any(|&a| a != NO_ADDRESS),
        }
    }
}

/// The stacks of code inlined from another file into their parent's function, with that
/// function, in stack order: a stack whose function has the same name and object as its
/// parent's and another file, under a parent that is not itself such a stack, when no stack of
/// that function under that parent's function has a call in the `calls` column (if there is
/// one). The callgrind reader reads `fi=`/`fe=` code so: a function of the same name in that
/// file, under the function it is inlined into, with no calls. Written as a call it was a
/// second function of that name in KCachegrind, called once, instead of code of the one
/// function in two files (callgrind_annotate shows both alike). A pair with a call somewhere
/// is calls throughout (a call line's count split over its caller's contexts leaves some
/// with none): half of it inlined would read back as another tree.
fn inlined_stacks(
    p: &ProfileRef<'_>,
    cg: &CgFuncs<'_>,
    calls_col: Option<usize>,
) -> Vec<(u32, u32)> {
    let ns = p.n_stacks();
    let cg_of = |s: usize| cg.of_func[p.frame_func[p.stack_frame[s] as usize] as usize] as usize;
    // Candidates: (stack, host), in stack order.
    let mut is_candidate = vec![false; ns];
    let mut out = Vec::new();
    for q in 0..ns {
        let s = p.stack_prefix[q];
        if s == NONE || is_candidate[s as usize] {
            continue;
        }
        let (h, f) = (cg_of(s as usize), cg_of(q));
        if cg.name_group[h] == cg.name_group[f]
            && cg.ob_group[h] == cg.ob_group[f]
            && cg.file_group[h] != cg.file_group[f]
        {
            is_candidate[q] = true;
            out.push((q as u32, h as u32));
        }
    }
    if let Some(c) = calls_col.filter(|_| !out.is_empty()) {
        let mut called: hashbrown::HashSet<(u32, u32), FixedState> = Default::default();
        for (i, &s) in p.sample_stack.iter().enumerate() {
            let (s, v) = (s as usize, p.sample_values[c][i]);
            if v != 0 && is_candidate[s] {
                let h = cg_of(p.stack_prefix[s] as usize) as u32;
                called.insert((h, cg_of(s) as u32));
            }
        }
        if !called.is_empty() {
            out.retain(|&(q, h)| !called.contains(&(h, cg_of(q as usize) as u32)));
        }
    }
    out
}

/// The stack tree as chains: a chain is a run of consecutive stacks, each the child of the one
/// before (a folded line's new frames, say), so the chains split `0..n_stacks` into ranges. A
/// chain's head (its first stack) is a root or a stack whose prefix is not the stack just before
/// it. Walking chains instead of stacks keeps the walk over consecutive memory.
struct Chains {
    /// Per chain: its head and the position in `attached` of the chains attached to its
    /// stacks; then (`n_stacks`, `attached.len()`). Chain `j` is `head[j]..head[j + 1]`.
    meta: Vec<(u32, u32)>,
    /// The chains that start at a root, ascending.
    roots: Vec<u32>,
    /// The chains attached to a stack, as `prefix << 32 | chain`, sorted: those attached to the
    /// stacks of chain `j` are `attached[meta[j].1..meta[j + 1].1]`, those attached to one stack
    /// too.
    attached: Vec<u64>,
}

impl Chains {
    fn new(p: &ProfileRef<'_>) -> Self {
        let (mut head, mut roots, mut attached) = (Vec::new(), Vec::new(), Vec::new());
        for (q, &par) in p.stack_prefix.iter().enumerate() {
            if par == NONE {
                roots.push(head.len() as u32);
                head.push(q as u32);
            } else if par as usize + 1 != q {
                attached.push(u64::from(par) << 32 | head.len() as u64);
                head.push(q as u32);
            }
        }
        attached.sort_unstable();
        let mut meta = Vec::with_capacity(head.len() + 1);
        let mut k = 0;
        for &h in &head {
            while k < attached.len() && (attached[k] >> 32) < u64::from(h) {
                k += 1;
            }
            meta.push((h, k as u32));
        }
        meta.push((p.stack_prefix.len() as u32, attached.len() as u32));
        Chains {
            meta,
            roots,
            attached,
        }
    }
}

/// One chain on the walk's path: its first and last stacks, the first one's prefix, the stack
/// being visited (its stacks are visited last to first, after the chains attached below them),
/// the chains attached to stacks above `at` (`attached[lo..rest]`) and those of `at` still to
/// walk (`attached[next..end]`).
struct ChainVisit {
    first: u32,
    last: u32,
    parent: u32,
    at: u32,
    lo: usize,
    rest: usize,
    next: usize,
    end: usize,
}

/// A stack, as the walk sees it (12 bytes: the walk is bound by memory traffic).
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
struct Node {
    /// Self value, then subtree total, of the first column (the others are in `Walk::rest`).
    cost: i64,
    /// Call site (its function is `Sites::cg[site]`), and [`LIVE`] when a sample is on the
    /// stack or below.
    site: u32,
}

/// Flag in [`Node::site`].
const LIVE: u32 = 1 << 31;

/// Call lines being summed: one group per (caller's site, callee), numbered in first-seen
/// order. The running sums live in the table's slots next to their keys (one memory access per
/// row); the costs of columns after the first in `rest`.
struct EdgeGroups {
    nc: usize,
    /// Open addressing, linear probing, keys stored inline ([`NO_KEY`]: empty slot), at most
    /// 3/4 full; the slot of a key is its product with a large odd constant, top bits.
    slots: Vec<(u64, Acc)>,
    len: usize,
    shift: u32,
    rest: Vec<i64>,
}

/// An empty slot's key (a real key's site is below 2^31).
const NO_KEY: u64 = u64::MAX;

/// One group's sums so far (with its key, 32 bytes: half a cache line).
#[derive(Clone, Copy)]
struct Acc {
    /// The group's number (below [`GROUP_LIMIT`]).
    g: u32,
    /// The last caller stack counted (distinct calling contexts).
    last_parent: u32,
    calls: i64,
    /// Cost in the first column.
    cost0: i64,
}

/// Call-line groups are numbered below this (they are fewer than the stacks).
const GROUP_LIMIT: u32 = 1 << 31;

const EMPTY_ACC: Acc = Acc {
    g: 0,
    last_parent: NONE,
    calls: 0,
    cost0: 0,
};

/// The groups, indexed by group number.
struct Groups {
    /// `site << 32 | callee`.
    keys: Vec<u64>,
    calls: Vec<i64>,
    /// `nc` per group.
    costs: Vec<i64>,
}

impl EdgeGroups {
    fn new(nc: usize) -> Self {
        EdgeGroups {
            nc,
            slots: vec![(NO_KEY, EMPTY_ACC); 1 << 10],
            len: 0,
            shift: 64 - 10,
            rest: Vec::new(),
        }
    }

    fn slot_of(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The slot holding `key`, or the empty one where it goes.
    fn find(&self, key: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = self.slot_of(key);
        loop {
            let k = self.slots[i].0;
            if k == key || k == NO_KEY {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table.
    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![(NO_KEY, EMPTY_ACC); n]);
        self.shift -= 1;
        for (key, acc) in old {
            if key != NO_KEY {
                let i = self.find(key);
                self.slots[i] = (key, acc);
            }
        }
    }

    /// Adds the call from stack `parent` (at `site`) to a stack of `callee`: its subtree total
    /// (first column, other columns) when it is the callee's outermost frame, and `calls` calls
    /// (`None`: count distinct parents instead).
    fn add(
        &mut self,
        site: u32,
        callee: u32,
        parent: u32,
        outer: Option<(i64, &[i64])>,
        calls: Option<i64>,
    ) {
        let key = u64::from(site) << 32 | u64::from(callee);
        let mut i = self.find(key);
        if self.slots[i].0 == NO_KEY {
            if (self.len + 1) * 4 > self.slots.len() * 3 {
                self.grow();
                i = self.find(key);
            }
            let g = self.len as u32;
            self.len += 1;
            self.slots[i] = (key, Acc { g, ..EMPTY_ACC });
            self.rest.resize(self.rest.len() + self.nc - 1, 0);
        }
        let acc = &mut self.slots[i].1;
        if let Some((cost0, more)) = outer {
            acc.cost0 += cost0;
            if self.nc > 1 {
                let g = acc.g as usize * (self.nc - 1);
                for (r, &v) in self.rest[g..g + self.nc - 1].iter_mut().zip(more) {
                    *r += v;
                }
            }
        }
        match calls {
            Some(n) => acc.calls = acc.calls.saturating_add(n),
            None => {
                if acc.last_parent != parent {
                    acc.calls += 1;
                    acc.last_parent = parent;
                }
            }
        }
    }

    /// The groups by number (the map's order does not matter: each goes to its own slot).
    fn finish(self) -> Groups {
        let (n, nc) = (self.len, self.nc);
        let mut out = Groups {
            keys: vec![0; n],
            calls: vec![0; n],
            costs: vec![0; n * nc],
        };
        for (key, acc) in self.slots.into_iter().filter(|s| s.0 != NO_KEY) {
            let g = acc.g as usize;
            out.keys[g] = key;
            out.calls[g] = acc.calls;
            out.costs[g * nc] = acc.cost0;
            out.costs[g * nc + 1..(g + 1) * nc]
                .copy_from_slice(&self.rest[g * (nc - 1)..(g + 1) * (nc - 1)]);
        }
        out
    }
}

/// What the depth-first walk reads.
struct WalkCx<'a> {
    /// Callgrind function of each call site.
    site_cg: &'a [u32],
    /// Piece of each call site ([`NONE`]: none): a stack of inlined code is no call.
    site_piece: &'a [u32],
    chains: &'a Chains,
    calls: &'a [i64],
    rule: CallRule,
    nc: usize,
}

impl WalkCx<'_> {
    /// Callgrind function of a stack.
    fn cg(&self, node: Node) -> u32 {
        self.site_cg[(node.site & !LIVE) as usize]
    }
}

/// The walk's state: the call lines so far, how many stacks of each function are open on the
/// current path, and per stack its [`Node`] and its costs in the columns after the first
/// (`nc - 1` per stack): self values, then the subtree's totals once its children are closed.
struct Walk {
    edges: EdgeGroups,
    open: Vec<u32>,
    nodes: Vec<Node>,
    rest: Vec<i64>,
}

impl Walk {
    /// Depth-first over the chains, iteratively. On entering a chain, its stacks are opened
    /// (first to last); then, from its last stack back to its first, each stack `s` walks the
    /// chains attached to it, then is closed: with just the path from a root to `s` open and
    /// its children's subtrees summed, it adds the calls into its children (the next stack of
    /// the chain and the heads attached to `s`) and passes its totals to its prefix.
    fn run(&mut self, cx: &WalkCx<'_>) {
        let mut path: Vec<ChainVisit> = Vec::new();
        for &root in &cx.chains.roots {
            path.push(self.open_chain(cx, root as usize, NONE));
            while let Some(v) = path.last_mut() {
                if v.next < v.end {
                    let chain = cx.chains.attached[v.next] as u32 as usize;
                    v.next += 1;
                    let at = v.at;
                    let visit = self.open_chain(cx, chain, at);
                    path.push(visit);
                    continue;
                }
                self.close(cx, v);
                if v.at == v.first {
                    path.pop();
                } else {
                    v.at -= 1;
                    v.attach_of_at(cx);
                }
            }
        }
    }

    /// Opens the stacks of chain `j` (whose head's prefix is `parent`), and stands at its last
    /// stack.
    fn open_chain(&mut self, cx: &WalkCx<'_>, j: usize, parent: u32) -> ChainVisit {
        let ((first, lo), (end, rest)) = (cx.chains.meta[j], cx.chains.meta[j + 1]);
        for node in &self.nodes[first as usize..end as usize] {
            self.open[cx.cg(*node) as usize] += 1;
        }
        let mut v = ChainVisit {
            first,
            last: end - 1,
            parent,
            at: end - 1,
            lo: lo as usize,
            rest: rest as usize,
            next: rest as usize,
            end: rest as usize,
        };
        // Touch what entering each chain attached to this one (soon) reads first: its first
        // and last stacks and the end of its own attached list. Independent loads, so the
        // processor fetches those cache lines together instead of one miss at a time when each
        // chain is entered (large profiles do not fit in the caches).
        let mut touch = 0u64;
        for &a in &cx.chains.attached[v.lo..v.rest] {
            let j = a as u32 as usize;
            let ((head, lo), (end, rest)) = (cx.chains.meta[j], cx.chains.meta[j + 1]);
            touch ^= u64::from(self.nodes[head as usize].site);
            touch ^= u64::from(self.nodes[end as usize - 1].site);
            if rest > lo {
                touch ^= cx.chains.attached[rest as usize - 1];
            }
        }
        std::hint::black_box(touch);
        v.attach_of_at(cx);
        v
    }

    /// Closes stack `v.at` (its attached chains are done): the calls into its children, charged
    /// with the child's subtree totals when the callee is not open (its outermost frame); then
    /// its totals and liveness go to its prefix, and it leaves the path.
    fn close(&mut self, cx: &WalkCx<'_>, v: &ChainVisit) {
        let s = v.at as usize;
        let node = self.nodes[s];
        let site = node.site & !LIVE;
        if v.at < v.last {
            self.call(cx, site, s, s + 1);
        }
        for &a in &cx.chains.attached[v.rest..v.end] {
            let head = cx.chains.meta[a as u32 as usize].0;
            self.call(cx, site, s, head as usize);
        }
        let par = if v.at > v.first { v.at - 1 } else { v.parent };
        if par != NONE {
            let par = par as usize;
            let up = &mut self.nodes[par];
            up.cost += node.cost;
            up.site |= node.site & LIVE;
            let m = cx.nc - 1;
            if m > 0 {
                let (head, tail) = self.rest.split_at_mut(s * m);
                for (t, &x) in head[par * m..(par + 1) * m].iter_mut().zip(&tail[..m]) {
                    *t += x;
                }
            }
        }
        self.open[cx.cg(node) as usize] -= 1;
    }

    /// The call from stack `s` (at `site`) into its child `q`.
    fn call(&mut self, cx: &WalkCx<'_>, site: u32, s: usize, q: usize) {
        let q_calls = if cx.rule == CallRule::Contexts {
            0
        } else {
            cx.calls[q]
        };
        let node = self.nodes[q];
        if node.site & LIVE == 0 && q_calls <= 0
            || cx.site_piece[(node.site & !LIVE) as usize] != NONE
        {
            return;
        }
        let m = cx.nc - 1;
        let outer = (self.open[cx.cg(node) as usize] == 0)
            .then(|| (node.cost, &self.rest[q * m..(q + 1) * m]));
        let calls = (cx.rule != CallRule::Contexts).then_some(q_calls);
        self.edges.add(site, cx.cg(node), s as u32, outer, calls);
    }
}

impl ChainVisit {
    /// Sets the chains attached to `at` as the ones to walk next.
    fn attach_of_at(&mut self, cx: &WalkCx<'_>) {
        let attached = &cx.chains.attached;
        let mut k = self.rest;
        while k > self.lo && (attached[k - 1] >> 32) as u32 == self.at {
            k -= 1;
        }
        self.next = k;
        self.end = self.rest;
        self.rest = k;
    }
}

/// Seed 003's call-count estimate: walking the samples in order, per thread, the calls on the
/// new stack below its common part with the previous stack are new calls (+1 each). Stacks are
/// compared frame by frame, except that the first differing level counts as the same call when
/// both frames are of one function (the callee moved to another line; its caller did not).
fn estimate_calls(p: &ProfileRef<'_>, frame_cg: &[u32], calls: &mut [i64]) {
    let cg_of = |s: u32| frame_cg[p.stack_frame[s as usize] as usize];
    let ns = p.n_stacks();
    let depth = path_sums(ns, |s| p.stack_prefix[s], |_| 1);
    let mut prev = vec![NONE; p.n_threads().max(1)];
    let mut new_part: Vec<u32> = Vec::new();
    for i in 0..p.n_samples() {
        let t = (p.sample_thread_of(i) as usize).min(prev.len() - 1);
        let y0 = p.sample_stack[i];
        let x0 = prev[t];
        if x0 == y0 {
            continue;
        }
        prev[t] = y0;
        new_part.clear();
        let (mut x, mut y) = (x0, y0);
        // The previous stack's frame just below the common part, if any.
        let mut x_child = NONE;
        if x != NONE {
            while depth[x as usize] > depth[y as usize] {
                x_child = x;
                x = p.stack_prefix[x as usize];
            }
        }
        while y != NONE && (x == NONE || depth[y as usize] > depth[x as usize]) {
            new_part.push(y);
            y = p.stack_prefix[y as usize];
        }
        while x != y {
            x_child = x;
            x = p.stack_prefix[x as usize];
            new_part.push(y);
            y = p.stack_prefix[y as usize];
        }
        let mut n = new_part.len();
        if let Some(&top) = new_part.last() {
            if x_child != NONE && cg_of(x_child) == cg_of(top) {
                n -= 1;
            }
        }
        for &q in &new_part[..n] {
            calls[q as usize] = calls[q as usize].saturating_add(1);
        }
    }
}

/// What the header must say about the call lines.
#[derive(Clone, Copy)]
struct Notes {
    rule: CallRule,
    /// The profile has a calls column, but no call in it.
    empty_calls: bool,
    /// Call lines whose count was 0, written as 1.
    zero_calls: u64,
    /// Call lines left out, and their calls.
    dropped: (u64, u64),
    /// The synthetic caller of root functions that are also called elsewhere (its callgrind
    /// function), and how many functions it calls.
    root_caller: Option<(u32, usize)>,
}

/// Name of the synthetic caller `RootEntries` adds (`'` appended while a function of the
/// profile has it). Readers show it as a function; profconv's callgrind reader recognises it by
/// the header's [`ROOT_CALLER_DESC`] line and leaves its calls out, so a round trip keeps the
/// tree it had.
pub const ROOT_CALLER: &str = "(root)";

/// Start of the `desc:` line naming the synthetic caller; the name follows, then ` (`.
pub const ROOT_CALLER_DESC: &str = "Root caller: ";

/// Functions that start a stack (a root frame with samples on or below it).
///
/// Readers take a *called* function's inclusive cost as the sum of its incoming calls
/// (callgrind_annotate, KCachegrind, gprof2dot). A function that is a root on some stacks and
/// called on others would show only the second part: `X;Y 99` and `A;X 8` showed `X` at 8, not
/// 107, and `cksum;main;cksum 5` or `f;f 5` (called only from inside recursion below itself,
/// calls that carry nothing) showed `cksum` and `f` at 0 (callgrind_annotate counts self-calls
/// as incoming calls). So a root function that has any call into it gets one more, from a
/// synthetic caller, [`ROOT_CALLER`], carrying its root subtrees' costs: its incoming calls then
/// add up to its whole inclusive cost, as for every other function. That call is its call from
/// outside recursion, so calls into it from inside recursion are left out as for any function
/// (kept, they would close cycles of weightless edges, which gprof2dot cannot apportion; left
/// out with no root caller, `cksum` would be uncalled, and readers take an uncalled function's
/// self cost plus its calls, which counts the inner `cksum` twice).
struct RootEntries {
    /// Live root stacks: (callgrind function, stack), in stack order.
    stacks: Vec<(u32, u32)>,
    /// Their subtrees' totals, one per written column each.
    totals: Vec<i64>,
    nc: usize,
}

impl RootEntries {
    /// From the walk's subtree totals (`nodes`: the first column and [`LIVE`]; `rest`: the other
    /// columns), before they are dropped.
    fn new(
        p: &ProfileRef<'_>,
        sites: &Sites,
        nodes: &[Node],
        rest: &[i64],
        nc: usize,
    ) -> RootEntries {
        let (mut stacks, mut totals) = (Vec::new(), Vec::new());
        for (s, node) in nodes.iter().enumerate() {
            if p.stack_prefix[s] == NONE && node.site & LIVE != 0 {
                stacks.push((sites.cg[(node.site & !LIVE) as usize], s as u32));
                totals.push(node.cost);
                totals.extend_from_slice(&rest[s * (nc - 1)..(s + 1) * (nc - 1)]);
            }
        }
        RootEntries { stacks, totals, nc }
    }

    /// Per callgrind function: it starts a stack and `edges` has a call into it (a self-call
    /// too), or into a function of the same file and name in another object. Readers know a
    /// function by its file and name, the object only a label (`callgrind_annotate` merges the
    /// two, and counts their incoming calls as their inclusive cost): a root whose namesake is
    /// called needs its own call too, or its cost is missing there (a `-T invert`ed valgrind
    /// profile's `__sigsetjmp` of ld.so and of libc showed 26 of 83).
    fn called(&self, edges: &[MergedEdge], cg: &CgFuncs<'_>) -> Vec<bool> {
        let n_cg = cg.names.len();
        let key = |f: u32| (cg.file_group[f as usize], cg.name_group[f as usize]);
        let mut is_root = vec![false; n_cg];
        for &(f, _) in &self.stacks {
            is_root[f as usize] = true;
        }
        let mut called_keys: Vec<(u32, u32)> = edges.iter().map(|e| key(e.callee)).collect();
        called_keys.sort_unstable();
        called_keys.dedup();
        (0..n_cg as u32)
            .map(|f| is_root[f as usize] && called_keys.binary_search(&key(f)).is_ok())
            .collect()
    }

    /// Adds the synthetic caller, named `name`, to `cg` and its calls to the `called` functions
    /// to `edges` (after every other caller's, as its function is the last), each with the
    /// costs of the function's root stacks and the calls `count_of` gives for them (at most
    /// 2^63-1, as every call line); returns its function and how many it calls, or `None` if
    /// none.
    fn add_caller<'a>(
        self,
        called: &[bool],
        cg: &mut CgFuncs<'a>,
        name: &'a str,
        edges: &mut Vec<MergedEdge>,
        costs: &mut Vec<i64>,
        count_of: impl Fn(u32) -> u64,
    ) -> Option<(u32, usize)> {
        let nc = self.nc;
        // A root stack of no cost adds nothing to its function's incoming calls: no call.
        let entries: Vec<usize> = (0..self.stacks.len())
            .filter(|&k| {
                called[self.stacks[k].0 as usize]
                    && self.totals[k * nc..(k + 1) * nc].iter().any(|&v| v != 0)
            })
            .collect();
        if entries.is_empty() {
            return None;
        }
        let caller = cg.add_synthetic(name);
        let mut by_callee = entries;
        by_callee.sort_by_key(|&k| self.stacks[k]);
        let mut n = 0;
        for group in by_callee.chunk_by(|&a, &b| self.stacks[a].0 == self.stacks[b].0) {
            let at = costs.len();
            costs.resize(at + nc, 0);
            let mut count = 0u64;
            for &k in group {
                for (sum, &v) in costs[at..]
                    .iter_mut()
                    .zip(&self.totals[k * nc..(k + 1) * nc])
                {
                    // Parts of the grand total, which fits.
                    *sum += v;
                }
                count = count.saturating_add(count_of(self.stacks[k].1));
            }
            edges.push(MergedEdge {
                caller,
                piece: NONE,
                addr: 0,
                line: 0,
                callee: self.stacks[group[0]].0,
                // 0 (no call in a `calls` column) is written as 1 and counted in the header.
                calls: count.min(i64::MAX as u64),
                cost: at,
            });
            n += 1;
        }
        Some((caller, n))
    }
}

/// Leaves out the calls of [`emit_callgrind`]'s rule (of no cost in any column, caller and
/// callee in one cycle of the call graph: its strongly connected component) whose callee has
/// another call that stays (a call with a cost, or one from outside the cycle); returns how
/// many went and their calls.
fn leave_out_weightless_cycle_calls(
    edges: &mut Vec<MergedEdge>,
    costs: &[i64],
    nc: usize,
    n_cg: usize,
) -> (u64, u64) {
    let mut out_of: Vec<Vec<u32>> = vec![Vec::new(); n_cg];
    for (i, e) in edges.iter().enumerate() {
        if e.caller != e.callee {
            out_of[e.caller as usize].push(i as u32);
        }
    }
    let comp = crate::tree::components(n_cg, &out_of, |i| edges[i as usize].callee);
    let weightless = |e: &MergedEdge| {
        e.caller != e.callee
            && comp[e.caller as usize] == comp[e.callee as usize]
            && costs[e.cost..e.cost + nc].iter().all(|&v| v == 0)
    };
    let mut anchored = vec![false; n_cg];
    for e in edges.iter() {
        if e.caller != e.callee && !weightless(e) {
            anchored[e.callee as usize] = true;
        }
    }
    let (mut dropped, mut dropped_calls) = (0u64, 0u64);
    edges.retain(|e| {
        let keep = !weightless(e) || !anchored[e.callee as usize];
        if !keep {
            dropped += 1;
            dropped_calls = dropped_calls.saturating_add(e.calls);
        }
        keep
    });
    (dropped, dropped_calls)
}

struct MergedEdge {
    caller: u32,
    /// The piece of code inlined into the caller that calls ([`NONE`]: the caller's own code).
    piece: u32,
    addr: u64,
    line: u32,
    callee: u32,
    calls: u64,
    /// Offset of its costs in the shared cost vector.
    cost: usize,
}

struct Writer<'o, W: Write> {
    out: &'o mut W,
    buf: Vec<u8>,
    /// Compressed id given to each function / distinct file / distinct object (0: not written
    /// yet).
    name_out: Vec<u32>,
    file_out: Vec<u32>,
    ob_out: Vec<u32>,
    next_name: u32,
    next_file: u32,
    next_ob: u32,
    has_addr: bool,
}

impl<W: Write> Writer<'_, W> {
    fn flush_line(&mut self) -> Result<(), PluginError> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    fn header(
        &mut self,
        p: &ProfileRef<'_>,
        cg: &CgFuncs<'_>,
        cols: &[usize],
        calls_col: Option<usize>,
        notes: &Notes,
        grand: &[i64],
    ) -> Result<(), PluginError> {
        let Notes {
            rule,
            empty_calls,
            zero_calls,
            dropped,
            root_caller,
        } = *notes;
        let mut h = String::new();
        h.push_str("# callgrind format\nversion: 1\n");
        h.push_str(concat!(
            "creator: profconv ",
            env!("CARGO_PKG_VERSION"),
            "\n"
        ));
        h.push_str("# Written by profconv from its call-tree IR.\n");
        for (k, v) in p.meta_key.iter().zip(&p.meta_value) {
            h.push_str("# meta ");
            push_clean(&mut h, p.strings.get(*k));
            h.push_str(": ");
            push_clean(&mut h, p.strings.get(*v));
            h.push('\n');
        }
        h.push_str(
            "# Inclusive costs on call lines charge each sample once per function on its stack,\n\
             # to the call into that function's outermost frame: a function's incoming calls never\n\
             # add up to more than the total, even with recursion.\n",
        );
        if p.n_threads() > 1 {
            h.push_str(&format!(
                "# The profile's {} threads are merged into one part.\n",
                p.n_threads()
            ));
        }
        let omitted: Vec<&str> = (0..p.value_types.len())
            .filter(|&c| !cols.contains(&c) && Some(c) != calls_col)
            .map(|c| p.value_type_name(c))
            .collect();
        if empty_calls {
            h.push_str(
                "desc: Call counts: the profile's calls column holds no call (as after -T invert, which zeroes it: no node of an inverted tree is a call)\n",
            );
        }
        match rule {
            CallRule::Exact => h.push_str(
                "desc: Call counts: exact, from the profile's calls column\n",
            ),
            CallRule::Estimated => h.push_str(
                "desc: Call counts: ESTIMATED from the sample order (consecutive samples that share a call path are one call, as rbspy does), not measured\n",
            ),
            CallRule::Contexts if empty_calls => h.push_str(
                "desc: Call counts: LOWER BOUNDS, not measured: the number of distinct calling contexts of each call\n",
            ),
            CallRule::Contexts => h.push_str(
                "desc: Call counts: LOWER BOUNDS, not measured: the number of distinct calling contexts of each call (the profile has neither call counts nor sample order)\n",
            ),
        }
        if zero_calls > 0 {
            h.push_str(&format!(
                "desc: Call counts: {zero_calls} call line(s) have no call in the profile's calls column (a call already running when a trace began, code inlined from another file, a count apportioned to other contexts) and are written as calls=1\n"
            ));
        }
        if dropped.0 > 0 {
            h.push_str(&format!(
                "desc: Left out: {} call edge(s) of no cost that close a cycle of calls (made only from inside recursion, or whose samples are all 0) ({} call(s)): their callees have other callers\n",
                dropped.0, dropped.1
            ));
        }
        if let Some((f, n)) = root_caller {
            h.push_str("desc: ");
            h.push_str(ROOT_CALLER_DESC);
            h.push_str(cg.names[f as usize]);
            h.push_str(&format!(
                " (not a function of the profile: it calls the {n} function(s) that start stacks and are also called, with what they cost there, so that their incoming calls add up to their inclusive cost)\n"
            ));
        }
        if !omitted.is_empty() {
            h.push_str("desc: Not written: ");
            for (i, name) in omitted.iter().enumerate() {
                if i > 0 {
                    h.push_str(", ");
                }
                push_clean(&mut h, name);
            }
            h.push_str(" (columns that are not costs or not selected)\n");
        }
        let names = event_names(p, cols);
        for (k, &c) in cols.iter().enumerate() {
            let d = p.value_types[c].decimals;
            if d > 0 {
                h.push_str(&format!(
                    "desc: Scale: event {} is written in units of 10^-{d} {} (the profile has fractional values; 1.5 is written as {})\n",
                    names[k],
                    clean(p.value_type_unit(c)),
                    15u128 * 10u128.pow(d) / 10
                ));
            }
        }
        h.push_str(if self.has_addr {
            "positions: instr line\n"
        } else {
            "positions: line\n"
        });
        for (k, &c) in cols.iter().enumerate() {
            let d = p.value_types[c].decimals;
            // `NAME (count)` for the event NAME tells nothing a reader does not assume (profconv
            // reads an event without a long name as a count), and it hides KCachegrind's own
            // long names of valgrind's events (`Ir` is `Instruction Fetch`, `Bcm`
            // `Mispredicted Cond. Branch`): KCachegrind showed a valgrind file written back with
            // `Ir (count)`.
            if d == 0 && p.value_type_unit(c) == "count" && names[k] == p.value_type_name(c) {
                continue;
            }
            h.push_str("event: ");
            h.push_str(&names[k]);
            h.push_str(" : ");
            push_clean(&mut h, p.value_type_name(c));
            h.push_str(" (");
            push_clean(&mut h, p.value_type_unit(c));
            if d > 0 {
                h.push_str(&format!("/10^{d}"));
            }
            h.push_str(")\n");
        }
        h.push_str("events:");
        for n in &names {
            h.push(' ');
            h.push_str(n);
        }
        h.push_str("\nsummary:");
        for &v in grand {
            h.push_str(&format!(" {v}"));
        }
        h.push('\n');
        self.out.write_all(h.as_bytes())?;
        Ok(())
    }

    /// `ob=`/`fl=` when they change, then `fn=`.
    fn function(
        &mut self,
        cg: &CgFuncs<'_>,
        f: u32,
        cur_ob: &mut u32,
        cur_file: &mut u32,
    ) -> Result<(), PluginError> {
        let f = f as usize;
        self.buf.push(b'\n');
        let ob = cg.ob_group[f];
        if *cur_ob != ob && (cg.obs[f].is_some() || *cur_ob != NONE) {
            self.buf.extend_from_slice(b"ob=");
            self.compressed(Kind::Ob, ob, or_unknown(cg.obs[f].unwrap_or("")));
            *cur_ob = ob;
        }
        let file = cg.file_group[f];
        if *cur_file != file {
            self.file_of(b"fl=", cg, f);
            *cur_file = file;
        }
        self.buf.extend_from_slice(b"fn=");
        // One id per function, not per name: KCachegrind binds an id to the (object, file,
        // name) it is defined with and ignores `fl=`/`cfi=`/`cob=` on later references, so two
        // functions sharing a name's id were merged into the first one.
        self.compressed(Kind::Name, f as u32, or_unknown(cg.names[f]));
        self.flush_line()
    }

    fn call(
        &mut self,
        cg: &CgFuncs<'_>,
        caller: u32,
        e: &MergedEdge,
        costs: &[i64],
    ) -> Result<(), PluginError> {
        let (f, c) = (caller as usize, e.callee as usize);
        if cg.ob_group[c] != cg.ob_group[f] {
            self.buf.extend_from_slice(b"cob=");
            self.compressed(
                Kind::Ob,
                cg.ob_group[c],
                or_unknown(cg.obs[c].unwrap_or("")),
            );
        }
        self.buf.extend_from_slice(b"cfi=");
        self.compressed(
            Kind::File,
            cg.file_group[c],
            or_unknown(cg.files[c].unwrap_or("")),
        );
        self.buf.extend_from_slice(b"cfn=");
        self.compressed(Kind::Name, c as u32, or_unknown(cg.names[c]));
        self.buf.extend_from_slice(b"calls=");
        push_u64(&mut self.buf, e.calls);
        self.buf.push(b' ');
        if self.has_addr {
            self.buf.extend_from_slice(b"0 ");
        }
        push_u64(&mut self.buf, cg.line[c] as u64);
        self.buf.push(b'\n');
        self.flush_line()?;
        self.cost_line(e.addr, e.line, costs)
    }

    /// `[ADDR ]LINE COST...`, trailing zero costs left out (readers fill them in).
    fn cost_line(&mut self, addr: u64, line: u32, costs: &[i64]) -> Result<(), PluginError> {
        if self.has_addr {
            self.buf.extend_from_slice(b"0x");
            push_hex(&mut self.buf, addr);
            self.buf.push(b' ');
        }
        push_u64(&mut self.buf, line as u64);
        let n = costs.iter().rposition(|&v| v != 0).map_or(1, |i| i + 1);
        for &v in &costs[..n] {
            self.buf.push(b' ');
            push_u64(&mut self.buf, v.max(0) as u64);
        }
        self.buf.push(b'\n');
        self.flush_line()
    }

    /// `KEY(id) file` for the file of function `f` (`fl=`, `fi=`, `fe=`), without its line
    /// break.
    fn file_of(&mut self, key: &[u8], cg: &CgFuncs<'_>, f: usize) {
        self.buf.extend_from_slice(key);
        self.compressed(
            Kind::File,
            cg.file_group[f],
            or_unknown(cg.files[f].unwrap_or("")),
        );
    }

    /// `(id) name` the first time, `(id)` after.
    fn compressed(&mut self, kind: Kind, group: u32, name: &str) {
        let (table, next) = match kind {
            Kind::Name => (&mut self.name_out, &mut self.next_name),
            Kind::File => (&mut self.file_out, &mut self.next_file),
            Kind::Ob => (&mut self.ob_out, &mut self.next_ob),
        };
        let id = &mut table[group as usize];
        self.buf.push(b'(');
        if *id == 0 {
            *id = *next;
            *next += 1;
            push_u64(&mut self.buf, *id as u64);
            self.buf.extend_from_slice(b") ");
            push_name(&mut self.buf, name);
        } else {
            push_u64(&mut self.buf, *id as u64);
            self.buf.push(b')');
        }
        self.buf.push(b'\n');
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Name,
    File,
    Ob,
}

/// `name` as readers read it back from `fn=(ID) name` (and `fl=`, `ob=`), where that differs
/// from it: line breaks are written as spaces, and the blanks after `(ID)` are skipped, so its
/// leading ones are lost (its trailing ones are kept). `None` when it reads back as it is.
fn read_back(name: &str) -> Option<String> {
    let starts_blank = name.bytes().next().is_some_and(crate::is_blank);
    if !starts_blank && !name.is_empty() && !name.bytes().any(|b| b == b'\n' || b == b'\r') {
        return None;
    }
    let name = clean(name);
    Some(
        or_unknown(name.trim_start_matches(|c: char| c.is_ascii() && crate::is_blank(c as u8)))
            .to_string(),
    )
}

/// `???` for a name that readers would take as none: empty, or only whitespace (which they skip
/// after the id, leaving `fn=(3)`, a reference to an id never defined; a line break is written
/// as a space).
fn or_unknown(name: &str) -> &str {
    if name
        .trim_matches(|c: char| c.is_ascii() && crate::is_blank(c as u8))
        .is_empty()
    {
        "???"
    } else {
        name
    }
}

/// Event short names: the value type names with characters other than letters, digits and
/// `_` replaced by `_`, a letter first, unique. A name that is valid as it is keeps it (the first
/// of equal ones); the others get `_2`, `_3`, … past every name taken, so that no written name
/// stands for another column than the one of that name (`A-1` beside `A_1`: `A_1_2`, not `A_1`
/// for `A-1` and `A_1_2` for `A_1`).
fn event_names(p: &ProfileRef<'_>, cols: &[usize]) -> Vec<String> {
    let valid: Vec<(String, bool)> = cols
        .iter()
        .map(|&c| {
            let name = p.value_type_name(c);
            let n = event_base_name(name);
            let same = n == name;
            (n, same)
        })
        .collect();
    let mut taken: Vec<&str> = Vec::with_capacity(cols.len());
    let mut names: Vec<Option<String>> = vec![None; cols.len()];
    for (k, (n, same)) in valid.iter().enumerate() {
        if *same && !taken.contains(&n.as_str()) {
            taken.push(n);
            names[k] = Some(n.clone());
        }
    }
    let mut made: Vec<String> = Vec::new();
    for (k, (base, _)) in valid.iter().enumerate() {
        if names[k].is_some() {
            continue;
        }
        let mut n = base.clone();
        let mut i = 2;
        while taken.contains(&n.as_str()) || made.contains(&n) {
            n = format!("{base}_{i}");
            i += 1;
        }
        made.push(n.clone());
        names[k] = Some(n);
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

/// An event short name for the value type `name`, before `_2`, `_3`, … make it unique:
/// characters other than letters, digits and `_` replaced by `_`, and `e` put first when it
/// does not start with a letter.
pub(crate) fn event_base_name(name: &str) -> String {
    let mut n: String = name
        .chars()
        .map(|ch| match ch.is_ascii_alphanumeric() || ch == '_' {
            true => ch,
            false => '_',
        })
        .collect();
    if !n.starts_with(|ch: char| ch.is_ascii_alphabetic()) {
        n.insert(0, 'e');
    }
    n
}

/// A name on one line: line breaks become spaces.
fn push_name(buf: &mut Vec<u8>, name: &str) {
    buf.extend(
        name.bytes()
            .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
    );
}

fn clean(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn push_clean(out: &mut String, s: &str) {
    out.push_str(&clean(s));
}

fn push_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn push_hex(buf: &mut Vec<u8>, v: u64) {
    let digits = b"0123456789abcdef";
    let mut tmp = [0u8; 16];
    let mut i = tmp.len();
    let mut v = v;
    loop {
        i -= 1;
        tmp[i] = digits[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::{Profile, ProfileBuilder, flags};
    use std::collections::BTreeMap;

    fn emit(p: &Profile) -> String {
        let mut out = Vec::new();
        emit_callgrind(&p.view(), &mut out, EmitOptions::default()).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn body(text: &str) -> String {
        let start = text.find("\nsummary:").unwrap();
        text[start..].to_string()
    }

    #[test]
    fn each_sample_counts_once_per_callee() {
        // f;g;f;h: the sample goes to the calls into g and h (their outermost frames), not to
        // g -> f (f's outermost frame is the root). f, a root that g calls, gets its call from
        // the synthetic `(root)`, with the sample, and g -> f (no cost, from inside recursion)
        // is left out. Incoming sums: g 1, h 1, f 1, all <= 1; charging every call on the stack
        // would give f an incoming 2 with g -> f a 1 too.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["f", "g", "f", "h"], &[1]).unwrap();
        let text = emit(&b.finish());
        assert_eq!(
            body(&text),
            "\nsummary: 1\n\nfl=(1) ???\nfn=(1) f\ncfi=(1)\ncfn=(2) g\ncalls=1 0\n0 1\ncfi=(1)\ncfn=(3) h\ncalls=1 0\n0 1\n\nfn=(3)\n0 1\n\nfn=(4) (root)\ncfi=(1)\ncfn=(1)\ncalls=1 0\n0 1\n\ntotals: 1\n"
        );
    }

    /// What callgrind_annotate `--inclusive=yes` shows per function: for a function with a call
    /// into it (a self-call too), the sum of its incoming calls' costs; else its self cost plus
    /// its outgoing calls'.
    fn annotate_inclusive(text: &str) -> BTreeMap<String, i64> {
        // profconv's reader leaves out the calls of the caller the header names: unnamed, it
        // reads every call, as other readers do.
        let text = text.replace("\ndesc: Root caller:", "\ndesc: Root caller, unnamed:");
        let g = crate::parse_graph(
            &mut profconv_plugin::Input::from_slice(text.as_bytes()),
            &mut profconv_plugin::Context::silent(),
        )
        .unwrap();
        let name = |f: u32| g.str(g.funcs[f as usize].name).to_string();
        let (mut own, mut incoming) = (BTreeMap::new(), BTreeMap::new());
        for (i, sc) in g.selfs.iter().enumerate() {
            *own.entry(name(sc.func)).or_insert(0) += g.self_costs.row(i)[0];
        }
        for (i, e) in g.edges.iter().enumerate() {
            *own.entry(name(e.caller)).or_insert(0) += g.edge_costs.row(i)[0];
            *incoming.entry(name(e.callee)).or_insert(0) += g.edge_costs.row(i)[0];
        }
        own.extend(incoming);
        own
    }

    /// A function that starts stacks and is also called (by another function, or only by
    /// itself below its root frame) gets its root subtrees' costs as a call from `(root)`, so
    /// that readers summing incoming calls show its whole cost; profconv reads the file back
    /// without that caller.
    #[test]
    fn root_functions_that_are_also_called_get_a_caller() {
        type Stacks<'a> = &'a [(&'a [&'a str], i64)];
        let cases: [(Stacks, &[(&str, i64)]); 4] = [
            // X: 99 at the root, 8 under A (annotate showed 8).
            (
                &[(&["X", "Y"], 99), (&["A", "X"], 8)],
                &[("(root)", 99), ("A", 8), ("X", 107), ("Y", 99)],
            ),
            // cksum called only from inside recursion below itself (annotate showed 0).
            (
                &[
                    (&["cksum", "main", "cksum"], 5),
                    (&["cksum", "main"], 3),
                    (&["cksum"], 2),
                ],
                &[("(root)", 10), ("cksum", 10), ("main", 8)],
            ),
            // Only a self-call (annotate counts it as an incoming call: it showed 0).
            (&[(&["f", "f"], 5), (&["f"], 2)], &[("(root)", 7), ("f", 7)]),
            // Never called: no synthetic caller, self plus calls is exact.
            (
                &[(&["main", "f"], 5), (&["main"], 2)],
                &[("f", 5), ("main", 7)],
            ),
        ];
        for (stacks, want) in cases {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            for (names, v) in stacks {
                b.add_stack(names, &[*v]).unwrap();
            }
            let p = b.finish();
            let text = emit(&p);
            let want: BTreeMap<String, i64> =
                want.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            assert_eq!(annotate_inclusive(&text), want, "{stacks:?}");
            assert_eq!(
                text.contains("\ndesc: Root caller: (root) ("),
                want.contains_key("(root)")
            );
            // Read back, the synthetic caller's calls are left out: the same tree as from the
            // file without them.
            let mut without = String::new();
            let mut skip = false;
            for line in text.lines() {
                skip = (skip && !line.is_empty())
                    || (line.starts_with("fn=(") && line.ends_with(") (root)"));
                if !skip && !line.starts_with("desc: Root caller:") {
                    without.push_str(line);
                    without.push('\n');
                }
            }
            let read = |t: &str| {
                profconv_plugin::ir::testing::first_seen_tree(&read_profile(t).view(), false)
            };
            assert_eq!(read(&text), read(&without), "{stacks:?}");
            // Nor is it a function of the profile read back: written again, the file is the
            // same (no `(root)'` for a `(root)` left over).
            let back = read_profile(&text);
            assert!(
                !(0..back.funcs.name.len())
                    .any(|f| back.view().func_name_str(f as u32) == "(root)")
            );
            let again = emit(&back);
            assert!(!again.contains("(root)'"), "{stacks:?}: {again}");
        }
    }

    fn read_profile(text: &str) -> Profile {
        let mut warnings = Vec::new();
        let p = read_warning(text, &mut warnings);
        assert!(
            !warnings.iter().any(|w| w.contains("Root caller")),
            "{warnings:?}"
        );
        p
    }

    fn read_warning(text: &str, warnings: &mut Vec<String>) -> Profile {
        let mut sink = |_: u32, m: &str| warnings.push(m.to_string());
        let mut cx = profconv_plugin::Context::with_sink(&mut sink);
        let g = crate::parse_graph(
            &mut profconv_plugin::Input::from_slice(text.as_bytes()),
            &mut cx,
        )
        .unwrap();
        crate::build_profile(&g, &crate::BuildOptions::default(), &mut cx).unwrap()
    }

    /// Functions whose names read back alike (a leading blank skipped after `(ID)`, a line
    /// break written as a space, an empty name written `???`) are one function: the readers
    /// merge them anyway, and saw a self-call the outermost rule had not (callgrind_annotate
    /// showed `foo` at 200 %).
    #[test]
    fn names_that_read_back_alike_are_one_function() {
        for (x, y) in [
            (" foo", "foo"),
            ("\u{b}foo", "foo"),
            ("\u{c}\tfoo", "foo"),
            ("\u{b}", "???"),
            ("a\rb", "a b"),
            ("a\nb", "a b"),
            ("", "???"),
        ] {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_stack(&["main", x, y], &[3]).unwrap();
            let text = emit(&b.finish());
            let inclusive = annotate_inclusive(&text);
            assert!(
                inclusive.values().all(|&v| v <= 3),
                "{x:?}: {inclusive:?}\n{text}"
            );
            assert_eq!(inclusive.get(y), Some(&3), "{x:?}: {inclusive:?}");
            assert_eq!(
                text.matches("\nfn=(").count(),
                2,
                "{x:?}: two functions\n{text}"
            );
        }
        // A trailing blank is read back: `foo ` and `foo` stay two.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", "foo ", "foo"], &[3]).unwrap();
        let inclusive = annotate_inclusive(&emit(&b.finish()));
        assert_eq!(inclusive.get("foo "), Some(&3), "{inclusive:?}");
        assert_eq!(inclusive.get("foo"), Some(&3), "{inclusive:?}");
    }

    /// An event name that is valid as it is keeps it; only the others are changed, past every
    /// name taken (`A_1` was written `A_1_2`, and `e1x` stood for the column `1x`).
    #[test]
    fn valid_event_names_are_kept() {
        let mut b = ProfileBuilder::new();
        for name in ["A-1", "A_1", "1x", "e1x", "A_1"] {
            b.add_value_type(name, "count", ValueKind::Weight);
        }
        b.add_stack(&["main"], &[1, 2, 3, 4, 5]).unwrap();
        let text = emit(&b.finish());
        assert!(
            text.contains("\nevents: A_1_2 A_1 e1x_2 e1x A_1_3\n"),
            "{text}"
        );
    }

    /// The synthetic caller's name is one no function has as readers read it back (line breaks
    /// written as spaces, leading blanks dropped; trailing ones are read back).
    #[test]
    fn the_root_caller_is_named_apart_from_every_function() {
        for (taken, read, caller) in [
            ("(root)", "(root)", "(root)'"),
            (" (root)", "(root)", "(root)'"),
            ("(root) ", "(root) ", "(root)"),
            ("(root)\n", "(root) ", "(root)"),
        ] {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_stack(&[taken, "X"], &[5]).unwrap();
            b.add_stack(&["X", "Y"], &[3]).unwrap();
            b.add_stack(&["A", "X"], &[2]).unwrap();
            let p = b.finish();
            let text = emit(&p);
            assert!(
                text.contains(&format!("\ndesc: Root caller: {caller} (")),
                "{taken:?}: {text}"
            );
            assert!(text.contains(&format!(") {caller}\n")), "{taken:?}");
            // Read back, the function named like it keeps its calls.
            let tree =
                profconv_plugin::ir::testing::first_seen_tree(&read_profile(&text).view(), false);
            assert!(
                tree.starts_with(&format!("{read} self=0 total=5")),
                "{taken:?}: {tree}"
            );
        }
    }

    /// A `desc: Root caller:` line naming a function that is not what the writer makes (one
    /// with costs of its own, or called) leaves its calls as they are, with a warning.
    #[test]
    fn a_root_caller_line_naming_a_real_function_changes_nothing() {
        let body = "events: Ir\nfl=a.c\nfn=main\n1 5\ncfn=f\ncalls=1 1\n1 7\nfn=f\n1 7\n";
        let plain = read_profile(body);
        for named in ["main", "f", "nobody"] {
            let text = format!("desc: Root caller: {named} (x)\n{body}");
            let mut warnings = Vec::new();
            let p = read_warning(&text, &mut warnings);
            assert_eq!(
                profconv_plugin::ir::testing::first_seen_tree(&p.view(), false),
                profconv_plugin::ir::testing::first_seen_tree(&plain.view(), false),
                "{named}"
            );
            let ours: Vec<&String> = warnings
                .iter()
                .filter(|w| w.contains("Root caller"))
                .collect();
            assert_eq!(ours.len(), 1, "{named}: {warnings:?}");
            assert!(
                ours[0].contains("its calls are read as they are"),
                "{warnings:?}"
            );
        }
    }

    /// A name of only whitespace (a line break is written as a space) would be trimmed by
    /// readers to `fn=(2)`, a reference to an id never defined: it is written `???`, like an
    /// empty one (the two blank names are then one function, as readers see them), and the
    /// file reads back.
    #[test]
    fn blank_names_are_written_as_unknown() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", " ", "x"], &[1]).unwrap();
        b.add_stack(&["main", "\t\n\r"], &[2]).unwrap();
        let text = emit(&b.finish());
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with("fn=(") && l.ends_with(' ')),
            "{text}"
        );
        assert!(
            text.contains("fn=(1) ???\n0 2\ncfi=(1)\ncfn=(2) x\n"),
            "{text}"
        );
        assert_eq!(
            text.matches("???\n").count(),
            2,
            "the file ??? and one function\n{text}"
        );
        let g = crate::parse_graph(
            &mut profconv_plugin::Input::from_slice(text.as_bytes()),
            &mut profconv_plugin::Context::silent(),
        )
        .unwrap();
        let p = crate::build_profile(
            &g,
            &Default::default(),
            &mut profconv_plugin::Context::silent(),
        )
        .unwrap();
        assert!(p.view().n_samples() > 0);
    }

    #[test]
    fn self_recursion_carries_no_inclusive_cost() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", "fib", "fib", "fib"], &[4]).unwrap();
        b.add_stack(&["main", "fib", "fib"], &[2]).unwrap();
        b.add_stack(&["main", "fib"], &[1]).unwrap();
        let text = emit(&b.finish());
        // main -> fib 7; fib -> fib (two call lines merged: same site, same callee) 0.
        assert!(
            text.contains("fn=(2) main\ncfi=(1)\ncfn=(1)\ncalls=1 0\n0 7\n"),
            "{text}"
        );
        assert!(
            text.contains("fn=(1) fib\n0 7\ncfi=(1)\ncfn=(1)\ncalls=2 0\n0 0\n"),
            "{text}"
        );
    }

    /// One sample of 1 on each stack, in this order (a profile with sample order, no calls).
    fn ordered_samples(stacks: &[&[&str]]) -> Profile {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.set_flags(flags::ORDERED);
        for stack in stacks {
            let s = b.stack_of_names(stack);
            b.push_sample(s, None, &[1]);
        }
        b.finish()
    }

    #[test]
    fn estimate_follows_seed_003() {
        let text = emit(&ordered_samples(&[
            &["a", "b", "c"],
            &["a", "b", "d"],
            &["a", "b"],
            &["a", "e"],
            &["a", "b"],
        ]));
        // a->b: entered at sample 1, again at 5 (after a;e). b->c 1, b->d 1, a->e 1.
        assert!(text.contains("cfn=(2) b\ncalls=2 0\n0 4\n"), "{text}");
        assert!(text.contains("ESTIMATED"));
    }

    /// Seed 003's own example (rbspy's callgrind writer): a stack that goes deeper than the
    /// previous one enters new calls below it (`a b c d` then `a b c d d`: d -> d), and one
    /// that shares a prefix continues the calls along it.
    #[test]
    fn estimate_counts_the_seed_003_example() {
        let p = ordered_samples(&[
            &["a", "b", "c", "d", "d", "g", "x"],
            &["a", "b", "c", "d", "d"],
            &["a", "b", "c", "d"],
            &["a", "b", "c", "d", "d"],
            &["a", "b", "e", "f", "g"],
        ]);
        // The seed's counts: a -> b, b -> c, b -> e, c -> d, d -> g, e -> f, f -> g, g -> x once
        // each, d -> d twice.
        assert_eq!(
            body(&emit(&p)),
            "\nsummary: 5\n\nfl=(1) ???\nfn=(1) a\ncfi=(1)\ncfn=(2) b\ncalls=1 0\n0 5\n\nfn=(2)\ncfi=(1)\ncfn=(3) c\ncalls=1 0\n0 4\ncfi=(1)\ncfn=(4) e\ncalls=1 0\n0 1\n\nfn=(3)\ncfi=(1)\ncfn=(5) d\ncalls=1 0\n0 4\n\nfn=(5)\n0 3\ncfi=(1)\ncfn=(5)\ncalls=2 0\n0 0\ncfi=(1)\ncfn=(6) g\ncalls=1 0\n0 1\n\nfn=(4)\ncfi=(1)\ncfn=(7) f\ncalls=1 0\n0 1\n\nfn=(7)\ncfi=(1)\ncfn=(6)\ncalls=1 0\n0 1\n\nfn=(6)\n0 1\ncfi=(1)\ncfn=(8) x\ncalls=1 0\n0 1\n\nfn=(8)\n0 1\n\ntotals: 5\n"
        );
    }

    /// Seed 003's rule for the first differing level: a callee of one function on another line
    /// (the sample caught it elsewhere in its body) continues the call its caller made; a
    /// sample in another callee in between ends it.
    #[test]
    fn estimate_keeps_a_call_whose_callee_moved_to_another_line() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.set_flags(flags::ORDERED);
        let (main, f, g) = (b.func("main"), b.func("f"), b.func("g"));
        let main1 = b.frame_at(main, None, Some(1));
        let (f10, f20) = (b.frame_at(f, None, Some(10)), b.frame_at(f, None, Some(20)));
        let g30 = b.frame_at(g, None, Some(30));
        let root = b.stack(NONE, main1);
        for leaf in [f10, f20, f10, g30, f20] {
            let s = b.stack(root, leaf);
            b.push_sample(s, None, &[1]);
        }
        let text = emit(&b.finish());
        // main -> f: entered at samples 1 (lines 10, 20, 10: one call) and 5; main -> g once.
        assert!(
            text.contains(
                "fn=(3) main\ncfi=(1)\ncfn=(1)\ncalls=2 0\n1 4\ncfi=(1)\ncfn=(2)\ncalls=1 0\n1 1\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn estimate_is_per_thread() {
        // Two threads interleaved: a;b (t1), a;c (t2), a;b (t1). Per thread, t1's second
        // sample continues its first call of b.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.set_flags(flags::ORDERED);
        let t1 = b.add_thread("t1");
        let t2 = b.add_thread("t2");
        for (t, stack) in [(t1, &["a", "b"]), (t2, &["a", "c"]), (t1, &["a", "b"])] {
            b.set_thread(t);
            let s = b.stack_of_names(stack);
            b.push_sample(s, None, &[1]);
        }
        let text = emit(&b.finish());
        assert!(text.contains("cfn=(2) b\ncalls=1 0\n0 2\n"), "{text}");
        assert!(text.contains("# The profile's 2 threads are merged into one part."));
    }

    #[test]
    fn addresses_give_instruction_positions() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("Ir", "count", ValueKind::Weight);
        let main = b.func_with("main", Some("m.c"), Some(3), None);
        let leaf = b.func_with("leaf", Some("l.c"), Some(7), Some("libl.so"));
        let m = b.frame_at(main, Some(0x1000), Some(4));
        let l = b.frame_at(leaf, Some(0x2a), Some(8));
        let s0 = b.stack(NONE, m);
        let s1 = b.stack(s0, l);
        b.add_to_stack(s0, &[2]).unwrap();
        b.add_to_stack(s1, &[5]).unwrap();
        let text = emit(&b.finish());
        assert_eq!(
            body(&text),
            "\nsummary: 7\n\nfl=(1) m.c\nfn=(1) main\n0x1000 4 2\ncob=(1) libl.so\ncfi=(2) l.c\ncfn=(2) leaf\ncalls=1 0 7\n0x1000 4 5\n\nob=(1)\nfl=(2)\nfn=(2)\n0x2a 8 5\n\ntotals: 7\n"
        );
        assert!(text.contains("positions: instr line\n"));
    }

    #[test]
    fn decimals_are_scaled_with_a_note() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[150]).unwrap();
        b.rescale(0, 2).unwrap();
        let text = emit(&b.finish());
        assert!(
            text.contains("event: samples : samples (count/10^2)\n"),
            "{text}"
        );
        assert!(text.contains("desc: Scale: event samples is written in units of 10^-2 count"));
        assert!(text.contains("\n0 15000\n"));
    }

    /// An event that is a count under its own name gets no `event:` line: KCachegrind then shows
    /// its own long name for valgrind's events (`Instruction Fetch` for `Ir`), not `Ir (count)`.
    /// Events with another unit, decimals, or a short name made from the value type's name keep
    /// theirs, and every name and unit reads back.
    #[test]
    fn count_events_under_their_own_names_get_no_long_name() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("Ir", "count", ValueKind::Weight);
        b.add_value_type("Bcm", "count", ValueKind::Weight);
        b.add_value_type("time", "nanoseconds", ValueKind::Weight);
        b.add_value_type("Memory (bytes)", "count", ValueKind::Weight);
        b.add_stack(&["main"], &[1, 2, 3, 4]).unwrap();
        let text = emit(&b.finish());
        assert!(!text.contains("event: Ir "), "{text}");
        assert!(!text.contains("event: Bcm "), "{text}");
        assert!(
            text.contains("event: time : time (nanoseconds)\n"),
            "{text}"
        );
        assert!(
            text.contains("event: Memory__bytes_ : Memory (bytes) (count)\n"),
            "{text}"
        );
        let back = read_profile(&text);
        let v = back.view();
        let types: Vec<(&str, &str)> = (0..4)
            .map(|c| (v.value_type_name(c), v.value_type_unit(c)))
            .collect();
        assert_eq!(
            types,
            [
                ("Ir", "count"),
                ("Bcm", "count"),
                ("time", "nanoseconds"),
                ("Memory (bytes)", "count")
            ]
        );
    }

    /// The same profile with its stack table built in two orders: line by line (long chains
    /// of consecutive stacks), and level by level from the last line (every stack a chain of
    /// its own, prefixes far away). The output must not depend on the order.
    fn build_in_order(paths: &[(&[(&str, u32)], i64)], level_by_level: bool) -> Profile {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_value_type("time", "nanoseconds", ValueKind::Weight);
        let frame = |b: &mut ProfileBuilder, (name, line): (&str, u32)| {
            let f = b.func(name);
            b.frame_at(f, None, Some(line))
        };
        if level_by_level {
            let depth = paths.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
            for d in 1..=depth {
                for (path, _) in paths.iter().rev().filter(|(p, _)| p.len() >= d) {
                    let mut s = NONE;
                    for &fl in &path[..d] {
                        let fr = frame(&mut b, fl);
                        s = b.stack(s, fr);
                    }
                }
            }
        }
        for (path, v) in paths {
            let mut s = NONE;
            for &fl in *path {
                let fr = frame(&mut b, fl);
                s = b.stack(s, fr);
            }
            b.add_to_stack(s, &[*v, 10 * *v]).unwrap();
        }
        b.finish()
    }

    #[test]
    fn output_does_not_depend_on_the_stack_order() {
        let paths: &[(&[(&str, u32)], i64)] = &[
            (&[("main", 1), ("a", 1), ("b", 1), ("a", 2), ("b", 2)], 3),
            (&[("main", 1), ("a", 1), ("c", 1)], 2),
            (&[("main", 1), ("a", 5), ("c", 1)], 1),
            (&[("main", 1), ("d", 1)], 1),
            (&[("main", 1), ("a", 1), ("b", 1), ("a", 2)], 0),
            (&[("main", 2), ("a", 1)], 4),
            (&[("x", 1), ("main", 1), ("a", 1), ("x", 3), ("a", 1)], 1),
        ];
        let chained = build_in_order(paths, false);
        let scattered = build_in_order(paths, true);
        assert_ne!(chained.view().stack_prefix, scattered.view().stack_prefix);
        let text = emit(&chained);
        assert_eq!(text, emit(&scattered));
        // main:1 -> a: two callers' frames of a (lines 1 and 5) under one main stack, and
        // main:1 under x: two calling contexts; inclusive 3 + 2 + 1 + 0 + 1 = 7 samples, 70 ns.
        assert!(
            text.contains("fn=(5) main\ncfi=(1)\ncfn=(1)\ncalls=2 0\n1 7 70\n"),
            "{text}"
        );
        // a -> b from inside recursion only (a;b;a;b) is left out: b's outer call is a -> b;
        // so is a -> x (x;main;a;x;a): x, a root, gets its call from `(root)`, as main does
        // (called by x), each with what it costs as a root.
        assert!(text.contains("desc: Left out: 4 call edge(s)"), "{text}");
        assert!(
            text.contains("fn=(7) (root)\ncfi=(1)\ncfn=(5)\ncalls=2 0\n0 11 110\ncfi=(1)\ncfn=(6)\ncalls=1 0\n0 1 10\n"),
            "{text}"
        );
    }

    /// A calls column with no call in it (`-T invert` zeroes counts) counts nothing: the
    /// counts are lower bounds, said so. The file said "exact" over counts that were all a
    /// written 1, ordered or not.
    #[test]
    fn a_calls_column_without_a_call_gives_lower_bounds_not_exact_counts() {
        for ordered in [false, true] {
            let mut b = ProfileBuilder::new();
            b.add_value_type("ticks", "ticks", ValueKind::Weight);
            b.add_value_type("calls", "count", ValueKind::Count);
            b.add_stack(&["g", "f"], &[5, 0]).unwrap();
            b.add_stack(&["h", "f"], &[3, 0]).unwrap();
            b.add_stack(&["g", "f"], &[2, 0]).unwrap();
            if ordered {
                b.set_flags(profconv_plugin::ir::flags::ORDERED);
            }
            let mut out = Vec::new();
            emit_callgrind(&b.finish().view(), &mut out, EmitOptions::default()).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.contains("desc: Call counts: the profile's calls column holds no call")
                    && text.contains("desc: Call counts: LOWER BOUNDS")
                    && !text.contains("exact"),
                "{text}"
            );
        }
    }

    #[test]
    fn negative_values_and_missing_weights_are_errors() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("delta", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[-1]).unwrap();
        let mut out = Vec::new();
        let e = emit_callgrind(&b.finish().view(), &mut out, EmitOptions::default()).unwrap_err();
        assert_eq!(
            e.message,
            "sample 0 has a negative delta (-1): callgrind costs are unsigned"
        );
        let mut b = ProfileBuilder::new();
        b.add_value_type("calls", "count", ValueKind::Count);
        b.add_stack(&["a"], &[1]).unwrap();
        let p = b.finish();
        let e = emit_callgrind(&p.view(), &mut out, EmitOptions::default()).unwrap_err();
        assert_eq!(
            e.message,
            "the profile has no weight (cost) column; callgrind needs at least one event"
        );
        // A count chosen with `-O value=` is an error that names the option, as every bad
        // option value's is.
        let e = emit_callgrind(
            &p.view(),
            &mut out,
            EmitOptions {
                value: Some("calls"),
            },
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("option value=calls: value type 'calls' is a count"),
            "{e}"
        );
    }

    /// Object, file, name.
    type CgFunction = (String, String, String);

    /// The (object, file, name) each `fn=(N)` / `cfn=(N)` line means to KCachegrind, whose
    /// loader binds an id to the object and file current where it is defined and, on a later
    /// `(N)`, returns that function whatever `ob=`/`fl=`/`cob=`/`cfi=` say; beside it, the one
    /// the line stands for in its own context (what callgrind_annotate and profconv read).
    fn kcachegrind_functions(text: &str) -> Vec<(CgFunction, CgFunction)> {
        let mut names: HashMap<(char, String), String, FixedState> = HashMap::default();
        let mut bound: HashMap<String, CgFunction, FixedState> = HashMap::default();
        let (mut ob, mut fl) = (String::new(), String::new());
        let (mut cob, mut cfi) = (None::<String>, None::<String>);
        let mut out = vec![];
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let kind = match key {
                "ob" | "cob" => 'o',
                "fl" | "fi" | "fe" | "cfi" | "cfl" => 'f',
                "fn" | "cfn" => 'n',
                _ => continue,
            };
            let (id, name) = match value.split_once(") ") {
                Some((id, name)) => (id.to_string(), name.to_string()),
                None => (value.trim_end_matches(')').to_string(), String::new()),
            };
            let name = if name.is_empty() {
                names[&(kind, id.clone())].clone()
            } else {
                names.insert((kind, id.clone()), name.clone());
                name
            };
            match key {
                "ob" => ob = name,
                "fl" => fl = name,
                "cob" => cob = Some(name),
                "cfi" => cfi = Some(name),
                "fn" | "cfn" => {
                    let context = match key {
                        "fn" => (ob.clone(), fl.clone(), name),
                        _ => (
                            cob.take().unwrap_or_else(|| ob.clone()),
                            cfi.take().unwrap_or_else(|| fl.clone()),
                            name,
                        ),
                    };
                    let kc = bound.entry(id).or_insert_with(|| context.clone()).clone();
                    out.push((kc, context));
                }
                _ => {}
            }
        }
        out
    }

    #[test]
    fn namesakes_in_other_files_or_objects_get_their_own_ids() {
        // Valgrind's `(below main)` in the program (no file) and in libc, or two C `static`
        // functions of one name: one id for both made KCachegrind read every later `fn=(N)` /
        // `cfn=(N)` as the first one defined, merging them (the real fixture's `(below main)`
        // showed at 190.96 %, and the root `start` here vanished into `start` of main.c).
        let mut b = ProfileBuilder::new();
        b.add_value_type("Ir", "count", ValueKind::Weight);
        let crt_start = b.func_with("start", Some("crt.c"), Some(1), Some("prog"));
        let libc_start = b.func_with("libc_start", Some("libc.c"), Some(10), Some("libc.so"));
        let main_start = b.func_with("start", Some("main.c"), Some(20), Some("prog"));
        let main = b.func_with("main", Some("main.c"), Some(30), Some("prog"));
        let static_init = b.func_with("init", Some("a.c"), Some(40), Some("prog"));
        let other_init = b.func_with("init", Some("b.c"), Some(50), Some("prog"));
        let mut prefix = NONE;
        for (f, v) in [(crt_start, 1), (libc_start, 1), (main_start, 1), (main, 90)] {
            let frame = b.frame(f);
            prefix = b.stack(prefix, frame);
            b.add_to_stack(prefix, &[v]).unwrap();
        }
        for f in [static_init, other_init] {
            let frame = b.frame(f);
            let s = b.stack(prefix, frame);
            b.add_to_stack(s, &[2]).unwrap();
        }
        let text = emit(&b.finish());
        let read = kcachegrind_functions(&text);
        assert!(read.len() > 6, "{text}");
        for (kcachegrind, meant) in read {
            assert_eq!(kcachegrind, meant, "{text}");
        }
        assert_eq!(text.matches(") start\n").count(), 2, "{text}");
        assert_eq!(text.matches(") init\n").count(), 2, "{text}");
    }

    #[test]
    fn code_inlined_from_another_file_is_written_in_its_function_not_as_a_call() {
        // The reader puts `fi=` code under the function it is inlined into, as a function of
        // the same name in that file. Written as a call (`cfi=(2) vec.h`, `cfn=(3) work`,
        // `calls=1`), KCachegrind showed two functions `work`, one called once, instead of one
        // `work` in main.c and vec.h with all the self cost.
        let text = "events: Ir\nob=prog\nfl=main.c\nfn=main\n1 10\ncfn=work\ncalls=2 20\n2 76\n\
                    cfn=helper\ncalls=1 30\n3 39\nfn=helper\n30 1\ncfn=work\ncalls=1 20\n31 38\n\
                    fn=work\n20 60\nfi=vec.h\n5 40\ncfi=main.c\ncfn=leaf\ncalls=4 40\n6 8\nfe=main.c\n21 6\n\
                    fn=leaf\n40 8\n";
        let p = read_profile(text);
        let out = emit(&p);
        assert_eq!(
            out.matches("fn=").count() - out.matches("cfn=").count(),
            4,
            "{out}"
        );
        // `work`'s own code, then vec.h's with its call, and back to main.c.
        let work = "\nfn=(2)\n20 60\n21 6\nfi=(2) vec.h\n5 40\ncfi=(1)\ncfn=(3)\ncalls=4 40\n6 8\nfe=(1)\n";
        assert!(out.contains(work), "{out}");
        // Read back, it is the same tree: written again, the same file.
        assert_eq!(body(&emit(&read_profile(&out))), body(&out));
        // callgrind_annotate's view: the same self and inclusive costs.
        let (a, b) = (annotate_inclusive(text), annotate_inclusive(&out));
        assert_eq!(a, b, "{out}");
    }

    /// Calls from many call sites (more than the call-line table's first 1 024 slots hold at
    /// its load factor) each keep their own calls and costs as the table grows.
    #[test]
    fn many_call_sites_keep_their_own_calls_and_costs() {
        let n: i64 = 3000;
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
        for (i, name) in names.iter().enumerate() {
            b.add_stack(&["main", name.as_str()], &[i as i64 + 1])
                .unwrap();
        }
        let text = emit(&b.finish());
        let inclusive = annotate_inclusive(&text);
        assert_eq!(inclusive["main"], n * (n + 1) / 2);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(inclusive[name.as_str()], i as i64 + 1, "{name}");
        }
        assert_eq!(text.matches("\ncalls=1 ").count(), n as usize);
    }

    /// A call into another object names the callee's object (`cob=`), and a call within the
    /// caller's object does not: read back, each callee is the function of its own object.
    #[test]
    fn calls_name_the_callees_object_only_when_it_differs() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("Ir", "count", ValueKind::Weight);
        let main = b.func_with("main", Some("main.c"), Some(1), Some("prog"));
        let helper = b.func_with("helper", Some("main.c"), Some(5), Some("prog"));
        let memcpy = b.func_with("memcpy", Some("string.c"), Some(9), Some("libc.so"));
        let root = b.frame(main);
        let root = b.stack(NONE, root);
        b.add_to_stack(root, &[1]).unwrap();
        for (f, v) in [(helper, 2), (memcpy, 3)] {
            let frame = b.frame(f);
            let s = b.stack(root, frame);
            b.add_to_stack(s, &[v]).unwrap();
        }
        let text = emit(&b.finish());
        assert_eq!(text.matches("\ncob=").count(), 1, "{text}");
        let g = crate::parse_graph(
            &mut profconv_plugin::Input::from_slice(text.as_bytes()),
            &mut profconv_plugin::Context::silent(),
        )
        .unwrap();
        let object_of = |name: &str| -> Vec<String> {
            g.funcs
                .iter()
                .filter(|f| g.str(f.name) == name)
                .map(|f| g.str(f.object).to_string())
                .collect()
        };
        assert_eq!(object_of("memcpy"), ["libc.so"], "{text}");
        assert_eq!(object_of("helper"), ["prog"], "{text}");
        assert_eq!(g.edges.len(), 2, "{text}");
        assert!(g.edges.iter().all(|e| g.funcs[e.callee as usize].has_block));
    }

    /// Call lines whose count in the profile's calls column is 0 are written as `calls=1`,
    /// and the header says how many there are; a profile whose calls all have a count says
    /// nothing of it.
    #[test]
    fn call_lines_without_a_count_are_counted_in_the_header() {
        let note = "call line(s) have no call in the profile's calls column";
        for (g_calls, want) in [(0, Some(1)), (4, None)] {
            let mut b = ProfileBuilder::new();
            b.add_value_type("ticks", "ticks", ValueKind::Weight);
            b.add_value_type("calls", "count", ValueKind::Count);
            b.add_stack(&["main", "f"], &[5, 2]).unwrap();
            b.add_stack(&["main", "g"], &[3, g_calls]).unwrap();
            let text = emit(&b.finish());
            match want {
                Some(n) => assert!(
                    text.contains(&format!("desc: Call counts: {n} {note}")),
                    "{text}"
                ),
                None => assert!(!text.contains(note), "{text}"),
            }
            assert!(text.contains("desc: Call counts: exact"), "{text}");
        }
    }
}
