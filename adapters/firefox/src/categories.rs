//! Firefox Profiler categories: what colours a frame in the activity graph, the stack chart and
//! the flame graph.
//!
//! Category 0 is always `Other` (grey): the profiler's default, used for root frames without a
//! category. The rest depends on what the profile is:
//!
//! * **PVM** (`source_format` metadata `pvm`, or a function named `kernel_run` or
//!   `%interpreter(...)` exists): `Interpreter` (purple) for the phases `%interpreter(PHASE)`,
//!   one subcategory per phase; `Kernel` (blue) for `kernel_run`. Every other frame has no
//!   category of its own and inherits its caller's, so a function called from `kernel_run` is
//!   `Kernel` (and a trace with neither is all `Other`).
//! * **Deep.data** (`source_format` metadata `deep`): by the Mercury module of the procedure (the
//!   func's resource, else the `module.` prefix of its name): `Mercury runtime` (brown) for the
//!   runtime's pseudo-procedure and the builtin modules, `Mercury library` (lightblue) for the
//!   standard library's modules, `User code` (yellow) for the rest.
//! * **Anything else**: `User` (yellow); `Kernel` (orange) for names ending in `_[k]` and `JIT`
//!   (green) for `_[j]` (perf's and FlameGraph's annotations), when present.

use profconv_plugin::Annotation;
use profconv_plugin::ir::{NONE, ProfileRef};
use serde::Serialize;

/// One entry of `meta.categories`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Category {
    /// Shown in the legend and tooltips.
    pub name: String,
    /// One of the profiler's colour names.
    pub color: &'static str,
    /// At least one; `Other` first.
    pub subcategories: Vec<String>,
}

/// The categories of a profile and each func's (category, subcategory), if it has its own.
#[derive(Clone, Debug)]
pub struct Categories {
    /// `meta.categories`.
    pub list: Vec<Category>,
    /// Per IR func: its category and subcategory, or `None` to inherit the caller's.
    pub of_func: Vec<Option<(u32, u32)>>,
}

fn category(name: &str, color: &'static str) -> Category {
    Category {
        name: name.to_string(),
        color,
        subcategories: vec!["Other".to_string()],
    }
}

/// What kind of profile this is, for categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// PVM phases and kernel runs.
    Pvm,
    /// Mercury deep profiles.
    Deep,
    /// Anything else.
    Generic,
}

/// The phase of a PVM interpreter function name: `%interpreter(decode)` → `decode`.
fn pvm_phase(name: &str) -> Option<&str> {
    name.strip_prefix("%interpreter(")?.strip_suffix(')')
}

/// Recognises the kind of a profile.
pub fn kind(p: &ProfileRef<'_>) -> Kind {
    let source = p.meta("source_format").unwrap_or("");
    if source.contains("deep") {
        return Kind::Deep;
    }
    let pvm_names = (0..p.n_funcs() as u32).any(|f| {
        let n = p.func_name_str(f);
        n == "kernel_run" || pvm_phase(n).is_some()
    });
    if source.contains("pvm") || pvm_names {
        Kind::Pvm
    } else {
        Kind::Generic
    }
}

/// Builds the categories of `p`.
pub fn categorize(p: &ProfileRef<'_>) -> Categories {
    let mut list = vec![category("Other", "grey")];
    let nf = p.n_funcs();
    let mut of_func = vec![None; nf];
    match kind(p) {
        Kind::Pvm => {
            let mut interp: Option<u32> = None;
            let mut kernel: Option<u32> = None;
            for (f, slot) in of_func.iter_mut().enumerate() {
                let name = p.func_name_str(f as u32);
                if let Some(phase) = pvm_phase(name) {
                    let c = *interp.get_or_insert_with(|| {
                        list.push(category("Interpreter", "purple"));
                        (list.len() - 1) as u32
                    });
                    let subs = &mut list[c as usize].subcategories;
                    let sub = match subs.iter().position(|s| s == phase) {
                        Some(i) => i,
                        None => {
                            subs.push(phase.to_string());
                            subs.len() - 1
                        }
                    };
                    *slot = Some((c, sub as u32));
                } else if name == "kernel_run" {
                    let c = *kernel.get_or_insert_with(|| {
                        list.push(category("Kernel", "blue"));
                        (list.len() - 1) as u32
                    });
                    *slot = Some((c, 0));
                }
            }
        }
        Kind::Deep => {
            list.push(category("User code", "yellow"));
            list.push(category("Mercury library", "lightblue"));
            list.push(category("Mercury runtime", "brown"));
            for (f, slot) in of_func.iter_mut().enumerate() {
                let module = match p.func_resource[f] {
                    NONE => mercury_module(p.func_name_str(f as u32)),
                    r => Some(p.strings.get(r)),
                };
                *slot = Some(match module.map(mercury_module_class) {
                    Some(ModuleClass::Runtime) => (3, 0),
                    Some(ModuleClass::Library) => (2, 0),
                    _ => (1, 0),
                });
            }
        }
        Kind::Generic => {
            list.push(category("User", "yellow"));
            let (mut kernel, mut jit) = (None, None);
            for (f, slot) in of_func.iter_mut().enumerate() {
                let name = p.func_name_str(f as u32);
                let c = match Annotation::of(name) {
                    Some(Annotation::Kernel) => *kernel.get_or_insert_with(|| {
                        list.push(category("Kernel", "orange"));
                        (list.len() - 1) as u32
                    }),
                    Some(Annotation::Jit) => *jit.get_or_insert_with(|| {
                        list.push(category("JIT", "green"));
                        (list.len() - 1) as u32
                    }),
                    Some(Annotation::Inlined | Annotation::Waker) | None => 1,
                };
                *slot = Some((c, 0));
            }
        }
    }
    Categories { list, of_func }
}

/// The module of a Mercury procedure's display name: `tiny.main/2-0` → `tiny`,
/// `Unify for list.list/1` → `list`, `Mercury runtime.Mercury runtime/0-0` → `Mercury runtime`.
pub fn mercury_module(name: &str) -> Option<&str> {
    let name = [
        "Unify for ",
        "Compare for ",
        "CompareRep for ",
        "Index for ",
    ]
    .iter()
    .find_map(|p| name.strip_prefix(p))
    .unwrap_or(name);
    let qualified = name.split('/').next().unwrap_or(name);
    qualified.rfind('.').map(|dot| &qualified[..dot])
}

/// Where a Mercury module comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleClass {
    /// The runtime's pseudo-procedure and the builtin modules the compiler calls into.
    Runtime,
    /// A module of the standard library.
    Library,
    /// The program's own code.
    User,
}

/// Runtime-support modules of the Mercury standard library (and the runtime's own name).
const MERCURY_RUNTIME: &[&str] = &[
    "Mercury runtime",
    "builtin",
    "erlang_rtti_implementation",
    "mutvar",
    "par_builtin",
    "private_builtin",
    "profiling_builtin",
    "region_builtin",
    "rtti_implementation",
    "stm_builtin",
    "table_builtin",
    "term_size_prof_builtin",
];

/// Modules of the Mercury standard library (`library/*.m`), sorted.
const MERCURY_LIBRARY: &[&str] = &[
    "array",
    "array2d",
    "assoc_list",
    "bag",
    "benchmarking",
    "bimap",
    "bit_buffer",
    "bitmap",
    "bool",
    "calendar",
    "char",
    "construct",
    "cord",
    "counter",
    "deconstruct",
    "diet",
    "digraph",
    "dir",
    "edit_distance",
    "edit_seq",
    "enum",
    "eqvclass",
    "exception",
    "fat_sparse_bitset",
    "fatter_sparse_bitset",
    "float",
    "gc",
    "getopt",
    "getopt_io",
    "hash_table",
    "injection",
    "int",
    "int16",
    "int32",
    "int64",
    "int8",
    "integer",
    "io",
    "kv_list",
    "lazy",
    "lexer",
    "library",
    "list",
    "map",
    "math",
    "maybe",
    "mercury_term_lexer",
    "mercury_term_parser",
    "multi_map",
    "one_or_more",
    "one_or_more_map",
    "ops",
    "pair",
    "parser",
    "parsing_utils",
    "pprint",
    "pqueue",
    "pretty_printer",
    "prolog",
    "psqueue",
    "queue",
    "random",
    "ranges",
    "rational",
    "rbtree",
    "require",
    "rtree",
    "set",
    "set_bbbtree",
    "set_ctree234",
    "set_ordlist",
    "set_tree234",
    "set_unordlist",
    "solutions",
    "sparse_bitset",
    "stack",
    "std_util",
    "store",
    "stream",
    "string",
    "table_statistics",
    "term",
    "term_context",
    "term_conversion",
    "term_int",
    "term_io",
    "term_subst",
    "term_to_xml",
    "term_unify",
    "term_vars",
    "test_bitset",
    "thread",
    "time",
    "tree234",
    "tree_bitset",
    "type_desc",
    "uint",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "unit",
    "univ",
    "varset",
    "version_array",
    "version_array2d",
    "version_bitmap",
    "version_hash_table",
    "version_store",
];

/// Classifies a Mercury module by its first component (`string.format` is `string`).
pub fn mercury_module_class(module: &str) -> ModuleClass {
    if MERCURY_RUNTIME.contains(&module) {
        return ModuleClass::Runtime;
    }
    let top = module.split('.').next().unwrap_or(module);
    if MERCURY_RUNTIME.contains(&top) {
        ModuleClass::Runtime
    } else if MERCURY_LIBRARY.binary_search(&top).is_ok() {
        ModuleClass::Library
    } else {
        ModuleClass::User
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profconv_plugin::ir::{ProfileBuilder, ValueKind};

    #[test]
    fn library_list_is_sorted_for_binary_search() {
        assert!(MERCURY_LIBRARY.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn mercury_modules() {
        assert_eq!(mercury_module("tiny.main/2-0"), Some("tiny"));
        assert_eq!(mercury_module("Unify for list.list/1"), Some("list"));
        assert_eq!(
            mercury_module("Mercury runtime.Mercury runtime/0-0"),
            Some("Mercury runtime")
        );
        assert_eq!(
            mercury_module("string.format.format/3-0"),
            Some("string.format")
        );
        assert_eq!(mercury_module("main"), None);
        assert_eq!(mercury_module_class("string.format"), ModuleClass::Library);
        assert_eq!(
            mercury_module_class("private_builtin"),
            ModuleClass::Runtime
        );
        assert_eq!(
            mercury_module_class("Mercury runtime"),
            ModuleClass::Runtime
        );
        assert_eq!(mercury_module_class("mandelbrot"), ModuleClass::User);
    }

    #[test]
    fn pvm_phases_become_subcategories_and_kernel_run_its_own() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("ticks", "ticks", ValueKind::Weight);
        b.add_stack(&["%interpreter(decode)"], &[5]).unwrap();
        b.add_stack(&["%interpreter(init)"], &[5]).unwrap();
        b.add_stack(&["kernel_run", "f"], &[5]).unwrap();
        let p = b.finish();
        let c = categorize(&p.view());
        let names: Vec<&str> = c.list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Other", "Interpreter", "Kernel"]);
        assert_eq!(c.list[1].subcategories, ["Other", "decode", "init"]);
        assert_eq!(c.of_func, [Some((1, 1)), Some((1, 2)), Some((2, 0)), None]);
    }

    #[test]
    fn deep_by_module() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("quanta", "count", ValueKind::Weight);
        b.add_meta("source_format", "deep");
        b.add_stack(
            &[
                "Mercury runtime.Mercury runtime/0-0",
                "tiny.main/2-0",
                "list.map/3-0",
            ],
            &[1],
        )
        .unwrap();
        let p = b.finish();
        let c = categorize(&p.view());
        assert_eq!(c.of_func, [Some((3, 0)), Some((1, 0)), Some((2, 0))]);
    }

    #[test]
    fn generic_kernel_and_jit_annotations() {
        let mut b = ProfileBuilder::new();
        b.add_value_type("samples", "count", ValueKind::Weight);
        b.add_stack(&["main", "write_[k]"], &[1]).unwrap();
        b.add_stack(&["main", "js_[j]"], &[1]).unwrap();
        let p = b.finish();
        let c = categorize(&p.view());
        let names: Vec<&str> = c.list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Other", "User", "Kernel", "JIT"]);
        assert_eq!(c.of_func, [Some((1, 0)), Some((2, 0)), Some((3, 0))]);
    }
}
