//! Putting a profile back together from pieces: a parser that splits its input and builds one
//! partial profile per piece (on several threads) absorbs them into one builder, in input order.

use super::{PathStart, ProfileBuilder};
use crate::profile::{FrameTable, FuncTable, IrError, NONE, Profile, SampleTable};
use crate::strings::StringTable;

/// This builder's func and frame for the funcs and frames of the pieces of one other builder,
/// which keeps its funcs and frames from piece to piece ([`ProfileBuilder::take_piece`]), as
/// far as the pieces absorbed so far used them ([`ProfileBuilder::absorb_piece`]). A func's id
/// here never changes, so what was mapped stays right whatever comes after.
///
/// It also keeps a copy of the other builder's strings, funcs and frames, each piece bringing
/// only those that are new since the one before: with millions of distinct names, a copy of
/// every table in every piece made reading on several threads quadratic.
#[derive(Debug)]
pub struct PieceMaps {
    funcs: Vec<u32>,
    frames: Vec<u32>,
    blob: String,
    offsets: Vec<u64>,
    their_funcs: FuncTable,
    their_frames: FrameTable,
}

impl Default for PieceMaps {
    fn default() -> Self {
        PieceMaps {
            funcs: Vec::new(),
            frames: Vec::new(),
            blob: String::new(),
            offsets: vec![0],
            their_funcs: FuncTable::default(),
            their_frames: FrameTable::default(),
        }
    }
}

impl PieceMaps {
    /// Takes in the strings, funcs and frames `part` brings (those its builder made since its
    /// previous piece). [`ProfileBuilder::absorb_piece`] does this; a caller that does not
    /// absorb a piece of the sequence must still call it, so that later pieces' ids are known.
    pub fn take_tables(&mut self, part: &Profile) {
        let base = *self.offsets.last().unwrap_or(&0);
        self.blob.push_str(part.strings.blob());
        self.offsets
            .extend(part.strings.offsets().iter().skip(1).map(|&o| base + o));
        self.their_funcs.append(&part.funcs);
        self.their_frames.append(&part.frames);
    }

    fn string(&self, id: u32) -> &str {
        let i = id as usize;
        &self.blob[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

impl ProfileBuilder {
    /// Adds `part`, the aggregated profile of a later piece of the same input, to this builder.
    ///
    /// Stacks new to this builder are appended in `part`'s id order, funcs and frames new to it
    /// in the order `part`'s stacks first use them, and its sample rows summed in row order.
    /// All were in first-seen order within the piece (a frame a piece has not seen makes a new
    /// stack there), so absorbing the pieces of an input in input order gives exactly the ids
    /// and rows that one builder reading the input whole gives: the output does not depend on
    /// how the input was split. Funcs and frames that no stack uses are not taken. `part` must
    /// have this builder's value columns (decimals may differ: the larger scale wins),
    /// aggregated samples (no time column) and no threads, and be valid
    /// ([`crate::ProfileRef::validate`]); a sample row on a stack `part` does not have is an
    /// error. Sums are checked.
    pub fn absorb_aggregated(&mut self, part: &Profile) -> Result<(), IrError> {
        self.absorb_piece(part, &mut PieceMaps::default())
    }

    /// [`Self::absorb_aggregated`] for a piece from [`Self::take_piece`] of a builder whose
    /// earlier pieces went through `maps`: only the funcs and frames not mapped yet are looked
    /// up here, where this piece's stacks first use them (the same ids as absorbing the piece
    /// on its own).
    pub fn absorb_piece(&mut self, part: &Profile, maps: &mut PieceMaps) -> Result<(), IrError> {
        // First, whatever else fails: later pieces' ids build on these tables.
        maps.take_tables(part);
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
        self.map_piece_tables(part, maps);
        let stack_map = self.absorb_stacks(part, &maps.frames);
        let mut row = vec![0i64; n_cols];
        for (r, &stack) in part.samples.stack.iter().enumerate() {
            for c in 0..n_cols {
                let v = part.samples.values[c][r];
                row[c] = v
                    .checked_mul(scale[c])
                    .ok_or_else(|| IrError::Overflow(format!("rescaling {v}")))?;
            }
            let Some(&s) = stack_map.get(stack as usize) else {
                return Err(IrError::Invalid(format!(
                    "absorbing sample {r}: stack {stack} is not one of the piece's {} stacks",
                    stack_map.len()
                )));
            };
            self.add_to_stack(s, &row)?;
        }
        Ok(())
    }

    /// Maps, in `maps`, the funcs and frames of `part`'s stacks not mapped yet, in the order
    /// the stacks first use them (made here where new).
    fn map_piece_tables(&mut self, part: &Profile, maps: &mut PieceMaps) {
        maps.funcs.resize(maps.their_funcs.name.len(), NONE);
        maps.frames.resize(maps.their_frames.func.len(), NONE);
        let opt_u32 = |v: u32| (v != NONE).then_some(v);
        for &frame in &part.stacks.frame {
            let i = frame as usize;
            if maps.frames[i] != NONE {
                continue;
            }
            let (f, fr) = (&maps.their_funcs, &maps.their_frames);
            let func = fr.func[i] as usize;
            if maps.funcs[func] == NONE {
                let opt_str = |id: u32| (id != NONE).then(|| maps.string(id));
                maps.funcs[func] = self.func_with(
                    maps.string(f.name[func]),
                    opt_str(f.file[func]),
                    opt_u32(f.line[func]),
                    opt_str(f.resource[func]),
                );
            }
            let address = (fr.address[i] != crate::profile::NO_ADDRESS).then_some(fr.address[i]);
            let line = opt_u32(fr.line[i]);
            maps.frames[i] = self.frame_at(maps.funcs[func], address, line);
        }
    }

    /// The stacks and samples built so far, as a profile with this builder's value columns and
    /// the strings, funcs and frames it made since its previous piece, for
    /// [`Self::absorb_piece`]; this builder keeps its tables and starts again with no stack or
    /// sample. A parser that reads its input in pieces keeps one builder per thread this way,
    /// so that each piece does not intern every name again. The ids in the piece are this
    /// builder's, so a piece is not a valid profile on its own: only the [`PieceMaps`] that took
    /// in every earlier piece of this builder, in order, can read it.
    pub fn take_piece(&mut self) -> Profile {
        let p = &mut self.profile;
        let n_cols = p.samples.values.len();
        // Only what is new since the last piece; the ids in it stay this builder's.
        let [s0, f0, r0] = self.piece_base;
        let offsets = p.strings.offsets();
        let from = offsets[s0];
        let new_offsets: Vec<u64> = offsets[s0..].iter().map(|&o| o - from).collect();
        let strings = StringTable::from_parts(&p.strings.blob()[from as usize..], &new_offsets);
        let (f, fr) = (&p.funcs, &p.frames);
        let (funcs, frames) = (f.rows_from(f0), fr.rows_from(r0));
        self.piece_base = [p.strings.len(), f.name.len(), fr.func.len()];
        let part = Profile {
            flags: p.flags,
            strings,
            funcs,
            frames,
            stacks: std::mem::take(&mut p.stacks),
            value_types: p.value_types.clone(),
            samples: std::mem::replace(
                &mut p.samples,
                SampleTable {
                    values: vec![Vec::new(); n_cols],
                    ..SampleTable::default()
                },
            ),
            meta: p.meta.clone(),
            threads: p.threads.clone(),
        };
        self.trie = Default::default();
        self.sample_of_stack = Vec::new();
        self.sample_of_thread_stack.clear();
        part
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

    /// [`build`] with the pieces read by `workers` builders in turn, each keeping its funcs and
    /// frames from piece to piece ([`ProfileBuilder::take_piece`]), and absorbed in order
    /// through one [`PieceMaps`] per worker.
    fn build_kept(lines: &[(&[&str], i64)], piece: usize, workers: usize) -> Profile {
        let mut whole = builder();
        let mut parts: Vec<ProfileBuilder> = (0..workers).map(|_| builder()).collect();
        let mut maps: Vec<PieceMaps> = (0..workers).map(|_| PieceMaps::default()).collect();
        for (k, chunk) in lines.chunks(piece).enumerate() {
            let w = k % workers;
            for (names, v) in chunk {
                parts[w].add_stack(names, &[*v]).unwrap();
            }
            let part = parts[w].take_piece();
            assert!(part.stacks.prefix.len() <= chunk.iter().map(|(n, _)| n.len()).sum());
            whole.absorb_piece(&part, &mut maps[w]).unwrap();
        }
        whole.finish()
    }

    /// A func the piece's builder made for a line it then dropped is not taken (one builder
    /// reading the input whole would not have it), neither in that piece nor in a later piece
    /// of the same builder, which starts with no stacks of its own.
    #[test]
    fn funcs_no_stack_uses_are_not_taken_and_kept_pieces_start_empty() {
        let mut worker = builder();
        worker.func("dropped");
        worker.add_stack(&["main", "a"], &[1]).unwrap();
        let mut whole = builder();
        let mut maps = PieceMaps::default();
        let first = worker.take_piece();
        assert_eq!(first.stacks.prefix.len(), 2);
        whole.absorb_piece(&first, &mut maps).unwrap();
        worker.add_stack(&["main", "b"], &[2]).unwrap();
        let second = worker.take_piece();
        // Its own stacks only (`main` again, then `b`), and only the func new since the first
        // piece (`b`: ids stay the worker's).
        assert_eq!(second.stacks.prefix, vec![NONE, 0]);
        assert_eq!(first.funcs.name.len(), 3);
        assert_eq!(second.funcs.name.len(), 1);
        assert_eq!(second.strings.len(), 1);
        assert_eq!(second.funcs.name, [first.strings.len() as u32]);
        whole.absorb_piece(&second, &mut maps).unwrap();
        let p = whole.finish();
        let names: Vec<&str> = p.funcs.name.iter().map(|&n| p.strings.get(n)).collect();
        assert_eq!(names, ["main", "a", "b"]);
        assert_eq!(p.stacks.prefix, vec![NONE, 0, 0]);
        assert_eq!(p.samples.values[0], vec![1, 2]);
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
        let splits = (1..lines.len()).flat_map(|piece| {
            [
                build(lines, piece),
                build_kept(lines, piece, 1),
                build_kept(lines, piece, 2),
                build_kept(lines, piece, 3),
            ]
            .map(move |p| (piece, p))
        });
        for (piece, split) in splits {
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
        let splits = [1, 2, 3, 5, 8, 13, 40, 100].into_iter().flat_map(|piece| {
            [
                build(&lines, piece),
                build_kept(&lines, piece, 1),
                build_kept(&lines, piece, 2),
            ]
            .map(move |p| (piece, p))
        });
        for (piece, split) in splits {
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

    /// A sample row whose stack is not in the piece (NONE, or past its stacks) is an error, not
    /// a panic nor a sample index sized by the stack id (NONE: 16 GiB).
    #[test]
    fn a_sample_without_a_stack_of_the_piece_is_an_error() {
        for stack in [NONE, 1] {
            let mut part = builder();
            part.add_stack(&["a"], &[1]).unwrap();
            let mut part = part.finish();
            part.samples.stack[0] = stack;
            let e = builder().absorb_aggregated(&part).unwrap_err();
            assert_eq!(
                e,
                IrError::Invalid(format!(
                    "absorbing sample 0: stack {stack} is not one of the piece's 1 stacks"
                ))
            );
        }
    }
}
