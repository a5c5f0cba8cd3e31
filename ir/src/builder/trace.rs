//! [`TraceBuilder`]: seed 000's enter/exit algorithm on top of a [`ProfileBuilder`].

use super::ProfileBuilder;
use crate::profile::{IrError, NONE};

/// Builds samples from enter/exit events with monotonic clocks (seed 000's algorithm).
///
/// Each interval between two consecutive events is charged to the call open during it, as one
/// sample on that call's stack. With `ordered`, samples are appended in time order (a flame chart
/// can be drawn from them; a sample with `calls = 1` starts a new call of its leaf, so two
/// back-to-back calls of one function stay apart); otherwise they are summed per stack, so memory
/// depends on distinct stacks only. Zero-length intervals are recorded only when they start a
/// call, so every call, however short, has its node.
pub struct TraceBuilder {
    /// Value columns that are clocks (ticks, nanoseconds): charged by interval length.
    clocks: Vec<usize>,
    /// The exact-calls column, if any.
    calls: Option<usize>,
    ordered: bool,
    /// Open calls: (stack, frame, call not yet counted).
    open: Vec<(u32, u32, bool)>,
    last: Vec<i64>,
    row: Vec<i64>,
}

impl TraceBuilder {
    /// A trace builder charging `clocks` columns and counting calls in `calls`.
    pub fn new(
        b: &ProfileBuilder,
        clocks: Vec<usize>,
        calls: Option<usize>,
        ordered: bool,
    ) -> Self {
        let n = b.n_value_types();
        TraceBuilder {
            last: vec![0; clocks.len()],
            clocks,
            calls,
            ordered,
            open: Vec::new(),
            row: vec![0; n],
        }
    }

    /// Depth of the open call stack.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// Charges the interval up to `now` to the innermost open call.
    #[inline]
    fn charge(&mut self, b: &mut ProfileBuilder, now: &[i64]) -> Result<(), IrError> {
        let Some(top) = self.open.last_mut() else {
            self.last.copy_from_slice(now);
            return Ok(());
        };
        // `row` holds zeros except in the clock and calls columns, which are written here every
        // time: no clearing needed.
        let mut any = top.2;
        for (k, &col) in self.clocks.iter().enumerate() {
            let d = now[k]
                .checked_sub(self.last[k])
                .filter(|d| *d >= 0)
                .ok_or_else(|| IrError::Invalid("clock went backwards".into()))?;
            self.row[col] = d;
            any |= d != 0;
        }
        if let Some(c) = self.calls {
            self.row[c] = top.2 as i64;
        }
        top.2 = false;
        let stack = top.0;
        let start = self.last.first().copied();
        self.last.copy_from_slice(now);
        if !any {
            return Ok(());
        }
        if self.ordered {
            b.push_sample(stack, start, &self.row);
            Ok(())
        } else {
            b.add_to_stack(stack, &self.row)
        }
    }

    /// A call of `frame` starts at `now` (one value per clock).
    #[inline]
    pub fn enter(
        &mut self,
        b: &mut ProfileBuilder,
        frame: u32,
        now: &[i64],
    ) -> Result<(), IrError> {
        self.charge(b, now)?;
        let prefix = self.open.last().map_or(NONE, |o| o.0);
        let stack = b.stack(prefix, frame);
        self.open.push((stack, frame, true));
        Ok(())
    }

    /// The innermost call ends at `now`; returns its frame, or `None` if nothing was open.
    #[inline]
    pub fn exit(&mut self, b: &mut ProfileBuilder, now: &[i64]) -> Result<Option<u32>, IrError> {
        if self.open.is_empty() {
            return Ok(None);
        }
        self.charge(b, now)?;
        Ok(self.open.pop().map(|o| o.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calltree::CallTree;
    use crate::profile::{Profile, ValueKind};

    /// Seed 000's worked example: f 0..160, g 10..100, h 30..60.
    fn seed_000(ordered: bool) -> Profile {
        let mut b = ProfileBuilder::new();
        let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let calls = b.add_value_type("calls", "count", ValueKind::Count);
        let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), ordered);
        let (f, g, h) = {
            let mut fr = |n: &str| {
                let func = b.func(n);
                b.frame(func)
            };
            (fr("f"), fr("g"), fr("h"))
        };
        t.enter(&mut b, f, &[0]).unwrap();
        t.enter(&mut b, g, &[10]).unwrap();
        t.enter(&mut b, h, &[30]).unwrap();
        assert_eq!(t.exit(&mut b, &[60]).unwrap(), Some(h));
        assert_eq!(t.exit(&mut b, &[100]).unwrap(), Some(g));
        assert_eq!(t.exit(&mut b, &[160]).unwrap(), Some(f));
        assert_eq!(t.exit(&mut b, &[170]).unwrap(), None);
        if ordered {
            b.set_flags(crate::flags::ORDERED);
        }
        b.finish()
    }

    #[test]
    fn seed_000_worked_example_f70_g60_h30() {
        for ordered in [false, true] {
            let p = seed_000(ordered);
            let tree = CallTree::build(&p.view()).unwrap();
            let by_name = |n: &str| {
                (0..tree.len() as u32)
                    .find(|&i| p.view().func_name_str(tree.func[i as usize]) == n)
                    .unwrap() as usize
            };
            let (f, g, h) = (by_name("f"), by_name("g"), by_name("h"));
            assert_eq!(tree.self_values[0][f], 70);
            assert_eq!(tree.self_values[0][g], 60);
            assert_eq!(tree.self_values[0][h], 30);
            assert_eq!(tree.total_values[0][f], 160);
            assert_eq!(tree.total_values[0][g], 90);
            assert_eq!(tree.self_values[1][f], 1);
            assert_eq!(tree.self_values[1][h], 1);
            assert_eq!(
                tree.total_values[1][f], 1,
                "calls are never summed into parents"
            );
        }
        let ordered = seed_000(true);
        // f [0,10) g [10,30) h [30,60) g [60,100) f [100,160): five intervals in time order.
        assert_eq!(ordered.samples.values[0], vec![10, 20, 30, 40, 60]);
        assert_eq!(
            ordered.samples.time.as_deref(),
            Some(&[0, 10, 30, 60, 100][..])
        );
        assert_eq!(ordered.samples.values[1], vec![1, 1, 1, 0, 0]);
    }

    #[test]
    fn zero_length_calls_keep_their_node_and_backwards_clocks_fail() {
        let mut b = ProfileBuilder::new();
        let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let calls = b.add_value_type("calls", "count", ValueKind::Count);
        let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), false);
        let f = b.func("f");
        let f = b.frame(f);
        t.enter(&mut b, f, &[5]).unwrap();
        t.exit(&mut b, &[5]).unwrap();
        assert_eq!(b.profile().samples.values[1], vec![1]);
        t.enter(&mut b, f, &[10]).unwrap();
        assert!(t.exit(&mut b, &[9]).is_err());
    }
}
