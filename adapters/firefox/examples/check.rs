//! Checks files written by the `firefox` and `speedscope` emitters and prints the call tree a
//! viewer would rebuild from them:
//!
//! ```sh
//! cargo run -p profconv-firefox --example check -- out.json.gz out.speedscope.json
//! ```

use profconv_firefox::check::{check_firefox, check_speedscope, gunzip, tree_text};

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
                continue;
            }
        };
        let result = if bytes.starts_with(&[0x1f, 0x8b]) {
            gunzip(&bytes).and_then(|json| check_firefox(&json)).map(|s| {
                format!(
                    "Firefox Profiler v{}, threads {:?}, weight types {:?}, samples {:?}, categories {:?}\n{}",
                    s.version,
                    s.threads,
                    s.weight_types,
                    s.samples,
                    s.categories,
                    tree_text(&s.tree)
                )
            })
        } else {
            check_speedscope(&bytes).map(|s| {
                format!(
                    "speedscope, {} frames, profiles {:?}\n{}",
                    s.frames,
                    s.profiles,
                    tree_text(&s.tree)
                )
            })
        };
        match result {
            Ok(text) => print!("{path}: {text}"),
            Err(e) => {
                eprintln!("{path}: INVALID: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
