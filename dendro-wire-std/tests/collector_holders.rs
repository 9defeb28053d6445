//! A full table held by connections that speak the protocol correctly,
//! and an honest agent that must still get in: handshakes kept alive with
//! empty Rows frames; half-handshakes closed just before their grace, from
//! many addresses at a high rate; silent handshakes from the agent's own
//! address; and a frame trickled a byte at a time. The red team's numbers
//! scaled down (a table of 500 where it had 10,000), the ratios kept; each
//! attacker on 127/8 addresses of its own.

#![cfg(feature = "tokio")]

#[path = "support/collector.rs"]
mod support;
use support::{connect_from, start, wait_until};

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dendro_wire_std::receive::{Backlog, Ended, Peer, ServeError, Server, ServerConfig};
use dendro_wire_std::{Rows, Sink, SinkError};
use dendro_wire_test_support::peers::Attack;
use dendro_wire_test_support::streams::{honest_stream, rows_frame, ROWS_PER_FRAME};

/// An honest agent from `from`: its Handshake, then a Rows frame every
/// 100 ms for `frames` intervals, on one connection it then closes. The
/// rows it sent, and where from.
fn agent(to: SocketAddr, from: [u8; 4], frames: u64) -> (u64, SocketAddr) {
    let mut s = connect_from(from, to);
    let local = s.local_addr().unwrap();
    let _ = s.write_all(&honest_stream(0));
    for seq in 0..frames {
        std::thread::sleep(Duration::from_millis(100));
        let _ = s.write_all(&rows_frame(seq, ROWS_PER_FRAME));
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.read(&mut [0; 8]);
    (frames * ROWS_PER_FRAME, local)
}

/// The ends, until the one of the connection from `from`: its rows
/// applied; none if no end of it is reported within five seconds (it was
/// closed at accept).
fn rows_from(ended: &Receiver<Ended>, from: SocketAddr) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(e) = ended.recv_timeout(left) else {
            return 0;
        };
        if matches!(e.info.peer, Peer::Tcp(peer) if peer == from) {
            return e.tally.rows_applied;
        }
    }
}

/// The red team's 10,000 scaled to 500; the rest of its ratios kept.
fn config() -> ServerConfig {
    let mut config = ServerConfig::default();
    config.max_connections = 500;
    config.max_unopened_connections = 50;
    config.max_connections_per_peer = 26;
    config.idle_timeout = Duration::from_secs(6);
    config
}

/// The red team's first attack: valid Handshakes kept alive with an empty
/// Rows frame every half idle timeout, 25 from each of 20 addresses, fill
/// the table; an honest agent from a fresh address takes the place of the
/// stalest and delivers its rows.
#[test]
fn keepalive_holders_fill_the_table_and_an_honest_agent_gets_in() {
    let (server, addr, ended) = start(config());
    let mut attack = Attack::new();
    for i in 0..20 {
        attack.hold(addr, [127, 20, 0, i + 1], 25, Some(Duration::from_secs(3)));
    }
    wait_until(
        "the holders fill the table",
        Duration::from_secs(20),
        || server.live().iter().filter(|c| c.tally.sources > 0).count() >= 500,
    );
    // Past the grace, each holder has delivered nothing within it.
    std::thread::sleep(Duration::from_millis(2500));
    let (sent, from) = agent(addr, [127, 21, 0, 1], 30);
    let rows = rows_from(&ended, from);
    assert!(rows * 100 >= sent * 95, "{rows} of {sent} rows got in");
    drop(attack);
    let stats = server.shutdown(Duration::ZERO);
    assert!(stats.evicted > 0, "{stats:?}");
}

/// The red team's second: half-Handshakes from 64 addresses, 2,000 a
/// second (its 40,000 scaled as the table is), each closed just before its
/// grace, keep the table full of connections within it; an honest agent
/// from a fresh address gets in, time after time.
#[test]
fn half_handshakes_closed_before_the_grace_do_not_keep_an_agent_out() {
    let (server, addr, ended) = start(config());
    let mut attack = Attack::new();
    let from: Vec<[u8; 4]> = (0..64).map(|i| [127, 30, 0, i + 1]).collect();
    for part in from.chunks(16) {
        attack.half_handshakes(addr, part.to_vec(), 500, Duration::from_millis(1900));
    }
    wait_until("the flood fills the table", Duration::from_secs(20), || {
        server.stats().live >= 500
    });
    let mut got_in = 0;
    for i in 0..8 {
        let (sent, from) = agent(addr, [127, 31, 0, i + 1], 10);
        got_in += u32::from(rows_from(&ended, from) * 100 >= sent * 95);
    }
    let refused = server.stats().refused;
    drop(attack);
    server.shutdown(Duration::ZERO);
    assert!(refused > 0, "the flood was past the table");
    assert!(got_in >= 7, "the agent got in {got_in} of 8 times");
}

/// The red team's third: 256 silent Handshakes from the agent's own
/// address (a NAT'd site), its share; the agent still gets in, in place of
/// one of them.
#[test]
fn silent_handshakes_from_the_agents_own_address_do_not_keep_it_out() {
    let mut config = config();
    config.max_connections_per_peer = 256;
    let (server, addr, ended) = start(config);
    let site = [127, 40, 0, 1];
    let mut attack = Attack::new();
    attack.hold(addr, site, 256, None);
    wait_until(
        "the silent fill the address's share",
        Duration::from_secs(20),
        || server.live().iter().filter(|c| c.tally.sources > 0).count() >= 256,
    );
    std::thread::sleep(Duration::from_millis(2500));
    let (sent, from) = agent(addr, site, 30);
    let rows = rows_from(&ended, from);
    assert!(rows * 100 >= sent * 95, "{rows} of {sent} rows got in");
    drop(attack);
    server.shutdown(Duration::ZERO);
}

/// A frame trickled one byte every 1.5 s, after a whole Handshake, would
/// finish within both timeouts; it is ended once past the allowance a
/// frame has, its bytes far under the rate an agent's arrive at.
#[test]
fn a_frame_trickled_a_byte_at_a_time_is_ended() {
    let mut config = config();
    config.idle_timeout = Duration::from_secs(60);
    config.frame_timeout = Duration::from_secs(60);
    let (server, addr, ended) = start(config);
    let mut s = connect_from([127, 50, 0, 1], addr);
    s.write_all(&honest_stream(0)).unwrap();
    let frame = rows_frame(0, 1);
    let started = Instant::now();
    for byte in frame.iter().cycle() {
        if s.write_all(&[*byte]).is_err() || started.elapsed() > Duration::from_secs(18) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1500));
    }
    let e = support::recv(&ended);
    let took = started.elapsed();
    assert!(
        matches!(e.result, Err(ServeError::FrameTimeout { .. })),
        "{e}"
    );
    assert!(took < Duration::from_secs(14), "{took:?}");
    server.shutdown(Duration::ZERO);
}

/// A sink whose backlog the test fills and empties.
struct Behind(Arc<Backlog>);

impl Sink for Behind {
    fn rows(&mut self, _source: u32, _rows: &Rows<'_>) -> Result<(), SinkError> {
        Ok(())
    }
    fn backlog(&self) -> Option<&Backlog> {
        Some(&self.0)
    }
}

/// While the sink is behind, no connection delivers, and an agent whose
/// frame waits for it is not judged by that: on a full table a newcomer
/// takes the place of a silent Handshake, not of the waiting agent, older
/// as it is, which delivers its rows once the sink has room.
#[test]
fn an_agent_waiting_for_the_sink_is_not_closed_as_stale() {
    let backlog = Arc::new(Backlog::new(4));
    backlog.add(4);
    let (tx, ended) = std::sync::mpsc::channel();
    let mut config = config();
    config.max_connections = 2;
    config.eviction_grace = Duration::from_millis(300);
    let sink = backlog.clone();
    let server = Server::start(
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        config,
        move |_| Behind(sink.clone()),
        move |e, _| {
            let _ = tx.send(e);
        },
    )
    .unwrap();
    // However the test ends, the sink catches up before the server is
    // dropped, so that it can stop.
    struct Drains(Arc<Backlog>);
    impl Drop for Drains {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    let _drains = Drains(backlog.clone());
    let addr = server.local_addr().unwrap();
    let mut waiting = connect_from([127, 60, 0, 1], addr);
    waiting.write_all(&honest_stream(5)).unwrap();
    wait_until(
        "the agent opened its source",
        Duration::from_secs(20),
        || server.live().iter().any(|c| c.tally.sources > 0),
    );
    let mut silent = connect_from([127, 60, 0, 2], addr);
    silent.write_all(&honest_stream(0)).unwrap();
    wait_until("both opened", Duration::from_secs(20), || {
        server.live().iter().filter(|c| c.tally.sources > 0).count() == 2
    });
    std::thread::sleep(Duration::from_millis(600));
    let newcomer = connect_from([127, 60, 0, 3], addr);
    let e = support::recv(&ended);
    assert!(matches!(e.result, Err(ServeError::Evicted)), "{e}");
    assert!(
        matches!(e.info.peer, Peer::Tcp(p) if p == silent.local_addr().unwrap()),
        "{e}"
    );
    backlog.remove(4);
    waiting.shutdown(std::net::Shutdown::Write).unwrap();
    let e = support::recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.tally.rows_applied, 5 * ROWS_PER_FRAME);
    drop((newcomer, silent));
    server.shutdown(Duration::ZERO);
}
