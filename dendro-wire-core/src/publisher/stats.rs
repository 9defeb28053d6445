//! [`PublisherStats`], what a publisher has done, counted; and
//! [`Waiting`], what it has due and not yet polled.

#[cfg(doc)]
use super::Publisher;

/// What a publisher has done.
///
/// Every row given to [`observe`](Publisher::observe) is counted once, in
/// one place: refused when it was given (`rows_refused`), or observed
/// (`rows_observed`) and then sent, dropped with its frame, or unsent, or
/// still in hand (in the interval under way, or in a frame due):
///
/// ```text
/// rows_observed = rows_sent + rows_dropped + rows_unsent + rows in hand
/// ```
///
/// so after [`end_interval`](Publisher::end_interval) and
/// [`disconnected`](Publisher::disconnected) the first three add up to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct PublisherStats {
    /// Intervals ended.
    pub intervals: u64,
    /// Connections begun with [`Publisher::connected`].
    pub connections: u64,
    /// Frames polled, and frames encoded by
    /// [`encode_passthrough`](Publisher::encode_passthrough) and
    /// [`update_source`](Publisher::update_source).
    pub frames_sent: u64,
    /// Rows taken by `observe` into an interval's `Rows` frame.
    pub rows_observed: u64,
    /// Rows observed that went out in a polled `Rows` frame, each counted
    /// once.
    pub rows_sent: u64,
    /// Rows a connection's first `Rows` frame carried again: the latest row
    /// of each stream not observed in its interval (rule 3). Not in
    /// `rows_observed`: each was counted when it was observed.
    pub rows_repeated: u64,
    /// `Rows` frames dropped on a connection that went on, because the next
    /// interval ended before they were polled (a link slower than the
    /// readings) or [`drop_waiting`](Publisher::drop_waiting) was called.
    /// Each `seq` stays spent, so each is a frame a subscriber sees lost
    /// (a gap, rule 6); a connection's first `Rows` frame dropped is
    /// counted in `frames_unsent` instead, since no subscriber can see it
    /// lost.
    pub frames_dropped: u64,
    /// Rows observed in the `Rows` frames dropped on a connection that went
    /// on, a connection's first included.
    pub rows_dropped: u64,
    /// Frames that were due and never polled, other than those in
    /// `frames_dropped`: every frame due when the connection changed, and
    /// the handshakes, index entries and first `Rows` frames dropped with
    /// an interval.
    pub frames_unsent: u64,
    /// Rows observed that belong to no connection: no connection was open
    /// when their interval ended, or their frame was due when the
    /// connection changed.
    pub rows_unsent: u64,
    /// Calls to `observe` refused, whatever the reason: a row the frame
    /// buffer or the storage could not hold, or a stream or source never
    /// declared. A refused row is not observed.
    pub rows_refused: u64,
    /// Slot changes refused: the `Full` would outgrow the frame buffer, or
    /// the storage could not hold the slot.
    pub slot_changes_refused: u64,
}

/// What a publisher has due and not yet polled, from
/// [`Publisher::waiting`]: for a caller that decides whether its link can
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
