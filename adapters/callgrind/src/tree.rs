//! From a callgrind call graph to a call tree.
//!
//! A callgrind file gives, per function, self costs and call edges with inclusive costs; it
//! does not say which caller a callee's cost belongs to when it has several. The tree is
//! rebuilt the way gprof does it, assuming a function costs the same per unit of inclusive
//! cost whoever calls it:
//!
//! 1. Every edge of the graph is an edge here, except self-calls (`f -> f`), plus one edge from
//!    a function to each piece of code of another file inlined into it (`fi=`/`fe=`), whose
//!    weight is that piece's self cost plus its calls.
//! 2. Cycles are broken: an iterative depth-first search from the functions nobody calls (then
//!    from any function not reached yet, in file order) drops the edges that close a cycle.
//!    What is left is acyclic.
//! 3. Functions are visited in topological order (Kahn's algorithm, ties in file order), so all
//!    call-tree nodes of a function exist before it is visited. A function nobody calls gets one
//!    root node. Each of its self costs, call edges and call counts is split over its nodes in
//!    proportion to the nodes' weights (per event column; equal shares when a column's weights
//!    are all zero), with cumulative rounding, so the shares of every item add up to the item
//!    exactly. An edge's share at a node becomes a child node whose weight is that share.
//! 4. A child is not created when its share is zero in every column, when it would be deeper
//!    than `max_depth`, or when `max_nodes` nodes exist (fewer with more than 16 event columns,
//!    see [`NODE_CELLS`]): its function's costs then go to its other nodes (or, if it has none,
//!    to a root node of its own).
//!
//! So the self cost of every function is exactly the file's, the grand total is the file's
//! total self cost, and everything is iterative. What is lost: cost inside a cycle or below a
//! self-call is shown at the outermost level (recursion collapsed), and a callee's costs are
//! split by the caller's share of the calls' cost, not by what that caller really caused.

use crate::graph::Graph;
use crate::parse::show_name;
use profconv_plugin::ir::{NONE, Profile, ProfileBuilder, ValueKind};
use profconv_plugin::{Context, PluginError};
use std::collections::VecDeque;

/// Limits of the reconstruction.
#[derive(Clone, Copy, Debug)]
pub struct BuildOptions {
    /// Deepest node (roots are depth 0; a node at `max_depth - 1` gets no children).
    pub max_depth: u32,
    /// Most nodes.
    pub max_nodes: usize,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            max_depth: crate::DEFAULT_MAX_DEPTH,
            max_nodes: crate::DEFAULT_MAX_NODES,
        }
    }
}

/// Most call-tree nodes times event columns (16 Mi): with up to 16 event columns, `max_nodes`
/// applies as given; with more, fewer nodes are made, so memory does not grow with the product
/// of a file's event columns and `max_nodes`.
pub const NODE_CELLS: usize = 1 << 24;

/// An edge of the reconstruction graph.
struct TEdge {
    from: u32,
    to: u32,
    addr: Option<u64>,
    line: u32,
    calls: u64,
    /// Offset of its weights in `TGraph::costs`.
    cost: usize,
}

/// Parses nothing: builds the call-tree profile of `g`.
pub fn build_profile(
    g: &Graph,
    opts: &BuildOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    let nf = g.funcs.len();
    let nc = g.events.len();
    // Nodes keep a weight per event column and their samples a value per column: the node
    // budget shrinks with many columns so that nodes × columns stays within NODE_CELLS.
    let max_nodes = opts.max_nodes.min(NODE_CELLS / nc.max(1));

    // Self-cost items per function (indices into g.selfs), in file order.
    let self_of = group_by(nf, g.selfs.iter().map(|s| s.func));

    // Edges: the file's (without self-calls), then inlined pieces.
    let mut costs: Vec<i64> = Vec::new();
    let mut edges: Vec<TEdge> = Vec::new();
    for (i, e) in g.edges.iter().enumerate() {
        if e.caller == e.callee {
            continue;
        }
        let at = costs.len();
        costs.extend_from_slice(g.edge_costs.row(i));
        edges.push(TEdge {
            from: e.caller,
            to: e.callee,
            addr: e.addr,
            line: e.line,
            calls: e.calls,
            cost: at,
        });
    }
    // Inlined pieces: an edge from their function, weighing their self cost and their calls
    // (a piece with neither would carry nothing, and gets no edge).
    let file_out = group_by(nf, edges.iter().map(|e| e.from));
    for (f, func) in g.funcs.iter().enumerate() {
        if func.has_block || func.inlined_into == NONE {
            continue;
        }
        if self_of[f].is_empty() && file_out[f].is_empty() {
            continue;
        }
        let overflow = || {
            PluginError::invalid_input(format!(
                "value overflow: the code of `{}` inlined into `{}`: its self costs plus the inclusive costs of its calls do not fit in 64 bits",
                show_name(&g.annotate_name(f as u32)),
                show_name(&g.annotate_name(func.inlined_into))
            ))
        };
        let at = costs.len();
        costs.resize(at + nc, 0);
        for &e in &file_out[f] {
            let from = edges[e as usize].cost;
            for k in 0..nc {
                costs[at + k] = costs[at + k]
                    .checked_add(costs[from + k])
                    .ok_or_else(overflow)?;
            }
        }
        for &s in &self_of[f] {
            for (k, v) in g.self_costs.row(s as usize).iter().enumerate() {
                costs[at + k] = costs[at + k].checked_add(*v).ok_or_else(overflow)?;
            }
        }
        edges.push(TEdge {
            from: func.inlined_into,
            to: f as u32,
            addr: None,
            line: 0,
            calls: 0,
            cost: at,
        });
    }
    drop(file_out);
    let out_of = group_by(nf, edges.iter().map(|e| e.from));

    // 2. Break cycles: depth-first search, iteratively, from functions without callers.
    let mut has_caller = vec![false; nf];
    for e in &edges {
        has_caller[e.to as usize] = true;
    }
    let mut back = vec![false; edges.len()];
    let mut color = vec![0u8; nf]; // 0 new, 1 on the search path, 2 done
    let starts = (0..nf).filter(|&f| !has_caller[f]).chain(0..nf);
    let mut path: Vec<(u32, usize)> = Vec::new();
    for start in starts {
        if color[start] != 0 {
            continue;
        }
        color[start] = 1;
        path.push((start as u32, 0));
        while let Some(top) = path.last_mut() {
            let (f, next) = (top.0 as usize, top.1);
            if let Some(&e) = out_of[f].get(next) {
                top.1 += 1;
                let to = edges[e as usize].to as usize;
                match color[to] {
                    0 => {
                        color[to] = 1;
                        path.push((to as u32, 0));
                    }
                    1 => back[e as usize] = true,
                    _ => {}
                }
            } else {
                color[f] = 2;
                path.pop();
            }
        }
    }
    let n_back = back.iter().filter(|&&b| b).count();

    // 3. Topological order over the kept edges.
    let mut indegree = vec![0u32; nf];
    for (i, e) in edges.iter().enumerate() {
        if !back[i] {
            indegree[e.to as usize] += 1;
        }
    }
    let mut queue: VecDeque<u32> = (0..nf as u32)
        .filter(|&f| indegree[f as usize] == 0)
        .collect();
    let mut order: Vec<u32> = Vec::with_capacity(nf);
    while let Some(f) = queue.pop_front() {
        order.push(f);
        for &e in &out_of[f as usize] {
            if back[e as usize] {
                continue;
            }
            let to = edges[e as usize].to as usize;
            indegree[to] -= 1;
            if indegree[to] == 0 {
                queue.push_back(to as u32);
            }
        }
    }
    if order.len() != nf {
        return Err(PluginError::internal(
            "callgrind call graph: a cycle survived cycle breaking",
        ));
    }

    // The profile's tables.
    let mut b = ProfileBuilder::new();
    for e in &g.events {
        let (unit, decimals) = unit_of(e.long_name.as_deref());
        let col = b.add_value_type(&e.name, unit, ValueKind::Weight);
        if decimals > 0 {
            b.rescale(col, decimals)?;
        }
    }
    let any_calls = edges.iter().any(|e| e.calls > 0);
    if any_calls {
        b.add_value_type("calls", "count", ValueKind::Count);
    }
    b.add_meta("source_format", "callgrind");
    for (k, v) in &g.meta {
        b.add_meta(k, v);
    }
    b.add_meta(
        "reconstruction",
        "call tree apportioned from call edges (self costs per function exact; recursion collapsed)",
    );
    let known = |s: u32| -> Option<&str> {
        let v = g.str(s);
        (s != NONE && !v.is_empty() && v != "???").then_some(v)
    };
    let ir_func: Vec<u32> = g
        .funcs
        .iter()
        .map(|f| {
            let line = (f.line != 0).then_some(f.line);
            b.func_with(g.str(f.name), known(f.file), line, known(f.object))
        })
        .collect();
    let frame = |b: &mut ProfileBuilder, f: u32, addr: Option<u64>, line: u32| {
        b.frame_at(ir_func[f as usize], addr, (line != 0).then_some(line))
    };

    // 3./4. Nodes, function by function.
    let mut node_prefix: Vec<u32> = Vec::new(); // IR stack the node's frames hang under
    let mut node_depth: Vec<u32> = Vec::new();
    let mut node_calls: Vec<i64> = Vec::new();
    let mut node_weight: Vec<i64> = Vec::new(); // nc per node
    let mut nodes_of: Vec<Vec<u32>> = vec![Vec::new(); nf];
    let mut row = vec![0i64; nc + any_calls as usize];
    let mut shares: Vec<i64> = Vec::new(); // nc per node of the current function
    let mut call_shares: Vec<i64> = Vec::new();
    let (mut cut_depth, mut cut_budget) = (0u64, 0u64);
    for &f in &order {
        let fu = f as usize;
        let kept: Vec<u32> = out_of[fu]
            .iter()
            .copied()
            .filter(|&e| !back[e as usize])
            .collect();
        if nodes_of[fu].is_empty() {
            if self_of[fu].is_empty() && kept.is_empty() {
                continue;
            }
            // A root: one node, its weight its own cost.
            let mut w = vec![0i64; nc];
            for &s in &self_of[fu] {
                for (k, v) in g.self_costs.row(s as usize).iter().enumerate() {
                    w[k] = w[k].saturating_add(*v);
                }
            }
            for &e in &kept {
                let e = &edges[e as usize];
                for k in 0..nc {
                    w[k] = w[k].saturating_add(costs[e.cost + k]);
                }
            }
            nodes_of[fu].push(node_prefix.len() as u32);
            node_prefix.push(NONE);
            node_depth.push(0);
            node_calls.push(0);
            node_weight.extend_from_slice(&w);
        }
        let nodes = std::mem::take(&mut nodes_of[fu]);
        let nn = nodes.len();
        // Per column: the weights to apportion by (equal when they are all zero).
        let w: Vec<i64> = nodes
            .iter()
            .flat_map(|&n| {
                node_weight[n as usize * nc..(n as usize + 1) * nc]
                    .iter()
                    .copied()
            })
            .collect();
        let mut sum_w = vec![0i128; nc];
        for j in 0..nn {
            for k in 0..nc {
                sum_w[k] += w[j * nc + k] as i128;
            }
        }
        let weight = |j: usize, k: usize, sum: &[i128]| -> i128 {
            if sum[k] > 0 { w[j * nc + k] as i128 } else { 1 }
        };
        let sum_eff: Vec<i128> = (0..nc)
            .map(|k| if sum_w[k] > 0 { sum_w[k] } else { nn as i128 })
            .collect();
        let apportion = |total: &[i64], shares: &mut Vec<i64>| {
            shares.clear();
            shares.resize(nn * nc, 0);
            for k in 0..nc {
                let s = total[k] as i128;
                if s == 0 {
                    continue;
                }
                let (mut cum, mut prev) = (0i128, 0i128);
                for j in 0..nn {
                    cum += weight(j, k, &sum_w);
                    let cur = s * cum / sum_eff[k];
                    shares[j * nc + k] = (cur - prev) as i64;
                    prev = cur;
                }
            }
        };
        // The position of the function's first item, where its nodes' call counts are put.
        let first_pos = self_of[fu]
            .first()
            .map(|&s| (g.selfs[s as usize].addr, g.selfs[s as usize].line))
            .or_else(|| {
                kept.first()
                    .map(|&e| (edges[e as usize].addr, edges[e as usize].line))
            })
            .unwrap_or((None, 0));

        for &s in &self_of[fu] {
            let item = &g.selfs[s as usize];
            apportion(g.self_costs.row(s as usize), &mut shares);
            for (j, &n) in nodes.iter().enumerate() {
                let sh = &shares[j * nc..(j + 1) * nc];
                if sh.iter().all(|&v| v == 0) {
                    continue;
                }
                let fr = frame(&mut b, f, item.addr, item.line);
                let stack = b.stack(node_prefix[n as usize], fr);
                row[..nc].copy_from_slice(sh);
                if any_calls {
                    row[nc] = 0;
                }
                b.add_to_stack(stack, &row)?;
            }
        }
        if any_calls {
            for &n in &nodes {
                let c = node_calls[n as usize];
                if c > 0 {
                    let fr = frame(&mut b, f, first_pos.0, first_pos.1);
                    let stack = b.stack(node_prefix[n as usize], fr);
                    row.iter_mut().for_each(|v| *v = 0);
                    row[nc] = c;
                    b.add_to_stack(stack, &row)?;
                }
            }
        }
        for &e in &kept {
            let edge = &edges[e as usize];
            apportion(&costs[edge.cost..edge.cost + nc], &mut shares);
            // Calls follow the first column's shares.
            call_shares.clear();
            call_shares.resize(nn, 0);
            if edge.calls > 0 {
                let s = edge.calls.min(i64::MAX as u64) as i128;
                let (mut cum, mut prev) = (0i128, 0i128);
                for (j, share) in call_shares.iter_mut().enumerate() {
                    cum += if nc > 0 { weight(j, 0, &sum_w) } else { 1 };
                    let cur = s * cum / if nc > 0 { sum_eff[0] } else { nn as i128 };
                    *share = (cur - prev) as i64;
                    prev = cur;
                }
            }
            for (j, &n) in nodes.iter().enumerate() {
                let sh = &shares[j * nc..(j + 1) * nc];
                if sh.iter().all(|&v| v == 0) {
                    continue;
                }
                let depth = node_depth[n as usize] + 1;
                if depth >= opts.max_depth {
                    cut_depth += 1;
                    continue;
                }
                if node_prefix.len() >= max_nodes {
                    cut_budget += 1;
                    continue;
                }
                let fr = frame(&mut b, f, edge.addr, edge.line);
                let prefix = b.stack(node_prefix[n as usize], fr);
                nodes_of[edge.to as usize].push(node_prefix.len() as u32);
                node_prefix.push(prefix);
                node_depth.push(depth);
                node_calls.push(call_shares[j]);
                node_weight.extend_from_slice(sh);
            }
        }
    }
    if n_back > 0 {
        cx.info(&format!(
            "{n_back} call edge(s) closing a cycle (recursion) were not expanded; their costs show at the outer level"
        ));
    }
    if cut_depth > 0 {
        cx.warn(&format!(
            "{cut_depth} call-tree node(s) deeper than max-depth={} were not created; their costs went to other contexts of the same functions",
            opts.max_depth
        ));
    }
    if cut_budget > 0 {
        let lowered = if max_nodes < opts.max_nodes {
            format!(
                " (lowered from {} for {nc} event columns: nodes × columns is kept within {NODE_CELLS})",
                opts.max_nodes
            )
        } else {
            String::new()
        };
        cx.warn(&format!(
            "{cut_budget} call-tree node(s) beyond max-nodes={max_nodes}{lowered} were not created; their costs went to other contexts of the same functions"
        ));
    }
    Ok(b.finish())
}

/// For each of `n` groups, the indices of the items in it, in order.
fn group_by(n: usize, keys: impl Iterator<Item = u32>) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, k) in keys.enumerate() {
        if let Some(v) = out.get_mut(k as usize) {
            v.push(i as u32);
        }
    }
    out
}

/// The unit and decimals of an event from its long name: profconv writes `name (unit)` or
/// `name (unit/10^D)`; anything else is `count` with no decimals.
fn unit_of(long: Option<&str>) -> (&str, u32) {
    let Some(long) = long else {
        return ("count", 0);
    };
    let inner = long
        .strip_suffix(')')
        .and_then(|s| s.rfind(" (").map(|i| &s[i + 2..]));
    let Some(inner) = inner.filter(|s| !s.is_empty()) else {
        return ("count", 0);
    };
    if let Some((unit, d)) = inner.rsplit_once("/10^") {
        if let Ok(d) = d.parse::<u32>() {
            if (1..=18).contains(&d) && !unit.is_empty() {
                return (unit, d);
            }
        }
    }
    (inner, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_graph;
    use profconv_plugin::Input;
    use profconv_plugin::ir::CallTree;
    use profconv_plugin::ir::testing::first_seen_tree;

    fn tree(text: &str, opts: BuildOptions) -> String {
        let g = parse_graph(
            &mut Input::from_slice(text.as_bytes()),
            &mut Context::silent(),
        )
        .unwrap();
        let p = build_profile(&g, &opts, &mut Context::silent()).unwrap();
        first_seen_tree(&p.view(), false)
    }

    #[test]
    fn costs_are_apportioned_over_callers() {
        // main calls a (cost 30) and b (cost 10); both call leaf (20 from a, 5 from b);
        // leaf's self cost 25 splits 20:5.
        let text = "events: T\nfn=main\n1 5\ncfn=a\ncalls=1 1\n1 30\ncfn=b\ncalls=1 1\n1 10\n\
                    fn=a\n1 10\ncfn=leaf\ncalls=2 1\n1 20\nfn=b\n1 5\ncfn=leaf\ncalls=3 1\n1 5\n\
                    fn=leaf\n1 25\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "main self=5 total=45 calls=0\n  a self=10 total=30 calls=1\n    leaf self=20 total=20 calls=2\n  b self=5 total=10 calls=1\n    leaf self=5 total=5 calls=3\n"
        );
    }

    #[test]
    fn cycles_and_self_calls_collapse() {
        let text = "events: T\nfn=main\n1 1\ncfn=f\ncalls=1 1\n1 10\nfn=f\n1 4\ncfn=f\ncalls=5 1\n1 6\ncfn=g\ncalls=1 1\n1 6\nfn=g\n1 5\ncfn=f\ncalls=1 1\n1 1\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "main self=1 total=10 calls=0\n  f self=4 total=9 calls=1\n    g self=5 total=5 calls=1\n"
        );
    }

    #[test]
    fn depth_limit_moves_costs_to_roots() {
        let text = "events: T\nfn=a\n1 1\ncfn=b\ncalls=1 1\n1 2\nfn=b\n1 1\ncfn=c\ncalls=1 1\n1 1\nfn=c\n1 1\n";
        let t = tree(
            text,
            BuildOptions {
                max_depth: 2,
                max_nodes: 100,
            },
        );
        assert_eq!(
            t,
            "a self=1 total=2 calls=0\n  b self=1 total=1 calls=1\nc self=1 total=1 calls=0\n"
        );
    }

    #[test]
    fn inlined_code_nests_under_its_function() {
        // callgrind_annotate: a.c:f self 11, b.h:f self 5 (the inlined piece), b.h:g self 7.
        let text = "events: Ir\nfl=a.c\nfn=f\n1 10\nfi=b.h\n2 5\ncfn=g\ncalls=1 3\n2 7\nfe=a.c\n3 1\nfl=b.h\nfn=g\n3 7\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "f self=11 total=23 calls=0\n  f self=5 total=12 calls=0\n    g self=7 total=7 calls=1\n"
        );
    }

    #[test]
    fn parts_with_other_events_are_matched_by_name() {
        let text = "events: A\nfn=f\n1 1\nevents: B A\nfn=f\n1 2 3\n+1 4\n";
        let g = parse_graph(
            &mut Input::from_slice(text.as_bytes()),
            &mut Context::silent(),
        )
        .unwrap();
        assert_eq!(g.parts, 2);
        assert_eq!(g.self_total(), vec![4, 6]);
        let p = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
        let t = CallTree::build(&p.view()).unwrap();
        assert_eq!((t.grand_total(0), t.grand_total(1)), (4, 6));
        assert_eq!(p.view().value_type_name(1), "B");
    }

    #[test]
    fn units_from_long_names() {
        assert_eq!(unit_of(Some("samples (count)")), ("count", 0));
        assert_eq!(unit_of(Some("time (nanoseconds/10^3)")), ("nanoseconds", 3));
        assert_eq!(unit_of(Some("Instruction Fetch")), ("count", 0));
        assert_eq!(unit_of(None), ("count", 0));
    }
}
