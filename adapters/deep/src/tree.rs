//! The proc-dynamic graph as a tree (spec §12.3): one node per proc-dynamic, placed under the
//! call-site-dynamic that first reaches it in the writer's depth-first, slot-ordered preorder
//! walk. Every other call-site-dynamic reaching it (recursion, a link inside a clique) is a link:
//! its calls are the node's recursive calls. Every call-site-dynamic's own costs go to the node
//! of its callee, so each cost lands in exactly one node.
//!
//! The walk keeps an explicit stack of (proc-dynamic, next call-site-dynamic): any depth works,
//! and each proc-dynamic is expanded once, so cycles end it.

use crate::model::{DeepFile, m};
use profconv_plugin::PluginError;
use profconv_plugin::ir::NONE;

/// The tree of proc-dynamics. Nodes are numbered in preorder (parents before children); node 0
/// is the root proc-dynamic.
#[derive(Clone, Debug, Default)]
pub struct PdTree {
    /// The proc-dynamic of each node.
    pub pd: Vec<u32>,
    /// The parent node ([`NONE`] for the root).
    pub parent: Vec<u32>,
    /// The call-site-static through which the parent calls this node (0 for the root).
    pub css: Vec<u32>,
    /// The call-site-dynamic of the tree edge (0 for the root).
    pub csd: Vec<u32>,
    /// The node of each proc-dynamic id.
    pub node_of: Vec<u32>,
    /// The call-site-dynamics that are not tree edges (recursion, clique links), in walk order.
    pub link_csds: Vec<u32>,
}

/// What a node holds: its own costs (summed over every call-site-dynamic reaching it), the calls
/// over its tree edge and over other links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCosts {
    /// Own measurements, by [`m`] index.
    pub own: [i64; m::N],
    /// Calls over the tree edge.
    pub calls: i64,
    /// Calls over other links (recursion, clique members).
    pub recursive_calls: i64,
}

impl PdTree {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.pd.len()
    }

    /// True when the tree has no node.
    pub fn is_empty(&self) -> bool {
        self.pd.is_empty()
    }

    /// Each node's costs, from every call-site-dynamic of the file.
    pub fn costs(&self, f: &DeepFile<'_>) -> Result<Vec<NodeCosts>, PluginError> {
        let mut costs = vec![NodeCosts::default(); self.len()];
        for c in 1..f.csd.len() as u32 {
            let ms = f.measures(c)?;
            let overflow = || {
                PluginError::invalid_input(format!(
                    "call-site-dynamic {c}: the sum of the measurements of the proc-dynamic it calls overflows 64 bits"
                ))
                .at_offset(f.csd[c as usize].offset)
            };
            let n = self.node_of[f.csd[c as usize].callee as usize] as usize;
            let nc = &mut costs[n];
            for (o, v) in nc.own.iter_mut().zip(ms.values) {
                *o = o.checked_add(v).ok_or_else(overflow)?;
            }
            if self.csd[n] == c {
                nc.calls = ms.calls;
            } else {
                nc.recursive_calls = nc
                    .recursive_calls
                    .checked_add(ms.calls)
                    .ok_or_else(overflow)?;
            }
        }
        Ok(costs)
    }
}

/// Walks the graph from the root proc-dynamic (spec §12.3 steps 2–3). Every proc-dynamic must
/// be reachable: one that is not would lose the costs of its calls.
pub fn build_tree(f: &DeepFile<'_>) -> Result<PdTree, PluginError> {
    let n_pd = f.pd.len();
    let mut t = PdTree {
        pd: Vec::with_capacity(n_pd),
        parent: Vec::with_capacity(n_pd),
        css: Vec::with_capacity(n_pd),
        csd: Vec::with_capacity(n_pd),
        node_of: vec![NONE; n_pd],
        link_csds: Vec::new(),
    };
    let node_of = &mut t.node_of;
    let root = f.header.root_pd;
    node_of[root as usize] = 0;
    t.pd.push(root);
    t.parent.push(NONE);
    t.css.push(0);
    t.csd.push(0);
    // (proc-dynamic, node, position in its call-site-dynamic list)
    let mut stack: Vec<(u32, u32, u32)> = vec![(root, 0, 0)];
    while let Some(top) = stack.last_mut() {
        let p = &f.pd[top.0 as usize];
        if top.2 >= p.n_refs {
            stack.pop();
            continue;
        }
        let r = (p.ref_start + top.2) as usize;
        top.2 += 1;
        let parent_node = top.1;
        let c_id = f.refs[r];
        let c = &f.csd[c_id as usize];
        let q = c.callee as usize;
        if node_of[q] == NONE {
            let node = t.pd.len() as u32;
            node_of[q] = node;
            let css = f.ref_css[r];
            t.pd.push(c.callee);
            t.parent.push(parent_node);
            t.css.push(css);
            t.csd.push(c_id);
            // Descend at once (preorder, like the writer), before p's other call-site-dynamics.
            stack.push((c.callee, node, 0));
        } else {
            t.link_csds.push(c_id);
        }
    }
    if t.len() != n_pd - 1 {
        let (k, p) =
            f.pd.iter()
                .enumerate()
                .skip(1)
                .find(|(k, _)| t.node_of[*k] == NONE)
                .unwrap_or((0, &f.pd[0]));
        return Err(PluginError::invalid_input(format!(
            "proc-dynamic {k} is not reachable from the root proc-dynamic {root}: only {} of the {} proc-dynamics are reachable (every one must be, as the profiler writes them)",
            t.len(),
            n_pd - 1
        ))
        .at_offset(p.offset));
    }
    Ok(t)
}
