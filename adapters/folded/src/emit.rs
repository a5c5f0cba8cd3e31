//! Folded emitter: a depth-first walk of the call tree, siblings by name.

use profconv_plugin::PluginError;
use profconv_plugin::ir::{CallTree, ProfileRef, write_fixed};
use std::io::Write;

/// Writes one `path value` line per call node that has samples, in name order.
pub fn emit_folded(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    value: Option<&str>,
) -> Result<(), PluginError> {
    let col = match value {
        Some(name) => p.value_type_index(name).ok_or_else(|| {
            let known: Vec<&str> = (0..p.value_types.len())
                .map(|i| p.value_type_name(i))
                .collect();
            PluginError::bad_option(format!(
                "no value type '{name}' in this profile (it has: {})",
                known.join(", ")
            ))
        })?,
        None => match p
            .default_weight()
            .or((!p.value_types.is_empty()).then_some(0))
        {
            Some(c) => c,
            None => return Ok(()),
        },
    };
    let decimals = p.value_types[col].decimals;
    let tree = CallTree::build(p)?;
    let by_name = |a: &u32, b: &u32| {
        p.func_name_str(tree.func[*a as usize])
            .as_bytes()
            .cmp(p.func_name_str(tree.func[*b as usize]).as_bytes())
    };
    let mut path: Vec<u8> = Vec::with_capacity(4096);
    // Length of `path` before each depth's name, so a sibling truncates instead of rebuilding.
    let mut prefix_len: Vec<usize> = Vec::new();
    let mut todo: Vec<u32> = tree.roots.clone();
    todo.sort_by(by_name);
    todo.reverse();
    let mut kids = Vec::new();
    let mut num = String::new();
    while let Some(node) = todo.pop() {
        let i = node as usize;
        let depth = tree.depth[i] as usize;
        prefix_len.truncate(depth);
        let start = if depth == 0 { 0 } else { prefix_len[depth - 1] };
        path.truncate(start);
        if depth > 0 {
            path.push(b';');
        }
        push_name(&mut path, p.func_name_str(tree.func[i]));
        prefix_len.push(path.len());
        if tree.sample_count[i] > 0 {
            num.clear();
            write_fixed(&mut num, tree.self_values[col][i], decimals);
            // `0.50` → `0.5`, `2.00` → `2`: what the reader reads back is written back the same.
            if decimals > 0 {
                let keep = num.trim_end_matches('0').trim_end_matches('.').len();
                num.truncate(keep);
            }
            out.write_all(&path)?;
            out.write_all(b" ")?;
            out.write_all(num.as_bytes())?;
            out.write_all(b"\n")?;
        }
        kids.clear();
        kids.extend(tree.children(node));
        kids.sort_by(by_name);
        todo.extend(kids.iter().rev());
    }
    Ok(())
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
