//! `memcpy`, `memmove` and `memset` held to what they must do, on the
//! board: on the Arm cores the size-built ones of `src/mem.s`, on RISC-V
//! the compiler's.
//!
//! Every entry point is called by its symbol (C's `memcpy`, `memmove` and
//! `memset`, the EABI's `__aeabi_memcpy`, `__aeabi_memmove`,
//! `__aeabi_memset` and `__aeabi_memclr`, each plain and for 4- and
//! 8-byte aligned pointers), for every length from 0 to 300: a copy or a
//! move from each source offset to each destination offset of 0 to 7
//! (those the entry point allows), from RAM and from flash, into another
//! buffer; a copy onto itself; a move between any two offsets of 0 to 11
//! in one buffer, overlapping either way; fills with the byte given in an `int` whose other bits are
//! set, and `memclr` with whatever is left in the register `memset` takes
//! the byte in. Each call is checked byte by byte (the bytes around the
//! destination included), for its return value where it has one, and on
//! the Arm cores by a probe that calls it as compiled code does: the
//! registers a callee must keep (r4 to r11) and the stack pointer must be
//! as they were, and the stack it used is measured.
//!
//! Prints `memcheck calls=N wrong=N clobbered=N stack=N probed=B`
//! (`wrong`: bytes and return values; `clobbered`: calls that changed a
//! kept register or the stack pointer; `stack`: the most bytes of stack a
//! call used; `probed`: 1 where the probe ran) and exits failing if
//! `wrong` or `clobbered` is not 0.

#![no_std]
#![no_main]

use core::hint::black_box;

use dendro_wire_firmware::{entry, exit, Console};

/// The longest copy or fill, past several rounds of every word loop.
const LONGEST: usize = 300;
/// Room for the longest at the largest offset, and untouched bytes after.
const BYTES: usize = LONGEST + 16;
/// The offsets tried: each alignment twice.
const OFFSETS: usize = 8;
/// The offsets a move is tried between, within one buffer: a distance
/// of up to 11 each way.
const MOVE_OFFSETS: usize = 12;

/// Aligned for the 8-byte entry points, so offset 0 is aligned for all.
#[repr(C, align(8))]
struct Buf([u8; BYTES]);

/// The source's byte at `i`: no two neighbours alike, no zero run, and
/// not repeating within a buffer's length.
const fn source_byte(i: usize) -> u8 {
    (i as u8).wrapping_mul(37).wrapping_add(11) ^ ((i >> 8) as u8).wrapping_mul(91)
}

/// The destination's byte at `i` before a call: unlike the source's near
/// it and unlike the fill values.
fn guard_byte(i: usize) -> u8 {
    0xc3 ^ (i as u8).wrapping_mul(5)
}

/// A source in flash, where a constant's bytes are.
static FLASH: Buf = {
    let mut bytes = [0; BYTES];
    let mut i = 0;
    while i < BYTES {
        bytes[i] = source_byte(i);
        i += 1;
    }
    Buf(bytes)
};

extern "C" {
    fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
    fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
    fn memset(dst: *mut u8, byte: i32, n: usize) -> *mut u8;
}

// The ARM EABI's entry points, which other cores do not have.
#[cfg(target_arch = "arm")]
extern "C" {
    fn __aeabi_memcpy(dst: *mut u8, src: *const u8, n: usize);
    fn __aeabi_memcpy4(dst: *mut u8, src: *const u8, n: usize);
    fn __aeabi_memcpy8(dst: *mut u8, src: *const u8, n: usize);
    fn __aeabi_memmove(dst: *mut u8, src: *const u8, n: usize);
    fn __aeabi_memmove4(dst: *mut u8, src: *const u8, n: usize);
    fn __aeabi_memmove8(dst: *mut u8, src: *const u8, n: usize);
    fn __aeabi_memset(dst: *mut u8, n: usize, byte: i32);
    fn __aeabi_memset4(dst: *mut u8, n: usize, byte: i32);
    fn __aeabi_memset8(dst: *mut u8, n: usize, byte: i32);
    fn __aeabi_memclr(dst: *mut u8, n: usize);
    fn __aeabi_memclr4(dst: *mut u8, n: usize);
    fn __aeabi_memclr8(dst: *mut u8, n: usize);
}

/// What one call did beyond its bytes.
#[repr(C)]
#[derive(Default)]
struct Probe {
    args: [u32; 3],
    returned: u32,
    /// A bit for each of r4 to r11 the call changed.
    changed: u32,
    sp_before: u32,
    sp_after: u32,
    /// Bytes of stack the call wrote below the probe's.
    stack: u32,
}

// `probe_call(f, probe)`: r4 to r11 set to known words and the 256 bytes
// below the stack pointer painted, `f` called with the probe's three
// arguments, then what it returned, the registers it changed, the stack
// pointer after it and how deep it wrote recorded. Thumb-1 only, so both
// Arm cores run it.
#[cfg(target_arch = "arm")]
core::arch::global_asm!(
    ".section .text.memcheck.probe_call,\"ax\",%progbits",
    ".balign 4",
    ".global probe_call",
    ".type probe_call, %function",
    ".thumb_func",
    "probe_call:",
    "    push {{r4, r5, r6, r7, lr}}",
    "    mov r4, r8",
    "    mov r5, r9",
    "    mov r6, r10",
    "    mov r7, r11",
    "    push {{r4, r5, r6, r7}}",
    "    push {{r1}}",
    "    mov r2, sp",
    "    str r2, [r1, #20]",
    "    ldr r3, =0xa5a5a5a5",
    "    movs r4, #64",
    "1:  subs r2, #4",
    "    str r3, [r2]",
    "    subs r4, #1",
    "    bne 1b",
    "    ldr r3, =0x88888808",
    "    mov r8, r3",
    "    ldr r3, =0x99999909",
    "    mov r9, r3",
    "    ldr r3, =0xaaaaaa0a",
    "    mov r10, r3",
    "    ldr r3, =0xbbbbbb0b",
    "    mov r11, r3",
    "    ldr r4, =0x44444404",
    "    ldr r5, =0x55555505",
    "    ldr r6, =0x66666606",
    "    ldr r7, =0x77777707",
    "    mov r3, r0",
    "    ldr r0, [r1, #0]",
    "    ldr r2, [r1, #8]",
    "    ldr r1, [r1, #4]",
    "    blx r3",
    "    ldr r1, [sp]",
    "    str r0, [r1, #12]",
    "    mov r2, sp",
    "    str r2, [r1, #24]",
    // Each kept register against its word: bit 0 for r4 to bit 7 for r11.
    "    movs r0, #0",
    "    movs r3, #1",
    "    ldr r2, =0x44444404",
    "    cmp r4, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  lsls r3, r3, #1",
    "    ldr r2, =0x55555505",
    "    cmp r5, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  lsls r3, r3, #1",
    "    ldr r2, =0x66666606",
    "    cmp r6, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  lsls r3, r3, #1",
    "    ldr r2, =0x77777707",
    "    cmp r7, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  lsls r3, r3, #1",
    "    ldr r2, =0x88888808",
    "    cmp r8, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  lsls r3, r3, #1",
    "    ldr r2, =0x99999909",
    "    cmp r9, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  lsls r3, r3, #1",
    "    ldr r2, =0xaaaaaa0a",
    "    cmp r10, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  lsls r3, r3, #1",
    "    ldr r2, =0xbbbbbb0b",
    "    cmp r11, r2",
    "    beq 2f",
    "    orrs r0, r3",
    "2:  str r0, [r1, #16]",
    // The deepest painted word written: from 256 bytes down, up.
    "    mov r2, sp",
    "    subs r2, #255",
    "    subs r2, #1",
    "    ldr r3, =0xa5a5a5a5",
    "    movs r4, #64",
    "3:  ldr r5, [r2]",
    "    cmp r5, r3",
    "    bne 4f",
    "    adds r2, #4",
    "    subs r4, #1",
    "    bne 3b",
    "4:  lsls r4, r4, #2",
    "    str r4, [r1, #28]",
    "    pop {{r1}}",
    "    pop {{r4, r5, r6, r7}}",
    "    mov r8, r4",
    "    mov r9, r5",
    "    mov r10, r6",
    "    mov r11, r7",
    "    pop {{r4, r5, r6, r7, pc}}",
    ".ltorg",
    ".size probe_call, . - probe_call",
);

#[cfg(target_arch = "arm")]
extern "C" {
    fn probe_call(f: usize, probe: *mut Probe);
}

/// An entry point's address.
type Entry = *const ();

/// The copy entry points: each, the alignment its pointers must have, and
/// whether it returns the destination (C's) or nothing (the EABI's).
const COPY: &[(Entry, usize, bool)] = &[
    (memcpy as Entry, 1, true),
    #[cfg(target_arch = "arm")]
    (__aeabi_memcpy as Entry, 1, false),
    #[cfg(target_arch = "arm")]
    (__aeabi_memcpy4 as Entry, 4, false),
    #[cfg(target_arch = "arm")]
    (__aeabi_memcpy8 as Entry, 8, false),
];

/// The move entry points, as [`COPY`]'s.
const MOVE: &[(Entry, usize, bool)] = &[
    (memmove as Entry, 1, true),
    #[cfg(target_arch = "arm")]
    (__aeabi_memmove as Entry, 1, false),
    #[cfg(target_arch = "arm")]
    (__aeabi_memmove4 as Entry, 4, false),
    #[cfg(target_arch = "arm")]
    (__aeabi_memmove8 as Entry, 8, false),
];

/// How a fill entry point takes its arguments.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "arm"), allow(dead_code))]
enum Form {
    /// C's: destination, byte, length; it returns the destination.
    C,
    /// The EABI's memset: destination, length, byte.
    Set,
    /// The EABI's memclr: destination, length.
    Clear,
}

/// The fill entry points, each with the alignment its pointer must have.
const FILL: &[(Entry, usize, Form)] = &[
    (memset as Entry, 1, Form::C),
    #[cfg(target_arch = "arm")]
    (__aeabi_memset as Entry, 1, Form::Set),
    #[cfg(target_arch = "arm")]
    (__aeabi_memset4 as Entry, 4, Form::Set),
    #[cfg(target_arch = "arm")]
    (__aeabi_memset8 as Entry, 8, Form::Set),
    #[cfg(target_arch = "arm")]
    (__aeabi_memclr as Entry, 1, Form::Clear),
    #[cfg(target_arch = "arm")]
    (__aeabi_memclr4 as Entry, 4, Form::Clear),
    #[cfg(target_arch = "arm")]
    (__aeabi_memclr8 as Entry, 8, Form::Clear),
];

/// Call `f` with `args` through the probe.
#[cfg(target_arch = "arm")]
fn call(f: Entry, args: [u32; 3]) -> Probe {
    let mut probe = Probe {
        args,
        ..Probe::default()
    };
    // SAFETY: `f` is one of the entry points above, and `args` are the
    // pointers and lengths of a case whose ranges lie in its buffers.
    unsafe { probe_call(black_box(f) as usize, &mut probe) };
    probe
}

/// Call `f` with `args`; the registers go unchecked on this core.
#[cfg(not(target_arch = "arm"))]
fn call(f: Entry, args: [u32; 3]) -> Probe {
    type Function = unsafe extern "C" fn(u32, u32, u32) -> u32;
    // SAFETY: `f` is the address of one of the entry points above, each
    // taking three words or fewer; the ones that return nothing leave a
    // word the caller does not read.
    let f = unsafe { core::mem::transmute::<Entry, Function>(black_box(f)) };
    // SAFETY: as above.
    let returned = unsafe { f(args[0], args[1], args[2]) };
    Probe {
        args,
        returned,
        ..Probe::default()
    }
}

/// The counts the program prints.
#[derive(Default)]
struct Tally {
    calls: u32,
    wrong: u32,
    clobbered: u32,
    stack: u32,
}

impl Tally {
    /// Count one call: its return value against `returns`, if it has one,
    /// then the registers and stack it left.
    fn called(&mut self, probe: &Probe, returns: Option<u32>) {
        self.calls += 1;
        self.wrong += u32::from(returns.is_some_and(|r| r != probe.returned));
        self.clobbered += u32::from(probe.changed != 0 || probe.sp_before != probe.sp_after);
        self.stack = self.stack.max(probe.stack);
    }

    /// Count the bytes of `dst` that are not `expect(j)` at `at..at + n`
    /// and `outside(j)` elsewhere.
    fn check(
        &mut self,
        dst: &Buf,
        (at, n): (usize, usize),
        expect: impl Fn(usize) -> u8,
        outside: fn(usize) -> u8,
    ) {
        for (j, b) in dst.0.iter().enumerate() {
            let must = if (at..at + n).contains(&j) {
                expect(j)
            } else {
                outside(j)
            };
            self.wrong += u32::from(*b != must);
        }
    }
}

/// Fill `buf` with `byte(i)` at each `i`.
fn paint(buf: &mut Buf, byte: fn(usize) -> u8) {
    for (i, b) in buf.0.iter_mut().enumerate() {
        *b = byte(i);
    }
}

/// The offsets below `below` an entry point for `align`-byte aligned
/// pointers takes.
fn offsets(align: usize, below: usize) -> impl Iterator<Item = usize> + Clone {
    (0..below).filter(move |o| o & (align - 1) == 0)
}

/// Each pair of those offsets.
fn offset_pairs(align: usize, below: usize) -> impl Iterator<Item = (usize, usize)> {
    offsets(align, below).flat_map(move |s| offsets(align, below).map(move |d| (s, d)))
}

/// One copy or move by `f` of `n` bytes into `dst` at `d`, from `src` at
/// `s` (or from `dst` itself, for a move within one buffer), `dst`
/// painted with `before` first: the `n` bytes must read as the source's
/// from `s` did, every other byte as `before` left it, and C's entry
/// points (`returns`) must give the destination back.
fn one_case(
    t: &mut Tally,
    (f, returns): (Entry, bool),
    (dst, before): (&mut Buf, fn(usize) -> u8),
    src: Option<*const u8>,
    (s, d, n): (usize, usize, usize),
) {
    paint(dst, before);
    let base = dst.0.as_mut_ptr();
    let (to, from) = (base.wrapping_add(d), src.unwrap_or(base).wrapping_add(s));
    let probe = call(f, [to as u32, from as u32, n as u32]);
    t.called(&probe, returns.then_some(to as u32));
    let moved = |j: usize| source_byte((j + s).wrapping_sub(d));
    t.check(dst, (d, n), moved, before);
}

/// Every copy entry point, and every move entry point between two
/// buffers (so that a move that does not overlap is held to a copy's
/// bytes, whichever way it goes), every offset pair, every length, from
/// RAM and from flash; then `memcpy` onto itself.
fn copies(t: &mut Tally) {
    let (mut ram, mut dst) = (Buf([0; BYTES]), Buf([0; BYTES]));
    paint(&mut ram, source_byte);
    for &(f, align, returns) in COPY.iter().chain(MOVE) {
        for (s, d) in offset_pairs(align, OFFSETS) {
            for n in 0..=LONGEST {
                for src in [ram.0.as_ptr(), FLASH.0.as_ptr()] {
                    let into = (&mut dst, guard_byte as fn(usize) -> u8);
                    one_case(t, (f, returns), into, Some(src), (s, d, n));
                }
            }
        }
    }
    for at in offsets(1, OFFSETS) {
        for n in 0..=LONGEST {
            let onto = (&mut dst, source_byte as fn(usize) -> u8);
            one_case(t, (memcpy as Entry, true), onto, None, (at, at, n));
        }
    }
}

/// Every move entry point within one buffer, from each offset to each
/// offset below `MOVE_OFFSETS`, so that the two ranges overlap either
/// way, or are the same, or (when short) do not overlap at all, for every
/// length.
fn moves(t: &mut Tally) {
    let mut buf = Buf([0; BYTES]);
    for &(f, align, returns) in MOVE {
        for (s, d) in offset_pairs(align, MOVE_OFFSETS) {
            for n in 0..=LONGEST {
                let within = (&mut buf, source_byte as fn(usize) -> u8);
                one_case(t, (f, returns), within, None, (s, d, n));
            }
        }
    }
}

/// Every fill entry point, every offset, every length, with bytes given
/// in an `int` whose other bits are set; `memclr` with such an `int` left
/// in the register `memset` takes the byte in.
fn fills(t: &mut Tally) {
    /// The byte in the `int`'s low 8 bits, the others set.
    const VALUES: [u32; 4] = [0xffff_ff5a, 0x0000_01a5, 0x1234_5600, 0xdead_beff];
    let mut dst = Buf([0; BYTES]);
    for &(f, align, form) in FILL {
        for d in offsets(align, OFFSETS) {
            for n in 0..=LONGEST {
                for value in VALUES {
                    paint(&mut dst, guard_byte);
                    let to = dst.0.as_mut_ptr().wrapping_add(d) as u32;
                    let (args, byte, returns) = match form {
                        Form::C => ([to, value, n as u32], value as u8, Some(to)),
                        Form::Set => ([to, n as u32, value], value as u8, None),
                        Form::Clear => ([to, n as u32, value], 0, None),
                    };
                    t.called(&call(f, args), returns);
                    t.check(&dst, (d, n), |_| byte, guard_byte);
                }
            }
        }
    }
}

#[entry]
fn main() -> ! {
    let mut out = Console::open();
    let mut t = Tally::default();
    copies(&mut t);
    moves(&mut t);
    fills(&mut t);
    out.str("memcheck")
        .field("calls", t.calls)
        .field("wrong", t.wrong)
        .field("clobbered", t.clobbered)
        .field("stack", t.stack)
        .field("probed", u32::from(cfg!(target_arch = "arm")))
        .str("\n");
    exit(t.wrong == 0 && t.clobbered == 0 && t.calls > 0)
}
