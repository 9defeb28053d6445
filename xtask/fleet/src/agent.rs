//! One simulated agent: the core's publisher machine with one source (a
//! stream per channel, an index of one slot), a row on every stream each
//! interval and a `ClockOffset` every ten, sent over a TCP connection of its
//! own from an address of its own, as a small device would.
//!
//! Its bounded queue is the machine itself and one buffer of frames the
//! socket has not taken: when TCP pushes back, the buffer stays full, the
//! interval's frame is not polled, and the machine drops it when the next
//! interval ends (counted, its `seq` spent). Where every row went is
//! counted: dropped or unsent by the machine, written whole to a
//! connection, or lost with one.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::time::{Duration, Instant};

use dendro_wire_core::{
    ClockOffset, Frame, Map, Publisher, PublisherConfig, SourceDecl, SourceId, PREAMBLE,
};
use tokio::net::{TcpSocket, TcpStream};

/// Storage for the agent's one source: its handshake, names, slots and
/// two intervals' frames, with room to spare.
const STORAGE: usize = 16 << 10;
/// The largest frame it sends.
const FRAME: usize = 4096;
/// Frames polled and not yet taken by the socket, at most (a few seconds'
/// worth): past it, nothing more is polled until the socket takes some.
const OUT_LIMIT: usize = 8 << 10;
/// The kernel's send buffer for an agent's socket (Linux doubles it).
const SEND_BUFFER: u32 = 8 << 10;
/// A frame written whole this long before its connection ended may not
/// have been read: the rows in doubt at a disconnect.
const DOUBT: Duration = Duration::from_secs(3);
/// How long the agent has, after its last interval, to write what it
/// holds and see its connection closed cleanly.
const FLUSH: Duration = Duration::from_secs(15);
/// Rows every agent of this process has written whole, as they are.
pub static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The encoder `listen --archive` stores rows for by default.
pub const ENCODER: &str = "dendro-wire-agent-1";

/// What one agent is told.
#[derive(Clone, Debug)]
pub struct Plan {
    pub index: usize,
    pub local: Ipv4Addr,
    pub target: SocketAddr,
    pub interval: Duration,
    pub rows: usize,
    pub row_bytes: usize,
    /// When it first connects.
    pub start: Instant,
    /// When it stops observing.
    pub stop: Instant,
    /// Names this run's uuids.
    pub run: u32,
    /// A ClockOffset every this many intervals (0: none).
    pub clock_every: i64,
    /// A Full index entry again every this many intervals (rule 7).
    pub full_every: u64,
}

/// Where an agent's rows went.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub observed: u64,
    /// In frames polled for a connection.
    pub sent: u64,
    /// In frames the socket took whole.
    pub written: u64,
    /// Dropped by the machine: the socket had not taken the last ones when
    /// the interval ended.
    pub dropped: u64,
    /// Unsent by the machine: no connection when their interval ended.
    pub unsent: u64,
    /// Polled, and not wholly written when their connection ended.
    pub lost_unwritten: u64,
    /// Written whole within [`DOUBT`] of their connection ending: read by
    /// the collector or not, only the archive says.
    pub in_doubt: u64,
    /// Rows a connection's first frame carried again (rule 3); none, as
    /// every stream is observed every interval.
    pub repeated: u64,
    pub connections: u64,
    pub connect_failures: u64,
    /// Connections the other side ended.
    pub ended_by_peer: u64,
    /// Whether the last connection ended cleanly: everything written, then
    /// closed by the collector after the agent's own close.
    pub clean_end: bool,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.observed += o.observed;
        self.sent += o.sent;
        self.written += o.written;
        self.dropped += o.dropped;
        self.unsent += o.unsent;
        self.lost_unwritten += o.lost_unwritten;
        self.in_doubt += o.in_doubt;
        self.repeated += o.repeated;
        self.connections += o.connections;
        self.connect_failures += o.connect_failures;
        self.ended_by_peer += o.ended_by_peer;
        self.clean_end &= o.clean_end;
    }
}

/// The uuid of agent `index` in run `run`.
pub fn uuid(run: u32, index: usize) -> String {
    format!("{run:08x}-0000-4000-8000-{index:012x}")
}

/// The address agent `index` connects from: 127.1.0.1 onwards.
pub fn address(index: usize) -> Ipv4Addr {
    let n = index as u32 + 1;
    Ipv4Addr::new(127, 1 + (n >> 16) as u8, (n >> 8) as u8, n as u8)
}

/// A connection: its socket, the frames polled and not yet taken, and
/// those taken lately.
struct Conn {
    stream: TcpStream,
    out: Vec<u8>,
    written: usize,
    /// Each polled frame not yet taken whole: where it ends in `out`, and
    /// its rows.
    frames: VecDeque<(usize, u64)>,
    /// Frames taken whole lately: when, and their rows.
    recent: VecDeque<(Instant, u64)>,
}

/// An agent's link to the collector; `failures` counts the connects that
/// failed in a row.
enum Link {
    Down {
        retry: Instant,
        failures: u32,
    },
    Connecting {
        connect: Pin<Box<dyn Future<Output = io::Result<TcpStream>>>>,
        failures: u32,
    },
    Up(Box<Conn>),
}

type Agent = Publisher<[u8; STORAGE], 1>;

/// Run one agent until its plan's stop, then write what it holds and close;
/// where every row went.
pub async fn run(plan: Plan) -> Counts {
    let names: Vec<String> = (0..plan.rows)
        .map(|i| format!("sensor/channel-{i:02}"))
        .collect();
    let streams: Vec<&str> = names.iter().map(String::as_str).collect();
    let uuid = uuid(plan.run, plan.index);
    let host = format!("agent-{:05}", plan.index);
    let labels = [("host", host.as_str())];
    let metadata = [("encoder", ENCODER)];
    let decl = SourceDecl {
        uuid: Some(&uuid),
        labels: Map::from_pairs(&labels),
        metadata: Map::from_pairs(&metadata),
        clock_anchor_wall_ns: 1_700_000_000_000_000_000,
        complete: false,
        streams: &streams,
        index_stream: Some("agent/slots"),
    };
    let mut agent: Agent = Publisher::new(PublisherConfig {
        full_every: plan.full_every,
        frame_buffer: FRAME,
    });
    let source = agent
        .add_source(&decl, [0; STORAGE])
        .expect("the declaration fits its storage");
    agent
        .set_slot(source, b"link", b"up")
        .expect("one slot fits");
    let mut counts = Counts::default();
    let row = vec![0x5a; plan.row_bytes];
    // Each agent's readings at its own phase of the interval, as a fleet's
    // clocks fall.
    let phase = plan
        .interval
        .mul_f64((plan.index as f64 * 0.618_033_988_75).fract());
    let mut ticks = tokio::time::interval_at((plan.start + phase).into(), plan.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut link = Link::Down {
        retry: plan.start,
        failures: 0,
    };
    let mut interval = 0i64;
    let mut scratch = vec![0u8; FRAME];
    loop {
        tokio::select! {
            _ = ticks.tick() => {
                if Instant::now() >= plan.stop {
                    break;
                }
                interval += 1;
                observe(&mut agent, source, interval, &names, &row);
                agent.end_interval();
                if let Link::Up(conn) = &mut link {
                    if plan.clock_every > 0 && interval % plan.clock_every == 0 {
                        clock_offset(&mut agent, source, interval, conn);
                    }
                    conn.fill(&mut agent, &mut scratch);
                }
            }
            event = link.event() => {
                link = link.handle(event, &mut agent, &mut counts, &plan, &mut scratch);
            }
        }
    }
    finish(&mut agent, link, &mut counts, &mut scratch).await;
    let stats = agent.stats();
    counts.observed = stats.rows_observed;
    counts.sent = stats.rows_sent;
    counts.dropped = stats.rows_dropped;
    counts.unsent = stats.rows_unsent;
    counts.repeated = stats.rows_repeated;
    counts.connections = stats.connections;
    counts
}

/// A row on every stream, stamped with the interval.
fn observe(agent: &mut Agent, source: SourceId, interval: i64, names: &[String], row: &[u8]) {
    let ts = interval * 1_000_000_000;
    for i in 0..names.len() {
        agent
            .observe(source.stream(i as u32), ts, 1_000 + i as i64, row)
            .expect("a row fits its frame");
    }
}

/// A clock observation, queued behind what the connection holds.
fn clock_offset(agent: &mut Agent, source: SourceId, interval: i64, conn: &mut Conn) {
    let frame = Frame::ClockOffset(ClockOffset {
        source: source.ordinal(),
        ts: interval * 1_000_000_000,
        offset_ns: 250_000 + interval,
    });
    let mut buf = [0u8; 64];
    if let Ok(n) = agent.encode_passthrough(&frame, &mut buf) {
        conn.push(&buf[..n], 0);
    }
}

/// After the last interval: write what is held and due, close the
/// connection, and wait for the collector to close its side.
async fn finish(agent: &mut Agent, link: Link, counts: &mut Counts, scratch: &mut [u8]) {
    let Link::Up(mut conn) = link else {
        return;
    };
    let deadline = tokio::time::Instant::now() + FLUSH;
    let flushed = tokio::time::timeout_at(deadline, async {
        loop {
            conn.fill(agent, scratch);
            if conn.frames.is_empty() && conn.written == conn.out.len() {
                return Ok::<(), io::Error>(());
            }
            conn.stream.writable().await?;
            conn.write(counts)?;
        }
    })
    .await;
    if !matches!(flushed, Ok(Ok(()))) {
        conn.lost(counts);
        return;
    }
    // Our side closed at a frame boundary; the collector closes its side
    // once it has read to the end.
    let std = conn.stream.into_std();
    let closed = match std {
        Ok(std) => {
            let _ = std.shutdown(std::net::Shutdown::Write);
            let stream = TcpStream::from_std(std);
            match stream {
                Ok(stream) => tokio::time::timeout_at(deadline, read_to_end(stream)).await,
                Err(_) => return,
            }
        }
        Err(_) => return,
    };
    counts.clean_end = matches!(closed, Ok(true));
}

/// Read until the other side closes: whether it closed cleanly.
async fn read_to_end(stream: TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        if stream.readable().await.is_err() {
            return false;
        }
        match stream.try_read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return false,
        }
    }
}

/// What woke a link.
enum Event {
    Retry,
    Connected(io::Result<TcpStream>),
    Readable,
    Writable,
}

impl Link {
    /// The next thing that happens to the link; never, for a link with
    /// nothing to do.
    async fn event(&mut self) -> Event {
        match self {
            Link::Down { retry, .. } => {
                tokio::time::sleep_until((*retry).into()).await;
                Event::Retry
            }
            Link::Connecting { connect, .. } => Event::Connected(connect.await),
            Link::Up(conn) => {
                let want_write = conn.written < conn.out.len();
                tokio::select! {
                    r = conn.stream.readable() => { let _ = r; Event::Readable }
                    w = conn.stream.writable(), if want_write => { let _ = w; Event::Writable }
                }
            }
        }
    }

    fn handle(
        self,
        event: Event,
        agent: &mut Agent,
        counts: &mut Counts,
        plan: &Plan,
        scratch: &mut [u8],
    ) -> Link {
        match (self, event) {
            (Link::Down { failures, .. }, Event::Retry) => Link::Connecting {
                connect: Box::pin(connect(plan.local, plan.target)),
                failures,
            },
            (Link::Connecting { .. }, Event::Connected(Ok(stream))) => {
                agent.connected();
                let mut conn = Box::new(Conn {
                    stream,
                    out: Vec::with_capacity(OUT_LIMIT),
                    written: 0,
                    frames: VecDeque::new(),
                    recent: VecDeque::new(),
                });
                conn.push(&PREAMBLE, 0);
                conn.fill(agent, scratch);
                Link::Up(conn)
            }
            (Link::Connecting { failures, .. }, Event::Connected(Err(_))) => {
                counts.connect_failures += 1;
                down(failures + 1, plan.index)
            }
            (Link::Up(mut conn), Event::Writable) => match conn.write(counts) {
                Ok(()) => {
                    conn.fill(agent, scratch);
                    Link::Up(conn)
                }
                Err(_) => conn.ended(agent, counts, plan.index),
            },
            (Link::Up(mut conn), Event::Readable) => {
                let mut buf = [0u8; 256];
                match conn.stream.try_read(&mut buf) {
                    // The collector closed: it is stopping, or refused us.
                    Ok(0) => {
                        counts.ended_by_peer += 1;
                        conn.ended(agent, counts, plan.index)
                    }
                    Ok(_) => Link::Up(conn),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Link::Up(conn),
                    Err(_) => {
                        counts.ended_by_peer += 1;
                        conn.ended(agent, counts, plan.index)
                    }
                }
            }
            (link, _) => link,
        }
    }
}

/// A link that connects again after `failures` failed connects: at once
/// (jittered up to 25 ms) after a lost connection, then from 25 ms doubling
/// to 2.5 s, each wait jittered up to itself again, so that a fleet that
/// lost its collector together does not come back together.
fn down(failures: u32, seed: usize) -> Link {
    let wait = Duration::from_millis(25)
        .saturating_mul(1 << failures.min(7))
        .min(Duration::from_millis(2500));
    let fraction = (seed as f64 * 0.618_033_988_75 + f64::from(failures) * 0.754_877_666).fract();
    let wait = match failures {
        0 => wait.mul_f64(fraction),
        _ => wait + wait.mul_f64(fraction),
    };
    Link::Down {
        retry: Instant::now() + wait,
        failures,
    }
}

async fn connect(local: Ipv4Addr, target: SocketAddr) -> io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    // A device's socket holds a few frames, not the seconds of them a
    // host's autotuned buffer would: what it cannot send is dropped by the
    // machine, counted.
    socket.set_send_buffer_size(SEND_BUFFER)?;
    socket.bind(SocketAddr::new(local.into(), 0))?;
    let stream = tokio::time::timeout(Duration::from_secs(10), socket.connect(target))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

impl Conn {
    /// Queue `bytes` (a frame of `rows` rows, or the preamble).
    fn push(&mut self, bytes: &[u8], rows: u64) {
        self.out.extend_from_slice(bytes);
        self.frames.push_back((self.out.len(), rows));
    }

    /// Poll what the machine has due while the buffer has room.
    fn fill(&mut self, agent: &mut Agent, scratch: &mut [u8]) {
        while self.out.len() - self.written < OUT_LIMIT {
            match agent.poll_transmit(scratch) {
                Ok(Some((bytes, t))) => {
                    let (bytes, rows) = (bytes.to_vec(), u64::from(t.rows));
                    self.push(&bytes, rows);
                }
                _ => break,
            }
        }
    }

    /// Write what the socket takes now.
    fn write(&mut self, counts: &mut Counts) -> io::Result<()> {
        while self.written < self.out.len() {
            match self.stream.try_write(&self.out[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        let now = Instant::now();
        while let Some(&(end, rows)) = self.frames.front() {
            if end > self.written {
                break;
            }
            self.frames.pop_front();
            counts.written += rows;
            WRITTEN.fetch_add(rows, std::sync::atomic::Ordering::Relaxed);
            self.recent.push_back((now, rows));
        }
        while self
            .recent
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > DOUBT)
        {
            self.recent.pop_front();
        }
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
        }
        Ok(())
    }

    /// The connection ended: what it held is lost, what it took lately is
    /// in doubt, and the machine starts over on the next one.
    fn ended(&mut self, agent: &mut Agent, counts: &mut Counts, seed: usize) -> Link {
        self.lost(counts);
        agent.disconnected();
        down(0, seed)
    }

    fn lost(&mut self, counts: &mut Counts) {
        counts.lost_unwritten += self.frames.iter().map(|(_, rows)| rows).sum::<u64>();
        counts.in_doubt += self.recent.iter().map(|(_, rows)| rows).sum::<u64>();
        self.frames.clear();
        self.recent.clear();
    }
}
