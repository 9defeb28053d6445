//! `dendro-wire agent`: this machine's /proc, sampled every interval and
//! published.
//!
//! Three sources, each row a fixed little-endian record (all `u64` unless
//! said), its encoder named in the source's `encoder` metadata:
//!
//! - `cpu`, a stream `cpuN/ticks` per CPU: `u32` CPU number, then user,
//!   nice, system, idle, iowait, irq, softirq, steal (clock ticks,
//!   cumulative) — 68 bytes. CPUs are index slots (`cpuN` → `online`) in
//!   `cpu/slots`.
//! - `memory`, stream `memory/meminfo`: MemTotal, MemFree, MemAvailable,
//!   Buffers, Cached, SwapTotal, SwapFree (kB) — 56 bytes.
//! - `network`, a stream `net/IFACE` per interface: `u32` slot number, then
//!   rx bytes, packets, errs, drop, tx bytes, packets, errs, drop — 68
//!   bytes. Interfaces are index slots (name → `u32` slot) in `net/slots`.
//!
//! A stream per CPU and per interface, because an archive keys a row by its
//! stream and timestamp. CPUs and interfaces are those present at start.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use dendro_wire_std::send::{publish_tcp, publish_to_writer, DrainOptions};
use dendro_wire_std::{AgentConfig, AgentPublisher, SourceConfig, SourceId};

use crate::failure::Failure;
use crate::tls_args::ClientTls;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    tls: ClientTls,
    /// How often to sample: a number and a unit (e.g. 500ms, 1s, 1m).
    #[arg(long, default_value = "1s", value_parser = crate::values::parse_interval)]
    interval: Duration,
    /// Stop after this many intervals.
    #[arg(long)]
    intervals: Option<u64>,
    /// A label for every source, `KEY=VALUE`; repeatable. Each source is
    /// labelled `host` (this machine's hostname unless given here) and
    /// `source` (`cpu`, `memory`, `network`); two agents on one host are two
    /// sources each only if a label tells them apart (`--label agent=b`).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    labels: Vec<(String, String)>,
    /// Write the stream to standard output (`-o -`) even when it is a
    /// terminal.
    #[arg(long)]
    force: bool,
}

/// Where to publish: exactly one.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
struct Target {
    /// Publish to a subscriber over TCP (`host:port`).
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::values::host_port)]
    connect: Option<String>,
    /// Publish to a subscriber on a Unix socket.
    #[cfg(unix)]
    #[arg(long, conflicts_with = "tls_ca")]
    unix: Option<PathBuf>,
    /// Write the stream to a file (a capture); `-` for standard output. The
    /// file is opened as `cp` opens it (the system follows links; one
    /// naming nothing is refused) and written in place.
    #[arg(short, long, conflicts_with = "tls_ca")]
    output: Option<PathBuf>,
}

/// The one place [`Target`] names.
enum Destination<'a> {
    Tcp(&'a str),
    #[cfg(unix)]
    Unix(&'a std::path::Path),
    File(&'a std::path::Path),
}

impl Target {
    fn destination(&self) -> Result<Destination<'_>, Failure> {
        if let Some(connect) = &self.connect {
            return Ok(Destination::Tcp(connect));
        }
        #[cfg(unix)]
        if let Some(path) = &self.unix {
            return Ok(Destination::Unix(path));
        }
        match &self.output {
            Some(path) => Ok(Destination::File(path)),
            None => Err(Failure(
                "say where to publish: --connect, --unix or -o".into(),
            )),
        }
    }
}

/// How long the agent waits for its first connection before it samples
/// anyway.
const FIRST_CONNECTION_WAIT: Duration = Duration::from_secs(5);

/// `KEY=VALUE`, the key not empty and not `source` (which names each of
/// the agent's sources).
fn parse_label(s: &str) -> Result<(String, String), String> {
    let (key, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))?;
    match key {
        "" => Err(format!("{s:?} has no key before the =")),
        "source" => Err(
            "the source label is the agent's own: cpu, memory and network name its sources".into(),
        ),
        key => Ok((key.to_string(), value.to_string())),
    }
}

fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The numbers on a line of a /proc file.
fn fields(line: &str) -> impl Iterator<Item = u64> + '_ {
    line.split_whitespace().filter_map(|f| f.parse().ok())
}

struct Sources {
    cpu: SourceId,
    memory: SourceId,
    network: SourceId,
    /// Interface name → its slot number and stream.
    interfaces: BTreeMap<String, (u32, String)>,
}

fn read(path: &str) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| Failure(format!("cannot read {path}: {e}")))
}

/// The CPUs in /proc/stat, and the numbers on their lines.
fn cpus(stat: &str) -> impl Iterator<Item = (u32, &str)> {
    stat.lines().filter_map(|line| {
        let (number, ticks) = line.strip_prefix("cpu")?.split_once(' ')?;
        Some((number.parse().ok()?, ticks)) // not the aggregate "cpu" line
    })
}

/// The interfaces in /proc/net/dev, and the numbers on their lines.
fn interfaces(dev: &str) -> impl Iterator<Item = (&str, &str)> {
    dev.lines()
        .skip(2)
        .filter_map(|line| line.split_once(':').map(|(n, c)| (n.trim(), c)))
}

fn declare(
    p: &mut AgentPublisher,
    anchor: i64,
    extra: &[(String, String)],
) -> Result<Sources, Failure> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let mut labels = BTreeMap::from([("host".to_string(), host)]);
    labels.extend(extra.iter().cloned());
    let source = |name: &str| {
        let mut config = SourceConfig::new();
        config.labels = labels.clone();
        config
            .label("source", name)
            .metadata("encoder", crate::values::AGENT_ENCODER)
            .clock_anchor(anchor)
    };
    let mut cpu = source("cpu").index("cpu/slots");
    for (n, _) in cpus(&read("/proc/stat")?) {
        cpu = cpu.stream(format!("cpu{n}/ticks"));
    }
    let mut network = source("network").index("net/slots");
    let mut ifaces = BTreeMap::new();
    for (slot, (name, _)) in interfaces(&read("/proc/net/dev")?).enumerate() {
        let stream = format!("net/{name}");
        network = network.stream(stream.clone());
        ifaces.insert(name.to_string(), (slot as u32, stream));
    }
    Ok(Sources {
        cpu: p.add_source(cpu)?,
        memory: p.add_source(source("memory").stream("memory/meminfo"))?,
        network: p.add_source(network)?,
        interfaces: ifaces,
    })
}

/// One sample of everything, observed at `ts`. A CPU or interface that
/// appeared after start has no stream and is left out.
///
/// Every slot is set before any row is observed: a row observed after a
/// slot change at the `ts` of a row before it is refused, since read by
/// time it would fall under the slots before the change.
fn sample(p: &mut AgentPublisher, s: &mut Sources, ts: i64) -> Result<(), Failure> {
    let mut row = Vec::with_capacity(68);
    let mut stream = String::new();
    let stat = read("/proc/stat")?;
    let dev = read("/proc/net/dev")?;
    for (cpu, _) in cpus(&stat) {
        p.set_slot(s.cpu, format!("cpu{cpu}").as_bytes(), b"online");
    }
    for (name, _) in interfaces(&dev) {
        if let Some((slot, _)) = s.interfaces.get(name) {
            p.set_slot(s.network, name.as_bytes(), &slot.to_le_bytes());
        }
    }
    for (cpu, ticks) in cpus(&stat) {
        row.clear();
        row.extend_from_slice(&cpu.to_le_bytes());
        let mut values = fields(ticks);
        for _ in 0..8 {
            row.extend_from_slice(&values.next().unwrap_or(0).to_le_bytes());
        }
        stream.clear();
        stream.push_str(&format!("cpu{cpu}/ticks"));
        if p.observe(s.cpu, &stream, ts, 0, &row).is_err() {
            continue; // a CPU brought online after start
        }
    }

    let meminfo = read("/proc/meminfo")?;
    row.clear();
    for key in [
        "MemTotal:",
        "MemFree:",
        "MemAvailable:",
        "Buffers:",
        "Cached:",
        "SwapTotal:",
        "SwapFree:",
    ] {
        let kb = meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| fields(v).next())
            .unwrap_or(0);
        row.extend_from_slice(&kb.to_le_bytes());
    }
    p.observe(s.memory, "memory/meminfo", ts, 0, &row)?;

    for (name, counters) in interfaces(&dev) {
        let Some((slot, stream)) = s.interfaces.get(name) else {
            continue; // an interface that appeared after start
        };
        let values: Vec<u64> = fields(counters).collect();
        row.clear();
        row.extend_from_slice(&slot.to_le_bytes());
        // rx: bytes packets errs drop (0-3); tx: bytes packets errs drop (8-11)
        for i in [0, 1, 2, 3, 8, 9, 10, 11] {
            row.extend_from_slice(&values.get(i).copied().unwrap_or(0).to_le_bytes());
        }
        p.observe(s.network, stream, ts, 0, &row)?;
    }
    Ok(())
}

pub(crate) fn run(options: Args) -> Result<(), Failure> {
    let mut publisher = AgentPublisher::new(AgentConfig::default());
    let anchor = wall_ns();
    let mut sources = declare(&mut publisher, anchor, &options.labels)?;
    let queue = publisher.queue();
    // SIGINT and SIGTERM end the agent after the interval in hand, with
    // what it wrote said, as at the end of its intervals.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| Failure(format!("cannot handle signal {signal}: {e}")))?;
    }
    // The transport stops when the queue is drained, never halfway through
    // it: it has no stop flag of its own.
    let drain = DrainOptions::default();
    let transport = match options.target.destination()? {
        Destination::Tcp(connect) => {
            let addr = crate::values::resolve(connect)?;
            match options.tls.client(connect)? {
                Some((client, server_name)) => dendro_wire_std::tls::publish_tls(
                    queue.clone(),
                    addr,
                    server_name,
                    client,
                    drain,
                ),
                None => publish_tcp(queue.clone(), addr, drain),
            }
        }
        #[cfg(unix)]
        Destination::Unix(path) => {
            dendro_wire_std::send::publish_unix(queue.clone(), path.to_path_buf(), drain)
        }
        Destination::File(path) if path.as_os_str() == "-" => {
            let out = crate::terminal::binary_stdout(options.force)?;
            publish_to_writer(queue.clone(), out, drain)
        }
        Destination::File(path) => {
            let file = crate::files::open_output(path)?;
            publish_to_writer(queue.clone(), file, drain)
        }
    };
    // Rows observed before the transport's first connection are dropped:
    // wait for it (a file is open at once; a collector may be starting
    // too), but not for ever, and not past a signal.
    let waited = Instant::now();
    while !queue.wait_connected(Duration::from_millis(100)) && !stop.load(Ordering::Relaxed) {
        if waited.elapsed() >= FIRST_CONNECTION_WAIT {
            log::warn!(
                "no connection after {FIRST_CONNECTION_WAIT:?}; sampling anyway, and rows \
                 observed until one opens are dropped and counted"
            );
            break;
        }
    }

    let start = Instant::now();
    let mut n = 0u64;
    while options.intervals.is_none_or(|max| n < max) && !stop.load(Ordering::Relaxed) {
        let ts = anchor + start.elapsed().as_nanos() as i64;
        sample(&mut publisher, &mut sources, ts)?;
        publisher.end_interval();
        n += 1;
        let next = options.interval * n as u32;
        while let Some(wait) = next.checked_sub(start.elapsed()) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(wait.min(Duration::from_millis(100)));
        }
    }
    queue.close();
    let sent = transport
        .join()
        .map_err(|_| Failure("the transport thread panicked".into()))??;
    let stats = publisher.stats();
    let queued = queue.stats();
    eprintln!(
        "dendro-wire agent: {} intervals, {} rows observed; wrote {} frames ({} rows, {} bytes) \
         to {} connection(s), {} closed by the collector; dropped {} rows ({} before a \
         connection or with the queue full, {} queued for a connection that was lost)",
        stats.intervals,
        stats.rows_queued + stats.rows_dropped,
        sent.frames,
        sent.rows,
        sent.bytes,
        sent.connections,
        sent.closed_by_peer,
        stats.rows_dropped + queued.rows_discarded,
        stats.rows_dropped,
        queued.rows_discarded,
    );
    let last_error = match &sent.last_error {
        Some(e) => format!(": {e}"),
        None => String::new(),
    };
    if stats.intervals > 0 && sent.frames == 0 {
        return Err(Failure(format!(
            "wrote nothing in {} interval(s){last_error} ({} failed attempt(s) to connect)",
            stats.intervals, sent.failed_connects,
        )));
    }
    // Written is not delivered (the protocol has no acknowledgement), but a
    // collector that closed every connection did not take what they held;
    // a connection that carried no frame (one opened as the run ended) had
    // nothing for it to take or refuse.
    if sent.closed_by_peer > 0 && sent.closed_by_peer + sent.connections_empty == sent.connections {
        return Err(Failure(format!(
            "the collector closed every connection ({} of {}{}), so what was written may not \
             have been applied (the last{last_error})",
            sent.closed_by_peer,
            sent.connections,
            match sent.connections_empty {
                0 => String::new(),
                n => format!("; {n} more carried no frame"),
            },
        )));
    }
    Ok(())
}
