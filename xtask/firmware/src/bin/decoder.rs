//! A decode-only program: a stream compiled in (the committed sample, which
//! has every frame kind, an unknown one, a gap and skipped rows) is read
//! frame by frame into one RAM buffer, as from a UART, decoded by
//! dendro-wire-core and judged by its `Subscriber`. It prints the counts
//! `dendro-wire check --json` prints for the same bytes, which
//! `cargo xtask firmware` compares, and its stack's high-water mark.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use dendro_wire_core::io::{read_frame, read_preamble, IoError};
use dendro_wire_core::{Admitted, Frame, FrameDecoder, Subscriber};
use dendro_wire_firmware::{exit, stack, Console};

/// The stream: the repository's sample capture.
static STREAM: &[u8] = include_bytes!("../../../../testdata/sample.dwr");

/// The one buffer a frame is read into: the largest frame this program
/// takes. A larger one is refused before it is read.
const FRAME_BUFFER: usize = 512;

/// The sources one connection may open.
const SOURCES: usize = 4;

/// What `dendro-wire check --json` counts, under its names.
#[derive(Default)]
struct Counts {
    frames: u32,
    sources: u32,
    index_entries: u32,
    rows_applied: u32,
    rows_skipped: u32,
    segments: u32,
    clock_offsets: u32,
    source_updates: u32,
    unknown_skipped: u32,
    gaps: u32,
    frames_lost: u32,
    seq_regressions: u32,
}

#[entry]
fn main() -> ! {
    let mut out = Console::open();
    let mut buf = [0u8; FRAME_BUFFER];
    let ok = match decode(&mut buf) {
        Ok(c) => {
            out.str("decoder")
                .field("frames", c.frames)
                .field("sources", c.sources)
                .field("index_entries", c.index_entries)
                .field("rows_applied", c.rows_applied)
                .field("rows_skipped", c.rows_skipped)
                .field("segments", c.segments)
                .field("clock_offsets", c.clock_offsets)
                .field("source_updates", c.source_updates)
                .field("unknown_skipped", c.unknown_skipped)
                .field("gaps", c.gaps)
                .field("frames_lost", c.frames_lost)
                .field("seq_regressions", c.seq_regressions)
                .str("\n");
            true
        }
        Err(Failure { frame, what, field }) => {
            out.str("decoder: frame ").num(frame).str(": ").str(what);
            if let Some(field) = field {
                out.str(" (field ").str(field).str(")");
            }
            out.str("\n");
            false
        }
    };
    stack::report(&mut out, FRAME_BUFFER)
        .field("stream_bytes", STREAM.len() as u32)
        .str("\n");
    exit(ok)
}

/// Why the stream could not be read to its end: the frame (from 1), what
/// broke and in which field, without `core::fmt`.
struct Failure {
    frame: u32,
    what: &'static str,
    field: Option<&'static str>,
}

fn decode(buf: &mut [u8]) -> Result<Counts, Failure> {
    let mut c = Counts::default();
    let mut rx: &[u8] = STREAM;
    let fail = |frame, e: IoError<_>| {
        let (what, field) = match e {
            IoError::Wire(e) => ("the bytes break a rule", Some(e.field().name())),
            IoError::Truncated { .. } => ("the stream ends inside it", None),
            _ => ("the read failed", None),
        };
        Failure { frame, what, field }
    };
    read_preamble(&mut rx).map_err(|e| fail(0, e))?;
    let decoder = FrameDecoder::new().with_max_frame_bytes(FRAME_BUFFER as u32);
    let mut subscriber = Subscriber::<SOURCES>::new();
    loop {
        let frame = match read_frame(&mut rx, buf, &decoder) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(c),
            Err(e) => return Err(fail(c.frames + 1, e)),
        };
        c.frames += 1;
        let Ok(admitted) = subscriber.admit(&frame) else {
            return Err(Failure {
                frame: c.frames,
                what: "a protocol rule is broken",
                field: None,
            });
        };
        match (admitted, frame) {
            (Admitted::Opened { .. }, _) => c.sources += 1,
            (Admitted::Index { .. }, _) => c.index_entries += 1,
            (Admitted::Rows(v), Frame::Rows(rows)) => {
                let n = rows.rows.len() as u32;
                match v.skip {
                    None => c.rows_applied += n,
                    Some(_) => c.rows_skipped += n,
                }
                c.gaps += u32::from(v.lost > 0);
                c.frames_lost = c
                    .frames_lost
                    .saturating_add(u32::try_from(v.lost).unwrap_or(u32::MAX));
                c.seq_regressions += u32::from(v.regression);
            }
            (Admitted::Apply { .. }, Frame::Segment(_)) => c.segments += 1,
            (Admitted::Apply { .. }, Frame::ClockOffset(_)) => c.clock_offsets += 1,
            (Admitted::Apply { .. }, Frame::SourceUpdate(_)) => c.source_updates += 1,
            (Admitted::Unknown { .. }, _) => c.unknown_skipped += 1,
            _ => {}
        }
    }
}
