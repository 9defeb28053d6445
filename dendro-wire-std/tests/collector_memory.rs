//! A collector's memory is shared fairly: a large frame's buffer is given
//! back as soon as it is applied, peers that hoard what they can leave room
//! for everyone else's frames, and at shutdown what a socket already holds
//! is read and applied. Each attack small (a budget of a few MiB).

#![cfg(feature = "tokio")]

#[path = "support/collector.rs"]
mod support;
use support::{recv, start, wait_until, KEEPALIVE};

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use dendro_wire_std::receive::{ServeError, ServerConfig};
use dendro_wire_std::MemoryBudget;
use dendro_wire_test_support::streams::{honest_stream, segment_stream, ROWS_PER_FRAME};

/// What a buffer keeps to read ahead once a large frame is applied.
const READ_AHEAD: usize = 64 << 10;

/// A peer that sends `stream`, then a keepalive every 50 ms until told.
fn keepalive_after(
    addr: SocketAddr,
    stream: Vec<u8>,
) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (stop, stopped) = mpsc::channel();
    let peer = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&stream).unwrap();
        while stopped.recv_timeout(Duration::from_millis(50)).is_err() {
            if s.write_all(&KEEPALIVE).is_err() {
                return;
            }
        }
    });
    (stop, peer)
}

fn config(max_memory: usize) -> ServerConfig {
    let mut config = ServerConfig::default();
    config.max_memory = max_memory;
    config.idle_timeout = Duration::from_secs(30);
    config.frame_timeout = Duration::from_secs(30);
    config
}

#[test]
fn a_large_frame_is_given_back_as_soon_as_it_is_applied() {
    let (server, addr, ended) = start(config(16 << 20));
    let (stop, peer) = keepalive_after(addr, segment_stream(1, 4 << 20));
    wait_until("the segment was applied", Duration::from_secs(20), || {
        server.live().first().is_some_and(|c| c.tally.segments == 1)
    });
    // Kept alive, it holds what reading ahead needs, and no more.
    for _ in 0..5 {
        let held = server.stats().memory_in_use;
        assert!(held <= READ_AHEAD + (4 << 10), "{held} bytes held");
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.send(()).unwrap();
    peer.join().unwrap();
    assert!(recv(&ended).result.is_ok());
    server.shutdown(Duration::ZERO);
}

#[test]
fn four_hoarders_cannot_lock_out_an_honest_publisher() {
    const BUDGET: usize = 4 << 20;
    let budget = MemoryBudget::new(BUDGET);
    let (server, addr, ended) = start(config(BUDGET));
    // Two send a large frame whole, then keepalives.
    let large = budget.most_per_connection() - READ_AHEAD - (64 << 10);
    let keepalives: Vec<_> = (0..2)
        .map(|_| keepalive_after(addr, segment_stream(1, large)))
        .collect();
    wait_until("their frames were applied", Duration::from_secs(20), || {
        let live = server.live();
        live.len() == 2 && live.iter().all(|c| c.tally.segments == 1)
    });
    // Two send all but the end of one, and stall there, holding what
    // their share lets them.
    let whole = segment_stream(1, large);
    let stalled: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&whole[..whole.len() - 1_000]).unwrap();
            s
        })
        .collect();
    // Their buffers, and 4 KiB of state each.
    let held_by_four = 2 * budget.most_per_connection() + 2 * READ_AHEAD + 4 * (4 << 10);
    wait_until(
        "the stalled hold their frames",
        Duration::from_secs(20),
        || {
            let live = server.live();
            live.len() == 4 && server.stats().memory_in_use > 2 * large
        },
    );
    assert!(server.stats().memory_in_use <= held_by_four);

    // An honest publisher beside them lands every row and every segment of
    // 11 KiB.
    let mut rows = TcpStream::connect(addr).unwrap();
    rows.write_all(&honest_stream(2_000)).unwrap();
    drop(rows);
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.tally.rows_applied, 2_000 * ROWS_PER_FRAME);
    let mut segs = TcpStream::connect(addr).unwrap();
    segs.write_all(&segment_stream(200, 11 << 10)).unwrap();
    drop(segs);
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.tally.segments, 200);
    assert_eq!(server.stats().live, 4);

    // A third large frame would take the large frames' share past its
    // bound: that connection ends, and says why.
    let mut over = TcpStream::connect(addr).unwrap();
    let _ = over.write_all(&whole);
    let e = recv(&ended);
    assert!(
        e.to_string()
            .contains("an eighth is kept for new connections"),
        "{e}"
    );
    for (stop, peer) in keepalives {
        stop.send(()).unwrap();
        peer.join().unwrap();
    }
    drop(stalled);
    server.shutdown(Duration::ZERO);
}

#[test]
fn at_shutdown_what_a_socket_holds_is_read_and_applied() {
    let (server, addr, ended) = start(config(256 << 20));
    const FRAMES: u64 = 40_000;
    let stream = honest_stream(FRAMES);
    let mut s = TcpStream::connect(addr).unwrap();
    // Written whole: what the collector has not read yet waits in the
    // sockets' buffers on both sides.
    s.write_all(&stream).unwrap();
    let stats = server.shutdown(Duration::ZERO);
    assert_eq!(stats.live, 0);
    let e = recv(&ended);
    assert!(
        matches!(e.result, Err(ServeError::Shutdown { cut: 0, .. })),
        "{e}"
    );
    assert_eq!(e.bytes, stream.len() as u64, "{e}");
    assert_eq!(e.tally.rows_applied, FRAMES * ROWS_PER_FRAME, "{e}");
}

#[test]
fn at_shutdown_bytes_still_on_their_way_in_are_applied() {
    let (server, addr, ended) = start(config(256 << 20));
    const FRAMES: u64 = 2_000;
    let stream = honest_stream(FRAMES);
    let len = stream.len() as u64;
    // A sender writing in pieces, a few milliseconds apart, over a third of
    // a second; the collector shuts down while it is at it.
    let sender = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        for piece in stream.chunks(stream.len() / 100 + 1) {
            s.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        s
    });
    wait_until("the first bytes arrived", Duration::from_secs(20), || {
        server.live().first().is_some_and(|c| c.bytes > 0)
    });
    server.shutdown(Duration::ZERO);
    let e = recv(&ended);
    assert!(
        matches!(e.result, Err(ServeError::Shutdown { cut: 0, .. })),
        "{e}"
    );
    assert_eq!(e.bytes, len, "{e}");
    assert_eq!(e.tally.rows_applied, FRAMES * ROWS_PER_FRAME, "{e}");
    drop(sender.join().unwrap());
}

/// A TLS fleet reconnecting at once, at the defaults' memory a connection
/// (`--max-memory` over `--max-connections`: 256 MiB for 10,000, here scaled
/// to the fleet): every agent is admitted, none refused at accept, and each
/// is charged what it holds with its source open, not a worst case.
#[cfg(feature = "tls")]
#[test]
fn a_tls_fleet_reconnecting_at_once_fits_the_defaults() {
    use std::sync::{Arc, Barrier};

    use dendro_wire_std::tls;
    use dendro_wire_test_support::certs::Ca;

    const FLEET: usize = 3_200;
    const ADDRESSES: usize = 16;
    let defaults = ServerConfig::default();
    let mut config = ServerConfig::default();
    config.max_connections = FLEET;
    config.max_memory = defaults.max_memory * FLEET / defaults.max_connections;
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    config.tls = Some(servers.server(tls::server_config, &clients));
    let idle = config.idle_connection_cost();
    assert_eq!(idle, 17 << 10);
    let (server, addr, _ended) = start(config);
    let agent = clients.client(tls::client_config, &servers, "agent-1", false);
    let opening = honest_stream(0);
    let go = Arc::new(Barrier::new(ADDRESSES));
    // Each address's agents connect one after another, all addresses at
    // once, and keep their connections open.
    let fleets: Vec<_> = (0..ADDRESSES)
        .map(|i| {
            let (config, opening, go) = (agent.config().clone(), opening.clone(), go.clone());
            std::thread::spawn(move || {
                go.wait();
                (0..FLEET / ADDRESSES)
                    .map(|_| {
                        let tcp = support::connect_from([127, 0, 1, 1 + i as u8], addr);
                        let name = "localhost".try_into().unwrap();
                        let tls = tls::rustls::ClientConnection::new(config.clone(), name).unwrap();
                        let mut s = tls::rustls::StreamOwned::new(tls, tcp);
                        // One refused hears its connection closed.
                        s.write_all(&opening).and_then(|()| s.flush()).map(|()| s)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let fleet: Vec<_> = fleets.into_iter().flat_map(|f| f.join().unwrap()).collect();
    wait_until(
        "every agent was accepted or refused",
        Duration::from_secs(30),
        || {
            let stats = server.stats();
            stats.accepted + stats.refused == FLEET as u64
        },
    );
    let stats = server.stats();
    assert_eq!((stats.refused, stats.evicted), (0, 0), "{stats:?}");
    assert!(fleet.iter().all(Result::is_ok));
    wait_until(
        "every agent opened its source",
        Duration::from_secs(30),
        || server.live().iter().filter(|c| c.tally.frames == 1).count() == FLEET,
    );
    let stats = server.stats();
    // Each is charged its idle cost, and a little for the records its
    // last read made whole.
    let each = stats.memory_in_use / FLEET;
    assert!(
        (idle..idle + (1 << 10)).contains(&each),
        "{each} bytes each"
    );
    drop(fleet);
    wait_until("the fleet is gone", Duration::from_secs(20), || {
        server.stats().live == 0
    });
    assert_eq!(server.stats().memory_in_use, 0, "all given back");
}

/// A TLS peer that stalls inside a record is charged the record it has
/// sent as rustls holds it, and given it back when it goes.
#[cfg(feature = "tls")]
#[test]
fn a_tls_record_stalled_midway_is_charged_as_it_is_held() {
    let (server, ended, mut tls, mut tcp) = tls_agent_open(16 << 20);
    let idle = server.stats().memory_in_use;
    // A frame of an unknown kind in one whole record, all but its last byte.
    let record = unknown_frame_record(&mut tls);
    tcp.write_all(&record[..record.len() - 1]).unwrap();
    // What rustls holds of it, past the 4 KiB of room charged at accept.
    let held = record.len() - 1 - 4096;
    wait_until(
        "the partial record is charged",
        Duration::from_secs(10),
        || server.stats().memory_in_use >= idle + held,
    );
    std::thread::sleep(Duration::from_millis(100));
    let charged = server.stats().memory_in_use - idle;
    // And at most room for its next read.
    assert!(charged <= held + 4096, "{charged}");
    // The last byte: the frame is applied.
    tcp.write_all(&record[record.len() - 1..]).unwrap();
    wait_until("the frame is read", Duration::from_secs(10), || {
        server.live().first().is_some_and(|c| c.tally.frames == 2)
    });
    drop((tls, tcp));
    recv(&ended);
    assert_eq!(server.stats().memory_in_use, 0, "all given back");
}

/// A TLS peer whose records the budget has no room for is ended, the
/// others' room kept, and what it held given back.
#[cfg(feature = "tls")]
#[test]
fn a_tls_record_the_budget_has_no_room_for_ends_its_connection() {
    // Room for a connection idle, not for a whole record more.
    let (server, ended, mut tls, mut tcp) = tls_agent_open(24 << 10);
    let record = unknown_frame_record(&mut tls);
    tcp.write_all(&record[..record.len() - 1]).unwrap();
    let e = recv(&ended);
    assert!(e.to_string().contains("memory budget"), "{e}");
    assert_eq!(server.stats().memory_in_use, 0, "all given back");
}

/// A TLS server with `budget` bytes, and an agent connected to it over
/// TLS whose source is open: the server, its end, and the agent's TLS
/// session and socket.
#[cfg(feature = "tls")]
fn tls_agent_open(
    budget: usize,
) -> (
    dendro_wire_std::receive::Server,
    mpsc::Receiver<dendro_wire_std::receive::Ended>,
    dendro_wire_std::tls::rustls::ClientConnection,
    TcpStream,
) {
    use dendro_wire_std::tls;
    use dendro_wire_test_support::certs::Ca;

    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let mut config = config(budget);
    config.tls = Some(servers.server(tls::server_config, &clients));
    let (server, addr, ended) = start(config);
    let agent = clients.client(tls::client_config, &servers, "agent-1", false);
    let mut tcp = TcpStream::connect(addr).unwrap();
    let name = "localhost".try_into().unwrap();
    let mut tls = tls::rustls::ClientConnection::new(agent.config().clone(), name).unwrap();
    tls.writer().write_all(&honest_stream(0)).unwrap();
    while tls.is_handshaking() || tls.wants_write() {
        tls.complete_io(&mut tcp).unwrap();
    }
    wait_until("the source is open", Duration::from_secs(10), || {
        server.live().first().is_some_and(|c| c.tally.frames == 1)
    });
    (server, ended, tls, tcp)
}

/// A frame of an unknown kind, 16,000 bytes, sealed by `tls` in one whole
/// record: the record's bytes.
#[cfg(feature = "tls")]
fn unknown_frame_record(tls: &mut dendro_wire_std::tls::rustls::ClientConnection) -> Vec<u8> {
    let mut frame = (16_000u32 - 4).to_le_bytes().to_vec();
    frame.push(0xee);
    frame.resize(16_000, 0);
    tls.writer().write_all(&frame).unwrap();
    let mut record = Vec::new();
    tls.write_tls(&mut record).unwrap();
    record
}
