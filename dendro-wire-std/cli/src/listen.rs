//! `dendro-wire listen`: accept publishers, apply their streams, show live
//! per-connection counts, and say how each connection ended.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dendro_wire_std::receive::{ConnectionInfo, Listener, Server, ServerConfig};
use dendro_wire_std::{CountingSink, LineQueue, Sink, Tally};

use crate::ended::EndLines;
use crate::failure::Failure;
use crate::metrics::Metrics;
use crate::progress::Progress;
use crate::tls_args::ServerTls;

mod sizing;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    on: ListenOn,
    /// The Unix socket's permissions, in octal (600: only its owner may
    /// connect).
    #[arg(long, value_name = "MODE", default_value = "600", value_parser = parse_mode, conflicts_with = "bind")]
    unix_mode: u32,
    /// On a Unix socket, allow only peers with this user id (checked against
    /// the peer's credentials); give it once per user.
    #[arg(
        long = "allow-uid",
        value_name = "UID",
        requires = "unix",
        conflicts_with = "bind"
    )]
    allow_uid: Vec<u32>,
    #[command(flatten)]
    tls: ServerTls,
    /// A load balancer's network (e.g. 10.0.0.0/8, or one address): a
    /// connection from it must begin with a PROXY protocol header (v1 or
    /// v2), and the client it names is the peer for the per-address cap,
    /// the logs and the counts; a header from any other address is
    /// refused. Give it once per network.
    #[arg(long, value_name = "CIDR", conflicts_with = "unix")]
    proxy_protocol_from: Vec<dendro_wire_std::receive::proxy::Cidr>,
    /// Also capture each connection's bytes to DIR/connection-N.dwr, made
    /// once its first whole frame has arrived.
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// The most bytes DIR may hold, what is there at start counted (e.g.
    /// 1GiB); past it, captures stop, each with a line, and connections are
    /// served on.
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = crate::values::parse_size, requires = "record")]
    record_max: usize,
    /// The most bytes one connection's capture may hold; past it, its
    /// recording stops with a line and it is served on.
    #[arg(long, value_name = "BYTES", default_value = "64MiB", value_parser = crate::values::parse_size, requires = "record")]
    record_max_per_connection: usize,
    /// Land what arrives in a dendro archive at this path.
    #[cfg(feature = "archive")]
    #[arg(long)]
    archive: Option<PathBuf>,
    /// Without the feature, the flag is answered with the feature's name.
    #[cfg(not(feature = "archive"))]
    #[arg(long, hide = true, value_parser = crate::values::archive_not_built)]
    #[allow(dead_code)]
    archive: Option<PathBuf>,
    #[cfg(feature = "archive")]
    #[command(flatten)]
    archive_args: crate::archive::ArchiveArgs,
    /// Serve the listener's counts at http://ADDR/metrics (Prometheus text
    /// format) and readiness at /ready (200, then 503 once stopping).
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::values::host_port)]
    metrics: Option<String>,
    /// Exit once this many connections have ended, with a summary.
    #[arg(long)]
    connections: Option<u64>,
    /// The most sources one connection may open.
    #[arg(long, default_value_t = 256)]
    max_sources: usize,
    /// Connections served at once; one more takes the place of the one that
    /// gives least (yet to open a source past its grace; else, with a
    /// source, the one that delivered no rows for longest, past the grace;
    /// else one within its grace from the address holding the most), or,
    /// if none may go, is closed as soon as it is accepted.
    #[arg(long, default_value_t = 10_000)]
    max_connections: usize,
    /// Of those, connections that have not yet opened a source (sent a
    /// valid Handshake); when either cap is reached, the oldest such
    /// connection that has had its --eviction-grace is closed to admit the
    /// new one (while each is within it, the new one is admitted anyway).
    #[arg(long, default_value_t = 1_000)]
    max_unopened_connections: usize,
    /// How long a new connection has to open a source, and a connection
    /// with a source to deliver rows, before it may be closed to make room
    /// for another (keep it above the agents' interval).
    #[arg(long, default_value = "2s", value_parser = crate::values::parse_duration)]
    eviction_grace: Duration,
    /// Connections served at once from one remote address; one more takes
    /// the place of the one of its connections that gives least (opened
    /// nothing, or delivered no rows, within the grace), or is closed at
    /// once.
    #[arg(long, default_value_t = 256)]
    max_connections_per_peer: usize,
    /// End a connection that has not opened a source this long after it
    /// was accepted, its TLS handshake included.
    #[arg(long, default_value = "5s", value_parser = crate::values::parse_duration)]
    handshake_timeout: Duration,
    /// Memory all connections may hold together (e.g. 256MiB, 1GiB): their
    /// buffers and state (idle, 8 KiB each; 17 KiB under TLS), said at start
    /// if it holds fewer than --max-connections; a frame that would cross
    /// it, or a connection's share of it, ends its connection. With --archive, a
    /// quarter of it is what may be handed to the archive and not yet
    /// committed: past that, connections are not read until commits make
    /// room.
    #[arg(long, default_value = "256MiB", value_parser = crate::values::parse_size)]
    max_memory: usize,
    /// The kernel's receive buffer for each TCP connection (SO_RCVBUF, e.g.
    /// 16KiB; default: the system's, which grows with a connection's rate).
    /// What an agent sends while its connection is not read waits there:
    /// for a fleet of small agents, keep it to a few seconds of theirs, so
    /// that a collector behind pushes back on them within seconds.
    #[arg(long, value_name = "BYTES", value_parser = crate::values::parse_size)]
    receive_buffer: Option<usize>,
    /// End a connection that sends no whole frame for this long (a publisher
    /// sends one every interval, even an empty one).
    #[arg(long, default_value = "60s", value_parser = crate::values::parse_duration)]
    idle_timeout: Duration,
    /// End a connection whose frame has started and is not whole this long
    /// after.
    #[arg(long, default_value = "60s", value_parser = crate::values::parse_duration)]
    frame_timeout: Duration,
}

/// Where to listen: exactly one.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
struct ListenOn {
    /// A TCP address (`127.0.0.1:0` picks a port; the first line printed
    /// says which).
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::values::host_port)]
    bind: Option<String>,
    /// A Unix socket to create, owner-only unless --unix-mode says
    /// otherwise; never replaces what is there (but a stale socket).
    #[cfg(unix)]
    #[arg(long, value_name = "PATH", conflicts_with = "tls_cert")]
    unix: Option<PathBuf>,
}

/// An octal file mode.
fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s, 8)
        .ok()
        .filter(|mode| *mode <= 0o777)
        .ok_or_else(|| format!("{s:?} is not a file mode; write it in octal, e.g. 600 or 660"))
}

impl Args {
    /// How the archive's writer path batches, what it may hold (its share
    /// of `--max-memory`), and the sources it takes.
    #[cfg(feature = "archive")]
    fn archive_config(&self) -> dendro_wire_std::archive::ArchiveConfig {
        self.archive_args.config(self.max_memory)
    }

    fn server_config(&self) -> Result<ServerConfig, Failure> {
        let mut config = ServerConfig::default();
        config.max_sources = self.max_sources;
        config.max_connections = self.max_connections;
        config.max_unopened_connections = self.max_unopened_connections;
        config.eviction_grace = self.eviction_grace;
        config.proxy_protocol_from = self.proxy_protocol_from.clone();
        config.receive_buffer = self.receive_buffer;
        config.max_connections_per_peer = self.max_connections_per_peer;
        config.handshake_timeout = self.handshake_timeout;
        config.max_memory = self.max_memory;
        #[cfg(feature = "archive")]
        if self.archive.is_some() {
            config.max_memory -= crate::archive::backlog_share(self.max_memory);
        }
        config.idle_timeout = self.idle_timeout;
        config.frame_timeout = self.frame_timeout;
        config.record = self.record.clone();
        config.record_max = self.record_max as u64;
        config.record_max_per_connection = self.record_max_per_connection as u64;
        config.tls = self.tls.config()?;
        config.bind_identity = self.tls.bind_identity.clone();
        config.identity_from = self.tls.identity_from();
        #[cfg(unix)]
        if !self.allow_uid.is_empty() {
            config.allow_uids = Some(self.allow_uid.clone());
        }
        Ok(config)
    }
}

/// Bytes of lines that may wait for stdout.
const LINE_QUEUE: usize = 1 << 20;

/// How long the last lines may wait for stdout at exit.
const EXIT_FLUSH: Duration = Duration::from_secs(5);

/// What every ended connection added up to.
#[derive(Default)]
struct Totals {
    connections: u64,
    clean: u64,
    tally: Tally,
}

pub(crate) fn run(options: Args) -> Result<(), Failure> {
    let config = options.server_config()?;
    #[cfg(feature = "archive")]
    let archived = options.archive.is_some();
    #[cfg(not(feature = "archive"))]
    let archived = false;
    if let Some(line) = sizing::too_small(&config, options.max_memory, archived) {
        eprintln!("{line}");
    }
    // The socket file made, to remove at exit if it is still ours.
    #[cfg(unix)]
    let mut made = None;
    let (listener, listening): (Listener, String) = match (&options.on.bind, unix_path(&options)) {
        (Some(bind), _) => {
            let listener = TcpListener::bind(bind)
                .map_err(|e| Failure(format!("cannot listen on {bind}: {e}")))?;
            let addr = listener.local_addr()?;
            if config.tls.is_none() && !addr.ip().is_loopback() {
                eprintln!(
                    "dendro-wire listen: plaintext on {addr}: any host that can reach it may \
                     write into the archive; --tls-cert, --tls-key and --client-ca decide who may"
                );
            }
            (listener.into(), addr.to_string())
        }
        #[cfg(unix)]
        (None, Some(path)) => {
            let (listener, file) =
                dendro_wire_std::receive::bind_unix_file(path, options.unix_mode)
                    .map_err(|e| Failure(format!("cannot listen on {}: {e}", path.display())))?;
            made = Some(file);
            (listener.into(), format!("unix:{}", path.display()))
        }
        _ => return Err(Failure("say where to listen: --bind or --unix".into())),
    };
    // SIGINT and SIGTERM end the listener gracefully: stop accepting, apply
    // what has arrived, flush, summarize, exit 0.
    let signalled = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, signalled.clone())
            .map_err(|e| Failure(format!("cannot handle signal {signal}: {e}")))?;
    }
    #[cfg(feature = "archive")]
    let archive = match &options.archive {
        Some(path) => Some(crate::archive::open(
            path,
            &options.archive_args.encoder,
            options.archive_config(),
        )?),
        None => None,
    };
    #[cfg(not(feature = "archive"))]
    let archive: Option<ArchiveHandle> = None;
    let make_sink = sink_factory(archive.as_ref());
    let totals: Arc<Mutex<Totals>> = Arc::default();
    let max_connections = config.max_connections;
    let (max_unopened, max_per_peer) = (
        config.max_unopened_connections,
        config.max_connections_per_peer,
    );
    let max_memory = options.max_memory;
    #[cfg(feature = "archive")]
    let metrics = Arc::new(Metrics::new(
        archive
            .clone()
            .map(|a| (a, options.archive_args.ready_max_lag)),
    ));
    #[cfg(not(feature = "archive"))]
    let metrics = Arc::new(Metrics::new());
    // Ended connections' lines are queued, never written where connections
    // are served: a stdout nobody reads loses lines (counted), not service.
    let lines = Arc::new(EndLines::new(LineQueue::spawn(
        "stdout",
        std::io::stdout(),
        LINE_QUEUE,
    )?));
    let server = {
        let (totals, lines) = (totals.clone(), lines.clone());
        let metrics = metrics.clone();
        Server::start(listener, config, make_sink, move |ended, _| {
            lines.ended(&ended);
            metrics.record(&ended);
            let mut t = totals.lock().unwrap_or_else(|e| e.into_inner());
            t.connections += 1;
            t.clean += u64::from(ended.result.is_ok());
            t.tally += ended.tally;
        })
        .map_err(|e| Failure(format!("cannot serve {listening}: {e}")))?
    };
    let metrics_at = match &options.metrics {
        Some(addr) => Some(crate::metrics::serve(
            addr,
            metrics.clone(),
            server.watch(),
            max_memory,
        )?),
        None => None,
    };
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {listening}")?;
        if let Some(at) = metrics_at {
            writeln!(out, "metrics on http://{at}/metrics")?;
        }
        out.flush()?;
    }

    #[cfg(feature = "archive")]
    let mut at_stop = None;
    // Whether the archive failed a commit: then the listener stops serving.
    #[cfg_attr(not(feature = "archive"), allow(unused_mut))]
    let mut failed = false;
    let mut progress = Progress::new(
        Duration::from_secs(1),
        Duration::from_secs(5),
        crate::progress::quiet(),
    );
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if signalled.load(Ordering::Relaxed) {
            eprintln!(
                "dendro-wire listen: stopping: no new connections; applying what has arrived"
            );
            #[cfg(feature = "archive")]
            {
                at_stop = archive.as_ref().map(|a| a.stats());
            }
            break;
        }
        #[cfg(feature = "archive")]
        if let Some(why) = archive.as_ref().and_then(|a| a.stats().failed) {
            eprintln!("dendro-wire listen: stopping: the archive cannot commit: {why}");
            failed = true;
            break;
        }
        let ended = totals.lock().unwrap_or_else(|e| e.into_inner()).connections;
        if options.connections.is_some_and(|n| ended >= n) {
            break;
        }
        progress.show(|| live(&server));
        lines.summarize(false);
    }
    progress.finish();
    metrics.stopping();
    let grace = if failed || signalled.load(Ordering::Relaxed) {
        Duration::ZERO
    } else {
        Duration::from_secs(5)
    };
    let stats = server.shutdown(grace);
    #[cfg(unix)]
    if let Some(made) = made {
        // Only the socket made at start: what was put there since (a file,
        // another listener's socket) is not ours to remove.
        match made.remove() {
            Ok(true) => {}
            Ok(false) => eprintln!(
                "dendro-wire listen: left {}: it is no longer the socket this listener made",
                made.path().display()
            ),
            Err(e) => eprintln!(
                "dendro-wire listen: cannot remove {}: {e}",
                made.path().display()
            ),
        }
    }
    lines.summarize(true);
    // The report goes through the queue too, after what is queued: a
    // stdout nobody reads holds the exit no longer than the flush's wait.
    let dropped = lines.out().dropped();
    let mut report = Vec::new();
    // A failure of the archive is said in the summary, then returned.
    #[cfg(feature = "archive")]
    let archived = match archive {
        Some(archive) => crate::archive::finish(archive, at_stop, &mut report),
        None => Ok(()),
    };
    #[cfg(not(feature = "archive"))]
    let archived: Result<(), Failure> = Ok(());
    let t = totals.lock().unwrap_or_else(|e| e.into_inner());
    let a = t.tally;
    writeln!(
        report,
        "listener: {} connection(s) served ({} ended cleanly), {} refused at accept (over a \
         connection cap of {} in all, {} yet to open a source or {} from one address, or the \
         memory budget full), {} told to close to admit newer ones; rows {} applied {} skipped, \
         gaps {} ({} frames lost){}{}",
        t.connections,
        t.clean,
        stats.refused,
        max_connections,
        max_unopened,
        max_per_peer,
        stats.evicted,
        a.rows_applied,
        a.rows_skipped,
        a.gaps,
        a.frames_lost,
        match a.seq_regressions {
            0 => String::new(),
            n => format!(", seq regressions {n}"),
        },
        match dropped {
            0 => String::new(),
            n => format!("; {n} line(s) not printed, stdout was not read fast enough"),
        },
    )?;
    let report = String::from_utf8_lossy(&report);
    for line in report.lines() {
        lines.out().line(line);
    }
    if !lines.out().flush(EXIT_FLUSH) {
        // The summary on stderr instead, so that it is not lost with the
        // rest (stderr has a queue of its own, flushed at exit).
        log::warn!(
            "listen: stdout did not take what was left to print within {EXIT_FLUSH:?}; \
             exiting without it; the summary: {}",
            report.lines().last().unwrap_or_default()
        );
    }
    archived
}

/// The Unix socket asked for, if any.
fn unix_path(options: &Args) -> Option<&std::path::Path> {
    #[cfg(unix)]
    return options.on.unix.as_deref();
    #[cfg(not(unix))]
    return None;
}

/// What the live connections have applied: each of a few, or their sum.
fn live(server: &Server) -> String {
    const EACH: usize = 3;
    let live = server.live();
    if live.is_empty() {
        return "no live connections".into();
    }
    if live.len() <= EACH {
        let each: Vec<String> = live
            .iter()
            .map(|c| {
                format!(
                    "connection {} from {}: {} frames, rows {} applied {} skipped, {} gap(s)",
                    c.id,
                    c.peer,
                    c.tally.frames,
                    c.tally.rows_applied,
                    c.tally.rows_skipped,
                    c.tally.gaps
                )
            })
            .collect();
        return each.join("; ");
    }
    let mut tally = Tally::default();
    let mut bytes = 0;
    for c in &live {
        tally += c.tally;
        bytes += c.bytes;
    }
    let stats = server.stats();
    format!(
        "{} live connections: {} frames, {bytes} bytes, rows {} applied {} skipped, {} gap(s); \
         {} bytes held; {} refused at accept, {} told to close to admit newer ones",
        live.len(),
        tally.frames,
        tally.rows_applied,
        tally.rows_skipped,
        tally.gaps,
        stats.memory_in_use,
        stats.refused,
        stats.evicted
    )
}

type MakeSink = Box<dyn Fn(&ConnectionInfo) -> Box<dyn Sink + Send> + Send + Sync>;

#[cfg(feature = "archive")]
type ArchiveHandle = dendro_wire_std::archive::SharedArchive;
#[cfg(not(feature = "archive"))]
type ArchiveHandle = std::convert::Infallible;

/// Each connection's sink: a connection into the archive, or counts only.
fn sink_factory(archive: Option<&ArchiveHandle>) -> MakeSink {
    match archive {
        #[cfg(feature = "archive")]
        Some(archive) => {
            let archive = archive.clone();
            // Each connection's sources count toward its client's bound.
            Box::new(move |info| Box::new(archive.connection_from(info.peer.address())))
        }
        #[cfg(not(feature = "archive"))]
        Some(never) => match *never {},
        None => Box::new(|_| Box::new(CountingSink::default())),
    }
}

#[cfg(test)]
mod tests;
