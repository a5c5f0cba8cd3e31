//! Tezos smart-rollup WASM PVM traces (PVMTRACE events and the Octez debugger's output).

use profconv_plugin::Format;

/// The pvm format.
pub struct Pvm;

impl Format for Pvm {
    const ID: &'static str = "pvm";
    const DESCRIPTION: &'static str = "Tezos smart-rollup WASM PVM traces (PVMTRACE events and the Octez debugger's output) (in progress)";
}
