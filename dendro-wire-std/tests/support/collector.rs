//! What the collector's tests share: a server on a free loopback port whose
//! ended connections come down a channel, and waiting for what it does.

#![allow(dead_code)]

use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dendro_wire_std::receive::{Ended, Server, ServerConfig};
use dendro_wire_std::CountingSink;

pub const PREAMBLE: &[u8] = b"dendro-repl\0\x01\x00";

/// A frame of an unknown kind with nothing in it: five bytes that keep a
/// connection from the idle timeout and open nothing.
pub const KEEPALIVE: [u8; 5] = [1, 0, 0, 0, 0xee];

/// A server on a free loopback port, with `config`, each ended connection
/// sent down the channel.
pub fn start(config: ServerConfig) -> (Server, mpsc::Receiver<Ended>) {
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
    (server, rx)
}

pub fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn recv(rx: &mpsc::Receiver<Ended>) -> Ended {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("a connection's end was reported")
}
