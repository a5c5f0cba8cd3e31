//! The call tree over funcs (seed 001/002): frames of one func combine into one call node.

use crate::children::ChildIndex;
use crate::profile::{IrError, NONE, ProfileRef, ValueKind};

/// A path of funcs from a root: names a call node stably across transforms (seed 001).
pub type CallNodePath = Vec<u32>;

/// The call nodes of a profile's stacks, without values: what a consumer that only orders or
/// groups stacks by call node needs (the [`CallTree`]'s first pass).
#[derive(Clone, Debug)]
pub struct CallNodes {
    /// Parent node, or [`NONE`] for a root; a parent comes before its children.
    pub parent: Vec<u32>,
    /// The func of each node.
    pub func: Vec<u32>,
    /// The call node of each stack.
    pub stack_node: Vec<u32>,
}

impl CallNodes {
    /// A stack's node is its prefix's node and its frame's func: one child lookup per stack,
    /// nodes numbered in first-seen order.
    pub fn build(p: &ProfileRef<'_>) -> CallNodes {
        let ns = p.n_stacks();
        let mut index = ChildIndex::default();
        let mut parent = Vec::new();
        let mut func = Vec::new();
        let mut stack_node = Vec::with_capacity(ns);
        for s in 0..ns {
            let prefix = p.stack_prefix[s];
            let parent_node = match prefix {
                NONE => NONE,
                prefix => stack_node[prefix as usize],
            };
            let f = p.stack_func(s as u32);
            let node = index.get_or_make(parent_node, f, || {
                parent.push(parent_node);
                func.push(f);
                (parent.len() - 1) as u32
            });
            stack_node.push(node);
        }
        CallNodes {
            parent,
            func,
            stack_node,
        }
    }
}

/// The call tree derived from a profile's stacks and samples.
///
/// Node indices follow first-seen order: a parent always comes before its children, so totals
/// and depths are computed by one pass over the nodes, never by recursion.
#[derive(Clone, Debug)]
pub struct CallTree {
    /// Parent node, or [`NONE`] for a root.
    pub parent: Vec<u32>,
    /// The func of each node.
    pub func: Vec<u32>,
    /// Depth (roots are 0).
    pub depth: Vec<u32>,
    /// The call node of each stack.
    pub stack_node: Vec<u32>,
    /// Self value per value type per node.
    pub self_values: Vec<Vec<i64>>,
    /// Total ("running") value per value type per node. For [`ValueKind::Count`] columns this
    /// equals the self value: counts are never summed into parents.
    pub total_values: Vec<Vec<i64>>,
    /// Number of samples whose leaf is this node (a node can exist with only zero weights).
    pub sample_count: Vec<u32>,
    /// First child in first-seen order, or [`NONE`].
    pub first_child: Vec<u32>,
    /// Next sibling in first-seen order, or [`NONE`].
    pub next_sibling: Vec<u32>,
    /// Roots in first-seen order.
    pub roots: Vec<u32>,
    /// Sum over the roots of each value column's totals (checked when built).
    pub grand_totals: Vec<i64>,
}

impl CallTree {
    /// Derives the call tree. Cost: one child lookup per stack (no hashing for a call node with
    /// one child, see `children.rs`) and one pass per sample column.
    pub fn build(p: &ProfileRef<'_>) -> Result<CallTree, IrError> {
        let all: Vec<usize> = (0..p.value_types.len()).collect();
        Self::build_columns(p, &all)
    }

    /// The call tree with the self and total values of the value columns in `columns` only:
    /// the others' vectors in [`self_values`](Self::self_values) and
    /// [`total_values`](Self::total_values) are empty and their grand totals 0. For a consumer
    /// that writes one value type, this saves two vectors per node for every other column (a
    /// Deep.data profile has ten). Columns out of range are ignored.
    pub fn build_columns(p: &ProfileRef<'_>, columns: &[usize]) -> Result<CallTree, IrError> {
        let CallNodes {
            parent,
            func,
            stack_node,
        } = CallNodes::build(p);
        let n = parent.len();
        let mut depth: Vec<u32> = Vec::with_capacity(n);
        for &up in &parent {
            let d = match up {
                NONE => 0,
                up => depth[up as usize] + 1,
            };
            depth.push(d);
        }
        let mut sample_count: Vec<u32> = crate::zeros(n);
        for &s in p.sample_stack {
            let c = &mut sample_count[stack_node[s as usize] as usize];
            *c = c.saturating_add(1);
        }
        let mut self_values = Vec::with_capacity(p.value_types.len());
        let mut total_values = Vec::with_capacity(p.value_types.len());
        for (c, (vt, col)) in p.value_types.iter().zip(&p.sample_values).enumerate() {
            if !columns.contains(&c) {
                self_values.push(Vec::new());
                total_values.push(Vec::new());
                continue;
            }
            let mut selfv: Vec<i64> = crate::zeros(n);
            for (&s, &v) in p.sample_stack.iter().zip(col.iter()) {
                let cell = &mut selfv[stack_node[s as usize] as usize];
                *cell = cell.checked_add(v).ok_or_else(|| overflow(*cell, v))?;
            }
            let mut total = selfv.clone();
            if vt.kind == ValueKind::Weight {
                for i in (0..n).rev() {
                    let par = parent[i];
                    if par != NONE {
                        let v = total[i];
                        let cell = &mut total[par as usize];
                        *cell = cell.checked_add(v).ok_or_else(|| overflow(*cell, v))?;
                    }
                }
            }
            self_values.push(selfv);
            total_values.push(total);
        }
        // Children lists in first-seen order: link in reverse so each list ends up ascending.
        let mut first_child = vec![NONE; n];
        let mut next_sibling = vec![NONE; n];
        let mut roots = Vec::new();
        for i in (0..n).rev() {
            let par = parent[i];
            if par == NONE {
                roots.push(i as u32);
            } else {
                next_sibling[i] = first_child[par as usize];
                first_child[par as usize] = i as u32;
            }
        }
        roots.reverse();
        let mut grand_totals = Vec::with_capacity(total_values.len());
        for total in &total_values {
            let mut sum = 0i64;
            for &r in roots.iter().filter(|_| !total.is_empty()) {
                let v = total[r as usize];
                sum = sum.checked_add(v).ok_or_else(|| overflow(sum, v))?;
            }
            grand_totals.push(sum);
        }
        Ok(CallTree {
            grand_totals,
            parent,
            func,
            depth,
            stack_node,
            self_values,
            total_values,
            sample_count,
            first_child,
            next_sibling,
            roots,
        })
    }

    /// Number of call nodes.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when the tree has no node.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Children of `node` in first-seen order.
    pub fn children(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        let mut c = self.first_child[node as usize];
        std::iter::from_fn(move || {
            (c != NONE).then(|| {
                let cur = c;
                c = self.next_sibling[c as usize];
                cur
            })
        })
    }

    /// The child of `parent` ([`NONE`] for roots) whose func is `func`.
    pub fn child_by_func(&self, parent: u32, func: u32) -> Option<u32> {
        if parent == NONE {
            self.roots
                .iter()
                .copied()
                .find(|&r| self.func[r as usize] == func)
        } else {
            self.children(parent)
                .find(|&c| self.func[c as usize] == func)
        }
    }

    /// The funcs from a root down to `node`.
    pub fn path(&self, node: u32) -> CallNodePath {
        let mut path = Vec::with_capacity(self.depth[node as usize] as usize + 1);
        let mut n = node;
        while n != NONE {
            path.push(self.func[n as usize]);
            n = self.parent[n as usize];
        }
        path.reverse();
        path
    }

    /// The node a path of funcs names, if it exists.
    pub fn find(&self, path: &[u32]) -> Option<u32> {
        let mut node = NONE;
        for &f in path {
            node = self.child_by_func(node, f)?;
        }
        (node != NONE).then_some(node)
    }

    /// The node a path of function names names, if it exists.
    pub fn find_by_names(&self, p: &ProfileRef<'_>, names: &[&str]) -> Option<u32> {
        let mut node = NONE;
        for name in names {
            let next = if node == NONE {
                self.roots
                    .iter()
                    .copied()
                    .find(|&r| p.func_name_str(self.func[r as usize]) == *name)
            } else {
                self.children(node)
                    .find(|&c| p.func_name_str(self.func[c as usize]) == *name)
            };
            node = next?;
        }
        (node != NONE).then_some(node)
    }

    /// Grand total of value column `col` (sum over roots, checked when built; 0 for a column not
    /// built): [`grand_totals`](Self::grand_totals)`[col]`.
    pub fn grand_total(&self, col: usize) -> i64 {
        self.grand_totals[col]
    }
}

fn overflow(a: i64, b: i64) -> IrError {
    IrError::Overflow(format!("{a} + {b} does not fit in 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::ProfileBuilder;

    #[test]
    fn frames_of_one_func_combine_into_one_call_node() {
        // Seed 002: main at several addresses calling doSomething from two loops.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let main = b.func("main");
        let work = b.func("doSomething");
        let m3 = b.frame_at(main, Some(0x03), None);
        let m9 = b.frame_at(main, Some(0x09), None);
        let w = b.frame_at(work, Some(0x11), None);
        for (outer, n) in [(m3, 2), (m9, 3)] {
            let s0 = b.stack(NONE, outer);
            let s1 = b.stack(s0, w);
            b.add_to_stack(s1, &[n]).unwrap();
        }
        let p = b.finish();
        assert_eq!(p.stacks.prefix.len(), 4, "four distinct stacks");
        let tree = CallTree::build(&p.view()).unwrap();
        assert_eq!(tree.len(), 2, "but two call nodes: main -> doSomething");
        assert_eq!(tree.total_values[0][0], 5);
        assert_eq!(tree.self_values[0][1], 5);
        assert_eq!(tree.path(1), vec![main, work]);
        assert_eq!(tree.find(&[main, work]), Some(1));
        assert_eq!(tree.find(&[work]), None);
    }

    #[test]
    fn a_tree_of_some_columns_has_their_values_only() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_value_type("calls", "calls", ValueKind::Count);
        b.add_value_type("bytes", "bytes", ValueKind::Weight);
        b.add_stack(&["a", "b"], &[3, 1, 30]).unwrap();
        b.add_stack(&["a", "c"], &[4, 2, 40]).unwrap();
        b.add_stack(&["a"], &[5, 1, 50]).unwrap();
        let p = b.finish();
        let all = CallTree::build(&p.view()).unwrap();
        let some = CallTree::build_columns(&p.view(), &[2, 7]).unwrap();
        assert_eq!(some.parent, all.parent);
        assert_eq!(some.func, all.func);
        assert_eq!(some.stack_node, all.stack_node);
        assert_eq!(some.sample_count, all.sample_count);
        assert_eq!(some.self_values[2], all.self_values[2]);
        assert_eq!(some.total_values[2], all.total_values[2]);
        assert_eq!(some.grand_totals[2], 120);
        for c in [0, 1] {
            assert!(some.self_values[c].is_empty() && some.total_values[c].is_empty());
            assert_eq!((some.grand_totals[c], some.grand_total(c)), (0, 0));
        }
        assert_eq!(all.grand_total(0), 12);
    }

    /// A profile without samples has no call node, and its grand totals are 0 all the same: a
    /// caller needs no `is_empty` check before [`CallTree::grand_total`].
    #[test]
    fn an_empty_tree_is_empty_and_its_grand_totals_are_zero() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_value_type("calls", "calls", ValueKind::Count);
        let empty = CallTree::build(&b.finish().view()).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.len(), 0);
        assert_eq!((empty.grand_total(0), empty.grand_total(1)), (0, 0));
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["a"], &[0]).unwrap();
        let one = CallTree::build(&b.finish().view()).unwrap();
        assert!(!one.is_empty(), "a node with a zero weight is a node");
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn a_100_000_deep_stack_needs_no_recursion() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        let names: Vec<String> = (0..100_000).map(|i| format!("f{}", i % 7)).collect();
        b.add_stack(&names, &[1]).unwrap();
        let p = b.finish();
        let tree = CallTree::build(&p.view()).unwrap();
        assert_eq!(tree.len(), 100_000);
        assert_eq!(tree.total_values[0][0], 1);
        assert_eq!(tree.depth[99_999], 99_999);
        assert_eq!(tree.path(99_999).len(), 100_000);
        // The text walk is iterative too. Its output is quadratic in depth (indentation), so a
        // shallower chain checks it: 5 000 levels would overflow a recursive walk in debug builds.
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&names[..5_000], &[1]).unwrap();
        let p = b.finish();
        let tree = CallTree::build(&p.view()).unwrap();
        let mut lines = 0usize;
        crate::text::write_tree(&p.view(), &tree, &Default::default(), |line: &str| {
            lines += 1;
            assert!(line.ends_with('\n'));
            Ok::<(), IrError>(())
        })
        .unwrap();
        assert_eq!(lines, 5_000);
    }
}
