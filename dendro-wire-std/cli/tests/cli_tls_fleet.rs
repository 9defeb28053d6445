//! A TLS fleet reconnecting at once into `dendro-wire listen` at its
//! defaults: every agent admitted, none refused or closed, every row
//! applied. The listener is a process of its own, as in production, so the
//! test's client ends and the listener's sockets each fit a process's
//! descriptors.
//!
//! 1,000 agents by default, to keep the test run short;
//! `DENDRO_WIRE_TLS_FLEET=10000` runs the fleet the defaults are sized for
//! (`--max-connections` 10,000 in `--max-memory` 256 MiB).

use std::ffi::OsStr;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use dendro_wire_std::tls;
use dendro_wire_test_support::certs::Ca;
use dendro_wire_test_support::peers::connect_from;
use dendro_wire_test_support::process::{number_after, Tool};
use dendro_wire_test_support::streams::{honest_stream, ROWS_PER_FRAME};

const TOOL: Tool = Tool::new(env!("CARGO_BIN_EXE_dendro-wire"));

/// Agents from one address: under the per-address cap (256), as hosts are.
const PER_ADDRESS: usize = 200;

#[test]
fn a_tls_fleet_reconnecting_at_once_is_admitted_at_the_defaults() {
    let fleet: usize = std::env::var("DENDRO_WIRE_TLS_FLEET")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    let dir = tempfile::tempdir().unwrap();
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    servers
        .leaf("localhost", false)
        .write(dir.path(), "collector");
    clients.write(dir.path(), "agents");
    let path = |name: &str| dir.path().join(name).into_os_string();
    let (cert, key, ca) = (
        path("collector.pem"),
        path("collector.key"),
        path("agents.pem"),
    );
    // The defaults, but for where it listens and its certificates.
    let args: [&OsStr; 8] = [
        "--bind".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--tls-cert".as_ref(),
        &cert,
        "--tls-key".as_ref(),
        &key,
        "--client-ca".as_ref(),
        &ca,
    ];
    let listening = TOOL.listen(&args);
    let addr: SocketAddr = listening.addr().parse().unwrap();
    let agent = clients.client(tls::client_config, &servers, "agent-1", false);
    let opening = honest_stream(1);
    let addresses = fleet.div_ceil(PER_ADDRESS);
    let go = Arc::new(Barrier::new(addresses + 1));
    let hosts: Vec<_> = (0..addresses)
        .map(|i| {
            let (config, opening, go) = (agent.config().clone(), opening.clone(), go.clone());
            let mine = PER_ADDRESS.min(fleet - i * PER_ADDRESS);
            std::thread::spawn(move || {
                go.wait();
                let from = [127, 0, 3 + (i / 250) as u8, 1 + (i % 250) as u8];
                (0..mine)
                    .map(|_| {
                        let tcp = connect_from(from, addr).unwrap();
                        let name = "localhost".try_into().unwrap();
                        let tls = tls::rustls::ClientConnection::new(config.clone(), name).unwrap();
                        let mut s = tls::rustls::StreamOwned::new(tls, tcp);
                        s.write_all(&opening).and_then(|()| s.flush()).map(|()| s)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    go.wait();
    let started = Instant::now();
    let agents: Vec<_> = hosts.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let connected = started.elapsed();
    let written = agents.iter().filter(|a| a.is_ok()).count();
    // Every agent's opening has been written; the listener applies what has
    // arrived when it stops, so its summary counts every one.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(listening.terminate());
    let done = listening.finish();
    drop(agents);
    let summary = done
        .lines
        .iter()
        .find(|l| l.starts_with("listener: "))
        .unwrap_or_else(|| panic!("no summary: {done:?}"));
    eprintln!(
        "{fleet} TLS agents from {addresses} addresses connected and wrote in {:.1} s; {summary}",
        connected.as_secs_f64()
    );
    assert!(done.status.success(), "{}", done.stderr);
    assert_eq!(written, fleet, "an agent's TLS handshake or write failed");
    assert_eq!(
        number_after(summary, "listener: "),
        fleet as u64,
        "{summary}"
    );
    assert_eq!(
        number_after(summary, "), "),
        0,
        "refused at accept: {summary}"
    );
    assert_eq!(
        number_after(summary, "memory budget full), "),
        0,
        "told to close: {summary}"
    );
    assert_eq!(
        number_after(summary, "rows "),
        fleet as u64 * ROWS_PER_FRAME,
        "{summary}"
    );
    // No start-up warning that the budget holds fewer than the cap.
    assert!(!done.stderr.contains("--max-memory"), "{}", done.stderr);
}
