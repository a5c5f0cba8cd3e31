//! Putting a profile back together from pieces: a parser that splits its input and builds one
//! partial profile per piece (on several threads) absorbs them into one builder, in input order.

use super::{PathStart, ProfileBuilder};
use crate::profile::{IrError, NONE, Profile};

impl ProfileBuilder {
    /// Adds `part`, the aggregated profile of a later piece of the same input, to this builder.
    ///
    /// Funcs, frames and stacks new to this builder are appended in `part`'s id order and its
    /// sample rows summed in row order. Both were in first-seen order within the piece, so
    /// absorbing the pieces of an input in input order gives exactly the ids and rows that one
    /// builder reading the input whole gives: the output does not depend on how the input was
    /// split. `part` must have this builder's value columns (decimals may differ: the larger
    /// scale wins), aggregated samples (no time column) and no threads. Sums are checked.
    pub fn absorb_aggregated(&mut self, part: &Profile) -> Result<(), IrError> {
        let n_cols = self.profile.value_types.len();
        if part.value_types.len() != n_cols {
            return Err(IrError::Invalid(format!(
                "absorbing a profile with {} value columns into one with {n_cols}",
                part.value_types.len()
            )));
        }
        if part.samples.time.is_some() || part.samples.thread.is_some() {
            return Err(IrError::Invalid(
                "only aggregated samples without threads can be absorbed".into(),
            ));
        }
        let mut scale = vec![1i64; n_cols];
        for (c, vt) in part.value_types.iter().enumerate() {
            self.rescale(c, vt.decimals)?;
            let diff = self.profile.value_types[c].decimals - vt.decimals;
            scale[c] = 10i64
                .checked_pow(diff)
                .ok_or_else(|| IrError::Overflow(format!("{diff} decimals")))?;
        }

        let strings = &part.strings;
        let opt_str = |id: u32| (id != NONE).then(|| strings.get(id));
        let opt_u32 = |v: u32| (v != NONE).then_some(v);
        let f = &part.funcs;
        let func_map: Vec<u32> = (0..f.name.len())
            .map(|i| {
                self.func_with(
                    strings.get(f.name[i]),
                    opt_str(f.file[i]),
                    opt_u32(f.line[i]),
                    opt_str(f.resource[i]),
                )
            })
            .collect();
        let fr = &part.frames;
        let frame_map: Vec<u32> = (0..fr.func.len())
            .map(|i| {
                let address =
                    (fr.address[i] != crate::profile::NO_ADDRESS).then_some(fr.address[i]);
                self.frame_at(func_map[fr.func[i] as usize], address, opt_u32(fr.line[i]))
            })
            .collect();
        let stack_map = self.absorb_stacks(part, &frame_map);
        let mut row = vec![0i64; n_cols];
        for (r, &stack) in part.samples.stack.iter().enumerate() {
            for c in 0..n_cols {
                let v = part.samples.values[c][r];
                row[c] = v
                    .checked_mul(scale[c])
                    .ok_or_else(|| IrError::Overflow(format!("rescaling {v}")))?;
            }
            let s = match stack {
                NONE => NONE,
                s => stack_map[s as usize],
            };
            self.add_to_stack(s, &row)?;
        }
        Ok(())
    }
}

impl ProfileBuilder {
    /// This builder's stack for each of `part`'s stacks, made where new, in `part`'s order.
    ///
    /// `part`'s stacks come in chains (a stack, its child, its grandchild …: the new frames of a
    /// line), and the chains are looked up together ([`ProfileBuilder::find_paths`]). Then the
    /// stacks not found are made in `part`'s order, which gives the ids of making every stack
    /// in that order (no two of `part`'s stacks are one stack here, so whether a stack is new
    /// does not depend on the others).
    fn absorb_stacks(&mut self, part: &Profile, frame_map: &[u32]) -> Vec<u32> {
        let st = &part.stacks;
        let n = st.prefix.len();
        // Each chain starts where a stack is not the child of the one before; its prefix is
        // an earlier stack of `part` (found by an earlier chain, which a chain of the same
        // turns waits for) or a root's none.
        let mut chains = Vec::new();
        let mut head = 0;
        for i in 1..=n {
            if i == n || st.prefix[i] as usize != i - 1 {
                let start = match st.prefix[head] {
                    NONE => PathStart::Stack(NONE),
                    p => PathStart::At(p as usize),
                };
                chains.push((start, head..i));
                head = i;
            }
        }
        let mut map = vec![NONE; n];
        self.find_paths(&chains, |i| frame_map[st.frame[i] as usize], &mut map);
        for i in 0..n {
            if map[i] == NONE {
                // `prefix[i] < i`: the prefix is mapped already.
                let prefix = match st.prefix[i] {
                    NONE => NONE,
                    p => map[p as usize],
                };
                map[i] = self.stack(prefix, frame_map[st.frame[i] as usize]);
            }
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ValueKind;

    fn builder() -> ProfileBuilder {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b
    }

    /// The lines of one input, added to one builder, or split after every `k`-th line into
    /// pieces built separately and absorbed in order.
    fn build(lines: &[(&[&str], i64)], piece: usize) -> Profile {
        let mut whole = builder();
        for chunk in lines.chunks(piece) {
            let mut part = builder();
            for (names, v) in chunk {
                part.add_stack(names, &[*v]).unwrap();
            }
            whole.absorb_aggregated(&part.finish()).unwrap();
        }
        whole.finish()
    }

    #[test]
    fn absorbing_pieces_in_order_gives_the_ids_of_one_pass() {
        let lines: &[(&[&str], i64)] = &[
            (&["main", "a", "b"], 3),
            (&["main", "c"], 1),
            (&["main", "a", "b"], 2),
            (&["other", "b"], 5),
            (&["main", "a"], 1),
            (&["main", "c", "a", "b"], 4),
            (&["other"], 7),
        ];
        let one = build(lines, lines.len());
        for piece in 1..lines.len() {
            let split = build(lines, piece);
            assert_eq!(
                split.strings.offsets(),
                one.strings.offsets(),
                "piece {piece}"
            );
            assert_eq!(split.strings.blob(), one.strings.blob());
            assert_eq!(split.funcs.name, one.funcs.name);
            assert_eq!(split.frames.func, one.frames.func);
            assert_eq!(split.stacks.prefix, one.stacks.prefix);
            assert_eq!(split.stacks.frame, one.stacks.frame);
            assert_eq!(split.samples.stack, one.samples.stack);
            assert_eq!(split.samples.values, one.samples.values);
        }
        assert_eq!(one.samples.values[0].iter().sum::<i64>(), 23);
    }

    #[test]
    fn many_chains_in_any_split_give_the_ids_of_one_pass() {
        // More chains than are looked up together, sharing prefixes across and within pieces,
        // chains whose first stack hangs under a stack new in the same piece.
        let mut rng = crate::testing::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n);
        let names = ["a", "b", "c", "d", "e"];
        let stacks: Vec<(Vec<&str>, i64)> = (0..150)
            .map(|_| {
                let depth = 1 + next(7) as usize;
                let s = (0..depth).map(|_| names[next(5) as usize]).collect();
                (s, next(9) as i64)
            })
            .collect();
        let lines: Vec<(&[&str], i64)> = stacks.iter().map(|(s, v)| (&s[..], *v)).collect();
        let one = build(&lines, lines.len());
        assert!(
            one.stacks.prefix.len() > 200,
            "enough stacks for chains in several groups"
        );
        for piece in [1, 2, 3, 5, 8, 13, 40, 100] {
            let split = build(&lines, piece);
            assert_eq!(split.stacks.prefix, one.stacks.prefix, "piece {piece}");
            assert_eq!(split.stacks.frame, one.stacks.frame, "piece {piece}");
            assert_eq!(split.samples.stack, one.samples.stack, "piece {piece}");
            assert_eq!(split.samples.values, one.samples.values, "piece {piece}");
        }
    }

    #[test]
    fn finer_decimals_of_a_piece_rescale_the_whole() {
        let mut whole = builder();
        whole.add_stack(&["a"], &[2]).unwrap();
        let mut part = builder();
        part.rescale(0, 2).unwrap();
        part.add_stack(&["a"], &[150]).unwrap(); // 1.50
        whole.absorb_aggregated(&part.finish()).unwrap();
        assert_eq!(whole.decimals(0), 2);
        assert_eq!(whole.profile().samples.values[0], vec![350]);
    }

    #[test]
    fn overflow_and_mismatched_columns_are_errors() {
        let mut whole = builder();
        whole.add_stack(&["a"], &[i64::MAX]).unwrap();
        let mut part = builder();
        part.add_stack(&["a"], &[1]).unwrap();
        assert!(matches!(
            whole.absorb_aggregated(&part.finish()),
            Err(IrError::Overflow(_))
        ));
        let mut two = builder();
        two.add_value_type("bytes", "bytes", ValueKind::Weight);
        assert!(whole.absorb_aggregated(&two.finish()).is_err());
    }
}
