//! Small samples of the formats profconv knows, compiled into the kit.

/// A sample file of a known format, built into the kit.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinSample {
    /// The id of the format the sample is written in (`folded`).
    pub format: &'static str,
    /// Where it comes from (a path under `snapshots/fixtures/`, or the plugin template).
    pub name: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

macro_rules! fixture {
    ($format:expr, $rel:expr) => {
        BuiltinSample {
            format: $format,
            name: $rel,
            bytes: include_bytes!(concat!("../../../snapshots/fixtures/", $rel)),
        }
    };
}

/// The built-in samples: a plugin's own format gets its samples from here (by format id) and
/// from the command line; every other sample must not be sniffed as the plugin's format, and
/// must not make its parser panic.
pub const BUILTIN_SAMPLES: &[BuiltinSample] = &[
    fixture!(
        "folded",
        "folded/inferno/collapse-perf/results/cpp-stacks-std-function-collapsed.txt"
    ),
    fixture!(
        "folded",
        "folded/inferno/flamegraph/fractional-samples/fractional.txt"
    ),
    fixture!("callgrind", "callgrind/handmade/tiny.callgrind"),
    fixture!("pvm", "pvm/ids-named.pvmtrace"),
    fixture!("deep", "deep/tiny_tree.data"),
    BuiltinSample {
        format: "cpuprofile",
        name: "examples/plugin-template/samples/tiny.cpuprofile",
        bytes: include_bytes!("../../../examples/plugin-template/samples/tiny.cpuprofile"),
    },
];

/// The folded sample whose profile is emitted by every emitter under test.
pub(crate) const EMIT_SAMPLE: usize = 0;
