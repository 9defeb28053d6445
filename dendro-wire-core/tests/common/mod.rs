//! Hand-written golden frames, one per kind, shared by the core's tests.
//!
//! Every byte below was written from docs/PROTOCOL.md §2–§4 and §8, field by
//! field, never produced by an encoder; the comments name each field.

#![allow(dead_code)]

pub mod gen;
pub mod grow;

use dendro_wire_core::*;

pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

pub const UUID: &str = "3f2b1c4d-0000-4000-8000-00000000abcd";

/// Handshake: source 1, a uuid, labels {host: a}, no metadata, anchor 1,
/// complete. Payload 75 bytes, so len 76.
pub fn handshake_bytes() -> Vec<u8> {
    cat(&[
        &[76, 0, 0, 0],                          // len
        &[1],                                    // kind: Handshake
        &[1, 0, 0, 0],                           // source
        &[1],                                    // uuid present
        &[36, 0, 0, 0],                          // uuid len
        b"3f2b1c4d-0000-4000-8000-00000000abcd", // uuid
        &[1, 0, 0, 0],                           // labels: 1 entry
        &[4, 0, 0, 0],
        b"host",
        &[1, 0, 0, 0],
        b"a",
        &[0, 0, 0, 0],             // metadata: 0 entries
        &[1, 0, 0, 0, 0, 0, 0, 0], // clock_anchor_wall_ns = 1
        &[1],                      // complete = true
    ])
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

/// Index: source 0, stream cpu, ts 10, Full, state (1, 2), blob 00 ff.
/// Payload 42 bytes.
pub fn index_bytes() -> Vec<u8> {
    cat(&[
        &[43, 0, 0, 0],             // len
        &[2],                       // kind: Index
        &[0, 0, 0, 0],              // source
        &[3, 0, 0, 0],              // stream len
        b"cpu",                     // stream
        &[10, 0, 0, 0, 0, 0, 0, 0], // ts
        &[0],                       // kind: Full
        &[1, 0, 0, 0, 0, 0, 0, 0],  // state.0
        &[2, 0, 0, 0, 0, 0, 0, 0],  // state.1
        &[2, 0, 0, 0],              // blob len
        &[0x00, 0xff],              // blob
    ])
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

/// Rows: source 0, seq 7, index_state (1, 2), one row {cpu, ts 10,
/// wall_offset -3, row 0a 0b}. Payload 32 + 29 bytes.
pub fn rows_bytes() -> Vec<u8> {
    cat(&[
        &[62, 0, 0, 0],            // len
        &[3],                      // kind: Rows
        &[0, 0, 0, 0],             // source
        &[7, 0, 0, 0, 0, 0, 0, 0], // seq
        &[1, 0, 0, 0, 0, 0, 0, 0], // index_state.0
        &[2, 0, 0, 0, 0, 0, 0, 0], // index_state.1
        &[1, 0, 0, 0],             // count
        &[3, 0, 0, 0],             // stream len
        b"cpu",
        &[10, 0, 0, 0, 0, 0, 0, 0],                        // ts
        &[0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // wall_offset = -3
        &[2, 0, 0, 0],                                     // row len
        &[0x0a, 0x0b],                                     // row
    ])
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

/// The keepalive: source 4, seq u64::MAX, no index, no rows. Payload 32.
pub fn empty_rows_bytes() -> Vec<u8> {
    cat(&[
        &[33, 0, 0, 0],
        &[3],
        &[4, 0, 0, 0],
        &[0xff; 8], // seq = u64::MAX
        &[0; 16],   // NO_INDEX_STATE
        &[0, 0, 0, 0],
    ])
}

pub fn empty_rows() -> Rows<'static> {
    Rows {
        source: 4,
        seq: u64::MAX,
        index_state: NO_INDEX_STATE,
        rows: RowList::EMPTY,
    }
}

/// Segment: source 3, stream s, rows 10, first_ts -9, last_ts 9, bytes PAR1,
/// caller_index 09 09. Payload 48 bytes.
pub fn segment_bytes() -> Vec<u8> {
    cat(&[
        &[49, 0, 0, 0],
        &[4],
        &[3, 0, 0, 0],
        &[1, 0, 0, 0],
        b"s",
        &[10, 0, 0, 0, 0, 0, 0, 0],                        // rows
        &[0xf7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // first_ts = -9
        &[9, 0, 0, 0, 0, 0, 0, 0],                         // last_ts
        &[4, 0, 0, 0],
        b"PAR1",
        &[1],          // caller_index present
        &[2, 0, 0, 0], // its len
        &[9, 9],
    ])
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

/// The same segment with no caller index: absent, not empty. Payload 42.
pub fn segment_absent_bytes() -> Vec<u8> {
    cat(&[
        &[43, 0, 0, 0],
        &[4],
        &[3, 0, 0, 0],
        &[1, 0, 0, 0],
        b"s",
        &[10, 0, 0, 0, 0, 0, 0, 0],
        &[0xf7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        &[9, 0, 0, 0, 0, 0, 0, 0],
        &[4, 0, 0, 0],
        b"PAR1",
        &[0], // caller_index absent
    ])
}

/// ClockOffset: source 2, ts i64::MIN, offset_ns i64::MAX. Payload 20.
pub fn clock_offset_bytes() -> Vec<u8> {
    cat(&[
        &[21, 0, 0, 0],
        &[5],
        &[2, 0, 0, 0],
        &[0, 0, 0, 0, 0, 0, 0, 0x80],                      // i64::MIN
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // i64::MAX
    ])
}

pub fn clock_offset() -> ClockOffset {
    ClockOffset {
        source: 2,
        ts: i64::MIN,
        offset_ns: i64::MAX,
    }
}

/// SourceUpdate: source 5, ts -1, labels {a: 1, b: 2}, metadata {encoder:
/// v3}. Payload 57 bytes.
pub fn source_update_bytes() -> Vec<u8> {
    cat(&[
        &[58, 0, 0, 0],
        &[6],
        &[5, 0, 0, 0],
        &[0xff; 8], // ts = -1
        &[2, 0, 0, 0],
        &[1, 0, 0, 0],
        b"a",
        &[1, 0, 0, 0],
        b"1",
        &[1, 0, 0, 0],
        b"b",
        &[1, 0, 0, 0],
        b"2",
        &[1, 0, 0, 0],
        &[7, 0, 0, 0],
        b"encoder",
        &[2, 0, 0, 0],
        b"v3",
    ])
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
