//! [`FrameQueue`]: the bounded hand-off between a publisher's sampling loop
//! and the thread that writes to the transport.
//!
//! Written here rather than taken from a channel crate (crossbeam, flume,
//! async-channel): what it needs is not a channel's — dropping rather than
//! waiting when full, emptying itself and refusing frames until a new
//! connection's opening is queued, an epoch per connection, buffers handed
//! back for reuse — and each of those decisions is taken under the one lock
//! that guards the frames, with the waits (a `Condvar` for threads, a list
//! of wakers for tasks) under that same lock so no wake-up is lost.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use dendro_wire_core::Rows;

/// Encoded frames waiting for the transport, bounded in frames and bytes.
///
/// The sampling side never waits on it: a frame that does not fit is dropped
/// and counted, and a dropped `Rows` frame shows at the subscriber as a `seq`
/// gap, which is what a gap is for (rule 6). The transport side waits for
/// frames, and says when it has a new connection: everything queued for the
/// old one is dropped, and the publisher is asked to start the new one with
/// handshakes and full state (rule 8).
///
/// A transport waits for frames either way: a thread blocks
/// ([`pop`](Self::pop)), a task awaits [`ready`](Self::ready); both are woken
/// when a frame arrives or the queue closes, with no runtime of its own.
///
/// An agent that should not sample before it can send waits for the
/// transport's first connection the same two ways:
/// [`wait_connected`](Self::wait_connected) on a thread,
/// [`wait_connected_async`](Self::wait_connected_async) in a task. Rows
/// observed while no connection is open are dropped and counted (in
/// `AgentStats::rows_dropped`), never held for a later connection: a new
/// connection starts afresh with the latest row of every stream (rule 3).
///
/// Its bounds, [`new`](Self::new)'s two numbers, are what
/// [`AgentConfig`](crate::AgentConfig) says for an agent's queue: by default
/// 4,096 frames and 16 MiB.
///
/// Cloning gives another handle to the same queue.
#[derive(Clone, Debug)]
pub struct FrameQueue {
    shared: Arc<QueueState>,
}

#[derive(Debug)]
struct QueueState {
    inner: Mutex<QueueContents>,
    /// Threads waiting in `pop` for a frame or the close.
    arrived: Condvar,
    /// Threads waiting in `wait_connected` for a connection or the close.
    opened: Condvar,
}

#[derive(Debug)]
struct QueueContents {
    frames: VecDeque<Vec<u8>>,
    bytes: usize,
    max_frames: usize,
    max_bytes: usize,
    /// Emptied buffers, handed back by the transport for the next frames.
    spare: Vec<Vec<u8>>,
    /// A new connection waits for its opening sequence; until it has one,
    /// no other frame may go first.
    resync: bool,
    /// Counts connections, so an opening built for one is not queued on the
    /// next.
    epoch: u64,
    connected: bool,
    closed: bool,
    stats: QueueStats,
    /// Tasks waiting in `ready` for a frame or the close.
    wakers: Vec<Waker>,
    /// Tasks waiting in `wait_connected_async` for a connection or the
    /// close.
    connect_wakers: Vec<Waker>,
}

/// What is waiting in a [`FrameQueue`] for the transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLen {
    /// Frames waiting.
    pub frames: usize,
    /// Their bytes.
    pub bytes: usize,
}

/// What a queue has seen: counts since it was made, never reset.
/// `#[non_exhaustive]`, as every count of this crate is, so a count added
/// later breaks no caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueStats {
    /// Frames accepted.
    pub queued: u64,
    /// Frames refused because the queue was full.
    pub dropped_full: u64,
    /// Frames dropped because the connection they were queued for ended, or
    /// because none was open.
    pub dropped_disconnected: u64,
    /// Bytes accepted.
    pub bytes_queued: u64,
    /// Rows in `Rows` frames that were queued for a connection that ended
    /// before they were written: lost, and seen as a gap.
    pub rows_discarded: u64,
    /// Connections the transport opened.
    pub connections: u64,
}

/// What became of one frame handed to [`FrameQueue::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Queued for the transport.
    Queued,
    /// Dropped: the queue is full.
    Full,
    /// Dropped: no connection is open.
    Disconnected,
}

impl FrameQueue {
    /// A queue holding at most `max_frames` frames and `max_bytes` bytes
    /// (each at least 1; a 0 is taken as 1). A connection's opening
    /// sequence may go past them (see [`push_opening`](Self::push_opening)).
    pub fn new(max_frames: usize, max_bytes: usize) -> Self {
        FrameQueue {
            shared: Arc::new(QueueState {
                inner: Mutex::new(QueueContents {
                    frames: VecDeque::new(),
                    bytes: 0,
                    max_frames: max_frames.max(1),
                    max_bytes: max_bytes.max(1),
                    spare: Vec::new(),
                    resync: false,
                    epoch: 0,
                    connected: false,
                    closed: false,
                    stats: QueueStats::default(),
                    wakers: Vec::new(),
                    connect_wakers: Vec::new(),
                }),
                arrived: Condvar::new(),
                opened: Condvar::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueContents> {
        // A panic on the other side must not take this side down with it:
        // the queue's state is a list of byte buffers, valid at every step.
        self.shared.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tell every waiting transport, thread or task, that a frame arrived or
    /// the queue closed. Called with the lock released.
    fn wake(&self, wakers: Vec<Waker>) {
        self.shared.arrived.notify_all();
        for waker in wakers {
            waker.wake();
        }
    }

    /// An empty buffer to encode a frame into, reused when one is spare.
    pub fn buffer(&self) -> Vec<u8> {
        let mut b = self.lock().spare.pop().unwrap_or_default();
        b.clear();
        b
    }

    /// Queue one frame, or drop it and say why. Never waits.
    pub fn push(&self, frame: Vec<u8>) -> Pushed {
        self.push_all(std::iter::once(frame))
    }

    /// Queue frames that belong together (an interval's index entries and
    /// rows) under one lock, so the transport never sees half of them; each
    /// is still dropped on its own if it does not fit. Returns what became
    /// of the last.
    pub fn push_all(&self, frames: impl IntoIterator<Item = Vec<u8>>) -> Pushed {
        let mut q = self.lock();
        let last = q.push_frames(frames, false);
        let wakers = std::mem::take(&mut q.wakers);
        drop(q);
        self.wake(wakers);
        last
    }

    /// The connection waiting for its opening sequence, if one is: the
    /// token [`push_opening`](Self::push_opening) takes.
    pub fn pending_opening(&self) -> Option<u64> {
        let q = self.lock();
        (q.connected && q.resync).then_some(q.epoch)
    }

    /// Queue a connection's opening sequence — handshakes, full index state,
    /// first rows — past the bounds if need be: without all of it the
    /// connection cannot be understood, and the queue was emptied for it.
    /// `false` if the connection `epoch` named has already gone, in which
    /// case nothing is queued and the next connection still waits.
    pub fn push_opening(&self, epoch: u64, frames: impl IntoIterator<Item = Vec<u8>>) -> bool {
        let mut q = self.lock();
        if !(q.connected && q.resync && q.epoch == epoch) {
            return false;
        }
        q.resync = false;
        q.push_frames(frames, true);
        let wakers = std::mem::take(&mut q.wakers);
        drop(q);
        self.wake(wakers);
        true
    }

    /// Whether a connection is open (and its opening sequence queued).
    pub fn is_open(&self) -> bool {
        let q = self.lock();
        q.connected && !q.resync
    }

    /// Frames and bytes waiting.
    pub fn len(&self) -> QueueLen {
        let q = self.lock();
        QueueLen {
            frames: q.frames.len(),
            bytes: q.bytes,
        }
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().frames.is_empty()
    }

    /// What the queue has seen so far.
    pub fn stats(&self) -> QueueStats {
        self.lock().stats
    }

    /// Transport side: a new connection is open. Frames queued for the last
    /// one are dropped, and the publisher will start this one afresh.
    pub fn connected(&self) {
        let mut q = self.lock();
        q.discard();
        q.stats.connections += 1;
        q.epoch += 1;
        q.connected = true;
        q.resync = true;
        let wakers = std::mem::take(&mut q.connect_wakers);
        drop(q);
        self.shared.opened.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Wait, on a thread, up to `timeout` for the transport to have a
    /// connection open: `true` once it has (at once if it already has),
    /// `false` if `timeout` passed first or the queue is closed.
    ///
    /// What an agent calls before its first interval, so that its first
    /// rows go out rather than being dropped for want of a connection. The
    /// publisher's next [`end_interval`](crate::AgentPublisher::end_interval)
    /// then opens the connection with handshakes and full state.
    ///
    /// ```
    /// use std::time::Duration;
    /// use dendro_wire_std::FrameQueue;
    ///
    /// let queue = FrameQueue::new(16, 1 << 16);
    /// assert!(!queue.wait_connected(Duration::from_millis(1)), "no transport yet");
    /// let transport = queue.clone();
    /// std::thread::spawn(move || transport.connected()); // a transport connects
    /// assert!(queue.wait_connected(Duration::from_secs(10)));
    /// ```
    pub fn wait_connected(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut q = self.lock();
        loop {
            if q.connected || q.closed {
                return q.connected && !q.closed;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return false;
            }
            q = self
                .shared
                .opened
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// [`wait_connected`](Self::wait_connected) in a task: resolves to
    /// `true` once the transport has a connection open, `false` once the
    /// queue is closed; woken by the transport, not by polling, with no
    /// runtime of its own. Bound it with the runtime's timeout
    /// (`tokio::time::timeout`).
    pub fn wait_connected_async(&self) -> WaitConnected<'_> {
        WaitConnected { queue: self }
    }

    /// Transport side: the connection ended. Until the next one, frames are
    /// dropped rather than kept for a connection that would not understand
    /// them.
    pub fn disconnected(&self) {
        let mut q = self.lock();
        q.discard();
        q.connected = false;
        q.resync = false;
    }

    /// Transport side: the next frame, waiting up to `timeout`; `None` on a
    /// timeout or once the queue is closed and empty.
    pub fn pop(&self, timeout: Duration) -> Option<Vec<u8>> {
        let mut q = self.wait_locked(timeout);
        let frame = q.frames.pop_front()?;
        q.bytes -= frame.len();
        Some(frame)
    }

    /// Transport side, on a thread: wait up to `timeout` for a frame or the
    /// close, without taking the frame.
    pub(crate) fn wait(&self, timeout: Duration) {
        drop(self.wait_locked(timeout));
    }

    fn wait_locked(&self, timeout: Duration) -> MutexGuard<'_, QueueContents> {
        let q = self.lock();
        if !q.frames.is_empty() || q.closed || timeout.is_zero() {
            return q;
        }
        let (q, _timed_out) = self
            .shared
            .arrived
            .wait_timeout(q, timeout)
            .unwrap_or_else(|e| e.into_inner());
        q
    }

    /// Transport side, in a task: resolves once a frame is waiting or the
    /// queue is closed, woken by [`push`](Self::push) or
    /// [`close`](Self::close) rather than polling. Take the frame with
    /// `pop(Duration::ZERO)`.
    pub fn ready(&self) -> Ready<'_> {
        Ready { queue: self }
    }

    /// Transport side: give a written frame's buffer back for reuse.
    pub fn recycle(&self, buf: Vec<u8>) {
        let mut q = self.lock();
        if q.spare.len() < 256 {
            q.spare.push(buf);
        }
    }

    /// No more frames will be pushed; the transport drains what is queued
    /// and stops.
    pub fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        let mut wakers = std::mem::take(&mut q.wakers);
        wakers.append(&mut q.connect_wakers);
        drop(q);
        self.shared.opened.notify_all();
        self.wake(wakers);
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

/// The future [`FrameQueue::ready`] returns.
#[derive(Debug)]
#[must_use = "a future does nothing unless awaited"]
pub struct Ready<'a> {
    queue: &'a FrameQueue,
}

impl Future for Ready<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut q = self.queue.lock();
        if !q.frames.is_empty() || q.closed {
            return Poll::Ready(());
        }
        // Registered under the lock that every push takes, so a frame
        // pushed after the check above wakes this task.
        if !q.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            q.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// The future [`FrameQueue::wait_connected_async`] returns: `true` once a
/// connection is open, `false` once the queue is closed.
#[derive(Debug)]
#[must_use = "a future does nothing unless awaited"]
pub struct WaitConnected<'a> {
    queue: &'a FrameQueue,
}

impl Future for WaitConnected<'_> {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let mut q = self.queue.lock();
        if q.connected || q.closed {
            return Poll::Ready(q.connected && !q.closed);
        }
        // Registered under the lock `connected` and `close` take, so
        // neither can come between the check and the registration unseen.
        if !q.connect_wakers.iter().any(|w| w.will_wake(cx.waker())) {
            q.connect_wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl QueueContents {
    fn push_frames(&mut self, frames: impl IntoIterator<Item = Vec<u8>>, force: bool) -> Pushed {
        let mut last = Pushed::Queued;
        for frame in frames {
            last = if !self.connected || (self.resync && !force) {
                self.stats.dropped_disconnected += 1;
                Pushed::Disconnected
            } else if !force
                && (self.frames.len() >= self.max_frames
                    || self.bytes + frame.len() > self.max_bytes)
            {
                self.stats.dropped_full += 1;
                Pushed::Full
            } else {
                self.stats.queued += 1;
                self.stats.bytes_queued += frame.len() as u64;
                self.bytes += frame.len();
                self.frames.push_back(frame);
                Pushed::Queued
            };
        }
        last
    }

    /// Drop what is queued, counting it, and keep the buffers.
    fn discard(&mut self) {
        self.stats.dropped_disconnected += self.frames.len() as u64;
        self.stats.rows_discarded += self
            .frames
            .iter()
            .filter_map(|f| Rows::count_in_frame(f))
            .map(u64::from)
            .sum::<u64>();
        let frames: Vec<Vec<u8>> = self.frames.drain(..).collect();
        self.spare.extend(frames);
        self.bytes = 0;
    }
}
