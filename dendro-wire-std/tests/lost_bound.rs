//! A collector's subscriber counts frames lost only as far as the
//! connection's age and what it sent allow (docs/PROTOCOL.md §8.17).

use std::time::{Duration, Instant};

use dendro_wire_core::{lost_allowance, Frame, RowList, Rows};
use dendro_wire_std::{CountingSink, SinkSubscriber, Tally};
use dendro_wire_test_support::fixtures::handshake;

fn rows(source: u32, seq: u64) -> Frame<'static> {
    Frame::Rows(Rows {
        source,
        seq,
        index_state: (0, 0),
        rows: RowList::EMPTY,
    })
}

/// A subscriber for a connection opened `age` ago, fed `frames`.
fn fed(age: Duration, frames: &[Frame<'_>]) -> Tally {
    let opened = Instant::now()
        .checked_sub(age)
        .expect("a clock past its start");
    let mut sub = SinkSubscriber::new(CountingSink::default()).bound_lost_from(opened);
    for frame in frames {
        sub.apply(frame).unwrap();
    }
    sub.tally()
}

#[test]
fn jumps_below_what_a_connection_could_lose_are_lost_and_past_it_are_not() {
    // Ten seconds open, three frames with the jump: 10,003 frames may be
    // lost, and a few more for the milliseconds the test takes.
    let age = Duration::from_secs(10);
    let bound = lost_allowance(10_000, 3);
    assert_eq!(bound, 10_003);
    for (jump, counted) in [
        (0, true),
        (1, true),
        (bound / 2, true),
        (bound - 1, true),
        (bound, true),
        (bound * 2, false),
        (bound * 100, false),
        (u64::MAX - 11, false),
    ] {
        let tally = fed(age, &[handshake(0), rows(0, 10), rows(0, 11 + jump)]);
        let lost = if counted { jump } else { 0 };
        assert_eq!(tally.frames_lost, lost, "a jump of {jump}");
        assert_eq!(tally.gaps, u64::from(counted && jump > 0), "{jump}");
        assert_eq!(tally.seq_regressions, u64::from(!counted), "{jump}");
    }
}

#[test]
fn a_new_connection_may_lose_no_more_than_it_sent() {
    let tally = fed(
        Duration::ZERO,
        &[handshake(0), rows(0, 0), rows(0, 2), rows(0, 1_000_000)],
    );
    assert_eq!((tally.gaps, tally.frames_lost), (1, 1));
    assert_eq!(tally.seq_regressions, 1);
}

#[test]
fn without_a_clock_every_jump_is_frames_lost() {
    // A capture, read at any speed: `check` and dendro count it so.
    let mut sub = SinkSubscriber::new(CountingSink::default());
    for frame in [handshake(0), rows(0, 0), rows(0, 1_000_001)] {
        sub.apply(&frame).unwrap();
    }
    assert_eq!(sub.tally().frames_lost, 1_000_000);
    assert_eq!(sub.tally().seq_regressions, 0);
}

#[test]
fn an_honest_lossy_stream_counts_every_gap_exactly() {
    // An hour of one frame a second from seq 7, every 9th second losing a
    // run of 1 to 5 frames: 400 gaps, all of them counted.
    let mut frames = vec![handshake(0)];
    let (mut seq, mut lost, mut gaps) = (7u64, 0u64, 0u64);
    for second in 0..3600u64 {
        if second > 0 && second % 9 == 0 {
            let run = second % 5 + 1;
            seq += run;
            lost += run;
            gaps += 1;
        }
        frames.push(rows(0, seq));
        seq += 1;
    }
    let tally = fed(Duration::from_secs(3600), &frames);
    assert_eq!((tally.gaps, tally.frames_lost), (gaps, lost));
    assert_eq!((gaps, tally.seq_regressions), (399, 0));
}
