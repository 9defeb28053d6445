//! A decode-only program: a stream compiled in (the committed sample, which
//! has every frame kind, an unknown one, a gap and skipped rows) is read
//! frame by frame into one RAM buffer, as from a UART, decoded by
//! dendro-wire-core and judged by its `Subscriber`, each verdict counted in
//! the core's `Tally`. It prints the tally, which `cargo xtask firmware`
//! compares with what `dendro-wire check --json` prints for the same bytes,
//! and its stack's high-water mark.

#![no_std]
#![no_main]

use dendro_wire_core::io::{read_frame, read_preamble, IoError};
use dendro_wire_core::{FrameDecoder, Subscriber, Tally};
use dendro_wire_firmware::{entry, exit, stack, Console};

/// The stream: the repository's sample capture.
static STREAM: &[u8] = include_bytes!("../../../../testdata/sample.dwr");

/// The one buffer a frame is read into: the largest frame this program
/// takes. A larger one is refused before it is read.
const FRAME_BUFFER: usize = 512;

/// The sources one connection may open.
const SOURCES: usize = 4;

#[entry]
fn main() -> ! {
    stack::paint();
    let mut out = Console::open();
    let mut buf = [0u8; FRAME_BUFFER];
    let ok = match decode(&mut buf) {
        Ok(tally) => {
            out.str("decoder");
            // Zipped by reference: an iterator over the names and counts
            // by value costs more flash (`cargo xtask firmware` prints the
            // footprint).
            for (name, count) in Tally::NAMES.iter().zip(&tally.counts()) {
                // The console prints a `u32`; a count past it is said as
                // the largest one.
                out.field(name, u32::try_from(*count).unwrap_or(u32::MAX));
            }
            out.str("\n");
            true
        }
        Err(DecodeFailure { frame, what, field }) => {
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
struct DecodeFailure {
    frame: u32,
    what: &'static str,
    field: Option<&'static str>,
}

fn decode(buf: &mut [u8]) -> Result<Tally, DecodeFailure> {
    let mut tally = Tally::default();
    let mut rx: &[u8] = STREAM;
    let fail = |frame, e: IoError<_>| {
        let (what, field) = match e {
            IoError::Wire(e) => ("the bytes break a rule", Some(e.field().name())),
            IoError::Truncated { .. } => ("the stream ends inside it", None),
            _ => ("the read failed", None),
        };
        DecodeFailure { frame, what, field }
    };
    read_preamble(&mut rx).map_err(|e| fail(0, e))?;
    let decoder = FrameDecoder::new().with_max_frame_bytes(FRAME_BUFFER as u32);
    let mut subscriber = Subscriber::<SOURCES>::new();
    loop {
        // The frame being read, from 1.
        let at = tally.frames as u32 + 1;
        let frame = match read_frame(&mut rx, buf, &decoder) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(tally),
            Err(e) => return Err(fail(at, e)),
        };
        let Ok(admitted) = subscriber.admit(&frame) else {
            return Err(DecodeFailure {
                frame: at,
                what: "a protocol rule is broken",
                field: None,
            });
        };
        tally.count(&frame, admitted);
    }
}
