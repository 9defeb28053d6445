//! A collector landing many connections in one archive (features `archive`
//! and `tokio`): rows from every connection are committed together, what is
//! handed over and not yet committed is bounded, and a stop commits what
//! was handed over before the archive is finished. Each read back with
//! dendro 0.6.1.

#![cfg(all(feature = "archive", feature = "tokio"))]

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use dendro_wire_std::archive::{contents, ArchiveConfig, SharedArchive};
use dendro_wire_std::receive::{Ended, Server, ServerConfig};
use dendro_wire_test_support::scratch;
use dendro_wire_test_support::streams::{honest_stream, ROWS_PER_FRAME};

const ENCODER: &str = "test-raw-1";

/// A server on a free loopback port landing every connection in `archive`,
/// each ended connection sent down the channel.
fn serve(archive: &SharedArchive, config: ServerConfig) -> (Server, mpsc::Receiver<Ended>) {
    let (tx, rx) = mpsc::channel();
    let archive = archive.clone();
    let server = Server::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        config,
        move |_| archive.connection(),
        move |ended, _| {
            let _ = tx.send(ended);
        },
    )
    .unwrap();
    (server, rx)
}

fn recv(rx: &mpsc::Receiver<Ended>) -> Ended {
    rx.recv_timeout(Duration::from_secs(60))
        .expect("a connection's end was reported")
}

/// Send `stream` to `addr` in `pieces`, a pause between them.
fn publish(addr: SocketAddr, stream: &[u8], pieces: usize, pause: Duration) {
    let mut s = TcpStream::connect(addr).unwrap();
    for piece in stream.chunks(stream.len().div_ceil(pieces)) {
        s.write_all(piece).unwrap();
        std::thread::sleep(pause);
    }
}

/// Rows read back from the archive by dendro, over every source.
fn rows_held(archive: &SharedArchive) -> u64 {
    contents(archive.path())
        .unwrap()
        .iter()
        .map(|s| s.wal_rows)
        .sum()
}

#[test]
fn rows_from_many_connections_are_committed_together() {
    const CONNECTIONS: usize = 40;
    const FRAMES: u64 = 50;
    let dir = scratch!("fleet-commits");
    let config = ArchiveConfig::default().commit_age(Duration::from_millis(500));
    let archive = SharedArchive::with_config(&dir.join("a.dendro"), ENCODER, config).unwrap();
    let (server, ended) = serve(&archive, ServerConfig::default());
    let addr = server.local_addr().unwrap();
    let stream = honest_stream(FRAMES);
    let publishers: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let stream = stream.clone();
            std::thread::spawn(move || publish(addr, &stream, 5, Duration::from_millis(20)))
        })
        .collect();
    for p in publishers {
        p.join().unwrap();
    }
    for _ in 0..CONNECTIONS {
        let e = recv(&ended);
        assert!(e.result.is_ok(), "{e}");
    }
    server.shutdown(Duration::ZERO);
    let stats = archive.clone().finish().unwrap();
    let rows = CONNECTIONS as u64 * FRAMES * ROWS_PER_FRAME;
    assert_eq!((stats.rows_committed, stats.rows_pending), (rows, 0));
    assert_eq!(rows_held(&archive), rows);
    assert_eq!(stats.sources_opened, CONNECTIONS as u64);
    // 200 pieces of frames arrived, each of which a connection used to
    // commit on its own; together they are a few commits.
    assert!(stats.commits < CONNECTIONS as u64, "{stats:?}");
    assert!(stats.commit_seconds.count <= stats.commits);
}

#[test]
fn a_full_backlog_stops_reading_its_connections_and_loses_nothing() {
    const FRAMES: u64 = 2_000;
    let dir = scratch!("fleet-backlog");
    // A few frames' worth of room, and batches that wait: the connection
    // must wait for commits, again and again.
    let config = ArchiveConfig::default()
        .backlog_bytes(4 << 10)
        .commit_age(Duration::from_millis(10));
    let archive = SharedArchive::with_config(&dir.join("a.dendro"), ENCODER, config).unwrap();
    let (server, ended) = serve(&archive, ServerConfig::default());
    let addr = server.local_addr().unwrap();
    let stream = honest_stream(FRAMES);
    publish(addr, &stream, 1, Duration::ZERO);
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.tally.rows_applied, FRAMES * ROWS_PER_FRAME);
    server.shutdown(Duration::ZERO);
    let stats = archive.clone().finish().unwrap();
    assert!(stats.waits > 0, "the connection waited for room: {stats:?}");
    // At most its bound and the one frame a connection applies past it.
    let frame = stream.len() / FRAMES as usize;
    assert!(
        stats.backlog_peak <= stats.backlog_limit + 4 * frame,
        "{stats:?}"
    );
    assert_eq!(stats.rows_committed, FRAMES * ROWS_PER_FRAME);
    assert_eq!(rows_held(&archive), FRAMES * ROWS_PER_FRAME);
}

#[test]
fn what_was_handed_over_at_a_stop_is_committed_before_the_archive_finishes() {
    const FRAMES: u64 = 100;
    let dir = scratch!("fleet-stop");
    // Nothing is committed on its own within the test.
    let config = ArchiveConfig::default().commit_age(Duration::from_secs(3600));
    let archive = SharedArchive::with_config(&dir.join("a.dendro"), ENCODER, config).unwrap();
    let (server, ended) = serve(&archive, ServerConfig::default());
    let addr = server.local_addr().unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&honest_stream(FRAMES)).unwrap();
    let rows = FRAMES * ROWS_PER_FRAME;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while archive.stats().rows_handed_over < rows {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            archive.stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The connection is live: the stop ends it.
    server.shutdown(Duration::ZERO);
    let e = recv(&ended);
    assert_eq!(e.tally.rows_applied, rows, "{e}");
    let at_stop = archive.stats();
    assert_eq!((at_stop.rows_pending, at_stop.rows_committed), (rows, 0));
    assert!(at_stop.lag > Duration::ZERO);
    let stats = archive.clone().finish().unwrap();
    assert_eq!((stats.rows_committed, stats.rows_pending), (rows, 0));
    assert_eq!(rows_held(&archive), rows);
    drop(s);
}
