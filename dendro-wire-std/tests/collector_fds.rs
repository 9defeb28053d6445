//! A collector gives back the file descriptor of every connection that
//! ends. The only test in this binary, so no other test opens or closes
//! descriptors while it counts them.

#![cfg(all(feature = "tokio", target_os = "linux"))]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use dendro_wire_std::receive::{Server, ServerConfig};
use dendro_wire_std::CountingSink;
use dendro_wire_test_support::streams;

#[test]
fn every_ended_connection_gives_back_its_file_descriptor() {
    let fds = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    let (tx, ended) = mpsc::channel();
    let mut config = ServerConfig::default();
    config.idle_timeout = Duration::from_millis(50);
    let server = Server::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        config,
        |_| CountingSink::default(),
        move |e, _| tx.send(e).unwrap(),
    )
    .unwrap();
    let addr = server.local_addr().unwrap();
    let stream = streams::honest_stream(1);
    let recv = || ended.recv_timeout(Duration::from_secs(10)).unwrap();
    // The runtime's own descriptors are open once a connection has been
    // served.
    TcpStream::connect(addr)
        .unwrap()
        .write_all(&stream)
        .unwrap();
    assert!(recv().result.is_ok());
    let before = fds();
    for i in 0..300 {
        let mut s = TcpStream::connect(addr).unwrap();
        match i % 5 {
            0 | 1 => s.write_all(b"not a stream").unwrap(), // refused
            2 | 3 => s.write_all(&stream).unwrap(),         // a clean end
            _ => {}                                         // idle, timed out
        }
        if i % 5 == 4 {
            recv();
            drop(s);
        } else {
            drop(s);
            recv();
        }
    }
    assert_eq!(fds(), before, "descriptors held after 300 connections");
    server.shutdown(Duration::ZERO);
}
