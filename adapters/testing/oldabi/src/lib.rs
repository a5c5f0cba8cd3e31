//! A plugin claiming ABI 0.7: every host must refuse it with a message naming it.

use profconv_plugin::Format;

/// A format that must never be called.
pub struct Ancient;

impl Format for Ancient {
    const ID: &'static str = "ancient";
    const DESCRIPTION: &'static str = "built for a plugin ABI this profconv does not speak";
}

profconv_plugin::__export_plugin_with_abi!(
    abi: (0, 7),
    name: "ancient",
    version: env!("CARGO_PKG_VERSION"),
    formats: [Ancient],
);
