//! The publisher machine: golden bytes written by hand from docs/PROTOCOL.md, every
//! refusal, and what a program that only calls it sends.

mod common;

use dendro_wire_core::*;
use dendro_wire_test_support::fixtures::frame_bytes;
use dendro_wire_test_support::grow::Grow;

use common::UUID;

fn decl<'a>(streams: &'a [&'a str], index: Option<&'a str>) -> SourceDecl<'a> {
    SourceDecl {
        uuid: Some(UUID),
        labels: Map::from_pairs(&[("host", "a")]),
        metadata: Map::EMPTY,
        clock_anchor_wall_ns: 1,
        complete: false,
        streams,
        index_stream: index,
    }
}

type Fixed = Publisher<[u8; 512], 2>;

/// Every frame due, each polled into its own buffer.
fn drain<S: Storage, const N: usize>(p: &mut Publisher<S, N>) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut buf = vec![0u8; 4096];
    while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
        frames.push(bytes.to_vec());
    }
    frames
}

/// The state SlotSetHash gives the slots, each hashed as the Full blob
/// lays it out.
fn state_of(slots: &[(&[u8], &[u8])]) -> IndexState {
    let mut h = SlotSetHash::new();
    for (k, v) in slots {
        h.insert(&common::cat(&[
            &(k.len() as u32).to_le_bytes(),
            k,
            &(v.len() as u32).to_le_bytes(),
            v,
        ]));
    }
    h.state()
}

fn state_bytes(s: IndexState) -> Vec<u8> {
    common::cat(&[&s.0.to_le_bytes(), &s.1.to_le_bytes()])
}

/// The common golden handshake (the uuid, labels {host: a}, no metadata,
/// anchor 1), as source 0 and not complete: what `decl` declares.
fn handshake_bytes() -> Vec<u8> {
    frame_bytes(&Frame::Handshake(Handshake {
        source: 0,
        complete: false,
        ..common::handshake()
    }))
}

/// An `Index` frame of source 0 on stream "ix" (docs/PROTOCOL.md §4.2), `len` its
/// length field as counted by hand.
fn index_frame(len: u8, ts: i64, kind: u8, state: IndexState, blob: &[u8]) -> Vec<u8> {
    common::cat(&[
        &[len, 0, 0, 0],
        &[2],          // kind: Index
        &[0, 0, 0, 0], // source
        &[2, 0, 0, 0],
        b"ix",
        &ts.to_le_bytes(),
        &[kind], // 0 Full, 1 Delta
        &state_bytes(state),
        &(blob.len() as u32).to_le_bytes(),
        blob,
    ])
}

/// A `Rows` frame of source 0 (docs/PROTOCOL.md §4.3), `len` its length field as
/// counted by hand, and its rows already laid out.
fn rows_frame(len: u8, seq: u64, state: IndexState, count: u8, rows: &[u8]) -> Vec<u8> {
    common::cat(&[
        &[len, 0, 0, 0],
        &[3],          // kind: Rows
        &[0, 0, 0, 0], // source
        &seq.to_le_bytes(),
        &state_bytes(state),
        &[count, 0, 0, 0],
        rows,
    ])
}

#[test]
fn a_session_is_the_bytes_the_spec_gives() {
    let mut p = Fixed::new(PublisherConfig::default());
    let s = p.add_source(&decl(&["cpu"], Some("ix")), [0; 512]).unwrap();
    p.set_slot(s, b"c0", b"on").unwrap();
    p.connected();
    p.observe(s.stream(0), 5, -1, &[0xaa, 0xbb]).unwrap();
    p.end_interval();
    let frames = drain(&mut p);
    let one = state_of(&[(b"c0", b"on")]);
    let full_c0: &[u8] = &[2, 0, 0, 0, b'c', b'0', 2, 0, 0, 0, b'o', b'n'];
    // The row: stream "cpu", ts 5, wall_offset -1, row aa bb.
    let row: &[u8] = &common::cat(&[
        &[3, 0, 0, 0],
        b"cpu",
        &5i64.to_le_bytes(),
        &(-1i64).to_le_bytes(),
        &[2, 0, 0, 0, 0xaa, 0xbb],
    ]);
    let want = [
        handshake_bytes(),
        // ts 5: the earliest row after it (rule 5); Full: every slot
        // (rule 2).
        index_frame(52, 5, 0, one, full_c0),
        rows_frame(62, 0, one, 1, row),
    ];
    assert_eq!(frames, want);

    // The next interval: c1 added, c0 removed, nothing observed. A Delta
    // of both changes in key order, stamped just after the newest row
    // observed (so that row is not read against it, rule 5), then an empty
    // Rows frame (rule 6).
    p.set_slot(s, b"c1", b"x").unwrap();
    p.remove_slot(s, b"c0").unwrap();
    p.end_interval();
    let two = state_of(&[(b"c1", b"x")]);
    let delta: &[u8] = &common::cat(&[
        &[2, 0, 0, 0, b'c', b'0', 0],                   // c0 removed
        &[2, 0, 0, 0, b'c', b'1', 1, 1, 0, 0, 0, b'x'], // c1 = x
    ]);
    let want = [
        index_frame(59, 6, 1, two, delta),
        rows_frame(33, 1, two, 0, &[]),
    ];
    assert_eq!(drain(&mut p), want);

    // A reconnect: the handshake again and a Full of what is there now
    // (rules 2, 8), seq going on. The latest row was observed against c0,
    // which is gone: it is not carried again (rule 3 yields to rule 9),
    // and the Full is stamped just after it.
    p.connected();
    p.end_interval();
    let full_c1: &[u8] = &[2, 0, 0, 0, b'c', b'1', 1, 0, 0, 0, b'x'];
    let want = [
        handshake_bytes(),
        index_frame(51, 6, 0, two, full_c1),
        rows_frame(33, 2, two, 0, &[]),
    ];
    assert_eq!(drain(&mut p), want);

    // One row observed against c1, then a reconnect with nothing observed:
    // the connection's first Rows frame carries it again (rule 3), and the
    // Full is stamped no later than it (rule 5).
    p.observe(s.stream(0), 9, -1, &[0xaa, 0xbb]).unwrap();
    p.end_interval();
    let row_9: &[u8] = &common::cat(&[
        &[3, 0, 0, 0],
        b"cpu",
        &9i64.to_le_bytes(),
        &(-1i64).to_le_bytes(),
        &[2, 0, 0, 0, 0xaa, 0xbb],
    ]);
    assert_eq!(drain(&mut p), [rows_frame(62, 3, two, 1, row_9)]);
    p.connected();
    p.end_interval();
    let want = [
        handshake_bytes(),
        index_frame(51, 9, 0, two, full_c1),
        rows_frame(62, 4, two, 1, row_9),
    ];
    assert_eq!(drain(&mut p), want);
}

#[test]
fn a_slot_changed_between_two_readings_files_each_under_its_own_slots() {
    // The sequence of issue 29: rail0 on, an interval; then a reading
    // while it is on, the switch, a reading while it is off, the end of
    // the interval.
    let mut p = Fixed::new(PublisherConfig::default());
    let s = p.add_source(&decl(&["cpu"], Some("ix")), [0; 512]).unwrap();
    p.set_slot(s, b"rail0", b"on").unwrap();
    p.connected();
    p.end_interval();
    let opening = drain(&mut p);
    assert_eq!(opening.len(), 3);
    p.observe(s.stream(0), 2000, 0, &[1]).unwrap();
    p.set_slot(s, b"rail0", b"off").unwrap();
    // The frame the reading before the switch closed is due at once.
    assert_eq!((p.waiting().frames, p.waiting().rows), (1, 1));
    p.observe(s.stream(0), 2500, 0, &[2]).unwrap();
    p.end_interval();
    let frames = drain(&mut p);
    let on = state_of(&[(b"rail0", b"on")]);
    let off = state_of(&[(b"rail0", b"off")]);
    let row = |ts: i64, v: u8| {
        common::cat(&[
            &[3, 0, 0, 0],
            b"cpu",
            &ts.to_le_bytes(),
            &0i64.to_le_bytes(),
            &[1, 0, 0, 0, v],
        ])
    };
    let off_delta: &[u8] = &common::cat(&[&[5, 0, 0, 0], b"rail0", &[1, 3, 0, 0, 0], b"off"]);
    // The reading taken while the rail was on, under "on", in a frame of
    // its own; the Delta, stamped at the first reading after it; the
    // reading taken while it was off, under "off", the next seq.
    let want = [
        rows_frame(61, 1, on, 1, &row(2000, 1)),
        index_frame(57, 2500, 1, off, off_delta),
        rows_frame(61, 2, off, 1, &row(2500, 2)),
    ];
    assert_eq!(frames, want);
    // The subscriber applies both, each under its own state.
    let mut sub: Subscriber<1> = Subscriber::new();
    for f in opening.iter().chain(&frames) {
        let (frame, _) = decode(f).unwrap().complete().unwrap();
        if let Admitted::Rows(v) = sub.admit(&frame).unwrap() {
            assert_eq!((v.skip, v.lost), (None, 0));
        }
    }
    let st = p.stats();
    assert_eq!((st.rows_observed, st.rows_sent), (2, 2));
}

/// A publisher's source, connected and through its opening, for the tests
/// that need the steady state.
fn steady(config: PublisherConfig, streams: &[&str]) -> (Publisher<Grow, 4>, SourceId) {
    let mut p = Publisher::new(config);
    let s = p
        .add_source(&decl(streams, Some("ix")), Grow::new(1 << 16))
        .unwrap();
    p.connected();
    p.end_interval();
    drain(&mut p);
    (p, s)
}

#[test]
fn declarations_beyond_a_bound_are_refused() {
    let mut p = Fixed::new(PublisherConfig::default());
    p.add_source(&decl(&["a"], None), [0; 512]).unwrap();
    p.add_source(&decl(&["a"], None), [0; 512]).unwrap();
    assert_eq!(
        p.add_source(&decl(&["a"], None), [0; 512]),
        Err(PublishError::TooManySources { limit: 2 })
    );

    let mut p = Fixed::new(PublisherConfig::default());
    let e = p.add_source(&decl(&["a", "b", "a"], None), [0; 512]);
    assert_eq!(
        e,
        Err(PublishError::DuplicateStream {
            source: 0,
            stream: 2
        })
    );
    assert!(e.unwrap_err().to_string().contains("rule 3"));

    // The encoder's rules: map keys in order, a canonical uuid.
    let bad = SourceDecl {
        labels: Map::from_pairs(&[("z", "1"), ("a", "2")]),
        ..decl(&["a"], None)
    };
    let Err(PublishError::Encode(e)) = p.add_source(&bad, [0; 512]) else {
        panic!("labels out of order")
    };
    assert_eq!(e.rule(), Rule::KeysNotAscending);
    let bad = SourceDecl {
        uuid: Some("NOT-A-UUID"),
        ..decl(&["a"], None)
    };
    let Err(PublishError::Encode(e)) = p.add_source(&bad, [0; 512]) else {
        panic!("a bad uuid")
    };
    assert_eq!(e.rule(), Rule::NotACanonicalUuid);

    // A handshake, an empty Full, or the opening room of the streams
    // larger than the frame buffer; storage too small for them.
    let small = PublisherConfig {
        frame_buffer: 75,
        ..PublisherConfig::default()
    };
    let mut p = Fixed::new(small);
    assert_eq!(
        p.add_source(&decl(&["a"], None), [0; 512]),
        Err(PublishError::FrameTooLarge {
            source: 0,
            kind: kind::HANDSHAKE,
            needed: 80,
            limit: 75
        })
    );
    let anonymous = SourceDecl {
        uuid: None,
        labels: Map::EMPTY,
        ..decl(&["a"], None)
    };
    let mut p = Fixed::new(PublisherConfig {
        frame_buffer: 61,
        ..small
    });
    // 37 bytes of Rows head, and 25 for the latest row of "a" (rule 3).
    assert_eq!(
        p.add_source(&anonymous, [0; 512]),
        Err(PublishError::FrameTooLarge {
            source: 0,
            kind: kind::ROWS,
            needed: 62,
            limit: 61
        })
    );
    let mut p: Publisher<[u8; 100], 1> = Publisher::new(PublisherConfig::default());
    assert_eq!(
        p.add_source(&decl(&["a"], None), [0; 100]),
        Err(PublishError::StorageFull {
            source: 0,
            needed: 80 + 64 + 25 + 37,
            have: 100
        })
    );
    assert_eq!(p.source_count(), 0);
}

#[test]
fn calls_that_name_what_was_not_declared_are_refused() {
    // An id another publisher handed out, for its third source.
    let mut other: Publisher<[u8; 512], 4> = Publisher::new(PublisherConfig::default());
    let ids: Vec<SourceId> = (0..3)
        .map(|_| other.add_source(&decl(&["a"], None), [0; 512]).unwrap())
        .collect();
    let third = ids[2].stream(0);
    let mut p = Fixed::new(PublisherConfig::default());
    let s = p.add_source(&decl(&["a"], None), [0; 512]).unwrap();
    assert_eq!(
        p.observe(third, 0, 0, &[]),
        Err(PublishError::UnknownSource { source: 2 })
    );
    assert_eq!(
        p.observe(s.stream(1), 0, 0, &[]),
        Err(PublishError::UnknownStream {
            source: 0,
            stream: 1
        })
    );
    assert_eq!(p.stream_id(s, "a"), Some(s.stream(0)));
    assert_eq!(p.stream_id(s, "b"), None);
    assert_eq!(
        p.set_slot(s, b"k", b"v"),
        Err(PublishError::NoIndex { source: 0 })
    );
    assert_eq!(
        p.remove_slot(s, b"k"),
        Err(PublishError::NoIndex { source: 0 })
    );
    assert_eq!(p.index_state(s), Ok(NO_INDEX_STATE));
    // Each reading is accounted for: both rows were refused, with a reason.
    assert_eq!(p.stats().rows_refused, 2);
    assert_eq!(p.stats().rows_observed, 0);
}

/// The rows of a `Rows` frame, and its `seq`.
fn seq_and_rows(frame: &[u8]) -> (u64, Vec<(String, i64, Vec<u8>)>) {
    let Ok(Status::Complete((Frame::Rows(r), _))) = decode(frame) else {
        panic!("not a Rows frame: {frame:?}");
    };
    (r.seq, rows_of(frame))
}

#[test]
fn rows_observed_while_an_interval_waits_to_be_polled_go_in_the_next() {
    let (mut p, s) = steady(PublisherConfig::default(), &["a"]);
    p.observe(s.stream(0), 1, 0, &[1]).unwrap();
    p.end_interval();
    // The link has not taken the interval yet; sampling goes on.
    p.observe(s.stream(0), 2, 0, &[2]).unwrap();
    p.observe(s.stream(0), 3, 0, &[3]).unwrap();
    assert_eq!(p.waiting().frames, 1);
    let first = drain(&mut p);
    p.observe(s.stream(0), 4, 0, &[4]).unwrap();
    p.end_interval();
    let second = drain(&mut p);
    assert_eq!(first.len(), 1);
    assert_eq!(second.len(), 1);
    let (seq, rows) = seq_and_rows(&first[0]);
    assert_eq!(rows, [("a".into(), 1, vec![1])]);
    assert_eq!(
        seq_and_rows(&second[0]),
        (
            seq + 1,
            vec![
                ("a".into(), 2, vec![2]),
                ("a".into(), 3, vec![3]),
                ("a".into(), 4, vec![4])
            ]
        )
    );
    let st = p.stats();
    assert_eq!((st.rows_refused, st.rows_dropped), (0, 0));
}

#[test]
fn a_frame_the_link_did_not_take_before_the_next_interval_ended_is_lost_and_counted() {
    let mut p: Publisher<Grow, 4> = Publisher::new(PublisherConfig::default());
    let s = p
        .add_source(&decl(&["a"], Some("ix")), Grow::new(1 << 16))
        .unwrap();
    let mut sub: Subscriber<2> = Subscriber::new();
    let mut admit = |frames: Vec<Vec<u8>>| -> Vec<Admitted> {
        let admitted = frames.iter().map(|f| {
            let (frame, _) = decode(f).unwrap().complete().unwrap();
            sub.admit(&frame).unwrap()
        });
        admitted.collect()
    };
    p.connected();
    p.end_interval();
    admit(drain(&mut p));
    for (ts, rows) in [(10, 2), (20, 3), (30, 1)] {
        for n in 0..rows {
            p.observe(s.stream(0), ts + n, 0, &[n as u8]).unwrap();
        }
        p.end_interval();
    }
    // Only the last interval's frame is polled: the two before it were lost
    // in transit, their seq spent.
    let waiting = p.waiting();
    assert_eq!((waiting.frames, waiting.rows), (1, 1));
    let st = p.stats();
    assert_eq!((st.frames_dropped, st.rows_dropped), (2, 5));
    assert_eq!((st.rows_observed, st.rows_sent), (6, 0));
    let admitted = admit(drain(&mut p));
    let [Admitted::Rows(v)] = admitted[..] else {
        panic!("{admitted:?}");
    };
    // The subscriber sees the gap the link made: two frames lost.
    assert_eq!((v.lost, v.skip), (2, None));
    assert_eq!(p.stats().rows_sent, 1);
}

#[test]
fn waiting_says_what_is_due_and_dropping_it_spends_its_seq() {
    let (mut p, s) = steady(PublisherConfig::default(), &["a", "b"]);
    p.observe(s.stream(0), 1, 0, &[1; 8]).unwrap();
    p.observe(s.stream(1), 2, 0, &[2; 8]).unwrap();
    p.end_interval();
    let waiting = p.waiting();
    assert_eq!((waiting.frames, waiting.rows), (1, 2));
    assert_eq!(Some(waiting.bytes), p.next_frame_len());
    p.drop_waiting();
    assert_eq!(p.waiting(), Waiting::default());
    assert_eq!(p.next_frame_len(), None);
    let st = p.stats();
    assert_eq!((st.frames_dropped, st.rows_dropped), (1, 2));
    p.end_interval();
    let (seq, _) = seq_and_rows(&drain(&mut p)[0]);
    p.observe(s.stream(0), 3, 0, &[3]).unwrap();
    p.end_interval();
    assert_eq!(seq_and_rows(&drain(&mut p)[0]).0, seq + 1);
}

#[test]
fn a_slot_changed_while_its_entry_waits_changes_the_next_entry_not_that_one() {
    let mut p = Fixed::new(PublisherConfig::default());
    let s = p.add_source(&decl(&["a"], Some("ix")), [0; 512]).unwrap();
    p.set_slot(s, b"k1", b"v1").unwrap();
    p.connected();
    p.end_interval();
    let opening = drain(&mut p);
    p.set_slot(s, b"k2", b"v2").unwrap();
    p.observe(s.stream(0), 5, 0, &[5]).unwrap();
    p.end_interval();
    // The Delta of k2 waits; k3 changes before it is polled.
    p.set_slot(s, b"k3", b"v3").unwrap();
    p.remove_slot(s, b"k1").unwrap();
    let waited = drain(&mut p);
    p.end_interval();
    let next = drain(&mut p);
    let entry = |f: &[u8]| match decode(f).unwrap().complete().unwrap().0 {
        Frame::Index(i) => (i.kind, i.state, i.blob.to_vec()),
        other => panic!("{other:?}"),
    };
    let k2 = [
        &2u32.to_le_bytes()[..],
        b"k2",
        &[1],
        &2u32.to_le_bytes(),
        b"v2",
    ]
    .concat();
    let after_k2 = state_of(&[(b"k1", b"v1"), (b"k2", b"v2")]);
    assert_eq!(entry(&waited[0]), (IndexKind::Delta, after_k2, k2));
    let Ok(Status::Complete((Frame::Rows(r), _))) = decode(&waited[1]) else {
        panic!()
    };
    assert_eq!(
        r.index_state, after_k2,
        "the rows as the interval left them"
    );
    let k1 = [&2u32.to_le_bytes()[..], b"k1", &[0]].concat();
    let k3 = [
        &2u32.to_le_bytes()[..],
        b"k3",
        &[1],
        &2u32.to_le_bytes(),
        b"v3",
    ]
    .concat();
    let now = state_of(&[(b"k2", b"v2"), (b"k3", b"v3")]);
    assert_eq!(entry(&next[0]), (IndexKind::Delta, now, [k1, k3].concat()));
    assert_eq!(opening.len(), 3);
    assert_eq!(p.stats().slot_changes_refused, 0);
}

#[test]
fn a_frame_sent_by_hand_follows_rule_1_and_the_machines_own_are_refused() {
    let mut p = Fixed::new(PublisherConfig::default());
    let s = p.add_source(&decl(&["a"], Some("ix")), [0; 512]).unwrap();
    let offset = Frame::ClockOffset(ClockOffset {
        source: s.ordinal(),
        ts: 1,
        offset_ns: -2,
    });
    let mut buf = [0u8; 64];
    let before = Err(PublishError::NotHandshaken {
        source: 0,
        kind: kind::CLOCK_OFFSET,
    });
    assert_eq!(p.encode_passthrough(&offset, &mut buf), before);
    let e = p.encode_passthrough(&offset, &mut buf).unwrap_err();
    assert!(e.to_string().contains("rule 1"), "{e}");
    p.connected();
    assert_eq!(
        p.encode_passthrough(&offset, &mut buf),
        before,
        "connected, not handshaken"
    );
    p.end_interval();
    assert_eq!(
        p.encode_passthrough(&offset, &mut buf),
        before,
        "its handshake is due"
    );
    let mut frame = [0u8; 512];
    let (_, t) = p.poll_transmit(&mut frame).unwrap().unwrap();
    assert_eq!((t.kind, t.source), (kind::HANDSHAKE, 0));
    assert_eq!(p.encode_passthrough(&offset, &mut buf), Ok(25));
    assert_eq!(buf[4], kind::CLOCK_OFFSET);
    let unknown_source = Frame::ClockOffset(ClockOffset {
        source: 1,
        ts: 1,
        offset_ns: 0,
    });
    assert_eq!(
        p.encode_passthrough(&unknown_source, &mut buf),
        Err(PublishError::UnknownSource { source: 1 })
    );
    // A kind from a newer protocol names no source: forwarded.
    let unknown = Frame::Unknown {
        kind: 42,
        payload: &[1, 2],
    };
    assert_eq!(p.encode_passthrough(&unknown, &mut buf), Ok(7));

    let own = [
        Frame::Handshake(Handshake {
            source: 0,
            ..common::handshake()
        }),
        Frame::Rows(Rows {
            source: 0,
            seq: 9,
            index_state: NO_INDEX_STATE,
            rows: RowList::EMPTY,
        }),
        Frame::Index(Index {
            source: 0,
            stream: "ix",
            ts: 0,
            kind: IndexKind::Full,
            state: (1, 1),
            blob: &[],
        }),
        Frame::SourceUpdate(SourceUpdate {
            source: 0,
            ts: 0,
            labels: Map::EMPTY,
            metadata: Map::EMPTY,
        }),
    ];
    for frame in own {
        let e = p.encode_passthrough(&frame, &mut frame_buf()).unwrap_err();
        assert_eq!(e, PublishError::NotPassthrough { kind: frame.kind() });
        assert!(e.to_string().contains("publisher's own"), "{e}");
    }
}

fn frame_buf() -> [u8; 512] {
    [0; 512]
}

/// A source with no uuid, labels or index: its handshake is 27 bytes.
fn anonymous<'a>(streams: &'a [&'a str]) -> SourceDecl<'a> {
    SourceDecl {
        uuid: None,
        labels: Map::EMPTY,
        ..decl(streams, None)
    }
}

/// The rows of a decoded `Rows` frame, as (stream, ts, row).
fn rows_of(frame: &[u8]) -> Vec<(String, i64, Vec<u8>)> {
    match decode(frame) {
        Ok(Status::Complete((Frame::Rows(r), n))) if n == frame.len() => r
            .rows
            .iter()
            .map(|r| (r.stream.to_string(), r.ts, r.row.to_vec()))
            .collect(),
        other => panic!("not one Rows frame: {other:?}"),
    }
}

#[test]
fn a_row_that_would_outgrow_the_frame_buffer_is_refused_and_counted() {
    // 37 bytes of head; the row "a" of 10 bytes is 35; and 35 more kept
    // for the latest row of "a" in a connection's first frame (rule 3).
    let config = PublisherConfig {
        frame_buffer: 107,
        ..PublisherConfig::default()
    };
    let mut p = Fixed::new(config);
    let s = p.add_source(&anonymous(&["a"]), [0; 512]).unwrap();
    let a = s.stream(0);
    let e = p.observe(a, 1, 0, &[7; 11]).unwrap_err();
    assert_eq!(
        e,
        PublishError::FrameTooLarge {
            source: 0,
            kind: kind::ROWS,
            needed: 109,
            limit: 107
        }
    );
    assert!(e.to_string().contains("rule 3"), "{e}");
    assert_eq!(p.stats().rows_refused, 1);
    p.observe(a, 1, 0, &[7; 10]).unwrap();
    assert_eq!(
        p.observe(a, 2, 0, &[]).unwrap_err(),
        PublishError::FrameTooLarge {
            source: 0,
            kind: kind::ROWS,
            needed: 132,
            limit: 107
        }
    );
    assert_eq!(p.stats().rows_refused, 2);
    p.connected();
    p.end_interval();
    let mut buf = [0u8; 107];
    let mut frames = Vec::new();
    while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
        frames.push(bytes.to_vec());
    }
    assert_eq!(frames.len(), 2);
    assert_eq!(rows_of(&frames[1]), [("a".into(), 1, vec![7; 10])]);
    // Nothing observed: the opening-sized frame still fits, and an
    // interval keeps its bound.
    p.observe(a, 3, 0, &[8; 10]).unwrap();
    p.end_interval();
    assert_eq!(rows_of(&drain(&mut p)[0]), [("a".into(), 3, vec![8; 10])]);
}

#[test]
fn a_slot_that_would_outgrow_the_full_is_refused_and_counted() {
    // An Index of stream "ix" is 44 bytes and its blob; c0 = on is 12.
    let config = PublisherConfig {
        frame_buffer: 56,
        ..PublisherConfig::default()
    };
    let mut p = Fixed::new(config);
    let s = p
        .add_source(
            &SourceDecl {
                index_stream: Some("ix"),
                ..anonymous(&[])
            },
            [0; 512],
        )
        .unwrap();
    p.set_slot(s, b"c0", b"on").unwrap();
    let e = p.set_slot(s, b"c1", b"x").unwrap_err();
    assert_eq!(
        e,
        PublishError::FrameTooLarge {
            source: 0,
            kind: kind::INDEX,
            needed: 67,
            limit: 56
        }
    );
    assert!(e.to_string().contains("rules 2 and 7"), "{e}");
    assert_eq!(p.stats().slot_changes_refused, 1);
    assert_eq!(p.index_state(s), Ok(state_of(&[(b"c0", b"on")])));
    p.set_slot(s, b"c0", b"o").unwrap();
    assert_eq!(p.index_state(s), Ok(state_of(&[(b"c0", b"o")])));
    p.remove_slot(s, b"c0").unwrap();
    p.set_slot(s, b"c1", b"x").unwrap();
    assert_eq!(p.index_state(s), Ok(state_of(&[(b"c1", b"x")])));
}

#[test]
fn what_the_storage_cannot_hold_is_refused_and_what_it_holds_is_kept() {
    // Declared: a 27-byte handshake, a 64-byte record, 25 bytes for the
    // latest row of "a", a 37-byte head: 153 of 216 bytes.
    let mut p: Publisher<[u8; 216], 1> = Publisher::new(PublisherConfig::default());
    let s = p.add_source(&anonymous(&["a"]), [0; 216]).unwrap();
    let a = s.stream(0);
    // Each row of 4 bytes is 29; the first also grows the latest slot by 4.
    p.observe(a, 1, 0, &[1; 4]).unwrap();
    p.observe(a, 2, 0, &[2; 4]).unwrap();
    assert_eq!(
        p.observe(a, 3, 0, &[3; 4]),
        Err(PublishError::StorageFull {
            source: 0,
            needed: 157 + 3 * 29,
            have: 216
        })
    );
    assert_eq!(p.stats().rows_refused, 1);
    p.connected();
    p.end_interval();
    let frames = drain(&mut p);
    assert_eq!(
        rows_of(&frames[1]),
        [("a".into(), 1, vec![1; 4]), ("a".into(), 2, vec![2; 4])]
    );
}

#[test]
fn a_buffer_too_small_names_the_size_and_loses_nothing() {
    let (mut p, s) = steady(PublisherConfig::default(), &["a", "b"]);
    p.observe(s.stream(1), 1, 0, &[1; 32]).unwrap();
    p.observe(s.stream(0), 2, 0, &[2; 32]).unwrap();
    p.end_interval();
    let needed = p.next_frame_len().unwrap();
    assert_eq!(needed, 37 + 2 * (4 + 1 + 20 + 32));
    let mut small = [0u8; 40];
    let e = p.poll_transmit(&mut small).unwrap_err();
    assert_eq!(e, PublishError::BufferTooSmall { needed, have: 40 });
    assert!(e.to_string().contains("stays due"), "{e}");
    assert_eq!(p.next_frame_len(), Some(needed));
    let mut buf = vec![0u8; needed];
    let (bytes, t) = p.poll_transmit(&mut buf).unwrap().unwrap();
    assert_eq!(
        (bytes.len(), t.len, t.kind, t.rows),
        (needed, needed, kind::ROWS, 2)
    );
    assert_eq!(
        rows_of(&buf),
        [("b".into(), 1, vec![1; 32]), ("a".into(), 2, vec![2; 32])]
    );
    assert_eq!(p.poll_transmit(&mut buf), Ok(None));
}

#[test]
fn polling_in_place_gives_the_bytes_poll_transmit_writes() {
    // Two publishers driven alike: one copies each frame out, the other
    // lends the ones it holds.
    let run = |in_place: bool| {
        let (mut p, s) = steady(
            PublisherConfig {
                full_every: 2,
                ..PublisherConfig::default()
            },
            &["a", "b"],
        );
        let mut out = Vec::new();
        for i in 0..6i64 {
            p.observe(s.stream((i % 2) as u32), i, -i, &i.to_le_bytes())
                .unwrap();
            p.set_slot(s, &[i as u8 % 3], &[i as u8]).unwrap();
            if i == 3 {
                p.connected();
            }
            p.end_interval();
            let mut scratch = vec![0u8; 4096];
            if in_place {
                while let Some((bytes, t)) = p.poll_frame().unwrap() {
                    assert_eq!(bytes.len(), t.len);
                    out.push(bytes.to_vec());
                }
            } else {
                while let Some((bytes, _)) = p.poll_transmit(&mut scratch).unwrap() {
                    out.push(bytes.to_vec());
                }
            }
        }
        out
    };
    let copied = run(false);
    assert!(copied.len() > 12);
    assert_eq!(run(true), copied);
}

#[test]
fn a_source_update_changes_every_later_handshake_and_a_refused_one_nothing() {
    let mut p = Fixed::new(PublisherConfig::default());
    let s = p.add_source(&decl(&["a"], None), [0; 512]).unwrap();
    let mut buf = [0u8; 256];
    let labels = [("host", "b"), ("rack", "r7")];
    // Not handshaken on any connection: nothing to send, the identity
    // still changes.
    assert_eq!(
        p.update_source(s, 9, Map::from_pairs(&labels[..1]), Map::EMPTY, &mut buf),
        Ok(None)
    );
    p.connected();
    p.end_interval();
    let handshake = |frame: &[u8]| match decode(frame) {
        Ok(Status::Complete((Frame::Handshake(h), _))) => (
            h.source,
            h.uuid.map(String::from),
            h.labels.iter().count(),
            h.labels.get("host").map(String::from),
        ),
        other => panic!("{other:?}"),
    };
    let frames = drain(&mut p);
    assert_eq!(
        handshake(&frames[0]),
        (0, Some(UUID.into()), 1, Some("b".into()))
    );

    let n = p
        .update_source(s, 9, Map::from_pairs(&labels), Map::EMPTY, &mut buf)
        .unwrap()
        .unwrap();
    let Ok(Status::Complete((Frame::SourceUpdate(u), used))) = decode(&buf[..n]) else {
        panic!("a SourceUpdate")
    };
    assert_eq!((used, u.source, u.ts), (n, 0, 9));
    assert_eq!(u.labels.get("rack"), Some("r7"));

    // Refused: out of key order, or a buffer too small for the update.
    let bad = [("z", "1"), ("a", "2")];
    let Err(PublishError::Encode(e)) =
        p.update_source(s, 10, Map::from_pairs(&bad), Map::EMPTY, &mut buf)
    else {
        panic!("keys out of order")
    };
    assert_eq!(e.rule(), Rule::KeysNotAscending);
    assert!(matches!(
        p.update_source(
            s,
            10,
            Map::from_pairs(&labels[..1]),
            Map::EMPTY,
            &mut [0u8; 8]
        ),
        Err(PublishError::BufferTooSmall { have: 8, .. })
    ));
    p.connected();
    p.end_interval();
    let frames = drain(&mut p);
    assert_eq!(
        handshake(&frames[0]),
        (0, Some(UUID.into()), 2, Some("b".into()))
    );
}

/// Storage that loses bytes once `short` is set: what a broken
/// implementation of the trait does.
struct Shrinking {
    bytes: Vec<u8>,
    short: std::rc::Rc<std::cell::Cell<bool>>,
}

impl Storage for Shrinking {
    fn bytes(&self) -> &[u8] {
        let n = if self.short.get() {
            20
        } else {
            self.bytes.len()
        };
        &self.bytes[..n]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let n = if self.short.get() {
            20
        } else {
            self.bytes.len()
        };
        &mut self.bytes[..n]
    }
}

#[test]
fn storage_that_shrinks_is_an_error_never_a_panic() {
    let short = std::rc::Rc::new(std::cell::Cell::new(false));
    let mut p: Publisher<Shrinking, 1> = Publisher::new(PublisherConfig::default());
    let storage = Shrinking {
        bytes: vec![0; 1024],
        short: short.clone(),
    };
    let s = p.add_source(&decl(&["a"], Some("ix")), storage).unwrap();
    p.set_slot(s, b"k", b"v").unwrap();
    p.connected();
    p.observe(s.stream(0), 1, 0, &[1]).unwrap();
    p.end_interval();
    let mut buf = [0u8; 512];
    assert!(p.poll_transmit(&mut buf).unwrap().is_some());
    short.set(true);
    let shrank = PublishError::StorageShrank { source: 0 };
    assert_eq!(p.poll_transmit(&mut buf), Err(shrank));
    assert!(shrank.to_string().contains("never shrink"));
    p.disconnected();
    p.end_interval();
    let got = p.observe(s.stream(0), 2, 0, &[1]);
    assert!(
        matches!(
            got,
            Err(PublishError::StorageShrank { .. } | PublishError::StorageFull { .. })
        ),
        "{got:?}"
    );
    assert!(p.set_slot(s, b"k", b"w").is_err());
    assert!(p
        .update_source(s, 0, Map::EMPTY, Map::EMPTY, &mut buf)
        .is_err());
    p.connected();
    p.end_interval();
    while let Ok(Some(_)) = p.poll_transmit(&mut buf) {}
}

#[test]
fn an_observer_takes_its_own_sources_rows_and_counts_what_it_refuses() {
    let mut p = Fixed::new(PublisherConfig::default());
    let a = p.add_source(&anonymous(&["a"]), [0; 512]).unwrap();
    let b = p.add_source(&anonymous(&["b"]), [0; 512]).unwrap();
    let mut rows = p.observer(a).unwrap();
    rows.observe(a.stream(0), 1, 0, &[1]).unwrap();
    let e = rows.observe(b.stream(0), 1, 0, &[1]).unwrap_err();
    assert_eq!(
        e,
        PublishError::OtherSource {
            source: 0,
            stream_source: 1
        }
    );
    assert!(e.to_string().contains("its own Rows frame"), "{e}");
    assert_eq!(
        rows.observe(a.stream(1), 1, 0, &[1]),
        Err(PublishError::UnknownStream {
            source: 0,
            stream: 1
        })
    );
    // Beyond the 512 bytes of storage: refused, counted, the row before kept.
    assert!(matches!(
        rows.observe(a.stream(0), 2, 0, &[2; 400]),
        Err(PublishError::StorageFull { .. })
    ));
    rows.observe(a.stream(0), 3, 0, &[3]).unwrap();
    drop(rows);
    // The other source's row, the undeclared stream's and the one too large.
    assert_eq!(p.stats().rows_refused, 3);
    p.connected();
    p.end_interval();
    let frames = drain(&mut p);
    assert_eq!(
        rows_of(&frames[2]),
        [("a".into(), 1, vec![1]), ("a".into(), 3, vec![3])]
    );
    assert_eq!(rows_of(&frames[3]), []);
    p.observe(a.stream(0), 4, 0, &[4]).unwrap();
    p.end_interval();
    // An interval waits to be polled; an observer takes the next one's rows.
    p.observer(a)
        .unwrap()
        .observe(a.stream(0), 5, 0, &[5])
        .unwrap();
    let of_a = |frames: Vec<Vec<u8>>| frames.into_iter().find(|f| f[5] == 0).unwrap();
    assert_eq!(rows_of(&of_a(drain(&mut p))), [("a".into(), 4, vec![4])]);
    p.end_interval();
    assert_eq!(rows_of(&of_a(drain(&mut p))), [("a".into(), 5, vec![5])]);
}

#[test]
fn every_error_has_a_name_that_is_its_variant() {
    // `name()` is what a device logs instead of the sentence: it must say
    // which variant, as `Debug` does.
    let errors = [
        PublishError::TooManySources { limit: 1 },
        PublishError::UnknownSource { source: 1 },
        PublishError::UnknownStream {
            source: 0,
            stream: 1,
        },
        PublishError::DuplicateStream {
            source: 0,
            stream: 1,
        },
        PublishError::OtherSource {
            source: 0,
            stream_source: 1,
        },
        PublishError::NoIndex { source: 0 },
        PublishError::NotHandshaken { source: 0, kind: 5 },
        PublishError::NotPassthrough { kind: 1 },
        PublishError::FrameTooLarge {
            source: 0,
            kind: 3,
            needed: 2,
            limit: 1,
        },
        PublishError::StorageFull {
            source: 0,
            needed: 2,
            have: 1,
        },
        PublishError::StorageShrank { source: 0 },
        PublishError::BufferTooSmall { needed: 2, have: 1 },
        PublishError::Encode(decode(&[0, 0, 0, 0]).unwrap_err()),
    ];
    for e in errors {
        let debug = format!("{e:?}");
        assert!(debug.starts_with(e.name()), "{debug} named {}", e.name());
    }
    let wire = decode(&[0, 0, 0, 0]).unwrap_err();
    assert!(format!("{:?}", wire.rule()).starts_with(wire.name()));
    let protocol = [
        ProtocolError::UnknownSource { source: 0, kind: 3 },
        ProtocolError::DuplicateHandshake { source: 0 },
        ProtocolError::TooManySources { limit: 1 },
    ];
    for e in protocol {
        assert!(format!("{e:?}").starts_with(e.name()));
    }
}
