//! The streams the benchmarks measure, built once and shared by the
//! criterion benches (`benches/wire.rs`) and `cargo xtask bench-report`.
//!
//! The realistic agent stream: one source, one `Full` index entry, then
//! interval after interval of `Rows` frames of 64 rows each (six stream
//! names such as `cpu/usage`, 32-byte rows), with a 256 KiB `Segment` every
//! 500 frames.

use dendro_wire_core::{
    Frame, Handshake, Index, IndexKind, Map, Row, RowsBuilder, Segment, Status,
};

/// The six stream names the rows cycle through.
pub const STREAMS: [&str; 6] = [
    "cpu/usage",
    "cpu/irq",
    "cpu/steal",
    "mem/used",
    "net/rx_bytes",
    "net/tx_bytes",
];
/// Rows per `Rows` frame.
pub const ROWS_PER_FRAME: usize = 64;
/// Bytes per row.
pub const ROW_BYTES: usize = 32;
/// A `Segment` every this many `Rows` frames.
pub const SEGMENT_EVERY: usize = 500;
/// Bytes per segment.
pub const SEGMENT_BYTES: usize = 256 * 1024;

/// A stream and what is in it.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The whole stream: preamble, then frames.
    pub bytes: Vec<u8>,
    /// Where each frame starts and ends in `bytes`.
    pub frames: Vec<std::ops::Range<usize>>,
    /// The rows in all its `Rows` frames.
    pub rows: u64,
}

impl Stream {
    /// The frames alone, after the preamble.
    pub fn body(&self) -> &[u8] {
        &self.bytes[dendro_wire_core::PREAMBLE_BYTES..]
    }

    /// Only the `Rows` frames, back to back.
    pub fn rows_only(&self) -> Stream {
        let mut bytes = self.bytes[..dendro_wire_core::PREAMBLE_BYTES].to_vec();
        let mut frames = Vec::new();
        for r in &self.frames {
            if self.bytes[r.start + 4] == dendro_wire_core::kind::ROWS {
                let start = bytes.len();
                bytes.extend_from_slice(&self.bytes[r.clone()]);
                frames.push(start..bytes.len());
            }
        }
        Stream {
            bytes,
            frames,
            rows: self.rows,
        }
    }
}

/// The realistic agent stream with `rows_frames` `Rows` frames.
pub fn realistic(rows_frames: usize) -> Stream {
    let mut bytes = b"dendro-repl\0\x01\x00".to_vec();
    let mut frames = Vec::new();
    let push = |bytes: &mut Vec<u8>, frames: &mut Vec<_>, frame: &Frame<'_>| {
        let start = bytes.len();
        let len = frame.buffer_len().expect("a valid frame");
        bytes.resize(start + len, 0);
        frame.emit(&mut bytes[start..]).expect("sized");
        frames.push(start..bytes.len());
    };
    let state = (0x9e37_79b9_7f4a_7c15, 0x6a09_e667_f3bc_c908);
    push(
        &mut bytes,
        &mut frames,
        &Frame::Handshake(Handshake {
            source: 0,
            uuid: Some("0b5e2c1a-7d43-4f6e-9a10-3c2b1d0e4f5a"),
            labels: Map::from_pairs(&[("host", "web-01"), ("source", "agent")]),
            metadata: Map::from_pairs(&[("encoder", "bench-1")]),
            clock_anchor_wall_ns: 1_700_000_000_000_000_000,
            complete: false,
        }),
    );
    push(
        &mut bytes,
        &mut frames,
        &Frame::Index(Index {
            source: 0,
            stream: "cpu/slots",
            ts: 0,
            kind: IndexKind::Full,
            state,
            blob: &[7; 256],
        }),
    );
    let segment = vec![0x5a; SEGMENT_BYTES];
    let mut row = [0u8; ROW_BYTES];
    let mut buf = vec![0u8; 8192];
    let mut rows = 0;
    for f in 0..rows_frames {
        if f > 0 && f % SEGMENT_EVERY == 0 {
            push(
                &mut bytes,
                &mut frames,
                &Frame::Segment(Segment {
                    source: 0,
                    stream: STREAMS[f / SEGMENT_EVERY % STREAMS.len()],
                    rows: 5000,
                    first_ts: 0,
                    last_ts: 1,
                    bytes: &segment,
                    caller_index: None,
                }),
            );
        }
        let mut b = RowsBuilder::new(&mut buf, 0, f as u64, state).expect("8 KiB");
        for i in 0..ROWS_PER_FRAME {
            let ts = (f * ROWS_PER_FRAME + i) as i64;
            row[..8].copy_from_slice(&ts.to_le_bytes());
            b.push(&Row {
                stream: STREAMS[i % STREAMS.len()],
                ts,
                wall_offset: -3,
                row: &row,
            })
            .expect("8 KiB holds 64 rows");
        }
        rows += ROWS_PER_FRAME as u64;
        let len = b.finish().expect("finished");
        let start = bytes.len();
        bytes.extend_from_slice(&buf[..len]);
        frames.push(start..bytes.len());
    }
    Stream {
        bytes,
        frames,
        rows,
    }
}

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
