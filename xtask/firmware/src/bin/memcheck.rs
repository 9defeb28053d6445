//! `memcpy` and `memset` held to what they must do, on the board: on the
//! Arm cores the size-built ones of `src/mem.s`, on RISC-V the
//! compiler's. Every copy of 0 to 56 bytes from each of four source
//! alignments to each of four destination alignments, and every fill of 0
//! to 44 bytes at each destination alignment with three byte values and
//! with zero, each checked byte by byte against what the bytes must be,
//! the bytes around the destination included, and each call's return
//! value. Prints `memcheck copies=N fills=N wrong=N`; exits failing if
//! `wrong` is not 0.

#![no_std]
#![no_main]

use core::hint::black_box;

use dendro_wire_firmware::{entry, exit, Console};

/// Longer than the longest copy or fill plus the largest offset, so every
/// case has untouched bytes after it to check.
const BYTES: usize = 64;

/// Word-aligned, so offsets 0 to 3 are the four alignments.
#[repr(C, align(4))]
struct Buf([u8; BYTES]);

extern "C" {
    fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
    fn memset(dst: *mut u8, byte: i32, n: usize) -> *mut u8;
}

/// The C symbols, called through pointers the compiler cannot see into:
/// called by name, a `memset` is turned into the EABI's `__aeabi_memset`,
/// and the symbol's own entry would go untested.
type Memcpy = unsafe extern "C" fn(*mut u8, *const u8, usize) -> *mut u8;
type Memset = unsafe extern "C" fn(*mut u8, i32, usize) -> *mut u8;

/// The source's byte at `i`: no two neighbours alike, no zero run.
fn source_byte(i: usize) -> u8 {
    (i as u8).wrapping_mul(37).wrapping_add(11)
}

/// The destination's byte at `i` before a case: unlike any source byte
/// near it and unlike the fill values.
fn guard_byte(i: usize) -> u8 {
    0xc3 ^ (i as u8).wrapping_mul(5)
}

/// Fill `buf` with `byte(i)` at each `i`.
fn paint(buf: &mut Buf, byte: fn(usize) -> u8) {
    for (i, b) in buf.0.iter_mut().enumerate() {
        *b = byte(i);
    }
}

/// The bytes of `dst` that differ from what they must be: `expect(j)`
/// at `at..at + n`, the guard elsewhere.
fn wrong_bytes(dst: &Buf, at: usize, n: usize, expect: impl Fn(usize) -> u8) -> u32 {
    let mut wrong = 0;
    for (j, b) in dst.0.iter().enumerate() {
        let must = if (at..at + n).contains(&j) {
            expect(j)
        } else {
            guard_byte(j)
        };
        wrong += u32::from(*b != must);
    }
    wrong
}

/// Copy `len` bytes from `src` at `s` to `dst` at `d`: through the C
/// symbol (its return value checked), or as a slice copy (the EABI's
/// `__aeabi_memcpy`). `None` if a range is outside its buffer, or the
/// symbol gave back another address.
fn copy(dst: &mut Buf, d: usize, src: &Buf, s: usize, len: usize, by_symbol: bool) -> Option<()> {
    let to = dst.0.get_mut(d..d + len)?;
    let from = src.0.get(s..s + len)?;
    if !by_symbol {
        to.copy_from_slice(from);
        return Some(());
    }
    let at = to.as_mut_ptr();
    // SAFETY: both ranges are in bounds, just checked, and the buffers
    // are two values, so they do not overlap.
    let back = unsafe { black_box(memcpy as Memcpy)(at, from.as_ptr(), len) };
    (back == at).then_some(())
}

/// Fill `len` bytes of `dst` at `d`: with `Some` byte through the C symbol
/// (its return value checked, the byte given in an `int` with bits above
/// it set, which must be ignored), with `None` as a zero fill the compiler
/// knows of. `None` if the range is outside the buffer, or the symbol gave
/// back another address.
fn fill(dst: &mut Buf, d: usize, len: usize, byte: Option<u8>) -> Option<()> {
    let to = dst.0.get_mut(d..d + len)?;
    let Some(v) = byte else {
        to.fill(0);
        return Some(());
    };
    let at = to.as_mut_ptr();
    // SAFETY: the range is in bounds, just checked.
    let back = unsafe { black_box(memset as Memset)(at, i32::from(v) | 0x100, len) };
    (back == at).then_some(())
}

#[entry]
fn main() -> ! {
    let mut out = Console::open();
    let (mut src, mut dst) = (Buf([0; BYTES]), Buf([0; BYTES]));
    let (mut copies, mut fills, mut wrong) = (0u32, 0u32, 0u32);
    paint(&mut src, source_byte);
    for from in 0..4 {
        for to in 0..4 {
            for n in 0..=56 {
                // Each length by both ways in: the C symbol, and a slice
                // copy (the EABI's `__aeabi_memcpy`).
                for by_symbol in [true, false] {
                    paint(&mut dst, guard_byte);
                    let (s, d, len) = black_box((from, to, n));
                    wrong += u32::from(copy(&mut dst, d, &src, s, len, by_symbol).is_none());
                    wrong += wrong_bytes(&dst, d, len, |j| source_byte((j + s).wrapping_sub(d)));
                    copies += 1;
                }
            }
        }
    }
    for to in 0..4 {
        for n in 0..=44 {
            for value in [0x00u8, 0x5a, 0xff] {
                paint(&mut dst, guard_byte);
                let (d, len, v) = black_box((to, n, value));
                wrong += u32::from(fill(&mut dst, d, len, Some(v)).is_none());
                wrong += wrong_bytes(&dst, d, len, |_| v);
                fills += 1;
            }
            // A fill the compiler knows is zero (the EABI's memclr).
            paint(&mut dst, guard_byte);
            let (d, len) = black_box((to, n));
            wrong += u32::from(fill(&mut dst, d, len, None).is_none());
            wrong += wrong_bytes(&dst, d, len, |_| 0);
            fills += 1;
        }
    }
    out.str("memcheck")
        .field("copies", copies)
        .field("fills", fills)
        .field("wrong", wrong)
        .str("\n");
    exit(wrong == 0)
}
