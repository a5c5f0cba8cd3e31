//! Fuzz target: the host's handling of a plugin's result. Random column sets (as a plugin could
//! hand back over the ABI) go through `ProfileRef::validate`; a valid one must then build a call
//! tree, render as text and go through every emitter without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profconv_fuzz::host_profile(data);
});
