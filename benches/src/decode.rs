//! What the decoding benchmarks run: the sans-IO decoder, the std reader,
//! dendro 0.6.1's reader, the subscriber's rules and `memcpy`, each over a
//! stream's bytes, returning a checksum so none is optimized away.

use std::hint::black_box;

use dendro_wire_core::{decode, Admitted, Frame, Status, Subscriber};

/// A checksum over what a caller reads of a decoded frame: with `visit`,
/// every row's stream, timestamp and bytes; without, the row count only.
#[inline(always)]
fn touch(frame: &Frame<'_>, visit: bool) -> u64 {
    match frame {
        Frame::Rows(r) if visit => r.rows.iter().fold(0u64, |sum, row| {
            sum.wrapping_add(row.ts as u64 ^ row.row.len() as u64 ^ row.stream.len() as u64)
        }),
        Frame::Rows(r) => r.rows.len() as u64,
        _ => 1,
    }
}

/// Decode every frame of a stream body with the sans-IO decoder; with
/// `visit`, read every row as a parser would. Returns a checksum.
pub fn decode_all(body: &[u8], visit: bool) -> u64 {
    let mut at = 0;
    let mut sum = 0u64;
    while let Ok(Status::Complete((frame, used))) = dendro_wire_core::decode(&body[at..]) {
        at += used;
        sum = sum.wrapping_add(touch(&frame, visit));
    }
    sum
}

/// Read a whole stream with dendro 0.6.1's `FrameReader`, touching every
/// row. Returns a checksum.
pub fn dendro_read_all(bytes: &[u8]) -> u64 {
    let mut reader = dendro::replicate::wire::FrameReader::new(bytes).expect("a stream");
    let mut sum = 0u64;
    while let Some(frame) = reader.next_frame().expect("a valid stream") {
        if let dendro::replicate::Frame::Rows { rows, .. } = frame {
            for row in rows {
                sum = sum
                    .wrapping_add(row.ts as u64 ^ row.row.len() as u64 ^ row.stream.len() as u64);
            }
        }
    }
    sum
}

/// Read a whole stream with our `FrameReader` over an in-memory reader (the
/// copy into its buffer included); with `visit`, read every row.
pub fn reader_all(bytes: &[u8], visit: bool) -> u64 {
    let mut reader = dendro_wire_std::FrameReader::new(bytes).expect("a stream");
    let mut sum = 0u64;
    while let Some(frame) = reader.next_frame().expect("a valid stream") {
        sum = sum.wrapping_add(touch(&frame, visit));
    }
    sum
}

/// The physical limit each line is set against: a plain copy of the same
/// bytes. Returns a byte of the copy, so it cannot be optimized away.
pub fn memcpy(dst: &mut [u8], src: &[u8]) -> u64 {
    dst[..src.len()].copy_from_slice(black_box(src));
    black_box(dst[src.len() / 2]) as u64
}

/// Run the subscriber's rules over every frame of a stream body, as a
/// subscriber does before it applies a frame. Returns the rows it admits.
pub fn subscribe(body: &[u8]) -> u64 {
    let mut sub = Subscriber::<4>::new();
    let mut at = 0;
    let mut applied = 0u64;
    while let Ok(Status::Complete((frame, used))) = decode(&body[at..]) {
        at += used;
        if let Ok(Admitted::Rows(v)) = sub.admit(&frame) {
            if v.skip.is_none() {
                if let Frame::Rows(r) = frame {
                    applied += r.rows.len() as u64;
                }
            }
        }
    }
    applied
}

/// A `Rows` frame's head (source, seq, index state) and its rows.
pub type RowsOf<R> = (u32, u64, (u64, u64), Vec<R>);
