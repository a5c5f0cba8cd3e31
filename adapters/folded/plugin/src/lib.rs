//! The folded-stacks plugin: only the exported entry point; the logic is in `profconv-folded`.

profconv_plugin::export_plugin!(
    name: "folded",
    version: env!("CARGO_PKG_VERSION"),
    formats: [profconv_folded::Folded],
);
