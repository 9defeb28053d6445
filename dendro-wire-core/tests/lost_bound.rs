//! Frames counted lost are bounded (docs/PROTOCOL.md §8.17): a `seq` jump
//! past what the connection could have produced is a regression, never
//! frames lost, and an honest lossy stream still counts every gap exactly.

use dendro_wire_core::*;
use dendro_wire_test_support::fixtures::handshake;

fn rows(source: u32, seq: u64) -> Frame<'static> {
    Frame::Rows(Rows {
        source,
        seq,
        index_state: NO_INDEX_STATE,
        rows: RowList::EMPTY,
    })
}

/// A subscriber with sources 0 and 1 open, and a tally of what it judged.
fn opened() -> (Subscriber<4>, Tally) {
    let mut sub = Subscriber::<4>::new();
    let mut tally = Tally::default();
    for source in [0, 1] {
        let hs = handshake(source);
        tally.count(&hs, sub.admit(&hs).unwrap());
    }
    (sub, tally)
}

fn judge(sub: &mut Subscriber<4>, tally: &mut Tally, frame: Frame<'_>) -> RowsVerdict {
    let admitted = sub.admit(&frame).unwrap();
    tally.count(&frame, admitted);
    match admitted {
        Admitted::Rows(v) => v,
        other => panic!("{other:?}"),
    }
}

#[test]
fn seq_0_then_the_last_seq_is_implausible_under_any_bound_a_clock_gives() {
    let (mut sub, mut tally) = opened();
    sub.allow_lost(lost_allowance(3_600_000, 2));
    judge(&mut sub, &mut tally, rows(0, 0));
    let v = judge(&mut sub, &mut tally, rows(0, u64::MAX));
    assert_eq!((v.lost, v.implausible, v.regression), (0, true, true));
    assert!(!v.first_gap);
    assert_eq!((tally.gaps, tally.frames_lost), (0, 0));
    assert_eq!(tally.seq_regressions, 1);
    // The jump is taken: the next frame is judged from it.
    let v = judge(&mut sub, &mut tally, rows(0, 5));
    assert_eq!((v.lost, v.implausible, v.regression), (0, false, true));
    assert_eq!(tally.seq_regressions, 2);
}

#[test]
fn with_no_bound_set_a_source_still_cannot_count_past_u64() {
    // No clock (a capture read by `check`, the C API): every jump is frames
    // lost, until the source's count would pass what a u64 holds.
    let (mut sub, mut tally) = opened();
    judge(&mut sub, &mut tally, rows(0, 0));
    let v = judge(&mut sub, &mut tally, rows(0, u64::MAX));
    assert_eq!((v.lost, v.implausible), (u64::MAX - 1, false));
    judge(&mut sub, &mut tally, rows(0, 0)); // a regression
    let v = judge(&mut sub, &mut tally, rows(0, u64::MAX));
    assert_eq!((v.lost, v.implausible, v.regression), (0, true, true));
    assert_eq!(tally.frames_lost, u64::MAX - 1);
    assert_eq!(tally.seq_regressions, 2);
}

#[test]
fn jumps_around_the_bound_are_lost_up_to_it_and_implausible_past_it() {
    for allowance in [0u64, 1, 2, 7, 1_000, 60_000] {
        for jump in allowance.saturating_sub(2)..=allowance + 2 {
            let (mut sub, mut tally) = opened();
            sub.allow_lost(allowance);
            judge(&mut sub, &mut tally, rows(0, 10));
            let v = judge(&mut sub, &mut tally, rows(0, 11 + jump));
            let within = jump <= allowance;
            assert_eq!(v.implausible, !within, "{jump} of {allowance}");
            assert_eq!(
                v.lost,
                if within { jump } else { 0 },
                "{jump} of {allowance}"
            );
            assert_eq!(v.regression, !within, "{jump} of {allowance}");
            assert_eq!(tally.frames_lost, v.lost);
            assert_eq!(tally.gaps, u64::from(within && jump > 0));
        }
    }
}

#[test]
fn the_bound_is_on_what_a_source_lost_in_all_not_per_jump() {
    let (mut sub, mut tally) = opened();
    sub.allow_lost(10);
    judge(&mut sub, &mut tally, rows(0, 0));
    // 4 + 6 lost: the allowance spent.
    assert_eq!(judge(&mut sub, &mut tally, rows(0, 5)).lost, 4);
    assert_eq!(judge(&mut sub, &mut tally, rows(0, 12)).lost, 6);
    let v = judge(&mut sub, &mut tally, rows(0, 14));
    assert_eq!((v.lost, v.implausible), (0, true));
    // The next source has its own.
    judge(&mut sub, &mut tally, rows(1, 0));
    assert_eq!(judge(&mut sub, &mut tally, rows(1, 11)).lost, 10);
    // More allowance (time has passed): a jump within what is left counts.
    sub.allow_lost(12);
    assert_eq!(judge(&mut sub, &mut tally, rows(0, 17)).lost, 2);
    assert!(judge(&mut sub, &mut tally, rows(0, 19)).implausible);
    assert_eq!((tally.gaps, tally.frames_lost), (4, 22));
    assert_eq!(tally.seq_regressions, 2);
}

#[test]
fn an_honest_lossy_stream_counts_every_gap_exactly() {
    // One frame a second for an hour, from seq 1000, losing frames in runs
    // of 1 to 7 now and then; the bound is the one a clock gives at each
    // frame.
    let (mut sub, mut tally) = opened();
    let (mut seq, mut lost, mut gaps, mut state) = (1000u64, 0u64, 0u64, 12345u32);
    for second in 0..3600u64 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let run = if state % 10 == 0 {
            u64::from(state % 7 + 1)
        } else {
            0
        };
        if second > 0 && run > 0 {
            seq += run;
            lost += run;
            gaps += 1;
        }
        sub.allow_lost(lost_allowance(second * 1000, tally.frames));
        let v = judge(&mut sub, &mut tally, rows(0, seq));
        assert!(!v.implausible, "at {second}s");
        seq += 1;
    }
    assert!(gaps > 100, "{gaps}");
    assert_eq!((tally.gaps, tally.frames_lost), (gaps, lost));
    assert_eq!(tally.seq_regressions, 0);
}

#[test]
fn a_resized_table_and_a_reset_keep_and_drop_the_bound() {
    let (mut sub, _) = opened();
    sub.allow_lost(3);
    let mut large = sub.resize::<8>().unwrap();
    large.admit(&rows(0, 0)).unwrap();
    let Ok(Admitted::Rows(v)) = large.admit(&rows(0, 5)) else {
        panic!()
    };
    assert!(v.implausible, "the bound moves with the table");
    large.reset();
    large.admit(&handshake(0)).unwrap();
    large.admit(&rows(0, 0)).unwrap();
    let Ok(Admitted::Rows(v)) = large.admit(&rows(0, 5)) else {
        panic!()
    };
    assert_eq!((v.lost, v.implausible), (4, false), "a new connection");
}
