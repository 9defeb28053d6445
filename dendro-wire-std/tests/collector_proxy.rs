//! A collector behind a load balancer: connections from the balancer's
//! address begin with a PROXY protocol header (v1 or v2), and the client it
//! names is the peer everywhere (its address's share, the connection's
//! report). A header missing, malformed, oversized or slow ends its
//! connection within the handshake timeout; a header from any other address
//! is refused, never trusted.

#![cfg(feature = "tokio")]

#[path = "support/collector.rs"]
mod support;
use support::{connect_from, recv, start, PREAMBLE};

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use dendro_wire_std::receive::proxy::ProxyHeaderError;
use dendro_wire_std::receive::{Peer, ServeError, ServerConfig};
use dendro_wire_test_support::streams::{honest_stream, ROWS_PER_FRAME};

/// A PROXY v1 header for a client at `client`.
fn v1(client: SocketAddr) -> Vec<u8> {
    format!(
        "PROXY TCP4 {} 127.0.0.1 {} 7000\r\n",
        client.ip(),
        client.port()
    )
    .into_bytes()
}

/// A PROXY v2 header for a client at `client` (IPv4), with `tlvs`.
fn v2(client: SocketAddr, tlvs: &[u8]) -> Vec<u8> {
    let SocketAddr::V4(client) = client else {
        panic!("IPv4 only");
    };
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x11]);
    h.extend_from_slice(&(12 + tlvs.len() as u16).to_be_bytes());
    h.extend_from_slice(&client.ip().octets());
    h.extend_from_slice(&[127, 0, 0, 1]);
    h.extend_from_slice(&client.port().to_be_bytes());
    h.extend_from_slice(&7000u16.to_be_bytes());
    h.extend_from_slice(tlvs);
    h
}

/// The balancer in these tests: 127.0.9.9, and nothing else.
const BALANCER: [u8; 4] = [127, 0, 9, 9];

fn config() -> ServerConfig {
    let mut config = ServerConfig::default();
    config.proxy_protocol_from = vec!["127.0.9.9/32".parse().unwrap()];
    config.idle_timeout = Duration::from_secs(30);
    config.frame_timeout = Duration::from_secs(30);
    config
}

#[test]
fn the_client_a_header_names_is_the_connections_peer() {
    let (server, addr, ended) = start(config());
    let stream = honest_stream(10);
    for (i, header) in [
        v1("10.7.0.1:41000".parse().unwrap()),
        v2("10.7.0.2:42000".parse().unwrap(), &[]),
        // A TLV the collector does not read (a unique id) is passed over.
        v2(
            "10.7.0.3:43000".parse().unwrap(),
            &[0x05, 0x00, 0x03, 1, 2, 3],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = connect_from(BALANCER, addr);
        // The header and the stream in one write, as a balancer sends them.
        s.write_all(&[header, stream.clone()].concat()).unwrap();
        drop(s);
        let e = recv(&ended);
        assert!(e.result.is_ok(), "{e}");
        assert_eq!(e.tally.rows_applied, 10 * ROWS_PER_FRAME);
        let Peer::Proxied { client, balancer } = e.info.peer else {
            panic!("{e:?}");
        };
        assert_eq!(client.ip().to_string(), format!("10.7.0.{}", i + 1));
        assert_eq!(balancer.ip().to_string(), "127.0.9.9");
        assert!(e.to_string().contains("(via 127.0.9.9:"), "{e}");
    }
    server.shutdown(Duration::ZERO);
}

/// A header written in pieces, each its own segment with a pause after it,
/// is read whole: a balancer's write may be cut anywhere.
#[test]
fn a_header_in_pieces_is_read_whole() {
    let (server, addr, ended) = start(config());
    let stream = honest_stream(3);
    let v1 = b"PROXY TCP4 10.9.8.5 10.0.0.1 40000 7000\r\n".to_vec();
    let v2 = v2(
        "10.9.8.6:41000".parse().unwrap(),
        &[0x05, 0x00, 0x03, 1, 2, 3],
    );
    let bytes = |h: &[u8]| h.iter().map(|b| vec![*b]).collect::<Vec<_>>();
    for (pieces, client) in [
        // Cut after the source port, as a balancer's two writes were.
        (vec![v1[..35].to_vec(), v1[35..].to_vec()], "10.9.8.5:40000"),
        (bytes(&v1), "10.9.8.5:40000"),
        // Inside the head, then inside the TLV.
        (
            vec![v2[..7].to_vec(), v2[7..30].to_vec(), v2[30..].to_vec()],
            "10.9.8.6:41000",
        ),
        (bytes(&v2), "10.9.8.6:41000"),
    ] {
        let mut s = connect_from(BALANCER, addr);
        s.set_nodelay(true).unwrap();
        for piece in &pieces {
            s.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(15));
        }
        s.write_all(&stream).unwrap();
        drop(s);
        let e = recv(&ended);
        assert!(e.result.is_ok(), "{} pieces: {e}", pieces.len());
        assert_eq!(e.tally.rows_applied, 3 * ROWS_PER_FRAME);
        let Peer::Proxied { client: seen, .. } = e.info.peer else {
            panic!("{e:?}");
        };
        assert_eq!(seen.to_string(), client);
    }
    server.shutdown(Duration::ZERO);
}

#[test]
fn each_client_behind_the_balancer_holds_its_own_share() {
    let mut config = config();
    config.max_connections_per_peer = 2;
    let (server, addr, ended) = start(config);
    let opened = honest_stream(0);
    // Six connections from the balancer, two clients, three each: only the
    // third of each client is over its share.
    let mut held = Vec::new();
    for i in 0..6 {
        let client: SocketAddr = format!("10.8.0.{}:{}", i % 2 + 1, 40000 + i)
            .parse()
            .unwrap();
        let mut s = connect_from(BALANCER, addr);
        s.write_all(&[v2(client, &[]), opened.clone()].concat())
            .unwrap();
        held.push(s);
        // Each opens its source before the next arrives.
        std::thread::sleep(Duration::from_millis(100));
    }
    let refused: Vec<_> = (0..2).map(|_| recv(&ended)).collect();
    for e in &refused {
        assert!(matches!(e.result, Err(ServeError::Refused(_))), "{e}");
        assert!(
            e.to_string().contains("the most allowed from one address"),
            "{e}"
        );
    }
    let mut clients: Vec<String> = refused.iter().map(|e| e.info.peer.to_string()).collect();
    clients.sort();
    assert!(clients[0].starts_with("10.8.0.1:") && clients[1].starts_with("10.8.0.2:"));
    let stats = server.stats();
    assert_eq!((stats.live, stats.refused, stats.evicted), (4, 2, 0));
    drop(held);
    server.shutdown(Duration::ZERO);
}

#[test]
fn a_missing_malformed_or_oversized_header_ends_its_connection() {
    let (server, addr, ended) = start(config());
    let mut oversized = v2("10.9.0.1:1".parse().unwrap(), &[]);
    oversized[14..16].copy_from_slice(&5000u16.to_be_bytes());
    // A TLV that claims more than the header holds.
    let overrun = v2("10.9.0.1:1".parse().unwrap(), &[0x05, 0x00, 0x09, 1, 2, 3]);
    for (bytes, name, says) in [
        (
            PREAMBLE.to_vec(),
            "missing",
            "does not begin with a PROXY protocol header",
        ),
        (
            b"PROXY TCP4 10.9.0.1 nonsense 1 2\r\n".to_vec(),
            "malformed",
            "the destination address \"nonsense\" at byte 20 is not an IPv4 address",
        ),
        (
            overrun,
            "malformed",
            "the TLV at byte 28 (type 0x05) claims 9 bytes of value",
        ),
        (oversized, "oversized", "of 5016 bytes or more"),
    ] {
        let started = Instant::now();
        let mut s = connect_from(BALANCER, addr);
        s.write_all(&bytes).unwrap();
        let e = recv(&ended);
        match &e.result {
            Err(ServeError::ProxyHeader(why)) => {
                assert_eq!(why.name(), name, "{e}");
                assert!(why.to_string().contains(says), "{e}");
            }
            _ => panic!("{e}"),
        }
        assert_eq!(e.result.as_ref().unwrap_err().name(), "proxy_header");
        assert!(started.elapsed() < Duration::from_secs(5), "at once");
        drop(s);
    }
    server.shutdown(Duration::ZERO);
}

#[test]
fn a_header_that_stalls_is_ended_by_the_handshake_timeout() {
    let mut config = config();
    config.handshake_timeout = Duration::from_millis(400);
    let (server, addr, ended) = start(config);
    let started = Instant::now();
    let mut s = connect_from(BALANCER, addr);
    s.write_all(b"PROXY TCP4 10.9").unwrap();
    let e = recv(&ended);
    assert!(
        matches!(e.result, Err(ServeError::HandshakeTimeout { .. })),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(s);
    server.shutdown(Duration::ZERO);
}

#[test]
fn a_header_from_any_other_address_is_refused_never_trusted() {
    let (server, addr, ended) = start(config());
    for header in [
        v1("10.1.1.1:1".parse().unwrap()),
        v2("10.1.1.1:1".parse().unwrap(), &[]),
    ] {
        let mut s = connect_from([127, 0, 9, 10], addr);
        s.write_all(&[header, honest_stream(3)].concat()).unwrap();
        let e = recv(&ended);
        assert!(
            matches!(
                e.result,
                Err(ServeError::ProxyHeader(ProxyHeaderError::NotExpected))
            ),
            "{e}"
        );
        assert!(e.to_string().contains("never trusted"), "{e}");
        assert_eq!(e.info.peer, Peer::Tcp(s.local_addr().unwrap()));
        assert_eq!(e.tally.sources, 0);
    }
    server.shutdown(Duration::ZERO);
}

/// Under TLS the header comes first, in the clear, as a balancer in TCP
/// mode writes it; then the ClientHello.
#[cfg(feature = "tls")]
#[test]
fn under_tls_the_header_comes_before_the_client_hello() {
    use dendro_wire_std::tls;
    use dendro_wire_test_support::certs::Ca;

    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let mut config = config();
    config.tls = Some(servers.server(tls::server_config, &clients));
    let (server, addr, ended) = start(config);
    let agent = clients.client(tls::client_config, &servers, "agent-9", false);
    let mut tcp = connect_from(BALANCER, addr);
    tcp.write_all(&v1("10.6.0.9:45000".parse().unwrap()))
        .unwrap();
    let name = tls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connection = tls::rustls::ClientConnection::new(agent.config().clone(), name).unwrap();
    let mut s = tls::rustls::StreamOwned::new(connection, tcp);
    s.write_all(&honest_stream(10)).unwrap();
    s.flush().unwrap();
    s.conn.send_close_notify();
    let _ = s.flush();
    // Read what the collector sends (its session tickets) until it closes,
    // so that nothing unread resets the connection.
    let _ = s.sock.shutdown(std::net::Shutdown::Write);
    let _ = std::io::Read::read_to_end(&mut s, &mut Vec::new());
    let e = recv(&ended);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.tally.rows_applied, 10 * ROWS_PER_FRAME);
    assert_eq!(e.info.identity.as_deref(), Some("agent-9"));
    assert!(e
        .info
        .peer
        .to_string()
        .starts_with("10.6.0.9:45000 (via 127.0.9.9:"));
    server.shutdown(Duration::ZERO);
}
