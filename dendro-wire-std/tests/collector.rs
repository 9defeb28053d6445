//! The collector under attack: hostile peers on loopback against a
//! `Server`, each bounded in count and time, with an honest publisher beside
//! them where it matters. Each peer that lies, stalls, floods or vanishes
//! must cost bounded memory, a bounded time and one closed socket. A
//! peer aiming at the disk through captures gets a file only once a whole
//! frame arrived, within the caps, and its connection served on.

#![cfg(feature = "tokio")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dendro_wire_core::{RowsHeader, NO_INDEX_STATE, PREAMBLE_BYTES};
use dendro_wire_std::receive::{Ended, ServeError, Server, ServerConfig};
use dendro_wire_std::{FrameWriter, ReadErrorKind};
use dendro_wire_test_support::scratch;
use dendro_wire_test_support::streams::{honest_stream, segment_stream, ROWS_PER_FRAME};

#[path = "support/collector.rs"]
mod support;
use support::{recv, start, wait_live, wait_until, PREAMBLE};

fn quick() -> ServerConfig {
    let mut config = ServerConfig::default();
    config.idle_timeout = Duration::from_millis(500);
    config.frame_timeout = Duration::from_millis(500);
    config
}

/// Whether the server closed `stream` within `within`: a read sees the end
/// (or a reset) rather than waiting.
fn closed_by_server(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Send an honest stream from another thread; the rows it carried.
fn publish_honestly(addr: std::net::SocketAddr, frames: u64) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&honest_stream(frames)).unwrap();
        frames * ROWS_PER_FRAME
    })
}

#[test]
fn a_lying_length_costs_only_the_bytes_that_arrived_and_honest_peers_go_on() {
    let mut config = quick();
    config.frame_timeout = Duration::from_secs(2);
    let (server, addr, ended) = start(config);
    // Fifty peers announce a 64 MiB frame, send 5,000 bytes of it (more
    // than a buffer starts with), and stall.
    const LIARS: usize = 50;
    let mut liars = Vec::new();
    for _ in 0..LIARS {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(PREAMBLE).unwrap();
        s.write_all(&(64u32 << 20).to_le_bytes()).unwrap();
        s.write_all(&[3; 5_000]).unwrap();
        liars.push(s);
    }
    let sent = (PREAMBLE_BYTES + 4 + 5_000) as u64;
    wait_until(
        "every liar's bytes arrived",
        Duration::from_secs(10),
        || {
            let live = server.live();
            live.len() == LIARS && live.iter().all(|c| c.bytes == sent)
        },
    );
    // A buffer each, at most twice the bytes that came, and the 4 KiB each
    // connection's state is taken to cost: never the 64 MiB claimed.
    let held = server.stats().memory_in_use;
    assert!(
        held <= LIARS * (2 * 5_004 + 4096),
        "{held} bytes held for {LIARS} liars"
    );

    // An honest publisher beside them lands every row.
    let rows = publish_honestly(addr, 5_000).join().unwrap();
    let honest = recv(&ended);
    assert!(honest.result.is_ok(), "{honest}");
    assert_eq!(honest.tally.rows_applied, rows);

    // The liars end at the frame timeout, each with its reason, each socket
    // closed.
    for liar in &mut liars {
        assert!(closed_by_server(liar, Duration::from_secs(10)));
    }
    for _ in 0..LIARS {
        let e = recv(&ended);
        assert!(
            matches!(e.result, Err(ServeError::FrameTimeout { have: 5_004, .. })),
            "{e}"
        );
        assert!(e.to_string().contains("the frame timeout"), "{e}");
    }
    wait_until(
        "the buffers were given back",
        Duration::from_secs(5),
        || server.stats().memory_in_use == 0,
    );
    server.shutdown(Duration::ZERO);
}

#[test]
fn a_frame_past_the_memory_budget_ends_only_its_connection() {
    let mut config = quick();
    config.max_memory = 512 << 10;
    let (server, addr, ended) = start(config);
    // A segment of 1 MiB: a frame the budget cannot hold.
    let big = segment_stream(1, 1 << 20);
    let mut s = TcpStream::connect(addr).unwrap();
    // The peer may see the close before it has written everything.
    let _ = s.write_all(&big);
    let e = recv(&ended);
    let Err(ServeError::Read(read)) = &e.result else {
        panic!("{e}")
    };
    assert!(
        matches!(read.kind(), ReadErrorKind::MemoryBudget { limit, .. } if *limit == 512 << 10),
        "{e}"
    );
    assert_eq!(read.frame(), 2, "{e}");
    assert!(e.to_string().contains("memory budget"), "{e}");
    assert!(closed_by_server(&mut s, Duration::from_secs(5)));

    // The others go on: an honest stream of small frames fits the budget.
    let rows = publish_honestly(addr, 2_000).join().unwrap();
    let honest = recv(&ended);
    assert!(honest.result.is_ok(), "{honest}");
    assert_eq!(honest.tally.rows_applied, rows);
    assert_eq!(server.stats().memory_in_use, 0);
    server.shutdown(Duration::ZERO);
}

#[test]
fn refused_streams_are_closed_with_their_reason() {
    let (server, addr, ended) = start(quick());
    let mut wrong_version = PREAMBLE.to_vec();
    wrong_version[12] = 9;
    let mut zero_length = PREAMBLE.to_vec();
    zero_length.extend_from_slice(&[0, 0, 0, 0]);
    let mut no_handshake = PREAMBLE.to_vec();
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_rows(
        RowsHeader {
            source: 7,
            seq: 0,
            index_state: NO_INDEX_STATE,
        },
        std::iter::empty(),
    )
    .unwrap();
    no_handshake.extend_from_slice(&w.into_inner()[PREAMBLE_BYTES..]);
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("garbage", b"GET / HTTP/1.1\r\n\r\n".to_vec(), "magic"),
        ("another version", wrong_version, "version 9"),
        ("a zero length", zero_length, "frame 1 (stream byte 14)"),
        ("no handshake", no_handshake, "rule 1"),
    ];
    for (what, bytes, reason) in cases {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&bytes).unwrap();
        assert!(
            closed_by_server(&mut s, Duration::from_secs(5)),
            "{what}: still open"
        );
        let e = recv(&ended);
        assert!(e.result.is_err(), "{what}: {e}");
        assert!(e.to_string().contains(reason), "{what}: {e}");
    }
    assert!(server.live().is_empty());
    server.shutdown(Duration::ZERO);
}

#[test]
fn idle_peers_and_unfinished_frames_are_timed_out() {
    let (server, addr, ended) = start(quick());
    // Connected, and nothing sent at all.
    let mut silent = TcpStream::connect(addr).unwrap();
    // The preamble, then nothing: no whole frame for the idle timeout.
    let mut idle = TcpStream::connect(addr).unwrap();
    idle.write_all(PREAMBLE).unwrap();
    // Half a preamble, then nothing: a frame timeout.
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(&PREAMBLE[..5]).unwrap();
    let started = Instant::now();
    for s in [&mut silent, &mut idle, &mut half] {
        assert!(closed_by_server(s, Duration::from_secs(5)));
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    let mut reasons: Vec<String> = (0..3).map(|_| recv(&ended).to_string()).collect();
    reasons.sort();
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.contains("the idle timeout"))
            .count(),
        2,
        "{reasons:?}"
    );
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.contains("the frame timeout (5 byte(s) of it arrived)"))
            .count(),
        1,
        "{reasons:?}"
    );
    // A peer that sends a frame in good time is not timed out, however long
    // it stays.
    let mut slow = TcpStream::connect(addr).unwrap();
    let stream = honest_stream(10);
    slow.write_all(&stream[..PREAMBLE_BYTES]).unwrap();
    let mut at = PREAMBLE_BYTES;
    // 300 ms apart, each part longer than a frame: every frame finishes
    // within 300 ms of starting, and a whole one arrives every 300 ms.
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        let end = (at + 400).min(stream.len());
        slow.write_all(&stream[at..end]).unwrap();
        at = end;
    }
    slow.write_all(&stream[at..]).unwrap();
    drop(slow);
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.tally.rows_applied, 10 * ROWS_PER_FRAME);
    server.shutdown(Duration::ZERO);
}

#[test]
fn connections_past_the_cap_are_closed_at_once() {
    let mut config = quick();
    config.max_connections = 2;
    config.idle_timeout = Duration::from_secs(30);
    let (server, addr, ended) = start(config);
    // Both open a source: a connection that has not is closed to make room
    // instead (tests/collector_admission.rs).
    let open = || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&honest_stream(0)).unwrap();
        s
    };
    let first = open();
    let _second = open();
    wait_until("both opened a source", Duration::from_secs(5), || {
        let live = server.live();
        live.len() == 2 && live.iter().all(|c| c.tally.sources == 1)
    });
    let mut third = TcpStream::connect(addr).unwrap();
    assert!(closed_by_server(&mut third, Duration::from_secs(2)));
    assert_eq!(server.stats().refused, 1);
    // One ends, and the next is served.
    drop(first);
    let e = recv(&ended);
    assert!(e.result.is_ok() && e.tally.sources == 1, "{e}");
    let rows = publish_honestly(addr, 100).join().unwrap();
    assert_eq!(recv(&ended).tally.rows_applied, rows);
    let stats = server.shutdown(Duration::ZERO);
    assert_eq!((stats.accepted, stats.refused, stats.live), (3, 1, 0));
}

#[test]
fn many_idle_connections_are_held_cheaply_beside_an_honest_one() {
    // Client and server sockets both live in this process.
    let limit = soft_fd_limit();
    let peers = 1_000.min(limit.saturating_sub(200) / 2);
    assert!(peers >= 100, "only {limit} file descriptors");
    let mut config = quick();
    config.idle_timeout = Duration::from_secs(30);
    // All from one address, each with a source open.
    config.max_connections_per_peer = peers + 1;
    let (server, addr, ended) = start(config);
    let started = Instant::now();
    let mut idle = Vec::new();
    let opened = honest_stream(0);
    for _ in 0..peers {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&opened).unwrap();
        idle.push(s);
    }
    wait_live(&server, peers as u64, "every idle peer is live");
    let accepted_in = started.elapsed();
    assert!(accepted_in < Duration::from_secs(10), "{accepted_in:?}");
    // A start buffer each, and the 4 KiB of state each is taken to cost.
    assert!(server.stats().memory_in_use <= peers * (4096 + 4096));
    let rows = publish_honestly(addr, 20_000).join().unwrap();
    let honest = recv(&ended);
    assert!(honest.result.is_ok(), "{honest}");
    assert_eq!(honest.tally.rows_applied, rows);
    drop(idle);
    wait_live(&server, 0, "every idle peer ended");
    server.shutdown(Duration::ZERO);
}

fn soft_fd_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse().ok()
        })
        .unwrap_or(1024)
}

#[test]
fn shutdown_applies_what_has_arrived_and_closes_every_connection() {
    let mut config = quick();
    config.idle_timeout = Duration::from_secs(30);
    let (server, addr, ended) = start(config);
    let stream = honest_stream(50);
    let mut s = TcpStream::connect(addr).unwrap();
    // Everything but the last 10 bytes: 49 whole Rows frames and a cut one.
    s.write_all(&stream[..stream.len() - 10]).unwrap();
    wait_until("the bytes arrived", Duration::from_secs(5), || {
        server
            .live()
            .first()
            .is_some_and(|c| c.bytes == (stream.len() - 10) as u64)
    });
    let stats = server.shutdown(Duration::ZERO);
    assert_eq!(stats.live, 0);
    let e = recv(&ended);
    assert_eq!(e.tally.rows_applied, 49 * ROWS_PER_FRAME, "{e}");
    assert!(
        matches!(e.result, Err(ServeError::Shutdown { cut, .. }) if cut > 0),
        "{e}"
    );
    assert!(closed_by_server(&mut s, Duration::from_secs(2)));
}

/// At a stop, the collector closes its sending side first: a publisher
/// that reads sees the end at once and stops, and what it had sent until
/// then, even just after the end was sent, is still read and applied.
#[test]
fn a_stop_tells_the_publisher_first_and_applies_what_it_sent_until_then() {
    let mut config = quick();
    config.idle_timeout = Duration::from_secs(30);
    let (server, addr, ended) = start(config);
    let stream = honest_stream(20);
    let opened = honest_stream(0).len();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&stream[..opened]).unwrap();
    wait_until("the source is open", Duration::from_secs(5), || {
        server.live().first().is_some_and(|c| c.tally.sources == 1)
    });
    let stopping = std::thread::spawn(move || server.shutdown(Duration::ZERO));
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let started = Instant::now();
    assert_eq!(s.read(&mut [0; 8]).unwrap(), 0, "the collector's end, read");
    assert!(started.elapsed() < Duration::from_secs(1));
    // The rest of the stream, sent once the end was seen, is applied.
    s.write_all(&stream[opened..]).unwrap();
    let e = recv(&ended);
    assert_eq!(e.tally.rows_applied, 20 * ROWS_PER_FRAME, "{e}");
    assert!(
        matches!(e.result, Err(ServeError::Shutdown { cut: 0, .. })),
        "{e}"
    );
    assert_eq!(stopping.join().unwrap().live, 0);
}

#[test]
fn a_shutdown_grace_ends_when_the_last_connection_does() {
    // Its one connection sends nothing, and is timed out in half a second.
    let (server, addr, ended) = start(quick());
    let _silent = TcpStream::connect(addr).unwrap();
    wait_until("the connection is live", Duration::from_secs(5), || {
        server.stats().live == 1
    });
    let started = Instant::now();
    let stats = server.shutdown(Duration::from_secs(60));
    // Woken as the connection ended, not at the end of the grace.
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(20), "{waited:?}");
    assert_eq!((stats.live, stats.ended), (0, 1));
    let e = recv(&ended);
    assert!(
        matches!(e.result, Err(ServeError::IdleTimeout { .. })),
        "ended on its own within the grace: {e}"
    );
}

#[cfg(unix)]
#[test]
fn captures_are_new_files_written_as_bytes_arrive_never_through_a_link() {
    let dir = scratch!("collector-captures");
    let record = dir.join("record");
    std::fs::create_dir_all(&record).unwrap();
    // A capture from an earlier run, and a link planted where the next
    // capture would go.
    std::fs::write(record.join("connection-0.dwr"), b"an earlier run").unwrap();
    let outside = dir.join("outside");
    std::fs::write(&outside, b"not yours").unwrap();
    std::os::unix::fs::symlink(&outside, record.join("connection-1.dwr")).unwrap();

    let mut config = quick();
    config.idle_timeout = Duration::from_secs(30);
    config.record = Some(record.clone());
    let (server, addr, ended) = start(config);
    let mut s = TcpStream::connect(addr).unwrap();
    let stream = honest_stream(3);
    let first = &stream[..54];
    s.write_all(first).unwrap();
    // On disk while the connection is still open.
    let capture = record.join("connection-2.dwr");
    wait_until(
        "the capture holds what arrived",
        Duration::from_secs(3),
        || std::fs::read(&capture).is_ok_and(|b| b == first),
    );
    s.write_all(&stream[54..]).unwrap();
    drop(s);
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.info.capture.as_deref(), Some(capture.as_path()));
    assert_eq!(std::fs::read(&capture).unwrap(), stream);
    assert_eq!(
        std::fs::read(record.join("connection-0.dwr")).unwrap(),
        b"an earlier run"
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"not yours");
    server.shutdown(Duration::ZERO);
}

/// A server recording into `dir`, with `change` made to its quick
/// configuration.
fn recording(
    dir: &Path,
    change: impl FnOnce(&mut ServerConfig),
) -> (Server, SocketAddr, mpsc::Receiver<Ended>) {
    let mut config = quick();
    config.idle_timeout = Duration::from_millis(300);
    config.record = Some(dir.to_path_buf());
    change(&mut config);
    start(config)
}

/// The files in `dir`, by name, with their sizes.
fn files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.path(), e.metadata().unwrap().len())
        })
        .collect();
    files.sort();
    files
}

/// Send `bytes` on a connection of its own and close it; how it ended.
fn send(addr: SocketAddr, bytes: &[u8], rx: &mpsc::Receiver<Ended>) -> Ended {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(bytes).unwrap();
    drop(s);
    recv(rx)
}

#[test]
fn a_connection_with_no_whole_frame_leaves_no_capture() {
    let dir = scratch!("captures-none");
    let (server, addr, rx) = recording(&dir, |_| {});
    let honest = honest_stream(2);
    let peers: [&[u8]; 5] = [
        b"",                           // connect and close
        &PREAMBLE[..5],                // part of a preamble
        PREAMBLE,                      // a preamble and nothing after
        &honest[..PREAMBLE.len() + 9], // a frame started, not finished
        b"GET / HTTP/1.1\r\n\r\n",     // not a dendro stream
    ];
    for _ in 0..8 {
        for bytes in peers {
            let e = send(addr, bytes, &rx);
            assert_eq!(e.info.capture, None, "{e}");
        }
    }
    // A stalled one too: it is ended by its timeout, with no file.
    let mut stalled = TcpStream::connect(addr).unwrap();
    stalled.write_all(PREAMBLE).unwrap();
    let e = recv(&rx);
    assert!(e.result.is_err(), "{e}");
    assert_eq!(files(&dir), vec![], "41 connections, no whole frame");

    // An honest one gets its capture, the whole stream.
    let e = send(addr, &honest, &rx);
    assert!(e.result.is_ok(), "{e}");
    let capture = e.info.capture.clone().expect("a capture");
    assert_eq!(std::fs::read(&capture).unwrap(), honest);
    assert_eq!(files(&dir).len(), 1);
    server.shutdown(Duration::ZERO);
}

#[test]
fn a_capture_stops_at_its_cap_and_its_connection_is_served_on() {
    let dir = scratch!("captures-per-connection");
    let (server, addr, rx) = recording(&dir, |config| config.record_max_per_connection = 1000);
    let stream = honest_stream(50);
    assert!(stream.len() > 2000);
    for _ in 0..2 {
        let e = send(addr, &stream, &rx);
        assert!(e.result.is_ok(), "{e}");
        assert_eq!(e.tally.rows_applied, 50 * ROWS_PER_FRAME, "{e}");
        let capture = e.info.capture.clone().expect("a capture");
        assert_eq!(std::fs::read(&capture).unwrap(), &stream[..1000]);
    }
    server.shutdown(Duration::ZERO);
}

#[test]
fn the_capture_directory_stays_within_its_cap_its_earlier_files_counted() {
    let dir = scratch!("captures-total");
    std::fs::write(dir.join("from-before"), [0; 1000]).unwrap();
    let stream = honest_stream(50);
    let len = stream.len() as u64;
    let max = 1000 + len + len / 2;
    let (server, addr, rx) = recording(&dir, |config| config.record_max = max);
    let mut captures = Vec::new();
    for _ in 0..4 {
        let e = send(addr, &stream, &rx);
        assert!(e.result.is_ok(), "{e}");
        assert_eq!(e.tally.rows_applied, 50 * ROWS_PER_FRAME, "{e}");
        captures.push(e.info.capture.clone());
    }
    // The first whole, the second cut at the cap, no file for the rest.
    let first = captures[0].clone().expect("the first is captured");
    let second = captures[1].clone().expect("the second is captured in part");
    assert_eq!(std::fs::read(first).unwrap(), stream);
    assert_eq!(
        std::fs::read(second).unwrap(),
        &stream[..(len / 2) as usize]
    );
    assert_eq!(captures[2..], [None, None]);
    let sizes: Vec<u64> = files(&dir).into_iter().map(|(_, size)| size).collect();
    assert_eq!(sizes.len(), 3, "{sizes:?}");
    assert_eq!(sizes.iter().sum::<u64>(), max);
    server.shutdown(Duration::ZERO);
}
