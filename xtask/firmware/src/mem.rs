//! `memcpy` and `memset` built for size, for the Arm cores (`build.rs`
//! says which, as `cfg(size_built_mem)`): linked in place of
//! `compiler_builtins`' own, which are built for speed and were 0.9 KB of a
//! 14 KiB Cortex-M0 program and 1.3 KB of a Cortex-M3 one (`cargo xtask
//! firmware` prints the footprint). `compiler_builtins` defines its copies
//! weak, so these, strong, are the ones every call reaches: the
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
//! The `memcheck` program holds both to a byte-by-byte expectation over
//! every alignment of source and destination and every length to past the
//! shifted path's first words, and to their return values, on each board,
//! as `cargo xtask firmware` runs it.

/// The section and entry points of `memcpy`: the C symbol and the EABI's
/// three, one code. What follows takes r0 the destination, r1 the source,
/// r2 the length, and gives r0 back.
macro_rules! memcpy_entries {
    () => {
        concat!(
            ".section .text.dendro_wire_firmware.memcpy,\"ax\",%progbits\n",
            ".balign 2\n",
            ".global memcpy\n",
            ".global __aeabi_memcpy\n",
            ".global __aeabi_memcpy4\n",
            ".global __aeabi_memcpy8\n",
            ".type memcpy, %function\n",
            ".thumb_func\n",
            "memcpy:\n",
            ".thumb_func\n",
            "__aeabi_memcpy:\n",
            ".thumb_func\n",
            "__aeabi_memcpy4:\n",
            ".thumb_func\n",
            "__aeabi_memcpy8:",
        )
    };
}

/// The section and entry points of `memset`: C's, whose order is
/// destination, byte, length, put in the EABI's (destination, length,
/// byte) before it joins the EABI's `memset`s at `1:`; the EABI's `memclr`s,
/// which join them with a zero byte. What follows `1:` takes r0 the
/// destination, r1 the length, r2 the byte, and gives r0 back.
macro_rules! memset_entries {
    () => {
        concat!(
            ".section .text.dendro_wire_firmware.memset,\"ax\",%progbits\n",
            ".balign 2\n",
            ".global memset\n",
            ".global __aeabi_memset\n",
            ".global __aeabi_memset4\n",
            ".global __aeabi_memset8\n",
            ".global __aeabi_memclr\n",
            ".global __aeabi_memclr4\n",
            ".global __aeabi_memclr8\n",
            ".type memset, %function\n",
            ".thumb_func\n",
            "memset:\n",
            "    mov r3, r1\n",
            "    mov r1, r2\n",
            "    mov r2, r3\n",
            "    b 1f\n",
            ".thumb_func\n",
            "__aeabi_memclr:\n",
            ".thumb_func\n",
            "__aeabi_memclr4:\n",
            ".thumb_func\n",
            "__aeabi_memclr8:\n",
            "    movs r2, #0\n",
            ".thumb_func\n",
            "__aeabi_memset:\n",
            ".thumb_func\n",
            "__aeabi_memset4:\n",
            ".thumb_func\n",
            "__aeabi_memset8:",
        )
    };
}

#[cfg(size_built_mem = "armv6m")]
core::arch::global_asm!(
    memcpy_entries!(),
    // r0 destination, r1 source, r2 length; r0 is given back.
    "    push {{r0, r4, r5, r6, r7, lr}}",
    "    cmp r2, #8",
    "    blo 6f",
    // Align the destination.
    "1:  lsls r3, r0, #30",
    "    beq 2f",
    "    ldrb r3, [r1]",
    "    strb r3, [r0]",
    "    adds r0, #1",
    "    adds r1, #1",
    "    subs r2, #1",
    "    b 1b",
    "2:  movs r4, #3",
    "    ands r4, r1",
    "    bne 4f",
    // Both aligned: whole words.
    "3:  subs r2, #4",
    "    bcc 5f",
    "    ldmia r1!, {{r3}}",
    "    stmia r0!, {{r3}}",
    "    b 3b",
    // The source `k` = r4 bytes past a word: each word stored is the
    // last 4 - k bytes of one aligned word and the first k of the next.
    "4:  subs r1, r4",
    "    lsls r4, r4, #3",
    "    movs r5, #32",
    "    subs r5, r4",
    "    ldmia r1!, {{r6}}",
    "7:  subs r2, #4",
    "    bcc 8f",
    "    ldmia r1!, {{r7}}",
    "    lsrs r6, r4",
    "    mov r3, r7",
    "    lsls r3, r5",
    "    orrs r6, r3",
    "    stmia r0!, {{r6}}",
    "    mov r6, r7",
    "    b 7b",
    // Back to the byte the next word would have started with.
    "8:  subs r1, #4",
    "    lsrs r4, r4, #3",
    "    adds r1, r4",
    "5:  adds r2, #4",
    // The bytes left, from the last.
    "6:  subs r2, #1",
    "    bcc 9f",
    "    ldrb r3, [r1, r2]",
    "    strb r3, [r0, r2]",
    "    b 6b",
    "9:  pop {{r0, r4, r5, r6, r7, pc}}",
    ".size memcpy, . - memcpy",
);

#[cfg(size_built_mem = "armv6m")]
core::arch::global_asm!(
    memset_entries!(),
    // r0 destination, r1 length, r2 the byte; r0 is given back.
    "1:  mov r12, r0",
    "    uxtb r2, r2",
    "    lsls r3, r2, #8",
    "    orrs r2, r3",
    "    lsls r3, r2, #16",
    "    orrs r2, r3",
    // Align the destination.
    "2:  lsls r3, r0, #30",
    "    beq 3f",
    "    subs r1, #1",
    "    bcc 5f",
    "    strb r2, [r0]",
    "    adds r0, #1",
    "    b 2b",
    "3:  subs r1, #4",
    "    bcc 4f",
    "    stmia r0!, {{r2}}",
    "    b 3b",
    "4:  adds r1, #4",
    "6:  subs r1, #1",
    "    bcc 5f",
    "    strb r2, [r0, r1]",
    "    b 6b",
    "5:  mov r0, r12",
    "    bx lr",
    ".size memset, . - memset",
);

#[cfg(size_built_mem = "armv7m")]
core::arch::global_asm!(
    memcpy_entries!(),
    // r0 destination, r1 source, r2 length; r0 is given back. Words at
    // any alignment, then the bytes left, from the last.
    "    mov r12, r0",
    "1:  subs r2, #4",
    "    bcc 2f",
    "    ldr r3, [r1], #4",
    "    str r3, [r0], #4",
    "    b 1b",
    "2:  adds r2, #4",
    "3:  subs r2, #1",
    "    bcc 4f",
    "    ldrb r3, [r1, r2]",
    "    strb r3, [r0, r2]",
    "    b 3b",
    "4:  mov r0, r12",
    "    bx lr",
    ".size memcpy, . - memcpy",
);

#[cfg(size_built_mem = "armv7m")]
core::arch::global_asm!(
    memset_entries!(),
    // r0 destination, r1 length, r2 the byte; r0 is given back.
    "1:  mov r12, r0",
    "    uxtb r2, r2",
    "    orr r2, r2, r2, lsl #8",
    "    orr r2, r2, r2, lsl #16",
    "2:  subs r1, #4",
    "    bcc 3f",
    "    str r2, [r0], #4",
    "    b 2b",
    "3:  adds r1, #4",
    "4:  subs r1, #1",
    "    bcc 5f",
    "    strb r2, [r0, r1]",
    "    b 4b",
    "5:  mov r0, r12",
    "    bx lr",
    ".size memset, . - memset",
);
