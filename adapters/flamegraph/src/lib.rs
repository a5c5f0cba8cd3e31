//! Interactive SVG flamegraphs and flame charts.

use profconv_plugin::Format;

/// The flamegraph format.
pub struct Flamegraph;

impl Format for Flamegraph {
    const ID: &'static str = "flamegraph";
    const DESCRIPTION: &'static str = "Interactive SVG flamegraphs and flame charts (in progress)";
}
