//! callgrind profiles (valgrind, KCachegrind): parser and emitter.

use profconv_plugin::Format;

/// The callgrind format.
pub struct Callgrind;

impl Format for Callgrind {
    const ID: &'static str = "callgrind";
    const DESCRIPTION: &'static str =
        "callgrind profiles (valgrind, KCachegrind): parser and emitter (in progress)";
}
