//! What the firmware programs share and what has nothing to do with the
//! protocol, on each of the three targets (Cortex-M3, Cortex-M0, RISC-V):
//! the runtime's entry, the host's console, files and command line over
//! semihosting, the stack's high-water mark, numbers printed without
//! `core::fmt`, a panic handler that cannot link, a fault that says so
//! and stops QEMU, and on the Arm cores `memcpy`, `memset` and `memmove`
//! built for size (`mem.rs`).
//!
//! `core::fmt` is left out on purpose: it costs flash, and the footprint
//! `cargo xtask firmware` prints is meant to be the protocol's and the
//! runtime's, not a formatter's.

#![no_std]

use core::panic::PanicInfo;

/// `memcpy`, `memset` and `memmove` in place of the compiler's, on the
/// Arm cores.
#[cfg(any(size_built_mem = "armv6m", size_built_mem = "armv7m"))]
mod mem;

/// The program's entry: cortex-m-rt's or riscv-rt's `entry`.
#[cfg(target_arch = "arm")]
pub use cortex_m_rt::entry;
#[cfg(target_arch = "riscv32")]
pub use riscv_rt::entry;

/// A semihosting call: operation `nr` with its argument (a value, or the
/// address of a block of them), trapped to QEMU. ARM's is `bkpt 0xab`;
/// RISC-V's is `ebreak` between two marker instructions, uncompressed and
/// in one aligned block, which QEMU looks for around it.
///
/// # Safety
///
/// `arg` must be what operation `nr` takes: any address in it names live
/// memory of the size the operation reads or writes.
#[inline(always)]
unsafe fn semihost(nr: usize, arg: usize) -> usize {
    let mut r = nr;
    #[cfg(target_arch = "arm")]
    core::arch::asm!("bkpt #0xab", inout("r0") r, in("r1") arg, options(nostack, preserves_flags));
    #[cfg(target_arch = "riscv32")]
    core::arch::asm!(
        ".balign 16",
        ".option push",
        ".option norvc",
        "slli x0, x0, 0x1f",
        "ebreak",
        "srai x0, x0, 0x7",
        ".option pop",
        inout("a0") r,
        in("a1") arg,
        options(nostack, preserves_flags),
    );
    r
}

/// The semihosting operations these programs use.
mod nr {
    pub const OPEN: usize = 0x01;
    pub const CLOSE: usize = 0x02;
    pub const WRITE: usize = 0x05;
    pub const GET_CMDLINE: usize = 0x15;
    pub const EXIT: usize = 0x18;
    /// `SYS_OPEN` modes: "w" and "wb".
    pub const W_TRUNC: usize = 4;
    pub const W_TRUNC_BINARY: usize = 5;
    /// `SYS_EXIT` reasons: the program ended, or failed.
    pub const APPLICATION_EXIT: usize = 0x20026;
    pub const RUN_TIME_ERROR: usize = 0x20023;
}

/// A semihosting call with a block of arguments.
fn semihost_block<const N: usize>(nr: usize, block: &[usize; N]) -> usize {
    // SAFETY: every caller passes the block its operation reads; the
    // addresses in it are live slices of the lengths given beside them.
    unsafe { semihost(nr, block.as_ptr() as usize) }
}

/// The host's standard output, through QEMU's semihosting.
pub struct Console(usize);

impl Console {
    /// Open the host's standard output (semihosting's `:tt`).
    pub fn open() -> Console {
        // A NUL-terminated name and its length without the NUL, as SYS_OPEN
        // asks.
        let name = c":tt";
        Console(semihost_block(
            nr::OPEN,
            &[name.as_ptr() as usize, nr::W_TRUNC, 3],
        ))
    }

    /// Write a string. Out of line, as are the others: a report is many
    /// calls, and each inlined semihosting call was flash.
    #[inline(never)]
    pub fn str(&mut self, s: &str) -> &mut Self {
        // Nothing to do if the console fails: it is where failures go.
        let _ = write_all(self.0, s.as_bytes());
        self
    }

    /// Write a number in decimal, each digit by subtracting its power of
    /// ten: a Cortex-M0 has no divide instruction, and the software one
    /// costs flash (`cargo xtask firmware` prints the footprint).
    pub fn num(&mut self, n: u32) -> &mut Self {
        const POWERS: [u32; 10] = [
            1_000_000_000,
            100_000_000,
            10_000_000,
            1_000_000,
            100_000,
            10_000,
            1_000,
            100,
            10,
            1,
        ];
        let mut digits = [b'0'; 10];
        let (mut n, mut first) = (n, POWERS.len() - 1);
        for (i, (d, p)) in digits.iter_mut().zip(POWERS).enumerate() {
            while n >= p {
                n -= p;
                *d += 1;
            }
            if *d != b'0' && first > i {
                first = i;
            }
        }
        let _ = write_all(self.0, digits.get(first..).unwrap_or(&[]));
        self
    }

    /// Write ` key=value`, the form `cargo xtask firmware` reads.
    pub fn field(&mut self, key: &str, value: u32) -> &mut Self {
        self.str(" ").str(key).str("=").num(value)
    }
}

/// Write `name` and a publisher's row counts as fields, with no newline,
/// and say whether every row observed was sent and none refused: what each
/// publishing program's last line reports and its exit status checks.
pub fn publisher_counts(
    out: &mut Console,
    name: &str,
    stats: &dendro_wire_core::PublisherStats,
) -> bool {
    out.str(name)
        .field("rows_observed", stats.rows_observed as u32)
        .field("rows_sent", stats.rows_sent as u32)
        .field("rows_refused", stats.rows_refused as u32);
    stats.rows_refused == 0 && stats.rows_sent == stats.rows_observed
}

/// What `dendro-wire check --json` must say of one connection's stream,
/// as the program that wrote it counted: the figures it can know, the
/// others zero.
#[derive(Default)]
pub struct ExpectedCounts {
    pub frames: u32,
    pub sources: u32,
    pub index_entries: u32,
    pub rows_applied: u32,
    pub gaps: u32,
    pub frames_lost: u32,
}

impl ExpectedCounts {
    /// Write `connection N` and every figure as fields, with no newline
    /// (the caller may add its own).
    pub fn print<'c>(&self, out: &'c mut Console, connection: u32) -> &'c mut Console {
        out.str("connection ")
            .num(connection)
            .field("frames", self.frames)
            .field("sources", self.sources)
            .field("index_entries", self.index_entries)
            .field("rows_applied", self.rows_applied)
            .field("rows_skipped", 0)
            .field("segments", 0)
            .field("clock_offsets", 0)
            .field("source_updates", 0)
            .field("unknown_skipped", 0)
            .field("gaps", self.gaps)
            .field("frames_lost", self.frames_lost)
            .field("seq_regressions", 0)
    }
}

/// A file on the host, created (or truncated) in QEMU's working directory.
pub struct HostFile(usize);

impl HostFile {
    /// Create the file named by `name`'s bytes before its last, which must
    /// be a NUL (semihosting wants one) for writing. Bytes and a NUL rather
    /// than a `CStr`, whose making and measuring were two scans of the
    /// name and cost flash (`cargo xtask firmware` prints the footprint).
    pub fn create(name: &[u8]) -> Option<HostFile> {
        let (&0, bytes) = name.split_last()? else {
            return None;
        };
        // As in `Console::open`: the name's bytes, their length without
        // the NUL, and the NUL right after them.
        let block = [bytes.as_ptr() as usize, nr::W_TRUNC_BINARY, bytes.len()];
        let fd = semihost_block(nr::OPEN, &block);
        (fd as isize != -1).then_some(HostFile(fd))
    }

    /// Write all of `bytes`; `false` if the host refused.
    pub fn write_all(&mut self, bytes: &[u8]) -> bool {
        write_all(self.0, bytes)
    }

    /// Close the file; `false` if the host refused.
    pub fn close(self) -> bool {
        // A handle this program opened.
        semihost_block(nr::CLOSE, &[self.0]) == 0
    }
}

fn write_all(fd: usize, bytes: &[u8]) -> bool {
    // SYS_WRITE returns the number of bytes it did not write; QEMU writes
    // all or nothing.
    semihost_block(nr::WRITE, &[fd, bytes.as_ptr() as usize, bytes.len()]) == 0
}

/// The command line QEMU was given (`-semihosting-config arg=...`), its
/// words separated by spaces, read into `buf`.
pub fn command_line(buf: &mut [u8]) -> &[u8] {
    // SYS_GET_CMDLINE takes a buffer and its size, and writes the length
    // it used back into the second word.
    let mut block = [buf.as_mut_ptr() as usize, buf.len()];
    // SAFETY: the block names a live buffer of that size; the host writes
    // at most that many bytes into it and the length into the block.
    let failed = unsafe { semihost(nr::GET_CMDLINE, block.as_mut_ptr() as usize) } != 0;
    let len = if failed { 0 } else { block[1].min(buf.len()) };
    &buf[..len]
}

/// A `key=N` on the command line whose `N` is not a whole number of at most
/// nine digits.
#[derive(Debug)]
pub struct NotANumber;

/// The value of `key=N` on the command line, `Ok(None)` if not given.
pub fn command_line_number(line: &[u8], key: &str) -> Result<Option<u32>, NotANumber> {
    let given = line
        .split(|b| *b == b' ')
        .find_map(|word| word.strip_prefix(key.as_bytes())?.strip_prefix(b"="));
    let Some(digits) = given else {
        return Ok(None);
    };
    if digits.is_empty() || digits.len() > 9 {
        return Err(NotANumber);
    }
    digits
        .iter()
        .try_fold(0u32, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
        .map(Some)
        .ok_or(NotANumber)
}

/// Stop QEMU with the program's outcome as its exit status.
pub fn exit(ok: bool) -> ! {
    let reason = if ok {
        nr::APPLICATION_EXIT
    } else {
        nr::RUN_TIME_ERROR
    };
    // SAFETY: on a 32-bit target SYS_EXIT takes the reason itself.
    unsafe { semihost(nr::EXIT, reason) };
    // Only without a debugger or QEMU does exit return.
    loop {
        core::hint::spin_loop();
    }
}

/// The stack's high-water mark.
///
/// Every word from the bottom of the stack region to the top of RAM is
/// painted with one value before `main` runs (cortex-m-rt's `paint-stack`)
/// or as it starts ([`paint`], on RISC-V); a word the program ever used no
/// longer holds it.
pub mod stack {
    /// The value the stack is painted with (cortex-m-rt's).
    const PAINT: u32 = 0xCCCC_CCCC;

    // The stack region's ends, from the runtime's linker script: its top
    // (where it starts) and its bottom.
    #[cfg(target_arch = "arm")]
    extern "C" {
        static _stack_start: u32;
        #[link_name = "_stack_end"]
        static STACK_BOTTOM: u32;
    }
    #[cfg(target_arch = "riscv32")]
    extern "C" {
        static _stack_start: u32;
        #[link_name = "__estack"]
        static STACK_BOTTOM: u32;
    }

    fn bounds() -> (usize, usize) {
        (
            core::ptr::addr_of!(STACK_BOTTOM) as usize,
            core::ptr::addr_of!(_stack_start) as usize,
        )
    }

    /// Paint the stack below the caller's frame, where cortex-m-rt has not:
    /// call first thing in `main`.
    #[inline(always)]
    pub fn paint() {
        #[cfg(target_arch = "riscv32")]
        {
            let sp: usize;
            // SAFETY: reads the stack pointer, nothing else.
            unsafe { core::arch::asm!("mv {}, sp", out(reg) sp) };
            let (bottom, _) = bounds();
            // Nothing below the stack pointer is live; a margin for the
            // loop's own spills.
            let mut at = bottom;
            while at + 64 < sp {
                // SAFETY: a word of the stack region below every live frame.
                unsafe { core::ptr::write_volatile(at as *mut u32, PAINT) };
                at += 4;
            }
        }
    }

    /// The bytes the stack region holds.
    pub fn size() -> usize {
        let (end, start) = bounds();
        start - end
    }

    /// Print `footprint stack_peak=.. stack_size=.. frame_buffer=..`, for
    /// the caller to add its own figures and end the line.
    pub fn report(out: &mut super::Console, frame_buffer: usize) -> &mut super::Console {
        out.str("footprint")
            .field("stack_peak", peak() as u32)
            .field("stack_size", size() as u32)
            .field("frame_buffer", frame_buffer as u32)
    }

    /// The most bytes of stack used so far: from the top of RAM down to the
    /// lowest word that lost its paint.
    pub fn peak() -> usize {
        let (end, start) = bounds();
        let mut at = end;
        // SAFETY: every address read is a word of the stack region, which
        // is RAM and aligned to 4 (both runtimes assert it).
        while at < start && unsafe { core::ptr::read_volatile(at as *const u32) } == PAINT {
            at += 4;
        }
        start - at
    }
}

/// The instructions a stretch of a program takes, counted on the
/// Cortex-M3 under QEMU's `-icount shift=0` (one instruction a nanosecond
/// of emulated time) through SysTick, which counts down at the core clock:
/// a build with feature `measure`. Without it, every count is 0 and
/// nothing is printed, so a program measures in one place for both builds.
pub mod measure {
    #[cfg(feature = "measure")]
    mod systick {
        use core::ptr::{read_volatile, write_volatile};
        use core::sync::atomic::{compiler_fence, Ordering};

        const CSR: usize = 0xE000_E010;
        const RVR: usize = 0xE000_E014;
        const CVR: usize = 0xE000_E018;
        pub const MASK: u32 = 0x00FF_FFFF;

        pub fn start() {
            // SAFETY: SysTick's registers, as words; nothing else uses it.
            unsafe {
                write_volatile(RVR as *mut u32, MASK);
                write_volatile(CVR as *mut u32, 0);
                // ENABLE and CLKSOURCE (the core clock), no interrupt.
                write_volatile(CSR as *mut u32, 0b101);
            }
        }

        /// The counter, read where the program reads it: the fences keep
        /// the compiler from moving the memory accesses of the work before
        /// or after into the stretch measured, or out of it.
        pub fn now() -> u32 {
            compiler_fence(Ordering::SeqCst);
            // SAFETY: as in `start`.
            let now = unsafe { read_volatile(CVR as *const u32) };
            compiler_fence(Ordering::SeqCst);
            now
        }
    }

    /// Start SysTick, free-running down from its largest reload.
    pub fn start() {
        #[cfg(feature = "measure")]
        systick::start();
    }

    /// The counter now.
    pub fn now() -> u32 {
        #[cfg(feature = "measure")]
        return systick::now();
        #[cfg(not(feature = "measure"))]
        0
    }

    /// Ticks since `at` (a stretch far shorter than a wrap).
    pub fn since(at: u32) -> u32 {
        #[cfg(feature = "measure")]
        return at.wrapping_sub(now()) & systick::MASK;
        #[cfg(not(feature = "measure"))]
        {
            let _ = at;
            0
        }
    }

    /// Print ` key=ticks`.
    pub fn report(out: &mut super::Console, key: &str, ticks: u32) {
        #[cfg(feature = "measure")]
        out.field(key, ticks);
        #[cfg(not(feature = "measure"))]
        let _ = (out, key, ticks);
    }

    /// Print what calibrates a tick: the ticks a loop of a known number of
    /// instructions (`subs`, `bne`) took.
    pub fn calibration(out: &mut super::Console) {
        #[cfg(feature = "measure")]
        {
            const LOOP: u32 = 100_000;
            let at = now();
            // SAFETY: a counted loop on one register.
            unsafe {
                core::arch::asm!("1:", "subs {0}, #1", "bne 1b", inout(reg) LOOP => _, options(nomem, nostack));
            }
            let ticks = since(at);
            out.field("calibration_instructions", 2 * LOOP)
                .field("calibration_ticks", ticks);
        }
        #[cfg(not(feature = "measure"))]
        let _ = out;
    }
}

/// No panic path survives in these programs, and the link proves it: this
/// handler calls a function nothing defines, so a build in which anything
/// can still panic (an index, an `unwrap`, an overflow check, a slice
/// bound) fails to link, naming it. LTO drops the handler, and the call,
/// only when no panic is reachable. The network agent keeps a handler that
/// reports: smoltcp has panic paths of its own (feature `net`), and so
/// has embassy-net (feature `embassy`).
#[cfg(not(any(feature = "net", feature = "embassy")))]
#[panic_handler]
fn panic(_: &PanicInfo<'_>) -> ! {
    extern "Rust" {
        /// Deliberately undefined.
        fn a_panic_path_survives_in_this_firmware_build_see_xtask_firmware_rs() -> !;
    }
    // SAFETY: never runs: the program does not link if it could.
    unsafe { a_panic_path_survives_in_this_firmware_build_see_xtask_firmware_rs() }
}

/// A panic in the network agents: the file and line, then QEMU stops with
/// a failure. The message is not printed, which would take `core::fmt`.
#[cfg(any(feature = "net", feature = "embassy"))]
#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    let mut out = Console::open();
    out.str("panic");
    if let Some(at) = info.location() {
        out.str(" at ").str(at.file()).str(":").num(at.line());
    }
    out.str("\n");
    exit(false)
}

/// A fault: said, and QEMU stops with a failure rather than hanging until
/// the timeout.
#[cfg(target_arch = "arm")]
#[cortex_m_rt::exception]
unsafe fn HardFault(_: &cortex_m_rt::ExceptionFrame) -> ! {
    Console::open().str("hard fault\n");
    exit(false)
}

/// The same for a RISC-V exception (riscv-rt calls it for every one).
#[cfg(target_arch = "riscv32")]
#[export_name = "ExceptionHandler"]
fn exception(_: &riscv_rt::TrapFrame) -> ! {
    Console::open().str("exception\n");
    exit(false)
}

/// The interrupt vectors after the exceptions: one, since no program here
/// takes an interrupt (cortex-m-rt's `device` feature wants at least one,
/// and without the feature would reserve 240).
#[cfg(target_arch = "arm")]
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
static __INTERRUPTS: [unsafe extern "C" fn(); 1] = [DefaultHandler];

#[cfg(target_arch = "arm")]
extern "C" {
    /// cortex-m-rt's handler for an exception or interrupt with none of
    /// its own.
    fn DefaultHandler();
}
