//! The deep plugin: only the exported entry point; the logic is in `profconv-deep`.

profconv_plugin::export_plugin!(
    name: "deep",
    version: env!("CARGO_PKG_VERSION"),
    formats: [profconv_deep::Deep],
);
