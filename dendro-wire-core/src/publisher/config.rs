//! What the caller hands a [`Publisher`](super::Publisher) and gets back
//! by value: its configuration, a source's declaration, the ids of sources
//! and streams, and what a poll wrote.

use crate::map::Map;
use crate::{LENGTH_PREFIX_BYTES, MAX_FRAME_BYTES};

/// How a [`Publisher`](crate::Publisher) paces full index state and bounds its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PublisherConfig {
    /// Send an indexed source's `Full` again every this many intervals
    /// (rule 7), besides the one each connection opens with (rule 2).
    pub full_every: u64,
    /// The size of the buffer frames are polled into: no frame the
    /// publisher sends is larger, length prefix included. What would make
    /// one larger — a row, a slot, a handshake — is refused when it is
    /// given, so a frame never has to be dropped at the end of an interval.
    /// At most [`MAX_FRAME_BYTES`] and its length prefix.
    pub frame_buffer: usize,
}

impl PublisherConfig {
    /// `full_every` 60, frames up to the protocol's limit.
    pub const DEFAULT: PublisherConfig = PublisherConfig {
        full_every: 60,
        frame_buffer: MAX_FRAME_BYTES as usize + LENGTH_PREFIX_BYTES,
    };
}

impl Default for PublisherConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Which source's frames a link too slow for them all loses, by the order
/// the sources' frames are polled in: what is still unpolled when the
/// interval after theirs ends is dropped ([`Publisher::end_interval`](crate::Publisher::end_interval)).
/// Handshakes go first either way (rule 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DropPolicy {
    /// The source that has lost the fewest frames (`frames_dropped` and
    /// `frames_unsent` together: an index entry or a frame lost unseen
    /// counts as much as a gap) is polled last, and so is the next to lose
    /// one; ties go round, the first polled moving on by one every
    /// interval. The sources' counts of lost frames stay within a few of
    /// each other; their shares of rows delivered differ by their frames'
    /// sizes (within 10 points of each other over every link capacity
    /// from 5% to 100% in `tests/fairness.rs`), and no source starves.
    #[default]
    RoundRobin,
    /// The sources in the order they were declared, every interval: a slow
    /// link loses the last declared first, so declare first the source the
    /// link should carry most.
    DeclarationOrder,
}

/// A source as it is declared: its identity, its streams, and the stream its
/// index entries land in, if it keeps an index.
///
/// The default is a source with no identity of its own: no uuid, labels or
/// metadata, a clock anchor of 0, not complete, no streams and no index;
/// name what differs and take the rest from it.
///
/// ```
/// use dendro_wire_core::SourceDecl;
///
/// let decl = SourceDecl {
///     streams: &["cpu/usage"],
///     ..SourceDecl::default()
/// };
/// assert_eq!((decl.uuid, decl.index_stream), (None, None));
/// ```
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SourceDecl<'a> {
    /// Canonical lowercase 8-4-4-4-12, the source's identity across
    /// connections; `None` lets the subscriber mint one.
    pub uuid: Option<&'a str>,
    /// The source's name, in key order.
    pub labels: Map<'a>,
    /// Everything else (the rows' `encoder`), in key order.
    pub metadata: Map<'a>,
    /// The anchor that pins the source's timeline.
    pub clock_anchor_wall_ns: i64,
    /// Whether the source was cleanly finalized.
    pub complete: bool,
    /// The streams rows are observed on. Each name is encoded once, here,
    /// and copied into every row.
    pub streams: &'a [&'a str],
    /// The `caller_rows` stream index entries land in, for a source that
    /// keeps index slots; `None` for one whose rows declare
    /// [`NO_INDEX_STATE`](crate::NO_INDEX_STATE).
    pub index_stream: Option<&'a str>,
}

/// The names of a source's streams, read one at a time: the `[&str]` of
/// [`SourceDecl::streams`], or names a caller keeps in a form of its own,
/// given to [`Publisher::add_source_named`](crate::Publisher::add_source_named)
/// and [`SourceDecl::sizing_named`] (the C API reads them from C's array
/// so that declaring a source gathers none of them on a device's stack).
pub trait StreamNames {
    /// How many streams.
    fn count(&self) -> usize;
    /// The name of stream `index`, below [`count`](Self::count).
    fn name(&self, index: usize) -> &str;
}

impl StreamNames for [&str] {
    fn count(&self) -> usize {
        self.len()
    }

    fn name(&self, index: usize) -> &str {
        self.get(index).copied().unwrap_or_default()
    }
}

/// A declared source: also the ordinal its handshake takes on every
/// connection, since every connection handshakes the sources in the order
/// they were declared (rule 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SourceId(pub(super) u32);

impl SourceId {
    /// The source at `ordinal` in a publisher's declaration order, whether
    /// it has been declared or not: for a caller that names sources by
    /// number, as the C API does. A publisher refuses a call on a source it
    /// has not declared, as on one of another publisher's, and counts a
    /// row so refused in `rows_refused`.
    pub const fn at(ordinal: u32) -> SourceId {
        SourceId(ordinal)
    }

    /// The ordinal the source's frames carry.
    pub const fn ordinal(self) -> u32 {
        self.0
    }

    /// The source's stream declared at `index` (its place in
    /// [`SourceDecl::streams`]); [`Publisher::observe`](crate::Publisher::observe) refuses one past
    /// the last.
    pub const fn stream(self, index: u32) -> StreamId {
        StreamId {
            source: self.0,
            index,
        }
    }
}

/// A declared stream: its source, and its place in the source's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StreamId {
    pub(super) source: u32,
    pub(super) index: u32,
}

impl StreamId {
    /// The source the stream belongs to.
    pub const fn source(self) -> SourceId {
        SourceId(self.source)
    }

    /// The stream's place in its source's declared streams.
    pub const fn index(self) -> u32 {
        self.index
    }
}

/// One frame [`Publisher::poll_transmit`](crate::Publisher::poll_transmit) wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Transmit {
    /// Its bytes, length prefix included.
    pub len: usize,
    /// Its kind byte ([`kind`](crate::kind)).
    pub kind: u8,
    /// The ordinal of its source.
    pub source: u32,
    /// The rows it carries: nonzero only for `Rows`.
    pub rows: u32,
}
