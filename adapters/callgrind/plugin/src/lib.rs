//! The callgrind plugin: only the exported entry point; the logic is in `profconv-callgrind`.

profconv_plugin::export_plugin!(
    name: "callgrind",
    version: env!("CARGO_PKG_VERSION"),
    formats: [profconv_callgrind::Callgrind],
);
