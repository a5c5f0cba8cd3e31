//! The call tree as text: the shape snapshots and format fixtures compare against.
//!
//! One line per call node, two spaces of indent per depth (up to depth [`MAX_INDENT`]; deeper
//! nodes keep that indent and start with `[depth D] `, so the text grows with the nodes, not
//! with the square of a deep chain's length):
//! `NAME self=S total=T` for the chosen value type, then ` calls=N` when the profile has exact
//! call counts (` calls=?` when its metadata says `calls=unknown`); with `all_values`, ` self_NAME=S total_NAME=T` for the other weights and
//! ` NAME=N` for other counts where they are not zero.

use crate::calltree::CallTree;
use crate::profile::{IrError, ProfileRef, ValueKind, write_fixed};

/// The deepest node indented by depth; deeper ones say their depth instead.
pub const MAX_INDENT: u32 = 100;

/// Sibling order in the tree text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TreeOrder {
    /// Descending total of the chosen value, ties by name.
    #[default]
    Total,
    /// The order in which the input first reached each child.
    FirstSeen,
    /// By name (bytewise), ties by first-seen.
    Name,
}

/// Options of [`render_tree`].
#[derive(Clone, Debug, Default)]
pub struct TreeTextOptions {
    /// Value type shown as `self=`/`total=`; `None` is the first weight column.
    pub value: Option<usize>,
    /// Also print the other value types.
    pub all_values: bool,
    /// Sibling order.
    pub order: TreeOrder,
}

/// Appends a func's name, its control characters other than tab escaped (`\n`, `\r`,
/// `\u{1b}`): one node per line, and nothing that a terminal would act on. For every
/// line-oriented text output that shows names.
pub fn push_name(line: &mut String, name: &str) {
    push_name_escaping(line, name, false);
}

/// [`push_name`] for text a person reads on a terminal (`profconv tree`, the PVM summary):
/// the bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069)
/// escaped too, so that a name cannot reorder the numbers after it on a terminal that applies
/// them (as the SDK's quoting of input in messages escapes them).
pub fn push_shown_name(line: &mut String, name: &str) {
    push_name_escaping(line, name, true);
}

/// A bidirectional embedding, override or isolate control (U+202A–U+202E, U+2066–U+2069):
/// on a terminal that applies them, one in a name reorders the rest of its line.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_name_escaping(line: &mut String, name: &str, bidi: bool) {
    let control = |c: char| (c.is_control() && c != '\t') || (bidi && is_bidi_control(c));
    if !name.contains(control) {
        line.push_str(name);
        return;
    }
    for c in name.chars() {
        match c {
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            c if control(c) => line.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => line.push(c),
        }
    }
}

/// Renders the whole tree as text.
pub fn render_tree(
    p: &ProfileRef<'_>,
    tree: &CallTree,
    opts: &TreeTextOptions,
) -> Result<String, IrError> {
    let mut out = String::new();
    write_tree(p, tree, opts, |line| {
        out.push_str(line);
        Ok::<(), IrError>(())
    })?;
    Ok(out)
}

/// Renders the tree line by line into `sink` (each line ends with `\n`), so a huge tree streams
/// to a pipe without being held in memory. Iterative: any depth works. A column to print that
/// `tree` was built without ([`CallTree::build_columns`]) is an error.
pub fn write_tree<E: From<IrError>>(
    p: &ProfileRef<'_>,
    tree: &CallTree,
    opts: &TreeTextOptions,
    mut sink: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let main = match opts.value.or_else(|| p.default_weight()) {
        Some(v) if v < p.value_types.len() => Some(v),
        Some(v) => {
            return Err(IrError::Invalid(format!("no value type {v}")).into());
        }
        None => None,
    };
    let calls = p
        .value_type_index("calls")
        .filter(|&i| p.value_types[i].kind == ValueKind::Count && Some(i) != main);
    // A format that knows calls happened but not how many (collapsed traces) says so.
    let calls_unknown = calls.is_none() && p.meta("calls") == Some("unknown");
    let printed = |c: usize| Some(c) == main || Some(c) == calls || opts.all_values;
    if let Some(c) = (0..p.value_types.len()).find(|&c| {
        printed(c)
            && tree
                .self_values
                .get(c)
                .is_none_or(|v| v.len() != tree.len())
    }) {
        return Err(IrError::Invalid(format!(
            "the call tree was built without value column {c} (`{}`)",
            p.value_type_name(c)
        ))
        .into());
    }
    let sort_key_col = main;
    let sorted = |nodes: &mut Vec<u32>| match opts.order {
        TreeOrder::FirstSeen => {}
        TreeOrder::Name => nodes.sort_by(|&a, &b| {
            p.func_name_str(tree.func[a as usize])
                .cmp(p.func_name_str(tree.func[b as usize]))
                .then(a.cmp(&b))
        }),
        TreeOrder::Total => nodes.sort_by(|&a, &b| {
            let (ta, tb) = match sort_key_col {
                Some(c) => (
                    tree.total_values[c][a as usize],
                    tree.total_values[c][b as usize],
                ),
                None => (0, 0),
            };
            tb.cmp(&ta)
                .then_with(|| {
                    p.func_name_str(tree.func[a as usize])
                        .cmp(p.func_name_str(tree.func[b as usize]))
                })
                .then(a.cmp(&b))
        }),
    };
    let mut line = String::new();
    // Explicit DFS stack of nodes still to print, last = next.
    let mut todo: Vec<u32> = tree.roots.clone();
    sorted(&mut todo);
    todo.reverse();
    let mut kids = Vec::new();
    while let Some(node) = todo.pop() {
        let i = node as usize;
        line.clear();
        let depth = tree.depth[i];
        for _ in 0..depth.min(MAX_INDENT) {
            line.push_str("  ");
        }
        if depth > MAX_INDENT {
            line.push_str("[depth ");
            line.push_str(itoa::Buffer::new().format(depth));
            line.push_str("] ");
        }
        push_shown_name(&mut line, p.func_name_str(tree.func[i]));
        if let Some(c) = main.filter(|&c| p.value_types[c].kind == ValueKind::Count) {
            // A count (`--value calls`) is the node's own, never summed into its callers: it
            // has no total to show, and `total=` equal to self read as one.
            line.push(' ');
            line.push_str(p.value_type_name(c));
            line.push('=');
            write_fixed(&mut line, tree.self_values[c][i], p.value_types[c].decimals);
        } else if let Some(c) = main {
            let d = p.value_types[c].decimals;
            line.push_str(" self=");
            write_fixed(&mut line, tree.self_values[c][i], d);
            line.push_str(" total=");
            write_fixed(&mut line, tree.total_values[c][i], d);
        }
        if let Some(c) = calls {
            line.push_str(" calls=");
            write_fixed(&mut line, tree.self_values[c][i], p.value_types[c].decimals);
        } else if calls_unknown {
            line.push_str(" calls=?");
        }
        if opts.all_values {
            for (c, vt) in p.value_types.iter().enumerate() {
                if Some(c) == main || Some(c) == calls {
                    continue;
                }
                let name = p.value_type_name(c);
                match vt.kind {
                    ValueKind::Weight => {
                        line.push_str(" self_");
                        line.push_str(name);
                        line.push('=');
                        write_fixed(&mut line, tree.self_values[c][i], vt.decimals);
                        line.push_str(" total_");
                        line.push_str(name);
                        line.push('=');
                        write_fixed(&mut line, tree.total_values[c][i], vt.decimals);
                    }
                    ValueKind::Count => {
                        if tree.self_values[c][i] != 0 {
                            line.push(' ');
                            line.push_str(name);
                            line.push('=');
                            write_fixed(&mut line, tree.self_values[c][i], vt.decimals);
                        }
                    }
                }
            }
        }
        line.push('\n');
        sink(&line)?;
        kids.clear();
        kids.extend(tree.children(node));
        sorted(&mut kids);
        todo.extend(kids.iter().rev());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::ProfileBuilder;
    use crate::testing::seed_001;

    /// A name with a line break or an escape byte keeps its node on one line.
    #[test]
    fn control_characters_in_names_are_escaped() {
        // The tree text of one stack `path` of `n` samples.
        let tree_of = |path: &[&str], n: i64| {
            let mut b = ProfileBuilder::new();
            b.add_value_type("samples", "count", ValueKind::Weight);
            b.add_stack(path, &[n]).unwrap();
            let p = b.finish();
            let t = CallTree::build(&p.view()).unwrap();
            render_tree(&p.view(), &t, &TreeTextOptions::default()).unwrap()
        };
        assert_eq!(
            tree_of(&["a\nb", "\u{1b}[2Jc\td"], 1),
            "a\\nb self=0 total=1\n  \\u{1b}[2Jc\td self=1 total=1\n"
        );
        // A right-to-left override or an isolate in a name is escaped in the tree (a terminal
        // that applies it drew the numbers after it reversed), not in a name a writer writes.
        assert_eq!(
            tree_of(&["evil\u{202e}abc", "x\u{2067}\u{5d0}"], 123),
            "evil\\u{202e}abc self=0 total=123\n  x\\u{2067}\u{5d0} self=123 total=123\n"
        );
        let mut written = String::new();
        push_name(&mut written, "evil\u{202e}abc");
        assert_eq!(written, "evil\u{202e}abc");
    }

    /// A count chosen as the value (`tree --value calls`) is shown as the node's own count, not
    /// as `self=`/`total=` with a total equal to self (the emitters sum a count up the tree;
    /// the tree never does, and its `total=` read as if it had).
    #[test]
    fn a_count_chosen_as_the_value_has_no_total() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        let calls = b.add_value_type("calls", "count", ValueKind::Count);
        b.add_stack(&["main"], &[2, 1]).unwrap();
        b.add_stack(&["main", "f"], &[5, 3]).unwrap();
        let p = b.finish();
        let t = CallTree::build(&p.view()).unwrap();
        let shown = |value| {
            let opts = TreeTextOptions {
                value,
                ..TreeTextOptions::default()
            };
            render_tree(&p.view(), &t, &opts).unwrap()
        };
        assert_eq!(shown(Some(calls)), "main calls=1\n  f calls=3\n");
        assert_eq!(
            shown(None),
            "main self=2 total=7 calls=1\n  f self=5 total=5 calls=3\n"
        );
    }

    #[test]
    fn a_column_the_tree_was_built_without_is_an_error() {
        let p = seed_001();
        let t = CallTree::build_columns(&p.view(), &[]).unwrap();
        let e = render_tree(&p.view(), &t, &TreeTextOptions::default()).unwrap_err();
        assert_eq!(
            e,
            IrError::Invalid("the call tree was built without value column 0 (`samples`)".into())
        );
    }

    #[test]
    fn seed_001_running_and_self_times() {
        let p = seed_001();
        let tree = CallTree::build(&p.view()).unwrap();
        let opts = TreeTextOptions {
            order: TreeOrder::FirstSeen,
            ..Default::default()
        };
        let text = render_tree(&p.view(), &tree, &opts).unwrap();
        assert_eq!(
            text,
            "A self=0 total=3\n  B self=0 total=3\n    C self=0 total=2\n      D self=0 total=1\n        E self=1 total=1\n      F self=0 total=1\n        G self=1 total=1\n    H self=0 total=1\n      F self=1 total=1\n"
        );
    }

    #[test]
    fn orders_total_and_name() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["r", "small"], &[1]).unwrap();
        b.add_stack(&["r", "big"], &[5]).unwrap();
        b.add_stack(&["r", "a-tie"], &[1]).unwrap();
        let p = b.finish();
        let tree = CallTree::build(&p.view()).unwrap();
        let by = |order| {
            render_tree(
                &p.view(),
                &tree,
                &TreeTextOptions {
                    order,
                    ..Default::default()
                },
            )
            .unwrap()
        };
        assert_eq!(
            by(TreeOrder::Total),
            "r self=0 total=7\n  big self=5 total=5\n  a-tie self=1 total=1\n  small self=1 total=1\n"
        );
        assert_eq!(
            by(TreeOrder::Name),
            "r self=0 total=7\n  a-tie self=1 total=1\n  big self=5 total=5\n  small self=1 total=1\n"
        );
    }

    /// Past depth `MAX_INDENT` the indent stops growing and the line names its depth: a chain of
    /// a million calls prints in linear, not quadratic, space.
    #[test]
    fn deep_nodes_say_their_depth_instead_of_indenting_further() {
        let names: Vec<String> = (0..=MAX_INDENT + 2).map(|d| format!("f{d}")).collect();
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&names, &[1]).unwrap();
        let p = b.finish();
        let tree = CallTree::build(&p.view()).unwrap();
        let text = render_tree(&p.view(), &tree, &TreeTextOptions::default()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let indent = " ".repeat(2 * MAX_INDENT as usize);
        let at = MAX_INDENT as usize;
        assert_eq!(lines[at], format!("{indent}f{at} self=0 total=1"));
        assert_eq!(
            lines[at + 1],
            format!("{indent}[depth 101] f101 self=0 total=1")
        );
        assert_eq!(
            lines[at + 2],
            format!("{indent}[depth 102] f102 self=1 total=1")
        );
    }
}
