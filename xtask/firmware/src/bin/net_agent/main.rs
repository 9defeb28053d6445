//! A firmware agent on a real TCP/IP stack: the core's publisher machine,
//! smoltcp, and a driver for the LM3S6965's Ethernet controller, streaming
//! into a live `dendro-wire listen` over QEMU's NIC on a TAP device.
//!
//! One indexed source of four streams, a reading on each every 10 ms, an
//! interval every 50 ms, for 200 intervals. The link may be slower than the
//! readings, and the collector may go away: nothing is lost without being
//! counted. Every reading observed ends in one of three places, and the
//! program counts each:
//!
//! - delivered: in a frame whose every byte the collector acknowledged;
//! - dropped: in a frame the machine dropped because the next interval
//!   ended before the link took it (`PublisherStats::rows_dropped`; its
//!   `seq` is spent, so the collector sees a gap);
//! - lost at a disconnect: in a frame handed to the socket whose bytes
//!   were not all acknowledged when the connection ended, or in an
//!   interval no connection carried (`rows_unsent`).
//!
//! It prints, per connection, what `dendro-wire check --json --cut-ok` must
//! say of the collector's capture of it, and the totals; `cargo xtask
//! firmware` compares both.

#![no_std]
#![no_main]

mod clock;
mod enet;
mod tracker;

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use dendro_wire_core::{
    emit_preamble, Map, Outbox, Publisher, PublisherConfig, PublisherStats, SourceDecl, SourceId,
    PREAMBLE_BYTES,
};
use dendro_wire_firmware::{entry, exit, stack, Console};
use smoltcp::iface::{Config, Interface, SocketSet, SocketStorage};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address};

use enet::Enet;
use tracker::Tracker;

/// The device's address, and the collector's, inside the network namespace
/// `cargo xtask firmware` makes (`xtask/src/net.rs` has the same).
const DEVICE: [u8; 4] = [10, 0, 23, 2];
const PREFIX: u8 = 24;
const COLLECTOR: [u8; 4] = [10, 0, 23, 1];
const COLLECTOR_PORT: u16 = 7411;

const INTERVALS: u32 = 200;
const INTERVAL_MS: u32 = 50;
const READING_MS: u32 = 10;
const FULL_EVERY: u64 = 20;
/// A new connection is tried this long after the last ended or failed.
const RETRY_MS: u32 = 100;
/// At the end, how long the link may take to carry what is left.
const DRAIN_MS: u32 = 3000;

const STREAMS: [&str; 4] = ["net/ch0", "net/ch1", "net/ch2", "net/ch3"];
const START_NS: i64 = 1_764_672_000_000_000_000;

/// A frame holds an interval's readings: 20 rows of about 40 bytes.
const FRAME_BUFFER: usize = 1024;
/// The handshake, names, latest rows and slots, the interval's frame, and
/// the last interval's, waiting on a slow link.
const STORAGE: usize = 4096;
/// The socket's send buffer: under three intervals of readings, so that
/// what waits on a slow link waits in the machine, which drops and counts.
const TX_BUFFER: usize = 2048;
const RX_BUFFER: usize = 256;

static mut STORAGE_BYTES: [u8; STORAGE] = [0; STORAGE];
static mut FRAME: [u8; FRAME_BUFFER] = [0; FRAME_BUFFER];
static mut TX: [u8; TX_BUFFER] = [0; TX_BUFFER];
static mut RX: [u8; RX_BUFFER] = [0; RX_BUFFER];
static mut PUBLISHER: MaybeUninit<Publishing> = MaybeUninit::uninit();
static mut SOCKETS: [SocketStorage<'static>; 1] = [SocketStorage::EMPTY];

type Publishing = Publisher<&'static mut [u8], 1>;

/// Where the link stands.
enum Link {
    /// No connection; try one at this time.
    Down { retry_at: u32 },
    /// A SYN is out, since this time.
    Connecting { since: u32 },
    /// Established, the preamble written: frames go.
    Up,
    /// The collector closed its side (it is stopping): nothing more is
    /// sent, and what was sent is acknowledged or lost by this time.
    Closing { until: u32 },
}

/// How long a connection the collector closed has for what was already
/// sent to be acknowledged.
const CLOSING_MS: u32 = 2000;

fn now(ms: u32) -> Instant {
    Instant::from_millis(i64::from(ms))
}

#[entry]
fn main() -> ! {
    stack::paint();
    clock::start();
    let mut out = Console::open();
    let ok = run(&mut out);
    stack::report(&mut out, FRAME_BUFFER).str("\n");
    exit(ok)
}

fn run(out: &mut Console) -> bool {
    // SAFETY: `run` runs once, so each static is lent once.
    let (publisher, storage, frame, tx, rx, sockets) = unsafe {
        (
            (*addr_of_mut!(PUBLISHER)).write(Publisher::new(PublisherConfig {
                full_every: FULL_EVERY,
                frame_buffer: FRAME_BUFFER,
            })),
            &mut *addr_of_mut!(STORAGE_BYTES),
            &mut *addr_of_mut!(FRAME),
            &mut *addr_of_mut!(TX),
            &mut *addr_of_mut!(RX),
            &mut *addr_of_mut!(SOCKETS),
        )
    };
    let source = match publisher.add_source(
        &SourceDecl {
            uuid: Some("3a7d5c1e-2b4f-4e6a-8c9d-0f1e2d3c4b5a"),
            labels: Map::from_pairs(&[("device", "sensor-9"), ("source", "net")]),
            metadata: Map::from_pairs(&[("encoder", "sensor-7-raw-v1")]),
            clock_anchor_wall_ns: START_NS,
            complete: false,
            streams: &STREAMS,
            index_stream: Some("net/channels"),
        },
        storage,
    ) {
        Ok(id) => id,
        Err(_) => {
            out.str("net-agent: the source does not fit this build\n");
            return false;
        }
    };
    for ch in [&b"ch0"[..], b"ch1", b"ch2", b"ch3"] {
        if publisher.set_slot(source, ch, b"gain=1").is_err() {
            out.str("net-agent: the slots do not fit\n");
            return false;
        }
    }

    let mut device = Enet::new();
    let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(device.mac())));
    config.random_seed = 0x5eed_0023;
    let mut iface = Interface::new(config, &mut device, now(clock::millis()));
    iface.update_ip_addrs(|addrs| {
        let [a, b, c, d] = DEVICE;
        let _ = addrs.push(IpCidr::new(IpAddress::v4(a, b, c, d), PREFIX));
    });
    let mut sockets = SocketSet::new(&mut sockets[..]);
    let mut socket = tcp::Socket::new(
        tcp::SocketBuffer::new(&mut rx[..]),
        tcp::SocketBuffer::new(&mut tx[..]),
    );
    // Each frame goes as soon as it is handed over: the machine, not the
    // stack, decides what an interval sends.
    socket.set_nagle_enabled(false);
    let handle = sockets.add(socket);

    let mut outbox = Outbox::new(frame);
    let mut tracker = Tracker::default();
    let mut link = Link::Down { retry_at: 0 };
    let mut local_port = 49152u16;
    let (mut interval, mut reading) = (0u32, 0u32);
    let mut drain_until = None;
    let start = clock::millis();
    loop {
        let ms = clock::millis();
        iface.poll(now(ms), &mut device, &mut sockets);
        let socket = sockets.get_mut::<tcp::Socket>(handle);
        link = match link {
            Link::Down { retry_at } if ms >= retry_at && drain_until.is_none() => {
                local_port = local_port.wrapping_add(1).max(49152);
                let [a, b, c, d] = COLLECTOR;
                let remote = (
                    IpAddress::Ipv4(Ipv4Address::new(a, b, c, d)),
                    COLLECTOR_PORT,
                );
                match socket.connect(iface.context(), remote, local_port) {
                    Ok(()) => Link::Connecting { since: ms },
                    Err(_) => Link::Down {
                        retry_at: ms + RETRY_MS,
                    },
                }
            }
            Link::Connecting { since } => match socket.state() {
                tcp::State::Established => {
                    let mut preamble = [0u8; PREAMBLE_BYTES];
                    let _ = emit_preamble(&mut preamble);
                    // An empty send buffer takes the preamble whole.
                    let took = socket.send_slice(&preamble).unwrap_or(0);
                    tracker.connected(took);
                    publisher.connected();
                    Link::Up
                }
                tcp::State::SynSent if ms < since + 1000 => Link::Connecting { since },
                // Refused (nothing listening), or no answer.
                _ => {
                    socket.abort();
                    Link::Down {
                        retry_at: ms + RETRY_MS,
                    }
                }
            },
            Link::Up if socket.state() == tcp::State::Established => {
                tracker.acked(socket.send_queue());
                send(socket, &mut outbox, publisher, &mut tracker);
                Link::Up
            }
            // The collector closed its side first (it is stopping, and
            // reads on what is on its way): send nothing more, and wait for
            // what was sent to be acknowledged.
            Link::Up if socket.state() == tcp::State::CloseWait => {
                tracker.acked(socket.send_queue());
                Link::Closing {
                    until: ms + CLOSING_MS,
                }
            }
            Link::Closing { until }
                if socket.state() == tcp::State::CloseWait
                    && socket.send_queue() > 0
                    && ms < until =>
            {
                tracker.acked(socket.send_queue());
                Link::Closing { until }
            }
            Link::Up | Link::Closing { .. } => {
                // Closed and acknowledged, reset, or out of time: what the
                // collector acknowledged is final, and everything after it
                // lost.
                tracker.acked(socket.send_queue());
                socket.abort();
                outbox.abandon(publisher);
                publisher.disconnected();
                tracker.disconnected(out);
                Link::Down {
                    retry_at: ms + RETRY_MS,
                }
            }
            down => down,
        };

        match drain_until {
            None => {
                // The readings due by now: one per stream every READING_MS.
                while reading * READING_MS <= ms - start {
                    observe(publisher, source, reading);
                    reading += 1;
                    if reading % (INTERVAL_MS / READING_MS) == 0 {
                        end_interval(publisher, source, interval, &mut tracker);
                        interval += 1;
                        if interval == INTERVALS {
                            drain_until = Some(ms + DRAIN_MS);
                            break;
                        }
                    }
                }
            }
            Some(until) => {
                let left = publisher.waiting().frames > 0 || !tracker.all_acked();
                if !matches!(link, Link::Up | Link::Closing { .. }) || !left || ms >= until {
                    break;
                }
            }
        }
    }

    // Close gracefully, so the collector sees the stream end at a frame
    // boundary; what is still unacknowledged is lost at this disconnect.
    let ms = clock::millis();
    if matches!(link, Link::Up | Link::Closing { .. }) {
        let socket = sockets.get_mut::<tcp::Socket>(handle);
        tracker.acked(socket.send_queue());
        socket.close();
        while clock::millis() < ms + 1000 {
            iface.poll(now(clock::millis()), &mut device, &mut sockets);
            let socket = sockets.get_mut::<tcp::Socket>(handle);
            if !socket.is_open() || socket.state() == tcp::State::TimeWait {
                break;
            }
        }
        outbox.abandon(publisher);
        publisher.disconnected();
        tracker.disconnected(out);
    }
    let stats = publisher.stats();
    let totals = tracker.totals(&stats);
    out.str("net")
        .field("intervals", interval)
        .field("connections", tracker.connections)
        .field("rows_observed", stats.rows_observed as u32)
        .field("rows_delivered", totals.rows_delivered)
        .field("rows_repeated_delivered", totals.rows_repeated_delivered)
        .field("rows_dropped", stats.rows_dropped as u32)
        .field("rows_lost_at_disconnect", totals.rows_lost_at_disconnect)
        .field("rows_unacked", totals.rows_unacked)
        .field("rows_unsent", stats.rows_unsent as u32)
        .field("rows_refused", stats.rows_refused as u32)
        .field("frames_dropped", stats.frames_dropped as u32)
        .field("frames_dropped_unseen", totals.frames_dropped_unseen)
        .field("frames_unsent", stats.frames_unsent as u32)
        .field("oversized", device.oversized)
        .field("elapsed_ms", clock::millis() - start)
        .str("\n");
    let accounted = stats.rows_observed
        == u64::from(totals.rows_delivered)
            + stats.rows_dropped
            + u64::from(totals.rows_lost_at_disconnect);
    if !accounted {
        out.str("net-agent: readings unaccounted for\n");
    }
    accounted && stats.rows_refused == 0 && stats.slot_changes_refused == 0
}

/// One reading on every stream.
fn observe(p: &mut Publishing, source: SourceId, reading: u32) {
    let ts = START_NS + i64::from(reading) * i64::from(READING_MS) * 1_000_000;
    for ch in 0..STREAMS.len() as u32 {
        let mut row = [0u8; 8];
        let (index, channel) = row.split_at_mut(4);
        index.copy_from_slice(&reading.to_le_bytes());
        channel.copy_from_slice(&ch.to_le_bytes());
        // A refusal is counted in the stats, and fails the run.
        let _ = p.observe(source.stream(ch), ts + i64::from(ch), 0, &row);
    }
}

/// End the interval: a gain changes now and then (a `Delta`), and the
/// frames the machine drops for a slow link are counted as they go.
fn end_interval(p: &mut Publishing, source: SourceId, interval: u32, t: &mut Tracker) {
    // A slot change may drop the waiting entry and its interval's rows too.
    let before = p.stats().frames_dropped;
    if interval % 15 == 7 {
        let gains: [&[u8]; 3] = [b"gain=2", b"gain=4", b"gain=1"];
        let _ = p.set_slot(source, b"ch1", gains[(interval / 15) as usize % 3]);
    }
    p.end_interval();
    t.dropped(p.stats().frames_dropped - before);
}

/// Hand the socket what it takes of the frames due, polling each into the
/// outbox, and record where each lies in the connection's bytes.
fn send(socket: &mut tcp::Socket, outbox: &mut Outbox<'_>, p: &mut Publishing, t: &mut Tracker) {
    while t.has_room() {
        let fresh = outbox.under_way().is_none();
        let before: PublisherStats = p.stats();
        let took = match outbox.pending(p) {
            Ok(Some(bytes)) => socket.send_slice(bytes).unwrap_or(0),
            _ => return,
        };
        if fresh {
            if let Some((frame, _)) = outbox.under_way() {
                t.polled(&frame, &before, &p.stats());
            }
        }
        outbox.advance(took);
        t.handed(took);
        if took == 0 {
            return;
        }
    }
}
