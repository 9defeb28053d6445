//! How `dendro-wire agent` ends, over TCP, TLS and a Unix socket: a clean
//! run against a collector that stays up exits 0, and one whose collector
//! stopped while the agent still had frames to send exits 1, saying so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use dendro_wire_test_support::process::{wait, Listening, Tool};
use dendro_wire_test_support::{certs, scratch};

const TOOL: Tool = Tool::new(env!("CARGO_BIN_EXE_dendro-wire"));

#[derive(Clone, Copy, Debug)]
enum Over {
    Tcp,
    Tls,
    #[cfg(unix)]
    Unix,
}

/// A collector and the agent's way to it, in `dir`.
struct Setup {
    over: Over,
    dir: PathBuf,
}

impl Setup {
    fn new(over: Over, dir: PathBuf) -> Setup {
        if let Over::Tls = over {
            let (collectors, agents) = (certs::Ca::new("collectors"), certs::Ca::new("agents"));
            collectors.write(&dir, "collectors-ca");
            agents.write(&dir, "agents-ca");
            collectors.leaf("localhost", false).write(&dir, "collector");
            agents.leaf("agent", false).write(&dir, "agent");
        }
        Setup { over, dir }
    }

    fn file(&self, name: &str) -> OsString {
        self.dir.join(name).into_os_string()
    }

    /// `listen`, with `extra` arguments.
    fn listen(&self, extra: &[&str]) -> Listening {
        let mut args: Vec<OsString> = match self.over {
            Over::Tcp => vec!["--bind".into(), "127.0.0.1:0".into()],
            Over::Tls => vec![
                "--bind".into(),
                "127.0.0.1:0".into(),
                "--tls-cert".into(),
                self.file("collector.pem"),
                "--tls-key".into(),
                self.file("collector.key"),
                "--client-ca".into(),
                self.file("agents-ca.pem"),
            ],
            #[cfg(unix)]
            Over::Unix => vec!["--unix".into(), self.file("collector.sock")],
        };
        args.extend(extra.iter().map(OsString::from));
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        TOOL.listen(&args)
    }

    /// The agent, sampling every `interval` for `intervals` intervals, to
    /// the collector listening at `addr`; started, not waited for.
    fn agent(&self, addr: &str, interval: &str, intervals: u32) -> std::process::Child {
        let mut cmd = TOOL.command();
        cmd.args(["agent", "--interval", interval, "--intervals"])
            .arg(intervals.to_string());
        match self.over {
            Over::Tcp => {
                cmd.args(["--connect", addr]);
            }
            Over::Tls => {
                cmd.args(["--connect", addr, "--server-name", "localhost"])
                    .arg("--tls-ca")
                    .arg(self.file("collectors-ca.pem"))
                    .arg("--tls-cert")
                    .arg(self.file("agent.pem"))
                    .arg("--tls-key")
                    .arg(self.file("agent.key"));
            }
            #[cfg(unix)]
            Over::Unix => {
                let path = addr.strip_prefix("unix:").unwrap_or(addr);
                cmd.arg("--unix").arg(path);
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// The child's exit and standard error.
fn finished(mut child: std::process::Child) -> Output {
    let mut stderr = child.stderr.take().unwrap();
    let read = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut bytes).unwrap();
        bytes
    });
    let status = wait(&mut child);
    Output {
        status,
        stdout: Vec::new(),
        stderr: read.join().unwrap(),
    }
}

/// The agent's summary line.
fn summary(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.starts_with("dendro-wire agent: "))
        .unwrap_or_else(|| panic!("no summary in {stderr}"))
}

/// A clean run: the collector serves the agent's one connection to its end.
fn clean_run(over: Over, dir: &Path) {
    let setup = Setup::new(over, dir.to_path_buf());
    let mut listen = setup.listen(&["--connections", "1"]);
    let agent = setup.agent(listen.addr(), "10ms", 20);
    let out = finished(agent);
    let line = listen.next_line();
    let listened = listen.finish();
    assert!(listened.status.success(), "{}", listened.stderr);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{over:?}: {stderr}");
    assert!(line.ends_with("ended cleanly"), "{over:?}: {line}");
    assert!(line.contains(" 0 skipped"), "{over:?}: {line}");
    let said = summary(&stderr);
    assert!(said.contains("20 intervals"), "{over:?}: {said}");
    assert!(
        said.contains(" to 1 connection(s), 0 closed by the collector;"),
        "{over:?}: {said}"
    );
    assert!(
        !stderr.contains("closed every connection"),
        "{over:?}: {stderr}"
    );
    assert!(
        !stderr.contains("closed the connection"),
        "{over:?}: {stderr}"
    );
}

/// The collector stops while the agent still has intervals to send: the
/// agent says so, and fails.
fn collector_stops_first(over: Over, dir: &Path) {
    let setup = Setup::new(over, dir.to_path_buf());
    let mut listen = setup.listen(&["--metrics", "127.0.0.1:0"]);
    let metrics = listen.next_line();
    let metrics = metrics
        .strip_prefix("metrics on http://")
        .and_then(|m| m.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{metrics}"))
        .to_string();
    let agent = setup.agent(listen.addr(), "25ms", 200);
    // Until the collector has taken rows from the agent.
    let deadline = Instant::now() + Duration::from_secs(30);
    while scrape(&metrics, "dendro_wire_rows_applied_total") == 0 {
        assert!(Instant::now() < deadline, "{over:?}: no rows applied");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(listen.terminate());
    let listened = listen.finish();
    assert!(listened.status.success(), "{}", listened.stderr);
    let out = finished(agent);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{over:?}: {stderr}");
    let said = summary(&stderr);
    assert!(said.contains("200 intervals"), "{over:?}: {said}");
    assert!(
        said.contains(" to 1 connection(s), 1 closed by the collector;"),
        "{over:?}: {said}"
    );
    assert!(
        stderr.contains("the collector closed every connection (1 of 1)"),
        "{over:?}: {stderr}"
    );
}

/// The value of the sample `name` at the metrics endpoint `addr`.
fn scrape(addr: &str, name: &str) -> u64 {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let request = format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    std::io::Write::write_all(&mut s, request.as_bytes()).unwrap();
    let mut body = String::new();
    std::io::Read::read_to_string(&mut s, &mut body).unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_clean_run_over_tcp_exits_0() {
    clean_run(Over::Tcp, &scratch!("agent-end-tcp"));
}

#[test]
fn a_clean_run_over_tls_exits_0() {
    clean_run(Over::Tls, &scratch!("agent-end-tls"));
}

#[cfg(unix)]
#[test]
fn a_clean_run_over_a_unix_socket_exits_0() {
    clean_run(Over::Unix, &scratch!("agent-end-unix"));
}

#[test]
fn a_collector_that_stops_first_over_tcp_fails_the_agent() {
    collector_stops_first(Over::Tcp, &scratch!("agent-stop-tcp"));
}

#[test]
fn a_collector_that_stops_first_over_tls_fails_the_agent() {
    collector_stops_first(Over::Tls, &scratch!("agent-stop-tls"));
}

#[cfg(unix)]
#[test]
fn a_collector_that_stops_first_over_a_unix_socket_fails_the_agent() {
    collector_stops_first(Over::Unix, &scratch!("agent-stop-unix"));
}
