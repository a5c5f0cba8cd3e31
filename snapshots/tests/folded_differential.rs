//! inferno's differential folded format (`STACK BEFORE AFTER`) through the real `profconv`
//! binary: `profconv diff A B -t folded` writes it, and reading that file back gives the
//! profile `profconv diff A B` builds, so its flame graph is the same file:
//!
//! * `profconv diff before after -o d.svg` and `profconv diff before after -t folded -o
//!   d.folded; profconv convert d.folded -o d2.svg` write byte-identical SVGs;
//! * `d.folded` has the lines inferno-diff-folded writes for the same inputs (in another order);
//! * `profconv convert d.folded -t folded` writes `d.folded` again (the same tree, both columns,
//!   also with decimals, where each column keeps its own scale);
//! * on several threads, in small pieces, the conversion is the same.
//!
//! The differential folded text of inferno's diff-folded inputs is snapshotted
//! (`folded__differential_cli.snap`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "../../cli/tests/support/mod.rs"]
mod support;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Runs the `profconv` binary beside the plugins (the workspace built once by the CLI tests'
/// helper), without a user's plugins; panics unless it succeeds; returns its stdout.
fn profconv(args: &[&Path]) -> Vec<u8> {
    let bin = support::built_plugins().join(format!("profconv{}", std::env::consts::EXE_SUFFIX));
    let out = Command::new(&bin)
        .args(args)
        .env_remove("PROFCONV_PLUGIN_PATH")
        .env("XDG_DATA_HOME", "/nonexistent-profconv-test")
        .stdin(Stdio::null())
        .output()
        .expect("run profconv");
    assert!(
        out.status.success(),
        "profconv {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Removes the test's temporary directory, also when a check fails.
struct TempRoot(PathBuf);

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn sorted_lines(bytes: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn diff_to_folded_and_back_draws_the_same_differential_flamegraph() {
    let root = std::env::temp_dir().join(format!("profconv-folded-diff-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("temp dir");
    let _guard = TempRoot(root.clone());
    let p = |name: &str| root.join(name);
    let a = |s: &'static str| Path::new(s);
    let fractional = fixtures_dir().join("folded/inferno/flamegraph/fractional-samples");
    let diff_folded = fixtures_dir().join("flamegraph/inferno/diff-folded");
    let cases = [
        // inferno-diff-folded's inputs, integer counts.
        (
            "inferno",
            diff_folded.join("before.txt"),
            diff_folded.join("after.txt"),
            true,
        ),
        // Decimals in after only: the SVGs show after's decimals, the same either way.
        (
            "fractional_after",
            fractional.join("no-fractionals.txt"),
            fractional.join("fractional.txt"),
            true,
        ),
        // Decimals in before only: `profconv diff` gives both columns before's scale, which
        // the folded text does not keep (`31.000` is written `31`), so the SVGs write after's
        // values with other decimals; the folded text, the tree, is the same.
        (
            "fractional_before",
            fractional.join("fractional.txt"),
            fractional.join("no-fractionals.txt"),
            false,
        ),
    ];
    for (name, before, after, same_svg) in cases {
        let svg = p(&format!("{name}.svg"));
        let folded = p(&format!("{name}.folded"));
        let svg2 = p(&format!("{name}-2.svg"));
        profconv(&[a("diff"), &before, &after, a("-o"), &svg]);
        profconv(&[
            a("diff"),
            &before,
            &after,
            a("-t"),
            a("folded"),
            a("-o"),
            &folded,
        ]);
        profconv(&[a("convert"), &folded, a("-o"), &svg2]);
        let (svg, svg2, text) = (read(&svg), read(&svg2), read(&folded));
        assert!(
            String::from_utf8_lossy(&svg2).contains("Differential Flame Graph"),
            "{name}: not a differential graph"
        );
        if same_svg {
            assert!(svg == svg2, "{name}: the SVGs differ");
        }
        // Read back and written again: the same text (tree and both columns).
        let again = profconv(&[a("convert"), &folded, a("-t"), a("folded")]);
        assert_eq!(
            String::from_utf8_lossy(&again),
            String::from_utf8_lossy(&text),
            "{name}: folded → folded"
        );
        // On two threads, in pieces of 64 bytes: the same.
        let threads = profconv(&[
            a("convert"),
            a("--threads"),
            a("2"),
            &folded,
            a("-t"),
            a("folded"),
            a("-O"),
            a("piece-size=64"),
        ]);
        assert_eq!(threads, again, "{name}: on two threads");
        if name == "inferno" {
            assert_eq!(
                sorted_lines(&text),
                sorted_lines(&read(&diff_folded.join("results/default.txt"))),
                "the lines of inferno-diff-folded's output"
            );
            let mut settings = insta::Settings::clone_current();
            settings.set_prepend_module_to_snapshot(false);
            settings.set_omit_expression(true);
            settings.set_description(
                "profconv diff before.txt after.txt -t folded (inferno's diff-folded inputs): \
                 STACK BEFORE AFTER",
            );
            settings.bind(|| {
                insta::assert_snapshot!("folded__differential_cli", String::from_utf8_lossy(&text))
            });
        }
    }
}
