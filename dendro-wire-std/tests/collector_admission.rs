//! A collector's admission before trust: connections that never open a
//! source (kept alive with frames of an unknown kind, or stalled inside a
//! TLS ClientHello) are closed at the handshake timeout and make room for
//! new ones; one address holds only its share. Each attack small, bounded in
//! count and time.

#![cfg(feature = "tokio")]

#[path = "support/collector.rs"]
mod support;
use support::{connect_from, recv, start, wait_live, wait_until, KEEPALIVE, PREAMBLE};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use dendro_wire_std::receive::{Ended, ServeError, Server, ServerConfig};
use dendro_wire_test_support::streams::{honest_stream, ROWS_PER_FRAME};

/// A peer that sends the preamble, then a keepalive every 50 ms until the
/// collector closes it (or two seconds pass): how long it was kept.
fn keepalive_peer(addr: SocketAddr) -> std::thread::JoinHandle<Duration> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(PREAMBLE).unwrap();
    std::thread::spawn(move || {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            if s.write_all(&KEEPALIVE).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        started.elapsed()
    })
}

/// `n` peers that send the preamble and nothing more (within their grace,
/// they have sent nothing whole), once `server` counts them live.
fn silent_peers(server: &Server, addr: SocketAddr, n: u64) -> Vec<TcpStream> {
    let silent = (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(PREAMBLE).unwrap();
            s
        })
        .collect();
    wait_live(server, n, "the silent are live");
    silent
}

/// Send an honest stream on a new connection and close it; its rows.
fn publish(addr: SocketAddr, frames: u64) -> u64 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&honest_stream(frames)).unwrap();
    frames * ROWS_PER_FRAME
}

/// Whether a new connection to `addr` is closed at once: its first read
/// (within five seconds) ends the stream or fails.
fn closed_at_once(addr: SocketAddr) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.read(&mut [0; 8]).unwrap_or(0) == 0
}

/// How long a new connection is safe from being closed to make room, in
/// these tests: short, so that they wait little for it to pass.
const GRACE: Duration = Duration::from_millis(300);

fn config() -> ServerConfig {
    let mut config = ServerConfig::default();
    config.idle_timeout = Duration::from_secs(30);
    config.frame_timeout = Duration::from_secs(30);
    config.eviction_grace = GRACE;
    config
}

/// A server whose caps `caps` sets, on which a new connection's grace
/// (30 s) outlasts the test, and `silent` silent peers on it, within that
/// grace: the server, its address, its ended connections and the peers.
fn silent_within_the_grace(
    caps: impl FnOnce(&mut ServerConfig),
    silent: u64,
) -> (Server, SocketAddr, Receiver<Ended>, Vec<TcpStream>) {
    let mut config = config();
    caps(&mut config);
    config.eviction_grace = Duration::from_secs(30);
    let (server, addr, ended) = start(config);
    let silent = silent_peers(&server, addr, silent);
    (server, addr, ended, silent)
}

/// The next two connections to end, in the order they were accepted; the
/// older one was closed to make room.
#[track_caller]
fn the_older_evicted(ended: &Receiver<Ended>) -> Vec<Ended> {
    let mut ends: Vec<Ended> = (0..2).map(|_| recv(ended)).collect();
    ends.sort_by_key(|e| e.info.id);
    assert!(
        matches!(ends[0].result, Err(ServeError::Evicted)),
        "{}",
        ends[0]
    );
    ends
}

#[test]
fn a_connection_that_opens_no_source_is_closed_at_the_handshake_timeout() {
    let mut config = config();
    config.handshake_timeout = Duration::from_millis(300);
    let (server, addr, ended) = start(config);
    let started = Instant::now();
    let junk = keepalive_peer(addr);
    let e = recv(&ended);
    let took = started.elapsed();
    assert!(
        matches!(e.result, Err(ServeError::HandshakeTimeout { after }) if after == Duration::from_millis(300)),
        "{e}"
    );
    assert!(e.to_string().contains("the handshake timeout"), "{e}");
    assert!(e.tally.frames > 0, "kept alive with frames: {e}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    junk.join().unwrap();

    // One that opens a source in time is not held to it.
    let mut s = TcpStream::connect(addr).unwrap();
    let stream = honest_stream(10);
    let opened = honest_stream(0).len();
    s.write_all(&stream[..opened]).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    s.write_all(&stream[opened..]).unwrap();
    drop(s);
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.tally.rows_applied, 10 * ROWS_PER_FRAME);
    server.shutdown(Duration::ZERO);
}

#[test]
fn the_oldest_connection_yet_to_open_a_source_makes_room_for_a_new_one() {
    // Connections that never open a source fill first their own cap, then
    // the connection cap; each time, an honest publisher still gets in.
    for (max_connections, max_unopened) in [(100, 3), (3, 100)] {
        let mut config = config();
        config.max_connections = max_connections;
        config.max_unopened_connections = max_unopened;
        let (server, addr, ended) = start(config);
        let junk: Vec<_> = (0..3).map(|_| keepalive_peer(addr)).collect();
        wait_live(&server, 3, "the junk is live");
        // Each has had its grace to open a source, and has not.
        std::thread::sleep(GRACE);
        let oldest = server.live()[0].id;
        let rows = publish(addr, 100);
        let ends = the_older_evicted(&ended);
        assert_eq!(ends[0].info.id, oldest);
        assert!(ends[0]
            .to_string()
            .contains("closed to admit a newer connection"));
        assert!(ends[1].result.is_ok(), "{}", ends[1]);
        assert_eq!(ends[1].tally.rows_applied, rows);
        let stats = server.stats();
        assert_eq!((stats.evicted, stats.refused), (1, 0));
        // The others were not touched.
        assert_eq!(stats.live, 2);
        server.shutdown(Duration::ZERO);
        for peer in junk {
            peer.join().unwrap();
        }
    }
}

#[test]
fn one_address_holds_only_its_share() {
    let mut config = config();
    config.max_connections_per_peer = 2;
    let (server, addr, ended) = start(config);
    let opened = honest_stream(0);
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&opened).unwrap();
        held.push(s);
    }
    wait_live(&server, 2, "both are live");
    // A third from the same address is closed at once.
    assert!(closed_at_once(addr));
    assert_eq!(server.stats().refused, 1);
    // Another address is served.
    let mut other = connect_from([127, 0, 0, 2], addr);
    other.write_all(&honest_stream(10)).unwrap();
    drop(other);
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert!(e.info.peer.to_string().starts_with("127.0.0.2:"), "{e:?}");
    assert_eq!(e.tally.rows_applied, 10 * ROWS_PER_FRAME);
    // And when one of the first two ends, its address may connect again.
    drop(held.pop());
    assert!(recv(&ended).result.is_ok());
    let rows = publish(addr, 10);
    assert_eq!(recv(&ended).tally.rows_applied, rows);
    // One of its share that has not opened a source makes room for a new
    // one from its address.
    let junk = keepalive_peer(addr);
    wait_live(&server, 2, "the junk is live");
    std::thread::sleep(GRACE);
    let rows = publish(addr, 10);
    let ends = the_older_evicted(&ended);
    assert_eq!(ends[1].tally.rows_applied, rows, "{}", ends[1]);
    junk.join().unwrap();
    let stats = server.shutdown(Duration::ZERO);
    assert_eq!((stats.refused, stats.evicted), (1, 1));
}

#[cfg(feature = "tls")]
#[test]
fn stalled_tls_client_hellos_are_closed_at_the_handshake_timeout_and_an_agent_gets_in() {
    use dendro_wire_std::tls;
    use dendro_wire_test_support::certs::Ca;

    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let mut config = config();
    config.tls = Some(servers.server(tls::server_config, &clients));
    config.handshake_timeout = Duration::from_millis(800);
    config.max_unopened_connections = 20;
    let (server, addr, ended) = start(config);
    // Twenty sockets send the first bytes of a ClientHello and stall: the
    // cap of connections yet to open a source.
    let stalled: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03])
                .unwrap();
            s
        })
        .collect();
    wait_live(&server, 20, "the stalled are live");
    // Each is charged what it holds: its state, rustls's and the room of
    // its records buffer (13 KiB), and the 10 bytes it sent.
    let each = server.stats().memory_in_use / 20;
    assert!((13 << 10..14 << 10).contains(&each), "{each}");
    std::thread::sleep(GRACE);
    // An agent with a certificate gets in at once, in place of the oldest.
    let agent = clients.client(tls::client_config, &servers, "agent-1", false);
    let mut s = agent.connect(addr, "localhost").unwrap();
    s.write_all(&honest_stream(10)).unwrap();
    drop(s);
    let mut evicted = 0;
    let mut timed_out = 0;
    let started = Instant::now();
    for _ in 0..21 {
        let e = recv(&ended);
        match e.result {
            Ok(()) => assert_eq!(e.tally.rows_applied, 10 * ROWS_PER_FRAME),
            Err(ServeError::Evicted) => evicted += 1,
            Err(ServeError::HandshakeTimeout { .. }) => timed_out += 1,
            Err(_) => panic!("{e}"),
        }
    }
    assert_eq!((evicted, timed_out), (1, 19));
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(stalled);
    assert_eq!(server.shutdown(Duration::ZERO).live, 0);
}

/// Connections yet to open a source, within their grace, and a newer one:
/// none is closed to make room; the newer one is admitted past the cap of
/// such connections, and each opens its source once read.
#[test]
fn a_fleet_reconnecting_at_once_is_not_closed_to_make_room() {
    const FLEET: usize = 300;
    let mut config = config();
    config.max_unopened_connections = 20;
    config.eviction_grace = Duration::from_secs(10);
    let (server, addr, ended) = start(config);
    // Every agent connects and sends its handshake at once, from an
    // address of its own, as a fleet does after a collector restarts.
    let stream = honest_stream(5);
    let agents: Vec<TcpStream> = (0..FLEET)
        .map(|i| {
            let mut s = connect_from([127, 3, (i >> 8) as u8 + 1, i as u8], addr);
            s.write_all(&stream).unwrap();
            s
        })
        .collect();
    drop(agents);
    for _ in 0..FLEET {
        let e = recv(&ended);
        assert!(e.result.is_ok(), "{e}");
        assert_eq!(e.tally.rows_applied, 5 * ROWS_PER_FRAME);
    }
    let stats = server.shutdown(Duration::ZERO);
    assert_eq!((stats.evicted, stats.refused), (0, 0));
}

/// Past the cap on every connection, with none yet to open a source past
/// its grace, a new connection is closed at once: the grace never lets the
/// table grow past the cap.
#[test]
fn past_every_cap_within_the_grace_a_new_connection_is_refused() {
    // Each has sent its preamble and nothing whole: within its grace.
    let (server, addr, _ended, silent) = silent_within_the_grace(|c| c.max_connections = 3, 3);
    assert!(closed_at_once(addr));
    let stats = server.stats();
    assert_eq!((stats.refused, stats.evicted, stats.live), (1, 0, 3));
    server.shutdown(Duration::ZERO);
    drop(silent);
}

/// What a connection has sent decides before how long it has had: one
/// that sent a whole frame and opened no source with it (an honest
/// publisher's first frame is its Handshake) makes room at once, however
/// young; one that has sent nothing whole keeps its grace.
#[test]
fn a_connection_whose_first_frame_opened_nothing_makes_room_within_its_grace() {
    // Two silent connections first (oldest), then a keepalive peer.
    let (server, addr, ended, silent) =
        silent_within_the_grace(|c| c.max_unopened_connections = 3, 2);
    let junk = keepalive_peer(addr);
    wait_until(
        "the keepalive peer has sent a frame",
        Duration::from_secs(20),
        || server.live().iter().any(|c| c.tally.frames > 0),
    );
    let rows = publish(addr, 10);
    let ends = the_older_evicted(&ended);
    assert_eq!(
        ends[0].info.id, 2,
        "the keepalive peer, not the older silent ones"
    );
    assert!(ends[1].result.is_ok(), "{}", ends[1]);
    assert_eq!(ends[1].tally.rows_applied, rows);
    let stats = server.shutdown(Duration::ZERO);
    assert_eq!((stats.evicted, stats.refused), (1, 0));
    drop(silent);
    junk.join().unwrap();
}
