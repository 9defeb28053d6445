//! Draining a publisher's queue into connections: when to connect again and
//! after how long, what to log and count, when to stop. Written once here,
//! as [`Drain`], for the blocking transports ([`drain_queue`](super::drain_queue))
//! and the async one ([`drain_queue_async`](super::drain_queue_async)); the
//! loops that drive it only connect, write, flush, sleep and wait, each in
//! its own way.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff};
use dendro_wire_core::Rows;

use super::queue::FrameQueue;
use crate::throttle::Throttle;

/// How long a transport waits between attempts to connect: backon's
/// [`ExponentialBuilder`], which this crate re-exports as
/// [`send::ExponentialBuilder`](crate::send::ExponentialBuilder) so a
/// program need not name backon itself.
///
/// The default, [`default_backoff`], waits 25 ms, doubling to at most
/// 2.5 s, each wait with backon's jitter of up to the wait again (so the
/// first is 25 to 50 ms, and none is above 5 s: a fleet of agents that lost
/// one collector together do not all come back at once), and never gives
/// up. The waits start over after a connection succeeds.
///
/// A builder's `max_times` or `total_delay` is how long a transport keeps
/// trying, counted from its last connection: once the builder's waits run
/// out, the transport ends with the last error. backon's own
/// `ExponentialBuilder::default()` stops after 3 attempts, so start from
/// [`default_backoff`] (or call `without_max_times`) for a transport that
/// keeps trying.
// backon does the waiting; a type of our own beside it would only name the
// same two numbers again.
pub use backon::ExponentialBuilder;

/// The backoff [`Reconnect::default`] uses: from 25 ms, doubling, to at most
/// 2.5 s, each wait jittered up to twice itself (25 ms to 5 s in all), with
/// no end.
///
/// ```
/// use std::time::Duration;
/// use dendro_wire_std::send::{default_backoff, BackoffBuilder};
///
/// for wait in default_backoff().build().take(20) {
///     assert!(wait >= Duration::from_millis(25) && wait <= Duration::from_secs(5), "{wait:?}");
/// }
/// ```
pub const fn default_backoff() -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(25))
        .with_max_delay(Duration::from_millis(2500))
        .with_jitter()
        .without_max_times()
}

/// What a publishing transport does when it cannot connect or loses its
/// connection. The default is [`Reconnect::After`] with
/// [`default_backoff`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Reconnect {
    /// Connect again, waiting between attempts as the backoff says: a
    /// network peer that may come back. A lost connection is tried again at
    /// once; each failed attempt then waits the backoff's next delay.
    After(ExponentialBuilder),
    /// The first connection is the only one, and its failure ends the
    /// transport with that error: a file, or a pipe.
    Never,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect::After(default_backoff())
    }
}

/// How a publishing transport drains its queue: what it does when a
/// connection fails, and what ends it early.
///
/// The default reconnects with [`default_backoff`] (25 ms to 5 s, never
/// giving up) and runs until the queue is closed and drained, with no stop
/// flag. Like every configuration and count of this crate it is
/// `#[non_exhaustive]`: start from [`DrainOptions::default`] and change
/// what differs with the setters (or by assigning a field), so a field
/// added later breaks no caller.
///
/// ```
/// use std::sync::{atomic::AtomicBool, Arc};
/// use std::time::Duration;
/// use dendro_wire_std::send::{default_backoff, DrainOptions, Reconnect};
///
/// let stop = Arc::new(AtomicBool::new(false));
/// let options = DrainOptions::default()
///     .reconnect(Reconnect::After(default_backoff().with_max_delay(Duration::from_secs(1))))
///     .stop(stop.clone());
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct DrainOptions {
    /// What follows a failed connect or a lost connection; by default
    /// [`Reconnect::After`] with [`default_backoff`].
    pub reconnect: Reconnect,
    /// Set to end the transport as soon as it sees it (within
    /// [`STOP_CHECK`] when it is waiting for frames), dropping what is still
    /// queued (counted in the queue's `dropped_disconnected`). Closing the
    /// queue ([`FrameQueue::close`]) is the graceful end: every frame queued
    /// is written first. `None` by default.
    pub stop: Option<Arc<AtomicBool>>,
}

impl DrainOptions {
    /// Set [`reconnect`](Self::reconnect).
    pub fn reconnect(mut self, reconnect: Reconnect) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// Set [`stop`](Self::stop): the flag that ends the transport.
    pub fn stop(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }
}

/// How often a transport waiting for frames looks at its stop flag: 50 ms.
pub const STOP_CHECK: Duration = Duration::from_millis(50);

/// Whether a write failed because the other end had closed the connection.
pub(crate) fn closed_by_peer(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}

/// What a publishing transport did: every count since it started, over all
/// its connections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportStats {
    /// Connections opened.
    pub connections: u64,
    /// Attempts to connect that failed.
    pub failed_connects: u64,
    /// Frames written.
    pub frames: u64,
    /// Rows in the `Rows` frames written.
    pub rows: u64,
    /// Bytes written, preambles included.
    pub bytes: u64,
    /// Connections the subscriber closed: a write refused because it had
    /// (a reset, a broken pipe), or, on a socket, an end it made before the
    /// transport's own or a reset after it. Written is not delivered: the
    /// protocol has no acknowledgement, and what such a connection wrote
    /// may not have been applied.
    pub closed_by_peer: u64,
    /// Connections that ended with no frame written on them and not closed
    /// by the subscriber: one opened as the queue closed, say, which
    /// carried its preamble and nothing to refuse.
    pub connections_empty: u64,
    /// The last failure to connect or to write, if any: what to tell a
    /// user whose frames went nowhere.
    pub last_error: Option<String>,
}

/// One transport's draining of one queue, between the calls of a loop that
/// does the I/O: it decides, counts and logs; the loop connects, writes,
/// sleeps and waits.
///
/// A failed connect and a lost connection are logged as warnings, at most
/// once a second with a count of the rest, and a reconnect once it
/// succeeds, so an operator sees a publisher whose frames go nowhere.
pub(crate) struct Drain<'q> {
    queue: &'q FrameQueue,
    options: DrainOptions,
    stats: TransportStats,
    /// The waits before the next attempts; `None` for a transport that
    /// does not reconnect.
    delays: Option<ExponentialBackoff>,
    failures: Throttle,
    failed_since_connected: u64,
    /// Of the connection under way: frames written, and whether the
    /// subscriber closed it.
    frames_on_connection: u64,
    closed_this: bool,
}

impl<'q> Drain<'q> {
    pub(crate) fn new(queue: &'q FrameQueue, options: DrainOptions) -> Self {
        Drain {
            queue,
            delays: Self::backoff(&options),
            options,
            stats: TransportStats::default(),
            failures: Throttle::new(Duration::from_secs(1)),
            failed_since_connected: 0,
            frames_on_connection: 0,
            closed_this: false,
        }
    }

    fn backoff(options: &DrainOptions) -> Option<ExponentialBackoff> {
        match options.reconnect {
            Reconnect::After(backoff) => Some(backoff.build()),
            Reconnect::Never => None,
        }
    }

    fn stopped(&self) -> bool {
        self.options
            .stop
            .as_deref()
            .is_some_and(|stop| stop.load(Ordering::Relaxed))
    }

    /// The queue being drained.
    pub(crate) fn queue(&self) -> &'q FrameQueue {
        self.queue
    }

    /// Whether the transport is done before connecting again: stopped, or
    /// its queue closed.
    pub(crate) fn done(&self) -> bool {
        self.stopped() || self.queue.is_closed()
    }

    /// An attempt to connect failed: how long to wait before the next, or
    /// the error that ends a transport that does not reconnect, or whose
    /// backoff has run out.
    pub(crate) fn connect_failed(&mut self, e: io::Error) -> io::Result<Duration> {
        let Some(delays) = &mut self.delays else {
            return Err(e);
        };
        self.stats.failed_connects += 1;
        self.failed_since_connected += 1;
        let Some(delay) = delays.next() else {
            let attempts = self.failed_since_connected;
            return Err(io::Error::new(
                e.kind(),
                format!("{e}; gave up after {attempts} failed attempt(s), as the backoff says"),
            ));
        };
        if let Some(held) = self.failures.hit() {
            log::warn!(
                "{e}; trying again in {delay:?} ({} failed attempt(s) in all, {held} not said \
                 since the last)",
                self.stats.failed_connects
            );
        }
        self.stats.last_error = Some(e.to_string());
        Ok(delay)
    }

    /// A connection is open; its preamble is next.
    pub(crate) fn connected(&mut self) {
        if self.stats.connections > 0 || self.failed_since_connected > 0 {
            log::warn!(
                "connected again after {} failed attempt(s); the subscriber gets every \
                 handshake and full state anew (rule 8)",
                self.failed_since_connected
            );
        }
        self.failed_since_connected = 0;
        self.delays = Self::backoff(&self.options);
        self.stats.connections += 1;
        (self.frames_on_connection, self.closed_this) = (0, false);
    }

    /// The preamble is written and flushed: the queue starts this
    /// connection afresh, and the publisher opens it with handshakes and
    /// full state (rule 8).
    pub(crate) fn preamble_written(&mut self, bytes: usize) {
        self.stats.bytes += bytes as u64;
        self.queue.connected();
    }

    /// The next frame to write, if one is waiting.
    pub(crate) fn next_frame(&self) -> Option<Vec<u8>> {
        self.queue.pop(Duration::ZERO)
    }

    /// A frame was written: counted, and its buffer given back for reuse.
    pub(crate) fn written(&mut self, frame: Vec<u8>) {
        self.stats.frames += 1;
        self.frames_on_connection += 1;
        self.stats.rows += Rows::count_in_frame(&frame).map_or(0, u64::from);
        self.stats.bytes += frame.len() as u64;
        self.queue.recycle(frame);
    }

    /// Nothing is waiting and what was written is flushed: whether the
    /// connection's work is done (stopped, or the queue closed and drained)
    /// rather than to wait for more.
    pub(crate) fn idle_done(&self) -> bool {
        self.stopped() || (self.queue.is_closed() && self.queue.is_empty())
    }

    /// The connection ended, cleanly (`Ok`: nothing more to write) or on a
    /// write error. `Some` ends the transport with what it holds; `None`
    /// connects again.
    pub(crate) fn ended(&mut self, result: io::Result<()>) -> Option<io::Result<TransportStats>> {
        self.queue.disconnected();
        let closed = self.closed_this || result.as_ref().is_err_and(closed_by_peer);
        if self.frames_on_connection == 0 && !closed {
            self.stats.connections_empty += 1;
        }
        match result {
            Ok(()) => Some(Ok(std::mem::take(&mut self.stats))),
            Err(e) if self.delays.is_none() => Some(Err(e)),
            Err(e) => {
                if closed_by_peer(&e) {
                    self.stats.closed_by_peer += 1;
                    log::warn!(
                        "the subscriber closed the connection ({e}); what was written to it may \
                         not have been applied, frames queued for it are dropped, and the next \
                         connection starts over"
                    );
                } else {
                    log::warn!(
                        "the connection was lost ({e}); frames queued for it are dropped, and \
                         the next connection starts over"
                    );
                }
                self.stats.last_error = Some(e.to_string());
                None
            }
        }
    }

    /// The subscriber closed a connection that was ending cleanly: `why`.
    pub(crate) fn closed_at_end(&mut self, why: io::Error) {
        self.stats.closed_by_peer += 1;
        self.closed_this = true;
        log::warn!("the subscriber closed the connection: {why}");
        self.stats.last_error = Some(why.to_string());
    }

    /// What the transport did, once it is done.
    pub(crate) fn finish(self) -> TransportStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::{Drain, DrainOptions, FrameQueue};

    /// A connection that carried no frame and was not closed by the
    /// subscriber is counted as empty, apart from those the subscriber
    /// closed and those that carried frames.
    #[test]
    fn a_connection_that_carried_no_frame_is_counted_apart() {
        let queue = FrameQueue::new(16, 1 << 20);
        let mut drain = Drain::new(&queue, DrainOptions::default());
        // Refused after a frame.
        drain.connected();
        drain.written(vec![0; 8]);
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert!(drain.ended(Err(reset)).is_none());
        // Refused before any frame: closed, not empty.
        drain.connected();
        drain.closed_at_end(io::Error::from(io::ErrorKind::UnexpectedEof));
        assert!(drain
            .ended(Err(io::Error::from(io::ErrorKind::TimedOut)))
            .is_none());
        // Nothing written, nothing refused: empty.
        drain.connected();
        let stats = drain.ended(Ok(())).unwrap().unwrap();
        assert_eq!(
            (
                stats.connections,
                stats.closed_by_peer,
                stats.connections_empty
            ),
            (3, 2, 1),
            "{stats:?}"
        );
    }
}
