//! The fleet's runs, each checked as it ends, and their table.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::haproxy::{self, Backend, Haproxy};
use super::process::{self, agent_lines, read_back, Fleet, FleetRun, Listener, Stopped};
use super::scale::{Scale, Tools};
use crate::metrics::free_port;

/// Rows an agent observes an interval.
const ROWS: u64 = 20;

/// How long a listener has to commit what it holds and exit after SIGTERM.
const EXIT: Duration = Duration::from_secs(180);

/// What every run found.
pub(super) struct Results {
    /// dendro's own Writer, one source, batches of 64 Ki rows: its best.
    ceiling: process::Ceiling,
    /// dendro's own Writer with Run A's shape: as many sources, 20 streams
    /// each, a row on each a second, two seconds of them a batch.
    ceiling_fleet: process::Ceiling,
    a: Into1,
    half: Into1,
    over: Into1,
    b: Failover,
    c: Storm,
}

pub(super) fn all(tools: &Tools, dir: &Path, scale: &Scale) -> Result<Results, String> {
    eprintln!("==> fleet: the ceiling, dendro's own Writer at its best: one source");
    let ceiling = process::ceiling(
        &tools.fleet,
        &dir.join("ceiling.dendro"),
        1,
        scale.ceiling_rows,
        1 << 16,
    )?;
    eprintln!("    {ceiling:?}");
    eprintln!(
        "==> fleet: dendro's own Writer with Run A's shape: {} sources",
        scale.agents_a
    );
    let second = scale.agents_a as u64 * ROWS;
    let ceiling_fleet = process::ceiling(
        &tools.fleet,
        &dir.join("ceiling-fleet.dendro"),
        scale.agents_a,
        second * scale.seconds_a as u64,
        second * 2,
    )?;
    eprintln!("    {ceiling_fleet:?}");
    eprintln!(
        "==> fleet: Run A, {} agents into one collector for {} s",
        scale.agents_a, scale.seconds_a
    );
    let a = into_one(tools, &dir.join("a"), scale.agents_a, 1000, scale.seconds_a)?;
    eprintln!("    {a:?}");
    eprintln!(
        "==> fleet: Run A with half the agents, {}",
        scale.agents_a / 2
    );
    let half = into_one(
        tools,
        &dir.join("a-half"),
        scale.agents_a / 2,
        1000,
        scale.seconds_a,
    )?;
    eprintln!("    {half:?}");
    eprintln!(
        "==> fleet: twice the rows into one collector, {} s",
        scale.seconds_over
    );
    let over = into_one(
        tools,
        &dir.join("over"),
        scale.agents_a,
        500,
        scale.seconds_over,
    )?;
    eprintln!("    {over:?}");
    eprintln!(
        "==> fleet: Run B, {} agents through HAProxy into two collectors, one stopped at {} s",
        scale.agents_b, scale.stop_b
    );
    let b = failover(tools, &dir.join("b"), scale)?;
    eprintln!("    {b:?}");
    eprintln!(
        "==> fleet: Run C, {} agents connecting within {} s",
        scale.agents_c, scale.ramp_c
    );
    let c = storm(tools, &dir.join("c"), scale)?;
    eprintln!("    {c:?}");
    Ok(Results {
        ceiling,
        ceiling_fleet,
        a,
        half,
        over,
        b,
        c,
    })
}

fn mkdir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A fleet into one collector.
#[derive(Debug)]
struct Into1 {
    agents: usize,
    seconds: f64,
    /// Rows a second the agents observe.
    offered: f64,
    /// Rows the agents wrote whole to their connections.
    written: u64,
    /// Rows the agents' machines dropped (the socket had not taken the
    /// last interval's frame) or never sent (no connection yet).
    dropped: u64,
    unsent: u64,
    /// What had been written by the moment the agents stopped, and what
    /// was committed then.
    written_at_stop: u64,
    committed_at_stop: u64,
    /// Rows committed a second over the run.
    committed_rate: f64,
    /// The longest any row waited to be committed.
    max_lag: f64,
    /// The share of the run `/ready` answered 503.
    unready: f64,
    waits: u64,
    backlog_peak: f64,
    backlog_limit: f64,
    peak_rss: u64,
    cpu: f64,
    /// Rows committed a second of dendro's writer thread's CPU.
    per_writer_cpu: f64,
    /// From SIGTERM to exit: what it still held committed.
    exit: Duration,
}

fn into_one(
    tools: &Tools,
    dir: &Path,
    agents: usize,
    interval_ms: u64,
    seconds: f64,
) -> Result<Into1, String> {
    mkdir(dir)?;
    let listener = Listener::start(
        &tools.listener,
        dir,
        "collector",
        "collector",
        None,
        &strings(&["--max-memory", "512MiB", "--receive-buffer", "16KiB"]),
    )?;
    let started = Instant::now();
    let flags = strings(&[
        "--agents",
        &agents.to_string(),
        "--interval-ms",
        &interval_ms.to_string(),
        "--seconds",
        &seconds.to_string(),
    ]);
    let fleet = Fleet::start(
        &tools.fleet,
        listener.port,
        &flags,
        &dir.join("agents.txt"),
        vec![listener.metrics_port],
    )?
    .wait()?;
    let archive = listener.archive.clone();
    let stopped = listener.stop(EXIT)?;
    let held: u64 = read_back(&tools.fleet, &[&archive])?.values().sum();
    let at_stop = fleet.at_stop.first().cloned().flatten();
    let committed_at_stop = at_stop
        .as_ref()
        .map_or(0.0, |s| s.get("archive_rows_committed_total"));
    let ran = fleet
        .stopped_at
        .map_or(seconds, |at| at.duration_since(started).as_secs_f64());
    let written = fleet.get("written") as u64;
    if held != written {
        return Err(format!(
            "the agents wrote {written} rows whole and dendro reads back {held} (see {})",
            dir.display()
        ));
    }
    let offered = agents as f64 * ROWS as f64 * 1000.0 / interval_ms as f64;
    Ok(Into1 {
        agents,
        seconds,
        offered,
        written,
        dropped: fleet.get("dropped") as u64,
        unsent: fleet.get("unsent") as u64,
        written_at_stop: fleet.written_at_stop as u64,
        committed_at_stop: committed_at_stop as u64,
        committed_rate: committed_at_stop / ran,
        max_lag: stopped.max("archive_max_lag_seconds"),
        unready: unready(&stopped),
        waits: stopped.max("archive_waits_total") as u64,
        backlog_peak: stopped.max("archive_backlog_bytes"),
        backlog_limit: stopped.max("archive_backlog_limit_bytes"),
        peak_rss: stopped.peak_rss(),
        cpu: stopped.samples.last().map_or(0.0, |s| s.cpu),
        per_writer_cpu: stopped.samples.last().map_or(0.0, |s| {
            s.get("archive_rows_committed_total") / s.writer_cpu.max(0.01)
        }),
        exit: stopped.took,
    })
}

/// The share of a listener's samples in which `/ready` was not 200.
fn unready(stopped: &Stopped) -> f64 {
    let n = stopped.samples.len().max(1) as f64;
    stopped.samples.iter().filter(|s| s.ready != 200).count() as f64 / n
}

/// Run B: two collectors behind HAProxy, one stopped and started again.
#[derive(Debug)]
struct Failover {
    agents: usize,
    observed: u64,
    committed: [u64; 2],
    dropped: u64,
    unsent: u64,
    /// Rows polled and not wholly written when their connection ended.
    lost_unwritten: u64,
    /// Rows written whole and not committed: lost at a disconnect.
    lost_written: u64,
    /// What the agents counted as in doubt at their disconnects (written
    /// within seconds of the end): the lost rows are among them.
    in_doubt: u64,
    /// Agents whose connection moved, and the connections in all.
    moved: usize,
    connections: u64,
    skipped: u64,
    refused: u64,
    /// Connections named by the agent's address, not the balancer's.
    proxied_lines: usize,
}

fn failover(tools: &Tools, dir: &Path, scale: &Scale) -> Result<Failover, String> {
    mkdir(dir)?;
    let flags = strings(&[
        "--max-memory",
        "512MiB",
        "--receive-buffer",
        "16KiB",
        "--proxy-protocol-from",
        "127.0.0.1/32",
        // Every agent is its own address: a share of two holds one agent
        // and its reconnection, and would refuse all but two if the
        // balancer's address were taken for theirs.
        "--max-connections-per-peer",
        "2",
    ]);
    let ports = [(free_port()?, free_port()?), (free_port()?, free_port()?)];
    let start = |i: usize, log: &str| {
        Listener::start(
            &tools.listener,
            dir,
            &format!("collector-{}", i + 1),
            log,
            Some(ports[i]),
            &flags,
        )
    };
    let mut first = start(0, "collector-1")?;
    let second = start(1, "collector-2")?;
    let front = free_port()?;
    let backends: Vec<Backend> = ports
        .iter()
        .map(|&(port, metrics_port)| Backend { port, metrics_port })
        .collect();
    let _balancer = Haproxy::start(dir, &haproxy::config(front, &backends), front)?;
    // Both in rotation before the first agent arrives.
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let fleet = Fleet::start(
        &tools.fleet,
        front,
        &strings(&[
            "--agents",
            &scale.agents_b.to_string(),
            "--seconds",
            &scale.seconds_b.to_string(),
        ]),
        &dir.join("agents.txt"),
        vec![],
    )?;
    sleep_until(started + Duration::from_secs_f64(scale.stop_b));
    let mut lifetimes = vec![first.stop(EXIT)?];
    sleep_until(started + Duration::from_secs_f64(scale.stop_b + scale.down_b));
    first = start(0, "collector-1-again")?;
    let fleet = fleet.wait()?;
    let archives = [first.archive.clone(), second.archive.clone()];
    lifetimes.push(first.stop(EXIT)?);
    lifetimes.push(second.stop(EXIT)?);
    account(tools, dir, scale, &fleet, &archives, &lifetimes)
}

fn sleep_until(at: Instant) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
}

/// Every row of Run B, accounted for: committed in either archive (read
/// back with dendro, by the agent's uuid), or counted by its agent as
/// dropped, unsent, or lost with a connection.
fn account(
    tools: &Tools,
    dir: &Path,
    scale: &Scale,
    fleet: &FleetRun,
    archives: &[std::path::PathBuf; 2],
    lifetimes: &[Stopped],
) -> Result<Failover, String> {
    let held: Vec<BTreeMap<String, u64>> = archives
        .iter()
        .map(|a| read_back(&tools.fleet, &[a.as_path()]))
        .collect::<Result<_, _>>()?;
    let agents = agent_lines(&dir.join("agents.txt"))?;
    let mut out = Failover {
        agents: scale.agents_b,
        observed: 0,
        committed: [0, 0],
        dropped: 0,
        unsent: 0,
        lost_unwritten: 0,
        lost_written: 0,
        in_doubt: 0,
        moved: 0,
        connections: 0,
        skipped: 0,
        refused: 0,
        proxied_lines: 0,
    };
    for agent in &agents {
        let committed = [0, 1].map(|i| held[i].get(&agent.uuid).copied().unwrap_or(0));
        let total = committed[0] + committed[1];
        if total > agent.written {
            return Err(format!(
                "agent {}: {total} rows committed, more than the {} it wrote",
                agent.uuid, agent.written
            ));
        }
        let lost = agent.written - total;
        let accounted = total + agent.dropped + agent.unsent + agent.lost_unwritten + lost;
        if accounted != agent.observed {
            return Err(format!(
                "agent {}: {} rows observed, {accounted} accounted for",
                agent.uuid, agent.observed
            ));
        }
        if lost > agent.in_doubt {
            return Err(format!(
                "agent {}: {lost} rows written and not committed, more than the {} it had \
                 written in the last moments of a connection that ended",
                agent.uuid, agent.in_doubt
            ));
        }
        out.observed += agent.observed;
        out.committed[0] += committed[0];
        out.committed[1] += committed[1];
        out.dropped += agent.dropped;
        out.unsent += agent.unsent;
        out.lost_unwritten += agent.lost_unwritten;
        out.lost_written += lost;
        out.in_doubt += agent.in_doubt;
        out.moved += usize::from(agent.connections > 1);
        out.connections += agent.connections;
    }
    if out.observed != fleet.get("observed") as u64 {
        return Err("the agents' lines and their totals disagree".into());
    }
    for life in lifetimes {
        let summary = life.line("listener:");
        out.skipped += number_before(&summary, " skipped");
        out.refused += number_before(&summary, " refused at accept");
        out.refused += life.max("connections_ended_total{reason=\"refused\"}") as u64;
    }
    for log in ["collector-1", "collector-1-again", "collector-2"] {
        let text = std::fs::read_to_string(dir.join(format!("{log}.out"))).unwrap_or_default();
        out.proxied_lines += text
            .lines()
            .filter(|l| l.contains("(via 127.0.0.1:"))
            .count();
    }
    Ok(out)
}

/// The number just before `marker` in `text`.
fn number_before(text: &str, marker: &str) -> u64 {
    text.split(marker)
        .next()
        .and_then(|before| before.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Run C: the fleet connecting within seconds.
#[derive(Debug)]
struct Storm {
    agents: usize,
    ramp: f64,
    evicted: u64,
    refused: u64,
    connections: u64,
    max_lag: f64,
}

fn storm(tools: &Tools, dir: &Path, scale: &Scale) -> Result<Storm, String> {
    mkdir(dir)?;
    // At the defaults.
    let listener = Listener::start(&tools.listener, dir, "collector", "collector", None, &[])?;
    let fleet = Fleet::start(
        &tools.fleet,
        listener.port,
        &strings(&[
            "--agents",
            &scale.agents_c.to_string(),
            "--ramp-seconds",
            &scale.ramp_c.to_string(),
            "--seconds",
            &scale.seconds_c.to_string(),
        ]),
        &dir.join("agents.txt"),
        vec![],
    )?
    .wait()?;
    let stopped = listener.stop(EXIT)?;
    Ok(Storm {
        agents: scale.agents_c,
        ramp: scale.ramp_c,
        evicted: stopped.max("connections_evicted_total") as u64,
        refused: stopped.max("connections_refused_total") as u64,
        connections: fleet.get("connections") as u64,
        max_lag: stopped.max("archive_max_lag_seconds"),
    })
}

impl fmt::Display for Results {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (one, same) = (&self.ceiling, &self.ceiling_fleet);
        writeln!(
            f,
            "dendro's own Writer, one source, batches of 64 Ki rows: {:.0} rows/s committed \
             ({:.0} a second of its thread's CPU); with Run A's {} sources, 20 streams each, two \
             seconds of rows a batch, as many rows as Run A writes: {:.0} rows/s ({:.0} a second \
             of its thread's CPU)\n",
            one.rate, one.per_writer_cpu, self.a.agents, same.rate, same.per_writer_cpu,
        )?;
        let runs = [
            ("Run A", &self.a),
            ("half the agents", &self.half),
            ("twice the rows", &self.over),
        ];
        // Three tables a reader can read (at most 8 columns each): what
        // landed, how it kept up, and what the listener cost.
        writeln!(
            f,
            "| into one collector | agents | rows/s offered | rows written | committed at the \
             fleet's stop | uncommitted then | committed rows/s |\n|---|{}",
            "---:|".repeat(6)
        )?;
        for (name, r) in runs {
            let behind = r.written_at_stop.saturating_sub(r.committed_at_stop) as f64;
            writeln!(
                f,
                "| {name} | {} | {:.0} | {} ({} dropped, {} unsent by the agents) | {} | {:.1} s \
                 of rows | {:.0} |",
                r.agents,
                r.offered,
                r.written,
                r.dropped,
                r.unsent,
                r.committed_at_stop,
                behind / r.offered,
                r.committed_rate,
            )?;
        }
        writeln!(
            f,
            "\n| keeping up | of dendro's, one source / same shape | rows a second of dendro's \
             thread, of dendro's own | largest lag | /ready 503 | connections held back | backlog \
             peak / bound |\n|---|{}",
            "---:|".repeat(6)
        )?;
        for (name, r) in runs {
            writeln!(
                f,
                "| {name} | {:.2} / {:.2} | {:.2} | {:.1} s | {:.0}% | {} waits | {:.0} / {:.0} MiB |",
                r.committed_rate / one.rate,
                r.committed_rate / same.rate,
                r.per_writer_cpu / same.per_writer_cpu,
                r.max_lag,
                r.unready * 100.0,
                r.waits,
                r.backlog_peak / f64::from(1 << 20),
                r.backlog_limit / f64::from(1 << 20),
            )?;
        }
        writeln!(
            f,
            "\n| the listener | RSS | CPU | exit after SIGTERM |\n|---|{}",
            "---:|".repeat(3)
        )?;
        for (name, r) in runs {
            writeln!(
                f,
                "| {name} | {} MiB | {:.0}% of a core | {:.1} s |",
                r.peak_rss >> 20,
                r.cpu / (r.seconds + r.exit.as_secs_f64()) * 100.0,
                r.exit.as_secs_f64(),
            )?;
        }
        let b = &self.b;
        writeln!(
            f,
            "\nRun B, {} agents through HAProxy into two collectors, the first stopped and started again: \
             {} rows observed = {} committed in the first archive + {} in the second + {} dropped + {} unsent \
             by the agents + {} lost unwritten + {} lost written at a disconnect (of {} the agents counted in doubt); \
             {} skipped; {} refused for their address; {} agents moved, {} connections; {} connection lines name the agent's address",
            b.agents,
            b.observed,
            b.committed[0],
            b.committed[1],
            b.dropped,
            b.unsent,
            b.lost_unwritten,
            b.lost_written,
            b.in_doubt,
            b.skipped,
            b.refused,
            b.moved,
            b.connections,
            b.proxied_lines,
        )?;
        let c = &self.c;
        writeln!(
            f,
            "\nRun C, {} agents connecting within {} s, at the defaults: {} evicted, {} refused, {} connections, largest lag {:.1} s",
            c.agents, c.ramp, c.evicted, c.refused, c.connections, c.max_lag
        )
    }
}
