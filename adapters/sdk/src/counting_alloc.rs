//! A global allocator that counts the heap bytes in use and their peak (feature
//! `counting-alloc`), for tests that bound a parser's or an emitter's memory by what it
//! allocates: allocations are deterministic, unlike resident memory or time. It lives here
//! because a global allocator cannot be written without `unsafe`, which only this crate may use.
//!
//! ```text
//! #[global_allocator]
//! static ALLOCATOR: profconv_plugin::counting_alloc::CountingAlloc =
//!     profconv_plugin::counting_alloc::CountingAlloc;
//! let extra = profconv_plugin::counting_alloc::peak_of(|| emit(...));
//! ```
//!
//! The counts are the whole process's: a test measuring should not run beside others that
//! allocate (hold a lock, or give the measuring tests a test binary of their own).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting ([`in_use`], [`peak_of`]).
pub struct CountingAlloc;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged, with the caller's
// contract; the counting touches only atomics.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` (a non-zero-sized layout) is System's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = IN_USE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above (System's) with this layout, as the caller
        // guarantees.
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

/// Heap bytes in use now (through [`CountingAlloc`], when it is the global allocator).
pub fn in_use() -> usize {
    IN_USE.load(Ordering::SeqCst)
}

/// The most heap bytes `work` had in use at once beyond those in use before it ran.
pub fn peak_of(work: impl FnOnce()) -> usize {
    let base = in_use();
    PEAK.store(base, Ordering::SeqCst);
    work();
    PEAK.load(Ordering::SeqCst).saturating_sub(base)
}
