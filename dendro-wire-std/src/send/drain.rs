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

/// How long to wait between attempts to connect: doubling from `initial` up
/// to `max`, each wait jittered between half and all of that (so a fleet of
/// agents that lost one collector together do not all come back at once);
/// back to `initial` after a connection succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(5),
        }
    }
}

impl Backoff {
    /// The waits, one per failed attempt, without end.
    ///
    /// ```
    /// use std::time::Duration;
    /// use dendro_wire_std::send::Backoff;
    ///
    /// let backoff = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(1) };
    /// for wait in backoff.delays().take(20) {
    ///     assert!(wait >= Duration::from_millis(50) && wait <= Duration::from_secs(1), "{wait:?}");
    /// }
    /// ```
    pub fn delays(&self) -> impl Iterator<Item = Duration> {
        self.waits()
    }

    fn waits(&self) -> ExponentialBackoff {
        // backon adds up to the wait again as jitter: half the waits, and
        // their jitter, make the waits asked for.
        backon::ExponentialBuilder::default()
            .with_min_delay(self.initial / 2)
            .with_max_delay(self.max.max(self.initial) / 2)
            .with_jitter()
            .without_max_times()
            .build()
    }
}

/// What a publishing transport does when it cannot connect or loses its
/// connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconnect {
    /// Connect again, waiting between attempts as the backoff says: a
    /// network peer that may come back.
    After(Backoff),
    /// The first connection is the only one, and its failure ends the
    /// transport with that error: a file, or a pipe.
    Never,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect::After(Backoff::default())
    }
}

/// How a publishing transport drains its queue: what it does when a
/// connection fails, and what ends it early.
///
/// The default reconnects with the default [`Backoff`] and runs until the
/// queue is closed and drained.
///
/// ```
/// use std::sync::{atomic::AtomicBool, Arc};
/// use std::time::Duration;
/// use dendro_wire_std::send::{Backoff, DrainOptions, Reconnect};
///
/// let stop = Arc::new(AtomicBool::new(false));
/// let options = DrainOptions {
///     reconnect: Reconnect::After(Backoff { initial: Duration::from_millis(10), max: Duration::from_secs(1) }),
///     stop: Some(stop.clone()),
/// };
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
pub struct DrainOptions {
    /// What follows a failed connect or a lost connection.
    pub reconnect: Reconnect,
    /// Set to end the transport as soon as it sees it (within
    /// [`STOP_CHECK`] when it is waiting for frames), dropping what is still
    /// queued (counted in the queue's `dropped_disconnected`). Closing the
    /// queue ([`FrameQueue::close`]) is the graceful end: every frame queued
    /// is written first.
    pub stop: Option<Arc<AtomicBool>>,
}

/// How often a transport waiting for frames looks at its stop flag.
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

/// What a publishing transport did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    delays: ExponentialBackoff,
    failures: Throttle,
    failed_since_connected: u64,
}

impl<'q> Drain<'q> {
    pub(crate) fn new(queue: &'q FrameQueue, options: DrainOptions) -> Self {
        Drain {
            queue,
            delays: Self::backoff(&options).waits(),
            options,
            stats: TransportStats::default(),
            failures: Throttle::new(Duration::from_secs(1)),
            failed_since_connected: 0,
        }
    }

    fn backoff(options: &DrainOptions) -> Backoff {
        match options.reconnect {
            Reconnect::After(backoff) => backoff,
            Reconnect::Never => Backoff::default(),
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
    /// the error that ends a transport that does not reconnect.
    pub(crate) fn connect_failed(&mut self, e: io::Error) -> io::Result<Duration> {
        let Reconnect::After(backoff) = self.options.reconnect else {
            return Err(e);
        };
        let delay = self.delays.next().unwrap_or(backoff.max);
        self.stats.failed_connects += 1;
        self.failed_since_connected += 1;
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
        self.delays = Self::backoff(&self.options).waits();
        self.stats.connections += 1;
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
        match result {
            Ok(()) => Some(Ok(std::mem::take(&mut self.stats))),
            Err(e) if self.options.reconnect == Reconnect::Never => Some(Err(e)),
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
        log::warn!("the subscriber closed the connection: {why}");
        self.stats.last_error = Some(why.to_string());
    }

    /// What the transport did, once it is done.
    pub(crate) fn finish(self) -> TransportStats {
        self.stats
    }
}
