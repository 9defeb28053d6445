//! A global allocator that counts allocations, for the tests that prove a
//! path allocates nothing. It counts each thread's allocations apart, and a
//! test counts its own thread's: libtest's main thread allocates when it
//! first waits for a running test, at a moment no test chooses, and that
//! must not land in a count. Each such test is also the only test in its
//! binary. Used by the core's and the std crate's tests.
//!
//! A binary chooses its global allocator, so each such test declares it:
//! `#[global_allocator] static COUNTING: Counting = Counting;`. [`count`]
//! fails if it is not the allocator in use.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator: the system's, counting.
pub struct Counting;

thread_local! {
    /// This thread's allocations and reallocations. A const initializer and
    /// no destructor, so the allocator may touch it at any time.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn counted() {
    // `try_with`: a thread being torn down may still allocate.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The allocations (and reallocations) this thread has made.
pub fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Run `f` and return its result with the allocations it made, after
/// checking that the counter does see an allocation.
pub fn count<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = allocations();
    let out = f();
    let made = allocations() - before;
    let probe = std::hint::black_box(vec![1u8; 10]);
    assert!(allocations() > before + made, "the counter missed a Vec");
    drop(probe);
    (out, made)
}
