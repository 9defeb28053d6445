//! The writer path's order and batching, as its journal shows them.

use std::time::Duration;

use dendro_wire_core::{ClockOffset, Index, IndexKind, Row, RowList, Rows};
use dendro_wire_test_support::fixtures::bare_handshake;

use super::super::{ArchiveConfig, SharedArchive};
use crate::receive::Sink;

fn archive(name: &str, config: ArchiveConfig) -> SharedArchive {
    let dir =
        std::env::temp_dir().join(format!("dendro-wire-commit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    SharedArchive::with_config(&dir.join("a.dendro"), "test-raw-1", config).unwrap()
}

fn hand_rows(sink: &mut impl Sink, source: u32, ts: i64, streams: &[&str]) {
    let owned: Vec<Row<'_>> = streams
        .iter()
        .map(|s| Row {
            stream: s,
            ts,
            wall_offset: 0,
            row: b"row",
        })
        .collect();
    let frame = Rows {
        source,
        seq: ts as u64,
        index_state: (0, 0),
        rows: RowList::from_slice(&owned),
    };
    sink.rows(source, &frame).unwrap();
}

/// The journal's lines for source key `key`, in order.
fn lines_of(archive: &SharedArchive, key: u64) -> Vec<String> {
    let journal = archive.inner.journal.lock().unwrap();
    let prefix = format!("{key} ");
    journal
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

#[test]
fn each_sources_frames_reach_dendro_in_stream_order_while_rows_batch_together() {
    // Nothing is committed until asked: every commit below is forced by
    // a fence or by the finish.
    let config = ArchiveConfig::default()
        .commit_age(Duration::from_secs(3600))
        .commit_rows(1_000_000);
    let archive = archive("order", config);
    let (mut a, mut b) = (archive.connection(), archive.connection());
    a.open_source(0, &bare_handshake(0)).unwrap();
    b.open_source(0, &bare_handshake(0)).unwrap();
    hand_rows(&mut a, 0, 1, &["x", "y"]);
    hand_rows(&mut b, 0, 1, &["x"]);
    let offset = ClockOffset {
        source: 0,
        ts: 1,
        offset_ns: 5,
    };
    a.clock_offset(0, &offset).unwrap();
    hand_rows(&mut a, 0, 2, &["x", "y", "z"]);
    let entry = Index {
        source: 0,
        stream: "slots",
        ts: 2,
        kind: IndexKind::Full,
        state: (1, 2),
        blob: b"",
    };
    a.index_entry(0, &entry).unwrap();
    b.clock_offset(0, &offset).unwrap();
    hand_rows(&mut b, 0, 2, &["x"]);
    a.end_connection().unwrap();
    b.end_connection().unwrap();
    let stats = archive.clone().finish().unwrap();
    assert_eq!(
        lines_of(&archive, 0),
        ["2 rows", "clock_offset", "3 rows", "index", "end"],
        "{:?}",
        archive.inner.journal.lock().unwrap()
    );
    assert_eq!(
        lines_of(&archive, 1),
        ["1 rows", "clock_offset", "1 rows", "end"]
    );
    // Both sources' first rows shared a commit, and their second rows
    // another: two commits for four frames of rows.
    assert_eq!((stats.rows_committed, stats.commits), (7, 2), "{stats:?}");
    assert_eq!(stats.rows_pending, 0);
}

#[test]
fn a_row_whose_stream_did_not_advance_is_committed_apart_from_the_others() {
    let config = ArchiveConfig::default()
        .commit_age(Duration::from_secs(3600))
        .commit_rows(1_000_000);
    let archive = archive("apart", config);
    let mut sinks = [
        archive.connection(),
        archive.connection(),
        archive.connection(),
    ];
    for sink in &mut sinks {
        sink.open_source(0, &bare_handshake(0)).unwrap();
    }
    let [a, b, c] = &mut sinks;
    // a goes back in time on one stream: an honest catch-up, say.
    hand_rows(a, 0, 5, &["x"]);
    hand_rows(a, 0, 4, &["x"]);
    hand_rows(b, 0, 5, &["x", "y"]);
    // c repeats a (stream, ts): dendro refuses it, and would refuse it
    // by re-committing the whole batch source by source.
    hand_rows(c, 0, 5, &["x"]);
    hand_rows(c, 0, 5, &["x"]);
    for sink in &mut sinks {
        sink.end_connection().unwrap();
    }
    let stats = archive.clone().finish().unwrap();
    // One shared batch of every source's advancing rows, then a's and
    // c's own.
    assert_eq!(lines_of(&archive, 0), ["1 rows", "1 rows", "end"]);
    assert_eq!(lines_of(&archive, 1), ["2 rows", "end"]);
    assert_eq!(lines_of(&archive, 2), ["1 rows", "1 rows", "end"]);
    assert_eq!(
        (
            stats.rows_committed,
            stats.rows_committed_apart,
            stats.commits
        ),
        (6, 2, 3)
    );
    let held: Vec<u64> = super::super::contents(archive.path())
        .unwrap()
        .iter()
        .map(|s| s.wal_rows)
        .collect();
    assert_eq!(
        held,
        [2, 2, 1],
        "a's earlier row kept; c's repeat refused by dendro alone"
    );
}

/// The stats once `done` says they are as awaited, or after 10 s.
fn stats_once(
    archive: &SharedArchive,
    done: impl Fn(&super::super::ArchiveStats) -> bool,
) -> super::super::ArchiveStats {
    let started = std::time::Instant::now();
    loop {
        let stats = archive.stats();
        if done(&stats) || started.elapsed() > Duration::from_secs(10) {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_sources_whose_connections_ended_are_no_longer_beaten_once_none_is_open() {
    const ENDED: u64 = 40;
    let config = ArchiveConfig::default().commit_age(Duration::from_millis(10));
    let archive = archive("idle", config);
    let mut sinks: Vec<_> = (0..ENDED).map(|_| archive.connection()).collect();
    for (ts, sink) in sinks.iter_mut().enumerate() {
        sink.open_source(0, &bare_handshake(0)).unwrap();
        hand_rows(sink, 0, ts as i64 + 1, &["x"]);
    }
    let live = stats_once(&archive, |s| s.sources_beating == ENDED);
    assert_eq!(
        (live.sources_beating, live.writer_reopens),
        (ENDED, 0),
        "every open source beats: {live:?}"
    );
    // One stays open: while it does, dendro's writer is left as it is.
    let keep = sinks.pop().unwrap();
    for sink in &mut sinks {
        sink.end_connection().unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(archive.stats().writer_reopens, 0);
    let mut keep = keep;
    keep.end_connection().unwrap();
    let idle = stats_once(&archive, |s| s.sources_beating == 0);
    assert_eq!(
        (idle.sources_beating, idle.writer_reopens),
        (0, 1),
        "no source open: none beats: {idle:?}"
    );
    // The writer opened again takes sources and rows as the first did, and
    // beats the one open; dendro's own counter, each source's heartbeat,
    // says the ended ones are left alone over more than an interval.
    let mut again = archive.connection();
    again.open_source(0, &bare_handshake(0)).unwrap();
    hand_rows(&mut again, 0, 100, &["x"]);
    stats_once(&archive, |s| s.sources_beating == 1);
    let beats = || -> Vec<Option<i64>> {
        let db = dendro::archive::Archive::open(archive.path()).unwrap();
        let sources = db.read_sources().unwrap();
        sources.iter().map(|s| s.heartbeat).collect()
    };
    let before = beats();
    std::thread::sleep(dendro::writer::HEARTBEAT_INTERVAL + Duration::from_millis(1500));
    let after = beats();
    assert_eq!(after.len() as u64, ENDED + 1);
    assert_eq!(
        before[..ENDED as usize],
        after[..ENDED as usize],
        "ended: not beaten"
    );
    assert_ne!(
        before[ENDED as usize], after[ENDED as usize],
        "open: beaten"
    );
    again.end_connection().unwrap();
    let stats = archive.clone().finish().unwrap();
    assert_eq!((stats.rows_committed, stats.rows_dropped), (ENDED + 1, 0));
    let held = super::super::contents(archive.path()).unwrap();
    assert_eq!(held.len() as u64, ENDED + 1);
    assert_eq!(held.iter().map(|s| s.wal_rows).sum::<u64>(), ENDED + 1);
}

#[test]
fn a_finalized_source_stops_beating_without_opening_the_writer_again() {
    let archive = archive("finalized", ArchiveConfig::default());
    let mut sink = archive.connection();
    let mut complete = bare_handshake(0);
    complete.complete = true;
    sink.open_source(0, &complete).unwrap();
    hand_rows(&mut sink, 0, 1, &["x"]);
    assert_eq!(
        stats_once(&archive, |s| s.sources_beating == 1).sources_beating,
        1
    );
    sink.end_connection().unwrap();
    let stats = stats_once(&archive, |s| s.sources_beating == 0);
    assert_eq!((stats.sources_beating, stats.writer_reopens), (0, 0));
    archive.finish().unwrap();
}
