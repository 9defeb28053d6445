//! [`MemoryBudget`]: memory shared by many connections' receive buffers,
//! bounded, and shared fairly.

#[cfg(feature = "tokio")]
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard};

/// The most a buffer grows to for reading ahead, beyond what the frame in
/// hand needs: large enough that small frames arrive many to a read.
pub(crate) const READ_AHEAD: usize = 64 * 1024;

/// Memory shared by many connections' receive buffers (and, in a server,
/// each connection's own state), bounded, and shared fairly.
///
/// A buffer asks it before growing; growth that a frame needs and the
/// budget cannot give ends that connection
/// ([`ReadErrorKind::MemoryBudget`](crate::ReadErrorKind::MemoryBudget)), while growth for reading ahead is
/// simply skipped. Buffers give their memory back when they shrink or drop.
///
/// So that a few connections cannot lock out the rest, what buffers hold
/// past 64 KiB each (the read-ahead; only large frames need more) may take
/// at most seven eighths of the limit, and one connection at most half of
/// that: an eighth is always left for new connections and frames of up to
/// 64 KiB.
///
/// ```
/// use dendro_wire_std::MemoryBudget;
///
/// let budget = MemoryBudget::new(1 << 20);
/// assert_eq!((budget.limit(), budget.in_use()), (1 << 20, 0));
/// assert_eq!(budget.most_per_connection(), (64 << 10) + (448 << 10));
/// ```
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    usage: Mutex<Usage>,
}

/// What a budget has given out.
#[derive(Debug, Default)]
struct Usage {
    /// Every byte held.
    in_use: usize,
    /// Of those, what buffers hold past [`READ_AHEAD`] each.
    large: usize,
}

/// Of a buffer of `len` bytes, the part past [`READ_AHEAD`].
fn large(len: usize) -> usize {
    len.saturating_sub(READ_AHEAD)
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        MemoryBudget {
            limit,
            usage: Mutex::default(),
        }
    }

    /// The bytes it allows in all.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes held now.
    pub fn in_use(&self) -> usize {
        self.usage().in_use
    }

    /// The most one connection's buffer may hold: 64 KiB of read-ahead, and
    /// half of what large frames may hold together.
    pub fn most_per_connection(&self) -> usize {
        READ_AHEAD + self.large_limit() / 2
    }

    /// What buffers may hold together past [`READ_AHEAD`] each: all but the
    /// eighth kept for new connections and small frames.
    fn large_limit(&self) -> usize {
        self.limit - self.limit / 8
    }

    fn usage(&self) -> MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Let a buffer of `from` bytes grow to `to`, if that keeps within the
    /// limit, the large frames' share and one connection's; else the most
    /// it may grow to now.
    pub(super) fn charge(&self, from: usize, to: usize) -> Result<(), usize> {
        if to <= from {
            return Ok(());
        }
        let mut usage = self.usage();
        let free = self.limit.saturating_sub(usage.in_use);
        let large_most = (self.large_limit() / 2)
            .min(large(from) + self.large_limit().saturating_sub(usage.large));
        if to - from > free || large(to) > large_most {
            return Err((from + free).min(READ_AHEAD + large_most));
        }
        usage.in_use += to - from;
        usage.large += large(to) - large(from);
        Ok(())
    }

    /// A buffer of `from` bytes now holds `to`, whether or not the budget
    /// agrees (the allocator gave or kept other than what was asked).
    pub(super) fn settle(&self, from: usize, to: usize) {
        let mut usage = self.usage();
        usage.in_use = (usage.in_use + to).saturating_sub(from);
        usage.large = (usage.large + large(to)).saturating_sub(large(from));
    }

    /// Hold `n` bytes for what a connection keeps beside its buffer (its
    /// task, its socket, its TLS state), if the limit allows; given back
    /// when the hold drops.
    #[cfg(feature = "tokio")]
    pub(crate) fn hold(self: &Arc<Self>, n: usize) -> Option<Held> {
        self.charge(0, n.min(READ_AHEAD)).ok()?;
        Some(Held {
            budget: self.clone(),
            n: n.min(READ_AHEAD),
        })
    }
}

/// Bytes held of a [`MemoryBudget`] until dropped.
#[cfg(feature = "tokio")]
#[derive(Debug)]
pub(crate) struct Held {
    budget: Arc<MemoryBudget>,
    n: usize,
}

#[cfg(feature = "tls")]
impl Held {
    /// Hold `to` bytes instead, if the limit allows growing to them
    /// (shrinking always does); whether it held them.
    pub(crate) fn set(&mut self, to: usize) -> bool {
        if to > self.n && self.budget.charge(self.n, to).is_err() {
            return false;
        }
        if to < self.n {
            self.budget.settle(self.n, to);
        }
        self.n = to;
        true
    }
}

#[cfg(feature = "tokio")]
impl Drop for Held {
    fn drop(&mut self) {
        self.budget.settle(self.n, 0);
    }
}
