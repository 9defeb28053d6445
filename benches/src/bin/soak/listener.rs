//! The soak's `dendro-wire listen`: started as its own process, its output
//! collected as it comes, and, once stopped, how its connections ended.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};

/// A `dendro-wire listen` process, its output collected as it comes.
pub(crate) struct Listener {
    child: Child,
    pub(crate) addr: SocketAddr,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    /// Whether its stdout is read yet.
    gate: Arc<(Mutex<bool>, Condvar)>,
    /// Where its metrics are served, once read from its stdout.
    metrics: std::sync::OnceLock<SocketAddr>,
}

impl Listener {
    pub(crate) fn start(bin: &Path, extra: &[&str]) -> Listener {
        Listener::start_reading(bin, extra, true)
    }

    /// [`start`](Self::start), its stdout read only once `read` is called
    /// (or at [`stop`](Self::stop)) if `reading` is false: a reader that
    /// does not keep up.
    pub(crate) fn start_reading(bin: &Path, extra: &[&str], reading: bool) -> Listener {
        // As many descriptors as the system allows this process.
        let script = format!(
            "ulimit -n \"$(ulimit -Hn)\" && exec \"$0\" listen --bind 127.0.0.1:0 {}",
            extra.join(" ")
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .arg(bin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dendro-wire listen");
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = out.next().expect("a first line").expect("stdout");
        let addr = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{first}"))
            .parse()
            .unwrap();
        let stdout: Arc<Mutex<Vec<String>>> = Arc::default();
        let stderr: Arc<Mutex<Vec<String>>> = Arc::default();
        let mut readers = Vec::new();
        let gate: Arc<(Mutex<bool>, Condvar)> = Arc::new((Mutex::new(reading), Condvar::new()));
        {
            let (stdout, gate) = (stdout.clone(), gate.clone());
            readers.push(std::thread::spawn(move || {
                let (open, opened) = &*gate;
                let mut reading = open.lock().unwrap();
                while !*reading {
                    reading = opened.wait(reading).unwrap();
                }
                drop(reading);
                for line in out.map_while(Result::ok) {
                    stdout.lock().unwrap().push(line);
                }
            }));
        }
        {
            let stderr = stderr.clone();
            let err = BufReader::new(child.stderr.take().unwrap()).lines();
            readers.push(std::thread::spawn(move || {
                for line in err.map_while(Result::ok) {
                    stderr.lock().unwrap().push(line);
                }
            }));
        }
        Listener {
            child,
            addr,
            stdout,
            stderr,
            readers,
            gate,
            metrics: std::sync::OnceLock::new(),
        }
    }

    /// Where its metrics are served: started with `--metrics 127.0.0.1:0`,
    /// it says so in its second line.
    pub(crate) fn metrics_at(&self) -> SocketAddr {
        *self.metrics.get_or_init(|| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let said = self.stdout.lock().unwrap().iter().find_map(|l| {
                    l.strip_prefix("metrics on http://")
                        .and_then(|a| a.strip_suffix("/metrics"))
                        .and_then(|a| a.parse().ok())
                });
                if let Some(at) = said {
                    return at;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the listener serves no metrics"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        })
    }

    /// Start reading its stdout.
    pub(crate) fn read(&self) {
        *self.gate.0.lock().unwrap() = true;
        self.gate.1.notify_all();
    }

    pub(crate) fn status(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Peak resident memory so far, in bytes.
    pub(crate) fn peak_rss(&self) -> u64 {
        self.status("VmHWM:") * 1024
    }

    pub(crate) fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// SIGTERM, then what it said: whether it exited 0, its summary, and the
    /// connections' endings tallied by reason.
    pub(crate) fn stop(mut self) -> Stopped {
        let peak_rss = self.peak_rss();
        self.read();
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("wait for the listener");
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let stdout = std::mem::take(&mut *self.stdout.lock().unwrap());
        let stderr = std::mem::take(&mut *self.stderr.lock().unwrap());
        let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
        let mut rows_applied = 0;
        for line in &stdout {
            // Ends of connections that opened no source, a summary a second.
            if let Some((_, each)) = line.split_once(" without opening a source: ") {
                for counted in each.split(", ") {
                    if let Some((n, why)) = counted.split_once(' ') {
                        *reasons.entry(why.to_string()).or_default() += n.parse().unwrap_or(0);
                    }
                }
            }
            if line.starts_with("connection ") {
                *reasons.entry(reason(line).to_string()).or_default() += 1;
                rows_applied += number_after(line, "; sources ")
                    .and_then(|_| number_after(line, ", rows "))
                    .unwrap_or(0);
            }
        }
        let summary = stdout
            .iter()
            .find(|l| l.starts_with("listener: "))
            .cloned()
            .unwrap_or_default();
        if let Some(refused) = number_after(&summary, "), ") {
            if refused > 0 {
                reasons.insert("closed at once: over a cap".into(), refused);
            }
        }
        let clean_exit = status.success() && !stderr.iter().any(|l| l.contains("panicked"));
        if !clean_exit {
            eprintln!("listener: {status}");
            for line in stderr.iter().rev().take(20) {
                eprintln!("  {line}");
            }
        }
        Stopped {
            clean_exit,
            peak_rss,
            reasons,
            rows_applied,
        }
    }
}

impl Stopped {
    /// How its connections ended: the count for each reason.
    pub(crate) fn why(&self) -> String {
        self.reasons
            .iter()
            .map(|(why, n)| format!("{n} {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

pub(crate) struct Stopped {
    pub(crate) clean_exit: bool,
    pub(crate) peak_rss: u64,
    pub(crate) reasons: BTreeMap<String, u64>,
    pub(crate) rows_applied: u64,
}

fn reason(line: &str) -> &'static str {
    // In the words the listener's summaries use for the same reasons.
    const REASONS: &[(&str, &str)] = &[
        ("ended cleanly", "ended cleanly"),
        ("the idle timeout", "idle timeout"),
        ("the frame timeout", "frame timeout"),
        ("the handshake timeout", "handshake timeout"),
        (
            "closed to admit a newer connection",
            "evicted for a newer connection",
        ),
        ("the server shut down", "shut down"),
        (
            "not a dendro replication stream",
            "not a dendro replication stream",
        ),
        ("the stream ends inside", "cut off inside a frame"),
        ("memory budget", "over the memory budget"),
        ("the transport failed", "failed in transport"),
    ];
    REASONS
        .iter()
        .find(|(needle, _)| line.contains(needle))
        .map_or("other", |(_, reason)| reason)
}

fn number_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}
