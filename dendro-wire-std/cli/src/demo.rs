//! `dendro-wire demo`: a subscriber on loopback, a synthetic agent streaming
//! to it, and a summary of what arrived.

use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dendro_wire_std::dendro_wire_core::{kind, Rows, PREAMBLE_BYTES};
use dendro_wire_std::receive::{Server, ServerConfig};
use dendro_wire_std::send::{drain_queue, DrainOptions, TransportStats};
use dendro_wire_std::tls::PrivateKeyDer;
use dendro_wire_std::tls::TlsClient;
use dendro_wire_std::{
    AgentConfig, AgentPublisher, CountingSink, Sink, SourceConfig, SourceId, StreamId, Tally,
};

use crate::failure::Failure;
use crate::progress::Progress;

/// The encoder the demo's rows claim, and its subscriber insists on.
const ENCODER: &str = "dendro-wire-demo-1";
const CPUS: usize = 16;
const CPU_STREAMS: [&str; 3] = ["usage", "irq", "steal"];
const INTERFACES: usize = 4;
const NET_STREAMS: [&str; 2] = ["rx_bytes", "tx_bytes"];
/// The link loses one Rows frame of the net source every this many, to show
/// how a loss looks at the subscriber.
const LOSE_EVERY: u64 = 20_000;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// How long to stream.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Over TLS 1.3 with client certificates, from a CA and certificates
    /// made in memory for the run.
    #[arg(long)]
    tls: bool,
    /// Land what arrives in a dendro archive at this path.
    #[cfg(feature = "archive")]
    #[arg(long)]
    archive: Option<std::path::PathBuf>,
    /// Without the feature, the flag is answered with the feature's name.
    #[cfg(not(feature = "archive"))]
    #[arg(long, hide = true, value_parser = crate::values::archive_not_built)]
    #[allow(dead_code)]
    archive: Option<std::path::PathBuf>,
}

struct Agent {
    cpu: SourceId,
    net: SourceId,
    /// Every stream, looked up once rather than by name every row.
    cpu_streams: Vec<StreamId>,
    net_streams: Vec<StreamId>,
    mem_streams: [StreamId; 2],
    row: [u8; 32],
}

impl Agent {
    fn declare(p: &mut AgentPublisher) -> Result<Agent, Failure> {
        let source = |name: &str| {
            SourceConfig::new()
                .label("host", "demo")
                .label("source", name)
                .metadata("encoder", ENCODER)
        };
        // A stream per CPU and per interface: a dendro archive keys a row by
        // its stream and timestamp, so each slot's readings are a stream.
        let mut cpu = source("cpu").index("cpu/slots");
        let mut net = source("net").index("net/slots");
        for c in 0..CPUS {
            for stream in CPU_STREAMS {
                cpu = cpu.stream(format!("cpu{c}/{stream}"));
            }
        }
        for i in 0..INTERFACES {
            for stream in NET_STREAMS {
                net = net.stream(format!("eth{i}/{stream}"));
            }
        }
        let mem = source("mem").stream("mem/used").stream("mem/free");
        let (cpu, net, mem) = (p.add_source(cpu)?, p.add_source(net)?, p.add_source(mem)?);
        let stream = |p: &AgentPublisher, source, name: String| {
            p.stream(source, &name)
                .ok_or_else(|| Failure(format!("{name} was declared and is not there")))
        };
        let agent = Agent {
            cpu,
            net,
            cpu_streams: (0..CPUS)
                .flat_map(|c| CPU_STREAMS.map(|s| format!("cpu{c}/{s}")))
                .map(|name| stream(p, cpu, name))
                .collect::<Result<_, _>>()?,
            net_streams: (0..INTERFACES)
                .flat_map(|i| NET_STREAMS.map(|s| format!("eth{i}/{s}")))
                .map(|name| stream(p, net, name))
                .collect::<Result<_, _>>()?,
            mem_streams: [
                stream(p, mem, "mem/used".into())?,
                stream(p, mem, "mem/free".into())?,
            ],
            row: [0; 32],
        };
        for c in 0..CPUS {
            p.set_slot(agent.cpu, format!("cpu{c}").as_bytes(), b"online");
        }
        for i in 0..INTERFACES {
            p.set_slot(agent.net, format!("eth{i}").as_bytes(), b"up");
        }
        Ok(agent)
    }

    /// One interval: a row per CPU per stream, per interface per stream,
    /// and memory; a CPU goes offline and back now and then (an index
    /// Delta).
    fn interval(&mut self, p: &mut AgentPublisher, n: u64) -> Result<(), Failure> {
        let ts = n as i64 * 1_000_000;
        self.row[..8].copy_from_slice(&n.to_le_bytes());
        for (i, stream) in self.cpu_streams.iter().enumerate() {
            self.row[8] = i as u8;
            p.observe_stream(*stream, ts, 0, &self.row)?;
        }
        for (i, stream) in self.net_streams.iter().enumerate() {
            self.row[8] = i as u8;
            p.observe_stream(*stream, ts, 0, &self.row)?;
        }
        for stream in self.mem_streams {
            p.observe_stream(stream, ts, 0, &self.row)?;
        }
        if n % 5_000 == 2_500 {
            let cpu = format!("cpu{}", (n / 5_000) as usize % CPUS);
            let state: &[u8] = if n % 10_000 == 2_500 {
                b"offline"
            } else {
                b"online"
            };
            p.set_slot(self.cpu, cpu.as_bytes(), state);
        }
        if n.is_multiple_of(1_000) {
            p.clock_offset(self.cpu, ts, -((n % 7) as i64))?;
        }
        p.end_interval();
        Ok(())
    }
}

/// Whether the link loses the `Rows` frame of `seq`.
fn lost(seq: u64) -> bool {
    seq % LOSE_EVERY == LOSE_EVERY / 2
}

/// What the lossy link lost.
#[derive(Default)]
struct Loss {
    frames: AtomicU64,
    rows: AtomicU64,
    bytes: AtomicU64,
}

/// The demo's link: it passes the stream on, but loses the `Rows` frames of
/// one source whose `seq` [`lost`] picks, as a lossy network would, and
/// counts them. The publisher spent their `seq`s, so the subscriber sees
/// each as a gap.
struct LossyLink<W> {
    inner: W,
    source: u32,
    loss: Arc<Loss>,
    /// Bytes to pass on before the next frame: the preamble, or the rest of
    /// a frame kept.
    pass: usize,
    /// Bytes of a lost frame still to drop.
    lose: usize,
    /// A frame's first bytes, until they say whether it is lost.
    head: [u8; ROWS_HEAD],
    head_len: usize,
}

/// A `Rows` frame up to its count: kind, source, seq, state, count.
const ROWS_HEAD: usize = 37;

impl<W: Write> LossyLink<W> {
    fn new(inner: W, source: u32, loss: Arc<Loss>) -> Self {
        LossyLink {
            inner,
            source,
            loss,
            pass: PREAMBLE_BYTES,
            lose: 0,
            head: [0; ROWS_HEAD],
            head_len: 0,
        }
    }

    /// The bytes of a frame's head that decide its fate: its length and
    /// kind, and for a `Rows` frame its source, seq and count.
    fn head_wanted(&self) -> usize {
        if self.head_len < 5 {
            return 5;
        }
        if self.head[4] == kind::ROWS {
            ROWS_HEAD.min(self.total())
        } else {
            5
        }
    }

    /// The size of the frame whose head is in hand, length prefix included.
    fn total(&self) -> usize {
        let h = &self.head;
        4 + u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize
    }

    fn is_lost(&self) -> bool {
        let h = &self.head;
        self.head_len == ROWS_HEAD
            && h[4] == kind::ROWS
            && u32::from_le_bytes([h[5], h[6], h[7], h[8]]) == self.source
            && lost(u64::from_le_bytes([
                h[9], h[10], h[11], h[12], h[13], h[14], h[15], h[16],
            ]))
    }
}

impl<W: Write> Write for LossyLink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // `kept` starts the run of `buf` still to pass on.
        let (mut at, mut kept) = (0, 0);
        while at < buf.len() {
            if self.pass > 0 {
                let n = self.pass.min(buf.len() - at);
                (self.pass, at) = (self.pass - n, at + n);
            } else if self.lose > 0 {
                let n = self.lose.min(buf.len() - at);
                (self.lose, at) = (self.lose - n, at + n);
                kept = at;
            } else {
                let (start, held) = (at, self.head_len);
                while at < buf.len() && self.head_len < self.head_wanted() {
                    self.head[self.head_len] = buf[at];
                    (self.head_len, at) = (self.head_len + 1, at + 1);
                }
                if self.head_len < self.head_wanted() {
                    // The head goes on in the next write: hold it.
                    self.inner.write_all(&buf[kept..start])?;
                    return Ok(buf.len());
                }
                let total = self.total();
                let rest = total.saturating_sub(self.head_len);
                if self.is_lost() {
                    self.inner.write_all(&buf[kept..start])?;
                    kept = at;
                    self.lose = rest;
                    // `is_lost` saw a whole Rows head, so the count is there.
                    let count = Rows::count_in_frame(&self.head).unwrap_or(0);
                    self.loss.frames.fetch_add(1, Ordering::Relaxed);
                    self.loss
                        .rows
                        .fetch_add(u64::from(count), Ordering::Relaxed);
                    self.loss.bytes.fetch_add(total as u64, Ordering::Relaxed);
                } else {
                    // A head begun in the last write starts this one.
                    self.inner.write_all(&self.head[..held])?;
                    self.pass = rest;
                }
                self.head_len = 0;
            }
        }
        self.inner.write_all(&buf[kept..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The transport of `publish_tcp`, over the lossy link: drain `queue`
/// through a [`LossyLink`] over the connections `connect` opens, on a thread
/// of its own, until the queue is closed and drained.
fn publish_lossy<W: Write + 'static>(
    queue: dendro_wire_std::FrameQueue,
    mut connect: impl FnMut() -> io::Result<W> + Send + 'static,
    source: u32,
    loss: Arc<Loss>,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        let connect = || Ok(LossyLink::new(connect()?, source, loss.clone()));
        drain_queue(&queue, connect, DrainOptions::default())
    })
}

pub(crate) fn run(options: Args) -> Result<(), Failure> {
    let tls = if options.tls { Some(demo_tls()?) } else { None };
    let done: Arc<Mutex<Vec<Tally>>> = Arc::default();
    #[cfg(feature = "archive")]
    let archive = match &options.archive {
        Some(path) => Some(crate::archive::open(
            path,
            ENCODER,
            dendro_wire_std::archive::ArchiveConfig::default(),
        )?),
        None => None,
    };
    let server = {
        let done = done.clone();
        let listener = TcpListener::bind("127.0.0.1:0")?;
        #[cfg(feature = "archive")]
        let archive = archive.clone();
        let mut config = ServerConfig::default();
        config.max_sources = 16;
        config.tls = tls.as_ref().map(|(server, _)| server.clone());
        Server::start(
            listener,
            config,
            move |_| -> Box<dyn Sink + Send> {
                #[cfg(feature = "archive")]
                if let Some(archive) = &archive {
                    return Box::new(archive.connection());
                }
                Box::new(CountingSink {
                    encoder: Some(ENCODER.into()),
                    ..CountingSink::default()
                })
            },
            move |ended, _sink| {
                if let Err(e) = &ended.result {
                    eprintln!("dendro-wire demo: connection {} ended: {e}", ended.info.id);
                }
                done.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(ended.tally);
            },
        )?
    };
    let addr = server
        .local_addr()
        .ok_or_else(|| Failure("the demo's subscriber has no TCP address".into()))?;
    let over = if tls.is_some() { "TLS 1.3" } else { "TCP" };
    if !crate::progress::quiet() {
        eprintln!(
            "dendro-wire demo: a subscriber on {addr} ({over}), a synthetic agent with 3 \
             sources ({CPUS} CPUs, {INTERFACES} interfaces, memory), {:.0} s",
            options.seconds
        );
    }

    let mut publisher = AgentPublisher::new(
        AgentConfig::default()
            .full_every(10_000)
            .queue_frames(16_384)
            .queue_bytes(32 << 20),
    );
    let mut agent = Agent::declare(&mut publisher)?;
    let queue = publisher.queue();
    let loss = Arc::new(Loss::default());
    let net = agent.net.ordinal();
    let transport = match tls {
        Some((_, client)) => publish_lossy(
            queue.clone(),
            move || client.connect(addr, DEMO_SERVER),
            net,
            loss.clone(),
        ),
        None => publish_lossy(
            queue.clone(),
            move || {
                let s = TcpStream::connect(addr)?;
                s.set_nodelay(true)?;
                Ok(s)
            },
            net,
            loss.clone(),
        ),
    };

    if !queue.wait_connected(Duration::from_secs(5)) {
        return Err(Failure(
            "the agent could not connect to the subscriber".into(),
        ));
    }
    let started = Instant::now();
    let deadline = Duration::from_secs_f64(options.seconds);
    let mut n = 0u64;
    let mut progress = Progress::new(
        Duration::from_millis(250),
        Duration::from_secs(1),
        crate::progress::quiet(),
    );
    while started.elapsed() < deadline {
        // Measuring throughput, the demo paces itself to the transport
        // rather than letting the queue overflow; a real agent samples on
        // its clock and lets the queue drop.
        while queue.len().frames > 2048 || queue.len().bytes > (8 << 20) {
            std::thread::sleep(Duration::from_micros(50));
        }
        agent.interval(&mut publisher, n)?;
        n += 1;
        progress.show(|| now(started, &queue, &publisher, &server));
        // An archive that failed a commit takes nothing more: the demo
        // stops there, and its summary says why.
        #[cfg(feature = "archive")]
        if n.is_multiple_of(256) && archive.as_ref().is_some_and(|a| a.stats().failed.is_some()) {
            eprintln!("dendro-wire demo: stopping: the archive cannot commit");
            break;
        }
    }
    // A last interval the link does not lose (seq is the interval's
    // number), so every frame lost on purpose has a successor that shows
    // the gap.
    loop {
        agent.interval(&mut publisher, n)?;
        n += 1;
        if !lost(n - 1) {
            break;
        }
    }
    queue.close();
    let sent = transport
        .join()
        .map_err(|_| Failure("the transport thread panicked".into()))??;
    server.shutdown(Duration::from_secs(10));
    let elapsed = started.elapsed().as_secs_f64();
    progress.finish();

    let done = done.lock().unwrap_or_else(|e| e.into_inner());
    let mut tally = Tally::default();
    for connection in done.iter() {
        tally += *connection;
    }
    let stats = publisher.stats();
    let lost_frames = loss.frames.load(Ordering::Relaxed);
    let lost_rows = loss.rows.load(Ordering::Relaxed);
    let lost_bytes = loss.bytes.load(Ordering::Relaxed);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "dendro-wire demo: {elapsed:.1} s over loopback {over}, {n} intervals"
    )?;
    writeln!(
        out,
        "  frames      {} sent in {} connection(s), {} bytes",
        sent.frames - lost_frames,
        done.len(),
        sent.bytes - lost_bytes
    )?;
    writeln!(
        out,
        "  rows        {} published, {} applied, {} skipped",
        stats.rows_queued + stats.rows_dropped,
        tally.rows_applied,
        tally.rows_skipped,
    )?;
    writeln!(
        out,
        "  gaps        {} ({} frame(s) lost: the {} Rows frame(s) dropped on purpose, {} rows{})",
        tally.gaps,
        tally.frames_lost,
        lost_frames,
        lost_rows,
        match stats.rows_frames_dropped {
            0 => String::new(),
            n => format!("; {n} dropped by the full queue"),
        },
    )?;
    writeln!(
        out,
        "  index       {} entries applied; clock offsets {}",
        tally.index_entries, tally.clock_offsets
    )?;
    writeln!(
        out,
        "  throughput  {:.1} MB/s, {:.2} M rows/s",
        (sent.bytes - lost_bytes) as f64 / elapsed / 1e6,
        tally.rows_applied as f64 / elapsed / 1e6
    )?;
    #[cfg(feature = "archive")]
    if let Some(archive) = archive {
        crate::archive::finish(archive, None, &mut out)?;
    }
    // What the demo shows must also be true: every row queued arrived but
    // those the link lost, and every frame dropped was seen as lost, and
    // nothing else was.
    if tally.rows_applied + tally.rows_skipped + lost_rows != stats.rows_queued {
        return Err(Failure(format!(
            "{} rows were queued, {} lost on the link, and {} arrived",
            stats.rows_queued,
            lost_rows,
            tally.rows_applied + tally.rows_skipped
        )));
    }
    let dropped = lost_frames + stats.rows_frames_dropped;
    if tally.frames_lost != dropped {
        return Err(Failure(format!(
            "{dropped} frames were dropped and {} seen as lost",
            tally.frames_lost
        )));
    }
    Ok(())
}

/// The name on the demo subscriber's certificate.
const DEMO_SERVER: &str = "localhost";

/// A CA, a certificate for the subscriber and one for the agent, made in
/// memory for one run: TLS as an operator sets it up, with nothing to
/// install.
fn demo_tls() -> Result<(Arc<dendro_wire_std::tls::rustls::ServerConfig>, TlsClient), Failure> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "dendro-wire demo CA");
    let ca_cert = ca.self_signed(&ca_key)?.der().clone();
    let issuer = Issuer::new(ca, ca_key);
    let leaf = |name: &str| -> Result<_, Failure> {
        let key = KeyPair::generate()?;
        let cert = CertificateParams::new(vec![name.to_string()])?.signed_by(&key, &issuer)?;
        let key = PrivateKeyDer::Pkcs8(key.serialize_der().into());
        Ok((vec![cert.der().clone()], key))
    };
    let (server_chain, server_key) = leaf(DEMO_SERVER)?;
    let (agent_chain, agent_key) = leaf("demo-agent")?;
    let server =
        dendro_wire_std::tls::server_config(server_chain, server_key, vec![ca_cert.clone()])?;
    let client = dendro_wire_std::tls::client_config(vec![ca_cert], agent_chain, agent_key)?;
    Ok((server, client))
}

/// Where the run is: what the agent did and the subscriber applied.
fn now(
    started: Instant,
    queue: &dendro_wire_std::FrameQueue,
    publisher: &AgentPublisher,
    server: &Server,
) -> String {
    let elapsed = started.elapsed().as_secs_f64();
    let live = server.live();
    let applied: u64 = live.iter().map(|c| c.tally.rows_applied).sum();
    let bytes: u64 = live.iter().map(|c| c.bytes).sum();
    format!(
        "intervals {:>9}  frames {:>10}  rows applied {:>11}  {:7.1} MB/s",
        publisher.stats().intervals,
        queue.stats().queued,
        applied,
        bytes as f64 / elapsed / 1e6
    )
}
