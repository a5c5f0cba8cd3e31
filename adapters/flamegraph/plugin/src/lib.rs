//! The flamegraph plugin: only the exported entry point; the logic is in `profconv-flamegraph`.

profconv_plugin::export_plugin!(
    name: "flamegraph",
    version: env!("CARGO_PKG_VERSION"),
    formats: [profconv_flamegraph::Flamegraph],
);
