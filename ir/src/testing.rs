//! Small helpers for plugins' tests: a profile from stacks of names, a trace written as a
//! script of events, a call tree as text, and a seeded random number generator. They panic on a
//! malformed script: they are for tests, not input. Seed 001's three stacks are [`seed_001`].

use crate::builder::{ProfileBuilder, TraceBuilder};
use crate::calltree::CallTree;
use crate::profile::{Profile, ProfileRef, ValueKind, flags};
use crate::text::{TreeOrder, TreeTextOptions, render_tree};

/// Checks that transform `spec` keeps `p` ([`apply_or_keep`](crate::transform::apply_or_keep)
/// builds nothing) and that a rebuild ([`apply`](crate::transform::apply)) gives `p` again, column
/// for column, finding the same: the no-op shortcut is exact.
///
/// # Panics
/// When `spec` is no transform, builds a profile, or its rebuild differs from `p`.
pub fn assert_kept_as_rebuilt(p: &Profile, spec: &str) {
    let t: crate::Transform = spec.parse().expect("a transform");
    let (kept, applied) = crate::transform::apply_or_keep(&p.view(), &t).expect("applied");
    assert!(kept.is_none(), "{spec} built a profile");
    let (rebuilt, rebuilt_applied) = crate::transform::apply(&p.view(), &t).expect("applied");
    assert_eq!(format!("{rebuilt:?}"), format!("{p:?}"), "{spec}");
    assert_eq!(applied, rebuilt_applied, "{spec}");
}

/// The call tree of `p` as text, siblings in first-seen order, with the first value column
/// (`self=` and `total=`) or, with `all_values`, every column: what readers' tests compare.
///
/// ```
/// let p = profconv_ir::testing::stacks(&[(&["main", "a"], 3), (&["main"], 1)]);
/// let tree = profconv_ir::testing::first_seen_tree(&p.view(), false);
/// assert_eq!(tree, "main self=1 total=4\n  a self=3 total=3\n");
/// ```
///
/// # Panics
/// When the call tree cannot be built (a sum overflows).
pub fn first_seen_tree(p: &ProfileRef<'_>, all_values: bool) -> String {
    let t = CallTree::build(p).expect("a call tree");
    let opts = TreeTextOptions {
        order: TreeOrder::FirstSeen,
        all_values,
        ..Default::default()
    };
    render_tree(p, &t, &opts).expect("the tree text")
}

/// A sampled profile with one `samples` column: each stack of names (root first) with its
/// count, as a folded file's lines would give.
///
/// ```
/// let p = profconv_ir::testing::stacks(&[(&["main", "a"], 3), (&["main"], 1)]);
/// assert_eq!(p.samples.values[0], [3, 1]);
/// ```
///
/// # Panics
/// When the builder refuses a row (a sum overflows).
pub fn stacks(rows: &[(&[&str], i64)]) -> Profile {
    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    for (names, count) in rows {
        b.add_stack(names, &[*count]).expect("a sample row");
    }
    b.finish()
}

/// Seed 001's example: one sample each on `A;B;C;D;E`, `A;B;C;F;G` and `A;B;H;F`.
pub fn seed_001() -> Profile {
    stacks(&[
        (&["A", "B", "C", "D", "E"], 1),
        (&["A", "B", "C", "F", "G"], 1),
        (&["A", "B", "H", "F"], 1),
    ])
}

/// A time-ordered profile with exact calls (the shape a PVM trace gives: `ticks` and `calls`
/// columns) from events separated by single spaces: `C NAME TICK` enters `NAME` at `TICK`,
/// `E TICK` leaves the innermost open call, `R NAME` starts a new thread (a kernel run).
///
/// ```
/// let p = profconv_ir::testing::trace(&["C f 0", "C g 10", "E 60", "E 100"]);
/// // f's own ticks until g is called, g's, then f's after g returns:
/// assert_eq!(p.samples.values[0], [10, 50, 40]);
/// ```
///
/// An `E` with nothing open is ignored, as [`TraceBuilder::exit`] does.
///
/// # Panics
/// On an event that is none of these, a tick that is not a number, or one the trace builder
/// refuses (a tick going backwards).
pub fn trace(events: &[&str]) -> Profile {
    let mut b = ProfileBuilder::new();
    let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
    let calls = b.add_value_type("calls", "count", ValueKind::Count);
    b.set_flags(flags::ORDERED);
    let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
    let tick = |s: &str| -> i64 { s.parse().unwrap_or_else(|_| panic!("bad tick {s:?}")) };
    for e in events {
        let parts: Vec<&str> = e.split(' ').collect();
        match parts[..] {
            ["C", name, at] => {
                let f = b.func(name);
                let fr = b.frame(f);
                t.enter(&mut b, fr, &[tick(at)])
                    .unwrap_or_else(|err| panic!("{e}: {err}"));
            }
            ["E", at] => {
                t.exit(&mut b, &[tick(at)])
                    .unwrap_or_else(|err| panic!("{e}: {err}"));
            }
            ["R", name] => {
                b.add_thread(name);
            }
            _ => panic!("bad event {e:?} (expected `C NAME TICK`, `E TICK` or `R NAME`)"),
        }
    }
    b.finish()
}

/// `n` frames of funcs named `f0`, `f1` … in `b`, in that order (for tests that build stacks
/// of frames by index).
pub fn numbered_frames(b: &mut ProfileBuilder, n: usize) -> Vec<u32> {
    (0..n)
        .map(|i| {
            let f = b.func(&format!("f{i}"));
            b.frame(f)
        })
        .collect()
}

/// xorshift64: deterministic pseudo-random numbers for tests that need many varied cases.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (0 is replaced: xorshift never leaves 0).
    pub fn new(seed: u64) -> Self {
        XorShift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// The next number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_gives_self_ticks_calls_and_threads() {
        let p = trace(&[
            "R one", "C f 0", "C g 10", "E 60", "E 100", "R two", "C h 100", "E 130",
        ]);
        let v = p.view();
        let names: Vec<&str> = (0..p.samples.stack.len())
            .map(|i| v.func_name_str(v.stack_func(p.samples.stack[i])))
            .collect();
        assert_eq!(names, ["f", "g", "f", "h"]);
        assert_eq!(p.samples.values[0], [10, 50, 40, 30]);
        assert_eq!(p.samples.values[1], [1, 1, 0, 1]);
        assert_eq!(v.n_threads(), 2);
    }

    #[test]
    #[should_panic(expected = "bad event")]
    fn a_malformed_event_panics() {
        trace(&["X 1"]);
    }

    #[test]
    fn xorshift_is_deterministic_and_never_stuck_at_zero() {
        let (mut a, mut b) = (XorShift::new(7), XorShift::new(7));
        let first: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        assert_eq!(first, (0..5).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut z = XorShift::new(0);
        assert!((0..100).all(|_| z.next_u64() != 0));
        assert!((0..100).all(|_| z.below(3) < 3));
    }
}
