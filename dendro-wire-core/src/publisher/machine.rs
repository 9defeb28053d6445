//! [`Publisher`]: the table of sources and the public methods that say what
//! happened; those that hand frames out are in `machine/poll.rs`.

use core::fmt;
use core::marker::PhantomData;

use heapless::Vec;

use super::config::{DropPolicy, PublisherConfig, SourceDecl, SourceId, StreamId, StreamNames};
use super::error::PublishError;
use super::observer::Observer;
use super::sizing::Budget;
use super::source::{Dropped, Source};
use super::stats::PublisherStats;
use super::table::SourceTable;
use crate::index_state::IndexState;
use crate::map::Map;
use crate::storage::Storage;
use crate::{LENGTH_PREFIX_BYTES, MAX_FRAME_BYTES};

mod poll;

/// The sending rules of [protocol §5](crate::protocol) for up to `SOURCES` sources, each kept in
/// its own [`Storage`].
///
/// The caller declares sources, then tells the publisher what happens —
/// [`connected`](Self::connected), [`observe`](Self::observe) a row,
/// [`set_slot`](Self::set_slot), [`end_interval`](Self::end_interval) — and
/// pulls the frames the rules then require with
/// [`poll_transmit`](Self::poll_transmit) until it returns `None`. It never
/// decides what comes next; the publisher does, so a program that only
/// calls it cannot send a stream that breaks rules 1 to 9:
///
/// - every connection starts with a handshake per source, ordinals from 0
///   in declaration order, each due as the connection opens and polled
///   before any other frame (rules 1, 8), and a frame for a source whose
///   handshake has not gone out is refused (rule 1);
/// - a connection's first `Index` for a source is a `Full` with every slot
///   (rule 2), and a `Full` goes again every
///   [`full_every`](crate::PublisherConfig::full_every) intervals (rule 7); in
///   between, a `Delta` carries what changed, each with the
///   [`SlotSetHash`](crate::SlotSetHash) of the whole set;
/// - a connection's first `Rows` frame for a source carries the latest row
///   of every other stream still observed against the slots as they are
///   (rule 3, which yields to rule 9);
/// - every `Rows` frame carries its rows under the slots they were
///   observed against: a slot changed between two readings closes the
///   frame under way first (rule 9);
/// - a source's index entry goes before the rows that need it (rule 4),
///   stamped no later than any row after it (rule 5); each interval closes
///   at least one `Rows` frame, empty when nothing was observed, and every
///   frame has the next `seq` (rule 6) — spent even when it is never sent,
///   so a frame lost on the way is a gap.
///
/// Nothing allocates. Each source's bytes live in a [`Storage`] the caller
/// supplies; what does not fit it, or would make a frame larger than
/// [`frame_buffer`](crate::PublisherConfig::frame_buffer), is refused when it is
/// given, with an error naming the bound and a count in
/// [`stats`](Self::stats), and never later, so every frame due fits the
/// caller's buffer.
///
/// A firmware main loop, with one 4 KiB frame buffer and the source's
/// storage in a fixed array:
///
/// ```
/// use dendro_wire_core::{Map, Publisher, PublisherConfig, SourceDecl};
///
/// # struct Link { up: bool, sent: usize }
/// # impl Link {
/// #     fn connect(&mut self) -> bool { self.up = true; true }
/// #     fn send(&mut self, bytes: &[u8]) -> bool { self.sent += bytes.len(); true }
/// # }
/// # let mut link = Link { up: false, sent: 0 };
/// # fn read_adc(tick: u32) -> [u8; 16] { [tick as u8; 16] }
/// let mut publisher: Publisher<[u8; 1024], 1> = Publisher::new(PublisherConfig {
///     full_every: 60,
///     frame_buffer: 4096,
/// });
/// let adc = publisher.add_source(
///     &SourceDecl {
///         uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332211"),
///         labels: Map::from_pairs(&[("device", "sensor-7")]),
///         metadata: Map::from_pairs(&[("encoder", "adc-4ch-v1")]),
///         clock_anchor_wall_ns: 1_764_672_000_000_000_000,
///         complete: false,
///         streams: &["adc/raw"],
///         index_stream: Some("adc/channels"),
///     },
///     [0; 1024],
/// )?;
/// let raw = adc.stream(0);
/// publisher.set_slot(adc, b"ch0", b"on")?;
///
/// let mut frame = [0u8; 4096];
/// for tick in 0..300u32 {
///     if !link.up && link.connect() {
///         // The link wrote the preamble; the next interval opens with
///         // handshakes, a Full and the latest of every stream.
///         publisher.connected();
///     }
///     // Count what does not fit, and go on sampling.
///     let _ = publisher.observe(raw, i64::from(tick) * 1_000_000, 0, &read_adc(tick));
///     if tick % 10 == 9 {
///         publisher.end_interval();
///         while let Some((bytes, _)) = publisher.poll_transmit(&mut frame)? {
///             if !link.send(bytes) {
///                 link.up = false;
///                 publisher.disconnected();
///                 break;
///             }
///         }
///     }
/// }
/// assert_eq!(publisher.stats().rows_sent, 300);
/// # Ok::<(), dendro_wire_core::PublishError>(())
/// ```
// Laid out by hand, the table of sources last: its small fields then lie
// where a Cortex-M0's short loads and stores reach them, as a source's do
// (`Source`; `cargo xtask firmware` prints the footprint).
#[repr(C)]
pub struct PublisherIn<S: Storage, T: SourceTable<S>> {
    connected: bool,
    policy: DropPolicy,
    /// The source polled first this interval, under
    /// [`DropPolicy::RoundRobin`], and the next interval.
    turn: usize,
    next_turn: usize,
    config: PublisherConfig,
    /// What belongs to no source: intervals, connections, and rows refused
    /// for naming none. Each source counts the rest.
    stats: PublisherStats,
    sources: T,
    _storage: PhantomData<S>,
}

/// The publisher of up to `SOURCES` sources, its table of sources inside
/// it: what a Rust program declares. [`PublisherIn`] is the same machine
/// over a [`SourceTable`] of the caller's (the C API's, sized at run time).
pub type Publisher<S, const SOURCES: usize> = PublisherIn<S, Vec<Source<S>, SOURCES>>;

impl<S: Storage, T: SourceTable<S>> fmt::Debug for PublisherIn<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("sources", &self.sources.sources().len())
            .field("connected", &self.connected)
            .field("policy", &self.policy)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<S: Storage, T: SourceTable<S>> defmt::Format for PublisherIn<S, T> {
    /// What its `Debug` says: sources, connection, interval and stats.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Publisher sources={=usize} connected={=bool} stats={}",
            self.sources.sources().len(),
            self.connected,
            self.stats()
        );
    }
}

impl<S: Storage, const SOURCES: usize> Publisher<S, SOURCES> {
    /// A publisher with no sources and no connection.
    pub const fn new(config: PublisherConfig) -> Self {
        PublisherIn::with_table(config, Vec::new())
    }
}

impl<S: Storage, T: SourceTable<S>> PublisherIn<S, T> {
    /// A publisher with no sources and no connection, keeping its sources
    /// in `sources`, which holds none yet.
    pub const fn with_table(config: PublisherConfig, sources: T) -> Self {
        let most = MAX_FRAME_BYTES as usize + LENGTH_PREFIX_BYTES;
        let frame_buffer = if config.frame_buffer < most {
            config.frame_buffer
        } else {
            most
        };
        PublisherIn {
            config: PublisherConfig {
                frame_buffer,
                ..config
            },
            sources,
            _storage: PhantomData,
            connected: false,
            policy: DropPolicy::RoundRobin,
            turn: 0,
            next_turn: 0,
            stats: PublisherStats {
                intervals: 0,
                connections: 0,
                frames_sent: 0,
                rows_observed: 0,
                rows_sent: 0,
                rows_repeated: 0,
                frames_dropped: 0,
                rows_dropped: 0,
                frames_unsent: 0,
                rows_unsent: 0,
                rows_refused: 0,
                slot_changes_refused: 0,
                frames_cut: 0,
                rows_cut: 0,
            },
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> PublisherConfig {
        self.config
    }

    /// What the publisher has done so far, over all its sources.
    pub fn stats(&self) -> PublisherStats {
        let mut total = self.stats;
        for s in self.sources.sources() {
            total.add(s.counts());
        }
        total
    }

    /// What one source has done so far: its own frames and rows, beside
    /// the publisher's intervals and connections.
    pub fn source_stats(&self, source: SourceId) -> Result<PublisherStats, PublishError> {
        let mut stats = PublisherStats {
            intervals: self.stats.intervals,
            connections: self.stats.connections,
            ..PublisherStats::default()
        };
        stats.add(self.source(source)?.counts());
        Ok(stats)
    }

    /// Which source's frames a link too slow for them all loses
    /// ([`DropPolicy`]); [`DropPolicy::RoundRobin`] unless set.
    pub fn set_drop_policy(&mut self, policy: DropPolicy) {
        self.policy = policy;
    }

    /// Whether a connection is open: between [`connected`](Self::connected)
    /// and [`disconnected`](Self::disconnected).
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// The sources declared.
    pub fn source_count(&self) -> usize {
        self.sources.sources().len()
    }

    /// The source declared `ordinal`-th, from 0, if there is one: the id
    /// for a caller that holds ordinals rather than ids (the C API).
    pub fn source_id(&self, ordinal: u32) -> Option<SourceId> {
        ((ordinal as usize) < self.source_count()).then_some(SourceId(ordinal))
    }

    /// Each source's storage, in declaration order: for a caller that
    /// lends storage by address and must refuse a buffer overlapping one
    /// lent before (the C API).
    pub fn storages(&self) -> impl Iterator<Item = &S> {
        self.sources.sources().iter().map(|s| s.storage())
    }

    /// Declare a source, kept in `storage`. Its handshake is due as each
    /// connection opens, and at once if one is open. Refused if the handshake or the streams' room in a
    /// connection's first `Rows` frame would not fit the frame buffer, or
    /// the storage cannot hold them.
    ///
    /// [`SourceDecl::sizing`] gives the storage and frame buffer a source
    /// needs. On a device, lend storage as a `&'static mut [u8]`
    /// ([`Storage`]): an array given by value is copied through the stack.
    #[inline]
    pub fn add_source(
        &mut self,
        decl: &SourceDecl<'_>,
        storage: S,
    ) -> Result<SourceId, PublishError> {
        self.declare(decl, decl.streams, 0, storage)
    }

    /// [`add_source`](Self::add_source), its streams named by `streams`
    /// in place of `decl.streams`: for a caller that keeps the names in a
    /// form of its own and would otherwise gather them into a `[&str]`
    /// on its stack (the C API).
    pub fn add_source_named<N: StreamNames + ?Sized>(
        &mut self,
        decl: &SourceDecl<'_>,
        streams: &N,
        storage: S,
    ) -> Result<SourceId, PublishError> {
        self.declare(decl, streams, 0, storage)
    }

    /// [`add_source`](Self::add_source), with each stream's slot for its
    /// latest row (rule 3) made at once for the largest row `budget` gives,
    /// rather than grown as larger rows come: no row within the budget
    /// takes the slow path, the first included. Storage sized by
    /// [`SourceDecl::sizing`] for the same budget holds it.
    pub fn add_source_for(
        &mut self,
        decl: &SourceDecl<'_>,
        budget: &Budget,
        storage: S,
    ) -> Result<SourceId, PublishError> {
        self.declare(decl, decl.streams, budget.largest_row, storage)
    }

    // Out of line: it runs once a source, and a firmware that declares
    // sources in more than one place had a copy of it at each.
    #[inline(never)]
    fn declare<N: StreamNames + ?Sized>(
        &mut self,
        decl: &SourceDecl<'_>,
        streams: &N,
        largest_row: usize,
        mut storage: S,
    ) -> Result<SourceId, PublishError> {
        let most = self.sources.limit();
        let full = PublishError::TooManySources { limit: most };
        if self.sources.sources().len() >= most {
            return Err(full);
        }
        let ordinal = self.sources.sources().len() as u32;
        let limit = self.config.frame_buffer;
        let declared = Source::declare(ordinal, decl, streams, largest_row, &mut storage, limit)?;
        // Built where it is pushed, and opened in the table: a source made
        // aside and then pushed was copied whole, by a word-aligned
        // `memcpy` a device had for nothing else (`cargo xtask firmware`
        // prints the footprint).
        if !self.sources.push(declared.into_source(storage)) {
            return Err(full);
        }
        if let Some(source) = self
            .sources
            .sources_mut()
            .last_mut()
            .filter(|_| self.connected)
        {
            source.connection_opened();
        }
        Ok(SourceId(ordinal))
    }

    fn source_mut(&mut self, source: SourceId) -> Result<&mut Source<S>, PublishError> {
        self.sources
            .sources_mut()
            .get_mut(source.0 as usize)
            .ok_or(PublishError::UnknownSource { source: source.0 })
    }

    /// Source `source`, for the row path's tests to drive its short path
    /// alone.
    #[cfg(test)]
    pub(super) fn source_at(&mut self, source: SourceId) -> Option<&mut Source<S>> {
        self.sources.sources_mut().get_mut(source.0 as usize)
    }

    fn source(&self, source: SourceId) -> Result<&Source<S>, PublishError> {
        self.sources
            .sources()
            .get(source.0 as usize)
            .ok_or(PublishError::UnknownSource { source: source.0 })
    }

    /// The source's stream named `name`, for a caller that holds names
    /// rather than [`StreamId`]s: a walk over the declared names.
    pub fn stream_id(&self, source: SourceId, name: &str) -> Option<StreamId> {
        let s = self.sources.sources().get(source.0 as usize)?;
        s.find_stream(name.as_bytes()).map(|i| source.stream(i))
    }

    /// The source's index state now: the [`SlotSetHash`](crate::SlotSetHash) of its slots, or
    /// [`NO_INDEX_STATE`](crate::NO_INDEX_STATE) for a source without an index.
    pub fn index_state(&self, source: SourceId) -> Result<IndexState, PublishError> {
        Ok(self.source(source)?.state())
    }

    /// Observe one row on a declared stream, for this interval's `Rows`
    /// frame, under the slots as they are (rule 9). The row is encoded into
    /// the frame now, behind the stream's name as it was encoded at
    /// declaration.
    ///
    /// Never refused because frames wait to be polled: a row observed
    /// after [`end_interval`](Self::end_interval) and before the interval's
    /// frames are polled goes in the next interval's frame. Refused, and
    /// counted in [`rows_refused`](PublisherStats::rows_refused), only if
    /// it would make a `Rows` frame larger than the frame buffer (a
    /// connection's first keeps room for the latest row of every stream,
    /// rule 3), the storage cannot hold it, or the stream was never
    /// declared.
    //
    // What `Observer::observe` does for one row, written out: going through
    // an `Observer` costs the firmware agent flash (`cargo xtask firmware`
    // prints the footprint).
    #[cfg_attr(unaligned_words, inline(always))]
    #[cfg_attr(not(unaligned_words), inline)]
    pub fn observe(
        &mut self,
        stream: StreamId,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), PublishError> {
        let limit = self.config.frame_buffer;
        let Some(src) = self.sources.sources_mut().get_mut(stream.source as usize) else {
            self.stats.rows_refused += 1;
            return Err(PublishError::UnknownSource {
                source: stream.source,
            });
        };
        let mut cursor = src.cursor();
        if src
            .put_small(&mut cursor, stream.index, ts, wall_offset, row)
            .is_some()
        {
            src.set_cursor(&cursor);
            return Ok(());
        }
        src.observe_slow(limit, stream, (ts, wall_offset, row))
    }

    /// Observe many rows of one source at once: what [`observe`](Self::observe)
    /// does for each, with the frame's position and bounds held by the
    /// [`Observer`] rather than read and written back for every row.
    pub fn observer(&mut self, source: SourceId) -> Result<Observer<'_, S>, PublishError> {
        let limit = self.config.frame_buffer;
        let src = self
            .sources
            .sources_mut()
            .get_mut(source.0 as usize)
            .ok_or(PublishError::UnknownSource { source: source.0 })?;
        Ok(Observer::new(src, limit))
    }

    /// Set an index slot, adding it or changing its value. Sent in a
    /// `Delta` before the next rows, or in the next `Full`.
    ///
    /// A row is carried under the slots it was observed against (rule 9):
    /// if rows have been observed since the last `Rows` frame closed, that
    /// frame closes now, before the change, with its own `seq`, and the
    /// rows observed after the change go in the next, after the entry that
    /// carries it. A slot may change at any time, between any two
    /// readings; the frame it closes is due at once, with the interval's.
    ///
    /// Never refused because frames wait to be polled. Refused, and
    /// counted in
    /// [`slot_changes_refused`](PublisherStats::slot_changes_refused), if
    /// every slot would no longer fit one `Full` in the frame buffer (rules 2
    /// and 7) or the storage cannot hold it.
    pub fn set_slot(
        &mut self,
        source: SourceId,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), PublishError> {
        self.change_slot(source, key, Some(value))
    }

    /// Remove an index slot; a slot that is not there is no change.
    pub fn remove_slot(&mut self, source: SourceId, key: &[u8]) -> Result<(), PublishError> {
        self.change_slot(source, key, None)
    }

    fn change_slot(
        &mut self,
        source: SourceId,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<(), PublishError> {
        let (config, connected) = (self.config, self.connected);
        let s = self
            .sources
            .sources_mut()
            .get_mut(source.0 as usize)
            .ok_or(PublishError::UnknownSource { source: source.0 })?;
        s.set_slot(key, value, &config, connected)
    }

    /// A new connection is open (its preamble written): anything still due
    /// for the last one is dropped, counted as unsent; every handshake is
    /// due now, and the next frame of each source opens the connection
    /// with a `Full` (if it keeps an index) and the latest row of every
    /// stream (rules 2, 3, 8).
    pub fn connected(&mut self) {
        self.drop_due(Dropped::Unsent);
        self.connected = true;
        self.stats.connections += 1;
        for s in self.sources.sources_mut() {
            s.connection_opened();
        }
    }

    /// The connection ended: anything still due is dropped, counted as
    /// unsent, and until the next, frames are not kept and their rows are
    /// counted as unsent.
    pub fn disconnected(&mut self) {
        self.drop_due(Dropped::Unsent);
        self.connected = false;
        for s in self.sources.sources_mut() {
            s.connection_closed();
        }
    }

    /// End the interval. For every source this closes the frame under way
    /// (rule 6: one closes every interval, empty when nothing was observed,
    /// and spends its `seq`), keeps the latest row of every stream observed
    /// (rule 3), and, on a connection, makes it due after the index entry
    /// its rows need, if any (rules 2, 4, 7). Poll them, and any a slot
    /// change made due during the interval, before the next interval ends.
    ///
    /// Frames made due before this interval began and still unpolled are
    /// dropped first, lost in transit, as a link slower than the readings
    /// loses them: each `Rows` frame's `seq` stays spent, so a subscriber
    /// sees the gap, and its rows are counted
    /// ([`frames_dropped`](PublisherStats::frames_dropped),
    /// [`rows_dropped`](PublisherStats::rows_dropped)). An entry lost takes
    /// every frame after it too, as no subscriber could match their rows,
    /// and the next entry is a `Full`; a handshake stays due until polled.
    /// Which source's frames a slow link leaves unpolled is the
    /// [`DropPolicy`]'s to say.
    // Out of line where the row path has its short path: inlined into a
    // firmware's loop, its registers crowded the row path's there (`cargo
    // xtask firmware` counts the instructions a row takes).
    #[cfg_attr(unaligned_words, inline(never))]
    pub fn end_interval(&mut self) {
        let (config, connected) = (self.config, self.connected);
        for s in self.sources.sources_mut() {
            s.end_interval(connected, &config);
        }
        // The first interval's frames are polled from source 0, the next
        // one's from source 1, and so on round; counted, not divided: a
        // 64-bit division is a library routine in a Cortex-M0's flash
        // (`cargo xtask firmware` prints the footprint).
        self.turn = self.next_turn;
        self.next_turn = match self.turn + 1 < self.sources.sources().len() {
            true => self.turn + 1,
            false => 0,
        };
        self.stats.intervals += 1;
    }

    /// Replace a source's labels and metadata: every later handshake carries
    /// them, and, if its handshake has gone out on this connection, a
    /// `SourceUpdate` with both maps whole (stamped `ts`) is written into
    /// `buf` and its length returned. On an error the source keeps its
    /// identity.
    pub fn update_source(
        &mut self,
        source: SourceId,
        ts: i64,
        labels: Map<'_>,
        metadata: Map<'_>,
        buf: &mut [u8],
    ) -> Result<Option<usize>, PublishError> {
        let limit = self.config.frame_buffer;
        let s = self.source_mut(source)?;
        s.update(ts, labels, metadata, limit, buf)
    }
}
