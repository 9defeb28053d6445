//! The JSON Lines form of docs/PROTOCOL.md §10, through serde on OwnedFrame.

#![cfg(feature = "serde")]

use dendro_wire_core::IndexKind;
use dendro_wire_std::{OwnedFrame, OwnedRow};

/// docs/PROTOCOL.md §10's own example, line for line.
const NOTES_EXAMPLE: &str = r#"{"frame":"handshake","source":0,"uuid":"3f2b1c4d-0000-4000-8000-00000000abcd","labels":{"host":"a"},"metadata":{},"clock_anchor_wall_ns":1700000000000000000,"complete":false}
{"frame":"index","source":0,"stream":"cpu","ts":10,"kind":"full","state":[1,2],"blob":"00ff"}
{"frame":"rows","source":0,"seq":7,"index_state":[1,2],"rows":[{"stream":"cpu","ts":10,"wall_offset":-3,"row":"0a0b"}]}
{"frame":"rows","source":0,"seq":8,"index_state":[1,2],"rows":[]}"#;

#[test]
fn the_notes_example_parses_to_its_frames_and_prints_back_the_same() {
    let frames: Vec<OwnedFrame> = NOTES_EXAMPLE
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        frames[1],
        OwnedFrame::Index {
            source: 0,
            stream: "cpu".into(),
            ts: 10,
            kind: IndexKind::Full,
            state: (1, 2),
            blob: vec![0x00, 0xff],
        }
    );
    assert_eq!(
        frames[2],
        OwnedFrame::Rows {
            source: 0,
            seq: 7,
            index_state: (1, 2),
            rows: vec![OwnedRow {
                stream: "cpu".into(),
                ts: 10,
                wall_offset: -3,
                row: vec![0x0a, 0x0b],
            }],
        }
    );
    let printed: Vec<String> = frames
        .iter()
        .map(|f| serde_json::to_string(f).unwrap())
        .collect();
    assert_eq!(printed.join("\n"), NOTES_EXAMPLE);
}

#[test]
fn every_other_kind_has_its_form() {
    // A segment's bytes and caller index, present and empty.
    let segment = |bytes: &[u8], caller_index: Option<Vec<u8>>| OwnedFrame::Segment {
        source: 1,
        stream: "s".into(),
        rows: 3,
        first_ts: -1,
        last_ts: 2,
        bytes: bytes.to_vec(),
        caller_index,
    };
    let cases = [
        (
            segment(b"PAR1", None),
            r#"{"frame":"segment","source":1,"stream":"s","rows":3,"first_ts":-1,"last_ts":2,"bytes":"50415231","caller_index":null}"#,
        ),
        (
            segment(b"", Some(vec![])),
            r#"{"frame":"segment","source":1,"stream":"s","rows":3,"first_ts":-1,"last_ts":2,"bytes":"","caller_index":""}"#,
        ),
        (
            OwnedFrame::ClockOffset {
                source: 2,
                ts: i64::MIN,
                offset_ns: i64::MAX,
            },
            r#"{"frame":"clock_offset","source":2,"ts":-9223372036854775808,"offset_ns":9223372036854775807}"#,
        ),
        (
            OwnedFrame::SourceUpdate {
                source: 3,
                ts: 5,
                labels: [("a".into(), "ü".into())].into(),
                metadata: Default::default(),
            },
            r#"{"frame":"source_update","source":3,"ts":5,"labels":{"a":"ü"},"metadata":{}}"#,
        ),
        (
            OwnedFrame::Handshake {
                source: 4,
                uuid: None,
                labels: Default::default(),
                metadata: [("encoder".into(), "v3".into())].into(),
                clock_anchor_wall_ns: 0,
                complete: true,
            },
            r#"{"frame":"handshake","source":4,"uuid":null,"labels":{},"metadata":{"encoder":"v3"},"clock_anchor_wall_ns":0,"complete":true}"#,
        ),
        (
            OwnedFrame::Rows {
                source: 0,
                seq: u64::MAX,
                index_state: (u64::MAX, 0),
                rows: vec![],
            },
            r#"{"frame":"rows","source":0,"seq":18446744073709551615,"index_state":[18446744073709551615,0],"rows":[]}"#,
        ),
        (
            OwnedFrame::Unknown {
                kind: 9,
                payload: vec![0xab, 0xcd],
            },
            r#"{"frame":"unknown","kind":9,"payload":"abcd"}"#,
        ),
    ];
    for (frame, json) in cases {
        assert_eq!(serde_json::to_string(&frame).unwrap(), json);
        assert_eq!(serde_json::from_str::<OwnedFrame>(json).unwrap(), frame);
    }
}

fn refused(json: &str) -> String {
    match serde_json::from_str::<OwnedFrame>(json) {
        Ok(f) => panic!("accepted {json}: {f:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_lines_are_refused_with_a_reason() {
    let cases = [
        (r#"{"frame":"rows","source":0}"#, "missing field `seq`"),
        (
            r#"{"frame":"segment","source":1,"stream":"s","rows":3,"first_ts":-1,"last_ts":2,"bytes":""}"#,
            "missing field `caller_index`",
        ),
        (
            r#"{"frame":"handshake","source":4,"labels":{},"metadata":{},"clock_anchor_wall_ns":0,"complete":true}"#,
            "missing field `uuid`",
        ),
        (
            r#"{"frame":"clock_offset","source":4294967296,"ts":0,"offset_ns":0}"#,
            "4294967296",
        ),
        (
            r#"{"frame":"clock_offset","source":0,"ts":9223372036854775808,"offset_ns":0}"#,
            "9223372036854775808",
        ),
        (
            r#"{"frame":"unknown","kind":9,"payload":"abc"}"#,
            "odd number",
        ),
        (r#"{"frame":"unknown","kind":9,"payload":"zz"}"#, "bad hex"),
        (
            r#"{"frame":"index","source":0,"stream":"cpu","ts":10,"kind":"half","state":[1,2],"blob":""}"#,
            "not an index kind",
        ),
        (
            r#"{"frame":"source_update","source":3,"ts":5,"labels":{"a":"1","a":"2"},"metadata":{}}"#,
            "appears twice",
        ),
        (
            r#"{"frame":"clock_offset","source":0,"ts":0,"offset_ns":0,"extra":1}"#,
            "unknown field `extra`",
        ),
        (r#"{"frame":"teleport","source":0}"#, "unknown variant"),
        (r#"{"source":0}"#, "missing field `frame`"),
    ];
    for (json, want) in cases {
        let e = refused(json);
        assert!(e.contains(want), "{json}: {e}");
    }
}
