//! # profconv-plugin-cpuprofile: the profconv plugin template
//!
//! A complete, small profconv plugin: it reads the `.cpuprofile` files written by Chrome
//! DevTools, V8's `--cpu-prof`, Node.js `--cpu-prof` and the `Profiler.stop` method of the Chrome
//! DevTools Protocol. Copy this directory, rename the crate and the format, and replace
//! [`parse_cpuprofile`] with your own parser; `docs/plugin-guide.md` walks through every step.
//!
//! The format is one JSON object:
//!
//! ```json
//! {"nodes": [{"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1,
//!             "columnNumber": -1}, "hitCount": 0, "children": [2]}, ...],
//!  "startTime": 1000, "endTime": 1600,
//!  "samples": [2, 2, 3], "timeDeltas": [100, 100, 150]}
//! ```
//!
//! `nodes` is the call tree (each node a call frame, `children` the ids of its callees);
//! `samples[i]` is the node on top of the stack at sample `i`, taken `timeDeltas[i]`
//! microseconds after the previous one (the first after `startTime`).
//!
//! Mapping to the IR:
//!
//! * each node becomes a stack: its parent's stack plus a frame of the function
//!   `functionName` (`(anonymous)` when empty) with the file `url` and the 1-based line
//!   `lineNumber + 1`; the synthetic `(root)` node is left out, its children become roots;
//! * one value type `samples` (count, a weight); each sample is one row with its time in
//!   microseconds, in file order, and the profile is flagged [`flags::ORDERED`] (flame charts
//!   work);
//! * a profile without `samples` (some old writers keep only `hitCount`) is read from each node's
//!   `hitCount`, aggregated, without time.
//!
//! Errors name the line and column (JSON syntax, truncation) or the byte offset of the array that
//! holds the bad reference (an unknown node id, a cycle, mismatched `samples`/`timeDeltas`).

use profconv_plugin::ir::{NONE, Profile, ProfileBuilder, ValueKind, flags};
use profconv_plugin::{Context, Format, Input, Options, PluginError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;

/// The `.cpuprofile` format (Chrome, V8, Node.js). Parse and sniff only.
pub struct CpuProfile;

impl Format for CpuProfile {
    const ID: &'static str = "cpuprofile";
    const DESCRIPTION: &'static str =
        "Chrome/V8/Node.js CPU profile (.cpuprofile JSON: node tree, samples, timeDeltas)";
    const EXTENSIONS: &'static str = "cpuprofile";
    const CAN_PARSE: bool = true;
    const CAN_SNIFF: bool = true;
    // JSON is parsed as a whole: ask the host for the input in memory.
    const STREAMING_INPUT: bool = false;

    fn sniff(head: &[u8]) -> u32 {
        sniff(head)
    }

    fn parse(
        input: &mut Input<'_>,
        _options: &Options,
        _cx: &mut Context<'_>,
    ) -> Result<Profile, PluginError> {
        match input.whole() {
            Some(bytes) => parse_cpuprofile(bytes),
            None => {
                let mut bytes = Vec::new();
                input.read_to_end(&mut bytes)?;
                parse_cpuprofile(&bytes)
            }
        }
    }
}

/// Confidence that `head` starts a `.cpuprofile`: a JSON object mentioning both `"nodes"` and
/// `"callFrame"` scores 90; anything else 0. Cheap and pure, as the ABI asks.
pub fn sniff(head: &[u8]) -> u32 {
    let starts_object = head
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{');
    if starts_object && contains(head, b"\"nodes\"") && contains(head, b"\"callFrame\"") {
        90
    } else {
        0
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawProfile {
    nodes: Vec<RawNode>,
    #[serde(default)]
    start_time: Option<i64>,
    #[serde(default)]
    samples: Option<Vec<u64>>,
    #[serde(default)]
    time_deltas: Option<Vec<i64>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawNode {
    id: u64,
    call_frame: RawCallFrame,
    #[serde(default)]
    hit_count: u64,
    #[serde(default)]
    children: Vec<u64>,
    /// Newer writers (the `.cpuprofile` of recent Node.js/V8 trace events) give the parent
    /// instead of children.
    #[serde(default)]
    parent: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCallFrame {
    #[serde(default)]
    function_name: String,
    #[serde(default)]
    url: String,
    #[serde(default = "minus_one")]
    line_number: i64,
}

fn minus_one() -> i64 {
    -1
}

/// An error about the array whose key is `key`, at that key's byte offset (or the start).
fn at_key(bytes: &[u8], key: &str, message: String) -> PluginError {
    let quoted = format!("\"{key}\"");
    let offset = find(bytes, quoted.as_bytes()).unwrap_or(0);
    PluginError::invalid_input(message).at_offset(offset as u64)
}

/// Parses a whole `.cpuprofile` into a profile (see the crate docs for the mapping).
pub fn parse_cpuprofile(bytes: &[u8]) -> Result<Profile, PluginError> {
    let raw: RawProfile = serde_json::from_slice(bytes).map_err(|e| {
        let what = if e.is_eof() {
            "the file ends early (truncated?)"
        } else {
            "expected a .cpuprofile JSON object (nodes, samples, timeDeltas)"
        };
        PluginError::invalid_input(format!("{what}: {e}"))
            .at_line(e.line() as u64, e.column().max(1) as u64)
    })?;
    let n = raw.nodes.len();

    // Node ids → indices (a BTreeMap: lookups only, but deterministic by construction).
    let mut index_of = BTreeMap::new();
    for (i, node) in raw.nodes.iter().enumerate() {
        if index_of.insert(node.id, i).is_some() {
            return Err(at_key(
                bytes,
                "nodes",
                format!("node id {} appears twice (expected unique ids)", node.id),
            ));
        }
    }
    let lookup = |id: u64, key: &str, what: &str| {
        index_of.get(&id).copied().ok_or_else(|| {
            at_key(
                bytes,
                key,
                format!("{what} refers to node {id}, which is not in `nodes`"),
            )
        })
    };

    // Parent of each node, from `children` lists or `parent` fields.
    let mut parent = vec![usize::MAX; n];
    for (i, node) in raw.nodes.iter().enumerate() {
        for &child in &node.children {
            let c = lookup(child, "children", &format!("a child of node {}", node.id))?;
            if parent[c] != usize::MAX && parent[c] != i {
                return Err(at_key(
                    bytes,
                    "children",
                    format!("node {child} has two parents (expected a tree)"),
                ));
            }
            parent[c] = i;
        }
    }
    for (i, node) in raw.nodes.iter().enumerate() {
        if let Some(p) = node.parent {
            let p = lookup(p, "parent", &format!("the parent of node {}", node.id))?;
            if parent[i] != usize::MAX && parent[i] != p {
                return Err(at_key(
                    bytes,
                    "parent",
                    format!("node {} has two parents (expected a tree)", node.id),
                ));
            }
            parent[i] = p;
        }
    }

    let mut b = ProfileBuilder::new();
    b.add_value_type("samples", "count", ValueKind::Weight);
    b.add_meta("source_format", "cpuprofile");

    // The stack of each node, computed iteratively (no recursion per frame): walk up to the
    // first node whose stack is known, then assign stacks on the way back down.
    const UNKNOWN: u32 = u32::MAX - 1;
    let mut stack_of = vec![UNKNOWN; n];
    let mut chain = Vec::new();
    for start in 0..n {
        chain.clear();
        let mut cur = start;
        while stack_of[cur] == UNKNOWN {
            chain.push(cur);
            if chain.len() > n {
                return Err(at_key(
                    bytes,
                    "nodes",
                    format!(
                        "node {} is its own ancestor (expected a tree)",
                        raw.nodes[start].id
                    ),
                ));
            }
            match parent[cur] {
                usize::MAX => break,
                p => cur = p,
            }
        }
        for &i in chain.iter().rev() {
            let prefix = match parent[i] {
                usize::MAX => NONE,
                p => stack_of[p],
            };
            let node = &raw.nodes[i];
            let f = &node.call_frame;
            stack_of[i] =
                if prefix == NONE && parent[i] == usize::MAX && f.function_name == "(root)" {
                    // The synthetic root: its children become the roots.
                    NONE
                } else {
                    let name = if f.function_name.is_empty() {
                        "(anonymous)"
                    } else {
                        &f.function_name
                    };
                    let file = (!f.url.is_empty()).then_some(f.url.as_str());
                    let line = u32::try_from(f.line_number + 1).ok().filter(|&l| l > 0);
                    let func = b.func_with(name, file, line, None);
                    let frame = b.frame(func);
                    b.stack(prefix, frame)
                };
        }
    }
    // A sample on the synthetic root itself (rare) is charged to a `(root)` frame.
    let root_stack = |b: &mut ProfileBuilder| {
        let f = b.func("(root)");
        let fr = b.frame(f);
        b.stack(NONE, fr)
    };

    match (&raw.samples, &raw.time_deltas) {
        (Some(samples), deltas) => {
            if let Some(d) = deltas {
                if d.len() != samples.len() {
                    return Err(at_key(
                        bytes,
                        "timeDeltas",
                        format!(
                            "timeDeltas has {} entries, samples has {} (expected one delta per sample)",
                            d.len(),
                            samples.len()
                        ),
                    ));
                }
            }
            let mut time = raw.start_time.unwrap_or(0);
            for (k, &id) in samples.iter().enumerate() {
                let i = lookup(id, "samples", &format!("sample {k}"))?;
                let mut stack = stack_of[i];
                if stack == NONE {
                    stack = root_stack(&mut b);
                }
                let t = match deltas {
                    Some(d) => {
                        time = time.checked_add(d[k]).ok_or_else(|| {
                            at_key(
                                bytes,
                                "timeDeltas",
                                format!("timeDeltas[{k}] overflows the sample time"),
                            )
                        })?;
                        Some(time)
                    }
                    None => None,
                };
                b.push_sample(stack, t, &[1]);
            }
            if deltas.is_some() {
                b.set_flags(flags::ORDERED);
            }
        }
        (None, _) => {
            for (i, node) in raw.nodes.iter().enumerate() {
                if node.hit_count == 0 {
                    continue;
                }
                let hits = i64::try_from(node.hit_count).map_err(|_| {
                    at_key(
                        bytes,
                        "hitCount",
                        format!("hitCount {} is too large", node.hit_count),
                    )
                })?;
                let mut stack = stack_of[i];
                if stack == NONE {
                    stack = root_stack(&mut b);
                }
                b.add_to_stack(stack, &[hits])?;
            }
        }
    }
    Ok(b.finish())
}

// The library profconv loads. With `crate-type = ["cdylib", "rlib"]` this crate is both the
// format and its export; that is fine as long as no other crate links it.
profconv_plugin::export_plugin!(
    name: "cpuprofile",
    version: env!("CARGO_PKG_VERSION"),
    formats: [CpuProfile],
);

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::Status;
    use profconv_plugin::ir::{CallTree, TreeOrder, TreeTextOptions, render_tree};

    const TINY: &[u8] = include_bytes!("../samples/tiny.cpuprofile");

    fn parse(bytes: &[u8]) -> Result<Profile, PluginError> {
        CpuProfile::parse(
            &mut Input::from_slice(bytes),
            &Options::default(),
            &mut Context::silent(),
        )
    }

    fn tree(p: &Profile) -> String {
        let view = p.view();
        let tree = CallTree::build(&view).unwrap();
        let opts = TreeTextOptions {
            order: TreeOrder::Name,
            ..Default::default()
        };
        render_tree(&view, &tree, &opts).unwrap()
    }

    #[test]
    fn tiny_sample_tree() {
        let p = parse(TINY).unwrap();
        assert_eq!(
            tree(&p),
            "(garbage collector) self=1 total=1\n\
             main self=0 total=4\n  \
               (anonymous) self=1 total=1\n  \
               parse self=3 total=3\n"
        );
    }

    #[test]
    fn samples_are_ordered_with_times() {
        let p = parse(TINY).unwrap();
        let v = p.view();
        assert!(v.is_ordered());
        assert_eq!(v.n_samples(), 5);
        assert_eq!(
            p.samples.time.as_deref(),
            Some(&[1100, 1200, 1350, 1450, 1500][..])
        );
    }

    #[test]
    fn functions_keep_url_and_line() {
        let p = parse(TINY).unwrap();
        let v = p.view();
        let f = (0..v.n_funcs() as u32)
            .find(|&f| v.func_name_str(f) == "parse")
            .unwrap();
        assert_eq!(
            v.strings.get(v.func_file[f as usize]),
            "file:///app/main.js"
        );
        assert_eq!(v.func_line[f as usize], 10);
    }

    #[test]
    fn hit_counts_without_samples() {
        let text = br#"{"nodes":[
            {"id":1,"callFrame":{"functionName":"(root)"},"children":[2]},
            {"id":2,"callFrame":{"functionName":"f"},"hitCount":7}]}"#;
        let p = parse(text).unwrap();
        assert!(!p.view().is_ordered());
        assert_eq!(tree(&p), "f self=7 total=7\n");
    }

    #[test]
    fn sniffs_its_own_format_only() {
        assert_eq!(sniff(TINY), 90);
        assert_eq!(sniff(b"main;parse 3\n"), 0);
        assert_eq!(sniff(br#"{"meta":{"version":55},"threads":[]}"#), 0);
    }

    #[test]
    fn truncated_input_names_line_and_column() {
        for cut in [1, TINY.len() / 3, TINY.len() / 2, TINY.len() - 2] {
            let e = parse(&TINY[..cut]).unwrap_err();
            assert_eq!(e.status, Status::INVALID_INPUT, "{e}");
            assert!(e.line.is_some() && e.column.is_some(), "{e}");
        }
        let e = parse(&TINY[..TINY.len() / 2]).unwrap_err();
        assert!(e.message.contains("truncated"), "{e}");
    }

    #[test]
    fn bad_references_name_the_offset() {
        let text = br#"{"nodes":[{"id":1,"callFrame":{"functionName":"f"}}],"samples":[1,9],"timeDeltas":[1,1]}"#;
        let e = parse(text).unwrap_err();
        assert_eq!(e.byte_offset, Some(53), "{e}");
        assert!(e.message.contains("node 9"), "{e}");

        let text = br#"{"nodes":[{"id":1,"callFrame":{},"children":[2]},{"id":2,"callFrame":{},"children":[1]}]}"#;
        let e = parse(text).unwrap_err();
        assert!(e.message.contains("ancestor"), "{e}");
        assert!(e.byte_offset.is_some());

        let text = br#"{"nodes":[],"samples":[1],"timeDeltas":[]}"#;
        let e = parse(text).unwrap_err();
        assert!(e.message.contains("one delta per sample"), "{e}");
    }

    #[test]
    fn deep_chains_do_not_recurse() {
        let depth = 100_000;
        let mut s = String::from("{\"nodes\":[");
        for i in 1..=depth {
            if i > 1 {
                s.push(',');
            }
            s.push_str(&format!(
                "{{\"id\":{i},\"callFrame\":{{\"functionName\":\"f{}\"}},\"children\":[{}]}}",
                i % 7,
                if i < depth {
                    (i + 1).to_string()
                } else {
                    String::new()
                }
            ));
        }
        s.push_str(&format!("],\"samples\":[{depth}],\"timeDeltas\":[1]}}"));
        let p = parse(s.as_bytes()).unwrap();
        assert_eq!(p.view().n_stacks(), depth);
    }
}
