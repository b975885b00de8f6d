//! What `profiler_core::Alloc` costs per allocation: the system allocator called directly,
//! through `Alloc` with nothing armed on the thread (the case of nearly every allocation), and
//! through `Alloc` while an armed run is counting.
//!
//! Run with `cargo bench -p profiler-core --features enable --bench alloc`. docs/overhead.md quotes
//! the medians.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

use divan::Bencher;

#[global_allocator]
static ALLOC: profiler_core::Alloc = profiler_core::Alloc::system();

fn main() {
    divan::main();
}

const LAYOUT: Layout = match Layout::from_size_align(64, 8) {
    Ok(l) => l,
    Err(_) => panic!("a valid layout"),
};

/// One allocation and its free, through `alloc`.
fn alloc_free(alloc: &impl GlobalAlloc) {
    // SAFETY: a non-zero-sized layout, freed with the same layout by the same allocator.
    unsafe {
        let p = alloc.alloc(black_box(LAYOUT));
        black_box(p);
        if !p.is_null() {
            alloc.dealloc(p, LAYOUT);
        }
    }
}

/// 1. The system allocator, without counting.
#[divan::bench]
fn a_system(b: Bencher) {
    b.bench(|| alloc_free(&System));
}

/// 2. Through `Alloc`, nothing armed on this thread: one thread-local load and a branch more
///    per call.
#[divan::bench]
fn b_counted_unarmed(b: Bencher) {
    b.bench(|| alloc_free(&ALLOC));
}

/// 3. Through `Alloc` while an armed run counts this thread's allocations.
#[divan::bench]
fn c_counted_armed(b: Bencher) {
    assert!(profiler_core::__private::alloc_begin());
    b.bench(|| alloc_free(&ALLOC));
    black_box(profiler_core::__private::alloc_end());
}
