//! The processes a fleet run starts: `dendro-wire listen --archive` (its
//! metrics sampled twice a second, its memory and CPU read from /proc), the
//! `fleet` agents, and what each says when it ends.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::metrics::{free_port, http_get};

/// A listener's metrics at one moment, by name without the
/// `dendro_wire_` prefix.
pub(super) type Metrics = BTreeMap<String, f64>;

/// One sample of a running listener.
#[derive(Clone, Debug)]
pub(super) struct Sample {
    at: Instant,
    pub(super) metrics: Metrics,
    /// `/ready`'s status.
    pub(super) ready: u16,
    /// Resident memory, bytes.
    pub(super) rss: u64,
    /// CPU time used so far, seconds.
    pub(super) cpu: f64,
    /// Of that, dendro's writer thread's.
    pub(super) writer_cpu: f64,
}

impl Sample {
    pub(super) fn get(&self, name: &str) -> f64 {
        self.metrics.get(name).copied().unwrap_or(0.0)
    }
}

/// A running `dendro-wire listen --archive`.
pub(super) struct Listener {
    child: Child,
    pub(super) port: u16,
    pub(super) metrics_port: u16,
    /// Where its stdout goes.
    out: PathBuf,
    pub(super) archive: PathBuf,
    samples: Arc<Mutex<Vec<Sample>>>,
    stop_sampling: Arc<std::sync::atomic::AtomicBool>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

/// What a listener said and used, once stopped.
pub(super) struct Stopped {
    /// Its stdout's last lines: the archive's report and the summary.
    pub(super) report: Vec<String>,
    /// Its samples, the last one taken as it was told to stop.
    pub(super) samples: Vec<Sample>,
    /// From SIGTERM to its exit.
    pub(super) took: Duration,
}

impl Stopped {
    pub(super) fn peak_rss(&self) -> u64 {
        self.samples.iter().map(|s| s.rss).max().unwrap_or(0)
    }

    pub(super) fn max(&self, name: &str) -> f64 {
        self.samples.iter().map(|s| s.get(name)).fold(0.0, f64::max)
    }

    /// The report's line that starts with `prefix`, trimmed.
    pub(super) fn line(&self, prefix: &str) -> String {
        self.report
            .iter()
            .find(|l| l.trim_start().starts_with(prefix))
            .map(|l| l.trim().to_string())
            .unwrap_or_default()
    }
}

impl Listener {
    /// Start `tool listen` on loopback (on `ports`, the stream's and the
    /// metrics', or free ones), landing in `dir/archive.dendro` (kept if it
    /// is there: a restart reopens it), its output in `dir/log.out` and
    /// `.err`, with `flags` besides.
    pub(super) fn start(
        tool: &Path,
        dir: &Path,
        archive: &str,
        log: &str,
        ports: Option<(u16, u16)>,
        flags: &[String],
    ) -> Result<Listener, String> {
        let (port, metrics_port) = match ports {
            Some(ports) => ports,
            None => (free_port()?, free_port()?),
        };
        let name = log;
        let archive = dir.join(format!("{archive}.dendro"));
        let out = dir.join(format!("{log}.out"));
        let stdout = create(&out)?;
        let stderr = create(&dir.join(format!("{log}.err")))?;
        let child = Command::new(tool)
            .args(["-q", "listen", "--bind"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--metrics")
            .arg(format!("127.0.0.1:{metrics_port}"))
            .arg("--archive")
            .arg(&archive)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", tool.display()))?;
        let mut listener = Listener {
            child,
            port,
            metrics_port,
            out,
            archive,
            samples: Arc::default(),
            stop_sampling: Arc::default(),
            sampler: None,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while listener.sample().is_none() {
            if Instant::now() > deadline {
                return Err(format!(
                    "{name}: the listener did not answer on its metrics port"
                ));
            }
            if let Ok(Some(status)) = listener.child.try_wait() {
                return Err(format!("{name}: the listener exited at start: {status}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        listener.start_sampling();
        Ok(listener)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The metrics, `/ready` and /proc figures now, if it answers.
    pub(super) fn sample(&self) -> Option<Sample> {
        sample(self.metrics_port, self.pid())
    }

    fn start_sampling(&mut self) {
        let (port, pid) = (self.metrics_port, self.pid());
        let (samples, stop) = (self.samples.clone(), self.stop_sampling.clone());
        self.sampler = Some(std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(s) = sample(port, pid) {
                    samples.lock().unwrap_or_else(|e| e.into_inner()).push(s);
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }));
    }

    /// Stop it with SIGTERM (the last sample taken first) and wait for it
    /// to exit, for at most `within`.
    pub(super) fn stop(mut self, within: Duration) -> Result<Stopped, String> {
        if let Some(s) = self.sample() {
            self.samples
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(s);
        }
        self.stop_sampling
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
        let started = Instant::now();
        signal(self.pid(), "TERM");
        let status = loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                break status;
            }
            if started.elapsed() > within {
                let _ = self.child.kill();
                return Err(format!(
                    "the listener did not exit within {within:?} of SIGTERM (see {})",
                    self.out.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = started.elapsed();
        if !status.success() {
            return Err(format!(
                "the listener exited with {status} after SIGTERM (see {})",
                self.out.display()
            ));
        }
        let out = std::fs::read_to_string(&self.out).map_err(|e| e.to_string())?;
        // Its last lines: the archive's report, then the summary (the lines
        // before them are one per connection).
        let lines: Vec<String> = out.lines().map(str::to_string).collect();
        let from = lines
            .iter()
            .rposition(|l| l.starts_with("archive "))
            .unwrap_or(lines.len().saturating_sub(1));
        let samples = std::mem::take(&mut *self.samples.lock().unwrap_or_else(|e| e.into_inner()));
        write_samples(&self.out.with_extension("samples.csv"), &samples)?;
        Ok(Stopped {
            report: lines[from..].to_vec(),
            samples,
            took,
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn create(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Send `signal` (TERM, KILL) to process `pid`.
pub(super) fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
}

fn sample(metrics_port: u16, pid: u32) -> Option<Sample> {
    let addr = format!("127.0.0.1:{metrics_port}");
    let (status, body) = http_get(&addr, "/metrics").ok()?;
    if status != 200 {
        return None;
    }
    let mut metrics = Metrics::new();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        if let Some((name, value)) = line.rsplit_once(' ') {
            if let (Some(name), Ok(value)) = (name.strip_prefix("dendro_wire_"), value.parse()) {
                metrics.insert(name.to_string(), value);
            }
        }
    }
    let ready = http_get(&addr, "/ready").map(|(s, _)| s).unwrap_or(0);
    let (rss, cpu) = proc_usage(pid);
    Some(Sample {
        at: Instant::now(),
        metrics,
        ready,
        rss,
        cpu,
        writer_cpu: thread_cpu(pid, "dendro-writer"),
    })
}

/// The CPU seconds the threads of process `pid` named `name` have used.
fn thread_cpu(pid: u32, name: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .filter(|stat| {
            stat.rsplit_once(')')
                .and_then(|(head, _)| head.rsplit_once('('))
                .is_some_and(|(_, comm)| comm == name)
        })
        .map(|stat| stat_cpu(&stat))
        .sum()
}

/// The CPU seconds (user and system) a `/proc/.../stat` line says.
fn stat_cpu(stat: &str) -> f64 {
    // After the command's parenthesized name: utime and stime are the
    // 12th and 13th fields, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Process `pid`'s resident memory (bytes) and CPU time (seconds).
fn proc_usage(pid: u32) -> (u64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    (rss, stat_cpu(&stat))
}

/// What a `fleet agents` run says: its `key value` pairs, from its last
/// line, and the moment it stopped observing with what it had written by
/// then.
#[derive(Debug, Default)]
pub(super) struct FleetRun {
    pub(super) totals: BTreeMap<String, f64>,
    /// When the agents stopped observing.
    pub(super) stopped_at: Option<Instant>,
    /// Rows written whole by then.
    pub(super) written_at_stop: f64,
    /// The listeners' samples taken the moment the agents stopped.
    pub(super) at_stop: Vec<Option<Sample>>,
}

impl FleetRun {
    pub(super) fn get(&self, key: &str) -> f64 {
        self.totals.get(key).copied().unwrap_or(0.0)
    }
}

/// The agents, running: `fleet agents` with `flags`, its per-agent counts
/// written to `out`.
pub(super) struct Fleet {
    child: Child,
    reader: std::thread::JoinHandle<FleetRun>,
}

impl Fleet {
    /// Start `fleet agents` against `target` with `flags`; `at_stop` is
    /// sampled (the listeners' metrics) the moment the agents stop
    /// observing.
    pub(super) fn start(
        bin: &Path,
        target: u16,
        flags: &[String],
        out: &Path,
        at_stop: Vec<u16>,
    ) -> Result<Fleet, String> {
        let mut child = Command::new(bin)
            .arg("agents")
            .arg("--target")
            .arg(format!("127.0.0.1:{target}"))
            .args(flags)
            .arg("--out")
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let stdout = child.stdout.take().ok_or("the fleet's stdout")?;
        let reader = std::thread::spawn(move || {
            let mut run = FleetRun::default();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(written) = line.strip_prefix("stopping written ") {
                    run.stopped_at = Some(Instant::now());
                    run.written_at_stop = written.trim().parse().unwrap_or(0.0);
                    run.at_stop = at_stop.iter().map(|&port| sample(port, 0)).collect();
                } else if let Some(rest) = line.strip_prefix("agents ") {
                    run.totals = pairs(&format!("agents {rest}"));
                }
            }
            run
        });
        Ok(Fleet { child, reader })
    }

    /// Wait for the agents to finish: what they did.
    pub(super) fn wait(mut self) -> Result<FleetRun, String> {
        let status = self.child.wait().map_err(|e| e.to_string())?;
        let run = self
            .reader
            .join()
            .map_err(|_| "the fleet's reader panicked")?;
        if !status.success() || run.totals.is_empty() {
            return Err(format!("the fleet failed: {status}"));
        }
        Ok(run)
    }
}

/// `key value key value ...` as a map.
fn pairs(line: &str) -> BTreeMap<String, f64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .chunks(2)
        .filter_map(|kv| match kv {
            [k, v] => v.parse().ok().map(|v| (k.to_string(), v)),
            _ => None,
        })
        .collect()
}

/// `fleet ceiling` at `path`: dendro's own Writer over `sources` sources,
/// `rows` rows in batches of `batch`; rows a second committed.
pub(super) fn ceiling(
    bin: &Path,
    path: &Path,
    sources: usize,
    rows: u64,
    batch: u64,
) -> Result<Ceiling, String> {
    let text = output(
        Command::new(bin)
            .args(["ceiling", "--path"])
            .arg(path)
            .args(["--rows", &rows.to_string()])
            .args(["--batch", &batch.to_string()])
            .args(["--sources", &sources.to_string()]),
    )?;
    let said = pairs(text.trim_start_matches("ceiling "));
    match (
        said.get("rows"),
        said.get("rows_per_second"),
        said.get("writer_cpu"),
    ) {
        (Some(&rows), Some(&rate), Some(&cpu)) => Ok(Ceiling {
            rate,
            per_writer_cpu: rows / cpu.max(0.01),
        }),
        _ => Err(format!("fleet ceiling said {text:?}")),
    }
}

/// dendro's own Writer with nothing between.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ceiling {
    /// Rows a second committed.
    pub(super) rate: f64,
    /// Rows committed a second of its writer thread's CPU.
    pub(super) per_writer_cpu: f64,
}

/// What `command` (the fleet, told what to do) prints, or what it said
/// as it failed.
fn output(command: &mut Command) -> Result<String, String> {
    let out = command.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Each source uuid's rows over `archives`, read back with dendro.
pub(super) fn read_back(bin: &Path, archives: &[&Path]) -> Result<BTreeMap<String, u64>, String> {
    Ok(output(Command::new(bin).arg("read").args(archives))?
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect())
}

/// One agent's line in the per-agent file: `index uuid observed sent
/// written dropped unsent lost_unwritten in_doubt connections clean`.
#[derive(Debug, Default, Clone)]
pub(super) struct AgentLine {
    pub(super) uuid: String,
    pub(super) observed: u64,
    pub(super) written: u64,
    pub(super) dropped: u64,
    pub(super) unsent: u64,
    pub(super) lost_unwritten: u64,
    pub(super) in_doubt: u64,
    pub(super) connections: u64,
}

pub(super) fn agent_lines(path: &Path) -> Result<Vec<AgentLine>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| w.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
            if w.len() < 11 {
                return Err(format!("{}: a short line {l:?}", path.display()));
            }
            Ok(AgentLine {
                uuid: w[1].to_string(),
                observed: n(2),
                written: n(4),
                dropped: n(5),
                unsent: n(6),
                lost_unwritten: n(7),
                in_doubt: n(8),
                connections: n(9),
            })
        })
        .collect()
}

/// A listener's samples as CSV, for a look at how a run went.
fn write_samples(path: &Path, samples: &[Sample]) -> Result<(), String> {
    let Some(first) = samples.first() else {
        return Ok(());
    };
    let mut csv = String::from(
        "seconds,rows_applied,rows_committed,pending_rows,lag_seconds,ready,connections_waiting,rss_mib,cpu_seconds\n",
    );
    for s in samples {
        csv.push_str(&format!(
            "{:.1},{},{},{},{:.2},{},{},{},{:.1}\n",
            s.at.duration_since(first.at).as_secs_f64(),
            s.get("rows_applied_total"),
            s.get("archive_rows_committed_total"),
            s.get("archive_pending_rows"),
            s.get("archive_lag_seconds"),
            s.ready,
            s.get("archive_connections_waiting"),
            s.rss >> 20,
            s.cpu,
        ));
    }
    std::fs::write(path, csv).map_err(|e| format!("{}: {e}", path.display()))
}
