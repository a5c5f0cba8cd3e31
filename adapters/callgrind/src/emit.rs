//! Callgrind emitter.
//!
//! The IR's stacks are a prefix tree of frames; callgrind wants a graph of functions: self cost
//! per (function, position) and, per call edge (caller, call site, callee), a call count and the
//! inclusive cost spent in the callee. Everything is computed per distinct stack (never per
//! sample and frame), then sorted, so the output is deterministic and the work grows with the
//! number of distinct stacks.
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
//! * **Inclusive costs on call lines**: a sample's value is charged, for every function on its
//!   stack except the root's, to the call into that function's *outermost* frame on the stack.
//!   Each sample is thus counted at most once per call edge and at most once in the incoming
//!   calls of every function, which is what callgrind_annotate (`--inclusive=yes`) and
//!   KCachegrind show as a function's inclusive cost: it never exceeds the total, even with
//!   recursion, and self-recursive edges (`f -> f`) carry no cost. One pass over the stacks.
//!   A call edge made only from inside recursion (no cost) is left out when its callee has a
//!   call from outside recursion: gprof2dot cannot apportion weightless edges in cycles. The
//!   header counts what was left out.
//! * **Call counts**: the `calls` column's exact counts; else, for `ORDERED` profiles, seed 003's
//!   estimate (consecutive samples of one thread that share a prefix are the same calls); else
//!   a lower bound, the number of distinct calling contexts (caller stacks) of the edge. The
//!   header says which.

use profconv_plugin::PluginError;
use profconv_plugin::ir::{NO_ADDRESS, NONE, ProfileRef, ValueKind};
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

/// Writes `p` as a callgrind profile.
pub fn emit_callgrind(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: EmitOptions<'_>,
) -> Result<(), PluginError> {
    p.validate()?;
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
    let rule = if calls_col.is_some() {
        CallRule::Exact
    } else if p.is_ordered() {
        CallRule::Estimated
    } else {
        CallRule::Contexts
    };

    let ns = p.n_stacks();
    let cg = CgFuncs::new(p);
    let cg_of_stack: Vec<u32> = (0..ns)
        .map(|s| cg.of_func[p.stack_func(s as u32) as usize])
        .collect();

    // Per stack: self values (nc per stack), whether a sample ends there, exact calls.
    let mut selfv = vec![0i64; ns * nc];
    let mut sampled = vec![false; ns];
    let mut calls = vec![0i64; if rule == CallRule::Contexts { 0 } else { ns }];
    for i in 0..p.n_samples() {
        let s = p.sample_stack[i] as usize;
        sampled[s] = true;
        for (k, &c) in cols.iter().enumerate() {
            let cell = &mut selfv[s * nc + k];
            *cell = checked_add(*cell, p.sample_values[c][i])?;
        }
        if let Some(c) = calls_col {
            calls[s] = calls[s].saturating_add(p.sample_values[c][i].max(0));
        }
    }
    if rule == CallRule::Estimated {
        estimate_calls(p, &cg_of_stack, &mut calls);
    }

    // Subtree totals and liveness (a sample somewhere below), children before parents.
    let mut total = selfv.clone();
    let mut live = sampled.clone();
    for s in (0..ns).rev() {
        let par = p.stack_prefix[s];
        if par != NONE {
            let par = par as usize;
            live[par] |= live[s];
            for k in 0..nc {
                total[par * nc + k] = checked_add(total[par * nc + k], total[s * nc + k])?;
            }
        }
    }
    let (edge_cost, outermost) = edge_costs(p, &cg_of_stack, &total, nc, cg.names.len());

    // Self lines: (function, position) with summed values.
    let has_addr = p.frame_address.iter().any(|&a| a != NO_ADDRESS);
    let pos_of = |s: usize| -> (u64, u32) {
        let fr = p.stack_frame[s] as usize;
        let addr = match p.frame_address[fr] {
            NO_ADDRESS => 0,
            a => a,
        };
        let line = p.frame_line[fr];
        (addr, if line == NONE { 0 } else { line })
    };
    let mut self_rows: Vec<(u32, u64, u32, u32)> = (0..ns)
        .filter(|&s| sampled[s])
        .map(|s| {
            let (a, l) = pos_of(s);
            (cg_of_stack[s], a, l, s as u32)
        })
        .collect();
    self_rows.sort_unstable();

    // Call lines: (caller, call site, callee) from every stack with a parent.
    let mut edge_rows: Vec<EdgeRow> = Vec::new();
    for q in 0..ns {
        let par = p.stack_prefix[q];
        if par == NONE {
            continue;
        }
        let has_calls = rule != CallRule::Contexts && calls[q] > 0;
        if !live[q] && !has_calls {
            continue;
        }
        let (addr, line) = pos_of(par as usize);
        edge_rows.push(EdgeRow {
            caller: cg_of_stack[par as usize],
            addr,
            line,
            callee: cg_of_stack[q],
            parent: par,
            stack: q as u32,
        });
    }
    edge_rows.sort_unstable_by_key(|e| (e.caller, e.addr, e.line, e.callee, e.parent, e.stack));

    let mut grand = vec![0i64; nc];
    for (k, &c) in cols.iter().enumerate() {
        for &v in p.sample_values[c] {
            grand[k] = checked_add(grand[k], v)?;
        }
    }

    let mut w = Writer {
        out,
        buf: Vec::with_capacity(1 << 12),
        name_out: vec![0; cg.names.len()],
        file_out: vec![0; cg.files.len()],
        ob_out: vec![0; cg.obs.len()],
        next_name: 1,
        next_file: 1,
        next_ob: 1,
        has_addr,
    };

    // Merge the rows, then write the header (it names the invented counts) and the body.
    let mut body_edges: Vec<MergedEdge> = Vec::new();
    let mut costs: Vec<i64> = Vec::new();
    let mut i = 0;
    while i < edge_rows.len() {
        let e = edge_rows[i];
        let start = costs.len();
        costs.resize(start + nc, 0);
        let mut count: i64 = 0;
        let mut last_parent = NONE;
        let mut outer = false;
        while i < edge_rows.len() && edge_rows[i].same_edge(&e) {
            let r = edge_rows[i];
            let q = r.stack as usize;
            outer |= outermost[q];
            for k in 0..nc {
                costs[start + k] = checked_add(costs[start + k], edge_cost[q * nc + k])?;
            }
            match rule {
                CallRule::Contexts => {
                    if live[q] && r.parent != last_parent {
                        count += 1;
                        last_parent = r.parent;
                    }
                }
                _ => count = count.saturating_add(calls[q]),
            }
            i += 1;
        }
        body_edges.push(MergedEdge {
            caller: e.caller,
            addr: e.addr,
            line: e.line,
            callee: e.callee,
            calls: count.max(0) as u64,
            cost: start,
            outer,
        });
    }
    // Calls made only from inside recursion (the callee is already on every stack they are on)
    // carry no cost. Left in, they would make readers see cycles whose edges have no weight,
    // which gprof2dot cannot apportion (it asserts). They are left out when the callee has a
    // call from outside recursion, so readers still know it is called; self-calls stay (every
    // reader ignores them or counts them as zero).
    let mut outer_in = vec![false; cg.names.len()];
    for e in &body_edges {
        if e.outer && e.caller != e.callee {
            outer_in[e.callee as usize] = true;
        }
    }
    let (mut dropped, mut dropped_calls) = (0u64, 0u64);
    body_edges.retain(|e| {
        let keep = e.outer || e.caller == e.callee || !outer_in[e.callee as usize];
        if !keep {
            dropped += 1;
            dropped_calls = dropped_calls.saturating_add(e.calls);
        }
        keep
    });
    let mut zero_calls = 0u64;
    for e in &mut body_edges {
        if e.calls == 0 {
            zero_calls += 1;
            e.calls = 1;
        }
    }

    let notes = Notes {
        rule,
        zero_calls,
        dropped: (dropped, dropped_calls),
    };
    w.header(p, &cols, calls_col, &notes, &grand)?;

    let mut self_costs = vec![0i64; nc];
    let (mut si, mut ei) = (0usize, 0usize);
    let mut cur_ob = NONE;
    let mut cur_file = NONE;
    while si < self_rows.len() || ei < body_edges.len() {
        let f = match (self_rows.get(si), body_edges.get(ei)) {
            (Some(s), Some(e)) => s.0.min(e.caller),
            (Some(s), None) => s.0,
            (None, Some(e)) => e.caller,
            (None, None) => break,
        };
        w.function(&cg, f, &mut cur_ob, &mut cur_file)?;
        while si < self_rows.len() && self_rows[si].0 == f {
            let (_, addr, line, _) = self_rows[si];
            self_costs.iter_mut().for_each(|v| *v = 0);
            while si < self_rows.len()
                && self_rows[si].0 == f
                && (self_rows[si].1, self_rows[si].2) == (addr, line)
            {
                let s = self_rows[si].3 as usize;
                for k in 0..nc {
                    self_costs[k] = checked_add(self_costs[k], selfv[s * nc + k])?;
                }
                si += 1;
            }
            w.cost_line(addr, line, &self_costs)?;
        }
        while ei < body_edges.len() && body_edges[ei].caller == f {
            let e = &body_edges[ei];
            w.call(&cg, f, e, &costs[e.cost..e.cost + nc])?;
            ei += 1;
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
            let known: Vec<&str> = (0..p.value_types.len())
                .map(|i| p.value_type_name(i))
                .collect();
            return Err(PluginError::bad_option(format!(
                "no value type '{name}' in this profile (it has: {})",
                known.join(", ")
            )));
        };
        if p.value_types[c].kind != ValueKind::Weight {
            return Err(PluginError::bad_option(format!(
                "value type '{name}' is a count, not a cost; callgrind events are costs"
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
        let opt = |s: u32| -> Option<&'a str> {
            if s == NONE {
                return None;
            }
            let v = p.strings.get(s);
            (!v.is_empty()).then_some(v)
        };
        let nf = p.n_funcs();
        let key = |f: usize| {
            (
                opt(p.func_resource[f]),
                opt(p.func_file[f]),
                p.strings.get(p.func_name[f]),
            )
        };
        let mut order: Vec<u32> = (0..nf as u32).collect();
        order.sort_by(|&a, &b| key(a as usize).cmp(&key(b as usize)).then(a.cmp(&b)));
        let mut of_func = vec![0u32; nf];
        let (mut names, mut files, mut obs, mut line) = (vec![], vec![], vec![], vec![]);
        let mut prev = None;
        for &f in &order {
            let k = key(f as usize);
            if prev != Some(k) {
                names.push(k.2);
                files.push(k.1);
                obs.push(k.0);
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
}

/// For each item, the index of its value among the distinct values (sorted).
fn groups<T: Ord + Copy>(items: &[T]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    order.sort_by_key(|&i| items[i as usize]);
    let mut g = vec![0u32; items.len()];
    let mut n = 0u32;
    for (k, &i) in order.iter().enumerate() {
        if k > 0 && items[order[k - 1] as usize] != items[i as usize] {
            n += 1;
        }
        g[i as usize] = n;
    }
    g
}

/// Inclusive cost of the call into each stack (`nc` values per stack): its subtree total when
/// no stack above it is of the same function (the call into the function's outermost frame),
/// else zero. So each sample is charged once per function it passes through, on the call into
/// that function's outermost frame: the sum of a function's incoming call costs (what
/// callgrind_annotate and KCachegrind show as its inclusive cost) never exceeds the total.
/// Also returns, per stack, whether it is such an outermost frame. One iterative depth-first
/// pass over the stack tree.
fn edge_costs(
    p: &ProfileRef<'_>,
    cg_of_stack: &[u32],
    total: &[i64],
    nc: usize,
    n_cg: usize,
) -> (Vec<i64>, Vec<bool>) {
    let ns = p.n_stacks();
    let mut cost = total.to_vec();
    let mut outermost = vec![true; ns];
    // Children in stack order (link in reverse so the lists come out ascending).
    let mut first_child = vec![NONE; ns];
    let mut next_sibling = vec![NONE; ns];
    let mut first_root = NONE;
    for s in (0..ns).rev() {
        let par = p.stack_prefix[s];
        if par == NONE {
            next_sibling[s] = first_root;
            first_root = s as u32;
        } else {
            next_sibling[s] = first_child[par as usize];
            first_child[par as usize] = s as u32;
        }
    }
    // How many stacks of each function are open on the current path.
    let mut open = vec![0u32; n_cg];
    let mut cur = first_root;
    while cur != NONE {
        // Enter `cur`.
        let f = cg_of_stack[cur as usize] as usize;
        if open[f] > 0 {
            let c = cur as usize;
            cost[c * nc..(c + 1) * nc].iter_mut().for_each(|v| *v = 0);
            outermost[c] = false;
        }
        open[f] += 1;
        if first_child[cur as usize] != NONE {
            cur = first_child[cur as usize];
            continue;
        }
        // Leave `cur` and every ancestor whose children are done.
        loop {
            open[cg_of_stack[cur as usize] as usize] -= 1;
            let sib = next_sibling[cur as usize];
            if sib != NONE {
                cur = sib;
                break;
            }
            cur = p.stack_prefix[cur as usize];
            if cur == NONE {
                break;
            }
        }
    }
    (cost, outermost)
}

/// Seed 003's call-count estimate: walking the samples in order, per thread, the calls on the
/// new stack below its common part with the previous stack are new calls (+1 each). Stacks are
/// compared frame by frame, except that the first differing level counts as the same call when
/// both frames are of one function (the callee moved to another line; its caller did not).
fn estimate_calls(p: &ProfileRef<'_>, cg_of_stack: &[u32], calls: &mut [i64]) {
    let ns = p.n_stacks();
    let mut depth = vec![0u32; ns];
    for s in 0..ns {
        let par = p.stack_prefix[s];
        if par != NONE {
            depth[s] = depth[par as usize] + 1;
        }
    }
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
            if x_child != NONE && cg_of_stack[x_child as usize] == cg_of_stack[top as usize] {
                n -= 1;
            }
        }
        for &q in &new_part[..n] {
            calls[q as usize] = calls[q as usize].saturating_add(1);
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct EdgeRow {
    caller: u32,
    addr: u64,
    line: u32,
    callee: u32,
    parent: u32,
    stack: u32,
}

impl EdgeRow {
    fn same_edge(&self, o: &EdgeRow) -> bool {
        (self.caller, self.addr, self.line, self.callee) == (o.caller, o.addr, o.line, o.callee)
    }
}

/// What the header must say about the call lines.
#[derive(Clone, Copy)]
struct Notes {
    rule: CallRule,
    /// Call lines whose count was 0, written as 1.
    zero_calls: u64,
    /// Call lines left out, and their calls.
    dropped: (u64, u64),
}

struct MergedEdge {
    caller: u32,
    addr: u64,
    line: u32,
    callee: u32,
    calls: u64,
    /// Offset of its costs in the shared cost vector.
    cost: usize,
    /// Made from a callee's outermost frame on some stack (not only from inside recursion).
    outer: bool,
}

struct Writer<'o, W: Write> {
    out: &'o mut W,
    buf: Vec<u8>,
    /// Compressed id given to each distinct name / file / object (0: not written yet).
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
        cols: &[usize],
        calls_col: Option<usize>,
        notes: &Notes,
        grand: &[i64],
    ) -> Result<(), PluginError> {
        let Notes {
            rule,
            zero_calls,
            dropped,
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
        match rule {
            CallRule::Exact => h.push_str(
                "desc: Call counts: exact, from the profile's calls column\n",
            ),
            CallRule::Estimated => h.push_str(
                "desc: Call counts: ESTIMATED from the sample order (consecutive samples that share a call path are one call, as rbspy does), not measured\n",
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
                "desc: Left out: {} call edge(s) made only from inside recursion ({} call(s)): they carry no inclusive cost, and their callees have other callers\n",
                dropped.0, dropped.1
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
            self.compressed(Kind::Ob, ob, cg.obs[f].unwrap_or("???"));
            *cur_ob = ob;
        }
        let file = cg.file_group[f];
        if *cur_file != file {
            self.buf.extend_from_slice(b"fl=");
            self.compressed(Kind::File, file, cg.files[f].unwrap_or("???"));
            *cur_file = file;
        }
        self.buf.extend_from_slice(b"fn=");
        self.compressed(Kind::Name, cg.name_group[f], or_unknown(cg.names[f]));
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
            self.compressed(Kind::Ob, cg.ob_group[c], cg.obs[c].unwrap_or("???"));
        }
        self.buf.extend_from_slice(b"cfi=");
        self.compressed(Kind::File, cg.file_group[c], cg.files[c].unwrap_or("???"));
        self.buf.extend_from_slice(b"cfn=");
        self.compressed(Kind::Name, cg.name_group[c], or_unknown(cg.names[c]));
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

fn or_unknown(name: &str) -> &str {
    if name.is_empty() { "???" } else { name }
}

/// Event short names: the value type names with characters other than letters, digits and
/// `_` replaced by `_`, a letter first, unique.
fn event_names(p: &ProfileRef<'_>, cols: &[usize]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(cols.len());
    for &c in cols {
        let mut n: String = p
            .value_type_name(c)
            .chars()
            .map(|ch| {
                if ch.is_ascii_alphanumeric() || ch == '_' {
                    ch
                } else {
                    '_'
                }
            })
            .collect();
        if !n.starts_with(|ch: char| ch.is_ascii_alphabetic()) {
            n.insert(0, 'e');
        }
        let base = n.clone();
        let mut k = 2;
        while names.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        names.push(n);
    }
    names
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

fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
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
        // g -> f (f's outermost frame is the root). Incoming sums: g 1, h 1, f 0, all <= 1;
        // charging every call on the stack would give f an incoming 1 and g -> f a 1 too.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["f", "g", "f", "h"], &[1]).unwrap();
        let text = emit(&b.finish());
        assert_eq!(
            body(&text),
            "\nsummary: 1\n\nfl=(1) ???\nfn=(1) f\ncfi=(1)\ncfn=(2) g\ncalls=1 0\n0 1\ncfi=(1)\ncfn=(3) h\ncalls=1 0\n0 1\n\nfn=(2)\ncfi=(1)\ncfn=(1)\ncalls=1 0\n0 0\n\nfn=(3)\n0 1\n\ntotals: 1\n"
        );
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

    #[test]
    fn estimate_follows_seed_003() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.set_flags(flags::ORDERED);
        for stack in [
            &["a", "b", "c"][..],
            &["a", "b", "d"],
            &["a", "b"],
            &["a", "e"],
            &["a", "b"],
        ] {
            let s = b.stack_of_names(stack);
            b.push_sample(s, None, &[1]);
        }
        let text = emit(&b.finish());
        // a->b: entered at sample 1, again at 5 (after a;e). b->c 1, b->d 1, a->e 1.
        assert!(text.contains("cfn=(2) b\ncalls=2 0\n0 4\n"), "{text}");
        assert!(text.contains("ESTIMATED"));
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

    #[test]
    fn negative_values_and_missing_weights_are_errors() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("delta", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[-1]).unwrap();
        let mut out = Vec::new();
        assert!(emit_callgrind(&b.finish().view(), &mut out, EmitOptions::default()).is_err());
        let mut b = ProfileBuilder::new();
        b.add_value_type("calls", "count", ValueKind::Count);
        b.add_stack(&["a"], &[1]).unwrap();
        assert!(emit_callgrind(&b.finish().view(), &mut out, EmitOptions::default()).is_err());
    }
}
