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
use dendro_wire_firmware::{entry, exit, measure, publisher_counts, stack, Console, HostFile};

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
/// `sizing` keeps room for the row path's fixed window, so every row takes
/// the short path.
const BUDGET: Budget = Budget::rows(ROW_BYTES[1], STREAMS.len());
const SIZE: Sizing = DECL.sizing(&BUDGET);
const STORAGE: usize = SIZE.storage;
const FRAME_BUFFER: usize = SIZE.frame_buffer;

type Publishing = Publisher<&'static mut [u8], 1>;

static mut STORAGE_BYTES: [u8; STORAGE] = [0; STORAGE];
static mut FRAME: [u8; FRAME_BUFFER] = [0; FRAME_BUFFER];
static mut PUBLISHER: MaybeUninit<Publishing> = MaybeUninit::uninit();

#[entry]
fn main() -> ! {
    stack::paint();
    measure::start();
    let mut out = Console::open();
    let ok = run(&mut out);
    stack::report(&mut out, FRAME_BUFFER).str("\n");
    exit(ok)
}

fn run(out: &mut Console) -> bool {
    // SAFETY: `run` runs once, so each static is lent once.
    let (p, storage, frame) = unsafe { lend() };
    let Ok(source) = p.add_source_for(&DECL, &BUDGET, storage) else {
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
    let counted = publisher_counts(out, "plain", &p.stats());
    measure::report(out, "observe_ticks_short", ticks[0]);
    measure::report(out, "observe_ticks_long", ticks[1]);
    measure::calibration(out);
    out.str("\n");
    ok && counted
}

/// The publisher, made in place in its static, the one source's storage
/// and the frame buffer.
///
/// # Safety
///
/// Called once: each call lends the same statics again.
// Out of line: the publisher is made on the stack before it is written
// into place, and inlined, that stayed in the caller's frame for the run.
#[inline(never)]
unsafe fn lend() -> (
    &'static mut Publishing,
    &'static mut [u8],
    &'static mut [u8],
) {
    (
        (*addr_of_mut!(PUBLISHER)).write(Publisher::new(PublisherConfig {
            full_every: 60,
            frame_buffer: FRAME_BUFFER,
        })),
        &mut *addr_of_mut!(STORAGE_BYTES),
        &mut *addr_of_mut!(FRAME),
    )
}
