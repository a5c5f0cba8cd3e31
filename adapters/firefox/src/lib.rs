//! Firefox Profiler (gzipped processed JSON) and speedscope JSON emitters.

use profconv_plugin::Format;

/// The firefox format.
pub struct Firefox;

impl Format for Firefox {
    const ID: &'static str = "firefox";
    const DESCRIPTION: &'static str =
        "Firefox Profiler (gzipped processed JSON) and speedscope JSON emitters (in progress)";
}
