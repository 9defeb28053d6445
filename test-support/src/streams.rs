//! Streams the std crate's collector tests send: built with the library's
//! own writer.

use dendro_wire_core::{Row, RowsHeader, NO_INDEX_STATE};
use dendro_wire_std::FrameWriter;

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
        let rows = (0..ROWS_PER_FRAME).map(|i| Row {
            stream: "cpu/usage",
            ts: (seq * ROWS_PER_FRAME + i) as i64,
            wall_offset: 0,
            row: &row,
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
    w.into_inner()
}
