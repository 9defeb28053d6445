//! `memcpy`, `memset` and `memmove` built for size, for the Arm cores
//! (`build.rs` says which, as `cfg(size_built_mem)`): linked in place of
//! `compiler_builtins`' own, which are built for speed; its `memcpy` and
//! `memset` were 0.9 KB of a 14 KiB Cortex-M0 program and 1.3 KB of a
//! Cortex-M3 one (`cargo xtask firmware` prints the footprint).
//! `compiler_builtins` defines its copies weak, so these, strong, are the
//! ones every call reaches: the
//! compiler's (a struct moved or zeroed), `copy_from_slice`, and
//! dendro-wire-core's, whose row path on a core without unaligned loads
//! copies rows through `memcpy`.
//!
//! A copy still moves words, so a row is never copied a byte at a time.
//! On the Cortex-M3 (ARMv7-M), which loads and stores words at any
//! address, a copy is words, then the 0 to 3 bytes left. On the Cortex-M0
//! (ARMv6-M), which does not:
//! - up to 7 bytes go byte by byte;
//! - otherwise the destination is aligned first, a byte at a time; then,
//!   if the source is aligned too, whole words go with `ldm`/`stm`; if it is
//!   not, each word stored is made of two aligned words loaded, shifted
//!   together;
//! - the 0 to 3 bytes left go byte by byte.
//!
//! The shifted path loads the aligned word holding a source's first byte
//! and its last: it reads up to 3 bytes before the source and after it,
//! never outside the aligned words the source lies in, which no memory
//! protection on these parts divides.
//!
//! `memset` (and the ARM EABI's `__aeabi_memset` and `__aeabi_memclr`)
//! spreads the byte across a word and stores words, the Cortex-M0's once
//! its destination is aligned, then the bytes left.
//!
//! `memmove` (only smoltcp calls it, in the network programs, where the
//! compiler's was 1.3 to 1.6 KB) is in a section of its own, linked only
//! where it is called. On the Cortex-M3 it is `memcpy` (which stores no
//! byte before it is loaded) unless the destination lies inside the
//! source's bytes, its first included, and then moves words from the
//! last. On the Cortex-M0 bytes that do not overlap go to `memcpy`, and
//! overlapping ones a byte at a time, from the first or from the last.
//!
//! The code is `mem.s`, one file for both cores, which GNU as reads too:
//! the C agent on the Cortex-M3 (`xtask/src/c_firmware.rs`) links the
//! same file, so its flash and the Rust agent's compare like for like.
//!
//! The `memcheck` program calls every entry point by its symbol, on each
//! board, as `cargo xtask firmware` runs it, and holds each call to its
//! bytes (every alignment of source and destination, every length to
//! 300, the bytes around the destination too), its return value, and,
//! through a probe, to the registers a callee must keep and the stack
//! pointer: a planted fault in a word loop, in `memclr`'s zero, in a
//! register saved, or in `memmove`'s direction, each makes it fail.

#[cfg(size_built_mem = "armv6m")]
core::arch::global_asm!(
    ".set DENDRO_WIRE_ARMV6M, 1",
    include_str!("mem.s"),
    options(raw)
);

#[cfg(size_built_mem = "armv7m")]
core::arch::global_asm!(include_str!("mem.s"), options(raw));
