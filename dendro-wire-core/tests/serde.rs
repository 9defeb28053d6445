//! serde on the borrowed views (feature `serde`): each frame serializes with
//! its kind as `"frame"` and its fields by the protocol's names, bytes as
//! serde bytes, maps as maps, rows as a sequence — from the views, with no
//! owned copy.

#![cfg(feature = "serde")]

use dendro_wire_core::{
    decode, Frame, Handshake, Map, Row, RowsBuilder, RowsHeader, Segment, Status,
};

fn json(frame: &Frame<'_>) -> serde_json::Value {
    serde_json::to_value(frame).unwrap()
}

#[test]
fn every_kind_serializes_by_its_fields() {
    let labels = [("host", "web-01"), ("source", "cpu")];
    let handshake = Frame::Handshake(Handshake {
        source: 3,
        uuid: None,
        labels: Map::from_pairs(&labels),
        metadata: Map::EMPTY,
        clock_anchor_wall_ns: -5,
        complete: true,
    });
    assert_eq!(
        json(&handshake),
        serde_json::json!({"frame": "handshake", "source": 3, "uuid": null,
            "labels": {"host": "web-01", "source": "cpu"}, "metadata": {},
            "clock_anchor_wall_ns": -5, "complete": true})
    );

    // A Rows frame decoded from its bytes: the view borrows them.
    let mut buf = [0u8; 128];
    let mut b = RowsBuilder::new(
        &mut buf[..],
        RowsHeader {
            source: 1,
            seq: 9,
            index_state: (7, 8),
        },
    )
    .unwrap();
    b.push(&Row {
        stream: "cpu",
        ts: 10,
        wall_offset: -3,
        row: &[0x0a, 0x0b],
    })
    .unwrap();
    let len = b.finish().unwrap();
    let Status::Complete((rows, _)) = decode(&buf[..len]).unwrap() else {
        panic!()
    };
    assert_eq!(
        json(&rows),
        serde_json::json!({"frame": "rows", "source": 1, "seq": 9, "index_state": [7, 8],
            "rows": [{"stream": "cpu", "ts": 10, "wall_offset": -3, "row": [10, 11]}]})
    );

    let segment = Frame::Segment(Segment {
        source: 0,
        stream: "s",
        rows: 2,
        first_ts: 1,
        last_ts: 2,
        bytes: &[1, 2],
        caller_index: None,
    });
    assert_eq!(json(&segment)["caller_index"], serde_json::Value::Null);
    assert_eq!(json(&segment)["bytes"], serde_json::json!([1, 2]));
    let unknown = Frame::Unknown {
        kind: 42,
        payload: &[9],
    };
    assert_eq!(
        json(&unknown),
        serde_json::json!({"frame": "unknown", "kind": 42, "payload": [9]})
    );
}

#[test]
fn a_tally_serializes_as_check_prints_it() {
    // `dendro-wire check --json`'s keys, in its order.
    let tally = dendro_wire_core::Tally::default();
    assert_eq!(
        serde_json::to_string(&tally).unwrap(),
        "{\"frames\":0,\"sources\":0,\"index_entries\":0,\"rows_applied\":0,\"rows_skipped\":0,\
         \"segments\":0,\"clock_offsets\":0,\"source_updates\":0,\"unknown_skipped\":0,\"gaps\":0,\
         \"frames_lost\":0,\"seq_regressions\":0}"
    );
}
