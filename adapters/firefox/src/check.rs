//! Independent checkers of written files, for tests and for inspecting output: they read the
//! JSON back as untyped values (not through the emitters' structs), check the structure the
//! viewers rely on, and rebuild the call tree the viewer would show.
//!
//! * [`check_firefox`]: a v55 processed profile: every required table and column present,
//!   columns as long as the table's `length`, every index in range, stack prefixes before their
//!   children, non-decreasing sample times, known weight types and category colours.
//! * [`check_speedscope`]: a speedscope file: schema, frames, sampled profiles (stack indices,
//!   weights) and evented profiles (non-decreasing, balanced open/close events).
//!
//! Both return the call tree merged over threads (profiles), with self and total values in the
//! file's units, as [`TreeNode`]s sorted by path.

// The tables are columnar: one row index walks several columns at once.
#![allow(clippy::needless_range_loop)]

pub use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

/// One call node of a rebuilt tree: the function names from the root, and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeNode {
    /// Function names from the root down to the node.
    pub path: Vec<String>,
    /// Sum of the weights of the samples on this node (for evented profiles: the time in it,
    /// minus the time in its callees).
    pub self_value: f64,
    /// Self plus the totals of the children.
    pub total: f64,
}

/// What [`check_firefox`] found.
#[derive(Clone, Debug)]
pub struct FirefoxSummary {
    /// `meta.preprocessedProfileVersion`.
    pub version: u64,
    /// Thread names, in order.
    pub threads: Vec<String>,
    /// Each thread's `samples.weightType`.
    pub weight_types: Vec<String>,
    /// Each thread's number of samples (including `null`-stack ones).
    pub samples: Vec<usize>,
    /// Category names.
    pub categories: Vec<String>,
    /// The call tree merged over threads.
    pub tree: Vec<TreeNode>,
}

/// What [`check_speedscope`] found.
#[derive(Clone, Debug)]
pub struct SpeedscopeSummary {
    /// Per profile: name, type (`evented`/`sampled`), unit.
    pub profiles: Vec<(String, String, String)>,
    /// Number of shared frames.
    pub frames: usize,
    /// The call tree merged over profiles.
    pub tree: Vec<TreeNode>,
}

/// Decompresses a gzip stream; checks the magic bytes first.
pub fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, String> {
    if !bytes.starts_with(&[0x1f, 0x8b, 0x08]) {
        return Err(format!(
            "not gzip: the file starts with {:02x?}",
            &bytes[..bytes.len().min(3)]
        ));
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| format!("gzip: {e}"))?;
    Ok(out)
}

type R<T> = Result<T, String>;

/// Parses JSON into an untyped [`Value`] (for tests that look at single fields).
pub fn parse_json(bytes: &[u8]) -> R<Value> {
    serde_json::from_slice(bytes).map_err(|e| format!("JSON: {e}"))
}

fn field<'v>(v: &'v Value, key: &str, ctx: &str) -> R<&'v Value> {
    v.get(key).ok_or_else(|| format!("{ctx}: missing `{key}`"))
}

fn array<'v>(v: &'v Value, key: &str, ctx: &str) -> R<&'v Vec<Value>> {
    field(v, key, ctx)?
        .as_array()
        .ok_or_else(|| format!("{ctx}.{key}: not an array"))
}

fn uint(v: &Value, ctx: &str) -> R<u64> {
    v.as_u64()
        .ok_or_else(|| format!("{ctx}: expected a non-negative integer, got {v}"))
}

/// An index column entry: `null` (when allowed) or an integer below `bound`.
fn index(v: &Value, bound: usize, nullable: bool, ctx: &str) -> R<Option<usize>> {
    if v.is_null() {
        return if nullable {
            Ok(None)
        } else {
            Err(format!("{ctx}: null where an index is required"))
        };
    }
    let i = uint(v, ctx)? as usize;
    if i >= bound {
        return Err(format!("{ctx}: index {i} out of range (< {bound})"));
    }
    Ok(Some(i))
}

/// Checks a table: every column present, an array of exactly `length` entries.
fn table<'v>(t: &'v Value, columns: &[&str], ctx: &str) -> R<(usize, Vec<&'v Vec<Value>>)> {
    let len = uint(field(t, "length", ctx)?, &format!("{ctx}.length"))? as usize;
    let mut cols = Vec::with_capacity(columns.len());
    for c in columns {
        let col = array(t, c, ctx)?;
        if col.len() != len {
            return Err(format!(
                "{ctx}.{c} has {} entries but length is {len}",
                col.len()
            ));
        }
        cols.push(col);
    }
    Ok((len, cols))
}

const COLORS: &[&str] = &[
    "transparent",
    "purple",
    "green",
    "orange",
    "yellow",
    "lightblue",
    "blue",
    "brown",
    "magenta",
    "red",
    "lightred",
    "darkgrey",
    "grey",
];

/// Checks a processed profile (uncompressed JSON) against the v55 rules of
/// `shared/formats/firefox-profile.md` and rebuilds its call tree.
pub fn check_firefox(json: &[u8]) -> R<FirefoxSummary> {
    let root: Value = serde_json::from_slice(json).map_err(|e| format!("JSON: {e}"))?;
    let meta = field(&root, "meta", "profile")?;
    let version = uint(
        field(meta, "preprocessedProfileVersion", "meta")?,
        "meta.preprocessedProfileVersion",
    )?;
    let interval = field(meta, "interval", "meta")?
        .as_f64()
        .filter(|i| *i > 0.0)
        .ok_or("meta.interval: expected a positive number")?;
    let _ = interval;
    array(meta, "markerSchema", "meta")?;
    for key in [
        "startTime",
        "processType",
        "product",
        "stackwalk",
        "version",
        "symbolicated",
    ] {
        field(meta, key, "meta")?;
    }
    let cats = array(meta, "categories", "meta")?;
    let mut categories = Vec::new();
    let mut subcats = Vec::new();
    for (i, c) in cats.iter().enumerate() {
        let ctx = format!("meta.categories[{i}]");
        let name = field(c, "name", &ctx)?
            .as_str()
            .ok_or(format!("{ctx}.name: not a string"))?;
        let color = field(c, "color", &ctx)?.as_str().unwrap_or("");
        if !COLORS.contains(&color) {
            return Err(format!("{ctx}.color: unknown colour '{color}'"));
        }
        let subs = array(c, "subcategories", &ctx)?;
        if subs.is_empty() {
            return Err(format!("{ctx}.subcategories is empty"));
        }
        categories.push(name.to_string());
        subcats.push(subs.len());
    }
    if cats
        .first()
        .and_then(|c| c.get("color"))
        .and_then(Value::as_str)
        != Some("grey")
    {
        return Err("meta.categories[0] must be the grey default category".into());
    }
    array(&root, "libs", "profile")?;
    let threads = array(&root, "threads", "profile")?;
    if threads.is_empty() {
        return Err("profile.threads is empty".into());
    }
    let mut merged = Merged::default();
    let mut summary = FirefoxSummary {
        version,
        threads: Vec::new(),
        weight_types: Vec::new(),
        samples: Vec::new(),
        categories,
        tree: Vec::new(),
    };
    for (ti, t) in threads.iter().enumerate() {
        let ctx = format!("threads[{ti}]");
        let name = field(t, "name", &ctx)?
            .as_str()
            .ok_or(format!("{ctx}.name: not a string"))?;
        for key in [
            "processType",
            "pid",
            "tid",
            "isMainThread",
            "processStartupTime",
            "processShutdownTime",
            "registerTime",
            "unregisterTime",
        ] {
            field(t, key, &ctx)?;
        }
        if !field(t, "pid", &ctx)?.is_string() {
            return Err(format!("{ctx}.pid: must be a string since v47"));
        }
        array(t, "pausedRanges", &ctx)?;
        if t.get("stringTable").is_some() {
            return Err(format!("{ctx}: a processed profile has no stringTable"));
        }
        let strings = array(t, "stringArray", &ctx)?;
        let mut str_of = Vec::with_capacity(strings.len());
        for (i, s) in strings.iter().enumerate() {
            str_of.push(
                s.as_str()
                    .ok_or(format!("{ctx}.stringArray[{i}]: not a string"))?,
            );
        }
        let ns = strings.len();

        let rctx = format!("{ctx}.resourceTable");
        let (nres, rc) = table(
            field(t, "resourceTable", &ctx)?,
            &["lib", "name", "host", "type"],
            &rctx,
        )?;
        for r in 0..nres {
            index(&rc[1][r], ns, false, &format!("{rctx}.name[{r}]"))?;
        }
        let nctx = format!("{ctx}.nativeSymbols");
        table(
            field(t, "nativeSymbols", &ctx)?,
            &["libIndex", "address", "name", "functionSize"],
            &nctx,
        )?;
        let mctx = format!("{ctx}.markers");
        table(
            field(t, "markers", &ctx)?,
            &["data", "name", "startTime", "endTime", "phase", "category"],
            &mctx,
        )?;

        let fctx = format!("{ctx}.funcTable");
        let (nfunc, fc) = table(
            field(t, "funcTable", &ctx)?,
            &[
                "name",
                "isJS",
                "relevantForJS",
                "resource",
                "fileName",
                "lineNumber",
                "columnNumber",
            ],
            &fctx,
        )?;
        // A func's identity: name, file, line, resource name.
        let mut func_key = Vec::with_capacity(nfunc);
        for f in 0..nfunc {
            let c = |k: &str| format!("{fctx}.{k}[{f}]");
            let name = index(&fc[0][f], ns, false, &c("name"))?.unwrap_or(0);
            for k in [1, 2] {
                if !fc[k][f].is_boolean() {
                    return Err(format!("{}: not a boolean", c("isJS/relevantForJS")));
                }
            }
            let res = fc[3][f]
                .as_i64()
                .ok_or(format!("{}: not an integer", c("resource")))?;
            if res != -1 && (res < 0 || res as usize >= nres) {
                return Err(format!("{}: {res} out of range", c("resource")));
            }
            let file = index(&fc[4][f], ns, true, &c("fileName"))?;
            let line = fc[5][f].as_u64();
            if !fc[5][f].is_null() && line.is_none() {
                return Err(format!("{}: not a line number", c("lineNumber")));
            }
            let res_name = (res >= 0)
                .then(|| rc[1][res as usize].as_u64())
                .flatten()
                .map(|s| str_of[s as usize]);
            func_key.push(format!(
                "{}\u{0}{}\u{0}{}\u{0}{}",
                str_of[name],
                file.map_or("", |s| str_of[s]),
                line.map_or(String::new(), |l| l.to_string()),
                res_name.unwrap_or("")
            ));
        }
        let func_name: Vec<&str> = (0..nfunc)
            .map(|f| str_of[fc[0][f].as_u64().unwrap_or(0) as usize])
            .collect();

        let frctx = format!("{ctx}.frameTable");
        let frame_table = field(t, "frameTable", &ctx)?;
        for forbidden in ["implementation", "lib", "originalLocation"] {
            if frame_table.get(forbidden).is_some() {
                return Err(format!("{frctx}.{forbidden}: not a v55 column"));
            }
        }
        let (nframe, frc) = table(
            frame_table,
            &[
                "func",
                "category",
                "subcategory",
                "address",
                "inlineDepth",
                "nativeSymbol",
                "innerWindowID",
                "line",
                "column",
            ],
            &frctx,
        )?;
        let mut frame_func = Vec::with_capacity(nframe);
        for fr in 0..nframe {
            let c = |k: &str| format!("{frctx}.{k}[{fr}]");
            frame_func.push(index(&frc[0][fr], nfunc, false, &c("func"))?.unwrap_or(0));
            let cat = index(&frc[1][fr], cats.len(), true, &c("category"))?;
            if let Some(cat) = cat {
                index(&frc[2][fr], subcats[cat], false, &c("subcategory"))?;
            }
            if frc[3][fr].as_i64().is_none() && frc[3][fr].as_u64().is_none() {
                return Err(format!("{}: not an integer", c("address")));
            }
            uint(&frc[4][fr], &c("inlineDepth"))?;
            uint(&frc[6][fr], &c("innerWindowID"))?;
            if !frc[7][fr].is_null() {
                uint(&frc[7][fr], &c("line"))?;
            }
        }

        let sctx = format!("{ctx}.stackTable");
        let (nstack, sc) = table(field(t, "stackTable", &ctx)?, &["frame", "prefix"], &sctx)?;
        let mut stack_node = Vec::with_capacity(nstack);
        for s in 0..nstack {
            let frame =
                index(&sc[0][s], nframe, false, &format!("{sctx}.frame[{s}]"))?.unwrap_or(0);
            let prefix = index(&sc[1][s], nstack, true, &format!("{sctx}.prefix[{s}]"))?;
            if prefix.is_some_and(|p| p >= s) {
                return Err(format!(
                    "{sctx}.prefix[{s}] = {prefix:?}: a prefix must come before its child"
                ));
            }
            let parent = prefix.map(|p| stack_node[p]);
            let f = frame_func[frame];
            stack_node.push(merged.child(parent, &func_key[f], func_name[f]));
        }

        let smctx = format!("{ctx}.samples");
        let samples = field(t, "samples", &ctx)?;
        let time_col = if samples.get("time").is_some() {
            "time"
        } else {
            "timeDeltas"
        };
        let (nsamples, smc) = table(samples, &["stack", time_col], &smctx)?;
        let weight_type = samples
            .get("weightType")
            .and_then(Value::as_str)
            .unwrap_or("samples");
        if !["samples", "tracing-ms", "bytes"].contains(&weight_type) {
            return Err(format!("{smctx}.weightType: unknown '{weight_type}'"));
        }
        let weights = match samples.get("weight") {
            None | Some(Value::Null) => None,
            Some(w) => {
                let w = w
                    .as_array()
                    .ok_or(format!("{smctx}.weight: not an array"))?;
                if w.len() != nsamples {
                    return Err(format!(
                        "{smctx}.weight has {} entries but length is {nsamples}",
                        w.len()
                    ));
                }
                Some(w)
            }
        };
        let mut prev_time = f64::NEG_INFINITY;
        let mut time = 0.0;
        for i in 0..nsamples {
            let tv = smc[1][i]
                .as_f64()
                .ok_or(format!("{smctx}.{time_col}[{i}]: not a number"))?;
            time = if time_col == "time" { tv } else { time + tv };
            if time < prev_time {
                return Err(format!(
                    "{smctx}.{time_col}[{i}]: time {time} is before the previous sample's {prev_time}"
                ));
            }
            prev_time = time;
            let w = match weights {
                Some(w) => w[i]
                    .as_f64()
                    .ok_or(format!("{smctx}.weight[{i}]: not a number"))?,
                None => 1.0,
            };
            if let Some(s) = index(&smc[0][i], nstack, true, &format!("{smctx}.stack[{i}]"))? {
                merged.add(stack_node[s], w);
            }
        }
        summary.threads.push(name.to_string());
        summary.weight_types.push(weight_type.to_string());
        summary.samples.push(nsamples);
    }
    if summary.version == 0 {
        return Err("meta.preprocessedProfileVersion is 0".into());
    }
    summary.tree = merged.finish();
    Ok(summary)
}

/// Checks a speedscope file and rebuilds its call tree (over all profiles).
pub fn check_speedscope(json: &[u8]) -> R<SpeedscopeSummary> {
    let root: Value = serde_json::from_slice(json).map_err(|e| format!("JSON: {e}"))?;
    let schema = field(&root, "$schema", "file")?.as_str();
    if schema != Some("https://www.speedscope.app/file-format-schema.json") {
        return Err(format!("$schema: unexpected {schema:?}"));
    }
    let frames = array(field(&root, "shared", "file")?, "frames", "shared")?;
    let mut names = Vec::with_capacity(frames.len());
    for (i, f) in frames.iter().enumerate() {
        names.push(
            field(f, "name", &format!("shared.frames[{i}]"))?
                .as_str()
                .ok_or(format!("shared.frames[{i}].name: not a string"))?,
        );
        if let Some(l) = f.get("line") {
            uint(l, &format!("shared.frames[{i}].line"))?;
        }
    }
    let keys: Vec<String> = (0..frames.len()).map(|i| i.to_string()).collect();
    let mut merged = Merged::default();
    let mut profiles = Vec::new();
    for (pi, p) in array(&root, "profiles", "file")?.iter().enumerate() {
        let ctx = format!("profiles[{pi}]");
        let kind = field(p, "type", &ctx)?.as_str().unwrap_or("");
        let name = field(p, "name", &ctx)?.as_str().unwrap_or("");
        let unit = field(p, "unit", &ctx)?.as_str().unwrap_or("");
        if ![
            "none",
            "nanoseconds",
            "microseconds",
            "milliseconds",
            "seconds",
            "bytes",
        ]
        .contains(&unit)
        {
            return Err(format!("{ctx}.unit: unknown '{unit}'"));
        }
        let start = field(p, "startValue", &ctx)?
            .as_f64()
            .ok_or(format!("{ctx}.startValue: not a number"))?;
        let end = field(p, "endValue", &ctx)?
            .as_f64()
            .ok_or(format!("{ctx}.endValue: not a number"))?;
        if end < start {
            return Err(format!("{ctx}: endValue {end} < startValue {start}"));
        }
        match kind {
            "sampled" => {
                let samples = array(p, "samples", &ctx)?;
                let weights = array(p, "weights", &ctx)?;
                if samples.len() != weights.len() {
                    return Err(format!(
                        "{ctx}: {} samples but {} weights",
                        samples.len(),
                        weights.len()
                    ));
                }
                let mut sum = 0.0;
                for (i, (s, w)) in samples.iter().zip(weights).enumerate() {
                    let w = w
                        .as_f64()
                        .filter(|w| *w >= 0.0)
                        .ok_or(format!("{ctx}.weights[{i}]: not a non-negative number"))?;
                    sum += w;
                    let s = s
                        .as_array()
                        .ok_or(format!("{ctx}.samples[{i}]: not an array"))?;
                    let mut node = None;
                    for (k, f) in s.iter().enumerate() {
                        let f = index(f, frames.len(), false, &format!("{ctx}.samples[{i}][{k}]"))?
                            .unwrap_or(0);
                        node = Some(merged.child(node, &keys[f], names[f]));
                    }
                    if let Some(n) = node {
                        merged.add(n, w);
                    }
                }
                if sum > end - start + 1e-9 * sum.abs() {
                    return Err(format!(
                        "{ctx}: weights add up to {sum}, more than endValue - startValue"
                    ));
                }
            }
            "evented" => {
                let events = array(p, "events", &ctx)?;
                // Open frames: (node, frame, opened at, time in callees).
                let mut open: Vec<(usize, usize, f64, f64)> = Vec::new();
                let mut prev = start;
                for (i, e) in events.iter().enumerate() {
                    let ectx = format!("{ctx}.events[{i}]");
                    let at = field(e, "at", &ectx)?
                        .as_f64()
                        .ok_or(format!("{ectx}.at: not a number"))?;
                    if at < prev {
                        return Err(format!("{ectx}: at {at} is before {prev}"));
                    }
                    if at > end {
                        return Err(format!("{ectx}: at {at} is after endValue {end}"));
                    }
                    prev = at;
                    let f =
                        index(field(e, "frame", &ectx)?, frames.len(), false, &ectx)?.unwrap_or(0);
                    match field(e, "type", &ectx)?.as_str() {
                        Some("O") => {
                            let parent = open.last().map(|o| o.0);
                            open.push((merged.child(parent, &keys[f], names[f]), f, at, 0.0));
                        }
                        Some("C") => {
                            let (node, frame, opened, inner) = open
                                .pop()
                                .ok_or(format!("{ectx}: closes with nothing open"))?;
                            if frame != f {
                                return Err(format!(
                                    "{ectx}: closes frame {f} but frame {frame} is on top"
                                ));
                            }
                            let d = at - opened;
                            merged.add(node, d - inner);
                            if let Some(parent) = open.last_mut() {
                                parent.3 += d;
                            }
                        }
                        other => return Err(format!("{ectx}.type: unexpected {other:?}")),
                    }
                }
                if !open.is_empty() {
                    return Err(format!("{ctx}: {} frames never closed", open.len()));
                }
            }
            other => return Err(format!("{ctx}.type: unexpected '{other}'")),
        }
        profiles.push((name.to_string(), kind.to_string(), unit.to_string()));
    }
    Ok(SpeedscopeSummary {
        profiles,
        frames: frames.len(),
        tree: merged.finish(),
    })
}

/// A call tree merged by function identity, as the checkers rebuild it.
#[derive(Default)]
struct Merged {
    index: BTreeMap<(usize, String), usize>,
    parent: Vec<Option<usize>>,
    name: Vec<String>,
    self_value: Vec<f64>,
}

impl Merged {
    fn child(&mut self, parent: Option<usize>, key: &str, name: &str) -> usize {
        let k = (parent.map_or(usize::MAX, |p| p), key.to_string());
        if let Some(&n) = self.index.get(&k) {
            return n;
        }
        let n = self.parent.len();
        self.parent.push(parent);
        self.name.push(name.to_string());
        self.self_value.push(0.0);
        self.index.insert(k, n);
        n
    }

    fn add(&mut self, node: usize, v: f64) {
        self.self_value[node] += v;
    }

    fn finish(self) -> Vec<TreeNode> {
        let n = self.parent.len();
        let mut total = self.self_value.clone();
        // Nodes are created parent first: one backward pass sums the totals.
        for i in (0..n).rev() {
            if let Some(p) = self.parent[i] {
                total[p] += total[i];
            }
        }
        let mut paths: Vec<Vec<String>> = Vec::with_capacity(n);
        for i in 0..n {
            let mut path = match self.parent[i] {
                Some(p) => paths[p].clone(),
                None => Vec::new(),
            };
            path.push(self.name[i].clone());
            paths.push(path);
        }
        let mut nodes: Vec<TreeNode> = (0..n)
            .map(|i| TreeNode {
                path: paths[i].clone(),
                self_value: self.self_value[i],
                total: total[i],
            })
            .collect();
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        nodes
    }
}

/// The tree as text, one node per line, two spaces of indent per depth, in path order:
/// `NAME self=S total=T`.
pub fn tree_text(nodes: &[TreeNode]) -> String {
    let mut out = String::new();
    for n in nodes {
        for _ in 1..n.path.len() {
            out.push_str("  ");
        }
        out.push_str(n.path.last().map_or("", |s| s.as_str()));
        out.push_str(&format!(
            " self={} total={}\n",
            fmt_num(n.self_value),
            fmt_num(n.total)
        ));
    }
    out
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}
