//! The plugin template works out of the tree: the test copies `examples/plugin-template/` to a
//! temporary directory (as a user would after `cargo generate` or a copy), points its SDK
//! dependency at this workspace's `adapters/sdk` by absolute path, builds it with cargo, and
//! converts its sample through the `profconv` binary with `PROFCONV_PLUGIN_PATH` naming the
//! built library. Takes about a minute on a cold build (the template's own target directory is
//! kept under `target/` so later runs are incremental).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        // A stray build or lock file of the template is not part of it.
        if name == "target" || name == "Cargo.lock" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Copies the template out of the workspace and builds it; returns the plugin library.
fn build_template(dir: &Path) -> PathBuf {
    let template = Path::new(WORKSPACE).join("examples/plugin-template");
    copy_dir(&template, dir);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let sdk = Path::new(WORKSPACE)
        .join("adapters/sdk")
        .canonicalize()
        .unwrap();
    let relative = r#"path = "../../adapters/sdk""#;
    assert!(
        text.contains(relative),
        "the template's SDK dependency moved"
    );
    let absolute = format!("path = {:?}", sdk.display().to_string());
    std::fs::write(&manifest, text.replace(relative, &absolute)).unwrap();

    let target = support::target_dir().join("plugin-template");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let status = Command::new(cargo)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &target)
        .args(["build", "--quiet"])
        .status()
        .expect("run cargo build for the template");
    assert!(status.success(), "building the plugin template failed");
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let lib = target.join("debug").join(format!(
        "{DLL_PREFIX}profconv_plugin_cpuprofile{DLL_SUFFIX}"
    ));
    assert!(lib.is_file(), "no {}", lib.display());
    lib
}

#[test]
fn the_template_builds_out_of_tree_and_converts_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = build_template(&tmp.path().join("my-plugin"));
    // The folded plugin too, for the output side; nothing else is loaded.
    let folded = support::lib_path("profconv_plugin_folded");
    let plugin_path = std::env::join_paths([&lib, &folded]).unwrap();
    let profconv = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_profconv"))
            .arg("--no-default-plugins")
            .args(args)
            .env("PROFCONV_PLUGIN_PATH", &plugin_path)
            .env_remove("XDG_DATA_HOME")
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "profconv {args:?} failed: {stderr}");
        stdout
    };

    let formats = profconv(&["formats"]);
    assert!(
        formats.contains("plugin cpuprofile 0.1.0")
            && formats.contains("format cpuprofile: Chrome/V8/Node.js CPU profile")
            && formats.contains("[PROFCONV_PLUGIN_PATH]"),
        "{formats}"
    );

    let sample = tmp.path().join("my-plugin/samples/tiny.cpuprofile");
    let sample = sample.to_str().unwrap();
    // Detected from the content (no -f), converted to folded stacks.
    let folded_out = profconv(&["convert", sample, "-t", "folded"]);
    assert_eq!(
        folded_out,
        "(garbage collector) 1\nmain;(anonymous) 1\nmain;parse 3\n"
    );
    let tree = profconv(&["tree", sample]);
    assert_eq!(
        tree,
        "main self=0 total=4\n  parse self=3 total=3\n  (anonymous) self=1 total=1\n\
         (garbage collector) self=1 total=1\n"
    );
}
