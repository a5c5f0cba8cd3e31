//! Fuzz target: the folded parser (`Format::parse` on an in-memory input), then the host's checks
//! and the call tree on whatever it returns. Must never panic, hang or allocate without bound.
//! Then the same input in batches of lines, and on three threads in small pieces, must give
//! exactly the result of reading it one line at a time on one thread.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profconv_fuzz::parse_and_check::<profconv_folded::Folded>(data);
    profconv_fuzz::folded_threads_agree(data);
});
