//! TLS with client certificates, and identities bound to sources: a good
//! client lands its rows; every other client is refused with its reason, on
//! both sides, and the sink holds nothing from it. Certificates are made
//! here, for each run, so nothing checked in can expire.

#![cfg(feature = "tls")]

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use dendro_wire_core::{Frame, Handshake, Map, Row, RowsHeader, SourceUpdate, NO_INDEX_STATE};
use dendro_wire_std::receive::{Ended, ServeError, Server, ServerConfig};
use dendro_wire_std::tls::{self, rustls, IdentityFrom, TlsClient};
use dendro_wire_std::{CountingSink, FrameWriter, SubscribeError};
use dendro_wire_test_support::certs::rcgen::{
    CertificateParams, DistinguishedName, DnType, SanType,
};
use dendro_wire_test_support::certs::Ca;
use dendro_wire_test_support::fixtures::bare_handshake;

/// A TLS collector whose clients must be signed by `clients`, binding the
/// `host` label to their identity.
fn collector(
    servers: &Ca,
    clients: &Ca,
) -> (Server, SocketAddr, mpsc::Receiver<(Ended, CountingSink)>) {
    collector_with(servers, clients, |_| {})
}

/// [`collector`], its configuration then changed by `change`.
fn collector_with(
    servers: &Ca,
    clients: &Ca,
    change: impl FnOnce(&mut ServerConfig),
) -> (Server, SocketAddr, mpsc::Receiver<(Ended, CountingSink)>) {
    let mut config = ServerConfig::default();
    config.tls = Some(servers.server(tls::server_config, clients));
    config.bind_identity = Some("host".into());
    config.idle_timeout = Duration::from_secs(5);
    change(&mut config);
    let (tx, rx) = mpsc::channel();
    let server = Server::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        config,
        |_| CountingSink::default(),
        move |ended, sink| {
            let _ = tx.send((ended, sink));
        },
    )
    .unwrap();
    let addr = server.local_addr().unwrap();
    (server, addr, rx)
}

fn ended(rx: &mpsc::Receiver<(Ended, CountingSink)>) -> (Ended, CountingSink) {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the connection ended")
}

/// A stream from a source labelled `host`: a handshake, `rows` rows, then,
/// if `update_to` is given, a SourceUpdate relabelling it, and `rows` more.
fn stream(host: &str, rows: u64, update_to: Option<&str>) -> Vec<u8> {
    let labels = [("host", host)];
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_frame(&Frame::Handshake(Handshake {
        labels: Map::from_pairs(&labels),
        ..bare_handshake(0)
    }))
    .unwrap();
    let mut seq = 0;
    let mut rows_frame = |w: &mut FrameWriter<Vec<u8>>| {
        let row = Row {
            stream: "cpu",
            ts: seq as i64,
            wall_offset: 0,
            row: &[1; 8],
        };
        w.write_rows(
            RowsHeader {
                source: 0,
                seq,
                index_state: NO_INDEX_STATE,
            },
            (0..rows).map(|_| row),
        )
        .unwrap();
        seq += 1;
    };
    rows_frame(&mut w);
    if let Some(other) = update_to {
        let labels = [("host", other)];
        w.write_frame(&Frame::SourceUpdate(SourceUpdate {
            source: 0,
            ts: 1,
            labels: Map::from_pairs(&labels),
            metadata: Map::EMPTY,
        }))
        .unwrap();
        rows_frame(&mut w);
    }
    w.into_inner()
}

#[test]
fn a_client_with_a_good_certificate_lands_its_rows() {
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let (server, addr, rx) = collector(&servers, &clients);
    let agent = clients.client(tls::client_config, &servers, "agent-1", false);
    let mut s = agent.connect(addr, "localhost").unwrap();
    s.write_all(&stream("agent-1", 10, None)).unwrap();
    drop(s);
    let (e, sink) = ended(&rx);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.info.identity.as_deref(), Some("agent-1"));
    assert!(e.to_string().contains("(agent-1)"), "{e}");
    assert_eq!((sink.sources, sink.rows), (1, 10));
    server.shutdown(Duration::ZERO);
}

/// A client that is refused at the handshake: its error, and the server's
/// reason; the sink must hold nothing.
fn refused(
    client: &TlsClient,
    server_name: &str,
    rx: &mpsc::Receiver<(Ended, CountingSink)>,
    addr: SocketAddr,
) -> (String, String) {
    let client_side = match client.connect(addr, server_name) {
        Err(e) => e.to_string(),
        Ok(mut s) => {
            // Not refused at the handshake: writing must then fail.
            let wrote = s
                .write_all(&stream("agent-1", 10, None))
                .and_then(|()| s.flush());
            panic!("connected and wrote: {wrote:?}");
        }
    };
    let (e, sink) = ended(rx);
    assert!(matches!(e.result, Err(ServeError::Tls(_))), "{e}");
    assert_eq!(
        sink,
        CountingSink {
            connections: 1,
            ..CountingSink::default()
        }
    );
    (client_side, e.to_string())
}

#[test]
fn clients_without_a_good_certificate_are_refused_at_the_handshake() {
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let (server, addr, rx) = collector(&servers, &clients);

    // A certificate from another CA.
    let stranger = Ca::new("strangers").client(tls::client_config, &servers, "agent-1", false);
    let (client, server_said) = refused(&stranger, "localhost", &rx, addr);
    assert!(client.contains("refused by the collector"), "{client}");
    assert!(server_said.contains("UnknownIssuer"), "{server_said}");

    // An expired one.
    let expired = clients.client(tls::client_config, &servers, "agent-1", true);
    let (client, server_said) = refused(&expired, "localhost", &rx, addr);
    assert!(client.contains("refused by the collector"), "{client}");
    assert!(server_said.contains("expired"), "{server_said}");

    // A server whose name does not match: the client refuses it.
    let agent = clients.client(tls::client_config, &servers, "agent-1", false);
    let (client, server_said) = refused(&agent, "collector.example", &rx, addr);
    assert!(client.contains("not valid for name"), "{client}");
    assert!(
        server_said.contains("refused at the TLS handshake"),
        "{server_said}"
    );

    // No certificate at all.
    let no_cert = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_root_certificates({
        let mut roots = rustls::RootCertStore::empty();
        roots.add(servers.der()).unwrap();
        roots
    })
    .with_no_client_auth();
    let mut tcp = TcpStream::connect(addr).unwrap();
    let mut conn =
        rustls::ClientConnection::new(Arc::new(no_cert), "localhost".try_into().unwrap()).unwrap();
    let mut client = rustls::Stream::new(&mut conn, &mut tcp);
    // The handshake ends on the client's side; the refusal comes after.
    let outcome = client
        .write_all(&stream("agent-1", 10, None))
        .and_then(|()| client.flush())
        .and_then(|()| std::io::Read::read(&mut client, &mut [0; 16]));
    let said = format!("{outcome:?}");
    assert!(said.contains("CertificateRequired"), "{said}");
    let (e, sink) = ended(&rx);
    assert!(e.to_string().contains("peer sent no certificates"), "{e}");
    assert_eq!(sink.rows, 0);
    server.shutdown(Duration::ZERO);
}

#[test]
fn a_client_writing_as_another_host_is_refused_and_nothing_after_is_applied() {
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let (server, addr, rx) = collector(&servers, &clients);
    let agent = clients.client(tls::client_config, &servers, "agent-1", false);

    // A handshake that claims another host: nothing of it lands.
    let mut s = agent.connect(addr, "localhost").unwrap();
    let _ = s.write_all(&stream("agent-2", 10, None));
    drop(s);
    let (e, sink) = ended(&rx);
    let Err(ServeError::Subscribe(
        _,
        SubscribeError::IdentityMismatch {
            claimed, identity, ..
        },
    )) = &e.result
    else {
        panic!("{e}")
    };
    assert_eq!(
        (claimed.as_deref(), identity.as_str()),
        (Some("agent-2"), "agent-1")
    );
    assert!(e.to_string().contains(r#"claims host="agent-2""#), "{e}");
    assert_eq!((sink.sources, sink.rows), (0, 0));

    // Its own host, then a SourceUpdate to another: what came before is
    // applied, the update and everything after are not.
    let mut s = agent.connect(addr, "localhost").unwrap();
    let _ = s.write_all(&stream("agent-1", 10, Some("agent-2")));
    drop(s);
    let (e, sink) = ended(&rx);
    assert!(e.to_string().contains("a SourceUpdate for source 0"), "{e}");
    assert_eq!((sink.sources, sink.rows, sink.source_updates), (1, 10, 0));
    server.shutdown(Duration::ZERO);
}

/// A collector binding `host` whose TLS refuses, during the handshake, a
/// certificate that proves no identity (as `from` allows), and the CA its
/// clients chain to.
fn binding_collector(
    servers: &Ca,
    clients: &Ca,
    from: IdentityFrom,
    checked_at_handshake: bool,
) -> (Server, SocketAddr, mpsc::Receiver<(Ended, CountingSink)>) {
    let (server, addr, rx) = collector_with(servers, clients, |config| {
        if checked_at_handshake {
            config.tls = Some(servers.server(
                |chain, key, cas| tls::server_config_binding(chain, key, cas, from),
                clients,
            ));
        }
        config.identity_from = from;
    });
    (server, addr, rx)
}

/// A client with a certificate made from `params` by `ca`, presenting
/// `intermediates` after it.
fn client_from(
    servers: &Ca,
    ca: &Ca,
    params: CertificateParams,
    intermediates: &[&Ca],
) -> TlsClient {
    let leaf = ca.sign(params);
    let mut chain = leaf.chain();
    chain.extend(intermediates.iter().map(|ca| ca.der()));
    tls::client_config(vec![servers.der()], chain, leaf.key()).unwrap()
}

/// Certificate parameters with these subject alternative names and these
/// subject attributes.
fn params(sans: Vec<SanType>, subject: &[(DnType, &str)]) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.subject_alt_names = sans;
    params.distinguished_name = DistinguishedName::new();
    for (kind, value) in subject {
        params.distinguished_name.push(kind.clone(), *value);
    }
    params
}

/// `client`, as `host`, lands its 10 rows with `host` as its identity.
fn lands(
    client: &TlsClient,
    addr: SocketAddr,
    rx: &mpsc::Receiver<(Ended, CountingSink)>,
    host: &str,
) {
    let mut s = client.connect(addr, "localhost").unwrap();
    s.write_all(&stream(host, 10, None)).unwrap();
    drop(s);
    let (e, sink) = ended(rx);
    assert!(e.result.is_ok(), "{e}");
    assert_eq!(e.info.identity.as_deref(), Some(host));
    assert_eq!(sink.rows, 10);
}

fn dns(name: &str) -> SanType {
    SanType::DnsName(name.try_into().unwrap())
}

/// Certificates that prove no identity, each refused, with its reason,
/// both by the handshake's verifier and (a library caller who configured
/// TLS without it) by the server after the handshake; none lands a row.
#[test]
fn a_certificate_that_proves_no_identity_is_refused_when_identities_are_bound() {
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let team_a = clients.constrained_sub_ca("team-a", "team-a.example");
    let ip = SanType::IpAddress("10.0.0.1".parse().unwrap());
    let uri = SanType::URI("spiffe://fleet/db-01".try_into().unwrap());
    let cases: [(&str, TlsClient, &str); 5] = [
        (
            "an IP-only SAN and O=Fleet",
            client_from(
                &servers,
                &clients,
                params(vec![ip], &[(DnType::OrganizationName, "Fleet")]),
                &[],
            ),
            "hold no DNS name (they hold IP address 10.0.0.1)",
        ),
        (
            "a URI SAN and an empty subject",
            client_from(&servers, &clients, params(vec![uri], &[]), &[]),
            "hold no DNS name (they hold URI spiffe://fleet/db-01)",
        ),
        (
            "no SAN and a CN",
            client_from(
                &servers,
                &clients,
                params(vec![], &[(DnType::CommonName, "db-01")]),
                &[],
            ),
            "its common name is not used",
        ),
        (
            "no SAN and a CN, from a name-constrained sub-CA",
            client_from(
                &servers,
                &team_a,
                params(vec![], &[(DnType::CommonName, "db-01")]),
                &[&team_a],
            ),
            "its common name is not used",
        ),
        (
            "a NUL in its DNS SAN",
            client_from(
                &servers,
                &clients,
                params(vec![dns("db-01\0.team-a.example")], &[]),
                &[],
            ),
            r"its name db-01\0.team-a.example holds a control character",
        ),
    ];
    for checked_at_handshake in [true, false] {
        let (server, addr, rx) = binding_collector(
            &servers,
            &clients,
            IdentityFrom::DnsNames,
            checked_at_handshake,
        );
        for (what, client, reason) in &cases {
            let client_side = match client.connect(addr, "localhost") {
                Err(e) => e.to_string(),
                Ok(mut s) => {
                    let written = s
                        .write_all(&stream("db-01", 10, None))
                        .and_then(|()| s.flush());
                    format!("connected; wrote {written:?}")
                }
            };
            let (e, sink) = ended(&rx);
            let said = e.to_string();
            assert!(
                matches!(e.result, Err(ServeError::Tls(_))),
                "{what}: {said}"
            );
            assert!(
                said.contains("proves no identity") && said.contains(reason),
                "{what}: {said}"
            );
            assert!(!said.contains('\0'), "{what}: {said:?}");
            assert_eq!(e.info.identity, None, "{what}");
            assert_eq!((sink.sources, sink.rows), (0, 0), "{what}: {said}");
            if checked_at_handshake {
                assert!(
                    client_side.contains("refused by the collector"),
                    "{what}: {client_side}"
                );
            }
        }
        server.shutdown(Duration::ZERO);
    }
}

/// Asked to, a certificate with no SAN extension at all proves its common
/// name, but not under a name-constrained CA (whose constraints a common
/// name escapes): the sub-CA limited to team-a.example cannot make db-01.
#[test]
fn a_common_name_is_an_identity_only_when_asked_for_and_never_under_name_constraints() {
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    let team_a = clients.constrained_sub_ca("team-a", "team-a.example");
    let from = IdentityFrom::DnsNamesOrCommonName;
    let (server, addr, rx) = binding_collector(&servers, &clients, from, true);

    let cn_only = client_from(
        &servers,
        &clients,
        params(vec![], &[(DnType::CommonName, "db-01")]),
        &[],
    );
    lands(&cn_only, addr, &rx, "db-01");

    // The same sub-CA's SAN outside its constraints is refused by the CA
    // check; its CN-only certificate by the identity check.
    let outside = client_from(
        &servers,
        &team_a,
        params(vec![dns("db-01")], &[]),
        &[&team_a],
    );
    let constrained_cn = client_from(
        &servers,
        &team_a,
        params(vec![], &[(DnType::CommonName, "db-01")]),
        &[&team_a],
    );
    for (client, reason) in [
        (outside, "NameConstraintViolation"),
        (
            constrained_cn,
            "not used under a CA whose names are constrained",
        ),
    ] {
        let err = client.connect(addr, "localhost").map(|_| ()).unwrap_err();
        assert!(
            err.to_string().contains("refused by the collector"),
            "{err}"
        );
        let (e, sink) = ended(&rx);
        assert!(e.to_string().contains(reason), "{e}");
        assert_eq!(sink.rows, 0);
    }

    // Within its constraints, the sub-CA's client lands its rows.
    let inside = client_from(
        &servers,
        &team_a,
        params(vec![dns("db-01.team-a.example")], &[]),
        &[&team_a],
    );
    lands(&inside, addr, &rx, "db-01.team-a.example");
    server.shutdown(Duration::ZERO);
}
