//! `dendro-wire demo`, `agent` and `listen`, run as processes.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use dendro_wire_test_support::fixtures::testdata;
use dendro_wire_test_support::process::{number_after, output, Listened, Listening, Tool};
use dendro_wire_test_support::{certs, scratch};

const TOOL: Tool = Tool::new(env!("CARGO_BIN_EXE_dendro-wire"));

#[test]
fn the_demo_streams_and_accounts_for_every_row() {
    let out = TOOL.run(["demo", "--seconds", "1.5"], b"");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let published = number_after(&stdout, "rows ");
    let applied = number_after(&stdout, "published, ");
    assert!(applied > 0, "{stdout}");
    assert!(stdout.contains(" 0 skipped"), "{stdout}");
    let lost = number_after(&stdout, "gaps ");
    let dropped_rows = if lost > 0 {
        number_after(&stdout, "dropped on purpose, ")
    } else {
        0
    };
    assert_eq!(published, applied + dropped_rows, "{stdout}");
    assert!(stdout.contains("MB/s"), "{stdout}");
}

#[test]
fn the_agent_needs_a_target_and_a_valid_interval() {
    let out = TOOL.run(["agent"], b"");
    assert_eq!(out.status.code(), Some(2));
    let usage = String::from_utf8_lossy(&out.stderr);
    assert!(
        usage.contains("<--connect <HOST:PORT>|--unix <UNIX>|--output <OUTPUT>>"),
        "{usage}"
    );
    for bad in ["10", "0s", "x1s", "1 fortnight"] {
        let out = TOOL.run(["agent", "-o", "/dev/null", "--interval", bad], b"");
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}

#[test]
fn a_replayed_capture_is_applied_as_check_reads_it() {
    let sample = testdata("sample.dwr");
    let served = TOOL.serve_one(&[], |addr| {
        output(
            TOOL.command()
                .args(["replay", "--connect", addr])
                .arg(&sample),
            b"",
        )
    });
    let replay = served.client;
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let summary = served.line;
    // testdata/sample.jsonl: 13 frames, 4 rows applied, 1 skipped, one gap
    // of 2.
    let size = std::fs::metadata(&sample).unwrap().len();
    assert!(
        summary.starts_with("connection 0 from 127.0.0.1:"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(": 13 frames, {size} bytes in ")),
        "{summary}"
    );
    assert!(
        summary.ends_with(
            "; sources 2, rows 4 applied 1 skipped, index entries 2, segments 1, gaps 1 \
             (2 frames lost); ended cleanly"
        ),
        "{summary}"
    );
    // The gap is logged, once, where an operator sees it.
    let stderr = served.stderr;
    assert_eq!(stderr.matches("frame(s) lost").count(), 1, "{stderr}");
}

#[test]
fn listen_stops_on_sigterm_applying_and_recording_what_arrived() {
    let dir = scratch!("listen-sigterm");
    let listen = TOOL.listen(&[
        "--bind".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--record".as_ref(),
        dir.as_os_str(),
    ]);
    let addr = listen.addr();
    let sample = std::fs::read(testdata("sample.dwr")).unwrap();
    // The whole sample and the first bytes of a next frame; then the peer
    // stays, saying nothing.
    let mut peer = std::net::TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut peer, &sample).unwrap();
    std::io::Write::write_all(&mut peer, &[9, 0]).unwrap();
    let capture = dir.join("connection-0.dwr");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::fs::metadata(&capture).map_or(0, |m| m.len()) < sample.len() as u64 + 2 {
        assert!(std::time::Instant::now() < deadline, "not captured");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(listen.terminate());
    let listened = listen.finish();
    let status = listened.status;
    assert!(status.success(), "{status}");
    let rest = listened.lines;
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert!(
        rest[0].starts_with("connection 0 from 127.0.0.1:"),
        "{rest:?}"
    );
    assert!(rest[0].contains("rows 4 applied 1 skipped"), "{rest:?}");
    assert!(
        rest[0].contains("the server shut down with 2 byte(s) of this frame arrived"),
        "{rest:?}"
    );
    assert!(
        rest[1].starts_with("listener: 1 connection(s) served (0 ended cleanly)"),
        "{rest:?}"
    );
    let mut captured = sample.clone();
    captured.extend_from_slice(&[9, 0]);
    assert_eq!(std::fs::read(&capture).unwrap(), captured);
    // The peer's socket was closed.
    peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(std::io::Read::read(&mut peer, &mut [0; 8]).unwrap_or(0), 0);
}

/// At exit, `listen --unix` removes its socket, and only its socket: a
/// file put at the path meanwhile is left, and said to be.
#[cfg(unix)]
#[test]
fn listen_on_a_unix_socket_removes_only_its_own_socket_at_exit() {
    let dir = scratch!("listen-unix-exit");
    let path = dir.join("collector.sock");
    let listen = TOOL.listen(&["--unix".as_ref(), path.as_os_str()]);
    assert!(std::fs::symlink_metadata(&path).is_ok());
    assert!(listen.terminate());
    let listened = listen.finish();
    assert!(listened.status.success(), "{}", listened.stderr);
    assert!(
        std::fs::symlink_metadata(&path).is_err(),
        "its socket removed"
    );

    let listen = TOOL.listen(&["--unix".as_ref(), path.as_os_str()]);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"put here since").unwrap();
    assert!(listen.terminate());
    let listened = listen.finish();
    assert!(listened.status.success(), "{}", listened.stderr);
    assert_eq!(std::fs::read(&path).unwrap(), b"put here since");
    assert!(
        listened
            .stderr
            .contains("it is no longer the socket this listener made"),
        "{}",
        listened.stderr
    );
}

/// PEM files for a run: a CA for collectors and one for agents, a collector
/// certificate for `localhost`, and an agent certificate for `agent`.
fn pem_files(dir: &Path, agent: &str) {
    let (collectors, agents) = (certs::Ca::new("collectors"), certs::Ca::new("agents"));
    collectors.write(dir, "collectors-ca");
    agents.write(dir, "agents-ca");
    collectors.leaf("localhost", false).write(dir, "collector");
    agents.leaf(agent, false).write(dir, "agent");
}

#[test]
fn over_tls_a_certified_agent_lands_its_rows_and_a_wrong_name_is_refused_on_both_sides() {
    let dir = scratch!("cli-tls");
    // The sample's sources are labelled host=web-01.
    pem_files(&dir, "web-01");
    let file = |name: &str| dir.join(name).into_os_string();
    let tls_listen = [
        "--tls-cert".into(),
        file("collector.pem"),
        "--tls-key".into(),
        file("collector.key"),
        "--client-ca".into(),
        file("agents-ca.pem"),
        "--bind-identity".into(),
        "host".into(),
    ];
    let tls_args: Vec<&std::ffi::OsStr> = tls_listen.iter().map(|s| s.as_os_str()).collect();
    let sample = testdata("sample.dwr");
    let replay = |addr: &str, server_name: &str| {
        output(
            TOOL.command()
                .args(["replay", "--connect", addr, "--tls-ca"])
                .arg(file("collectors-ca.pem"))
                .arg("--tls-cert")
                .arg(file("agent.pem"))
                .arg("--tls-key")
                .arg(file("agent.key"))
                .args(["--server-name", server_name])
                .arg(&sample),
            b"",
        )
    };

    let served = TOOL.serve_one(&tls_args, |addr| replay(addr, "localhost"));
    let out = served.client;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = served.line;
    assert!(line.contains(" (web-01): 13 frames"), "{line}");
    assert!(line.contains("rows 4 applied 1 skipped"), "{line}");
    assert!(line.ends_with("ended cleanly"), "{line}");

    // A name the collector's certificate does not carry: one line each.
    let served = TOOL.serve_one(&tls_args, |addr| replay(addr, "collector.example"));
    let out = served.client;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("certificate not valid for name \"collector.example\""),
        "{stderr}"
    );
    let line = served.line;
    assert!(
        line.contains("refused at the TLS handshake: received fatal alert: BadCertificate"),
        "{line}"
    );
    assert!(line.contains("rows 0 applied"), "{line}");
}

#[test]
fn the_demo_runs_over_tls() {
    let out = TOOL.run(["demo", "--tls", "--seconds", "1"], b"");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("over loopback TLS 1.3"), "{stdout}");
    assert!(stdout.contains(" 0 skipped"), "{stdout}");
}

#[test]
fn plaintext_beyond_loopback_is_said_once_at_start() {
    let listen = TOOL.listen(&["--bind".as_ref(), "0.0.0.0:0".as_ref()]);
    assert!(listen.addr().starts_with("0.0.0.0:"));
    let _ = listen.terminate();
    let out = listen.finish();
    assert!(out.status.success());
    let stderr = out.stderr;
    assert_eq!(
        stderr
            .matches("any host that can reach it may write into the archive")
            .count(),
        1,
        "{stderr}"
    );
}

#[test]
fn progress_is_plain_lines_off_a_terminal_and_quiet_with_q() {
    // Not a terminal: no carriage returns, lines at a steady pace.
    let out = TOOL.run(["demo", "--seconds", "2.5"], b"");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains('\r'), "{stderr:?}");
    assert!(
        stderr
            .lines()
            .filter(|l| l.contains("rows applied"))
            .count()
            >= 2,
        "{stderr}"
    );
    // -q: no progress, no warnings; the summary still on stdout.
    let out = TOOL.run(["-q", "demo", "--seconds", "1"], b"");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("throughput"));
}

/// The agent reads Linux's /proc before it does anything else, so its
/// tests are built on Linux alone: elsewhere they are not run, rather than
/// run and passed.
#[cfg(target_os = "linux")]
mod agent {
    use super::*;

    /// The agent's arguments: sampling every `interval`, `intervals` times.
    /// Where it publishes is the test's to add.
    fn agent(interval: &str, intervals: u32) -> [String; 5] {
        [
            "agent",
            "--interval",
            interval,
            "--intervals",
            &intervals.to_string(),
        ]
        .map(String::from)
    }

    /// The agent run for `intervals` intervals of 5 ms, written to `path`.
    fn agent_to_file(intervals: u32, path: &Path) -> std::process::Output {
        output(
            TOOL.command()
                .args(agent("5ms", intervals))
                .arg("-o")
                .arg(path),
            b"",
        )
    }

    fn check_json(path: &Path) -> serde_json::Value {
        let out = TOOL.run(["check", "--json", path.to_str().unwrap()], b"");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// A loopback port with nothing listening on it.
    fn closed_port() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    }

    #[test]
    fn the_agent_records_this_machine_to_a_file_that_checks_clean() {
        let dir = scratch!("agent-file");
        let capture = dir.join("agent.dwr");
        let out = agent_to_file(20, &capture);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = check_json(&capture);
        assert_eq!(summary["sources"], 3);
        assert_eq!(summary["rows_skipped"], 0);
        assert_eq!(summary["gaps"], 0);
        // The 20 intervals: 20 Rows frames per source.
        let rows_frames =
            summary["frames"].as_u64().unwrap() - 3 - summary["index_entries"].as_u64().unwrap();
        assert_eq!(rows_frames, 60, "{summary}");
        assert!(
            summary["rows_applied"].as_u64().unwrap() >= 20 * 2,
            "{summary}"
        );

        let out = output(TOOL.command().arg("dump").arg(&capture), b"");
        let dump = String::from_utf8(out.stdout).unwrap();
        assert!(
            dump.contains("encoder\": \"dendro-wire-agent-1\""),
            "{dump}"
        );
        assert!(dump.contains("first=\"memory/meminfo\""), "{dump}");
    }

    #[test]
    fn listen_serves_an_agent_and_records_what_it_sent() {
        let dir = scratch!("listen-agent");
        let served = TOOL.serve_one(&["--record".as_ref(), dir.as_os_str()], |addr| {
            output(
                TOOL.command()
                    .args(agent("5ms", 10))
                    .args(["--connect", addr]),
                b"",
            )
        });
        let agent = served.client;
        assert!(
            agent.status.success(),
            "{}",
            String::from_utf8_lossy(&agent.stderr)
        );
        let summary = served.line;
        assert!(
            summary.starts_with("connection 0 from 127.0.0.1:"),
            "{summary}"
        );
        assert!(summary.contains("; sources 3, rows "), "{summary}");
        assert!(summary.contains(" 0 skipped"), "{summary}");
        assert!(
            summary.contains("; ended cleanly; captured in "),
            "{summary}"
        );
        assert!(summary.ends_with("connection-0.dwr"), "{summary}");

        let recorded = check_json(&dir.join("connection-0.dwr"));
        assert_eq!(recorded["sources"], 3);
        assert_eq!(
            recorded["rows_applied"].as_u64().unwrap(),
            number_after(&summary, "rows ")
        );
    }

    #[test]
    fn an_agent_that_writes_nothing_says_why_and_fails() {
        let addr = closed_port();
        let out = output(
            TOOL.command()
                .args(agent("10ms", 5))
                .args(["--connect", &addr]),
            b"",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("cannot connect to {addr}")),
            "{stderr}"
        );
        assert!(
            stderr.contains("wrote nothing in 5 interval(s)"),
            "{stderr}"
        );
        assert!(stderr.contains("wrote 0 frames (0 rows"), "{stderr}");
        assert!(!stderr.contains("deliver"), "{stderr}");
    }

    #[test]
    fn an_agent_logs_its_reconnect_and_counts_what_it_wrote() {
        let addr = closed_port();
        let agent = TOOL
            .command()
            .args(agent("20ms", 40))
            .arg("--connect")
            .arg(&addr)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The listener appears once the agent has failed for a while.
        std::thread::sleep(Duration::from_millis(300));
        let listener = std::net::TcpListener::bind(&addr).unwrap();
        let received = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut s, &mut bytes).unwrap();
            bytes.len()
        });
        let out = agent.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("cannot connect to"), "{stderr}");
        assert!(stderr.contains("connected again after"), "{stderr}");
        let bytes = received.join().unwrap();
        assert!(
            stderr.contains(" bytes) to 1 connection(s), 0 closed by the collector")
                && stderr.contains(&format!(", {bytes} bytes) to")),
            "{bytes} bytes received: {stderr}"
        );
    }

    /// An agent run for 6 intervals of 50 ms against `listen`, with
    /// `extra` arguments, which must fail: what it said, and what `listen`
    /// said once stopped.
    fn refused_agent(listen: Listening, extra: &[std::ffi::OsString]) -> (String, Listened) {
        let out = output(
            TOOL.command()
                .args(agent("50ms", 6))
                .args(["--connect", listen.addr()])
                .args(extra),
            b"",
        );
        assert!(listen.terminate());
        let listened = listen.finish();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        (stderr, listened)
    }

    /// An agent whose every connection is closed by `listen` (here at
    /// accept, every connection over a cap of none) wrote frames, but says
    /// the collector closed them, never that it delivered them, and fails.
    #[test]
    fn an_agent_whose_every_connection_the_collector_closes_says_so_and_fails() {
        let listen = TOOL.listen(&[
            "--bind".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--max-connections".as_ref(),
            "0".as_ref(),
        ]);
        let (stderr, listened) = refused_agent(listen, &[]);
        assert!(
            stderr.contains("the subscriber closed the connection"),
            "{stderr}"
        );
        let connections = number_after(&stderr, " bytes) to ");
        assert!(connections >= 1, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "the collector closed every connection ({connections} of {connections})"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("deliver"), "{stderr}");
        let summary = listened.lines.last().unwrap();
        assert!(summary.contains("0 connection(s) served"), "{summary}");
    }

    /// `replay` into a collector that closes every connection at accept
    /// wrote the capture, but fails saying the collector closed it; into
    /// one that serves it, it succeeds.
    #[test]
    fn a_replay_the_collector_refused_fails_and_one_it_served_succeeds() {
        for (cap, code) in [("0", 1), ("10", 0)] {
            let listen = TOOL.listen(&[
                "--bind".as_ref(),
                "127.0.0.1:0".as_ref(),
                "--max-connections".as_ref(),
                cap.as_ref(),
            ]);
            let out = output(
                TOOL.command()
                    .args(["replay", "--connect", listen.addr()])
                    .arg(testdata("sample.dwr")),
                b"",
            );
            assert!(listen.terminate());
            listen.finish();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(code), "cap {cap}: {stderr}");
            assert_eq!(
                stderr.contains("closed the connection"),
                code == 1,
                "cap {cap}: {stderr}"
            );
        }
    }

    /// An agent certified as another host than its sources say, against a
    /// collector binding `host`: every connection ends at its first
    /// Handshake, and the agent fails saying so.
    #[test]
    fn an_agent_refused_for_its_identity_on_every_connection_fails() {
        let dir = scratch!("agent-identity");
        pem_files(&dir, "not-this-host.example");
        let file = |name: &str| dir.join(name).into_os_string();
        let listen = TOOL.listen(&[
            "--bind".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--tls-cert".as_ref(),
            &file("collector.pem"),
            "--tls-key".as_ref(),
            &file("collector.key"),
            "--client-ca".as_ref(),
            &file("agents-ca.pem"),
            "--bind-identity".as_ref(),
            "host".as_ref(),
        ]);
        let tls = [
            "--server-name".into(),
            "localhost".into(),
            "--tls-ca".into(),
            file("collectors-ca.pem"),
            "--tls-cert".into(),
            file("agent.pem"),
            "--tls-key".into(),
            file("agent.key"),
        ];
        let (stderr, listened) = refused_agent(listen, &tls);
        assert!(
            stderr.contains("the collector closed every connection"),
            "{stderr}"
        );
        assert!(
            listened
                .lines
                .iter()
                .any(|l| l.contains(r#"claims host="#) && l.contains("rows 0 applied")),
            "{:?}",
            listened.lines
        );
    }

    /// A capture stops at `--record-max-per-connection`; the connection is
    /// served on, every row applied.
    #[test]
    fn listen_stops_a_capture_at_its_cap_and_serves_on() {
        let dir = scratch!("listen-record-cap");
        let args = [
            "--record".as_ref(),
            dir.as_os_str(),
            "--record-max-per-connection".as_ref(),
            "100B".as_ref(),
        ];
        let served = TOOL.serve_one(&args, |addr| {
            output(
                TOOL.command()
                    .args(agent("5ms", 10))
                    .args(["--connect", addr]),
                b"",
            )
        });
        assert!(served.client.status.success());
        let line = served.line;
        assert!(line.contains("ended cleanly; captured in "), "{line}");
        assert!(number_after(&line, "rows ") > 0, "{line}");
        assert_eq!(
            std::fs::metadata(dir.join("connection-0.dwr"))
                .unwrap()
                .len(),
            100
        );
        assert!(
            served
                .stderr
                .contains("recording stopped after 100 bytes in "),
            "{}",
            served.stderr
        );
    }

    /// `-o` is opened as `encode -o` opens it: through a link to a file,
    /// never through one naming nothing.
    #[test]
    fn the_agent_writes_through_a_link_and_refuses_a_dangling_one() {
        let dir = scratch!("agent-output-link");
        let (link, dangling) = (dir.join("link.dwr"), dir.join("dangling.dwr"));
        std::fs::write(dir.join("target.dwr"), b"old").unwrap();
        std::os::unix::fs::symlink("target.dwr", &link).unwrap();
        std::os::unix::fs::symlink("made.dwr", &dangling).unwrap();
        let out = agent_to_file(3, &link);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(check_json(&dir.join("target.dwr"))["sources"], 3);
        let out = agent_to_file(3, &dangling);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("which does not exist"), "{stderr}");
        assert!(!dir.join("made.dwr").exists());
    }

    #[test]
    fn the_agent_writes_its_stream_to_standard_output_with_dash() {
        let out = output(TOOL.command().args(agent("5ms", 5)).args(["-o", "-"]), b"");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!Path::new("-").exists(), "a file named -");
        let checked = TOOL.run(["check", "--json", "-"], &out.stdout);
        assert!(checked.status.success());
        let summary: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
        assert_eq!(summary["sources"], 3);
        assert_eq!(summary["rows_skipped"], 0);
    }

    #[test]
    fn verbosity_follows_v_and_rust_log() {
        // An agent that cannot connect: its failures are warnings; -v adds the
        // library's informational lines, and RUST_LOG=error keeps only errors.
        let addr = closed_port();
        let run = |args: &[&str], env: Option<&str>| {
            let mut cmd = TOOL.command();
            cmd.args(args)
                .args(agent("10ms", 3))
                .args(["--connect", &addr]);
            match env {
                Some(filter) => cmd.env("RUST_LOG", filter),
                None => cmd.env_remove("RUST_LOG"),
            };
            String::from_utf8(output(&mut cmd, b"").stderr).unwrap()
        };
        // The warning says when it tries again; the final error does not.
        let warned = |stderr: &str| stderr.contains("; trying again in ");
        let default = run(&[], None);
        assert!(warned(&default), "{default}");
        assert!(default.contains("wrote nothing"), "{default}");
        let errors_only = run(&[], Some("error"));
        assert!(!warned(&errors_only), "{errors_only}");
        assert!(errors_only.contains("wrote nothing"), "{errors_only}");
        let q = run(&["-q"], None);
        assert!(!warned(&q), "{q}");
        let verbose = run(&["-vv"], Some(""));
        assert!(warned(&verbose), "{verbose}");
    }
}
