//! One frame of each kind, shared by the core's tests, and its bytes.
//!
//! The bytes are the encoder's: each kind's file holds the same frame's
//! bytes written by hand from the protocol, field by field, and its golden
//! test holds the encoder to them, so here they are the golden bytes
//! without a second hand-written copy. The tests here cut and change them
//! at named offsets to break one rule at a time.

#![allow(dead_code)]

use dendro_wire_core::*;
use dendro_wire_test_support::fixtures::frame_bytes;

pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

pub const UUID: &str = "3f2b1c4d-0000-4000-8000-00000000abcd";

/// [`handshake`]: source 1, a uuid, labels {host: a}, no metadata,
/// anchor 1, complete; 80 bytes.
pub fn handshake_bytes() -> Vec<u8> {
    frame_bytes(&Frame::Handshake(handshake()))
}

pub fn handshake() -> Handshake<'static> {
    Handshake {
        source: 1,
        uuid: Some(UUID),
        labels: Map::from_pairs(&[("host", "a")]),
        metadata: Map::EMPTY,
        clock_anchor_wall_ns: 1,
        complete: true,
    }
}

/// [`index`]: source 0, stream cpu, ts 10, Full, state (1, 2), blob
/// 00 ff; 47 bytes.
pub fn index_bytes() -> Vec<u8> {
    frame_bytes(&Frame::Index(index()))
}

pub fn index() -> Index<'static> {
    Index {
        source: 0,
        stream: "cpu",
        ts: 10,
        kind: IndexKind::Full,
        state: (1, 2),
        blob: &[0x00, 0xff],
    }
}

/// [`rows`]: source 0, seq 7, index_state (1, 2), one row [`ROW`]; 66
/// bytes.
pub fn rows_bytes() -> Vec<u8> {
    frame_bytes(&Frame::Rows(rows()))
}

pub const ROW: Row<'static> = Row {
    stream: "cpu",
    ts: 10,
    wall_offset: -3,
    row: &[0x0a, 0x0b],
};

pub fn rows() -> Rows<'static> {
    Rows {
        source: 0,
        seq: 7,
        index_state: (1, 2),
        rows: RowList::from_slice(core::slice::from_ref(&ROW)),
    }
}

/// The keepalive: source 4, seq u64::MAX, no index, no rows; 37 bytes.
pub fn empty_rows_bytes() -> Vec<u8> {
    frame_bytes(&Frame::Rows(empty_rows()))
}

pub fn empty_rows() -> Rows<'static> {
    Rows {
        source: 4,
        seq: u64::MAX,
        index_state: NO_INDEX_STATE,
        rows: RowList::EMPTY,
    }
}

/// [`segment`]: source 3, stream s, rows 10, ts -9..=9, bytes PAR1,
/// caller_index 09 09; 53 bytes.
pub fn segment_bytes() -> Vec<u8> {
    frame_bytes(&Frame::Segment(segment()))
}

pub fn segment() -> Segment<'static> {
    Segment {
        source: 3,
        stream: "s",
        rows: 10,
        first_ts: -9,
        last_ts: 9,
        bytes: b"PAR1",
        caller_index: Some(&[9, 9]),
    }
}

/// The same segment with no caller index: absent, not empty; 47 bytes.
pub fn segment_absent_bytes() -> Vec<u8> {
    frame_bytes(&Frame::Segment(Segment {
        caller_index: None,
        ..segment()
    }))
}

/// [`clock_offset`]: source 2, ts i64::MIN, offset_ns i64::MAX; 25 bytes.
pub fn clock_offset_bytes() -> Vec<u8> {
    frame_bytes(&Frame::ClockOffset(clock_offset()))
}

pub fn clock_offset() -> ClockOffset {
    ClockOffset {
        source: 2,
        ts: i64::MIN,
        offset_ns: i64::MAX,
    }
}

/// [`source_update`]: source 5, ts -1, labels {a: 1, b: 2}, metadata
/// {encoder: v3}; 62 bytes.
pub fn source_update_bytes() -> Vec<u8> {
    frame_bytes(&Frame::SourceUpdate(source_update()))
}

pub fn source_update() -> SourceUpdate<'static> {
    SourceUpdate {
        source: 5,
        ts: -1,
        labels: Map::from_pairs(&[("a", "1"), ("b", "2")]),
        metadata: Map::from_pairs(&[("encoder", "v3")]),
    }
}

/// A kind this build does not know: 200, payload 01 02 03.
pub fn unknown_bytes() -> Vec<u8> {
    cat(&[&[4, 0, 0, 0], &[200], &[1, 2, 3]])
}

/// Every golden frame with its bytes.
pub fn all() -> Vec<(Frame<'static>, Vec<u8>)> {
    vec![
        (Frame::Handshake(handshake()), handshake_bytes()),
        (Frame::Index(index()), index_bytes()),
        (Frame::Rows(rows()), rows_bytes()),
        (Frame::Rows(empty_rows()), empty_rows_bytes()),
        (Frame::Segment(segment()), segment_bytes()),
        (
            Frame::Segment(Segment {
                caller_index: None,
                ..segment()
            }),
            segment_absent_bytes(),
        ),
        (Frame::ClockOffset(clock_offset()), clock_offset_bytes()),
        (Frame::SourceUpdate(source_update()), source_update_bytes()),
        (
            Frame::Unknown {
                kind: 200,
                payload: &[1, 2, 3],
            },
            unknown_bytes(),
        ),
    ]
}

/// A stream's frames after the preamble, holding every kind.
pub fn stream_body() -> Vec<u8> {
    all().into_iter().flat_map(|(_, b)| b).collect()
}

/// Decode one whole frame, which must be exactly `bytes`.
pub fn decode_one(bytes: &[u8]) -> Result<Frame<'_>, Error> {
    match decode(bytes)? {
        Status::Complete((frame, used)) => {
            assert_eq!(used, bytes.len(), "consumed the whole frame");
            Ok(frame)
        }
        Status::Incomplete { needed } => panic!("incomplete, {needed} more wanted"),
    }
}
