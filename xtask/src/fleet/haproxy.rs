//! HAProxy in front of collectors, as Run B deploys it: TCP mode, each
//! agent kept on one collector by its address (`balance source`), the
//! agent's address passed on in a PROXY v2 header, and collectors taken out
//! of rotation by their `/ready`. The configuration written here is the one
//! the book's "Running a fleet" shows.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A collector behind the balancer: its stream port and its metrics port.
pub(super) struct Backend {
    pub(super) port: u16,
    pub(super) metrics_port: u16,
}

/// The configuration for a balancer on `front` before `backends`.
pub(super) fn config(front: u16, backends: &[Backend]) -> String {
    let mut cfg = format!(
        "\
global
    # Two sockets a connection, within the 20,000 descriptors a process has here.
    maxconn 9000

defaults
    mode tcp
    timeout connect 2s
    # An agent sends a frame every interval: idle longer than this is dead.
    timeout client 60s
    timeout server 60s
    # A collector that closes its side (it is stopping) closes the agent's.
    timeout client-fin 5s
    timeout server-fin 5s
    # A connection to a collector that is gone goes to another.
    retries 3
    option redispatch

frontend agents
    bind 127.0.0.1:{front}
    default_backend collectors

backend collectors
    # Each agent on one collector, by its address; only a collector's
    # own agents move when it goes.
    balance source
    hash-type consistent
    # Out of rotation while stopping, or while its archive is behind.
    option httpchk GET /ready
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2 send-proxy-v2
"
    );
    for (i, b) in backends.iter().enumerate() {
        cfg.push_str(&format!(
            "    server collector-{} 127.0.0.1:{} check port {}\n",
            i + 1,
            b.port,
            b.metrics_port
        ));
    }
    cfg
}

/// A running HAProxy.
pub(super) struct Haproxy {
    child: Child,
}

impl Haproxy {
    /// Start HAProxy in the foreground with `config`, written to `dir`.
    pub(super) fn start(dir: &Path, config: &str, front: u16) -> Result<Haproxy, String> {
        let path: PathBuf = dir.join("haproxy.cfg");
        std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
        let check = Command::new("haproxy")
            .arg("-c")
            .arg("-f")
            .arg(&path)
            .output()
            .map_err(|e| format!("haproxy: {e}"))?;
        if !check.status.success() {
            return Err(format!(
                "haproxy refused its configuration: {}",
                String::from_utf8_lossy(&check.stderr)
            ));
        }
        let log = std::fs::File::create(dir.join("haproxy.log")).map_err(|e| e.to_string())?;
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start haproxy: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", front)).is_err() {
            if Instant::now() > deadline {
                return Err("haproxy did not listen within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Haproxy { child })
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
