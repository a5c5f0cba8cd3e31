//! Shared by the integration tests: builds the plugin libraries (`cargo test` does not build
//! cdylibs) and finds them beside the test binary.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// `target/<profile>/`, where `profconv` and the plugin libraries live.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test binary>
    exe.parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

/// Builds the workspace (real plugins, test fixture plugins, `profconv`) once per test binary.
pub fn built_plugins() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = target_dir();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
            let mut cmd = Command::new(cargo);
            cmd.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
                // Every member: the real plugins and the test-only ones (not default members).
                .args(["build", "--quiet", "--workspace"]);
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("run cargo build for the plugins");
            assert!(status.success(), "building the plugin libraries failed");
            dir
        })
        .clone()
}

/// The file name of a library built from crate `name` (`profconv_plugin_folded`).
pub fn lib_path(name: &str) -> PathBuf {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    built_plugins().join(format!("{DLL_PREFIX}{name}{DLL_SUFFIX}"))
}

/// The seed 001 samples.
pub const SEED_001: &str = "A;B;C;D;E 1\nA;B;C;F;G 1\nA;B;H;F 1\n";

/// Seed 001's tree in first-seen order (total/self as the seed draws it).
pub const SEED_001_TREE: &str = "\
A self=0 total=3
  B self=0 total=3
    C self=0 total=2
      D self=0 total=1
        E self=1 total=1
      F self=0 total=1
        G self=1 total=1
    H self=0 total=1
      F self=1 total=1
";
