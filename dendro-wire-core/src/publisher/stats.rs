//! [`PublisherStats`], what a publisher (or one of its sources) has done,
//! counted; and [`Waiting`], what it has due and not yet polled.

/// What a publisher has done ([`Publisher::stats`](crate::Publisher::stats)), or one of its sources
/// ([`Publisher::source_stats`](crate::Publisher::source_stats)).
///
/// Every row given to [`observe`](crate::Publisher::observe) is counted once, in
/// one place: refused when it was given (`rows_refused`), or observed
/// (`rows_observed`) and then sent, dropped with its frame, or unsent, or
/// still in hand (in the frame under way, or in a frame due):
///
/// ```text
/// rows_observed = rows_sent + rows_dropped + rows_unsent + rows in hand
/// ```
///
/// so after [`end_interval`](crate::Publisher::end_interval) and
/// [`disconnected`](crate::Publisher::disconnected) the first three add up to it.
///
/// Sent is not delivered: a frame is sent once it is polled, handed to
/// the link. The protocol has no acknowledgement, so what arrived is the
/// subscriber's to count; a frame a link took only part of before it went
/// down is counted here too, once the [`Outbox`](super::Outbox) holding it
/// is [abandoned](super::Outbox::abandon) (`frames_cut`, `rows_cut`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct PublisherStats {
    /// Intervals ended.
    pub intervals: u64,
    /// Connections begun with [`Publisher::connected`](crate::Publisher::connected).
    pub connections: u64,
    /// Frames polled, and frames encoded by
    /// [`encode_passthrough`](crate::Publisher::encode_passthrough) and
    /// [`update_source`](crate::Publisher::update_source).
    pub frames_sent: u64,
    /// Rows taken by `observe` into an interval's `Rows` frame.
    pub rows_observed: u64,
    /// Rows observed that went out in a polled `Rows` frame, each counted
    /// once: handed to the link, not known to be delivered.
    pub rows_sent: u64,
    /// Rows a connection's first `Rows` frame carried again: the latest row
    /// of each stream not observed in it, if observed against the slots as
    /// they are (rule 3). Not in `rows_observed`: each was counted when it
    /// was observed.
    pub rows_repeated: u64,
    /// `Rows` frames dropped on a connection that went on, because the
    /// interval after theirs ended before they were polled (a link slower
    /// than the readings), an entry before them was, or
    /// [`drop_waiting`](crate::Publisher::drop_waiting) was called. Each `seq`
    /// stays spent, so each is a frame a subscriber sees lost (a gap,
    /// rule 6), as it counts them: a connection's first `Rows` frame is
    /// never dropped while the connection lasts, and one dropped before
    /// it was made, or after the last `Rows` frame polled on a connection
    /// that then ended, is counted in `frames_unsent` instead, since no
    /// subscriber can see it lost.
    pub frames_dropped: u64,
    /// Rows observed in the `Rows` frames dropped on a connection that went
    /// on, a connection's first included.
    pub rows_dropped: u64,
    /// Frames that were due and never polled, other than those in
    /// `frames_dropped`: every frame due when the connection changed, the
    /// `Rows` frames dropped after the last one it carried, and the index
    /// entries dropped on a slow link.
    pub frames_unsent: u64,
    /// Rows observed that belong to no connection: no connection was open
    /// when their frame closed, or it was due when the connection changed.
    pub rows_unsent: u64,
    /// Calls to `observe` refused, whatever the reason: a row the frame
    /// buffer or the storage could not hold, or a stream or source never
    /// declared. A refused row is not observed.
    pub rows_refused: u64,
    /// Slot changes refused: the `Full` would outgrow the frame buffer, or
    /// the storage could not hold the slot.
    pub slot_changes_refused: u64,
    /// Frames polled (counted in `frames_sent`) that a link took only part
    /// of before it went down: given up by [`Outbox::abandon`](super::Outbox::abandon).
    /// Counted for the publisher, not per source.
    pub frames_cut: u64,
    /// The rows in those frames, rule 3's repeats included (each also
    /// counted in `rows_sent` or `rows_repeated`).
    pub rows_cut: u64,
}

/// What one source has done, kept in the source: [`PublisherStats`] but
/// what the publisher counts for all (intervals, connections, frames cut).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SourceCounts {
    pub(super) frames_sent: u64,
    pub(super) rows_observed: u64,
    pub(super) rows_sent: u64,
    pub(super) rows_repeated: u64,
    pub(super) frames_dropped: u64,
    pub(super) rows_dropped: u64,
    pub(super) frames_unsent: u64,
    pub(super) rows_unsent: u64,
    pub(super) rows_refused: u64,
    pub(super) slot_changes_refused: u64,
}

impl PublisherStats {
    /// A source's counts added to these.
    pub(super) fn add(&mut self, c: &SourceCounts) {
        self.frames_sent += c.frames_sent;
        self.rows_observed += c.rows_observed;
        self.rows_sent += c.rows_sent;
        self.rows_repeated += c.rows_repeated;
        self.frames_dropped += c.frames_dropped;
        self.rows_dropped += c.rows_dropped;
        self.frames_unsent += c.frames_unsent;
        self.rows_unsent += c.rows_unsent;
        self.rows_refused += c.rows_refused;
        self.slot_changes_refused += c.slot_changes_refused;
    }
}

/// What a publisher has due and not yet polled, from
/// [`Publisher::waiting`](crate::Publisher::waiting): for a caller that decides whether its link can
/// carry it before the next interval ends, or drops it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Waiting {
    /// Frames due.
    pub frames: u32,
    /// Their bytes, length prefixes included.
    pub bytes: usize,
    /// The rows observed in the `Rows` frames among them (not those rule 3
    /// carries again).
    pub rows: u64,
}

/// `*counter += n`, out of line: on a 32-bit core a 64-bit sum is a load,
/// an add and a store of each half, and a source counts in many places
/// (`cargo xtask firmware` prints the footprint).
#[inline(never)]
pub(super) fn count(counter: &mut u64, n: u64) {
    *counter += n;
}
