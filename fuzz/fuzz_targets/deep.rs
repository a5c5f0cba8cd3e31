//! Fuzz target: the deep parser (`Format::parse` on an in-memory input), then the host's checks
//! and the call tree on whatever it returns. Must never panic, hang or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profconv_fuzz::parse_and_check::<profconv_deep::Deep>(data);
});
