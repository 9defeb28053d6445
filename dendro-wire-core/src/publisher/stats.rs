//! [`PublisherStats`]: what a publisher has done, counted.

/// What a publisher has done. Every row observed is sent, unsent or refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublisherStats {
    /// Intervals ended.
    pub intervals: u64,
    /// Connections begun with [`Publisher::connected`].
    pub connections: u64,
    /// Frames polled.
    pub frames_sent: u64,
    /// Rows in the `Rows` frames polled; a connection's first carries the
    /// latest row of every stream again (rule 3), so this may exceed the
    /// rows observed.
    pub rows_sent: u64,
    /// Frames that were due and never polled: the connection changed, or an
    /// interval ended before they were.
    pub frames_unsent: u64,
    /// Rows observed that went out in no frame: no connection was open when
    /// their interval ended, or their frame was never polled.
    pub rows_unsent: u64,
    /// Rows refused: the frame buffer or the source's storage could not
    /// hold them.
    pub rows_refused: u64,
    /// Slot changes refused: the `Full` would outgrow the frame buffer, or
    /// the storage could not hold the slot.
    pub slot_changes_refused: u64,
}
