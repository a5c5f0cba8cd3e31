//! Differential tests of the transforms against a deliberately naive model: a profile is a list
//! of samples (a stack of frames, values, thread, time), each transform is written the most
//! obvious way on that list, as docs/transforms.md describes it, and the call tree is the merge
//! of the samples' stacks by function. Random small profiles (few names, so recursion and
//! repeated names are common; funcs of one name in two files; frames of one func on two lines;
//! several value columns, a `calls` count; ordered with threads or aggregated; built in bulk,
//! with stacks twice and stacks without samples) go through one to three transforms on both
//! sides, each transform's path taken from the tree it will see. Checked after every step: the
//! same samples in order (ordered profiles), the same call tree with the same self values in
//! every column (each thread apart), no stack without samples, and `apply_or_keep` keeping
//! the profile only when `apply` rebuilds it unchanged.

use profconv_ir::transform::{apply, apply_or_keep};
use profconv_ir::{Fraction, NONE, Profile, ProfileBuilder, Transform, ValueKind, flags};
use proptest::prelude::*;
use std::collections::BTreeMap;

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Fr {
    name: u8,
    file: u8,
    line: u8,
}

#[derive(Clone, Debug)]
struct Smp {
    stack: Vec<Fr>,
    values: Vec<i64>,
    thread: u32,
    time: i64,
}

#[derive(Clone, Debug)]
struct Input {
    samples: Vec<Smp>,
    /// Kind of each column (true: Count).
    counts: Vec<bool>,
    ordered: bool,
    threads: bool,
    diff: bool,
    /// Built with bulk appends: some stacks twice (one path, two stacks), stacks without
    /// samples, several rows on one stack, no times.
    bulk: bool,
    /// Seeds of the bulk layout.
    dup: Vec<u8>,
}

fn frame() -> impl Strategy<Value = Fr> {
    // Mostly plain frames; sometimes another file (another func of the same name) or line.
    (
        0u8..6,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(n, f, l)| Fr {
            name: n,
            file: f as u8,
            line: l as u8,
        })
}

fn input() -> impl Strategy<Value = Input> {
    (
        2usize..=6,
        0usize..4, // layout of columns
        prop::bool::ANY,
        prop::bool::ANY,
        prop::bool::ANY,
    )
        .prop_flat_map(|(n_names, layout, ordered, threads, bulk)| {
            let counts: Vec<bool> = match layout {
                0 => vec![false],
                1 => vec![false, true],
                2 => vec![true, false, false],
                _ => vec![false, false],
            };
            let diff = layout == 3;
            let ncols = counts.len();
            let sample = (
                prop::collection::vec(frame(), 1..=8),
                prop::collection::vec(prop_oneof![Just(0i64), 0i64..20], ncols),
                0u32..2,
                0i64..5,
            )
                .prop_map(move |(mut stack, values, thread, time)| {
                    for f in &mut stack {
                        f.name %= n_names as u8;
                    }
                    Smp {
                        stack,
                        values,
                        thread,
                        time,
                    }
                });
            (
                prop::collection::vec(sample, 0..12),
                Just(counts),
                Just(ordered),
                Just(threads),
                Just(diff),
                Just(bulk),
                prop::collection::vec(0u8..8, 12),
            )
        })
        .prop_map(|(mut samples, counts, ordered, threads, diff, bulk, dup)| {
            // Bulk rows take the builder's current thread: no threads there.
            let threads = threads && !bulk;
            let mut t = 0;
            for s in &mut samples {
                t += s.time;
                s.time = t;
                if !threads {
                    s.thread = 0;
                }
            }
            Input {
                samples,
                counts,
                ordered,
                threads,
                diff,
                bulk,
                dup,
            }
        })
}

fn build(inp: &Input) -> Profile {
    let mut b = ProfileBuilder::new();
    for (i, &c) in inp.counts.iter().enumerate() {
        let name = match (inp.diff, c, i) {
            (true, _, 0) => "before".to_string(),
            (true, _, _) => "after".to_string(),
            (false, true, _) => "calls".to_string(),
            (false, false, i) => format!("w{i}"),
        };
        let kind = if c {
            ValueKind::Count
        } else {
            ValueKind::Weight
        };
        b.add_value_type(&name, "count", kind);
    }
    if inp.diff {
        b.add_meta("diff", "before,after");
    }
    if inp.threads {
        b.add_thread("t0");
        b.add_thread("t1");
    }
    if inp.ordered {
        b.set_flags(flags::ORDERED);
    }
    if inp.bulk {
        return build_bulk(inp, b);
    }
    for s in &inp.samples {
        let mut stack = NONE;
        for f in &s.stack {
            let file = (f.file == 1).then_some("other.c");
            let func = b.func_with(NAMES[f.name as usize], file, None, None);
            let fr = b.frame_at(func, None, (f.line == 1).then_some(7));
            stack = b.stack(stack, fr);
        }
        if inp.threads {
            b.set_thread(s.thread);
        }
        if inp.ordered {
            b.push_sample(stack, Some(s.time), &s.values);
        } else {
            b.add_to_stack(stack, &s.values).unwrap();
        }
    }
    b.finish()
}

fn build_bulk(inp: &Input, b: ProfileBuilder) -> Profile {
    let mut b = b.into_bulk();
    let mut known: std::collections::HashMap<(u32, u32), u32> = Default::default();
    for (i, s) in inp.samples.iter().enumerate() {
        let d = inp.dup[i % inp.dup.len()];
        let mut stack = NONE;
        for (j, f) in s.stack.iter().enumerate() {
            let file = (f.file == 1).then_some("other.c");
            let func = b.func_with(NAMES[f.name as usize], file, None, None);
            let fr = b.frame_at(func, None, (f.line == 1).then_some(7));
            // Mostly one stack per path; sometimes a second stack of the same path.
            stack = match known.get(&(stack, fr)) {
                Some(&st) if (d as usize + j) % 4 != 0 => st,
                _ => {
                    let st = b.push_stack(stack, fr).unwrap();
                    known.insert((stack, fr), st);
                    st
                }
            };
            if d == 7 && j == 0 {
                // A stack without samples.
                b.push_stack(stack, fr).unwrap();
            }
        }
        b.push_row(stack, &s.values).unwrap();
    }
    b.finish()
}

/// A func as (name, file): what the call tree merges by.
type Func = (String, String);

/// A sample read back: its frames, values, thread and time.
type Row = (Vec<Fr>, Vec<i64>, u32, Option<i64>);

/// The samples of a real profile, frames read back as (name, file, line).
fn read_back(p: &Profile) -> Vec<Row> {
    let v = p.view();
    let name_of = |s: &str| NAMES.iter().position(|n| *n == s).unwrap() as u8;
    (0..v.n_samples())
        .map(|i| {
            let mut st = Vec::new();
            let mut s = v.sample_stack[i];
            while s != NONE {
                let frame = v.stack_frame[s as usize] as usize;
                let func = v.frame_func[frame] as usize;
                let file = v.func_file[func];
                st.push(Fr {
                    name: name_of(v.func_name_str(func as u32)),
                    file: u8::from(file != NONE),
                    line: u8::from(v.frame_line[frame] != NONE),
                });
                s = v.stack_prefix[s as usize];
            }
            st.reverse();
            let values = v.sample_values.iter().map(|c| c[i]).collect();
            let thread = v.sample_thread.map_or(0, |t| t[i]);
            (st, values, thread, v.sample_time.map(|t| t[i]))
        })
        .collect()
}

fn funcs(st: &[Fr]) -> Vec<Func> {
    st.iter()
        .map(|f| (NAMES[f.name as usize].to_string(), f.file.to_string()))
        .collect()
}

/// The call tree's self values per (func path, thread), every node of a sampled stack present.
fn tree_of<'a>(
    rows: impl Iterator<Item = (&'a [Fr], &'a [i64], u32)>,
    ncols: usize,
) -> BTreeMap<(Vec<Func>, u32), Vec<i64>> {
    let mut t: BTreeMap<(Vec<Func>, u32), Vec<i64>> = BTreeMap::new();
    for (st, vals, th) in rows {
        let path = funcs(st);
        for d in 1..path.len() {
            t.entry((path[..d].to_vec(), th))
                .or_insert_with(|| vec![0; ncols]);
        }
        let e = t.entry((path, th)).or_insert_with(|| vec![0; ncols]);
        for (c, v) in vals.iter().enumerate() {
            e[c] += v;
        }
    }
    t
}

// ---------------------------------------------------------------- the model

fn names(st: &[Fr]) -> Vec<&'static str> {
    st.iter().map(|f| NAMES[f.name as usize]).collect()
}

fn starts_with(st: &[Fr], path: &[String]) -> bool {
    st.len() >= path.len()
        && names(&st[..path.len()])
            .iter()
            .zip(path)
            .all(|(a, b)| a == b)
}

/// One sample through one transform: its new stack (empty: removed) and whether its leaf was
/// merged (its Count values dropped). `None`: the sample is removed.
fn model_one(st: &[Fr], t: &Transform, small: &dyn Fn(&[Fr]) -> bool) -> Option<(Vec<Fr>, bool)> {
    let n = st.len();
    let nm = names(st);
    let tracked = |only: &Option<String>, x: &str| only.as_deref().is_none_or(|o| o == x);
    let out = match t {
        Transform::MergeCallNode(path) => {
            if starts_with(st, path) {
                let mut s = st.to_vec();
                s.remove(path.len() - 1);
                (s, n == path.len())
            } else {
                (st.to_vec(), false)
            }
        }
        Transform::MergeFunction(f) => (
            st.iter()
                .filter(|x| NAMES[x.name as usize] != f)
                .copied()
                .collect(),
            nm[n - 1] == f,
        ),
        Transform::MergeSubtree(path) => {
            if starts_with(st, path) {
                (st[..path.len() - 1].to_vec(), true)
            } else {
                (st.to_vec(), false)
            }
        }
        Transform::Drop(path) => {
            if starts_with(st, path) {
                return None;
            }
            (st.to_vec(), false)
        }
        Transform::FocusSubtree(path) => {
            if !starts_with(st, path) {
                return None;
            }
            (st[path.len() - 1..].to_vec(), false)
        }
        Transform::FocusFunction(f) => {
            let i = nm.iter().position(|x| x == f)?;
            (st[i..].to_vec(), false)
        }
        Transform::CollapseDirectRecursion(only) => {
            let keep: Vec<bool> = (0..n)
                .map(|i| i == 0 || nm[i] != nm[i - 1] || !tracked(only, nm[i]))
                .collect();
            (
                st.iter()
                    .zip(&keep)
                    .filter(|(_, k)| **k)
                    .map(|(f, _)| *f)
                    .collect(),
                !keep[n - 1],
            )
        }
        Transform::CollapseRecursion(only) => {
            let first: Vec<usize> = (0..n)
                .map(|i| {
                    if tracked(only, nm[i]) {
                        nm.iter().position(|x| *x == nm[i]).unwrap()
                    } else {
                        i
                    }
                })
                .collect();
            // np(i): the new stack of position i.
            fn np(i: usize, st: &[Fr], first: &[usize]) -> Vec<Fr> {
                if first[i] != i {
                    return np(first[i], st, first);
                }
                let mut v = if i == 0 { vec![] } else { np(i - 1, st, first) };
                v.push(st[i]);
                v
            }
            (np(n - 1, st, &first), first[n - 1] != n - 1)
        }
        Transform::Invert => (st.iter().rev().copied().collect(), true),
        Transform::MaxDepth(d) => {
            let d = *d as usize;
            (st[..n.min(d)].to_vec(), n > d)
        }
        Transform::MinTotal(_) => {
            let i = (1..n).find(|&i| small(&st[..=i])).unwrap_or(n);
            (st[..i].to_vec(), i < n)
        }
    };
    if out.0.is_empty() { None } else { Some(out) }
}

fn model(inp: &Input, samples: &[Smp], t: &Transform) -> Vec<Smp> {
    // min-total: totals per name path of the measured columns.
    let mut small_paths: std::collections::HashSet<Vec<&str>> = Default::default();
    if let Transform::MinTotal(frac) = t {
        let default = inp.counts.iter().position(|c| !c).unwrap();
        let mut cols = if inp.diff { vec![0, 1] } else { vec![default] };
        let mut totals: Vec<BTreeMap<Vec<&str>, i64>> = vec![];
        let mut grands = vec![];
        for &c in &cols {
            let mut m: BTreeMap<Vec<&str>, i64> = BTreeMap::new();
            let mut g = 0;
            for s in samples {
                let nm = names(&s.stack);
                for d in 1..=nm.len() {
                    *m.entry(nm[..d].to_vec()).or_default() += s.values[c];
                }
                g += s.values[c];
            }
            totals.push(m);
            grands.push(g);
        }
        if grands.iter().any(|&g| g != 0) {
            let keep: Vec<bool> = grands.iter().map(|&g| g != 0).collect();
            let mut i = 0;
            cols.retain(|_| {
                i += 1;
                keep[i - 1]
            });
            let mut j = 0;
            totals.retain(|_| {
                j += 1;
                keep[j - 1]
            });
            grands.retain(|&g| g != 0);
        }
        for path in totals[0].keys() {
            if totals
                .iter()
                .zip(&grands)
                .all(|(m, &g)| frac.below(m[path], g))
            {
                small_paths.insert(path.clone());
            }
        }
    }
    let small = |st: &[Fr]| small_paths.contains(&names(st));
    let mut out = vec![];
    for s in samples {
        if let Some((stack, merged)) = model_one(&s.stack, t, &small) {
            let values = s
                .values
                .iter()
                .zip(&inp.counts)
                .map(|(&v, &c)| if c && merged { 0 } else { v })
                .collect();
            out.push(Smp {
                stack,
                values,
                thread: s.thread,
                time: s.time,
            });
        }
    }
    out
}

// ---------------------------------------------------------------- comparing

/// A transform whose path is usually taken from one of `samples` (the tree it will see).
fn transform(samples: &[Smp], kind: u8, pick: usize, len: usize, name: u8, num: u64) -> Transform {
    let path = || -> Vec<String> {
        if samples.is_empty() || pick % 5 == 4 {
            return (0..=len % 3)
                .map(|i| NAMES[(name as usize + i) % 6].to_string())
                .collect();
        }
        let s = &samples[pick % samples.len()];
        let nm = names(&s.stack);
        nm[..(len % nm.len()) + 1]
            .iter()
            .map(|x| x.to_string())
            .collect()
    };
    let f = NAMES[name as usize % 6].to_string();
    match kind % 13 {
        0 => Transform::MergeCallNode(path()),
        1 => Transform::MergeFunction(f),
        2 => Transform::MergeSubtree(path()),
        3 => Transform::Drop(path()),
        4 => Transform::FocusSubtree(path()),
        5 => Transform::FocusFunction(f),
        6 => Transform::CollapseDirectRecursion(None),
        7 => Transform::CollapseDirectRecursion(Some(f)),
        8 => Transform::CollapseRecursion(None),
        9 => Transform::CollapseRecursion(Some(f)),
        10 => Transform::Invert,
        11 => Transform::MaxDepth((num % 6) as u32 + 1),
        _ => Transform::MinTotal(Fraction::decimal(num % 101, 2).unwrap()),
    }
}

type Step = (u8, usize, usize, u8, u64);

fn check_chain(inp: &Input, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut p = build(inp);
    let mut samples = inp.samples.clone();
    let mut chain = Vec::new();
    for (step, &(k, pick, len, name, num)) in steps.iter().enumerate() {
        chain.push(transform(&samples, k, pick, len, name, num));
        let t = &chain[step];
        let (q, _) = apply(&p.view(), t).map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?;
        // The no-op shortcut keeps only what a rebuild gives again.
        let (kept, _) =
            apply_or_keep(&p.view(), t).map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?;
        if kept.is_none() {
            prop_assert_eq!(
                format!("{:?}", q),
                format!("{:?}", p),
                "{} kept a profile it changes",
                t
            );
        }
        q.view()
            .validate()
            .map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?;
        // No stack without samples on it or below it.
        let live = profconv_ir::profile::live_stacks(&q.stacks.prefix, &q.samples.stack);
        prop_assert!(
            live.iter().all(|&l| l),
            "after {}: a stack without samples",
            t
        );
        samples = model(inp, &samples, t);
        p = q;
        let real = read_back(&p);
        let ncols = inp.counts.len();
        if inp.ordered {
            let want: Vec<_> = samples
                .iter()
                .map(|s| {
                    (
                        funcs(&s.stack),
                        s.values.clone(),
                        s.thread,
                        (!inp.bulk).then_some(s.time),
                    )
                })
                .collect();
            let got: Vec<_> = real
                .iter()
                .map(|(st, v, th, tm)| (funcs(st), v.clone(), *th, *tm))
                .collect();
            prop_assert_eq!(
                got,
                want,
                "ordered, after step {} ({:?})",
                step,
                &chain[..=step]
            );
        }
        let want = tree_of(
            samples
                .iter()
                .map(|s| (&s.stack[..], &s.values[..], s.thread)),
            ncols,
        );
        let got = tree_of(
            real.iter().map(|(st, v, th, _)| (&st[..], &v[..], *th)),
            ncols,
        );
        prop_assert_eq!(
            got,
            want,
            "tree, after step {} ({:?})",
            step,
            &chain[..=step]
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn transforms_agree_with_the_naive_model(
        inp in input(),
        ts in prop::collection::vec((0u8..13, 0usize..12, 0usize..8, 0u8..6, 0u64..200), 1..=3),
    ) {
        check_chain(&inp, &ts)?;
    }
}
