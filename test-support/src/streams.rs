//! Streams the std crate's collector tests and the soak tool send, and the
//! Rows frames they are made of: built with the library's own writer; and
//! any stream read back whole with its reader.

use std::io::{Read, Write};

use dendro_wire_core::{Frame, Row, RowsHeader, Segment, NO_INDEX_STATE};
use dendro_wire_std::{FrameReader, FrameWriter, OwnedFrame, OwnedRow, ReadError};

use crate::fixtures::handshake;

/// Rows in each of [`honest_stream`]'s Rows frames.
pub const ROWS_PER_FRAME: u64 = 4;

/// An honest publisher's stream: the preamble, source 0's bare handshake,
/// then `frames` Rows frames of [`ROWS_PER_FRAME`] rows each.
pub fn honest_stream(frames: u64) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_frame(&handshake(0)).unwrap();
    let row = [7u8; 32];
    for seq in 0..frames {
        write_rows_frame(&mut w, seq, ROWS_PER_FRAME, &row);
    }
    w.into_inner()
}

/// Source 0's Rows frame `seq` of `rows` rows of 32 bytes, without the
/// preamble: what a connection sends after its opening.
pub fn rows_frame(seq: u64, rows: u64) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    write_rows_frame(&mut w, seq, rows, &[7u8; 32]);
    w.into_inner()[dendro_wire_core::PREAMBLE.len()..].to_vec()
}

/// Write source 0's Rows frame `seq` (no index) to `w`: `count` rows on
/// `cpu/usage`, each `row`, their timestamps going on from `seq * count`
/// as a steady publisher's do.
pub fn write_rows_frame<W: Write>(w: &mut FrameWriter<W>, seq: u64, count: u64, row: &[u8]) {
    let rows = (0..count).map(|i| Row {
        stream: "cpu/usage",
        ts: (seq * count + i) as i64,
        wall_offset: 0,
        row,
    });
    w.write_rows(
        RowsHeader {
            source: 0,
            seq,
            index_state: NO_INDEX_STATE,
        },
        rows,
    )
    .unwrap();
}

/// A stream that opens source 0 (its bare handshake) and sends `count`
/// Segment frames of `bytes` bytes each: frames as large as a test needs.
pub fn segment_stream(count: i64, bytes: usize) -> Vec<u8> {
    let parquet = vec![0x50; bytes];
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_frame(&handshake(0)).unwrap();
    for ts in 0..count {
        w.write_frame(&Frame::Segment(Segment {
            source: 0,
            stream: "cpu/usage",
            rows: 1,
            first_ts: ts,
            last_ts: ts,
            bytes: &parquet,
            caller_index: None,
        }))
        .unwrap();
    }
    w.into_inner()
}

/// The frames of a small stream with an unknown kind in it, for the
/// readers' tests: `handshake`, a frame of kind 77 (three bytes), source
/// 0's Rows frame 1 holding `rows`, and a ClockOffset.
pub fn frames_with_unknown(handshake: OwnedFrame, rows: Vec<OwnedRow>) -> Vec<OwnedFrame> {
    vec![
        handshake,
        OwnedFrame::Unknown {
            kind: 77,
            payload: vec![1, 2, 3],
        },
        OwnedFrame::Rows {
            source: 0,
            seq: 1,
            index_state: NO_INDEX_STATE,
            rows,
        },
        OwnedFrame::ClockOffset {
            source: 0,
            ts: 1,
            offset_ns: 2,
        },
    ]
}

/// Every frame of a stream, unknown kinds included, owned, up to its end or
/// its first error, and that error; a preamble refused is no frames and its
/// error.
pub fn read_all(r: impl Read) -> (Vec<OwnedFrame>, Option<ReadError>) {
    match FrameReader::new(r) {
        Ok(reader) => read_rest(reader.yield_unknown(true)),
        Err(e) => (Vec::new(), Some(e)),
    }
}

/// Every frame `reader` yields as it was set up, owned, up to the end or
/// the first error, and that error.
pub fn read_rest<R: Read>(mut reader: FrameReader<R>) -> (Vec<OwnedFrame>, Option<ReadError>) {
    let mut frames = Vec::new();
    loop {
        match reader.next_frame() {
            Ok(Some(f)) => frames.push(OwnedFrame::from(&f)),
            Ok(None) => return (frames, None),
            Err(e) => return (frames, Some(e)),
        }
    }
}
