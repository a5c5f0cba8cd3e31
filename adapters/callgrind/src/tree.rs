//! From a callgrind call graph to a call tree.
//!
//! A callgrind file gives, per function, self costs and call edges with inclusive costs; it
//! does not say which caller a callee's cost belongs to when it has several. The tree is
//! rebuilt the way gprof does it, assuming a function costs the same per unit of inclusive
//! cost whoever calls it. [`build`] takes these steps in turn, then [`report`] gives the
//! messages:
//!
//! 1. [`tree_edges`]: every edge of the graph is an edge here, except self-calls (`f -> f`),
//!    plus one edge from a function to each piece of code of another file inlined into it
//!    (`fi=`/`fe=`), whose weight is that piece's self cost plus its calls.
//! 2. [`recursion_units`]: recursion cycles of several functions are units, as gprof takes
//!    them: the strongly connected components of the graph ([`components`]), whose functions
//!    share the nodes made by the calls into any of them (the cycle's entries), and whose calls
//!    to each other are left out (their inclusive costs count nested levels again); up to
//!    [`MAX_UNIT`] functions. Larger components (call graphs rebuilt from sampled stacks) have
//!    their cycles broken by a depth-first search that drops the edges closing a cycle
//!    ([`break_cycles`]). What is left is acyclic.
//! 3. [`units_in_order`]: units are visited in topological order (Kahn's algorithm, ties in
//!    file order), so all call-tree nodes of a unit exist before it is visited
//!    ([`Reconstruction::visit`]). A function nobody calls gets one root node
//!    ([`Reconstruction::add_root`]). A function of a cycle splits its items over all of the
//!    cycle's entry nodes, its frames under the entry function's frame where the entry is
//!    another function ([`UnitFrames`]). Each node gets a capacity, its share of the function's
//!    total (per event column, in proportion to the nodes' weights; equal shares when a
//!    column's weights are all zero), and each of the function's self costs and call edges is
//!    split over what the capacities have left (see [`Split`]): the shares of every item add up
//!    to the item, and every node gets its capacity exactly. An edge's share at a node becomes
//!    a child node whose weight is that share, and the edge's call count is split over those
//!    children like its cost ([`Reconstruction::split_call_edge`]). A function that costs more
//!    than the calls into it (a thread's start, a function that is also a root) gets a root
//!    node for the rest, unless it is in a recursion cycle or some of its calls made no node
//!    ([`Reconstruction::add_excess_root`]).
//! 4. A child is not created ([`Reconstruction::split_call_edge`]) when its share is zero in
//!    every column (but an edge that costs nothing and has calls gets one child of no weight,
//!    with its calls, under the caller's first node), when it would be deeper than
//!    `max_depth`, or when `max_nodes` nodes exist (fewer with more than 16 event columns, see
//!    [`NODE_CELLS`]): its function's costs then go to its other nodes (or, if it has none, to
//!    a root node of its own).
//! 5. [`WorkLimit`]: the work is bounded (see [`WORK_PER_NODE`]): shares are found by a tree
//!    search when an item is smaller than its function's node count; past a limit of node
//!    shares, a call edge makes no child (as in 4.) and a function's self costs are split as
//!    one item, at its first position ([`Reconstruction::split_self_costs`]). Splits that can
//!    make no child (only counting the nodes not made, for the warnings) have a limit of their
//!    own, past which they are skipped, uncounted.
//!
//! So the self cost of every function is exactly the file's, the grand total is the file's
//! total self cost, and everything is iterative. What is lost: cost inside a cycle or below a
//! self-call is shown at the outermost level (recursion collapsed, the calls inside a cycle
//! not counted), and a callee's costs are split by the caller's share of the calls' cost, not
//! by what that caller really caused.

use crate::graph::{Graph, Positions};
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
    /// The positions the frames keep.
    pub positions: Positions,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            max_depth: crate::DEFAULT_MAX_DEPTH,
            max_nodes: crate::DEFAULT_MAX_NODES,
            positions: Positions::Instr,
        }
    }
}

/// Most call-tree nodes times event columns (16 Mi): with up to 16 event columns, `max_nodes`
/// applies as given; with more, fewer nodes are made, so memory does not grow with the product
/// of a file's event columns and `max_nodes`.
pub const NODE_CELLS: usize = 1 << 24;

/// The work limit of the reconstruction, in node shares. Splitting an item (a self cost, a call
/// edge) over a function's `n` nodes costs `n` when done densely, or, when the item is smaller
/// than that, one tree search per nonzero share; so the fan-out shape (2^L paths to one
/// function with K call edges) costs about nodes made, not 2^L × K. What is left, splitting every
/// item over every node, is nodes × items: the limit is `WORK_PER_NODE` per node of the (possibly
/// lowered) `max_nodes`, or of the default [`crate::DEFAULT_MAX_NODES`] (lowered the same way)
/// when that is more, plus [`WORK_PER_ITEM`] per self-cost position and call edge of the graph.
/// An item costing at most `WORK_PER_ITEM` is always split. The limit applies to the call edges'
/// splits and, separately, to the self costs' splits, so that lines split near the roots do not
/// leave the calls below without children. Past it, a call edge is not split (no child, as past
/// `max_nodes`), and a function's self costs are split as one item, at its first position,
/// unless all of its unit's self-cost splits still fit; a warning counts both. A call edge
/// that can make no node (`max_depth` or `max_nodes` reached) is split only to count the nodes
/// it does not make, within a limit of its own of the same size, past which it is skipped
/// (uncounted, says the warning). The work then stays within four times the limit plus the
/// nodes made.
pub const WORK_PER_NODE: usize = 4;
/// See [`WORK_PER_NODE`].
pub const WORK_PER_ITEM: usize = 16;

/// The most functions of a recursion cycle taken as one unit (see `recursion_units`).
pub const MAX_UNIT: usize = 256;

/// An edge of the reconstruction graph.
struct TEdge {
    from: u32,
    to: u32,
    addr: Option<u64>,
    line: u32,
    calls: u64,
    /// Offset of its weights (one per event column) in [`TreeEdges::costs`].
    cost: usize,
}

/// The edges of the reconstruction graph (step 1) and their weights.
struct TreeEdges {
    list: Vec<TEdge>,
    /// The edges' weights, `nc` from each edge's `cost`.
    costs: Vec<i64>,
    nc: usize,
}

impl TreeEdges {
    /// The weights of edge `e`, one per event column.
    fn cost(&self, e: u32) -> &[i64] {
        let at = self.list[e as usize].cost;
        &self.costs[at..at + self.nc]
    }
}

/// Parses nothing: builds the call-tree profile of `g` (of a copy whose positions are merged
/// when `g` has positions `opts.positions` drops: see [`Graph::merge_positions`]).
pub fn build_profile(
    g: &Graph,
    opts: &BuildOptions,
    cx: &mut Context<'_>,
) -> Result<Profile, PluginError> {
    if g.has_positions_beyond(opts.positions) {
        let mut merged = g.clone();
        merged
            .merge_positions(opts.positions)
            .map_err(PluginError::invalid_input)?;
        return build(&merged, opts, Tuning::default(), cx).map(|(p, _)| p);
    }
    build(g, opts, Tuning::default(), cx).map(|(p, _)| p)
}

/// How [`build`] departs from [`build_profile`] (for tests).
#[derive(Clone, Copy, Debug, Default)]
struct Tuning {
    /// Split every item over every node, with no work limit (the reconstruction before the
    /// work was bounded, which tests compare against).
    dense_only: bool,
    /// This work limit instead of the default.
    max_work: Option<usize>,
}

/// What a build did (the tests read it).
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(not(test), allow(dead_code))]
struct Stats {
    /// Node shares of the splits (see [`WORK_PER_NODE`]).
    work: usize,
    /// Node shares of the splits that could make no node.
    count_work: usize,
    max_work: usize,
    nodes: usize,
}

/// [`build_profile`], tuned: the steps of the module doc in turn, then the messages.
fn build(
    g: &Graph,
    opts: &BuildOptions,
    tuning: Tuning,
    cx: &mut Context<'_>,
) -> Result<(Profile, Stats), PluginError> {
    let nf = g.funcs.len();
    let nc = g.events.len();
    // Nodes keep a weight per event column and their samples a value per column: the node
    // budget shrinks with many columns so that nodes × columns stays within NODE_CELLS.
    let max_nodes = opts.max_nodes.min(NODE_CELLS / nc.max(1));
    // Self-cost items per function (indices into g.selfs), in file order.
    let self_of = group_by(nf, g.selfs.iter().map(|s| s.func));

    let edges = tree_edges(g, &self_of)?;
    let out_of = group_by(nf, edges.list.iter().map(|e| e.from));
    let beyond_calls = beyond_calls(g, &self_of, &edges);
    let units = recursion_units(&edges, &out_of, &beyond_calls);
    let units_in_order = units_in_order(&units, &edges, &out_of)?;
    let edges_left_out = units.left_out.iter().filter(|&&b| b).count();
    // What is left of each function's calls: the ones that make nodes (in place of `out_of`).
    let calls_out: Vec<Vec<u32>> = out_of
        .into_iter()
        .map(|mut out| {
            out.retain(|&e| !units.left_out[e as usize]);
            out
        })
        .collect();

    let out = Output::new(g, edges.list.iter().any(|e| e.calls > 0))?;
    let items = g.selfs.len().saturating_add(edges.list.len());
    let mut tree = Reconstruction {
        g,
        edges: &edges,
        self_of: &self_of,
        calls_out: &calls_out,
        in_cycle: &units.in_cycle,
        beyond_calls: &beyond_calls,
        first_pos_of: first_positions(g, &self_of, &calls_out, &edges),
        max_depth: opts.max_depth,
        max_nodes,
        out,
        nodes: Nodes::default(),
        nodes_of: vec![Vec::new(); nf],
        cut_into: vec![false; nf],
        work: WorkLimit::new(tuning, max_nodes, nc, items),
        caveats: Caveats {
            edges_left_out,
            ..Caveats::default()
        },
        split: Split {
            dense_only: tuning.dense_only,
            ..Split::default()
        },
        parts: Parts::default(),
        frames: UnitFrames::default(),
        sums: Vec::new(),
        totals: Vec::new(),
        weight: Vec::new(),
        calls: Vec::new(),
        merged: Vec::new(),
    };
    for unit in &units_in_order {
        tree.visit(unit)?;
    }

    report(cx, &tree.caveats, &tree.work, opts, max_nodes, nc);
    let stacks = tree.out.b.profile().stacks.prefix.len();
    report_positions(cx, g, opts.positions, stacks, tree.nodes.len());
    let stats = Stats {
        work: tree.work.done,
        count_work: tree.work.count_work,
        max_work: tree.work.max,
        nodes: tree.nodes.len(),
    };
    Ok((tree.out.b.finish(), stats))
}

/// Step 1: the edges of the reconstruction graph: the file's call edges but self-calls, then an
/// edge from a function to each piece of code of another file inlined into it, weighing the
/// piece's self cost plus its calls (a piece with neither would carry nothing, and gets no
/// edge).
fn tree_edges(g: &Graph, self_of: &[Vec<u32>]) -> Result<TreeEdges, PluginError> {
    let nc = g.events.len();
    let mut edges = TreeEdges {
        list: Vec::new(),
        costs: Vec::new(),
        nc,
    };
    for (i, e) in g.edges.iter().enumerate() {
        if e.caller == e.callee {
            continue;
        }
        let at = edges.costs.len();
        edges.costs.extend_from_slice(g.edge_costs.row(i));
        edges.list.push(TEdge {
            from: e.caller,
            to: e.callee,
            addr: e.addr,
            line: e.line,
            calls: e.calls,
            cost: at,
        });
    }
    let file_out = group_by(g.funcs.len(), edges.list.iter().map(|e| e.from));
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
        let costs = &mut edges.costs;
        let at = costs.len();
        costs.resize(at + nc, 0);
        for &e in &file_out[f] {
            let from = edges.list[e as usize].cost;
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
        edges.list.push(TEdge {
            from: func.inlined_into,
            to: f as u32,
            addr: None,
            line: 0,
            calls: 0,
            cost: at,
        });
    }
    Ok(edges)
}

/// The units of step 2, and the edges it leaves out.
struct Units {
    /// Per function, its unit: its cycle's id (one of the cycle's functions), or itself.
    id: Vec<u32>,
    /// Per function, whether it is in a recursion cycle (a unit, or one whose cycles are broken).
    in_cycle: Vec<bool>,
    /// Per edge, whether it makes no node: a call between the functions of a unit, or a call
    /// closing a cycle of a larger component.
    left_out: Vec<bool>,
}

/// Step 2: recursion cycles of several functions (strongly connected components) of up to
/// [`MAX_UNIT`] functions are units, as gprof takes them, and the calls between their functions
/// are left out; the cycles of larger components are broken ([`break_cycles`]).
fn recursion_units(edges: &TreeEdges, out_of: &[Vec<u32>], beyond_calls: &[i128]) -> Units {
    let nf = out_of.len();
    let comp = components(nf, out_of, |e| edges.list[e as usize].to);
    let mut comp_size = vec![0u32; nf];
    for &c in &comp {
        comp_size[c as usize] += 1;
    }
    let in_cycle = (0..nf).map(|f| comp_size[comp[f] as usize] > 1).collect();
    // A unit: a cycle of up to MAX_UNIT functions, else one function. A larger component is no
    // program's recursion but a call graph rebuilt from sampled stacks (a folded profile
    // written as callgrind: its call costs count each sample once, not once per level); taken
    // as one unit, its whole tree would be flat, so its cycles are broken instead.
    let id: Vec<u32> = (0..nf)
        .map(|f| match comp_size[comp[f] as usize] as usize {
            2..=MAX_UNIT => comp[f],
            _ => f as u32,
        })
        .collect();
    let mut left_out: Vec<bool> = edges
        .list
        .iter()
        .map(|e| id[e.from as usize] == id[e.to as usize])
        .collect();
    break_cycles(edges, out_of, beyond_calls, &mut left_out);
    Units {
        id,
        in_cycle,
        left_out,
    }
}

/// Leaves out the edges closing a cycle of what `left_out` leaves, found by an iterative
/// depth-first search from the functions nobody calls, then from any function not reached yet,
/// by most cost beyond the calls into it.
fn break_cycles(
    edges: &TreeEdges,
    out_of: &[Vec<u32>],
    beyond_calls: &[i128],
    left_out: &mut [bool],
) {
    let nf = out_of.len();
    let mut has_caller = vec![false; nf];
    for (i, e) in edges.list.iter().enumerate() {
        has_caller[e.to as usize] |= !left_out[i];
    }
    // Where a cycle nothing outside calls is entered: at its function with the most cost
    // beyond what the calls into it bring (first event). cProfile's data, as pyprof2calltree
    // writes it, is one such cycle: `exec` runs the script's `<module>`, whose imports run
    // `exec` for each imported module's `<module>`; entered at the first function in file
    // order, the script's `<module>` was drawn under `json`'s, which then had all of the cost.
    let mut fallback: Vec<usize> = (0..nf).collect();
    fallback.sort_by_key(|&f| std::cmp::Reverse(beyond_calls[f]));
    let mut color = vec![0u8; nf]; // 0 new, 1 on the search path, 2 done
    let starts = (0..nf).filter(|&f| !has_caller[f]).chain(fallback);
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
                if left_out[e as usize] {
                    continue;
                }
                let to = edges.list[e as usize].to as usize;
                match color[to] {
                    0 => {
                        color[to] = 1;
                        path.push((to as u32, 0));
                    }
                    1 => left_out[e as usize] = true,
                    _ => {}
                }
            } else {
                color[f] = 2;
                path.pop();
            }
        }
    }
}

/// Step 3's order: the units' functions (each unit's in file order), every unit after the units
/// calling it (Kahn's algorithm, ties in file order), so that every node of a unit exists
/// before the unit is visited.
fn units_in_order(
    units: &Units,
    edges: &TreeEdges,
    out_of: &[Vec<u32>],
) -> Result<Vec<Vec<u32>>, PluginError> {
    let nf = out_of.len();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); nf];
    for (f, &c) in units.id.iter().enumerate() {
        members[c as usize].push(f as u32);
    }
    let mut indegree = vec![0u32; nf];
    for (i, e) in edges.list.iter().enumerate() {
        if !units.left_out[i] {
            indegree[units.id[e.to as usize] as usize] += 1;
        }
    }
    let mut queued = vec![false; nf];
    let mut queue: VecDeque<u32> = VecDeque::new();
    for &c in &units.id {
        if indegree[c as usize] == 0 && !std::mem::replace(&mut queued[c as usize], true) {
            queue.push_back(c);
        }
    }
    let mut order: Vec<u32> = Vec::new();
    let mut visited = 0;
    while let Some(c) = queue.pop_front() {
        order.push(c);
        for &f in &members[c as usize] {
            visited += 1;
            for &e in &out_of[f as usize] {
                if units.left_out[e as usize] {
                    continue;
                }
                let to = units.id[edges.list[e as usize].to as usize] as usize;
                indegree[to] -= 1;
                if indegree[to] == 0 {
                    queue.push_back(to as u32);
                }
            }
        }
    }
    if visited != nf {
        return Err(PluginError::internal(
            "callgrind call graph: the units of recursion cycles are not in an order",
        ));
    }
    Ok(order
        .iter()
        .map(|&c| std::mem::take(&mut members[c as usize]))
        .collect())
}

/// An item's position in its function: its address, and its line (0 for none).
type Pos = (Option<u64>, u32);

/// Per function, the position of its first item (its first self cost, else its first call that
/// makes nodes), where its nodes' call counts are put (and, in a cycle, under which the unit's
/// other functions are drawn).
fn first_positions(
    g: &Graph,
    self_of: &[Vec<u32>],
    calls_out: &[Vec<u32>],
    edges: &TreeEdges,
) -> Vec<Pos> {
    (0..self_of.len())
        .map(|f| {
            self_of[f]
                .first()
                .map(|&s| (g.selfs[s as usize].addr, g.selfs[s as usize].line))
                .or_else(|| {
                    calls_out[f]
                        .first()
                        .map(|&e| (edges.list[e as usize].addr, edges.list[e as usize].line))
                })
                .unwrap_or((None, 0))
        })
        .collect()
}

/// The profile being written: its tables, then a sample per share of an item or per node's
/// calls.
struct Output {
    b: ProfileBuilder,
    /// Per function of the graph, its function in the profile (`NONE` for the synthetic root
    /// caller, whose calls are left out).
    ir_func: Vec<u32>,
    nc: usize,
    /// Whether the profile has a `calls` column, after the event columns.
    any_calls: bool,
    /// Scratch: one sample's values.
    row: Vec<i64>,
}

impl Output {
    /// The profile's tables: a value type per event (and `calls` when some edge has calls), the
    /// metadata, the functions.
    fn new(g: &Graph, any_calls: bool) -> Result<Self, PluginError> {
        let mut b = ProfileBuilder::new();
        for e in &g.events {
            let (unit, decimals) = unit_of(e.long_name.as_deref());
            let name = original_name(&e.name, e.long_name.as_deref()).unwrap_or(&e.name);
            let col = b.add_value_type(name, unit, ValueKind::Weight);
            if decimals > 0 {
                b.rescale(col, decimals)?;
            }
        }
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
            .enumerate()
            .map(|(k, f)| {
                if g.root_caller == Some(k as u32) {
                    return NONE;
                }
                let line = (f.line != 0).then_some(f.line);
                b.func_with(g.str(f.name), known(f.file), line, known(f.object))
            })
            .collect();
        let nc = g.events.len();
        Ok(Output {
            b,
            ir_func,
            nc,
            any_calls,
            row: vec![0; nc + any_calls as usize],
        })
    }

    /// The stack of function `f`'s frame at `pos` under the stack `prefix`.
    fn stack(&mut self, prefix: u32, f: u32, (addr, line): Pos) -> u32 {
        let frame = self
            .b
            .frame_at(self.ir_func[f as usize], addr, (line != 0).then_some(line));
        self.b.stack(prefix, frame)
    }

    /// A sample of `cost` (one value per event column) at `f`'s frame at `pos` under `prefix`.
    fn add_cost(&mut self, prefix: u32, f: u32, pos: Pos, cost: &[i64]) -> Result<(), PluginError> {
        let stack = self.stack(prefix, f, pos);
        self.row[..self.nc].copy_from_slice(cost);
        if self.any_calls {
            self.row[self.nc] = 0;
        }
        self.b.add_to_stack(stack, &self.row)?;
        Ok(())
    }

    /// A sample of `calls` and no cost at `f`'s frame at `pos` under `prefix`.
    fn add_calls(&mut self, prefix: u32, f: u32, pos: Pos, calls: i64) -> Result<(), PluginError> {
        let stack = self.stack(prefix, f, pos);
        self.row.iter_mut().for_each(|v| *v = 0);
        self.row[self.nc] = calls;
        self.b.add_to_stack(stack, &self.row)?;
        Ok(())
    }
}

/// The call-tree nodes made so far, by index.
#[derive(Default)]
struct Nodes {
    /// The IR stack the node's frames hang under.
    prefix: Vec<u32>,
    /// The function the node is a call of.
    func: Vec<u32>,
    /// Roots are at depth 0.
    depth: Vec<u32>,
    /// The calls into the node's function the node stands for.
    calls: Vec<i64>,
    /// Its weight per event column (`nc` per node): its share of the calls' cost.
    weight: Vec<i64>,
}

impl Nodes {
    fn len(&self) -> usize {
        self.prefix.len()
    }

    /// Makes a node; returns its index.
    fn push(&mut self, prefix: u32, func: u32, depth: u32, calls: i64, weight: &[i64]) -> u32 {
        let n = self.len() as u32;
        self.prefix.push(prefix);
        self.func.push(func);
        self.depth.push(depth);
        self.calls.push(calls);
        self.weight.extend_from_slice(weight);
        n
    }
}

/// Where the frames of the unit being visited go, per node of the unit: a function's frames go
/// under its own nodes' prefixes, and (in a cycle) under the frame of the other function a node
/// is a call of, at that function's first position.
#[derive(Default)]
struct UnitFrames {
    /// (function, prefix) of each node.
    own: Vec<(u32, u32)>,
    /// The stack of each node's function's frame under the node's prefix (cycles only).
    under: Vec<u32>,
}

impl UnitFrames {
    /// The stack under which function `f`'s frames go at the unit's node `j`.
    fn base(&self, j: usize, f: u32) -> u32 {
        match self.own[j] {
            (e, prefix) if e == f => prefix,
            _ => self.under[j],
        }
    }
}

/// Steps 3 and 4: the call-tree nodes, made unit by unit, and the samples of their costs.
struct Reconstruction<'a> {
    g: &'a Graph,
    edges: &'a TreeEdges,
    /// Per function, its self-cost items (indices into `g.selfs`).
    self_of: &'a [Vec<u32>],
    /// Per function, its calls that make nodes (edges not left out by step 2).
    calls_out: &'a [Vec<u32>],
    /// Per function, whether it is in a recursion cycle.
    in_cycle: &'a [bool],
    /// Per function, its cost beyond the calls into it (see [`beyond_calls`]).
    beyond_calls: &'a [i128],
    first_pos_of: Vec<Pos>,
    max_depth: u32,
    /// `max_nodes`, lowered for many event columns.
    max_nodes: usize,
    out: Output,
    nodes: Nodes,
    /// Per function, the nodes made for the calls into it, until its unit is visited.
    nodes_of: Vec<Vec<u32>>,
    /// Functions some of whose calls made no node (max-depth, max-nodes, the work limit).
    cut_into: Vec<bool>,
    work: WorkLimit,
    caveats: Caveats,
    // Scratch for the unit being visited.
    split: Split,
    parts: Parts,
    frames: UnitFrames,
    /// The totals of the unit's items, per column, and the same when they fit in 64 bits.
    sums: Vec<i128>,
    totals: Vec<Option<u64>>,
    /// A new root node's weight.
    weight: Vec<i64>,
    /// A call edge's calls, per share.
    calls: Vec<i64>,
    /// A function's self costs, as one item.
    merged: Vec<i64>,
}

impl Reconstruction<'_> {
    /// Visits a unit (step 3): its nodes (the calls into it, or a root node when there are
    /// none, plus a root node for any cost beyond the calls), then its items, split over them.
    fn visit(&mut self, unit: &[u32]) -> Result<(), PluginError> {
        self.unit_totals(unit);
        if unit.iter().all(|&f| self.nodes_of[f as usize].is_empty()) && !self.add_root(unit) {
            return Ok(());
        }
        // The unit's nodes: the calls into any of its functions.
        let mut nodes: Vec<u32> = Vec::new();
        for &f in unit {
            nodes.append(&mut self.nodes_of[f as usize]);
        }
        self.add_excess_root(unit, &mut nodes);
        self.split
            .reset(&nodes, &self.nodes.weight, self.out.nc, &self.totals);
        self.place_frames(unit, &nodes);
        self.split_self_costs(unit)?;
        self.add_call_counts(&nodes)?;
        let calls_out = self.calls_out;
        // A split that can make no node (every node at max-depth - 1, or max-nodes reached)
        // only counts the nodes it does not make: its work has a limit of its own, past which
        // it is skipped (so counting never takes the work that makes the tree).
        let all_deep = nodes
            .iter()
            .all(|&n| self.nodes.depth[n as usize] + 1 >= self.max_depth);
        for &f in unit {
            for &e in &calls_out[f as usize] {
                self.split_call_edge(f, e, &nodes, all_deep);
            }
        }
        Ok(())
    }

    /// The totals of the unit's items, per column: a root's weight, and the nodes' capacities.
    fn unit_totals(&mut self, unit: &[u32]) {
        let (g, edges) = (self.g, self.edges);
        self.sums.clear();
        self.sums.resize(self.out.nc, 0);
        for &f in unit {
            let rows = self.self_of[f as usize]
                .iter()
                .map(|&s| g.self_costs.row(s as usize));
            let calls = self.calls_out[f as usize].iter().map(|&e| edges.cost(e));
            for row in rows.chain(calls) {
                for (sum, &v) in self.sums.iter_mut().zip(row) {
                    *sum += v as i128;
                }
            }
        }
        self.totals.clear();
        self.totals
            .extend(self.sums.iter().map(|&t| u64::try_from(t).ok()));
    }

    /// A unit nothing calls: one root node, weighing the unit's own cost, of its function with
    /// items that has the most cost beyond what the calls into it bring (the first such: a
    /// cycle nothing outside calls is entered there, as in step 2). False when no function of
    /// the unit has items.
    fn add_root(&mut self, unit: &[u32]) -> bool {
        let has_items =
            |f: u32| !self.self_of[f as usize].is_empty() || !self.calls_out[f as usize].is_empty();
        let Some(f) = unit
            .iter()
            .copied()
            .filter(|&f| has_items(f))
            .min_by_key(|&f| std::cmp::Reverse(self.beyond_calls[f as usize]))
        else {
            return false;
        };
        self.weight.clear();
        self.weight.extend(
            self.sums
                .iter()
                .map(|&t| t.clamp(i64::MIN as i128, i64::MAX as i128) as i64),
        );
        let root = self.nodes.push(NONE, f, 0, 0, &self.weight);
        self.nodes_of[f as usize].push(root);
        true
    }

    /// More cost than its calls bring (a thread's start function: callgrind charges the new
    /// thread's work to it, not to the call that created the thread; a function that is also a
    /// root): the excess is a root node of its own, added to `nodes`, so that each call keeps
    /// the cost the file gives it. Not for a cycle's unit, nor when some of the function's
    /// calls made no node (their cost goes to its nodes).
    fn add_excess_root(&mut self, unit: &[u32], nodes: &mut Vec<u32>) {
        let &[f] = unit else {
            return;
        };
        if self.in_cycle[f as usize]
            || nodes.is_empty()
            || self.cut_into[f as usize]
            || self.nodes.len() >= self.max_nodes
        {
            return;
        }
        let nc = self.out.nc;
        self.weight.clear();
        for (k, &total) in self.sums.iter().enumerate() {
            let called: i128 = nodes
                .iter()
                .map(|&n| self.nodes.weight[n as usize * nc + k] as i128)
                .sum();
            self.weight
                .push((total - called).clamp(0, i64::MAX as i128) as i64);
        }
        if self.weight.iter().any(|&x| x > 0) {
            nodes.push(self.nodes.push(NONE, f, 0, 0, &self.weight));
            self.caveats.thread_roots += 1;
        }
    }

    /// Where the unit's frames go at each of its `nodes` (see [`UnitFrames`]).
    fn place_frames(&mut self, unit: &[u32], nodes: &[u32]) {
        self.frames.under.clear();
        if unit.len() > 1 {
            for &n in nodes {
                let f = self.nodes.func[n as usize];
                let under = self.out.stack(
                    self.nodes.prefix[n as usize],
                    f,
                    self.first_pos_of[f as usize],
                );
                self.frames.under.push(under);
            }
        }
        self.frames.own.clear();
        self.frames.own.extend(
            nodes
                .iter()
                .map(|&n| (self.nodes.func[n as usize], self.nodes.prefix[n as usize])),
        );
    }

    /// The self costs of the unit's functions, split over its nodes: by position, or, past the
    /// work limit (step 5), as one item at the function's first position.
    fn split_self_costs(&mut self, unit: &[u32]) -> Result<(), PluginError> {
        let (g, self_of) = (self.g, self.self_of);
        let self_work: Vec<usize> = unit
            .iter()
            .map(|&f| {
                self_of[f as usize].iter().fold(0usize, |a, &s| {
                    a.saturating_add(self.split.cost(g.self_costs.row(s as usize)))
                })
            })
            .collect();
        let unit_work = self_work.iter().fold(0usize, |a, &w| a.saturating_add(w));
        for (&f, &work) in unit.iter().zip(&self_work) {
            let items = &self_of[f as usize];
            if self.work.splits_by_position(items.len(), work, unit_work) {
                self.work.spend_on_self(work);
                for &s in items {
                    let item = &g.selfs[s as usize];
                    self.split
                        .split(g.self_costs.row(s as usize), &mut self.parts);
                    for (j, share) in self.parts.iter() {
                        let prefix = self.frames.base(j, f);
                        self.out
                            .add_cost(prefix, f, (item.addr, item.line), share)?;
                    }
                }
            } else {
                // Past the work limit: the function's self costs are split as one item, at
                // its first position (each node keeps its share; the split by line is lost).
                self.caveats.merged_funcs += 1;
                self.merged.clear();
                self.merged.resize(self.out.nc, 0);
                for &s in items {
                    for (c, v) in g.self_costs.row(s as usize).iter().enumerate() {
                        self.merged[c] = self.merged[c].checked_add(*v).ok_or_else(|| {
                            PluginError::internal(format!(
                                "callgrind: the self costs of `{}` do not fit in 64 bits",
                                show_name(&g.annotate_name(f))
                            ))
                        })?;
                    }
                }
                self.work.spend_on_self(self.split.cost(&self.merged));
                self.split.split(&self.merged, &mut self.parts);
                for (j, share) in self.parts.iter() {
                    let prefix = self.frames.base(j, f);
                    self.out
                        .add_cost(prefix, f, self.first_pos_of[f as usize], share)?;
                }
            }
        }
        Ok(())
    }

    /// The calls into the unit's `nodes`, each at its function's first position.
    fn add_call_counts(&mut self, nodes: &[u32]) -> Result<(), PluginError> {
        if !self.out.any_calls {
            return Ok(());
        }
        for &n in nodes {
            let calls = self.nodes.calls[n as usize];
            if calls > 0 {
                let f = self.nodes.func[n as usize];
                let pos = self.first_pos_of[f as usize];
                self.out
                    .add_calls(self.nodes.prefix[n as usize], f, pos, calls)?;
            }
        }
        Ok(())
    }

    /// Call edge `e` of the unit's function `f`, split over the unit's `nodes`: a child node
    /// per share (step 3), but none past a limit (steps 4 and 5).
    fn split_call_edge(&mut self, f: u32, e: u32, nodes: &[u32], all_deep: bool) {
        let edges = self.edges;
        let edge = &edges.list[e as usize];
        let cost = self.split.cost(edges.cost(e));
        let full = self.nodes.len() >= self.max_nodes;
        let counting_only = cost > WORK_PER_ITEM && (all_deep || full);
        if !self.work.admits_edge(cost, counting_only) {
            self.cut_into[edge.to as usize] = true;
            match (counting_only, all_deep) {
                (false, _) => self.caveats.unsplit_edges += 1,
                (true, true) => self.caveats.uncounted_deep += 1,
                (true, false) => self.caveats.uncounted_full += 1,
            }
            return;
        }
        self.split.split(edges.cost(e), &mut self.parts);
        self.parts.share_calls(edge.calls, &mut self.calls);
        if self.parts.idx.is_empty() && edge.calls > 0 && !nodes.is_empty() {
            // Calls that cost nothing (a function callgrind counted no instruction of, a PVM
            // call of no ticks): kept, as KCachegrind and callgrind_annotate list them, on one
            // child of no weight under the caller's first node.
            self.parts.zero_share(0);
            self.calls.clear();
            self.calls.push(edge.calls.min(i64::MAX as u64) as i64);
        }
        for ((j, share), &calls) in self.parts.iter().zip(&self.calls) {
            let n = nodes[j] as usize;
            let depth = self.nodes.depth[n] + 1 + u32::from(self.nodes.func[n] != f);
            if depth >= self.max_depth {
                self.caveats.cut_depth += 1;
                self.cut_into[edge.to as usize] = true;
                continue;
            }
            if self.nodes.len() >= self.max_nodes {
                self.caveats.cut_budget += 1;
                self.cut_into[edge.to as usize] = true;
                continue;
            }
            let prefix = self
                .out
                .stack(self.frames.base(j, f), f, (edge.addr, edge.line));
            let child = self.nodes.push(prefix, edge.to, depth, calls, share);
            self.nodes_of[edge.to as usize].push(child);
        }
    }
}

/// Step 5: the work limit (see [`WORK_PER_NODE`]), in node shares as [`Split::cost`] counts
/// them, and the work done. Items that take at most [`WORK_PER_ITEM`] are always split (and
/// counted).
struct WorkLimit {
    max: usize,
    /// The nodes the limit allows for (a max-nodes below the default does not lower it).
    per_node: usize,
    /// The self-cost positions and call edges it allows for.
    items: usize,
    /// The work of the splits that make nodes or costs.
    done: usize,
    /// Of that, the self costs' splits, and the call edges'.
    self_spent: usize,
    edge_spent: usize,
    /// The work of the splits that can make no node, only counting the nodes not made.
    count_work: usize,
}

impl WorkLimit {
    fn new(tuning: Tuning, max_nodes: usize, nc: usize, items: usize) -> Self {
        let per_node = max_nodes.max(crate::DEFAULT_MAX_NODES.min(NODE_CELLS / nc.max(1)));
        let max = match tuning {
            Tuning {
                dense_only: true, ..
            } => usize::MAX,
            Tuning {
                max_work: Some(w), ..
            } => w,
            _ => per_node
                .saturating_mul(WORK_PER_NODE)
                .saturating_add(items.saturating_mul(WORK_PER_ITEM)),
        };
        WorkLimit {
            max,
            per_node,
            items,
            done: 0,
            self_spent: 0,
            edge_spent: 0,
            count_work: 0,
        }
    }

    /// Whether a function's self costs (`positions` of them, whose splits take `work`) are
    /// split by position: when that is cheap (a few shares per position, as for a root) or
    /// when all of the unit's self-cost splits (`unit_work`) fit in their own work limit. The
    /// call edges have a limit of their own: splitting lines only places costs within a frame,
    /// and must not leave later calls without children (their callees' whole subtrees would
    /// become roots).
    fn splits_by_position(&self, positions: usize, work: usize, unit_work: usize) -> bool {
        positions <= 1
            || work <= positions.saturating_mul(WORK_PER_ITEM)
            || self.self_spent.saturating_add(unit_work) <= self.max
    }

    fn spend_on_self(&mut self, work: usize) {
        self.done = self.done.saturating_add(work);
        self.self_spent = self.self_spent.saturating_add(work);
    }

    /// Whether a call edge whose split takes `work` is split, counting the work if so; with
    /// `counting_only`, the split can make no node and has a limit of its own.
    fn admits_edge(&mut self, work: usize, counting_only: bool) -> bool {
        if counting_only {
            if self.count_work.saturating_add(work) > self.max {
                return false;
            }
            self.count_work += work;
        } else if work > WORK_PER_ITEM && self.edge_spent.saturating_add(work) > self.max {
            // Past the work limit: no child, as past max-nodes.
            return false;
        } else {
            self.done = self.done.saturating_add(work);
            self.edge_spent = self.edge_spent.saturating_add(work);
        }
        true
    }
}

/// What the reconstruction added, left out or simplified, for the messages.
#[derive(Default)]
struct Caveats {
    /// Root nodes for a function's cost beyond the calls into it.
    thread_roots: u64,
    /// Call edges left out by step 2.
    edges_left_out: usize,
    /// Nodes not made (step 4): deeper than max-depth, beyond max-nodes.
    cut_depth: u64,
    cut_budget: u64,
    /// Call edges that could make no node, skipped past their work limit: from nodes at
    /// max-depth, met past max-nodes.
    uncounted_deep: u64,
    uncounted_full: u64,
    /// Past the work limit (step 5): call edges not split, functions whose self costs were
    /// split as one item.
    unsplit_edges: u64,
    merged_funcs: u64,
}

/// The messages: notes on the root nodes added and the edges left out, warnings on the nodes
/// not made and the work limit.
fn report(
    cx: &mut Context<'_>,
    caveats: &Caveats,
    work: &WorkLimit,
    opts: &BuildOptions,
    max_nodes: usize,
    nc: usize,
) {
    let Caveats {
        thread_roots,
        edges_left_out,
        cut_depth,
        cut_budget,
        uncounted_deep,
        uncounted_full,
        unsplit_edges,
        merged_funcs,
    } = *caveats;
    if thread_roots > 0 {
        cx.info(&format!(
            "{thread_roots} function(s) cost more than the calls into them (a thread's start, a function that is also a root): the rest is a root node of each"
        ));
    }
    if edges_left_out > 0 {
        cx.info(&format!(
            "{edges_left_out} call edge(s) closing a cycle (recursion) were not expanded; their costs show at the outer level"
        ));
    }
    let uncounted = |n: u64, whose: &str| {
        if n > 0 {
            format!(", nor those of {n} call edge(s) {whose} (not split, so not counted)")
        } else {
            String::new()
        }
    };
    if cut_depth > 0 || uncounted_deep > 0 {
        cx.warn(&format!(
            "{cut_depth} call-tree node(s) deeper than max-depth={} were not created{}; their costs went to other contexts of the same functions, or to a root node of each function left without one",
            opts.max_depth,
            uncounted(uncounted_deep, "from nodes at that depth")
        ));
    }
    if cut_budget > 0 || uncounted_full > 0 {
        let lowered = if max_nodes < opts.max_nodes {
            format!(
                " (lowered from {} for {nc} event columns: nodes × columns is kept within {NODE_CELLS})",
                opts.max_nodes
            )
        } else {
            String::new()
        };
        cx.warn(&format!(
            "{cut_budget} call-tree node(s) beyond max-nodes={max_nodes}{lowered} were not created{}; their costs went to other contexts of the same functions, or to a root node of each function left without one",
            uncounted(uncounted_full, "met past that")
        ));
    }
    if unsplit_edges > 0 || merged_funcs > 0 {
        let mut what = Vec::new();
        if unsplit_edges > 0 {
            what.push(format!(
                "{unsplit_edges} call edge(s) were not split over their callers' call-tree nodes (no child nodes; their costs went to other contexts of the same functions)"
            ));
        }
        if merged_funcs > 0 {
            what.push(format!(
                "the self costs of {merged_funcs} function(s) were split over their call-tree nodes as one item, at the function's first line (per-function self costs stay exact)"
            ));
        }
        let (max_work, per_node, items) = (work.max, work.per_node, work.items);
        cx.warn(&format!(
            "call-tree reconstruction work limit reached ({max_work} node shares: {WORK_PER_NODE} × {per_node} nodes, the larger of max-nodes and its default, plus {WORK_PER_ITEM} × {items} self-cost positions and call edges; -O max-nodes above {per_node} raises it): {}",
            what.join("; ")
        ));
    }
}

/// A warning when a file's positions make more than [`MANY_STACKS`] stacks, and more than
/// [`STACKS_PER_NODE`] per call-tree node: each position of a node's function is a frame of its
/// own (an instruction, with `--dump-instr=yes`), and `-O positions` can merge them.
fn report_positions(
    cx: &mut Context<'_>,
    g: &Graph,
    positions: Positions,
    stacks: usize,
    nodes: usize,
) {
    if stacks <= MANY_STACKS.max(nodes.saturating_mul(STACKS_PER_NODE)) {
        return;
    }
    // Without line information (a binary built without debug info), `line` is `function`.
    let has_lines = g.selfs.iter().any(|s| s.line != 0) || g.edges.iter().any(|e| e.line != 0);
    let fewer = if has_lines && g.has_positions_beyond(Positions::Line) {
        "-O positions=line (a frame per line) or -O positions=function (a frame per node)"
    } else if g.has_positions_beyond(Positions::Function) {
        "-O positions=function (a frame per node)"
    } else {
        return;
    };
    let (what, _) = Positions::NAMES
        .iter()
        .find(|(_, p)| *p == positions)
        .copied()
        .unwrap_or(("instr", Positions::Instr));
    cx.warn(&format!(
        "{stacks} stacks for {nodes} call-tree nodes: each position of a node's function (positions={what}) is a frame of its own; {fewer} takes less memory and time (a flame graph draws no positions)"
    ));
}

/// See [`report_positions`].
pub const MANY_STACKS: usize = 1 << 20;
/// See [`report_positions`].
pub const STACKS_PER_NODE: usize = 4;

/// How a function's items are split over its nodes.
///
/// Per event column, each node has a *capacity*: its share of the function's total in that
/// column (the sum of all of the function's items: self costs and call edges), split over the
/// nodes in proportion to their weights (all 1 when the column's weights are all zero) with
/// cumulative rounding. Each item is split over what the capacities have left, in proportion to
/// it, again with cumulative rounding — node `j` gets `⌊(t × P[j] + D) / Σ⌋ − ⌊(t × P[j−1] + D)
/// / Σ⌋` of an item `t`, where `P` are the prefix sums of what is left, `Σ` their total and `D`
/// a rounding offset below `Σ` that differs from item to item (the golden-ratio sequence, see
/// [`Split::next_phase`]) — and its shares are taken out of them. So an item's shares add up to the item, no share is more than what its
/// node has left, and every node ends with its capacity exactly: the rounding of many small
/// items does not pile up on the last nodes. (Rounding each item on its own against the
/// weights gave every 1-unit item of a function with two equal callers to the second, so the
/// first caller's subtree lost its cost and the second's got twice its own.)
///
/// A column with a negative item or weight, or whose total does not fit in 64 bits, has no
/// capacities: each of its items is split in proportion to the weights alone (shifted right
/// when their total does not fit in 64 bits, so that `t × prefix` fits in an `i128`).
///
/// What is left is kept per node and in a Fenwick tree over the nodes, so a small item finds
/// its nonzero shares by descending the tree (a few steps each) instead of walking every node.
#[derive(Clone, Default)]
struct Split {
    nn: usize,
    nc: usize,
    /// Bits of `nn`: the steps of one descent.
    bits: usize,
    /// Column-major: the prefix sums of the (shifted) weights, `cum[k * nn + j]`.
    cum: Vec<u64>,
    /// Column-major: what node `j` has left in column `k` (its weight, when the column has no
    /// capacities).
    left: Vec<u64>,
    /// Column-major: a Fenwick tree over each column of `left`.
    tree: Vec<u64>,
    /// Per column: the total of `left`.
    sum: Vec<u64>,
    /// Per column: whether items are taken out of `left`.
    takes: Vec<bool>,
    /// Items split so far in this function: each has a rounding offset of its own.
    turn: u64,
    /// Never split sparsely.
    dense_only: bool,
}

impl Split {
    /// Starts a function: `nodes` and their weights, and per column the total of the function's
    /// items, when they are all non-negative and it fits in 64 bits.
    fn reset(&mut self, nodes: &[u32], node_weight: &[i64], nc: usize, totals: &[Option<u64>]) {
        let nn = nodes.len();
        self.nn = nn;
        self.nc = nc;
        self.bits = (usize::BITS - nn.leading_zeros()) as usize;
        self.cum.clear();
        self.cum.resize(nn * nc, 0);
        self.left.clear();
        self.left.resize(nn * nc, 0);
        self.tree.clear();
        self.tree.resize(nn * nc, 0);
        self.sum.clear();
        self.sum.resize(nc, 0);
        self.takes.clear();
        self.takes.resize(nc, false);
        self.turn = 0;
        let weight = |n: u32, k: usize| node_weight[n as usize * nc + k] as i128;
        for k in 0..nc {
            let c = &mut self.cum[k * nn..(k + 1) * nn];
            let total: i128 = nodes.iter().map(|&n| weight(n, k)).sum();
            if total <= 0 {
                for (j, x) in c.iter_mut().enumerate() {
                    *x = j as u64 + 1;
                }
            } else {
                let shift = 64u32.saturating_sub(total.leading_zeros());
                let mut sum = 0i128;
                for (x, &n) in c.iter_mut().zip(nodes) {
                    sum += weight(n, k);
                    *x = (sum >> shift) as u64;
                }
            }
            let no_negative_weight = nodes.iter().all(|&n| weight(n, k) >= 0);
            match totals.get(k).copied().flatten() {
                Some(t) if no_negative_weight => self.capacities(k, t),
                _ => self.weights_only(k),
            }
        }
    }

    /// Column `k` with capacities: `total` split over the nodes by `cum`.
    fn capacities(&mut self, k: usize, total: u64) {
        let nn = self.nn;
        let c = &self.cum[k * nn..(k + 1) * nn];
        let big = c.last().map_or(0, |&x| x as u128);
        let mut prev = 0u128;
        for (j, &x) in c.iter().enumerate() {
            let cur = (total as u128 * x as u128).checked_div(big).unwrap_or(0);
            self.left[k * nn + j] = (cur - prev) as u64;
            prev = cur;
        }
        self.sum[k] = prev as u64;
        self.takes[k] = true;
        self.build_tree(k);
    }

    /// Column `k` without capacities: each item split by the weights (`cum`) alone.
    fn weights_only(&mut self, k: usize) {
        let nn = self.nn;
        let mut prev = 0;
        for j in 0..nn {
            let x = self.cum[k * nn + j];
            // (Weights are never negative, so `cum` never falls.)
            self.left[k * nn + j] = x.saturating_sub(prev);
            prev = x;
        }
        self.sum[k] = prev;
        self.takes[k] = false;
        self.build_tree(k);
    }

    /// The Fenwick tree of column `k` from `left`, in linear time.
    fn build_tree(&mut self, k: usize) {
        let nn = self.nn;
        let t = &mut self.tree[k * nn..(k + 1) * nn];
        t.copy_from_slice(&self.left[k * nn..(k + 1) * nn]);
        for i in 1..=nn {
            let up = i + (i & i.wrapping_neg());
            if up <= nn {
                t[up - 1] += t[i - 1];
            }
        }
    }

    /// The first node of column `k` whose prefix sum of `left` reaches `target` (at most the
    /// column's sum), and that prefix sum.
    fn find(&self, k: usize, target: u64) -> (usize, u64) {
        let nn = self.nn;
        let t = &self.tree[k * nn..(k + 1) * nn];
        let (mut pos, mut before) = (0usize, 0u64);
        let mut step = if nn == 0 { 0 } else { 1 << (self.bits - 1) };
        while step > 0 {
            let next = pos + step;
            if next <= nn && before + t[next - 1] < target {
                pos = next;
                before += t[next - 1];
            }
            step >>= 1;
        }
        (
            pos,
            before + self.left.get(k * nn + pos).copied().unwrap_or(0),
        )
    }

    /// Takes `share` out of what node `j` has left in column `k`.
    fn take(&mut self, k: usize, j: usize, share: u64) {
        let nn = self.nn;
        self.left[k * nn + j] -= share;
        self.sum[k] -= share;
        let mut i = j + 1;
        while i <= nn {
            self.tree[k * nn + i - 1] -= share;
            i += i & i.wrapping_neg();
        }
    }

    /// Tree searches a sparse split of `total` takes (at most one per nonzero share), or
    /// `None` when a dense split is cheaper.
    fn searches(&self, total: &[i64]) -> Option<usize> {
        if self.dense_only {
            return None;
        }
        let mut n = 0usize;
        for &t in total {
            if t < 0 {
                return None;
            }
            n = n.saturating_add((t as u64).min(self.nn as u64) as usize);
        }
        let dense = self.nn as u128 * self.nc as u128;
        (n as u128 * (self.bits as u128) < dense).then_some(n)
    }

    /// The work of splitting `total`: the nodes a dense split walks, or the tree searches of a
    /// sparse one (at least 1).
    fn cost(&self, total: &[i64]) -> usize {
        if self.nc == 0 {
            return 1;
        }
        self.searches(total).map_or(self.nn, |n| n.max(1))
    }

    /// The nonzero shares of `total`, by node, in node order, taken out of the capacities. With
    /// no event column nothing is shared.
    fn split(&mut self, total: &[i64], out: &mut Parts) {
        if self.nc == 0 {
            out.nc = 0;
            out.idx.clear();
            out.vals.clear();
            return;
        }
        // An item of no cost has no shares, and takes no turn of the rounding phases: a line
        // that costs nothing (a writer's `0 0` line) must not change how the others round.
        if total.iter().take(self.nc).all(|&t| t == 0) {
            out.nc = self.nc;
            out.idx.clear();
            out.vals.clear();
            return;
        }
        // An item the capacities cannot hold (the items were other than the totals said): its
        // column goes back to the weights alone.
        for (k, &t) in total.iter().enumerate().take(self.nc) {
            if self.takes[k] && (t < 0 || t as u64 > self.sum[k]) {
                self.weights_only(k);
            }
        }
        if self.searches(total).is_some() {
            self.split_sparse(total, out);
        } else {
            self.split_dense(total, out);
        }
    }

    /// Walks every node: `nn × nc` steps.
    fn split_dense(&mut self, total: &[i64], out: &mut Parts) {
        let (nn, nc) = (self.nn, self.nc);
        out.nc = nc;
        out.idx.clear();
        out.vals.clear();
        out.dense.clear();
        out.dense.resize(nn * nc, 0);
        let phase = self.next_phase();
        for (k, &t) in total.iter().enumerate().take(nc) {
            let (s, sum) = (t as i128, self.sum[k] as i128);
            if s == 0 || sum == 0 {
                continue;
            }
            let offset = if s > 0 {
                Self::offset(phase, self.sum[k]) as i128
            } else {
                0
            };
            let (mut prev, mut prefix) = (0i128, 0i128);
            for j in 0..nn {
                prefix += self.left[k * nn + j] as i128;
                let cur = (s * prefix + offset).div_euclid(sum);
                out.dense[j * nc + k] = (cur - prev) as i64;
                prev = cur;
            }
            if self.takes[k] {
                for j in 0..nn {
                    self.left[k * nn + j] -= out.dense[j * nc + k] as u64;
                }
                self.sum[k] -= t as u64;
                self.build_tree(k);
            }
        }
        for (j, sh) in out.dense.chunks_exact(nc).enumerate() {
            if sh.iter().any(|&v| v != 0) {
                out.idx.push(j as u32);
                out.vals.extend_from_slice(sh);
            }
        }
    }

    /// The next item's rounding phase, a fraction in 32 bits: the golden-ratio sequence, so that
    /// items' roundings spread over the nodes instead of favouring the same ones.
    fn next_phase(&mut self) -> u64 {
        self.turn += 1;
        self.turn.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
    }

    /// The rounding offset `D = ⌊phase × Σ⌋` (less than `Σ`) of a column whose total is `sum`.
    fn offset(phase: u64, sum: u64) -> u128 {
        (phase as u128 * sum as u128) >> 32
    }

    /// Finds the nonzero shares by descending the Fenwick trees: one descent per nonzero share
    /// of each column, so a small cost split over many nodes takes a few steps.
    fn split_sparse(&mut self, total: &[i64], out: &mut Parts) {
        let nc = self.nc;
        out.nc = nc;
        out.idx.clear();
        out.vals.clear();
        let mut found = std::mem::take(&mut out.found);
        found.clear();
        let phase = self.next_phase();
        for (k, &t) in total.iter().enumerate().take(nc) {
            let (s, sum) = (t as u128, self.sum[k] as u128);
            if t <= 0 || sum == 0 {
                continue;
            }
            let offset = Self::offset(phase, self.sum[k]);
            let from = found.len();
            // v: the cumulative share so far; the next nonzero share is at the first node
            // whose ⌊(s × P + D) / Σ⌋ passes it, the first whose P reaches
            // ⌈((v + 1) × Σ − D) / s⌉ (D < Σ, so that is more than 0).
            let mut v = 0u128;
            while v < s {
                let (j, prefix) = self.find(k, ((v + 1) * sum - offset).div_ceil(s) as u64);
                if j >= self.nn {
                    break;
                }
                let cur = (s * prefix as u128 + offset) / sum;
                found.push((j as u32, k as u32, (cur - v) as i64));
                v = cur;
            }
            if self.takes[k] {
                for &(j, _, share) in &found[from..] {
                    self.take(k, j as usize, share as u64);
                }
            }
        }
        found.sort_unstable();
        for &(j, k, v) in &found {
            if out.idx.last() != Some(&j) {
                out.idx.push(j);
                out.vals.resize(out.vals.len() + nc, 0);
            }
            let at = out.vals.len() - nc + k as usize;
            out.vals[at] = v;
        }
        out.found = found;
    }
}

/// The nonzero shares of one item: `idx[i]` (a node's index in its function's nodes) gets
/// `vals[i * nc..(i + 1) * nc]`.
#[derive(Default)]
struct Parts {
    nc: usize,
    idx: Vec<u32>,
    vals: Vec<i64>,
    /// Scratch: the dense split's shares, the sparse split's (node, column, share).
    dense: Vec<i64>,
    found: Vec<(u32, u32, i64)>,
}

impl Parts {
    /// One share of nothing, at node `j`.
    fn zero_share(&mut self, j: u32) {
        self.idx.push(j);
        self.vals.extend(std::iter::repeat_n(0, self.nc));
    }

    /// The calls of a call edge over its nonzero shares, in proportion to the shares of the
    /// first column the edge costs something in, with cumulative rounding to the nearest: the
    /// calls go where the cost went, and add up to `calls`. (Rounded down, a single call went
    /// to the last share, however small.)
    fn share_calls(&self, calls: u64, out: &mut Vec<i64>) {
        out.clear();
        let nc = self.nc;
        let column = |k: usize| self.vals.iter().skip(k).step_by(nc.max(1));
        let Some(k) = (0..nc).find(|&k| column(k).any(|&v| v > 0)) else {
            out.resize(self.idx.len(), 0);
            return;
        };
        let total: i128 = column(k).map(|&v| v.max(0) as i128).sum();
        let s = calls.min(i64::MAX as u64) as i128;
        let (mut prefix, mut prev) = (0i128, 0i128);
        for &v in column(k) {
            prefix += v.max(0) as i128;
            let cur = (s * prefix + total / 2) / total;
            out.push((cur - prev) as i64);
            prev = cur;
        }
    }

    fn iter(&self) -> impl Iterator<Item = (usize, &[i64])> {
        self.idx
            .iter()
            .enumerate()
            .map(|(i, &j)| (j as usize, &self.vals[i * self.nc..(i + 1) * self.nc]))
    }
}

/// For each of `n` functions, its strongly connected component of the call graph (Tarjan's
/// algorithm, iteratively): functions that reach each other through calls, a recursion cycle
/// when there are several. `out_of[f]` lists the edges from `f`, `to(e)` an edge's callee
/// (self-calls are not edges). A component's id is the index of one of its functions.
pub(crate) fn components(n: usize, out_of: &[Vec<u32>], to: impl Fn(u32) -> u32) -> Vec<u32> {
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut walk: Vec<(u32, usize)> = Vec::new();
    let mut comp = vec![NONE; n];
    let mut next = 0u32;
    for start in 0..n as u32 {
        if index[start as usize] != NONE {
            continue;
        }
        index[start as usize] = next;
        low[start as usize] = next;
        next += 1;
        stack.push(start);
        on_stack[start as usize] = true;
        walk.push((start, 0));
        while let Some(&mut (v, ref mut i)) = walk.last_mut() {
            let vu = v as usize;
            if let Some(&e) = out_of[vu].get(*i) {
                *i += 1;
                let w = to(e) as usize;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    walk.push((w as u32, 0));
                } else if on_stack[w] {
                    low[vu] = low[vu].min(index[w]);
                }
                continue;
            }
            walk.pop();
            if let Some(&(u, _)) = walk.last() {
                low[u as usize] = low[u as usize].min(low[vu]);
            }
            if low[vu] == index[vu] {
                // `v` and what is above it on the stack are one component.
                let from = stack.iter().rposition(|&w| w == v).unwrap_or(0);
                for &w in &stack[from..] {
                    on_stack[w as usize] = false;
                    comp[w as usize] = v;
                }
                stack.truncate(from);
            }
        }
    }
    comp
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

/// Per function, its self cost and the costs of its calls less the costs of the calls into it,
/// in the first event: most for the function where a cycle nothing outside calls starts.
fn beyond_calls(g: &Graph, self_of: &[Vec<u32>], edges: &TreeEdges) -> Vec<i128> {
    let mut beyond = vec![0i128; self_of.len()];
    if edges.nc == 0 {
        return beyond;
    }
    for (f, selfs) in self_of.iter().enumerate() {
        for &s in selfs {
            beyond[f] += i128::from(g.self_costs.row(s as usize)[0]);
        }
    }
    for e in &edges.list {
        let c = i128::from(edges.costs[e.cost]);
        beyond[e.from as usize] += c;
        beyond[e.to as usize] -= c;
    }
    beyond
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
    // valgrind's `--collect-systime`: `sysTime (elapsed ms)` (or `us`, `ns`) and
    // `sysCpuTime (system cpu ns)`; the unit is the last word (the whole text named no time
    // unit the writers know, and speedscope's axis said `none`).
    if let Some(unit) = inner
        .strip_prefix("elapsed ")
        .or_else(|| inner.strip_prefix("system cpu "))
        .filter(|u| matches!(*u, "ms" | "us" | "ns"))
    {
        return (unit, 0);
    }
    if let Some((unit, d)) = inner.rsplit_once("/10^") {
        if let Ok(d) = d.parse::<u32>() {
            // An empty unit too: the writer writes `x (/10^2)` for a value type without one,
            // whose decimals were lost (read as the unit `/10^2`, values 100 times too large).
            if (1..=18).contains(&d) {
                return (unit, d);
            }
        }
    }
    (inner, 0)
}

/// The value type name an event was written for, when its short name is not that name:
/// profconv writes `event: SHORT : NAME (UNIT)`, SHORT being NAME with the characters other
/// than letters, digits and `_` replaced (then `_2`, `_3`, … when taken), so NAME is the
/// long name before its last ` (`, when it gives SHORT that way. Any other long name (valgrind's
/// `Instruction Fetch`, `CPU time (ns)` for an event `ns`) names no value type.
fn original_name<'a>(short: &str, long: Option<&'a str>) -> Option<&'a str> {
    let long = long?;
    let name = long.strip_suffix(')')?.rsplit_once(" (")?.0;
    if name.is_empty() || name == short {
        return None;
    }
    let base = crate::emit::event_base_name(name);
    let suffix_ok = |rest: &str| {
        rest.strip_prefix('_')
            .is_some_and(|n| !n.starts_with('0') && n.parse::<u64>().is_ok_and(|k| k >= 2))
    };
    let made = short == base || short.strip_prefix(base.as_str()).is_some_and(suffix_ok);
    made.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_graph;
    use profconv_plugin::Input;
    use profconv_plugin::ir::testing::first_seen_tree;
    use profconv_plugin::ir::{CallTree, ProfileRef};
    use std::collections::BTreeMap;

    /// The call graph of a callgrind text (it must parse).
    fn graph_of(text: &str) -> Graph {
        parse_graph(
            &mut Input::from_slice(text.as_bytes()),
            &mut Context::silent(),
        )
        .unwrap()
    }

    fn tree(text: &str, opts: BuildOptions) -> String {
        let g = graph_of(text);
        let p = build_profile(&g, &opts, &mut Context::silent()).unwrap();
        first_seen_tree(&p.view(), false)
    }

    /// Xdebug 2 and 3 write `calls=1 0 0`, one field more than `positions: line` gives: the
    /// extra field is ignored with one warning naming its line, and the costs are those
    /// callgrind_annotate reads (main 100 self, 105 inclusive; strlen 5), not an error.
    /// A call that cost nothing keeps its calls and its callee (`callgrind_annotate
    /// --tree=calling` lists `cmp (5x)`); it had no node, so `cmp` and its calls were gone
    /// (every `__Compare__` call of the mandelbrot Deep.data profile written as callgrind).
    #[test]
    fn calls_that_cost_nothing_keep_their_callee_and_count() {
        let text = "events: Ir\nfl=a.c\nfn=main\n1 10\ncfn=cmp\ncalls=5 1\n2 0\ncfn=work\n\
                    calls=3 1\n3 6\nfn=cmp\n1 0\nfn=work\n1 6\n";
        let mut cx = Context::silent();
        let g = parse_graph(&mut Input::from_slice(text.as_bytes()), &mut cx).unwrap();
        let p = build_profile(&g, &BuildOptions::default(), &mut cx).unwrap();
        assert_eq!(
            first_seen_tree(&p.view(), false),
            "main self=10 total=16 calls=0\n  cmp self=0 total=0 calls=5\n  \
             work self=6 total=6 calls=3\n"
        );
        // Under a caller of several nodes, on the first one only: the calls add up once.
        let text = "events: Ir\nfn=root\n1 1\ncfn=a\ncalls=1 1\n1 4\ncfn=b\ncalls=1 1\n1 4\n\
                    fn=a\n1 2\ncfn=leaf\ncalls=1 1\n1 2\nfn=b\n1 2\ncfn=leaf\ncalls=1 1\n1 2\n\
                    fn=leaf\n1 4\ncfn=cmp\ncalls=7 1\n1 0\nfn=cmp\n1 0\n";
        let g = parse_graph(&mut Input::from_slice(text.as_bytes()), &mut cx).unwrap();
        let p = build_profile(&g, &BuildOptions::default(), &mut cx).unwrap();
        let tree = first_seen_tree(&p.view(), false);
        let cmp: Vec<&str> = tree.lines().filter(|l| l.contains("cmp")).collect();
        assert_eq!(cmp, ["      cmp self=0 total=0 calls=7"], "{tree}");
    }

    /// A call edge's calls go to the nodes its cost went to, rounded to the nearest: one call
    /// whose cost is split 1000 to 100 over its caller's two nodes goes to the 1000 one (the
    /// calls were rounded down cumulatively, so a single call always went to the last node
    /// with a share, however small: `_IO_doallocbuf` of a real file got its one call under the
    /// `_IO_file_overflow` of 135 and none under that of 1895, where 1718 of its 1841 went).
    #[test]
    fn calls_go_to_the_nodes_that_got_most_of_the_cost() {
        let text = "events: Ir\nfl=a.c\nfn=main\n1 1\ncfn=x\ncalls=1 10\n2 1000\ncfn=y\n\
                    calls=1 20\n3 100\nfn=x\ncfn=F\ncalls=1 30\n11 1000\nfn=y\ncfn=F\n\
                    calls=1 30\n21 100\nfn=F\ncfn=G\ncalls=1 40\n31 1100\nfn=G\n40 1100\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "main self=1 total=1101 calls=0\n  x self=0 total=1000 calls=1\n    \
             F self=0 total=1000 calls=1\n      G self=1000 total=1000 calls=1\n  \
             y self=0 total=100 calls=1\n    F self=0 total=100 calls=1\n      \
             G self=100 total=100 calls=0\n"
        );
        // Two calls split 1000 to 100 go to the first; the calls still add up.
        let two = text.replace("cfn=G\ncalls=1", "cfn=G\ncalls=2");
        let t = tree(&two, BuildOptions::default());
        let g: Vec<&str> = t.lines().filter(|l| l.contains(" G ")).collect();
        assert_eq!(
            g,
            [
                "      G self=1000 total=1000 calls=2",
                "      G self=100 total=100 calls=0"
            ],
            "{t}"
        );
    }

    #[test]
    fn xdebug_calls_with_an_extra_field_are_read_as_callgrind_annotate_reads_them() {
        let text = "version: 1\ncreator: xdebug 3.2.0 (PHP 8.2.0)\ncmd: /var/www/index.php\n\
                    part: 1\npositions: line\n\nevents: Time_(10ns) Memory_(bytes)\n\n\
                    fl=(1) php:internal\nfn=(1) php::strlen\n2 5 0\n\n\
                    fl=(2) /var/www/index.php\nfn=(2) {main}\n1 100 200\ncfl=(1)\ncfn=(1)\n\
                    calls=1 0 0\n2 5 0\n\nsummary: 105 200\n";
        let (p, messages) = read_with_messages(text);
        assert_eq!(
            first_seen_tree(&p.view(), true),
            "{main} self=1000 total=1050 calls=0 self_Memory_(bytes)=200 total_Memory_(bytes)=200\n  \
             php::strlen self=50 total=50 calls=1 self_Memory_(bytes)=0 total_Memory_(bytes)=0\n"
        );
        let extra: Vec<&String> = messages.iter().filter(|m| m.contains("calls=")).collect();
        assert_eq!(extra.len(), 1, "{messages:?}");
        assert!(
            extra[0]
                .starts_with("1 `calls=` line(s) have more fields than the count and the 1 target")
                && extra[0].contains("first at line 18, column 11"),
            "{}",
            extra[0]
        );
        // Whatever the extra fields hold, they are ignored: the count and the target stay.
        let odd = text.replace("calls=1 0 0", "calls=3 2 7 zz");
        let g = graph_of(&odd);
        let p = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
        assert_eq!(
            first_seen_tree(&p.view(), true),
            "{main} self=1000 total=1050 calls=0 self_Memory_(bytes)=200 total_Memory_(bytes)=200\n  \
             php::strlen self=50 total=50 calls=3 self_Memory_(bytes)=0 total_Memory_(bytes)=0\n"
        );
    }

    /// Each value column's name, unit and decimals.
    fn value_columns<'a>(v: &'a ProfileRef<'a>) -> Vec<(&'a str, &'a str, u32)> {
        (0..v.value_types.len())
            .map(|c| {
                let t = &v.value_types[c];
                (v.strings.get(t.name), v.value_type_unit(c), t.decimals)
            })
            .collect()
    }

    /// `go tool pprof -callgrind` names its event by its unit (`cpu(ms)`) and writes no long
    /// name: the unit is kept (speedscope's axis said `none`, the Firefox Profiler counted
    /// samples); the name stays, and a unit pprof scaled (`MB`) or a count is not taken.
    #[test]
    fn pprof_event_units_are_kept() {
        for (event, unit) in [
            ("cpu(ms)", "ms"),
            ("delay(ns)", "ns"),
            ("alloc_space(B)", "B"),
            ("inuse_space(MB)", "count"),
            ("samples(count)", "count"),
        ] {
            let text = format!(
                "positions: instr line\nevents: {event}\n\nob=(1) p\nfl=(1) m.go\nfn=(1) main.main\n0x10 3 70\n"
            );
            let (p, _) = read_with_messages(&text);
            assert_eq!(value_columns(&p.view()), [(event, unit, 0)], "{event}");
        }
    }

    /// Xdebug names its events by their units and writes no `event:` long names: its time, in
    /// units of 10 ns, is read as `Time` in nanoseconds (costs times 10: folded counts stay
    /// whole, which inferno needs), its memory in bytes; speedscope shows such a file as a time
    /// and a size, and through profconv it showed unitless counts. Where the time cannot be
    /// multiplied (an event `Time` too, or a cost that would overflow) it is kept in
    /// microseconds with two decimals.
    #[test]
    fn xdebug_time_and_memory_events_keep_their_units() {
        let read = |text: &str| read_with_messages(text).0;
        // Xdebug 3.1 on writes `Time_(10ns)`; 3.0 wrote microseconds, `Time_(µs)` (its tests'
        // expected profiles, e.g. `tests/profiler/bug00360.phpt`, with a MICRO SIGN; a Greek mu
        // too, as NFKC gives), which was read as a count with no unit. Each becomes `Time` in
        // nanoseconds, so the two versions' profiles compare; where the costs cannot be
        // multiplied they stay as written: microseconds, with two decimals for `10ns`.
        for (event, ns, tree, (as_written, big_self)) in [
            (
                "Time_(10ns)",
                "calls=1 0",
                "{main} self=1000 total=1050 calls=0\n  f self=50 total=50 calls=1\n",
                (2, "10000000000000000.00"),
            ),
            (
                "Time_(\u{b5}s)",
                "calls=1 0 0",
                "{main} self=100000 total=105000 calls=0\n  f self=5000 total=5000 calls=1\n",
                (0, "1000000000000000000"),
            ),
            (
                "Time_(\u{3bc}s)",
                "calls=1 0 0",
                "{main} self=100000 total=105000 calls=0\n  f self=5000 total=5000 calls=1\n",
                (0, "1000000000000000000"),
            ),
        ] {
            let text = format!(
                "version: 1\ncreator: xdebug 3.2.0 (PHP 8.2.0)\npositions: line\n\
                 events: {event} Memory_(bytes)\nfl=(1) /var/www/index.php\n\
                 fn=(1) {{main}}\n1 100 200\ncfl=(1)\ncfn=(2) f\n{ns}\n1 5 0\n\
                 fn=(2)\n1 5 0\nsummary: 105 200\n"
            );
            let p = read(&text);
            let v = p.view();
            assert_eq!(
                value_columns(&v),
                [
                    ("Time", "nanoseconds", 0),
                    ("Memory_(bytes)", "bytes", 0),
                    ("calls", "count", 0)
                ],
                "{event}"
            );
            assert_eq!(first_seen_tree(&v, false), tree, "{event}");
            // A cost that cannot be multiplied: as written.
            let big = text.replace("1 100 200", "1 1000000000000000000 200");
            let p = read(&big);
            let v = p.view();
            assert_eq!(v.strings.get(v.value_types[0].name), event);
            assert_eq!(
                (v.value_type_unit(0), v.value_types[0].decimals),
                ("microseconds", as_written),
                "{event}"
            );
            let tree = first_seen_tree(&v, false);
            assert!(
                tree.starts_with(&format!("{{main}} self={big_self} ")),
                "{tree}"
            );
        }
    }

    /// Xdebug's time read as nanoseconds when it is not the first event column: its own column
    /// is multiplied (by 10), the memory before it kept as written.
    #[test]
    fn xdebug_time_after_another_event_is_scaled_in_its_own_column() {
        let text = "version: 1\ncreator: xdebug 3.2.0 (PHP 8.2.0)\npositions: line\n\
                    events: Memory_(bytes) Time_(10ns)\nfl=(1) /tmp/a.php\n\
                    fn=(1) a\n1 200 100\ncfl=(1)\ncfn=(2) b\ncalls=1 0\n1 7 5\n\
                    fn=(2) b\n1 7 5\n";
        let p = read_with_messages(text).0;
        let v = p.view();
        assert_eq!(
            value_columns(&v),
            [
                ("Memory_(bytes)", "bytes", 0),
                ("Time", "nanoseconds", 0),
                ("calls", "count", 0)
            ]
        );
        assert_eq!(
            first_seen_tree(&v, true),
            "a self=200 total=207 calls=0 self_Time=1000 total_Time=1050\n  \
             b self=7 total=7 calls=1 self_Time=50 total_Time=50\n"
        );
    }

    /// Xdebug's time is kept as written when its costs each fit times 10 but their total does
    /// not (two functions of 5e17 × 10 ns, no `summary:`): the profile was refused, "the values
    /// of 'Time' add up to more than a 64-bit integer holds".
    #[test]
    fn xdebug_time_whose_total_cannot_be_multiplied_is_kept_as_written() {
        let text = "version: 1\ncreator: xdebug 3.1.0 (PHP 8.1.0)\npositions: line\n\
                    events: Time_(10ns) Memory_(bytes)\nfl=(1) /tmp/a.php\n\
                    fn=(1) a\n1 500000000000000000 0\nfn=(2) b\n2 500000000000000000 0\n";
        let p = read_with_messages(text).0;
        let v = p.view();
        assert_eq!(v.strings.get(v.value_types[0].name), "Time_(10ns)");
        assert_eq!(
            (v.value_type_unit(0), v.value_types[0].decimals),
            ("microseconds", 2)
        );
    }

    /// A recursion cycle that nothing outside calls starts at its function with the most cost
    /// beyond what the calls into it bring: cProfile's data (pyprof2calltree) has `exec` run
    /// the script's `<module>`, whose imports run `exec` again. Entered at the first function in
    /// file order, the script was the root and `exec` under it; with the script's own
    /// `<module>` after an imported module's, the import had the whole program's cost.
    #[test]
    fn a_cycle_nothing_calls_starts_where_its_cost_comes_from() {
        let text = "events: T\nfn=script\n1 80\ncfn=exec\ncalls=1 1\n1 20\n\
                    fn=exec\n1 4\ncfn=script\ncalls=1 1\n1 100\ncfn=inner\ncalls=1 1\n1 18\n\
                    fn=inner\n1 18\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "exec self=4 total=102 calls=0\n  script self=80 total=80 calls=0\n  \
             inner self=18 total=18 calls=1\n"
        );
    }

    /// The same for a cycle too large to be one unit (its cycles broken by a depth-first
    /// search): one run of 301 calls around 300 functions, entered at `f150`, is drawn from
    /// `f150`, not from the first function in file order.
    #[test]
    fn a_large_cycle_nothing_calls_is_searched_from_where_its_cost_comes_from() {
        let n = MAX_UNIT + 44;
        let entry = n / 2;
        let run: Vec<usize> = (0..=n).map(|p| (entry + p) % n).collect();
        let mut text = String::from("events: T\n");
        for f in 0..n {
            let instances = if f == entry { 2 } else { 1 };
            text += &format!("fn=f{f}\n1 {instances}\n");
            if let Some(p) = run[..n].iter().position(|&x| x == f) {
                text += &format!("cfn=f{}\ncalls=1 1\n1 {}\n", run[p + 1], n - p);
            }
        }
        let shown = tree(&text, BuildOptions::default());
        assert!(shown.starts_with(&format!("f{entry} ")), "{shown}");
        assert!(shown.contains(&format!("total={}", n + 1)), "{shown}");
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
            // f and g call each other: one unit, entered by main → f; g is drawn under f,
            // without the calls between them.
            "main self=1 total=10 calls=0\n  f self=4 total=9 calls=1\n    g self=5 total=5 calls=0\n"
        );
    }

    /// A cycle of a few functions is one unit (its functions drawn under its entry); a cycle of
    /// more than MAX_UNIT functions (a call graph rebuilt from sampled stacks) is broken as a
    /// chain instead, so the tree keeps its depth.
    #[test]
    fn small_cycles_are_units_and_large_ones_are_broken() {
        let ring = |n: usize| {
            let mut text = String::from("events: T\nfn=main\ncfn=f0\ncalls=1 1\n1 100\n");
            for i in 0..n {
                text += &format!("fn=f{i}\n1 1\ncfn=f{}\ncalls=1 1\n1 1\n", (i + 1) % n);
            }
            let g = graph_of(&text);
            let p = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
            let t = CallTree::build(&p.view()).unwrap();
            (0..t.len()).map(|n| t.depth[n]).max().unwrap_or(0)
        };
        // main, f0 (the entry), the other functions under it.
        assert_eq!(ring(3), 2);
        assert_eq!(ring(MAX_UNIT), 2);
        assert_eq!(ring(MAX_UNIT + 1), MAX_UNIT as u32 + 1);
    }

    #[test]
    fn depth_limit_moves_costs_to_roots() {
        let text = "events: T\nfn=a\n1 1\ncfn=b\ncalls=1 1\n1 2\nfn=b\n1 1\ncfn=c\ncalls=1 1\n1 1\nfn=c\n1 1\n";
        let t = tree(
            text,
            BuildOptions {
                max_depth: 2,
                max_nodes: 100,
                ..BuildOptions::default()
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

    /// valgrind's file of a program that dlcloses its library before the dump: the library's
    /// call sites have no line information, so callgrind writes `fi=(3) ???` before each call
    /// and no `cfi=` (the callee is in the caller's file, `lib.c`). Read as written, `librec'2`
    /// and `libwork` of `???` were functions of no code: `main` totalled 23 of its 11 084, and
    /// `libwork` and `librec'2` were roots. KCachegrind knows the callee by its compressed id
    /// (`fn=(4)`, `fn=(3)`): main 11 084, librec 11 074, librec'2 10 705.
    #[test]
    fn a_call_into_a_fileless_function_without_code_is_a_call_of_its_namesake() {
        let text = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npositions: line\n\
                    events: Ir\nob=(1) dl\nfl=(1) dl.c\nfn=(1) main\n5 10\ncob=(2) libcgs.so\n\
                    cfi=(2) lib.c\ncfn=(2) librec\ncalls=1 0\n5 11074\nob=(2)\nfl=(2)\n\
                    fn=(3) libwork\n0 10680\nfn=(2)\n0 6\nfi=(3) ???\ncfn=(4) librec'2\n\
                    calls=1 0\n0 10705\n0 3\nfi=(3)\ncfn=(3)\ncalls=1 0\n0 356\nfi=(3)\n0 1\n\
                    fe=(2)\n0 3\nfn=(4)\n0 178\nfi=(3)\ncfn=(4)\ncalls=29 0\n0 149930\n0 87\n\
                    fi=(3)\ncfn=(3)\ncalls=29 0\n0 10324\nfi=(3)\n0 29\nfe=(2)\n0 87\n\
                    totals: 11084\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "main self=10 total=11084 calls=0\n  librec self=9 total=11074 calls=1\n    \
             librec self=4 total=11065 calls=0\n      librec'2 self=265 total=10705 calls=1\n        \
             librec'2 self=116 total=10440 calls=0\n          libwork self=10324 total=10324 calls=29\n      \
             libwork self=356 total=356 calls=1\n"
        );
        // A second static `libwork`, in another file of the library: of the two namesakes
        // with code, the callee is the one in its caller's file (`lib.c`), where callgrind
        // leaves `cfi=` out. With two, nothing was redirected, and the subtree was loose again.
        let two = text.replace(
            "totals: 11084\n",
            "fl=(9) other.c\nfn=(3)\n0 1\ntotals: 11085\n",
        );
        let t = tree(&two, BuildOptions::default());
        assert!(
            t.starts_with("main self=10 total=11084 calls=0\n")
                && t.contains("          libwork self=10324 total=10324 calls=29\n")
                && t.ends_with("libwork self=1 total=1 calls=0\n"),
            "{t}"
        );
    }

    /// Xdebug with `xdebug.profiler_append=1` (PHP-FPM reuses a pid, so `cachegrind.out.%p`
    /// collects many requests) starts each appended profile with `==== NEW PROFILING FILE ====`
    /// and numbers its compressed names from 1 again. The file was refused at that line
    /// (callgrind_annotate and KCachegrind read on); each profile is now a part of its own, with
    /// fresh name tables, so `fn=(1)` of the second request is its own function, without a
    /// warning that an id was redefined.
    #[test]
    fn xdebug_appended_profiles_are_parts_with_their_own_names() {
        let profile = |script: &str, inner: &str, cost: u32| {
            format!(
                "\n==== NEW PROFILING FILE ==============================================\n\
                 version: 1\ncreator: xdebug 3.2.0 (PHP 8.2.0)\ncmd: {script}\npart: 1\n\
                 positions: line\n\nevents: Time_(10ns) Memory_(bytes)\n\n\
                 fl=(1) php:internal\nfn=(1) php::{inner}\n2 {cost} 0\n\n\
                 fl=(2) {script}\nfn=(2) {{main}}\n1 100 200\ncfl=(1)\ncfn=(1)\n\
                 calls=1 0 0\n2 {cost} 0\n\nsummary: {} 200\n\n",
                100 + cost
            )
        };
        let text = profile("/var/www/a.php", "strlen", 5) + &profile("/var/www/b.php", "md5", 7);
        let (p, messages) = read_with_messages(&text);
        assert_eq!(
            first_seen_tree(&p.view(), false),
            "{main} self=1000 total=1050 calls=0\n  php::strlen self=50 total=50 calls=1\n\
             {main} self=1000 total=1070 calls=0\n  php::md5 self=70 total=70 calls=1\n"
        );
        assert!(
            !messages.iter().any(|m| m.contains("redefined")),
            "{messages:?}"
        );
    }

    /// Instruction positions that make many stacks per call-tree node get a warning naming
    /// `-O positions`; the library's `build_profile` merges a copy of the graph when asked to.
    #[test]
    fn many_stacks_per_node_from_positions_name_the_positions_option() {
        let text = "positions: instr line\nevents: Ir\n\nfn=main\n0x10 3 5\n0x14 3 7\n0x20 4 1\n";
        let g = graph_of(text);
        let warned = |g: &Graph, p: Positions, stacks: usize, nodes: usize| {
            let mut messages = Vec::new();
            let mut sink = |_: u32, m: &str| messages.push(m.to_string());
            report_positions(&mut Context::with_sink(&mut sink), g, p, stacks, nodes);
            messages
        };
        let m = warned(&g, Positions::Instr, MANY_STACKS + 1, 10);
        assert!(
            m.len() == 1
                && m[0].contains(&format!(
                    "{} stacks for 10 call-tree nodes",
                    MANY_STACKS + 1
                ))
                && m[0].contains("-O positions=line (a frame per line) or -O positions=function"),
            "{m:?}"
        );
        assert!(warned(&g, Positions::Instr, MANY_STACKS, 10).is_empty());
        assert!(warned(&g, Positions::Instr, 4 * MANY_STACKS, MANY_STACKS).is_empty());
        let mut by_line = g.clone();
        by_line.merge_positions(Positions::Line).unwrap();
        let m = warned(&by_line, Positions::Line, MANY_STACKS + 1, 10);
        assert!(
            m.len() == 1
                && m[0].contains("(positions=line)")
                && m[0].contains("; -O positions=function (a frame per node) takes less"),
            "{m:?}"
        );
        let mut by_func = g.clone();
        by_func.merge_positions(Positions::Function).unwrap();
        assert!(warned(&by_func, Positions::Function, MANY_STACKS + 1, 10).is_empty());
        // Addresses without lines (no debug information): `line` would be `function`.
        let no_lines = "positions: instr line\nevents: Ir\n\nfn=main\n0x10 0 5\n0x14 0 7\n";
        let no_lines = graph_of(no_lines);
        let m = warned(&no_lines, Positions::Instr, MANY_STACKS + 1, 10);
        assert!(
            m.len() == 1
                && m[0].contains("; -O positions=function (a frame per node) takes less")
                && !m[0].contains("positions=line"),
            "{m:?}"
        );

        let read = |positions| {
            let opts = BuildOptions {
                positions,
                ..BuildOptions::default()
            };
            build_profile(&g, &opts, &mut Context::silent()).unwrap()
        };
        let stacks = |p: &Profile| (p.stacks.prefix.len(), p.samples.values[0].clone());
        assert_eq!(stacks(&read(Positions::Instr)), (3, vec![5, 7, 1]));
        assert_eq!(stacks(&read(Positions::Line)), (2, vec![12, 1]));
        assert_eq!(stacks(&read(Positions::Function)), (1, vec![13]));
        assert_eq!(
            stacks(
                &build_profile(&by_line, &BuildOptions::default(), &mut Context::silent()).unwrap()
            ),
            (2, vec![12, 1])
        );
    }

    /// Merged call edges add their calls and costs, and self costs their costs: two call
    /// sites of `f` (3 and 2 calls) are one edge of 5 calls without positions, and stay two by
    /// line.
    #[test]
    fn merged_positions_add_calls_and_costs() {
        let text = "positions: line\nevents: Ir\nfn=main\n1 2\n3 4\ncfn=f\ncalls=3 10\n10 30\n\
                    cfn=f\ncalls=2 20\n20 20\nfn=f\n5 50\n";
        let g = graph_of(text);
        let edges = |g: &Graph| -> Vec<(u64, Vec<i64>)> {
            (0..g.edges.len())
                .map(|i| (g.edges[i].calls, g.edge_costs.row(i).to_vec()))
                .collect()
        };
        let selfs = |g: &Graph| -> Vec<Vec<i64>> {
            (0..g.selfs.len())
                .map(|i| g.self_costs.row(i).to_vec())
                .collect()
        };
        let mut by_line = g.clone();
        by_line.merge_positions(Positions::Line).unwrap();
        assert_eq!(edges(&by_line), [(3, vec![30]), (2, vec![20])]);
        assert_eq!(selfs(&by_line), [vec![2], vec![4], vec![50]]);
        let mut by_func = g.clone();
        by_func.merge_positions(Positions::Function).unwrap();
        assert_eq!(edges(&by_func), [(5, vec![50])]);
        assert_eq!(selfs(&by_func), [vec![6], vec![50]]);
    }

    /// `go tool pprof -callgrind` writes no `cob=`: `main` (in `prog`) calling `libwork` (in
    /// `libwork.so`) is `cfl=(1)` `cfn=(1)` under `ob=(3) prog`. KCachegrind reads id 1 as the
    /// `libwork` defined under `ob=(2)`, callgrind_annotate as `lib.c:libwork`, and pprof
    /// itself counts it in `main`'s cumulative time. It was a `libwork` of `prog` with no code:
    /// `main` totalled 20 instead of 300, and the real `libwork` was a root of its own.
    #[test]
    fn a_pprof_call_into_another_object_without_cob_is_a_call_of_that_function() {
        let text = "positions: instr line\nevents: cpu(ms)\n\n\
                    ob=(2) /tmp/libwork.so\nfl=(1) /tmp/lib.c\nfn=(1) libwork\n\
                    0x7f1469a2010f 2 280\n\n\
                    ob=(3) prog\nfl=(2) /tmp/main.c\nfn=(7) main\n0x555a91c962f0 9 20\n\
                    cfl=(1)\ncfn=(1)\ncalls=0 0x7f1469a2010f 2\n* * 280\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "main self=20 total=300\n  libwork self=280 total=280\n"
        );
    }

    /// lsprofcalltree's output (bzr's `--lsprof-file x.callgrind`, nose-profile and other copies
    /// of it; the lines below are from gprof2dot's test file `bzr.callgrind`) starts each
    /// function with `fi=FILE` and names a callee's file after its `cfn=`. KCachegrind and
    /// gprof2dot read it; profconv refused it at its first `fi=` ("before any `fn=`"), and with
    /// `fl=` in its place took each `cfi=` for the next call's callee, so that
    /// `_walk_through_internal_nodes` (called from `iter_entries`) was a root of its own.
    #[test]
    fn lsprofcalltree_files_read_as_kcachegrind_reads_them() {
        let text = "events: Ticks\nsummary: 71\nfi=~\nfn=<len>\n0  6\n\n\
                    fi=/bzrlib/btree_index.py\nfn=_walk bzrlib.btree_index:1054\n1054 35\n\
                    cfn=<len>\ncfi=~\ncalls=3 0\n1054 6\n\
                    cfn=_multi bzrlib.btree_index:972\ncfi=/bzrlib/btree_index.py\ncalls=18 972\n\
                    1054 16\n\n\
                    fi=/bzrlib/btree_index.py\nfn=iter_entries bzrlib.btree_index:1087\n1087 14\n\
                    cfn=_walk bzrlib.btree_index:1054\ncfi=/bzrlib/btree_index.py\ncalls=17 1054\n\
                    1087 57\n\n\
                    fi=/bzrlib/btree_index.py\nfn=_multi bzrlib.btree_index:972\n972 16\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "iter_entries bzrlib.btree_index:1087 self=14 total=71 calls=0\n  \
             _walk bzrlib.btree_index:1054 self=35 total=57 calls=17\n    \
             <len> self=6 total=6 calls=3\n    \
             _multi bzrlib.btree_index:972 self=16 total=16 calls=18\n"
        );
    }

    /// Two `calls=` after one `cfn=` call one function, also with a `cfi=` between them:
    /// KCachegrind and callgrind_annotate resolve the callee at its `cfn=` (`a.c:foo`, inclusive
    /// 17, in `callgrind_annotate --inclusive=yes`). The `cfi=`, which names the file of a
    /// callee after its `cfn=` in lsprofcalltree's output, made the second call one to a `foo`
    /// of `b.c`, a function of its own.
    #[test]
    fn a_second_call_without_a_cfn_calls_the_same_function() {
        let text = "events: Ir\nfl=a.c\nfn=main\n1 1\ncfn=foo\ncalls=1 1\n1 10\n\
                    cfi=b.c\ncalls=1 1\n1 7\nfn=foo\n1 17\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "main self=1 total=18 calls=0\n  foo self=17 total=17 calls=2\n"
        );
    }

    /// A header's code inlined into two functions of one name in two files (two static `work`,
    /// as `gcc -O2` writes for glibc's fortify headers): each host gets its own piece, with its
    /// own costs. The piece was one function under the first host only: there `work` (a.c)
    /// totalled 110, and `work` (b.c) 1 and a spurious root of 100. callgrind_annotate: main
    /// 112 inclusive, a.c:work 11, b.c:work 101.
    #[test]
    fn code_inlined_into_two_hosts_goes_under_each() {
        let text = "events: Ir\nfl=main.c\nfn=main\ncfi=a.c\ncfn=work\ncalls=1 1\n1 11\n\
                    cfi=b.c\ncfn=work\ncalls=1 1\n2 101\nfl=a.c\nfn=work\n1 1\nfi=util.h\n5 10\n\
                    fl=b.c\nfn=work\n1 1\nfi=util.h\n5 100\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "main self=0 total=112 calls=0\n  work self=1 total=11 calls=1\n    work self=10 total=10 calls=0\n  work self=1 total=101 calls=1\n    work self=100 total=100 calls=0\n"
        );
    }

    /// `???`, an object or file valgrind does not know, is the same as none given, as
    /// KCachegrind reads it: a function defined with no `ob=` and called with `cob=???` (as
    /// profconv's writer writes a call into a function whose object it left out) is one
    /// function, its cost under the call. It was two `leaf`s, one a root holding the cost, and
    /// the real demo file written again as callgrind read back with 9 roots instead of 1.
    #[test]
    fn an_unknown_object_or_file_is_the_same_as_none() {
        for text in [
            "events: Ir\nob=???\nfl=???\nfn=leaf\n0 5\nob=/bin/prog\nfl=main.c\nfn=main\n1 1\n\
             cob=???\ncfi=???\ncfn=leaf\ncalls=1 0\n1 5\n",
            "events: Ir\nfn=leaf\n0 5\nob=/bin/prog\nfl=main.c\nfn=main\n1 1\n\
             cob=???\ncfi=???\ncfn=leaf\ncalls=1 0\n1 5\n",
        ] {
            let g = graph_of(text);
            assert_eq!(g.funcs.len(), 2, "{text}");
            let p = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
            let t = first_seen_tree(&p.view(), false);
            assert_eq!(
                t, "main self=1 total=6 calls=0\n  leaf self=5 total=5 calls=1\n",
                "{text}"
            );
            // Written again, it reads back as it was read.
            let mut out = Vec::new();
            crate::emit::emit_callgrind(&p.view(), &mut out, Default::default()).unwrap();
            let again = String::from_utf8(out).unwrap();
            let g = graph_of(&again);
            let p = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
            assert_eq!(first_seen_tree(&p.view(), false), t, "{again}");
        }
    }

    /// A self line that costs nothing changes no node: it took a turn of the rounding phases,
    /// so the `0 0` lines the writer adds moved cost between contexts (here `A>X>Y, B>X>Z`
    /// read back as `A>X>Z, B>X>Y`), and callgrind → callgrind → tree differed from
    /// callgrind → tree on 63 of 80 random acyclic profiles.
    #[test]
    fn a_line_of_no_cost_changes_no_split() {
        let text = "events: s\nfn=main\ncfn=A\ncalls=1 0\n0 1\ncfn=B\ncalls=1 0\n0 1\n\
                    fn=A\ncfn=X\ncalls=1 0\n0 1\nfn=B\ncfn=X\ncalls=1 0\n0 1\n\
                    fn=X\ncfn=Y\ncalls=1 0\n0 1\ncfn=Z\ncalls=1 0\n0 1\nfn=Y\n0 1\nfn=Z\n0 1\n";
        let want = tree(text, BuildOptions::default());
        assert!(
            want.contains(
                "  A self=0 total=1 calls=1\n    X self=0 total=1 calls=1\n      Y self=1"
            ),
            "{want}"
        );
        for with_zeros in [
            text.replace("fn=X\n", "fn=X\n0 0\n"),
            text.replace("fn=X\n", "fn=X\n3 0\n")
                .replace("fn=A\n", "fn=A\n0 0\n"),
        ] {
            assert_eq!(
                tree(&with_zeros, BuildOptions::default()),
                want,
                "{with_zeros}"
            );
        }
        // Written again (with such lines), it reads back as it was read.
        let g = graph_of(text);
        let p = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
        let mut out = Vec::new();
        crate::emit::emit_callgrind(&p.view(), &mut out, Default::default()).unwrap();
        let again = String::from_utf8(out).unwrap();
        assert_eq!(tree(&again, BuildOptions::default()), want, "{again}");
    }

    #[test]
    fn parts_with_other_events_are_matched_by_name() {
        let text = "events: A\nfn=f\n1 1\nevents: B A\nfn=f\n1 2 3\n+1 4\n";
        let g = graph_of(text);
        assert_eq!(g.parts, 2);
        assert_eq!(g.self_total(), vec![4, 6]);
        let p = build_profile(&g, &BuildOptions::default(), &mut Context::silent()).unwrap();
        let t = CallTree::build(&p.view()).unwrap();
        assert_eq!((t.grand_total(0), t.grand_total(1)), (4, 6));
        assert_eq!(p.view().value_type_name(1), "B");
    }

    /// The fan-out shape: a root, `layers` layers of two functions each calling both functions
    /// of the next layer (2^layers paths), down to `X`, which calls `leaves` functions; each of
    /// those calls costs `cost` (even), and each leaf has two lines of self cost `cost / 2`. The
    /// layers' functions cost what their calls bring (no more), as in a consistent file.
    fn fan(layers: usize, leaves: usize, cost: u64) -> String {
        let mut o = String::from("events: Ir\nfl=a.c\nfn=root\n1 1\n");
        for a in ["a", "b"] {
            o += &format!("cfn=L0{a}\ncalls=1 1\n1 1000000000000\n");
        }
        for i in 0..layers {
            for a in ["a", "b"] {
                o += &format!("fn=L{i}{a}\n");
                let callees = if i + 1 < layers {
                    vec![format!("L{}a", i + 1), format!("L{}b", i + 1)]
                } else {
                    vec!["X".to_string()]
                };
                for c in callees {
                    o += &format!("cfn={c}\ncalls=1 1\n1 100000000000\n");
                }
            }
        }
        o += "fn=X\n1 1\n";
        for k in 0..leaves {
            o += &format!("cfn=K{k}\ncalls=7 1\n1 {cost}\n");
        }
        for k in 0..leaves {
            o += &format!("fn=K{k}\n1 {}\n2 {}\n", cost / 2, cost / 2);
        }
        o
    }

    /// Every item split over every node, with no work limit: the reconstruction before.
    const DENSE: Tuning = Tuning {
        dense_only: true,
        max_work: None,
    };

    /// `build` of `text`: the profile, its stats and the messages.
    /// The profile of `text` with the default options, and the messages of reading and
    /// building it.
    fn read_with_messages(text: &str) -> (Profile, Vec<String>) {
        let mut messages = Vec::new();
        let mut sink = |_: u32, m: &str| messages.push(m.to_string());
        let mut cx = Context::with_sink(&mut sink);
        let g = parse_graph(&mut Input::from_slice(text.as_bytes()), &mut cx).unwrap();
        let p = build_profile(&g, &BuildOptions::default(), &mut cx).unwrap();
        (p, messages)
    }

    fn built(text: &str, opts: BuildOptions, tuning: Tuning) -> (Profile, Stats, Vec<String>) {
        let g = graph_of(text);
        let mut messages = Vec::new();
        let mut sink = |_: u32, m: &str| messages.push(m.to_string());
        let (p, stats) = build(&g, &opts, tuning, &mut Context::with_sink(&mut sink)).unwrap();
        (p, stats, messages)
    }

    /// Self cost (column 0) per function name, and per (function name, line).
    fn self_costs(p: &Profile) -> (BTreeMap<String, i64>, BTreeMap<(String, u32), i64>) {
        let v = p.view();
        let (mut by_func, mut by_line) = (BTreeMap::new(), BTreeMap::new());
        for (i, &stack) in v.sample_stack.iter().enumerate() {
            let frame = v.stack_frame[stack as usize] as usize;
            let name = v.func_name_str(v.frame_func[frame]).to_string();
            let value = v.sample_values[0][i];
            *by_func.entry(name.clone()).or_insert(0) += value;
            *by_line.entry((name, v.frame_line[frame])).or_insert(0) += value;
        }
        by_func.retain(|_, v| *v != 0);
        by_line.retain(|_, v| *v != 0);
        (by_func, by_line)
    }

    /// A chain deeper than max-depth through functions met nowhere else (valgrind's
    /// `--separate-recs=N` names each recursion level `f'2`, `f'3`, ...): the function below the
    /// cut has no other context, so it and what it calls become a root. The warning says so;
    /// it said the costs went to other contexts of the same functions, and the flame graph's
    /// extra root was unexplained.
    #[test]
    fn a_chain_cut_at_max_depth_is_said_to_become_a_root() {
        let mut text = String::from("events: Ir\nfl=a.c\n");
        for i in 0..12 {
            text.push_str(&format!("fn=f{i}\n1 1\n"));
            if i < 11 {
                text.push_str(&format!("cfn=f{}\ncalls=1 1\n2 {}\n", i + 1, 11 - i));
            }
        }
        let opts = BuildOptions {
            max_depth: 8,
            ..BuildOptions::default()
        };
        let (p, _, messages) = built(&text, opts, Tuning::default());
        let v = p.view();
        let roots: std::collections::BTreeSet<&str> = v
            .sample_stack
            .iter()
            .map(|&s| {
                let mut s = s as usize;
                while v.stack_prefix[s] != NONE {
                    s = v.stack_prefix[s] as usize;
                }
                v.func_name_str(v.frame_func[v.stack_frame[s] as usize])
            })
            .collect();
        assert_eq!(roots, ["f0", "f8"].into(), "{messages:?}");
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("deeper than max-depth=8 were not created")
                && messages[0].contains("or to a root node of each function left without one"),
            "{messages:?}"
        );
    }

    #[test]
    fn fan_out_work_follows_the_nodes_made_not_paths_times_edges() {
        // 2^12 nodes of X, each of its 3000 calls (cost 10) split over them: splitting every call
        // over every node took 12 Mi node shares (1.7 s in a debug build; 241 s for a 2.4 MB
        // file of this shape in release); a call's 10 nonzero shares are found by tree searches.
        let (layers, leaves) = (12, 3000);
        let (p, stats, messages) = built(
            &fan(layers, leaves, 10),
            BuildOptions::default(),
            Tuning::default(),
        );
        assert!(messages.is_empty(), "{messages:?}");
        let paths = 1usize << layers;
        // root, 2 per layer per path prefix, X's 2^12 nodes, 10 per leaf.
        assert_eq!(stats.nodes, 1 + (2 * paths - 2) + paths + 10 * leaves);
        assert!(
            stats.work <= 4 * (stats.nodes + 3 * leaves),
            "{} node shares for {} nodes (old: > {})",
            stats.work,
            stats.nodes,
            paths * leaves
        );
        // Every leaf is under X, in 10 contexts of cost 1 each way, its two lines kept.
        let t = CallTree::build(&p.view()).unwrap();
        let v = p.view();
        let under_x = (0..t.len())
            .filter(|&n| {
                let parent = t.parent[n];
                parent != NONE
                    && v.func_name_str(t.func[parent as usize]) == "X"
                    && v.func_name_str(t.func[n]).starts_with('K')
            })
            .count();
        assert_eq!(under_x, 10 * leaves);
        let (by_func, by_line) = self_costs(&p);
        assert_eq!(by_func["K0"], 10);
        assert_eq!(by_line[&("K2999".to_string(), 2)], 5);
        // The same profile as splitting every item over every node.
        let small = fan(6, 40, 10);
        let (dense, dense_stats, _) = built(&small, BuildOptions::default(), DENSE);
        let (sparse, stats, _) = built(&small, BuildOptions::default(), Tuning::default());
        assert_eq!(
            first_seen_tree(&sparse.view(), true),
            first_seen_tree(&dense.view(), true)
        );
        assert_eq!(sparse.view().frame_line, dense.view().frame_line);
        assert!(stats.work <= dense_stats.work, "{stats:?} {dense_stats:?}");
    }

    #[test]
    fn past_the_work_limit_edges_stay_unsplit_and_self_lines_merge() {
        // Dense splits (each call costs more than X has nodes): X's 2^6 nodes × 500 calls are
        // 32 000 node shares, within the default limit, which a small max-nodes does not lower:
        // the tree and the messages of splitting everything.
        let text = fan(6, 500, 1_000_000);
        let opts = BuildOptions {
            max_depth: 1000,
            max_nodes: 300,
            ..BuildOptions::default()
        };
        let (p, stats, messages) = built(&text, opts, Tuning::default());
        let selfs = 1 + 1 + 2 * 500;
        let items = selfs + (2 + 4 * 5 + 2 + 500);
        assert_eq!(stats.max_work, 4 * crate::DEFAULT_MAX_NODES + 16 * items);
        let (old, _, old_messages) = built(&text, opts, DENSE);
        assert_eq!(messages, old_messages);
        assert_eq!(
            first_seen_tree(&p.view(), true),
            first_seen_tree(&old.view(), true)
        );
        // Past max-nodes=300 the calls could make no node: with a limit of 2 000, most are not
        // split (nor their nodes counted); the tree is the same.
        let small = Tuning {
            max_work: Some(2000),
            ..Tuning::default()
        };
        let (p, stats, messages) = built(&text, opts, small);
        assert!(stats.count_work <= 2000, "{stats:?}");
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("beyond max-nodes=300 were not created, nor those of"),
            "{messages:?}"
        );
        assert_eq!(
            first_seen_tree(&p.view(), true),
            first_seen_tree(&old.view(), true)
        );
        // Likewise when X's nodes are at max-depth - 1.
        let deep = BuildOptions {
            max_depth: 8,
            max_nodes: 1_000_000,
            ..BuildOptions::default()
        };
        let (_, stats, messages) = built(&text, deep, small);
        assert!(stats.count_work <= 2000, "{stats:?}");
        assert!(
            messages[0].contains("max-depth=8 were not created, nor those of 469 call edge(s)"),
            "{messages:?}"
        );
        // With a work limit of 10 000 and no node limit: calls stay unsplit, self costs merge.
        let tight = Tuning {
            max_work: Some(10_000),
            ..Tuning::default()
        };
        let (p, stats, messages) = built(&text, BuildOptions::default(), tight);
        assert!(stats.work <= 2 * stats.max_work + stats.nodes, "{stats:?}");
        let limit = messages
            .iter()
            .find(|m| m.contains("work limit reached"))
            .unwrap_or_else(|| panic!("{messages:?}"));
        assert!(
            limit.contains("call edge(s) were not split") && limit.contains("function(s) were"),
            "{limit}"
        );
        // Self costs per function are still exactly the file's.
        assert_eq!(self_costs(&p).0, self_costs(&old).0);
        assert_eq!(self_costs(&p).0["K499"], 1_000_000);

        // Many self-cost lines of one function with many nodes, with the default options: X's
        // 2^12 nodes × 1200 lines would be 4.9 Mi node shares and as many stacks, past the
        // limit of 4 Mi + 16 × items. They become one item, at X's first line.
        let mut text = fan(12, 0, 1).replace("fn=X\n1 1\n", "fn=X\n");
        for line in 1..=1200 {
            text += &format!("{line} 1000000\n");
        }
        let (p, stats, messages) = built(&text, BuildOptions::default(), Tuning::default());
        assert!(
            messages
                .iter()
                .any(|m| m.contains("the self costs of 1 function(s) were split")),
            "{messages:?}"
        );
        let (by_func, by_line) = self_costs(&p);
        assert_eq!(by_func["X"], 1_200_000_000);
        assert_eq!(by_line[&("X".to_string(), 1)], 1_200_000_000);
        assert!(p.view().n_stacks() < 4 * 8192, "{}", p.view().n_stacks());
        assert!(stats.work <= stats.max_work, "{stats:?}");
        // Below the limit, the lines stay.
        text.truncate(text.rfind("\nfn=X\n").unwrap() + 6);
        for line in 1..=3 {
            text += &format!("{line} 1000000\n");
        }
        let (p, _, messages) = built(&text, BuildOptions::default(), Tuning::default());
        assert!(messages.is_empty(), "{messages:?}");
        assert_eq!(self_costs(&p).1[&("X".to_string(), 3)], 1_000_000);
    }

    #[test]
    fn self_lines_do_not_take_the_work_of_later_call_edges() {
        // X has 256 nodes and 60 lines of self cost: splitting them by line takes a share per
        // node and line. Its callee K0 (256 nodes) calls W. The lines of X fit in the work
        // limit, but took what K0's call into W needed: the call was not split, and W, with
        // everything below it, became a root of its own (a gcc run's `main` kept 46 % of the
        // program). Self lines only place costs within a frame; the calls make the tree.
        let mut text = fan(8, 1, 1_000_000_000).replace("fn=X\n1 1\n", "fn=X\n");
        for line in 1..=60 {
            text = text.replace("fn=X\n", &format!("fn=X\n{} 1000000\n", 61 - line));
        }
        text = text.replace(
            "fn=K0\n1 500000000\n2 500000000\n",
            "fn=K0\n1 400000000\n2 400000000\ncfn=W\ncalls=3 1\n3 200000000\nfn=W\n1 200000000\n",
        );
        assert!(text.contains("cfn=W"), "{text}");
        let (_, all, messages) = built(&text, BuildOptions::default(), Tuning::default());
        assert!(messages.is_empty(), "{messages:?}");
        // A limit that X's lines fit in, with room for the calls but not for both.
        let tight = Tuning {
            max_work: Some(all.work - 800),
            ..Tuning::default()
        };
        let (p, stats, messages) = built(&text, BuildOptions::default(), tight);
        assert!(
            messages
                .iter()
                .all(|m| !m.contains("call edge(s) were not split")),
            "{messages:?} {stats:?} {all:?}"
        );
        let t = CallTree::build(&p.view()).unwrap();
        let v = p.view();
        let name = |n: usize| v.func_name_str(t.func[n]).to_string();
        let w_nodes: Vec<usize> = (0..t.len()).filter(|&n| name(n) == "W").collect();
        assert_eq!(w_nodes.len(), 256);
        for n in w_nodes {
            let parent = t.parent[n];
            assert!(
                parent != NONE && name(parent as usize) == "K0",
                "W at a root"
            );
        }
        // The lines of X are split as far as the limit allows; its self cost stays exact.
        assert_eq!(self_costs(&p).0["X"], 60_000_000);
    }

    #[test]
    fn sparse_and_dense_splits_agree() {
        // A little LCG: weights from 0 to near i64::MAX (the column totals then pass 2^64 and
        // are shifted), items from 0 to i64::MAX (eight of those pass 2^64: that column has no
        // capacities).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 11
        };
        for round in 0..400 {
            let nn = 1 + (next() % 300) as usize;
            let nc = 1 + (next() % 3) as usize;
            let weight_kind = next() % 4;
            let node_weight: Vec<i64> = (0..nn * nc)
                .map(|_| match weight_kind {
                    0 => 0,
                    1 => (next() % 5) as i64,
                    2 => (next() % 1_000_000) as i64,
                    _ => i64::MAX - (next() % 1000) as i64,
                })
                .collect();
            let nodes: Vec<u32> = (0..nn as u32).rev().collect();
            let items: Vec<Vec<i64>> = (0..8)
                .map(|_| {
                    (0..nc)
                        .map(|_| match next() % 4 {
                            0 => 0,
                            1 => (next() % 8) as i64,
                            2 => (next() % 1000) as i64,
                            _ => i64::MAX - (next() % 1000) as i64,
                        })
                        .collect()
                })
                .collect();
            let totals: Vec<Option<u64>> = (0..nc)
                .map(|k| u64::try_from(items.iter().map(|t| t[k] as i128).sum::<i128>()).ok())
                .collect();
            let mut sparse_split = Split::default();
            sparse_split.reset(&nodes, &node_weight, nc, &totals);
            let capacity = sparse_split.left.clone();
            let mut dense_split = sparse_split.clone();
            let mut got = vec![0i128; nn * nc];
            for total in &items {
                let (mut sparse, mut dense) = (Parts::default(), Parts::default());
                sparse_split.split_sparse(total, &mut sparse);
                dense_split.split_dense(total, &mut dense);
                assert_eq!(sparse.idx, dense.idx, "round {round}: {total:?}");
                assert_eq!(sparse.vals, dense.vals, "round {round}: {total:?}");
                assert_eq!(sparse_split.left, dense_split.left, "round {round}");
                assert_eq!(sparse_split.tree, dense_split.tree, "round {round}");
                for (k, &t) in total.iter().enumerate() {
                    let sum: i64 = dense.iter().map(|(_, sh)| sh[k]).sum();
                    assert_eq!(sum, t, "round {round}");
                    assert!(dense.iter().all(|(_, sh)| sh[k] >= 0), "round {round}");
                }
                for (j, sh) in dense.iter() {
                    for (k, &v) in sh.iter().enumerate() {
                        got[k * nn + j] += v as i128;
                    }
                }
            }
            // Where a column has capacities, every node got exactly its capacity.
            for (k, total) in totals.iter().enumerate() {
                if total.is_some() {
                    let range = k * nn..(k + 1) * nn;
                    assert!(dense_split.left[range.clone()].iter().all(|&v| v == 0));
                    for j in range {
                        assert_eq!(got[j], capacity[j] as i128, "round {round}");
                    }
                }
            }
        }
    }

    #[test]
    fn small_costs_of_a_function_with_several_callers_are_shared_by_their_callers() {
        // profconv's callgrind output of `A;B;C;D;E 1`, `A;B;C;F;G 1`, `A;B;H;F 1`: C and H call F
        // at cost 1 each; F's self cost 1 and its call of G (1) are one unit each. Each unit
        // split alone gave both to the last caller, H (total 2; C's F 0). Now each F gets one
        // (which one is a guess: the file does not say), and G's call goes with its cost.
        let text = "events: samples\nfn=A\ncfn=B\ncalls=1 0\n0 3\nfn=B\ncfn=C\ncalls=1 0\n0 2\n\
                    cfn=H\ncalls=1 0\n0 1\nfn=C\ncfn=D\ncalls=1 0\n0 1\ncfn=F\ncalls=1 0\n0 1\n\
                    fn=D\ncfn=E\ncalls=1 0\n0 1\nfn=E\n0 1\nfn=F\n0 1\ncfn=G\ncalls=1 0\n0 1\n\
                    fn=G\n0 1\nfn=H\ncfn=F\ncalls=1 0\n0 1\n";
        assert_eq!(
            tree(text, BuildOptions::default()),
            "A self=0 total=3 calls=0\n  B self=0 total=3 calls=1\n    C self=0 total=2 calls=1\n      D self=0 total=1 calls=1\n        E self=1 total=1 calls=1\n      F self=1 total=1 calls=1\n    H self=0 total=1 calls=1\n      F self=0 total=1 calls=1\n        G self=1 total=1 calls=1\n"
        );
        // Two callers of cost 5 each, F calling ten functions at cost 1 each: each caller's F
        // gets five of them (before: all ten under the second, the first's F empty).
        let mut text = String::from(
            "events: Ir\nfn=main\ncfn=C\ncalls=1 0\n0 5\ncfn=H\ncalls=1 0\n0 5\n\
             fn=C\ncfn=F\ncalls=1 0\n0 5\nfn=H\ncfn=F\ncalls=1 0\n0 5\nfn=F\n",
        );
        for i in 0..10 {
            text += &format!("cfn=g{i}\ncalls=1 0\n0 1\n");
        }
        for i in 0..10 {
            text += &format!("fn=g{i}\n0 1\n");
        }
        let (p, ..) = built(&text, BuildOptions::default(), Tuning::default());
        let t = CallTree::build(&p.view()).unwrap();
        let v = p.view();
        let f_totals: Vec<i64> = (0..t.len())
            .filter(|&n| v.func_name_str(t.func[n]) == "F")
            .map(|n| t.total_values[0][n])
            .collect();
        assert_eq!(f_totals, [5, 5]);

        // Two callers of cost 100 each; F has 100 lines of self cost 1 and calls g at cost 100:
        // each F gets about half of each (the roundings of the unit lines spread over both).
        let mut text = String::from(
            "events: Ir\nfn=main\ncfn=C\ncalls=1 0\n0 100\ncfn=H\ncalls=1 0\n0 100\n\
             fn=C\ncfn=F\ncalls=1 0\n0 100\nfn=H\ncfn=F\ncalls=1 0\n0 100\nfn=F\n",
        );
        for line in 1..=100 {
            text += &format!("{line} 1\n");
        }
        text += "cfn=g\ncalls=10 1\n1 100\nfn=g\n1 100\n";
        let (p, ..) = built(&text, BuildOptions::default(), Tuning::default());
        let t = CallTree::build(&p.view()).unwrap();
        let v = p.view();
        let of = |name: &str| -> Vec<(i64, i64, i64)> {
            (0..t.len())
                .filter(|&n| v.func_name_str(t.func[n]) == name)
                .map(|n| {
                    (
                        t.self_values[0][n],
                        t.total_values[0][n],
                        t.self_values[1][n],
                    )
                })
                .collect()
        };
        let f = of("F");
        assert_eq!(f.iter().map(|x| x.1).collect::<Vec<_>>(), [100, 100]);
        assert!(f.iter().all(|x| (45..=55).contains(&x.0)), "{f:?}");
        // g's ten calls go with its cost.
        let g = of("g");
        assert_eq!(g.iter().map(|x| x.2).sum::<i64>(), 10, "{g:?}");
        assert!(
            g.iter().all(|x| (45..=55).contains(&x.1) && x.2 == 5),
            "{g:?}"
        );
    }

    #[test]
    fn huge_caller_weights_do_not_overflow() {
        // Five callers each pass f a call of cost 2^63 - 1: f's nodes weigh 5 × (2^63 - 1) in
        // all, and f's self cost 2^62 times that is past i128: the weights are shifted first.
        let big = i64::MAX;
        let mut text = String::from("events: Ir\nfn=main\n1 1\n");
        for c in 0..5 {
            text += &format!("cfn=c{c}\ncalls=1 1\n1 1\n");
        }
        for c in 0..5 {
            text += &format!("fn=c{c}\n1 1\ncfn=f\ncalls=3 1\n1 {big}\n");
        }
        text += &format!("fn=f\n1 {}\n2 3\n", 1i64 << 62);
        let (p, ..) = built(&text, BuildOptions::default(), Tuning::default());
        let (by_func, by_line) = self_costs(&p);
        assert_eq!(by_func["f"], (1i64 << 62) + 3);
        assert_eq!(by_line[&("f".to_string(), 2)], 3);
        let t = CallTree::build(&p.view()).unwrap();
        let f_nodes = (0..t.len())
            .filter(|&n| p.view().func_name_str(t.func[n]) == "f")
            .count();
        assert_eq!(f_nodes, 5);
    }

    /// An event whose value type name is no valid event name is read back under that name,
    /// which its long name keeps (`Memory_(bytes)` was read back as `Memory__bytes_`, so
    /// `--value Memory_(bytes)` no longer found it); other long names rename nothing.
    #[test]
    fn value_type_names_come_back_from_long_names() {
        assert_eq!(
            original_name("Memory__bytes_", Some("Memory_(bytes) (bytes)")),
            Some("Memory_(bytes)")
        );
        assert_eq!(original_name("A_1_2", Some("A-1 (count)")), Some("A-1"));
        assert_eq!(original_name("e1x_2", Some("1x (count)")), Some("1x"));
        assert_eq!(original_name("samples", Some("samples (count/10^2)")), None);
        assert_eq!(original_name("Ir", Some("Instruction Fetch")), None);
        assert_eq!(original_name("ns", Some("CPU time (ns)")), None);
        assert_eq!(original_name("A_1_02", Some("A-1 (count)")), None);
        assert_eq!(original_name("A_1_1", Some("A-1 (count)")), None);
        assert_eq!(original_name("A", None), None);
    }

    /// Value type names that are no valid event names survive a round trip through a written
    /// file.
    #[test]
    fn value_type_names_survive_a_round_trip() {
        let mut b = ProfileBuilder::new();
        for name in ["Memory_(bytes)", "A-1", "A_1", "1x", "time (wall)"] {
            b.add_value_type(name, "bytes", ValueKind::Weight);
        }
        b.add_stack(&["main", "f"], &[1, 2, 3, 4, 5]).unwrap();
        let p = b.finish();
        let mut text = Vec::new();
        crate::emit::emit_callgrind(&p.view(), &mut text, Default::default()).unwrap();
        let back = crate::parse_callgrind(
            &mut Input::from_slice(&text),
            &BuildOptions {
                max_depth: 100,
                max_nodes: 100,
                ..BuildOptions::default()
            },
            &mut profconv_plugin::Context::silent(),
        )
        .unwrap();
        let v = back.view();
        let names: Vec<&str> = (0..v.value_types.len())
            .map(|c| v.value_type_name(c))
            .collect();
        assert_eq!(
            names,
            ["Memory_(bytes)", "A-1", "A_1", "1x", "time (wall)", "calls"]
        );
    }

    #[test]
    fn units_from_long_names() {
        assert_eq!(unit_of(Some("samples (count)")), ("count", 0));
        assert_eq!(unit_of(Some("time (nanoseconds/10^3)")), ("nanoseconds", 3));
        assert_eq!(unit_of(Some("Instruction Fetch")), ("count", 0));
        assert_eq!(unit_of(None), ("count", 0));
        assert_eq!(unit_of(Some("x (/10^2)")), ("", 2));
        // valgrind's `--collect-systime=msec|usec|nsec`.
        assert_eq!(unit_of(Some("sysTime (elapsed ms)")), ("ms", 0));
        assert_eq!(unit_of(Some("sysTime (elapsed ns)")), ("ns", 0));
        assert_eq!(unit_of(Some("sysCpuTime (system cpu ns)")), ("ns", 0));
        assert_eq!(unit_of(Some("x (elapsed weeks)")), ("elapsed weeks", 0));
    }

    /// The messages a build of `text` gives.
    fn build_messages(text: &str) -> Vec<String> {
        let g = graph_of(text);
        let mut messages = Vec::new();
        let mut sink = |_: u32, m: &str| messages.push(m.to_string());
        build_profile(
            &g,
            &BuildOptions::default(),
            &mut Context::with_sink(&mut sink),
        )
        .unwrap();
        messages
    }

    /// A function whose own costs exceed the calls into it (a thread's start function) gets a
    /// root node for the rest, and the reader says how many such functions there are.
    #[test]
    fn functions_costing_more_than_their_calls_in_are_noted_as_roots() {
        let text = "events: Ir\nfn=main\n1 1\ncfn=f\ncalls=1 1\n1 5\nfn=f\n1 8\n";
        let messages = build_messages(text);
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("1 function(s) cost more than the calls into them")),
            "{messages:?}"
        );
        assert!(tree(text, BuildOptions::default()).contains("\nf self=3 total=3"));
        // Called for all of its cost: nothing to say.
        let messages =
            build_messages("events: Ir\nfn=main\n1 1\ncfn=f\ncalls=1 1\n1 8\nfn=f\n1 8\n");
        assert!(
            !messages
                .iter()
                .any(|m| m.contains("cost more than the calls")),
            "{messages:?}"
        );
    }

    /// When many event columns lower max-nodes (nodes × columns stay within `NODE_CELLS`),
    /// the warning about the nodes not made says what it was lowered from; at the asked
    /// max-nodes it does not. Call edges met past max-nodes that made no node are warned about
    /// even when no node was cut.
    #[test]
    fn the_max_nodes_warning_says_when_columns_lowered_it() {
        let opts = BuildOptions {
            max_nodes: 1_000_000,
            ..BuildOptions::default()
        };
        let warn = |caveats: Caveats, max_nodes: usize, nc: usize| {
            let mut messages = Vec::new();
            let mut sink = |_: u32, m: &str| messages.push(m.to_string());
            let work = WorkLimit::new(Tuning::default(), max_nodes, nc, 10);
            report(
                &mut Context::with_sink(&mut sink),
                &caveats,
                &work,
                &opts,
                max_nodes,
                nc,
            );
            assert_eq!(messages.len(), 1, "{messages:?}");
            messages.remove(0)
        };
        let cut = || Caveats {
            cut_budget: 7,
            ..Caveats::default()
        };
        let lowered = warn(cut(), NODE_CELLS / 64, 64);
        assert!(
            lowered.starts_with(&format!(
                "7 call-tree node(s) beyond max-nodes={} (lowered from 1000000 for 64 event columns",
                NODE_CELLS / 64
            )),
            "{lowered}"
        );
        let asked = warn(cut(), 1_000_000, 1);
        assert!(
            asked.starts_with("7 call-tree node(s) beyond max-nodes=1000000 were not created"),
            "{asked}"
        );
        let uncounted = Caveats {
            uncounted_full: 2,
            ..Caveats::default()
        };
        let edges = warn(uncounted, 1_000_000, 1);
        assert!(
            edges.starts_with(
                "0 call-tree node(s) beyond max-nodes=1000000 were not created, nor those of 2 \
                 call edge(s) met past that"
            ),
            "{edges}"
        );
    }

    /// A call edge that closes a cycle of calls (recursion through another function) is not
    /// expanded, and the reader says how many such edges there were.
    #[test]
    fn call_edges_closing_a_cycle_are_noted() {
        let messages = build_messages(
            "events: Ir\nfn=main\n1 1\ncfn=a\ncalls=1 1\n1 10\nfn=a\n1 2\ncfn=b\ncalls=1 1\n1 8\n\
             fn=b\n1 5\ncfn=a\ncalls=1 1\n1 3\n",
        );
        assert!(
            messages.iter().any(|m| m.ends_with(
                "call edge(s) closing a cycle (recursion) were not expanded; their costs show at the outer level"
            ) && !m.starts_with("0 ")),
            "{messages:?}"
        );
    }
}
