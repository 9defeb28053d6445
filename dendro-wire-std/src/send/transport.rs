//! The blocking publishing transports: a queue drained, on a thread of its
//! own, into TCP, a Unix socket or a file, reconnecting when one fails. The
//! protocol is not here, nor when to reconnect or what to log: these loops
//! only connect, write and wait, and [`Drain`] decides. The receiving end is
//! [`receive`](crate::receive).

use std::io::{self, BufWriter, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use dendro_wire_core::{PREAMBLE, PREAMBLE_BYTES};

use super::drain::{closed_by_peer, Drain, DrainOptions, Reconnect, TransportStats, STOP_CHECK};
use super::queue::FrameQueue;

/// How much a connection buffers before writing: a busy stream goes out in
/// large writes.
pub(crate) const WRITE_BUFFER: usize = 256 * 1024;

/// Drain `queue` into connections that `connect` opens, until the queue is
/// closed and drained, or `options.stop` is set.
///
/// Each connection starts with the preamble and tells the queue, which asks
/// the publisher for handshakes and full state (rule 8); a write error ends
/// the connection, and `options.reconnect` says whether another is tried.
/// Failed connects and lost connections are logged, at most once a second.
pub fn drain_queue<W: Write>(
    queue: &FrameQueue,
    connect: impl FnMut() -> io::Result<W>,
    options: DrainOptions,
) -> io::Result<TransportStats> {
    drain_checked(queue, connect, options, |_| None)
}

/// [`drain_queue`], each connection that ends cleanly then asked by
/// `closed` whether the subscriber had closed it (and why): a write into a
/// socket the other end has closed can succeed, so the end is when to look.
pub(crate) fn drain_checked<W: Write>(
    queue: &FrameQueue,
    mut connect: impl FnMut() -> io::Result<W>,
    options: DrainOptions,
    closed: impl Fn(&mut W) -> Option<io::Error>,
) -> io::Result<TransportStats> {
    let mut drain = Drain::new(queue, options);
    while !drain.done() {
        let conn = match connect() {
            Ok(conn) => conn,
            Err(e) => {
                std::thread::sleep(drain.connect_failed(e)?);
                continue;
            }
        };
        drain.connected();
        let written = write_connection(&mut drain, conn, &closed);
        if let Some(end) = drain.ended(written) {
            return end;
        }
    }
    Ok(drain.finish())
}

/// One connection: the preamble, then frames until the queue is closed and
/// drained or the transport stopped (`Ok`), or a write fails (`Err`).
fn write_connection<W: Write>(
    drain: &mut Drain<'_>,
    conn: W,
    closed: impl Fn(&mut W) -> Option<io::Error>,
) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(WRITE_BUFFER, conn);
    w.write_all(&PREAMBLE)?;
    w.flush()?;
    drain.preamble_written(PREAMBLE_BYTES);
    loop {
        match drain.next_frame() {
            Some(frame) => {
                w.write_all(&frame)?;
                drain.written(frame);
            }
            // Flush only when nothing is waiting, so a busy stream goes out
            // in large writes and an idle one without delay.
            None => {
                w.flush()?;
                if drain.idle_done() {
                    if let Some(why) = closed(w.get_mut()) {
                        drain.closed_at_end(why);
                    }
                    return Ok(());
                }
                drain.queue().wait(STOP_CHECK);
            }
        }
    }
}

/// Whether the subscriber ends the connection within `SETTLE` of the last
/// write, before the transport's end: a subscriber that serves a stream
/// never ends it first, so one that does had refused it. Its bytes (TLS
/// records) are passed over, a bounded many.
fn ended_already(socket: &impl Socket, buf: &mut [u8]) -> Option<io::Error> {
    let deadline = std::time::Instant::now() + SETTLE;
    for _ in 0..128 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return None;
        }
        socket.set_read_timeout(Some(left)).ok()?;
        match socket.read_some(buf) {
            Ok(0) => {
                return Some(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "it ended the connection before the stream did",
                ))
            }
            Ok(_) => continue,
            Err(e) if closed_by_peer(&e) => return Some(e),
            Err(_) => return None,
        }
    }
    None
}

/// How long a socket's clean end watches for the subscriber's refusal
/// before ending: the time a subscriber takes to read and refuse what was
/// last written, on a near network and a busy host. At 200 ms a collector
/// refusing a TLS agent's last connection on a loaded 2-core machine was
/// now and then later, and its refusal taken for an orderly end.
const SETTLE: Duration = Duration::from_secs(1);

/// How long a socket's clean end waits for the subscriber to close its
/// side, after the transport has closed its own.
const END_WAIT: Duration = Duration::from_secs(1);

/// A socket a subscriber may have closed under its writer: a TCP or Unix
/// stream ([`closed_by_subscriber`]).
pub trait Socket {
    /// As the stream's own `set_read_timeout`.
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// Shut the stream for writing: the subscriber sees the stream's end.
    fn shutdown_write(&self) -> io::Result<()>;
    /// Read what the subscriber sent, if anything.
    fn read_some(&self, buf: &mut [u8]) -> io::Result<usize>;
}

macro_rules! socket {
    ($t:ty) => {
        impl Socket for $t {
            fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
                <$t>::set_read_timeout(self, timeout)
            }
            fn shutdown_write(&self) -> io::Result<()> {
                self.shutdown(std::net::Shutdown::Write)
            }
            fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
                io::Read::read(&mut &*self, buf)
            }
        }
    };
}
socket!(TcpStream);
#[cfg(unix)]
socket!(std::os::unix::net::UnixStream);

/// Whether the subscriber closed `socket` on its writer, once everything
/// has been written: it ended the connection within a second of the last
/// write (a subscriber that serves a stream never ends it first, so one
/// that does had refused it), or reset it, within a second of the writer's
/// end, with what was written not all read. The writer's side is shut for
/// writing either way, and the subscriber's end after that (its FIN) is the
/// orderly end of a stream it served, not a refusal. Written is not
/// applied: the protocol has no acknowledgement, and `None` says only that
/// no refusal was seen.
pub fn closed_by_subscriber(socket: &impl Socket) -> Option<io::Error> {
    closed_by_subscriber_ending(socket, || {})
}

/// [`closed_by_subscriber`], with `end` the writer's own end of the stream
/// above the socket (TLS's `close_notify`), sent once the watch for an early
/// end is over and before the socket is shut for writing: the subscriber's
/// answer to it (its own `close_notify` and FIN) is then the orderly end it
/// is, never taken for a refusal.
pub(crate) fn closed_by_subscriber_ending(
    socket: &impl Socket,
    end: impl FnOnce(),
) -> Option<io::Error> {
    let mut buf = [0; 512];
    if let Some(ended) = ended_already(socket, &mut buf) {
        return Some(ended);
    }
    end();
    socket.shutdown_write().ok()?;
    // Until the subscriber's end, within the wait: bytes it sends (a TLS
    // record) are passed over.
    let deadline = std::time::Instant::now() + END_WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return None;
        }
        socket.set_read_timeout(Some(left)).ok()?;
        match socket.read_some(&mut buf) {
            Ok(0) => return None,
            Ok(_) => continue,
            Err(e) if closed_by_peer(&e) => {
                return Some(io::Error::new(
                    e.kind(),
                    format!("it reset the connection with what was written not all read ({e})"),
                ))
            }
            Err(_) => return None,
        }
    }
}

/// Start a thread draining `queue` to `addr` over TCP, as `options` say
/// (see [`drain_queue`]).
pub fn publish_tcp(
    queue: FrameQueue,
    addr: SocketAddr,
    options: DrainOptions,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        drain_checked(
            &queue,
            || connect_tcp(addr),
            options,
            |s| closed_by_subscriber(s),
        )
    })
}

/// A TCP connection to a collector, with Nagle off (a publisher writes
/// whole frames and wants them sent); a failure names the address.
pub(crate) fn connect_tcp(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = TcpStream::connect(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot connect to {addr}: {e}")))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Start a thread draining `queue` to the Unix socket at `path`, as
/// `options` say (see [`drain_queue`]).
#[cfg(unix)]
pub fn publish_unix(
    queue: FrameQueue,
    path: std::path::PathBuf,
    options: DrainOptions,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        let connect = || {
            std::os::unix::net::UnixStream::connect(&path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot connect to {}: {e}", path.display()),
                )
            })
        };
        drain_checked(&queue, connect, options, |s| closed_by_subscriber(s))
    })
}

/// Start a thread draining `queue` into one writer (a capture file, a
/// pipe). A writer is one connection: its failure ends the transport, and
/// `options.reconnect` is taken to be [`Reconnect::Never`] whatever it says.
pub fn publish_to_writer<W: Write + Send + 'static>(
    queue: FrameQueue,
    writer: W,
    options: DrainOptions,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        let mut writer = Some(writer);
        let connect = || {
            writer
                .take()
                .ok_or_else(|| io::Error::other("a capture is written once"))
        };
        let options = DrainOptions {
            reconnect: Reconnect::Never,
            ..options
        };
        drain_queue(&queue, connect, options)
    })
}
