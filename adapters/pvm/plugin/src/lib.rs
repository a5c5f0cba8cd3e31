//! The pvm plugin: only the exported entry point; the logic is in `profconv-pvm`.

profconv_plugin::export_plugin!(
    name: "pvm",
    version: env!("CARGO_PKG_VERSION"),
    formats: [profconv_pvm::Pvm, profconv_pvm::PvmSummary],
);
