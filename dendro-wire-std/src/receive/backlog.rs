//! [`Backlog`]: the work a sink has taken from its connections and not yet
//! finished, bounded in bytes, so that a sink slower than its connections
//! slows them rather than buffering without end.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Work a sink has taken from its connections and not yet finished (an
/// archive's rows handed to its writer and not yet committed), counted in
/// bytes against a bound.
///
/// A sink that queues work shares one through [`Sink::backlog`](super::Sink::backlog).
/// While it is [full](Self::is_full), a receiver applies no more frames
/// from a connection that has opened a source: the frame stays in the
/// connection's buffer, the connection is not read, and TCP pushes back on
/// the publisher, whose own bounded queue then drops and counts. What a
/// backlog holds is therefore at most its bound plus one frame per
/// connection (each already within the receiver's memory budget when it
/// arrived). Connections yet to open a source are not held back: their
/// handshakes are small, their number is capped, and holding them would
/// only make them look like peers that never open one.
///
/// Once full, it lets its waiters go only when it is back under three
/// quarters of its bound: every waiter is woken at once, so ten thousand
/// connections held back by a sink that makes room a little at a time
/// would otherwise all wake for every little.
///
/// ```
/// use dendro_wire_std::receive::Backlog;
///
/// let backlog = Backlog::new(100);
/// backlog.add(60);
/// assert!(!backlog.is_full());
/// backlog.add(60);
/// assert!(backlog.is_full(), "120 of 100 bytes");
/// backlog.remove(60);
/// assert!(!backlog.is_full());
/// backlog.wait_for_room(); // returns at once: there is room
/// ```
#[derive(Debug)]
pub struct Backlog {
    limit: usize,
    bytes: AtomicUsize,
    /// The most it has held.
    peak: AtomicUsize,
    /// What blocking waiters sleep on; taken by `remove` before it wakes
    /// them, so none misses the wake.
    lock: Mutex<()>,
    room: Condvar,
    #[cfg(feature = "tokio")]
    notify: tokio::sync::Notify,
    /// Set once the sink will take nothing more (it failed, say): nobody
    /// waits from then on.
    closed: AtomicBool,
    waiting: AtomicUsize,
    waits: AtomicU64,
}

impl Backlog {
    /// A backlog of at most `limit` bytes (at least one).
    pub fn new(limit: usize) -> Self {
        Backlog {
            limit: limit.max(1),
            bytes: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            lock: Mutex::new(()),
            room: Condvar::new(),
            #[cfg(feature = "tokio")]
            notify: tokio::sync::Notify::new(),
            closed: AtomicBool::new(false),
            waiting: AtomicUsize::new(0),
            waits: AtomicU64::new(0),
        }
    }

    /// Its bound, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes of work taken and not yet finished.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// Whether it holds its bound or more: receivers wait before applying
    /// more. Never, once [closed](Self::close).
    pub fn is_full(&self) -> bool {
        self.bytes() >= self.limit && !self.closed.load(Ordering::Acquire)
    }

    /// The most bytes it has held at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// The sink took `n` bytes of work.
    pub fn add(&self, n: usize) {
        let now = self.bytes.fetch_add(n, Ordering::AcqRel) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// The sink finished `n` bytes of work; if that takes it under the
    /// mark waiters wait for, they go on.
    pub fn remove(&self, n: usize) {
        let before = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some(b.saturating_sub(n))
            })
            .unwrap_or(0);
        let resume = self.resume();
        if before >= resume && before.saturating_sub(n) < resume {
            self.wake();
        }
    }

    /// What a waiter waits for the backlog to be under: three quarters of
    /// its bound.
    fn resume(&self) -> usize {
        self.limit - self.limit / 4
    }

    /// Whether a waiter may go on: it is under three quarters of its
    /// bound, or closed.
    fn has_room(&self) -> bool {
        self.bytes() < self.resume() || self.closed.load(Ordering::Acquire)
    }

    /// The sink will take nothing more: every waiter goes on, and none
    /// waits again.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.room.notify_all();
        #[cfg(feature = "tokio")]
        self.notify.notify_waiters();
    }

    /// Connections waiting for room now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// How many times a connection has waited for room.
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    /// Block until there is room: at once if it is not full, else until it
    /// is under three quarters of its bound.
    pub fn wait_for_room(&self) {
        if !self.is_full() {
            return;
        }
        let _waiting = self.count_wait();
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        while !self.has_room() {
            guard = self.room.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Resolves once there is room: at once if it is not full, else once it
    /// is under three quarters of its bound.
    #[cfg(feature = "tokio")]
    pub async fn room(&self) {
        if !self.is_full() {
            return;
        }
        let _waiting = self.count_wait();
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before looking, so a wake between the look and the
            // wait is not missed.
            notified.as_mut().enable();
            if self.has_room() {
                return;
            }
            notified.await;
        }
    }

    /// Counts a wait, and the waiter until the guard drops.
    fn count_wait(&self) -> Waiting<'_> {
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(self)
    }
}

struct Waiting<'a>(&'a Backlog);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_blocked_waiter_goes_on_when_room_is_made_and_not_before() {
        let backlog = Arc::new(Backlog::new(10));
        backlog.add(10);
        let waiter = {
            let backlog = backlog.clone();
            std::thread::spawn(move || backlog.wait_for_room())
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "full: it waits");
        assert_eq!((backlog.waiting(), backlog.waits()), (1, 1));
        // Room for a little is not enough: it waits for three quarters.
        backlog.remove(1);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "at 9 of 10 it still waits");
        backlog.remove(2);
        waiter.join().unwrap();
        assert_eq!(backlog.waiting(), 0);
    }

    #[test]
    fn closing_lets_every_waiter_go_and_none_wait_again() {
        let backlog = Arc::new(Backlog::new(1));
        backlog.add(5);
        let waiter = {
            let backlog = backlog.clone();
            std::thread::spawn(move || backlog.wait_for_room())
        };
        std::thread::sleep(Duration::from_millis(20));
        backlog.close();
        waiter.join().unwrap();
        assert!(!backlog.is_full());
        backlog.wait_for_room();
    }

    #[test]
    fn removing_more_than_was_added_is_nothing_held() {
        let backlog = Backlog::new(8);
        backlog.add(3);
        backlog.remove(5);
        assert_eq!(backlog.bytes(), 0);
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn an_async_waiter_is_woken_by_room() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let backlog = Arc::new(Backlog::new(10));
        backlog.add(20);
        let remover = {
            let backlog = backlog.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                backlog.remove(15);
            })
        };
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), backlog.room())
                .await
                .expect("woken");
        });
        remover.join().unwrap();
        assert!(!backlog.is_full());
    }
}
