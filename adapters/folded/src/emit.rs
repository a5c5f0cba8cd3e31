//! Folded emitter.
//!
//! * Default: one line per call node with samples, from a depth-first walk of the call tree with
//!   siblings by name (compared as if followed by `;`, so the order is that of sorting the lines,
//!   except where a name is a prefix of a sibling's followed by a byte below `;`).
//! * `per-thread`: the same, one block per thread (kernel run, process), in thread order.
//! * `flamechart`: time order, nothing merged: for a profile with exact calls, one line per
//!   call with its self value (the Octez debugger's `profile` output); otherwise one line per
//!   run of consecutive samples on the same stack.

use profconv_plugin::PluginError;
use profconv_plugin::ir::{CallTree, NONE, ProfileRef, ValueKind, write_fixed};
use std::io::Write;

/// What to write.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmitOptions<'a> {
    /// Value type to write (default: the first weight).
    pub value: Option<&'a str>,
    /// One merged block per thread.
    pub per_thread: bool,
    /// Time order, one line per call.
    pub flamechart: bool,
}

fn value_column(p: &ProfileRef<'_>, value: Option<&str>) -> Result<Option<usize>, PluginError> {
    match value {
        Some(name) => p.value_type_index(name).map(Some).ok_or_else(|| {
            let known: Vec<&str> = (0..p.value_types.len())
                .map(|i| p.value_type_name(i))
                .collect();
            PluginError::bad_option(format!(
                "no value type '{name}' in this profile (it has: {})",
                known.join(", ")
            ))
        }),
        None => Ok(p
            .default_weight()
            .or((!p.value_types.is_empty()).then_some(0))),
    }
}

/// Writes `p` as folded stacks.
pub fn emit_folded(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    opts: EmitOptions<'_>,
) -> Result<(), PluginError> {
    let Some(col) = value_column(p, opts.value)? else {
        return Ok(());
    };
    let mut w = LineWriter::new(p, col);
    if opts.flamechart {
        return w.flamechart(p, out);
    }
    if opts.per_thread && p.n_threads() > 1 {
        let tree = CallTree::build(p)?;
        for thread in 0..p.n_threads() as u32 {
            // Self values of this thread's samples only, on the shared tree's nodes.
            let mut selfv = vec![0i64; tree.len()];
            let mut has = vec![false; tree.len()];
            for i in 0..p.n_samples() {
                if p.sample_thread_of(i) == thread {
                    let n = tree.stack_node[p.sample_stack[i] as usize] as usize;
                    selfv[n] = selfv[n].saturating_add(p.sample_values[col][i]);
                    has[n] = true;
                }
            }
            w.tree(p, &tree, &selfv, &has, out)?;
        }
        return Ok(());
    }
    let tree = CallTree::build(p)?;
    let has: Vec<bool> = tree.sample_count.iter().map(|&c| c > 0).collect();
    w.tree(p, &tree, &tree.self_values[col], &has, out)
}

struct LineWriter {
    col: usize,
    decimals: u32,
    path: Vec<u8>,
    num: String,
}

impl LineWriter {
    fn new(p: &ProfileRef<'_>, col: usize) -> Self {
        LineWriter {
            col,
            decimals: p.value_types[col].decimals,
            path: Vec::with_capacity(4096),
            num: String::new(),
        }
    }

    fn line(&mut self, path: &[u8], value: i64, out: &mut impl Write) -> std::io::Result<()> {
        self.num.clear();
        write_fixed(&mut self.num, value, self.decimals);
        // `0.50` → `0.5`, `2.00` → `2`: what the reader reads back is written back the same.
        if self.decimals > 0 {
            let keep = self.num.trim_end_matches('0').trim_end_matches('.').len();
            self.num.truncate(keep);
        }
        out.write_all(path)?;
        out.write_all(b" ")?;
        out.write_all(self.num.as_bytes())?;
        out.write_all(b"\n")
    }

    /// One line per node with `has`, depth first, siblings in line-sort order.
    fn tree(
        &mut self,
        p: &ProfileRef<'_>,
        tree: &CallTree,
        selfv: &[i64],
        has: &[bool],
        out: &mut impl Write,
    ) -> Result<(), PluginError> {
        // Per func, computed once: its name's rank in line-sort order, and its name as written.
        let rank = name_ranks(p);
        let mut names = Vec::new();
        let mut name_end = Vec::with_capacity(p.n_funcs() + 1);
        name_end.push(0);
        for f in 0..p.n_funcs() as u32 {
            push_name(&mut names, p.func_name_str(f));
            name_end.push(names.len());
        }
        let by_name = |a: &u32, b: &u32| {
            rank[tree.func[*a as usize] as usize].cmp(&rank[tree.func[*b as usize] as usize])
        };
        // Length of the path before each depth's name, so a sibling truncates, not rebuilds.
        let mut prefix_len: Vec<usize> = Vec::new();
        let mut todo: Vec<u32> = tree.roots.clone();
        todo.sort_by(by_name);
        todo.reverse();
        let mut kids = Vec::new();
        let mut path = std::mem::take(&mut self.path);
        while let Some(node) = todo.pop() {
            let i = node as usize;
            let depth = tree.depth[i] as usize;
            prefix_len.truncate(depth);
            path.truncate(prefix_len.last().copied().unwrap_or(0));
            if depth > 0 {
                path.push(b';');
            }
            let f = tree.func[i] as usize;
            path.extend_from_slice(&names[name_end[f]..name_end[f + 1]]);
            prefix_len.push(path.len());
            if has[i] {
                self.line(&path, selfv[i], out)?;
            }
            kids.clear();
            kids.extend(tree.children(node));
            kids.sort_by(by_name);
            todo.extend(kids.iter().rev());
        }
        self.path = path;
        Ok(())
    }

    /// Time order: one line per call (with exact calls) or per run of equal stacks.
    fn flamechart(&mut self, p: &ProfileRef<'_>, out: &mut impl Write) -> Result<(), PluginError> {
        let calls = p
            .value_type_index("calls")
            .filter(|&c| p.value_types[c].kind == ValueKind::Count);
        // (stack, value) per output line, in order of first appearance.
        let mut lines: Vec<(u32, i64)> = Vec::new();
        // Open calls: (stack, line) from the outermost in.
        let mut open: Vec<(u32, usize)> = Vec::new();
        let values = p.sample_values[self.col];
        for (i, &v) in values.iter().enumerate() {
            let s = p.sample_stack[i];
            match calls {
                Some(c) if p.sample_values[c][i] > 0 => {
                    // A new call of the leaf: close what is not its caller.
                    let caller = p.stack_prefix[s as usize];
                    while open.last().is_some_and(|&(o, _)| o != caller) {
                        open.pop();
                    }
                    if caller != NONE && open.is_empty() {
                        // The caller was not seen opening (a trace cut at its start).
                        open.push((caller, usize::MAX));
                    }
                    open.push((s, lines.len()));
                    lines.push((s, v));
                }
                Some(_) => {
                    while open.last().is_some_and(|&(o, _)| o != s) {
                        open.pop();
                    }
                    match open.last() {
                        Some(&(_, l)) if l != usize::MAX => lines[l].1 += v,
                        _ => {
                            open.clear();
                            open.push((s, lines.len()));
                            lines.push((s, v));
                        }
                    }
                }
                None => match lines.last_mut() {
                    Some(last) if last.0 == s => last.1 += v,
                    _ => lines.push((s, v)),
                },
            }
        }
        let mut names: Vec<u32> = Vec::new();
        let mut path = std::mem::take(&mut self.path);
        for (s, v) in lines {
            names.clear();
            let mut cur = s;
            while cur != NONE {
                names.push(p.stack_func(cur));
                cur = p.stack_prefix[cur as usize];
            }
            path.clear();
            for (k, &f) in names.iter().rev().enumerate() {
                if k > 0 {
                    path.push(b';');
                }
                push_name(&mut path, p.func_name_str(f));
            }
            self.line(&path, v, out)?;
        }
        self.path = path;
        Ok(())
    }
}

/// Each func's rank when names are sorted as the lines that hold them are (`name;` byte
/// order); equal names share a rank.
fn name_ranks(p: &ProfileRef<'_>) -> Vec<u32> {
    let key = |f: u32| p.func_name_str(f).as_bytes().iter().chain(b";");
    let mut order: Vec<u32> = (0..p.n_funcs() as u32).collect();
    order.sort_by(|&a, &b| key(a).cmp(key(b)));
    let mut rank = vec![0u32; order.len()];
    let mut r = 0u32;
    for k in 1..order.len() {
        if p.func_name_str(order[k - 1]) != p.func_name_str(order[k]) {
            r += 1;
        }
        rank[order[k] as usize] = r;
    }
    rank
}

/// Appends a frame name; line breaks (possible in names from other formats) would split the
/// line, so they become spaces. A `;` inside a name cannot be expressed in folded stacks.
fn push_name(path: &mut Vec<u8>, name: &str) {
    if name.bytes().any(|b| b == b'\n' || b == b'\r') {
        path.extend(
            name.bytes()
                .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
        );
    } else {
        path.extend_from_slice(name.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::{Profile, ProfileBuilder, TraceBuilder, ValueKind, flags};

    /// A trace: `C name tick` / `E tick`, with a new thread at each `R name`.
    fn trace(events: &[&str]) -> Profile {
        let mut b = ProfileBuilder::new();
        let ticks = b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let calls = b.add_value_type("calls", "count", ValueKind::Count);
        b.set_flags(flags::ORDERED);
        let mut t = TraceBuilder::new(&b, vec![ticks], Some(calls), true);
        for e in events {
            let parts: Vec<&str> = e.split(' ').collect();
            match parts[..] {
                ["C", name, tick] => {
                    let f = b.func(name);
                    let fr = b.frame(f);
                    t.enter(&mut b, fr, &[tick.parse().unwrap()]).unwrap();
                }
                ["E", tick] => {
                    t.exit(&mut b, &[tick.parse().unwrap()]).unwrap();
                }
                ["R", name] => {
                    b.add_thread(name);
                }
                _ => panic!("bad event {e}"),
            }
        }
        b.finish()
    }

    fn emit(p: &Profile, opts: EmitOptions<'_>) -> String {
        let mut out = Vec::new();
        emit_folded(&p.view(), &mut out, opts).unwrap();
        String::from_utf8(out).unwrap()
    }

    const CHART: EmitOptions<'static> = EmitOptions {
        value: None,
        per_thread: false,
        flamechart: true,
    };

    #[test]
    fn flamechart_of_seed_000_is_one_line_per_call() {
        let p = trace(&["C f 0", "C g 10", "C h 30", "E 60", "E 100", "E 160"]);
        assert_eq!(emit(&p, CHART), "f 70\nf;g 60\nf;g;h 30\n");
        assert_eq!(emit(&p, EmitOptions::default()), "f 70\nf;g 60\nf;g;h 30\n");
    }

    #[test]
    fn back_to_back_calls_stay_apart_and_recursion_keeps_its_levels() {
        let p = trace(&[
            "C main 0",
            "C g 5",
            "E 8",
            "C g 8",
            "E 20",
            "C f 20",
            "C f 25",
            "C leaf 26",
            "E 27",
            "E 30",
            "E 40",
            "E 41",
        ]);
        assert_eq!(
            emit(&p, CHART),
            "main 6\nmain;g 3\nmain;g 12\nmain;f 15\nmain;f;f 4\nmain;f;f;leaf 1\n"
        );
        assert_eq!(
            emit(&p, EmitOptions::default()),
            "main 6\nmain;f 15\nmain;f;f 4\nmain;f;f;leaf 1\nmain;g 15\n"
        );
    }

    #[test]
    fn per_thread_blocks_follow_thread_order() {
        let p = trace(&[
            "R run1", "C k 0", "C b 1", "E 3", "C a 3", "E 4", "E 10", "R run2", "C k 10",
            "C a 11", "E 15", "E 16",
        ]);
        let per_thread = EmitOptions {
            per_thread: true,
            ..Default::default()
        };
        assert_eq!(emit(&p, per_thread), "k 7\nk;a 1\nk;b 2\nk 2\nk;a 4\n");
        assert_eq!(emit(&p, EmitOptions::default()), "k 9\nk;a 5\nk;b 2\n");
    }

    #[test]
    fn siblings_sort_as_their_subtrees_text_would() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        for (stack, n) in [
            (&["a", "x"][..], 1),
            (&["a-b"][..], 2),
            (&["a"][..], 3),
            (&["B"][..], 4),
        ] {
            b.add_stack(stack, &[n]).unwrap();
        }
        let p = b.finish();
        // `a-b` before `a;x` as `sort` has it ('-' < ';'). The one difference from sorting the
        // lines: `a 3` stays with its subtree, where `sort` would put it before `a-b 2`.
        assert_eq!(emit(&p, EmitOptions::default()), "B 4\na-b 2\na 3\na;x 1\n");
    }
}
