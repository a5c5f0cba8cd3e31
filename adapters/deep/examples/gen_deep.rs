//! Writes a large random but valid Deep.data file, deterministic by seed, for benchmarks.
//!
//! ```sh
//! cargo run --release -p profconv-deep --example gen_deep -- --size 100M --seed 42 -o big.data
//! ```
//!
//! Options: `--size N[K|M|G]` (approximate output size, default 100M), `--seed N` (default 42),
//! `--version 8|9` (default 9), `--coverage none|static|dynamic` (default dynamic, like default
//! deep-profiling grades), `--procs N` (library procedures, default 30000), `-o PATH` (default
//! stdout).
//!
//! What it looks like: a runtime root (proc-static 1) whose callback slot calls a few
//! initialisers and `main`; `main` calls driver procedures, each of which calls many library
//! procedures; below them a random call tree whose branching shrinks with depth. Normal call sites
//! to a procedure that is already active link back to its proc-dynamic (recursion, including
//! self-loops); higher-order, method and special call sites always create fresh proc-dynamics
//! (as the runtime does around closures). Records are written in the runtime writer's order and
//! numbered as it numbers them: the dynamic part depth-first from the root (each proc-dynamic
//! right after the first call-site-dynamic reaching it), then every proc-static with its
//! call-site-statics. Measurements are random and consistent (`calls = exits + fails + excps −
//! redos`, header totals = sums). Generation stops adding calls once the size is reached.

use std::io::Write;

/// splitmix64: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    /// A heavy-tailed count >= 1.
    fn count(&mut self) -> u64 {
        let bits = self.below(14);
        1 + self.below(1 << bits)
    }
}

fn num(out: &mut Vec<u8>, v: u64) {
    let mut groups = [0u8; 10];
    let mut n = 0;
    let mut v = v;
    loop {
        groups[n] = (v & 0x7f) as u8;
        n += 1;
        v >>= 7;
        if v == 0 {
            break;
        }
    }
    for k in (0..n).rev() {
        out.push(groups[k] | if k > 0 { 0x80 } else { 0 });
    }
}

fn string(out: &mut Vec<u8>, s: &str) {
    num(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

const NORMAL: u8 = 0;
const SPECIAL: u8 = 1;
const HIGHER_ORDER: u8 = 2;
const METHOD: u8 = 3;
const CALLBACK: u8 = 4;

#[derive(Clone, Copy, PartialEq)]
enum Coverage {
    None,
    Static,
    Dynamic,
}

struct Site {
    kind: u8,
    /// Callee proc-static of a normal site.
    callee: u32,
    line: u32,
    goal: String,
}

struct Proc {
    /// 0 pred, 1 func, 2 special.
    tag: u8,
    module: u32,
    name: String,
    arity: u32,
    mode: u32,
    line: u32,
    interface: bool,
    sites: Vec<Site>,
    first_css: u32,
    coverage: Vec<(String, u8)>,
}

/// Where a call-site-dynamic goes: back to an active proc-dynamic, or to a new one of a
/// procedure.
#[derive(Clone, Copy)]
enum Target {
    Link(u32),
    New(u32),
}

struct Frame {
    ps: u32,
    depth: u32,
    /// The previous active proc-dynamic of `ps`, restored when this frame ends.
    saved_active: u32,
    pending: Vec<(u32, Target)>,
    next: usize,
}

struct Gen {
    rng: Rng,
    procs: Vec<Proc>,
    modules: Vec<String>,
    coverage: Coverage,
    out: Vec<u8>,
    budget: usize,
    next_pd: u32,
    next_csd: u32,
    active: Vec<u32>,
    quanta: u64,
    call_seqs: u64,
}

/// Driver procedures between `main` and the library.
const DRIVERS: u32 = 640;
const DRIVER_SITES: u32 = 256;
const MAX_DEPTH: u32 = 400;

impl Gen {
    fn statics(&mut self, n_lib: u32) {
        let n_modules = 300;
        self.modules = (0..n_modules).map(|k| format!("mod{k}")).collect();
        let mut procs = Vec::new();
        // 1: the runtime root; 2: main; 3..: drivers; then the library.
        procs.push(Proc {
            tag: 0,
            module: u32::MAX,
            name: "Mercury runtime".into(),
            arity: 0,
            mode: 0,
            line: 0,
            interface: true,
            sites: vec![Site {
                kind: CALLBACK,
                callee: 0,
                line: 0,
                goal: String::new(),
            }],
            first_css: 0,
            coverage: Vec::new(),
        });
        let first_driver = 3;
        let first_lib = first_driver + DRIVERS;
        let last_lib = first_lib + n_lib - 1;
        let main_sites = (0..DRIVERS)
            .map(|k| Site {
                kind: NORMAL,
                callee: first_driver + k,
                line: 20 + k,
                goal: format!("c{};", k + 1),
            })
            .collect();
        procs.push(Proc {
            tag: 0,
            module: 0,
            name: "main".into(),
            arity: 2,
            mode: 0,
            line: 10,
            interface: true,
            sites: main_sites,
            first_css: 0,
            coverage: Vec::new(),
        });
        for d in 0..DRIVERS {
            let sites = (0..DRIVER_SITES)
                .map(|k| Site {
                    kind: NORMAL,
                    callee: first_lib + self.rng.below(n_lib as u64) as u32,
                    line: 100 + k,
                    goal: format!("c{};", k + 1),
                })
                .collect();
            procs.push(Proc {
                tag: 0,
                module: 1 + d % 10,
                name: format!("driver_{d}"),
                arity: 3,
                mode: 0,
                line: 50,
                interface: false,
                sites,
                first_css: 0,
                coverage: vec![("c1;".into(), 0)],
            });
        }
        for k in 0..n_lib {
            let id = first_lib + k;
            let tag = match self.rng.below(20) {
                0 => 2,
                1..=5 => 1,
                _ => 0,
            };
            let n_sites = self.rng.below(7) as usize;
            let mut sites = Vec::with_capacity(n_sites);
            for s in 0..n_sites {
                let kind = match self.rng.below(20) {
                    0 => SPECIAL,
                    1 | 2 => HIGHER_ORDER,
                    3 => METHOD,
                    _ => NORMAL,
                };
                let callee = if kind != NORMAL {
                    0
                } else if self.rng.chance(0.1) {
                    id // a self-recursive call site
                } else {
                    first_lib + self.rng.below(n_lib as u64) as u32
                };
                sites.push(Site {
                    kind,
                    callee,
                    line: 1 + self.rng.below(3000) as u32,
                    goal: format!(
                        "c{};s{}-{};c{};",
                        s + 1,
                        1 + self.rng.below(3),
                        3,
                        1 + self.rng.below(9)
                    ),
                });
            }
            let coverage = (0..self.rng.below(7))
                .map(|c| (format!("s{}-3;c{};", 1 + c % 3, c + 1), (c % 2) as u8))
                .collect();
            procs.push(Proc {
                tag,
                module: self.rng.below(n_modules as u64) as u32,
                name: if tag == 2 {
                    ["__Unify__", "__Compare__", "__Index__"][k as usize % 3].into()
                } else {
                    format!(
                        "proc_{k}_{}",
                        ["loop", "walk", "build", "fold", "map"][k as usize % 5]
                    )
                },
                arity: 1 + self.rng.below(6) as u32,
                mode: (self.rng.below(10) == 0) as u32,
                line: 1 + self.rng.below(3000) as u32,
                interface: self.rng.chance(0.3),
                sites,
                first_css: 0,
                coverage,
            });
        }
        let mut next_css = 1;
        for p in &mut procs {
            p.first_css = next_css;
            next_css += p.sites.len() as u32;
        }
        debug_assert_eq!(procs.len() as u32, last_lib);
        self.procs = procs;
        self.active = vec![0; self.procs.len() + 1];
    }

    /// Decides the calls of a new proc-dynamic of `ps` and writes its record.
    fn open_pd(&mut self, ps: u32, depth: u32) -> Frame {
        let pd = self.next_pd;
        self.next_pd += 1;
        let saved_active = self.active[ps as usize];
        self.active[ps as usize] = pd;
        let over = self.out.len() >= self.budget;
        let n_lib = self.procs.len() as u64 - 2 - DRIVERS as u64;
        let first_lib = 3 + DRIVERS;
        // Branching: generous near the top, shrinking below.
        let p_call = if ps <= 2 + DRIVERS {
            1.0
        } else if depth < 9 {
            0.35
        } else {
            0.24
        };
        let mut pending = Vec::new();
        let out = &mut self.out;
        out.push(4);
        num(out, pd as u64);
        num(out, ps as u64);
        let p = &self.procs[ps as usize - 1];
        num(out, p.sites.len() as u64);
        if self.coverage == Coverage::Dynamic {
            num(out, p.coverage.len() as u64);
            for _ in &p.coverage {
                let c = self.rng.below(50);
                num(out, c);
            }
        }
        for (s, site) in p.sites.iter().enumerate() {
            out.push(site.kind);
            let call = !over && depth < MAX_DEPTH && self.rng.chance(p_call);
            if site.kind == NORMAL {
                if call {
                    let csd = self.next_csd;
                    self.next_csd += 1;
                    num(out, csd as u64);
                    let a = self.active[site.callee as usize];
                    let t = if a != 0 {
                        Target::Link(a)
                    } else {
                        Target::New(site.callee)
                    };
                    pending.push((csd, t));
                } else {
                    out.push(0);
                }
            } else {
                if ps == 1 && s == 0 {
                    // The root's callback slot: a few initialisers and main (newest first).
                    for callee in [first_lib + 1, 2, first_lib, first_lib + 2] {
                        let csd = self.next_csd;
                        self.next_csd += 1;
                        num(out, csd as u64);
                        pending.push((csd, Target::New(callee)));
                    }
                } else if call {
                    let n = 1 + self.rng.below(3);
                    for _ in 0..n {
                        let csd = self.next_csd;
                        self.next_csd += 1;
                        num(out, csd as u64);
                        let callee = first_lib + self.rng.below(n_lib) as u32;
                        pending.push((csd, Target::New(callee)));
                    }
                }
                out.push(0);
            }
        }
        Frame {
            ps,
            depth,
            saved_active,
            pending,
            next: 0,
        }
    }

    fn write_csd(&mut self, csd: u32, callee_pd: u32, recursive: bool) {
        let rng = &mut self.rng;
        let calls = if recursive {
            rng.count() * 4
        } else {
            rng.count()
        };
        let (mut exits, mut fails, mut redos, mut excps) = (calls, 0, 0, 0);
        if rng.chance(0.1) {
            fails = rng.below(calls + 1);
            exits = calls - fails;
        }
        if rng.chance(0.02) {
            redos = rng.below(4);
            exits += redos;
        }
        if rng.chance(0.01) && exits > 0 {
            excps = 1;
            exits -= 1;
        }
        let quanta = if rng.chance(0.08) { rng.below(20) } else { 0 };
        let call_seqs = calls;
        let allocs = if rng.chance(0.3) {
            rng.below(calls * 3 + 1)
        } else {
            0
        };
        let words = allocs * (1 + rng.below(8));
        self.quanta += quanta;
        self.call_seqs += call_seqs;
        let values = [
            (0x0002u64, exits),
            (0x0004, fails),
            (0x0040, redos),
            (0x0080, excps),
            (0x0100, quanta),
            (0x0008, call_seqs),
            (0x0010, allocs),
            (0x0020, words),
        ];
        let mask = values.iter().filter(|v| v.1 != 0).fold(0, |m, v| m | v.0);
        let out = &mut self.out;
        out.push(2);
        num(out, csd as u64);
        num(out, callee_pd as u64);
        num(out, mask);
        for (_, v) in values.iter().filter(|v| v.1 != 0) {
            num(out, *v);
        }
    }

    fn dynamic(&mut self) {
        let root = self.open_pd(1, 0);
        let mut stack = vec![root];
        while let Some(top) = stack.last_mut() {
            if top.next >= top.pending.len() {
                let f = stack.pop().expect("a frame");
                self.active[f.ps as usize] = f.saved_active;
                continue;
            }
            let (csd, target) = top.pending[top.next];
            top.next += 1;
            let depth = top.depth + 1;
            match target {
                Target::Link(pd) => self.write_csd(csd, pd, true),
                Target::New(ps) => {
                    let pd = self.next_pd;
                    self.write_csd(csd, pd, false);
                    let frame = self.open_pd(ps, depth);
                    stack.push(frame);
                }
            }
        }
    }

    fn write_statics(&mut self, version: u32) {
        for (k, p) in self.procs.iter().enumerate() {
            let out = &mut self.out;
            out.push(3);
            num(out, k as u64 + 1);
            let module = if p.module == u32::MAX {
                "Mercury runtime"
            } else {
                &self.modules[p.module as usize]
            };
            let file = if p.module == u32::MAX {
                "Mercury runtime".to_string()
            } else {
                format!("{module}.m")
            };
            out.push(p.tag);
            if p.tag == 2 {
                string(out, &format!("t{k}"));
                string(out, module);
                string(out, module);
                string(out, &p.name);
            } else {
                string(out, module);
                string(out, module);
                string(out, &p.name);
            }
            num(out, p.arity as u64);
            num(out, p.mode as u64);
            string(out, &file);
            num(out, p.line as u64);
            out.push(p.interface as u8);
            num(out, p.sites.len() as u64);
            for s in 0..p.sites.len() {
                num(out, (p.first_css + s as u32) as u64);
            }
            if self.coverage != Coverage::None {
                num(out, p.coverage.len() as u64);
                for (goal, cp_type) in &p.coverage {
                    string(out, goal);
                    num(out, *cp_type as u64);
                    if self.coverage == Coverage::Static {
                        num(out, 7);
                    }
                }
            }
            for (s, site) in p.sites.iter().enumerate() {
                out.push(1);
                num(out, (p.first_css + s as u32) as u64);
                out.push(site.kind);
                if site.kind == NORMAL {
                    num(out, site.callee as u64);
                    string(out, "");
                }
                if version >= 9 {
                    string(out, if p.module == u32::MAX { &file } else { "" });
                }
                num(out, site.line as u64);
                string(out, &site.goal);
            }
        }
    }
}

fn parse_size(s: &str) -> Option<usize> {
    let (digits, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok().map(|d| d * mult)
}

fn main() {
    let mut size = 100usize << 20;
    let mut seed = 42u64;
    let mut version = 9u32;
    let mut coverage = Coverage::Dynamic;
    let mut n_lib = 30_000u32;
    let mut output: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--size" => size = parse_size(&value()).unwrap_or_else(|| usage("bad --size")),
            "--seed" => seed = value().parse().unwrap_or_else(|_| usage("bad --seed")),
            "--version" => {
                version = value().parse().unwrap_or_else(|_| usage("bad --version"));
            }
            "--procs" => n_lib = value().parse().unwrap_or_else(|_| usage("bad --procs")),
            "--coverage" => {
                coverage = match value().as_str() {
                    "none" => Coverage::None,
                    "static" => Coverage::Static,
                    "dynamic" => Coverage::Dynamic,
                    _ => usage("bad --coverage"),
                }
            }
            "-o" => output = Some(value()),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let n_lib = n_lib.max(8);
    let mut g = Gen {
        rng: Rng(seed),
        procs: Vec::new(),
        modules: Vec::new(),
        coverage,
        out: Vec::with_capacity(size + (size >> 4)),
        budget: 0,
        next_pd: 1,
        next_csd: 1,
        active: Vec::new(),
        quanta: 0,
        call_seqs: 0,
    };
    g.statics(n_lib);
    // Header with placeholder counts, patched at the end as the runtime's writer does.
    g.out
        .extend(format!("Mercury deep profiler data version {version}\n").bytes());
    string(&mut g.out, "./bench_program");
    let flags: u64 = 8
        | (1 << 8)
        | match coverage {
            Coverage::None => 0,
            Coverage::Static => 1 << 12,
            Coverage::Dynamic => 2 << 12,
        };
    g.out.extend(flags.to_le_bytes());
    let counts_at = g.out.len();
    g.out.extend([0u8; 32]);
    let tail_at = g.out.len();
    // Static part size, to know the dynamic part's budget: write it once to measure.
    let before = g.out.len();
    g.write_statics(version);
    let static_len = g.out.len() - before;
    g.out.truncate(before);
    g.budget = size.saturating_sub(static_len);
    g.dynamic();
    g.write_statics(version);
    let n_css: u32 = g.procs.iter().map(|p| p.sites.len() as u32).sum();
    let counts = [
        (g.next_csd - 1) as u64,
        n_css as u64,
        (g.next_pd - 1) as u64,
        g.procs.len() as u64,
    ];
    for (k, c) in counts.iter().enumerate() {
        g.out[counts_at + 8 * k..counts_at + 8 * k + 8].copy_from_slice(&c.to_le_bytes());
    }
    // The variable-length header fields go between the counts and the records.
    let mut tail = Vec::new();
    num(&mut tail, 100);
    num(&mut tail, g.quanta / 20);
    num(&mut tail, g.quanta);
    num(&mut tail, g.call_seqs);
    num(&mut tail, 1);
    g.out.splice(tail_at..tail_at, tail);
    let result = match &output {
        Some(path) => std::fs::write(path, &g.out),
        None => std::io::stdout().lock().write_all(&g.out),
    };
    if let Err(e) = result {
        eprintln!("gen_deep: cannot write: {e}");
        std::process::exit(1);
    }
    eprintln!(
        "gen_deep: {} bytes, {} proc-dynamics, {} call-site-dynamics, {} proc-statics, {} call-site-statics",
        g.out.len(),
        counts[2],
        counts[0],
        counts[3],
        counts[1]
    );
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "gen_deep: {msg}\nusage: gen_deep [--size 100M] [--seed 42] [--version 8|9] [--coverage none|static|dynamic] [--procs N] [-o PATH]"
    );
    std::process::exit(2)
}
