@ memcpy, memmove and memset built for size, for the Cortex-M0 (ARMv6-M)
@ and the Cortex-M3 (ARMv7-M): see mem.rs, which links them into every
@ Arm firmware program. The Cortex-M0 code is assembled where
@ DENDRO_WIRE_ARMV6M is defined, the Cortex-M3 code elsewhere (the C
@ agent, built by arm-none-eabi-gcc for the Cortex-M3, links this file too).
@ GNU as and LLVM's assembler both read it.

    .syntax unified
    .thumb

@ The section and entry points of memcpy: the C symbol and the EABI's
@ three, one code. What follows takes r0 the destination, r1 the source,
@ r2 the length, and gives r0 back.
.macro memcpy_entries
    .pushsection .text.dendro_wire_firmware.memcpy,"ax",%progbits
    .balign 2
    .global memcpy
    .global __aeabi_memcpy
    .global __aeabi_memcpy4
    .global __aeabi_memcpy8
    .type memcpy, %function
    .type __aeabi_memcpy, %function
    .type __aeabi_memcpy4, %function
    .type __aeabi_memcpy8, %function
    .thumb_func
memcpy:
    .thumb_func
__aeabi_memcpy:
    .thumb_func
__aeabi_memcpy4:
    .thumb_func
__aeabi_memcpy8:
.endm

@ The section and entry points of memset: C's, whose order is destination,
@ byte, length, put in the EABI's (destination, length, byte) before it
@ joins the EABI's memsets at 1:; the EABI's memclrs, which join them
@ with a zero byte. What follows 1: takes r0 the destination, r1 the
@ length, r2 the byte, and gives r0 back.
.macro memset_entries
    .pushsection .text.dendro_wire_firmware.memset,"ax",%progbits
    .balign 2
    .global memset
    .global __aeabi_memset
    .global __aeabi_memset4
    .global __aeabi_memset8
    .global __aeabi_memclr
    .global __aeabi_memclr4
    .global __aeabi_memclr8
    .type memset, %function
    .type __aeabi_memset, %function
    .type __aeabi_memset4, %function
    .type __aeabi_memset8, %function
    .type __aeabi_memclr, %function
    .type __aeabi_memclr4, %function
    .type __aeabi_memclr8, %function
    .thumb_func
memset:
    mov r3, r1
    mov r1, r2
    mov r2, r3
    b 1f
    .thumb_func
__aeabi_memclr:
    .thumb_func
__aeabi_memclr4:
    .thumb_func
__aeabi_memclr8:
    movs r2, #0
    .thumb_func
__aeabi_memset:
    .thumb_func
__aeabi_memset4:
    .thumb_func
__aeabi_memset8:
.endm

@ The section and entry points of memmove: the C symbol and the EABI's
@ three, one code, in a section of its own, linked only where something
@ moves overlapping bytes. What follows takes r0 the destination, r1 the
@ source, r2 the length, and gives r0 back.
.macro memmove_entries
    .pushsection .text.dendro_wire_firmware.memmove,"ax",%progbits
    .balign 2
    .global memmove
    .global __aeabi_memmove
    .global __aeabi_memmove4
    .global __aeabi_memmove8
    .type memmove, %function
    .type __aeabi_memmove, %function
    .type __aeabi_memmove4, %function
    .type __aeabi_memmove8, %function
    .thumb_func
memmove:
    .thumb_func
__aeabi_memmove:
    .thumb_func
__aeabi_memmove4:
    .thumb_func
__aeabi_memmove8:
.endm

@ Each entry point's size, to the end of its code, and the section left.
.macro memcpy_end
    .size memcpy, . - memcpy
    .size __aeabi_memcpy, . - __aeabi_memcpy
    .size __aeabi_memcpy4, . - __aeabi_memcpy4
    .size __aeabi_memcpy8, . - __aeabi_memcpy8
    .popsection
.endm

.macro memset_end
    .size memset, . - memset
    .size __aeabi_memset, . - __aeabi_memset
    .size __aeabi_memset4, . - __aeabi_memset4
    .size __aeabi_memset8, . - __aeabi_memset8
    .size __aeabi_memclr, . - __aeabi_memclr
    .size __aeabi_memclr4, . - __aeabi_memclr4
    .size __aeabi_memclr8, . - __aeabi_memclr8
    .popsection
.endm

.macro memmove_end
    .size memmove, . - memmove
    .size __aeabi_memmove, . - __aeabi_memmove
    .size __aeabi_memmove4, . - __aeabi_memmove4
    .size __aeabi_memmove8, . - __aeabi_memmove8
    .popsection
.endm

.ifdef DENDRO_WIRE_ARMV6M

    memcpy_entries
    @ r0 destination, r1 source, r2 length; r0 is given back.
    push {r0, r4, r5, r6, r7, lr}
    cmp r2, #8
    blo 6f
    @ Align the destination.
1:  lsls r3, r0, #30
    beq 2f
    ldrb r3, [r1]
    strb r3, [r0]
    adds r0, #1
    adds r1, #1
    subs r2, #1
    b 1b
2:  movs r4, #3
    ands r4, r1
    bne 4f
    @ Both aligned: whole words.
3:  subs r2, #4
    bcc 5f
    ldmia r1!, {r3}
    stmia r0!, {r3}
    b 3b
    @ The source `k` = r4 bytes past a word: each word stored is the
    @ last 4 - k bytes of one aligned word and the first k of the next.
4:  subs r1, r4
    lsls r4, r4, #3
    movs r5, #32
    subs r5, r4
    ldmia r1!, {r6}
7:  subs r2, #4
    bcc 8f
    ldmia r1!, {r7}
    lsrs r6, r4
    mov r3, r7
    lsls r3, r5
    orrs r6, r3
    stmia r0!, {r6}
    mov r6, r7
    b 7b
    @ Back to the byte the next word would have started with.
8:  subs r1, #4
    lsrs r4, r4, #3
    adds r1, r4
5:  adds r2, #4
    @ The bytes left, from the last.
6:  subs r2, #1
    bcc 9f
    ldrb r3, [r1, r2]
    strb r3, [r0, r2]
    b 6b
9:  pop {r0, r4, r5, r6, r7, pc}
    memcpy_end

    memset_entries
    @ r0 destination, r1 length, r2 the byte; r0 is given back.
1:  mov r12, r0
    uxtb r2, r2
    lsls r3, r2, #8
    orrs r2, r3
    lsls r3, r2, #16
    orrs r2, r3
    @ Align the destination.
2:  lsls r3, r0, #30
    beq 3f
    subs r1, #1
    bcc 5f
    strb r2, [r0]
    adds r0, #1
    b 2b
3:  subs r1, #4
    bcc 4f
    stmia r0!, {r2}
    b 3b
4:  adds r1, #4
6:  subs r1, #1
    bcc 5f
    strb r2, [r0, r1]
    b 6b
5:  mov r0, r12
    bx lr
    memset_end

    memmove_entries
    @ Bytes that do not overlap go to memcpy; overlapping ones a byte at
    @ a time, from the first when the destination is before the source,
    @ from the last when it is after (or the same).
    subs r3, r0, r1
    cmp r3, r2
    blo 2f
    subs r3, r1, r0
    cmp r3, r2
    blo 1f
    ldr r3, =memcpy
    bx r3
1:  mov r12, r0
3:  subs r2, #1
    bcc 4f
    ldrb r3, [r1]
    strb r3, [r0]
    adds r0, #1
    adds r1, #1
    b 3b
4:  mov r0, r12
    bx lr
2:  subs r2, #1
    bcc 5f
    ldrb r3, [r1, r2]
    strb r3, [r0, r2]
    b 2b
5:  bx lr
    .ltorg
    memmove_end

.else

    memcpy_entries
    @ r0 destination, r1 source, r2 length; r0 is given back. Words at
    @ any alignment, then the bytes left, each loaded before it or any
    @ byte after it is stored, so that memmove may use it when the
    @ destination lies before the source.
    mov r12, r0
1:  subs r2, #4
    bcc 2f
    ldr r3, [r1], #4
    str r3, [r0], #4
    b 1b
2:  adds r2, #4
3:  subs r2, #1
    bcc 4f
    ldrb r3, [r1], #1
    strb r3, [r0], #1
    b 3b
4:  mov r0, r12
    bx lr
    memcpy_end

    memset_entries
    @ r0 destination, r1 length, r2 the byte; r0 is given back.
1:  mov r12, r0
    uxtb r2, r2
    orr r2, r2, r2, lsl #8
    orr r2, r2, r2, lsl #16
2:  subs r1, #4
    bcc 3f
    str r2, [r0], #4
    b 2b
3:  adds r1, #4
4:  subs r1, #1
    bcc 5f
    strb r2, [r0, r1]
    b 4b
5:  mov r0, r12
    bx lr
    memset_end

    memmove_entries
    @ A destination outside the source's bytes is memcpy's, which stores
    @ no byte before it is loaded; one inside them (at the source's first
    @ byte included) goes from the last byte: words at any alignment,
    @ then bytes.
    subs r3, r0, r1
    cmp r3, r2
    bhs.w memcpy
    mov r12, r0
    adds r0, r2
    adds r1, r2
5:  subs r2, #4
    bcc 6f
    ldr r3, [r1, #-4]!
    str r3, [r0, #-4]!
    b 5b
6:  adds r2, #4
7:  subs r2, #1
    bcc 9f
    ldrb r3, [r1, #-1]!
    strb r3, [r0, #-1]!
    b 7b
9:  mov r0, r12
    bx lr
    memmove_end

.endif
