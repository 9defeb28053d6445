//! The protocol rules of docs/PROTOCOL.md §5 and §8, as the state machines
//! enforce them.

use dendro_wire_core::*;
use dendro_wire_test_support::fixtures::handshake;

fn index(source: u32, kind: IndexKind, state: IndexState) -> Frame<'static> {
    Frame::Index(Index {
        source,
        stream: "cpu",
        ts: 0,
        kind,
        state,
        blob: &[],
    })
}

fn rows(source: u32, seq: u64, index_state: IndexState) -> Frame<'static> {
    Frame::Rows(Rows {
        source,
        seq,
        index_state,
        rows: RowList::EMPTY,
    })
}

fn verdict<const N: usize>(sub: &mut Subscriber<N>, frame: Frame<'_>) -> RowsVerdict {
    match sub.admit(&frame) {
        Ok(Admitted::Rows(v)) => v,
        other => panic!("{other:?}"),
    }
}

#[test]
fn rule_1_a_frame_for_an_ordinal_with_no_handshake_is_refused() {
    let mut sub = Subscriber::<4>::new();
    for frame in [
        rows(0, 0, NO_INDEX_STATE),
        index(0, IndexKind::Full, (1, 1)),
        Frame::ClockOffset(ClockOffset {
            source: 0,
            ts: 0,
            offset_ns: 0,
        }),
    ] {
        assert_eq!(
            sub.admit(&frame),
            Err(ProtocolError::UnknownSource {
                source: 0,
                kind: frame.kind()
            })
        );
    }
    sub.admit(&handshake(0)).unwrap();
    assert!(sub.admit(&rows(0, 0, NO_INDEX_STATE)).is_ok());
    let e = sub.admit(&rows(1, 0, NO_INDEX_STATE)).unwrap_err();
    assert!(e.to_string().contains("names source 1"), "{e}");
}

#[test]
fn a_second_handshake_for_a_live_ordinal_is_refused() {
    let mut sub = Subscriber::<4>::new();
    assert_eq!(sub.admit(&handshake(3)), Ok(Admitted::Opened { source: 3 }));
    assert_eq!(
        sub.admit(&handshake(3)),
        Err(ProtocolError::DuplicateHandshake { source: 3 })
    );
    // A new connection starts over (rule 8).
    sub.reset();
    assert_eq!(sub.admit(&handshake(3)), Ok(Admitted::Opened { source: 3 }));
}

#[test]
fn the_source_limit_is_an_error_not_a_panic() {
    let mut sub = Subscriber::<4>::new();
    for s in 0..4 {
        sub.admit(&handshake(s)).unwrap();
    }
    assert_eq!(
        sub.admit(&handshake(4)),
        Err(ProtocolError::TooManySources { limit: 4 })
    );
    let mut sub = Subscriber::<16>::new().with_source_limit(2);
    sub.admit(&handshake(10)).unwrap();
    sub.admit(&handshake(20)).unwrap();
    assert_eq!(
        sub.admit(&handshake(30)),
        Err(ProtocolError::TooManySources { limit: 2 })
    );
    assert_eq!(sub.source_count(), 2);
}

#[test]
fn rows_before_the_first_full_are_skipped_unless_they_declare_no_index() {
    let mut sub = Subscriber::<4>::new();
    sub.admit(&handshake(0)).unwrap();
    let v = verdict(&mut sub, rows(0, 0, (5, 5)));
    assert_eq!(v.skip, Some(SkipReason::BeforeFirstFull));
    // A Delta alone does not synchronize a source.
    sub.admit(&index(0, IndexKind::Delta, (5, 5))).unwrap();
    assert_eq!(
        verdict(&mut sub, rows(0, 1, (5, 5))).skip,
        Some(SkipReason::BeforeFirstFull)
    );

    // A publisher with no index at all: applied from the first frame.
    let mut sub = Subscriber::<4>::new();
    sub.admit(&handshake(0)).unwrap();
    assert_eq!(verdict(&mut sub, rows(0, 0, NO_INDEX_STATE)).skip, None);
}

#[test]
fn rule_9_rows_against_another_state_are_skipped() {
    let mut sub = Subscriber::<4>::new();
    sub.admit(&handshake(0)).unwrap();
    sub.admit(&index(0, IndexKind::Full, (1, 1))).unwrap();
    assert_eq!(sub.index_state(0), Some((1, 1)));
    assert_eq!(verdict(&mut sub, rows(0, 0, (1, 1))).skip, None);
    // A Delta replaces the held state.
    assert_eq!(
        sub.admit(&index(0, IndexKind::Delta, (2, 2))),
        Ok(Admitted::Index {
            source: 0,
            kind: IndexKind::Delta
        })
    );
    assert_eq!(
        verdict(&mut sub, rows(0, 1, (1, 1))).skip,
        Some(SkipReason::IndexStateMismatch {
            held: (2, 2),
            declared: (1, 1)
        })
    );
    assert_eq!(verdict(&mut sub, rows(0, 2, (2, 2))).skip, None);
    // Once an index is held, "no index" is a mismatch too.
    assert!(matches!(
        verdict(&mut sub, rows(0, 3, NO_INDEX_STATE)).skip,
        Some(SkipReason::IndexStateMismatch { .. })
    ));
}

#[test]
fn a_gap_reports_the_frames_lost_and_a_regression_is_flagged() {
    let mut sub = Subscriber::<4>::new();
    sub.admit(&handshake(0)).unwrap();
    let v = verdict(&mut sub, rows(0, 100, NO_INDEX_STATE));
    assert_eq!(
        (v.lost, v.regression),
        (0, false),
        "seq need not start at 0"
    );
    assert_eq!(verdict(&mut sub, rows(0, 101, NO_INDEX_STATE)).lost, 0);
    let v = verdict(&mut sub, rows(0, 105, NO_INDEX_STATE));
    assert_eq!((v.lost, v.first_gap), (3, true));
    let v = verdict(&mut sub, rows(0, 107, NO_INDEX_STATE));
    assert_eq!((v.lost, v.first_gap), (1, false), "first_gap is once");
    let v = verdict(&mut sub, rows(0, 107, NO_INDEX_STATE));
    assert_eq!((v.lost, v.regression, v.skip), (0, true, None));
    let v = verdict(&mut sub, rows(0, 3, NO_INDEX_STATE));
    assert!(v.regression);
    assert_eq!(verdict(&mut sub, rows(0, 4, NO_INDEX_STATE)).lost, 0);
}

#[test]
fn unknown_kinds_are_skipped_and_other_frames_applied() {
    let mut sub = Subscriber::<4>::new();
    let unknown = Frame::Unknown {
        kind: 9,
        payload: &[1],
    };
    assert_eq!(sub.admit(&unknown), Ok(Admitted::Unknown { kind: 9 }));
    sub.admit(&handshake(0)).unwrap();
    let seg = Frame::Segment(Segment {
        source: 0,
        stream: "s",
        rows: 0,
        first_ts: 0,
        last_ts: 0,
        bytes: &[],
        caller_index: None,
    });
    assert_eq!(sub.admit(&seg), Ok(Admitted::Apply { source: 0 }));
}

/// A `Rows` frame of two rows against index state (1, 1), built in `buf`.
fn two_rows(buf: &mut [u8], seq: u64) -> Frame<'_> {
    let header = RowsHeader {
        source: 0,
        seq,
        index_state: (1, 1),
    };
    let mut b = RowsBuilder::new(buf, header).unwrap();
    for ts in 0..2 {
        let row = Row {
            stream: "cpu",
            ts,
            wall_offset: 0,
            row: &[1],
        };
        b.push(&row).unwrap();
    }
    let len = b.finish().unwrap();
    let Status::Complete((frame, _)) = decode(&buf[..len]).unwrap() else {
        panic!("a whole frame")
    };
    frame
}

#[test]
fn a_tally_counts_each_verdict_under_its_name() {
    let (mut early, mut late) = ([0u8; 128], [0u8; 128]);
    let frames = [
        handshake(0),
        // Before the first Full: skipped.
        two_rows(&mut early, 0),
        index(0, IndexKind::Full, (1, 1)),
        two_rows(&mut late, 1),
        // Two frames lost, then a regression.
        rows(0, 4, (1, 1)),
        rows(0, 2, (1, 1)),
        Frame::ClockOffset(ClockOffset {
            source: 0,
            ts: 1,
            offset_ns: 2,
        }),
        Frame::Unknown {
            kind: 9,
            payload: &[1],
        },
    ];
    let mut sub = Subscriber::<4>::new();
    let mut tally = Tally::default();
    for frame in &frames {
        tally.count(frame, sub.admit(frame).unwrap());
    }
    assert_eq!(
        tally.counts(),
        [8, 1, 1, 2, 2, 0, 1, 0, 1, 1, 2, 1],
        "{:?}",
        Tally::NAMES
    );
    let mut twice = tally;
    twice += tally;
    assert_eq!(
        (twice.frames, twice.rows_applied, twice.frames_lost),
        (16, 4, 4)
    );
}

#[test]
fn the_slot_set_hash_is_order_free_incremental_and_never_no_index() {
    let slots: Vec<Vec<u8>> = (0..100).map(|i| format!("cpu{i}").into_bytes()).collect();
    let mut forward = SlotSetHash::new();
    let mut backward = SlotSetHash::new();
    for s in &slots {
        forward.insert(s);
    }
    for s in slots.iter().rev() {
        backward.insert(s);
    }
    assert_eq!(forward.state(), backward.state());
    assert_eq!(forward.len(), 100);

    // Remove then re-add is the same set; a change differs, and undoes.
    let before = forward.state();
    forward.remove(b"cpu7");
    assert_ne!(forward.state(), before);
    forward.insert(b"cpu7");
    assert_eq!(forward.state(), before);
    forward.replace(b"cpu7", b"cpu7:offline");
    assert_ne!(forward.state(), before);
    forward.replace(b"cpu7:offline", b"cpu7");
    assert_eq!(forward.state(), before);

    // The set is a multiset of slots: a count is part of the state.
    let mut twice = SlotSetHash::new();
    twice.insert(b"a");
    twice.insert(b"a");
    let mut once = SlotSetHash::new();
    once.insert(b"a");
    assert_ne!(twice.state(), once.state());

    assert_ne!(SlotSetHash::new().state(), NO_INDEX_STATE);
    assert!(SlotSetHash::new().is_empty());
    let mut emptied = SlotSetHash::new();
    emptied.insert(b"x");
    emptied.remove(b"x");
    assert_eq!(emptied.state(), SlotSetHash::new().state());
}

/// A table of any size, sources in any order of ordinals: each source's
/// state stays its own, found again, and the table holds exactly `N`.
fn any_size<const N: usize>() {
    let mut sub = Subscriber::<N>::new();
    // Ordinals out of order and far apart, as another publisher may use.
    let ordinals: Vec<u32> = [7, 0, u32::MAX, 3, 1000, 2, 1, 5, 4]
        .into_iter()
        .take(N)
        .collect();
    for (i, &source) in ordinals.iter().enumerate() {
        assert_eq!(
            sub.admit(&handshake(source)),
            Ok(Admitted::Opened { source })
        );
        assert_eq!(sub.source_count(), i + 1);
        // Each source's own state: the Full it was sent, told apart.
        let state = (u64::from(source), i as u64 + 1);
        sub.admit(&index(source, IndexKind::Full, state)).unwrap();
    }
    for (i, &source) in ordinals.iter().enumerate() {
        let state = (u64::from(source), i as u64 + 1);
        assert_eq!(sub.index_state(source), Some(state), "{N}: {source}");
        assert_eq!(verdict(&mut sub, rows(source, 9, state)).skip, None);
        assert_eq!(
            sub.admit(&handshake(source)),
            Err(ProtocolError::DuplicateHandshake { source })
        );
    }
    assert_eq!(
        sub.admit(&handshake(6)),
        Err(ProtocolError::TooManySources { limit: N })
    );
    assert_eq!(sub.index_state(6), None);
}

#[test]
fn a_subscriber_holds_any_number_of_sources_from_one() {
    // One source is a device's natural table; no size needs to be a power
    // of two.
    any_size::<1>();
    any_size::<2>();
    any_size::<3>();
    any_size::<5>();
    any_size::<9>();
}

/// A table lent by the caller and sized at run time judges every frame as
/// the array of the same size does, and holds exactly what it was lent.
#[test]
fn a_subscriber_over_a_lent_table_is_one_over_an_array() {
    let mut places = [SourceSlot::EMPTY; 5];
    let mut lent = SubscriberIn::in_table(&mut places[..], 1024);
    let mut own = Subscriber::<5>::new();
    assert_eq!(lent.source_limit(), 5, "the limit is never above the table");
    let mut frames = Vec::new();
    for source in [4, 0, 9, 2, 7, 3] {
        frames.push(handshake(source));
        frames.push(index(source, IndexKind::Full, (u64::from(source), 1)));
        frames.push(rows(source, 5, (u64::from(source), 1)));
        frames.push(rows(source, 8, (u64::from(source), 2)));
    }
    for frame in &frames {
        assert_eq!(lent.admit(frame), own.admit(frame), "{frame:?}");
    }
    assert_eq!(lent.source_count(), 5);
    assert_eq!(lent.index_state(2), own.index_state(2));
    lent.reset();
    assert_eq!(lent.source_count(), 0);
    assert_eq!(lent.index_state(2), None);

    let mut two = [SourceSlot::EMPTY; 8];
    let mut limited = SubscriberIn::in_table(&mut two[..], 2);
    for source in 0..2 {
        limited.admit(&handshake(source)).unwrap();
    }
    assert_eq!(
        limited.admit(&handshake(2)),
        Err(ProtocolError::TooManySources { limit: 2 })
    );
}
