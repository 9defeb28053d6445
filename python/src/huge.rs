//! Asking Linux for huge pages under a column's spare capacity.
//!
//! A read builds tens of MB of columns in fresh memory, and the kernel
//! hands fresh memory out 4 KiB at a time: faulting in and zeroing those
//! pages took half of a read of the 100 MB capture (`cargo xtask
//! bench-report`, the Python line). Advised, the kernel gives 2 MiB pages
//! where it can (transparent huge pages, `madvise` mode as most
//! distributions ship it), and that cost falls by most of itself. numpy
//! advises its own large arrays the same way.
//!
//! The crate's only `unsafe`: advice does not change the memory's
//! contents or who owns it.

/// Advise huge pages for the spare capacity of `column`, the memory its
/// next pushes will fault in. Best effort: a kernel without them, or a
/// region too small for one, ignores the advice.
pub(crate) fn advise<T>(column: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        let spare = column.spare_capacity_mut();
        let (start, len) = (spare.as_mut_ptr() as usize, std::mem::size_of_val(spare));
        const HUGE: usize = 2 << 20;
        if len < HUGE {
            return;
        }
        const PAGE: usize = 4096;
        let from = start.next_multiple_of(PAGE);
        let to = (start + len) / PAGE * PAGE;
        if to > from {
            // SAFETY: [from, to) lies inside `column`'s own allocation (its
            // spare capacity, rounded inward to whole pages), which this
            // `&mut` borrow owns; MADV_HUGEPAGE neither reads, writes nor
            // frees it, and a failure only means the advice is not taken.
            #[allow(unsafe_code)]
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = column;
}
