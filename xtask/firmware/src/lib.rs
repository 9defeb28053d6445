//! What the two firmware programs share and what has nothing to do with the
//! protocol: the host's console, files and command line over semihosting,
//! the stack's high-water mark, numbers printed without `core::fmt`, and a
//! panic that says where and stops QEMU.
//!
//! `core::fmt` is left out on purpose: it was 1.5 KiB of the agent's flash,
//! and the footprint `cargo xtask firmware` prints is meant to be the
//! protocol's and the runtime's, not a formatter's.

#![no_std]

use core::panic::PanicInfo;

use cortex_m_rt::{exception, ExceptionFrame};
use cortex_m_semihosting::{debug, nr, syscall, syscall1};
// The board's interrupt vectors (44 on the LM3S6965): cortex-m-rt's
// `device` feature takes them from here instead of reserving 240.
use lm3s6965 as _;

/// The host's standard output, through QEMU's semihosting.
pub struct Console(usize);

impl Console {
    /// Open the host's standard output (semihosting's `:tt`).
    pub fn open() -> Console {
        // SAFETY: a semihosting call with a NUL-terminated name and its
        // length without the NUL, as SYS_OPEN asks.
        let fd = unsafe { syscall!(OPEN, c":tt".as_ptr(), nr::open::W_TRUNC, 3) };
        Console(fd)
    }

    /// Write a string. Out of line, as are the others: a report is many
    /// calls, and each inlined semihosting call was flash.
    #[inline(never)]
    pub fn str(&mut self, s: &str) -> &mut Self {
        // Nothing to do if the console fails: it is where failures go.
        let _ = write_all(self.0, s.as_bytes());
        self
    }

    /// Write a number in decimal. A `u32`: 64-bit division would bring in
    /// a software divide this target does not otherwise need.
    pub fn num(&mut self, n: u32) -> &mut Self {
        let mut digits = [0u8; 10];
        let mut n = n;
        let mut used = 0;
        // From the last digit back; a `u32` has at most ten.
        for d in digits.iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
            used += 1;
            if n == 0 {
                break;
            }
        }
        let _ = write_all(self.0, digits.get(digits.len() - used..).unwrap_or(&[]));
        self
    }

    /// Write ` key=value`, the form `cargo xtask firmware` reads.
    pub fn field(&mut self, key: &str, value: u32) -> &mut Self {
        self.str(" ").str(key).str("=").num(value)
    }
}

/// A file on the host, created (or truncated) in QEMU's working directory.
pub struct HostFile(usize);

impl HostFile {
    /// Create the file named by `name`'s bytes before its last, which must
    /// be a NUL (semihosting wants one) for writing. Bytes and a NUL rather
    /// than a `CStr`, whose making and measuring were two scans of the
    /// name and 90 bytes of flash (as `cargo xtask firmware` prints it).
    pub fn create(name: &[u8]) -> Option<HostFile> {
        let (&0, bytes) = name.split_last()? else {
            return None;
        };
        // SAFETY: as in `Console::open`: the name's bytes, their length
        // without the NUL, and the NUL right after them.
        let fd = unsafe { syscall!(OPEN, bytes.as_ptr(), nr::open::W_TRUNC_BINARY, bytes.len()) };
        (fd as isize != -1).then_some(HostFile(fd))
    }

    /// Write all of `bytes`; `false` if the host refused.
    pub fn write_all(&mut self, bytes: &[u8]) -> bool {
        write_all(self.0, bytes)
    }

    /// Close the file; `false` if the host refused.
    pub fn close(self) -> bool {
        // SAFETY: a semihosting call on a handle this program opened.
        unsafe { syscall!(CLOSE, self.0) == 0 }
    }
}

fn write_all(fd: usize, bytes: &[u8]) -> bool {
    // SYS_WRITE returns the number of bytes it did not write; QEMU writes
    // all or nothing.
    // SAFETY: the pointer and length are a live slice's.
    unsafe { syscall!(WRITE, fd, bytes.as_ptr(), bytes.len()) == 0 }
}

/// The command line QEMU was given (`-semihosting-config arg=...`), its
/// words separated by spaces, read into `buf`.
pub fn command_line(buf: &mut [u8]) -> &[u8] {
    // SYS_GET_CMDLINE takes a buffer and its size, and writes the length
    // it used back into the second word.
    let mut block = [buf.as_mut_ptr() as usize, buf.len()];
    // SAFETY: the block names a live buffer of that size; the host writes
    // at most that many bytes into it and the length into the block.
    let failed = unsafe { syscall1(nr::GET_CMDLINE, block.as_mut_ptr() as usize) } != 0;
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
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    // Only without a debugger or QEMU does exit return.
    loop {
        cortex_m::asm::wfi();
    }
}

/// The stack's high-water mark.
///
/// cortex-m-rt (feature `paint-stack`) paints every word from `_stack_end`
/// (the end of `.bss`) to `_stack_start` (the top of RAM) with one value
/// before `main`; a word the program ever used no longer holds it.
pub mod stack {
    /// The value cortex-m-rt paints the stack with.
    const PAINT: u32 = 0xCCCC_CCCC;

    extern "C" {
        static _stack_start: u32;
        static _stack_end: u32;
    }

    fn bounds() -> (usize, usize) {
        (
            core::ptr::addr_of!(_stack_end) as usize,
            core::ptr::addr_of!(_stack_start) as usize,
        )
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
        // is RAM and aligned to 4 (cortex-m-rt asserts both).
        while at < start && unsafe { core::ptr::read_volatile(at as *const u32) } == PAINT {
            at += 4;
        }
        start - at
    }
}

/// A panic: the file and line, then QEMU stops with a failure. The message
/// is not printed, which would take `core::fmt`.
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
#[exception]
unsafe fn HardFault(_: &ExceptionFrame) -> ! {
    Console::open().str("hard fault\n");
    exit(false)
}
