@ memcpy, memmove and memset built for size, for the Cortex-M0 (ARMv6-M)
@ and the Cortex-M3 (ARMv7-M): see mem.rs, which links them into every
@ Arm firmware program. The Cortex-M0 code is assembled where
@ DENDRO_WIRE_ARMV6M is defined, the Cortex-M3 code elsewhere (the C
@ agent, built by arm-none-eabi-gcc for the Cortex-M3, links this file too).
@ GNU as and LLVM's assembler both read it.

    .syntax unified
    .thumb

@ Each function has three names in the ARM EABI, `__aeabi_<name>` and
@ its forms for 4- and 8-byte aligned pointers, all one code; memcpy,
@ memmove and memset have C's too. `eabi op, name` applies the macro `op`
@ to the EABI's three, `each op, name` to C's and then those.
.macro eabi op, name
    \op __aeabi_\name
    \op __aeabi_\name\()4
    \op __aeabi_\name\()8
.endm

.macro each op, name
    \op \name
    eabi \op, \name
.endm

@ A name made a global function.
.macro declare symbol
    .global \symbol
    .type \symbol, %function
.endm

@ A name given to the Thumb code that follows.
.macro entry symbol
    .thumb_func
\symbol:
.endm

@ A name's size: from it to here.
.macro sized symbol
    .size \symbol, . - \symbol
.endm

@ A function's section, its own, so that a program links only those it
@ calls, with its names declared.
.macro begin name
    .pushsection .text.dendro_wire_firmware.\name,"ax",%progbits
    .balign 2
    each declare, \name
.endm

@ A function's names sized, and its section left.
.macro finish name
    each sized, \name
    .popsection
.endm

@ memset's names, and memclr's, which share its code: C's memset takes
@ destination, byte, length, and is put in the EABI's order (destination,
@ length, byte) before it joins the EABI's memsets at 1:; the EABI's
@ memclrs join them with a zero byte. What follows 1: takes r0 the
@ destination, r1 the length, r2 the byte, and gives r0 back.
.macro memset_entries
    begin memset
    eabi declare, memclr
    entry memset
    mov r3, r1
    mov r1, r2
    mov r2, r3
    b 1f
    eabi entry, memclr
    movs r2, #0
    eabi entry, memset
.endm

.macro memset_end
    eabi sized, memclr
    finish memset
.endm

.ifdef DENDRO_WIRE_ARMV6M

    begin memcpy
    each entry, memcpy
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
    finish memcpy

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

    begin memmove
    each entry, memmove
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
    finish memmove

.else

    begin memcpy
    each entry, memcpy
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
    finish memcpy

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

    begin memmove
    each entry, memmove
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
    finish memmove

.endif
