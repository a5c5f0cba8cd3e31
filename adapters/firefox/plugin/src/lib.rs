//! The firefox plugin: only the exported entry point; the logic is in `profconv-firefox`.

profconv_plugin::export_plugin!(
    name: "firefox",
    version: env!("CARGO_PKG_VERSION"),
    formats: [profconv_firefox::Firefox, profconv_firefox::Speedscope],
);
