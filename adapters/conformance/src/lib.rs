//! # profconv-conformance: the plugin conformance kit and snapshot helpers
//!
//! Two things for people who write profconv plugins or profilers:
//!
//! * [`check_plugin`] loads a built plugin library through the real host (the same loader as
//!   `profconv`) and runs the conformance checks on every format it provides: the handshake,
//!   sniffing, parse → folded → parse, deterministic emit (of an empty profile too), malformed
//!   and truncated input, concurrent use, and the same result with 4 worker threads allowed as
//!   with one. It returns a [`Report`] that prints one line per check. `profconv
//!   plugin-check PATH [SAMPLES…]` is this function plus an exit code.
//! * [`tree_text`] and [`tree_text_with`] turn any input a format reads into the normalized call
//!   tree text of `profconv tree`, optionally reshaped by transforms (max depth, min total) to
//!   keep snapshots small: see `docs/snapshot-testing.md`.
//!
//! ```no_run
//! use std::path::{Path, PathBuf};
//!
//! let report = profconv_conformance::check_plugin(
//!     Path::new("target/release/libprofconv_plugin_cpuprofile.so"),
//!     &[PathBuf::from("samples/tiny.cpuprofile")],
//! );
//! print!("{report}");
//! assert!(report.passed());
//! ```

mod check;
mod samples;
mod snapshot;

pub use check::{CheckResult, Outcome, Report, check_plugin, check_plugin_with};
pub use samples::{BUILTIN_SAMPLES, BuiltinSample};
pub use snapshot::{TreeTextConfig, profile_tree_text, tree_text, tree_text_with};
