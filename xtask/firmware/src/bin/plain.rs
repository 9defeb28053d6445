//! A source declared without an index stream, as small as a firmware gets:
//! one source, four streams, one row per stream per interval (2 bytes for
//! 50 intervals, then 16 bytes for 50), on one connection, its stream written to the
//! host as `plain.dwr` (checked with `dendro-wire check`).
//!
//! Built with feature `measure` (Cortex-M3 only) it also counts the
//! instructions `observe` takes per row, for each row length, run under QEMU's `-icount
//! shift=0` (one instruction, one nanosecond of emulated time) and read
//! from SysTick, calibrated against a loop of known length.

#![no_std]
#![no_main]

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use dendro_wire_core::{
    emit_preamble, Budget, Map, Publisher, PublisherConfig, Sizing, SourceDecl, PREAMBLE_BYTES,
};
use dendro_wire_firmware::{entry, exit, stack, Console, HostFile};

const INTERVALS: u32 = 100;
const STREAMS: [&str; 4] = ["t/0", "t/1", "t/2", "t/3"];
/// The rows' lengths: a reading of 2 bytes for the first half of the
/// intervals, then one of 16, the shortest the machine's fast path takes.
const ROW_BYTES: [usize; 2] = [2, 16];

const DECL: SourceDecl<'static> = SourceDecl {
    uuid: None,
    labels: Map::from_pairs(&[("source", "plain")]),
    metadata: Map::EMPTY,
    clock_anchor_wall_ns: 0,
    complete: false,
    streams: &STREAMS,
    index_stream: None,
};
/// The storage and frame buffer, sized at build time from the declaration
/// and the most an interval brings: one row on each stream, up to 16 bytes.
const SIZE: Sizing = DECL.sizing(&Budget::rows(ROW_BYTES[1], STREAMS.len()));
/// `SIZE` is the least that holds the budget. The machine's fast path for
/// a row of 16 to 32 bytes writes it through a window of fixed size, which
/// must fit past the frame's end in the storage and under the frame
/// buffer's bound; without this room every row of an interval this small
/// takes the slow path (375 instructions a 16-byte row rather than 180).
const FAST_PATH_ROOM: usize = 128;
const STORAGE: usize = SIZE.storage + FAST_PATH_ROOM;
const FRAME_BUFFER: usize = SIZE.frame_buffer + FAST_PATH_ROOM;

type Publishing = Publisher<&'static mut [u8], 1>;

static mut STORAGE_BYTES: [u8; STORAGE] = [0; STORAGE];
static mut FRAME: [u8; FRAME_BUFFER] = [0; FRAME_BUFFER];
static mut PUBLISHER: MaybeUninit<Publishing> = MaybeUninit::uninit();

#[entry]
fn main() -> ! {
    stack::paint();
    #[cfg(feature = "measure")]
    measure::init();
    let mut out = Console::open();
    let ok = run(&mut out);
    stack::report(&mut out, FRAME_BUFFER).str("\n");
    exit(ok)
}

fn run(out: &mut Console) -> bool {
    // SAFETY: `run` runs once, so each static is lent once.
    let (p, storage, frame) = unsafe {
        (
            (*addr_of_mut!(PUBLISHER)).write(Publisher::new(PublisherConfig {
                full_every: 60,
                frame_buffer: FRAME_BUFFER,
            })),
            &mut *addr_of_mut!(STORAGE_BYTES),
            &mut *addr_of_mut!(FRAME),
        )
    };
    let Ok(source) = p.add_source(&DECL, storage) else {
        out.str("plain: the source does not fit\n");
        return false;
    };
    let Some(mut file) = HostFile::create(b"plain.dwr\0") else {
        return false;
    };
    let mut preamble = [0u8; PREAMBLE_BYTES];
    let mut ok = emit_preamble(&mut preamble).is_ok() && file.write_all(&preamble);
    p.connected();
    // Per row length (2 bytes, then 16): the ticks `observe` took.
    let mut ticks = [0; 2];
    for i in 0..INTERVALS {
        let long = usize::from(i >= INTERVALS / 2);
        let [lo, hi] = (i as u16).to_le_bytes();
        let mut reading = [0u8; ROW_BYTES[1]];
        reading[0] = lo;
        reading[1] = hi;
        let row = reading.get(..ROW_BYTES[long]).unwrap_or(&reading);
        let at = measure::now();
        for s in 0..STREAMS.len() as u32 {
            let _ = p.observe(source.stream(s), i64::from(i) * 1000, 0, row);
        }
        ticks[long] += measure::since(at);
        p.end_interval();
        while let Ok(Some((bytes, _))) = p.poll_transmit(frame) {
            ok &= file.write_all(bytes);
        }
    }
    ok &= file.close();
    let stats = p.stats();
    out.str("plain")
        .field("rows_observed", stats.rows_observed as u32)
        .field("rows_sent", stats.rows_sent as u32)
        .field("rows_refused", stats.rows_refused as u32);
    measure::report(out, ticks);
    out.str("\n");
    ok && stats.rows_refused == 0 && stats.rows_sent == stats.rows_observed
}

/// SysTick, free-running down from its largest reload at the core clock.
#[cfg(feature = "measure")]
mod measure {
    use core::ptr::{read_volatile, write_volatile};

    const CSR: usize = 0xE000_E010;
    const RVR: usize = 0xE000_E014;
    const CVR: usize = 0xE000_E018;
    const MASK: u32 = 0x00FF_FFFF;

    fn start() {
        // SAFETY: SysTick's registers, as words; nothing else uses it.
        unsafe {
            write_volatile(RVR as *mut u32, MASK);
            write_volatile(CVR as *mut u32, 0);
            // ENABLE and CLKSOURCE (the core clock), no interrupt.
            write_volatile(CSR as *mut u32, 0b101);
        }
    }

    pub fn now() -> u32 {
        // SAFETY: as in `start`.
        unsafe { read_volatile(CVR as *const u32) }
    }

    /// Ticks since `at` (a batch is far shorter than a wrap).
    pub fn since(at: u32) -> u32 {
        at.wrapping_sub(now()) & MASK
    }

    /// Ticks for a loop of `2 * n` instructions (`subs`, `bne`).
    fn calibrate(n: u32) -> u32 {
        let at = now();
        // SAFETY: a counted loop on one register.
        unsafe {
            core::arch::asm!("1:", "subs {0}, #1", "bne 1b", inout(reg) n => _, options(nomem, nostack));
        }
        since(at)
    }

    /// Print the ticks `observe` took for the rows of each length, and
    /// what calibrates a tick.
    pub fn report(out: &mut super::Console, ticks: [u32; 2]) {
        const LOOP: u32 = 100_000;
        out.field("observe_ticks_short", ticks[0])
            .field("observe_ticks_long", ticks[1])
            .field("calibration_instructions", 2 * LOOP)
            .field("calibration_ticks", calibrate(LOOP));
    }

    pub fn init() {
        start();
    }
}

/// Without `measure`: nothing counted.
#[cfg(not(feature = "measure"))]
mod measure {
    pub fn now() -> u32 {
        0
    }
    pub fn since(_: u32) -> u32 {
        0
    }
    pub fn report(_: &mut super::Console, _: [u32; 2]) {}
}
