//! The subscriber's side of the protocol rules ([protocol §5 and
//! §8](crate::protocol)), as a
//! state machine over frames with a bounded table of sources.

use core::fmt;

use crate::frame::Frame;
use crate::index::IndexKind;
use crate::index_state::{IndexState, NO_INDEX_STATE};
use crate::kind;

/// A frame that breaks a stream-level rule a subscriber holds. The stream
/// cannot go on: what follows would be applied to the wrong source, or to
/// none. (The sending side's refusals are [`PublishError`](crate::PublishError).)
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A frame names an ordinal no handshake on this connection introduced
    /// (rule 1).
    UnknownSource {
        /// The ordinal named.
        source: u32,
        /// The frame's kind byte.
        kind: u8,
    },
    /// A second handshake for an ordinal already live on the connection
    /// (§4.1: unique within one connection; [protocol §8.4](crate::protocol)).
    DuplicateHandshake {
        /// The ordinal.
        source: u32,
    },
    /// More sources than this side allows on one connection.
    TooManySources {
        /// The limit in force.
        limit: usize,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ProtocolError::UnknownSource { source, kind } => write!(
                f,
                "a {} frame names source {source}, which no handshake on this connection \
                 introduced (rule 1)",
                kind::name(kind)
            ),
            ProtocolError::DuplicateHandshake { source } => write!(
                f,
                "a second handshake for source {source}, which is already live on this \
                 connection; an ordinal is unique within one connection (§4.1)"
            ),
            ProtocolError::TooManySources { limit } => write!(
                f,
                "a handshake past the limit of {limit} sources on one connection"
            ),
        }
    }
}

impl ProtocolError {
    /// The variant's name, for a device that logs without `core::fmt`.
    pub const fn name(&self) -> &'static str {
        match self {
            ProtocolError::UnknownSource { .. } => "UnknownSource",
            ProtocolError::DuplicateHandshake { .. } => "DuplicateHandshake",
            ProtocolError::TooManySources { .. } => "TooManySources",
        }
    }
}

impl core::error::Error for ProtocolError {}

/// Why a subscriber skips the rows of a `Rows` frame (rule 9).
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The rows name an index and no `Full` has arrived for their source:
    /// there is no identity to attribute them to.
    BeforeFirstFull,
    /// The rows were built against another index state than the one held.
    IndexStateMismatch {
        /// The state the subscriber holds.
        held: IndexState,
        /// The state the frame declared.
        declared: IndexState,
    },
}

/// What a subscriber does with one `Rows` frame.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowsVerdict {
    /// The ordinal.
    pub source: u32,
    /// `None`: apply the rows. `Some`: skip them, and why.
    pub skip: Option<SkipReason>,
    /// Frames lost in transit before this one: the `seq` jump minus one,
    /// unless the jump is [`implausible`](Self::implausible).
    pub lost: u64,
    /// Whether this is the source's first gap, for a caller that reports a
    /// persistently lossy link once rather than on every frame.
    pub first_gap: bool,
    /// Whether `seq` broke the source's sequence: not above the previous
    /// frame's ([protocol §8.5](crate::protocol)), or [`implausible`](Self::implausible).
    /// Counted, and the rows are still judged by rule 9.
    pub regression: bool,
    /// Whether `seq` jumped further than the connection could have lost
    /// frames ([`SubscriberIn::allow_lost`], [protocol §8.17](crate::protocol)):
    /// the jump is a regression, not frames lost, and `lost` is 0.
    pub implausible: bool,
}

/// The most `Rows` frames a second this project takes a publisher to send
/// one source: one an interval, and an interval of at least a millisecond
/// ([protocol §8.17](crate::protocol)).
pub const MAX_ROWS_FRAMES_PER_SECOND: u64 = 1_000;

/// The most frames one source may be counted lost on a connection open for
/// `age_ms` milliseconds that has sent `frames` frames: what it could have
/// sent in that time at [`MAX_ROWS_FRAMES_PER_SECOND`], plus what it has
/// sent ([protocol §8.17](crate::protocol)). For
/// [`SubscriberIn::allow_lost`], by a caller with a clock.
///
/// ```
/// use dendro_wire_core::lost_allowance;
///
/// assert_eq!(lost_allowance(0, 3), 3);
/// assert_eq!(lost_allowance(60_000, 100), 60_100);
/// assert_eq!(lost_allowance(u64::MAX, u64::MAX), u64::MAX);
/// ```
pub const fn lost_allowance(age_ms: u64, frames: u64) -> u64 {
    let in_time = age_ms.saturating_mul(MAX_ROWS_FRAMES_PER_SECOND) / 1_000;
    in_time.saturating_add(frames)
}

/// What a subscriber does with a frame that broke no rule.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted {
    /// A handshake opened this ordinal.
    Opened {
        /// The ordinal.
        source: u32,
    },
    /// An index entry to apply; the held state is now its `state`.
    Index {
        /// The ordinal.
        source: u32,
        /// Full or Delta.
        kind: IndexKind,
    },
    /// A `Rows` frame, and whether to apply its rows.
    Rows(RowsVerdict),
    /// A `Segment`, `ClockOffset` or `SourceUpdate` to apply to this source.
    Apply {
        /// The ordinal.
        source: u32,
    },
    /// A kind this build does not read: skip and count it (§7).
    Unknown {
        /// The kind byte.
        kind: u8,
    },
}

#[derive(Clone, Copy, Debug)]
struct SourceState {
    index_state: IndexState,
    seen_full: bool,
    /// The previous `Rows` frame's `seq`, once `seq_seen` (a flag rather
    /// than an `Option`, so a place stays within the C API's 48 bytes).
    last_seq: u64,
    seq_seen: bool,
    gap_seen: bool,
    /// Frames counted lost on this connection: never above the allowance.
    lost: u64,
}

/// One place in a subscriber's table of sources: an open source's ordinal
/// and what is held of it. Opaque; a table is made of
/// [`EMPTY`](Self::EMPTY) places and only the subscriber writes them.
#[derive(Clone, Copy, Debug)]
pub struct SourceSlot {
    source: u32,
    state: SourceState,
}

impl SourceSlot {
    /// A place no source holds yet.
    pub const EMPTY: SourceSlot = SourceSlot {
        source: 0,
        state: SourceState {
            // What a publisher with no index sends forever, so such a
            // stream matches from its first frame.
            index_state: NO_INDEX_STATE,
            seen_full: false,
            last_seq: 0,
            seq_seen: false,
            gap_seen: false,
            lost: 0,
        },
    };
}

/// The subscriber's rules for one connection, over at most `N` sources:
/// a [`SubscriberIn`] whose table is an array of its own.
///
/// Feed it every frame in stream order with [`admit`](SubscriberIn::admit);
/// it says what to do with the frame, or which rule the frame broke. It
/// holds, per source, the index state, whether a `Full` has arrived and
/// the last `seq`: nothing that grows with the stream. `N` is any number of
/// sources (a device's one source is `Subscriber<1>`); a lower runtime
/// limit can be set with
/// [`with_source_limit`](SubscriberIn::with_source_limit). The table is
/// kept in ordinal order: a publisher's ordinals count from 0, so a source
/// is found at its own place in one look, any other by a binary search.
///
/// ```
/// use dendro_wire_core::*;
///
/// let mut sub = Subscriber::<8>::new();
/// let hs = Handshake { source: 0, uuid: None, labels: Map::EMPTY, metadata: Map::EMPTY,
///                      clock_anchor_wall_ns: 0, complete: false };
/// assert_eq!(sub.admit(&Frame::Handshake(hs)), Ok(Admitted::Opened { source: 0 }));
///
/// // Rows built against an index, before any Full: skipped (rule 9).
/// let rows = Rows { source: 0, seq: 5, index_state: (1, 2), rows: RowList::EMPTY };
/// let Ok(Admitted::Rows(v)) = sub.admit(&Frame::Rows(rows)) else { panic!() };
/// assert_eq!(v.skip, Some(SkipReason::BeforeFirstFull));
///
/// // A frame for a source with no handshake breaks rule 1.
/// let co = ClockOffset { source: 9, ts: 0, offset_ns: 0 };
/// assert!(matches!(sub.admit(&Frame::ClockOffset(co)), Err(ProtocolError::UnknownSource { .. })));
/// ```
pub type Subscriber<const N: usize> = SubscriberIn<[SourceSlot; N]>;

/// The subscriber's rules over a table of sources held in `T`: an array
/// ([`Subscriber<N>`]), or places lent by a caller that sizes the table at
/// run time (the C API keeps it in the caller's storage). The table's
/// length is the most sources it can hold.
#[derive(Clone, Debug)]
pub struct SubscriberIn<T> {
    /// The open sources, by ordinal, in ordinal order: `table[..open]`.
    table: T,
    open: usize,
    limit: usize,
    /// The most frames one source may be counted lost
    /// ([`allow_lost`](Self::allow_lost)).
    allowance: u64,
}

impl<const N: usize> Default for SubscriberIn<[SourceSlot; N]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> SubscriberIn<[SourceSlot; N]> {
    /// A subscriber for a new connection, allowing `N` sources.
    pub const fn new() -> Self {
        SubscriberIn {
            table: [SourceSlot::EMPTY; N],
            open: 0,
            limit: N,
            allowance: u64::MAX,
        }
    }

    /// Allow at most `limit` sources (never more than `N`).
    pub const fn with_source_limit(mut self, limit: usize) -> Self {
        self.limit = if limit < N { limit } else { N };
        self
    }

    /// The same sources and what is held of each, in a table of `M`, with
    /// the limit lowered to `M` if it was above: for a caller that starts
    /// with a small table and moves to a larger one as sources open, so a
    /// connection costs what it uses. `None` if the sources open now do not
    /// fit in `M`.
    ///
    /// ```
    /// use dendro_wire_core::*;
    ///
    /// let mut small = Subscriber::<4>::new();
    /// for source in 0..3 {
    ///     let hs = Handshake { source, uuid: None, labels: Map::EMPTY, metadata: Map::EMPTY,
    ///                          clock_anchor_wall_ns: 0, complete: false };
    ///     small.admit(&Frame::Handshake(hs)).unwrap();
    /// }
    /// let large = small.resize::<8>().unwrap();
    /// assert_eq!(large.source_count(), 3);
    /// assert!(small.resize::<2>().is_none());
    /// ```
    pub fn resize<const M: usize>(&self) -> Option<Subscriber<M>> {
        let mut resized = Subscriber::<M>::new().with_source_limit(self.limit);
        resized.allowance = self.allowance;
        let open = self.table.get(..self.open)?;
        resized.table.get_mut(..open.len())?.copy_from_slice(open);
        resized.open = open.len();
        Some(resized)
    }
}

impl<T: AsRef<[SourceSlot]> + AsMut<[SourceSlot]>> SubscriberIn<T> {
    /// A subscriber for a new connection over `table`, every place of which
    /// is [`SourceSlot::EMPTY`] or will be overwritten, allowing at most
    /// `limit` sources (never more than the table holds).
    pub fn in_table(table: T, limit: usize) -> Self {
        let limit = limit.min(table.as_ref().len());
        SubscriberIn {
            table,
            open: 0,
            limit,
            allowance: u64::MAX,
        }
    }

    /// The open sources, in ordinal order.
    fn sources(&self) -> &[SourceSlot] {
        self.table.as_ref().get(..self.open).unwrap_or(&[])
    }

    /// The most sources this subscriber allows.
    pub const fn source_limit(&self) -> usize {
        self.limit
    }

    /// Forget every source: the connection ended, and the next one starts
    /// with handshakes from ordinal 0 (rule 8), and no bound on frames lost
    /// until one is set.
    pub fn reset(&mut self) {
        self.open = 0;
        self.allowance = u64::MAX;
    }

    /// From now on, count at most `frames` frames lost for any one source
    /// on this connection ([protocol §8.17](crate::protocol)): a `seq` jump
    /// that would take a source past it is one the connection could not
    /// have produced, and is judged
    /// [`implausible`](RowsVerdict::implausible), a regression rather than
    /// frames lost. A caller with a clock sets it before each `Rows` frame
    /// to [`lost_allowance`] of the connection's age and the frames it has
    /// sent; with none set, every jump is frames lost, as dendro counts
    /// them. A count a peer chooses is thus bounded by time and by what it
    /// sent, and so is every sum of it.
    pub fn allow_lost(&mut self, frames: u64) {
        self.allowance = frames;
    }

    /// The sources open on this connection.
    pub fn source_count(&self) -> usize {
        self.open
    }

    /// The index state held for a source, if it is open.
    pub fn index_state(&self, source: u32) -> Option<IndexState> {
        self.find(source)
            .ok()
            .and_then(|i| self.sources().get(i))
            .map(|open| open.state.index_state)
    }

    /// Where `source` is in the table, or where it would go: its own place
    /// first, as ordinals count from 0, then a binary search.
    #[inline]
    fn find(&self, source: u32) -> Result<usize, usize> {
        let sources = self.sources();
        match sources.get(source as usize) {
            Some(open) if open.source == source => Ok(source as usize),
            _ => sources.binary_search_by_key(&source, |open| open.source),
        }
    }

    /// Judge one frame. On an error nothing changes.
    pub fn admit(&mut self, frame: &Frame<'_>) -> Result<Admitted, ProtocolError> {
        let kind = frame.kind();
        let Some(source) = frame.source() else {
            return Ok(Admitted::Unknown { kind });
        };
        if let Frame::Handshake(_) = frame {
            return self.open(source);
        }
        let unknown = ProtocolError::UnknownSource { source, kind };
        let at = self.find(source).map_err(|_| unknown)?;
        let st = match self.table.as_mut().get_mut(..self.open) {
            Some(open) => &mut open.get_mut(at).ok_or(unknown)?.state,
            None => return Err(unknown),
        };
        Ok(match frame {
            Frame::Index(index) => {
                // The state hashes the complete set after the entry, so Full
                // and Delta alike replace what is held.
                st.index_state = index.state;
                st.seen_full |= index.kind == IndexKind::Full;
                Admitted::Index {
                    source,
                    kind: index.kind,
                }
            }
            Frame::Rows(rows) => {
                Admitted::Rows(st.judge(source, rows.seq, rows.index_state, self.allowance))
            }
            _ => Admitted::Apply { source },
        })
    }

    fn open(&mut self, source: u32) -> Result<Admitted, ProtocolError> {
        let Err(at) = self.find(source) else {
            return Err(ProtocolError::DuplicateHandshake { source });
        };
        let too_many = ProtocolError::TooManySources { limit: self.limit };
        if self.open >= self.limit {
            return Err(too_many);
        }
        let table = self.table.as_mut();
        let place = table.get_mut(self.open).ok_or(too_many)?;
        *place = SourceSlot {
            source,
            ..SourceSlot::EMPTY
        };
        self.open += 1;
        // Into its place by swaps: a `copy_within` is a `memmove` and its
        // code in a device's flash (`cargo xtask firmware` prints the
        // footprint), for a move made once a source.
        let mut i = self.open.saturating_sub(1);
        while i > at {
            if let Some([a, b]) = table.get_mut(i - 1..=i) {
                core::mem::swap(a, b);
            }
            i -= 1;
        }
        Ok(Admitted::Opened { source })
    }
}

impl SourceState {
    fn judge(
        &mut self,
        source: u32,
        seq: u64,
        declared: IndexState,
        allowance: u64,
    ) -> RowsVerdict {
        let last = self.last_seq;
        let (jump, regressed) = match self.seq_seen {
            true if seq > last => (seq - last - 1, false),
            true => (0, true),
            false => (0, false),
        };
        // The jump is taken either way: the frames after it are judged
        // from this `seq`, as after a regression.
        (self.last_seq, self.seq_seen) = (seq, true);
        let implausible = jump > allowance.saturating_sub(self.lost);
        let lost = if implausible { 0 } else { jump };
        self.lost = self.lost.saturating_add(lost); // at most `allowance`
        let regression = regressed || implausible;
        let first_gap = lost > 0 && !self.gap_seen;
        self.gap_seen |= lost > 0;
        let skip = if declared != NO_INDEX_STATE && !self.seen_full {
            Some(SkipReason::BeforeFirstFull)
        } else if declared != self.index_state {
            Some(SkipReason::IndexStateMismatch {
                held: self.index_state,
                declared,
            })
        } else {
            None
        };
        RowsVerdict {
            source,
            skip,
            lost,
            first_gap,
            regression,
            implausible,
        }
    }
}

#[cfg(feature = "defmt")]
impl<T: AsRef<[SourceSlot]>> defmt::Format for SubscriberIn<T> {
    /// How many sources it holds, and of how many.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Subscriber sources={=usize} of {=usize}",
            self.open,
            self.table.as_ref().len()
        );
    }
}
