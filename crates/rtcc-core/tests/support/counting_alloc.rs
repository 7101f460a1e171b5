//! A counting global allocator for the allocation tests (included by path
//! from each test binary that needs it: `#[path = ...] mod counting_alloc;`,
//! which installs it as that binary's global allocator).
//!
//! It counts the allocations made on a thread while counting is switched on
//! for it, and keeps the backtrace of the first one to name the culprit.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Counts alloc / alloc_zeroed / realloc calls made on a thread whose
/// `COUNTING` flag is set; everything is served by [`System`].
struct Counting;

pub(crate) static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Backtrace of the first counted allocation, to name the culprit on failure.
pub(crate) static FIRST: Mutex<Option<String>> = Mutex::new(None);

thread_local! {
    // `const` initialisation: reading it never allocates.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

impl Counting {
    fn count(&self) {
        if COUNTING.try_with(Cell::get).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            // Capturing allocates: switch counting off meanwhile.
            COUNTING.with(|c| c.set(false));
            if let Ok(mut first) = FIRST.try_lock() {
                if first.is_none() {
                    *first = Some(std::backtrace::Backtrace::force_capture().to_string());
                }
            }
            COUNTING.with(|c| c.set(true));
        }
    }
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counting touches no allocator state.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
pub(crate) fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// Switches counting on or off for this thread.
pub(crate) fn set_counting(on: bool) {
    COUNTING.with(|c| c.set(on));
}

/// Allocations counted so far, on every thread.
pub(crate) fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// The backtrace of the first allocation counted, if any.
pub(crate) fn first_backtrace() -> Option<String> {
    FIRST.lock().map(|f| f.clone()).unwrap_or(None)
}

/// Forgets the first backtrace, so that the next counted allocation's is kept.
pub(crate) fn reset_first() {
    if let Ok(mut first) = FIRST.lock() {
        *first = None;
    }
}
