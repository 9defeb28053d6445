//! What the collector's tests share: a server on a free loopback port whose
//! ended connections come down a channel, connecting to it from another
//! loopback address, and waiting for what it does.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dendro_wire_std::receive::{Ended, Server, ServerConfig};
use dendro_wire_std::CountingSink;

pub const PREAMBLE: &[u8] = b"dendro-repl\0\x01\x00";

/// A frame of an unknown kind with nothing in it: five bytes that keep a
/// connection from the idle timeout and open nothing.
pub const KEEPALIVE: [u8; 5] = [1, 0, 0, 0, 0xee];

/// A server on a free loopback port, with `config`: the server, its
/// address, and the channel each ended connection is sent down.
pub fn start(config: ServerConfig) -> (Server, SocketAddr, mpsc::Receiver<Ended>) {
    let (tx, rx) = mpsc::channel();
    let server = Server::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        config,
        |_| CountingSink::default(),
        move |ended, _| {
            let _ = tx.send(ended);
        },
    )
    .unwrap();
    let addr = server.local_addr().unwrap();
    (server, addr, rx)
}

/// A connection from `from` (a 127/8 address) to `addr`.
pub fn connect_from(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    dendro_wire_test_support::peers::connect_from(from, addr).unwrap()
}

pub fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Wait until `server` counts `n` connections live.
pub fn wait_live(server: &Server, n: u64, what: &str) {
    wait_until(what, Duration::from_secs(20), || server.stats().live == n);
}

pub fn recv(rx: &mpsc::Receiver<Ended>) -> Ended {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("a connection's end was reported")
}
