//! Mercury deep profiler Deep.data files.

use profconv_plugin::Format;

/// The deep format.
pub struct Deep;

impl Format for Deep {
    const ID: &'static str = "deep";
    const DESCRIPTION: &'static str = "Mercury deep profiler Deep.data files (in progress)";
}
