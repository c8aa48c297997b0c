//! What a bare-metal program provides itself and an operating system would otherwise: the entry
//! point, a heap for `alloc`, and what a panic does. Compiled for `target_os = "none"` only.
//!
//! A firmware would take these from `cortex-m-rt` (vector table, linker script) and an allocator
//! crate; this example keeps to what the workspace already depends on, since what it measures is
//! the size of the verification, and a vector table or a heap of another size changes nothing
//! there. The binary links (rust-lld, default layout) but is not laid out for a particular chip.

#![allow(
    unsafe_code,
    reason = "the entry symbol (`no_mangle`) and the allocator (`unsafe impl GlobalAlloc`) have no \
              safe form; neither has an unsafe block"
)]

use core::alloc::{GlobalAlloc, Layout};
use core::panic::PanicInfo;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Heap size: the golden model is 4.8 KB, its chunk index and one decoded chunk at a time fit
/// several times over.
const HEAP_LEN: usize = 64 * 1024;

/// The heap's bytes.
static mut HEAP: [u8; HEAP_LEN] = [0; HEAP_LEN];

/// A bump allocator: hands out the heap front to back and never frees (the program runs the
/// check once). Out of room is a null pointer, which `alloc` turns into its allocation-error
/// handler (a panic, then the loop below).
struct Bump {
    /// Offset of the first free byte.
    next: AtomicUsize,
}

// SAFETY: `alloc` returns either null or a block of `layout.size()` bytes aligned to
// `layout.align()` inside `HEAP`, never handed out twice (the offset only grows, by an atomic
// compare-and-swap, so two callers cannot get overlapping blocks); `dealloc` frees nothing.
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = (&raw mut HEAP).cast::<u8>();
        let mut start = 0;
        let reserved = self
            .next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |next| {
                let address = (base as usize).checked_add(next)?;
                let aligned = address.checked_next_multiple_of(layout.align())?;
                start = aligned - base as usize;
                let end = start.checked_add(layout.size())?;
                (end <= HEAP_LEN).then_some(end)
            });
        match reserved {
            Ok(_) => base.wrapping_add(start),
            Err(_) => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
}

#[global_allocator]
static ALLOCATOR: Bump = Bump {
    next: AtomicUsize::new(0),
};

/// The reset entry point (rust-lld's default entry symbol): runs the check and keeps its result
/// where the optimizer must assume it is read.
#[unsafe(no_mangle)]
extern "C" fn _start() -> ! {
    let outcome = crate::load().map(|listing| {
        // Everything the device learned, folded so the optimizer cannot drop any of it.
        let decoded: usize = listing.tensors.iter().map(|tensor| tensor.bytes).sum();
        let names: usize = listing.tensors.iter().map(|tensor| tensor.name.len()).sum();
        let elements: u64 = listing
            .tensors
            .iter()
            .map(|tensor| tensor.shape.iter().product::<u64>() ^ u64::from(tensor.dtype))
            .sum();
        (
            listing.model_type,
            decoded,
            names,
            elements,
            listing.prediction,
        )
    });
    core::hint::black_box(&outcome);
    loop {
        core::hint::spin_loop();
    }
}

/// A panic (allocation failure included) stops here.
#[panic_handler]
fn panic(_: &PanicInfo<'_>) -> ! {
    loop {
        core::hint::spin_loop();
    }
}
