//! The sending side of the protocol ([protocol §5](crate::protocol), rules 1 to 8) as a sans-IO
//! state machine: the caller says what happened, and pulls the frames the
//! rules require.

use core::fmt;

use heapless::Vec;
use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{copy, Out, LEN_BYTES};
use crate::error::Error;
use crate::frame::{decode, Frame, Status};
use crate::framing::FrameHead;
use crate::handshake::Handshake;
use crate::index::IndexTail;
use crate::index::{Index, IndexKind};
use crate::index_state::{IndexState, SlotSetHash, NO_INDEX_STATE};
use crate::kind;
use crate::map::Map;
use crate::rows::{
    split_row, tail, write_prepared_row, write_row_tail, write_rows_head, RowsBuilder, RowsHeader,
    NAME_WORD, ROWS_HEAD_BYTES, TAIL_BYTES,
};
use crate::source_update::SourceUpdate;
use crate::storage::Storage;
use crate::{LENGTH_PREFIX_BYTES, MAX_FRAME_BYTES};

/// How a [`Publisher`] paces full index state and bounds its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// A source as it is declared: its identity, its streams, and the stream its
/// index entries land in, if it keeps an index.
#[derive(Clone, Copy, Debug)]
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
    /// [`NO_INDEX_STATE`].
    pub index_stream: Option<&'a str>,
}

/// A declared source: also the ordinal its handshake takes on every
/// connection, since every connection handshakes the sources in the order
/// they were declared (rule 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceId(u32);

impl SourceId {
    /// The ordinal the source's frames carry.
    pub const fn ordinal(self) -> u32 {
        self.0
    }

    /// The source's stream declared at `index` (its place in
    /// [`SourceDecl::streams`]); [`Publisher::observe`] refuses one past
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
pub struct StreamId {
    source: u32,
    index: u32,
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

/// One frame [`Publisher::poll_transmit`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// A call the publisher refuses, naming the rule it would break or the
/// bound it would cross. Nothing changes when one is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishError {
    /// No room for another source: the table holds `limit`.
    TooManySources {
        /// The table's capacity.
        limit: usize,
    },
    /// A source this publisher never declared (rule 1).
    UnknownSource {
        /// The ordinal given.
        source: u32,
    },
    /// A stream its source never declared.
    UnknownStream {
        /// The source's ordinal.
        source: u32,
        /// The stream's place given.
        stream: u32,
    },
    /// A stream name declared twice by one source.
    DuplicateStream {
        /// The source's ordinal.
        source: u32,
        /// The second place the name was declared at.
        stream: u32,
    },
    /// A row given to the [`Observer`] of one source on a stream of another.
    OtherSource {
        /// The observer's source.
        source: u32,
        /// The source of the stream given.
        stream_source: u32,
    },
    /// A slot change for a source declared without an index stream.
    NoIndex {
        /// The source's ordinal.
        source: u32,
    },
    /// A row or a slot change while the source still has frames of the
    /// ended interval to send.
    FramesDue {
        /// The source's ordinal.
        source: u32,
    },
    /// A frame for a source whose handshake has not gone out on this
    /// connection (rule 1).
    NotHandshaken {
        /// The source's ordinal.
        source: u32,
        /// The frame's kind byte.
        kind: u8,
    },
    /// A `Handshake`, `Index`, `Rows` or `SourceUpdate` given to
    /// [`send`](Publisher::send): the publisher sends those itself.
    NotPassthrough {
        /// The frame's kind byte.
        kind: u8,
    },
    /// A change that would make a frame larger than the frame buffer.
    FrameTooLarge {
        /// The source's ordinal.
        source: u32,
        /// The kind of the frame that would outgrow it.
        kind: u8,
        /// The bytes that frame would need.
        needed: usize,
        /// [`PublisherConfig::frame_buffer`].
        limit: usize,
    },
    /// The source's storage cannot hold what it was given.
    StorageFull {
        /// The source's ordinal.
        source: u32,
        /// The bytes it would need.
        needed: usize,
        /// The bytes it has.
        have: usize,
    },
    /// The source's storage holds fewer bytes than the publisher wrote: a
    /// [`Storage`] must never shrink.
    StorageShrank {
        /// The source's ordinal.
        source: u32,
    },
    /// The buffer given to poll is too small for the next frame, which
    /// stays due.
    BufferTooSmall {
        /// The bytes the frame needs.
        needed: usize,
        /// The bytes the buffer has.
        have: usize,
    },
    /// A frame the encoder refuses: a map out of key order, a uuid that is
    /// not canonical, a frame above the protocol's limit.
    Encode(Error),
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PublishError::TooManySources { limit } => write!(
                f,
                "this publisher holds {limit} sources and cannot declare another"
            ),
            PublishError::UnknownSource { source } => write!(
                f,
                "source {source} was never declared to this publisher; every frame names a \
                 declared, handshaken source (rule 1)"
            ),
            PublishError::UnknownStream { source, stream } => write!(
                f,
                "source {source} declared no stream at place {stream}; a row goes on a stream \
                 its source declared"
            ),
            PublishError::DuplicateStream { source, stream } => write!(
                f,
                "source {source} declares the name of its stream {stream} twice; the first Rows \
                 frame carries the latest row of each stream (rule 3), and two streams of one \
                 name are one on the wire"
            ),
            PublishError::OtherSource {
                source,
                stream_source,
            } => write!(
                f,
                "a row on a stream of source {stream_source} given to the observer of source \
                 {source}; each source's rows go in its own Rows frame"
            ),
            PublishError::NoIndex { source } => write!(
                f,
                "source {source} was declared without an index stream, so it has no slots; its \
                 rows declare NO_INDEX_STATE"
            ),
            PublishError::FramesDue { source } => write!(
                f,
                "source {source} still has frames of the ended interval to send; poll until none \
                 is left before the next interval's rows or slot changes, which would otherwise \
                 change frames already made (rules 4 and 6)"
            ),
            PublishError::NotHandshaken { source, kind } => write!(
                f,
                "a {} frame for source {source} before its handshake went out on this \
                 connection (rule 1); the handshake goes out at the end of the interval after \
                 connected()",
                kind::name(kind)
            ),
            PublishError::NotPassthrough { kind } => write!(
                f,
                "{} frames are the publisher's own, sent by the rules (1 to 8); one sent by hand \
                 could break them",
                kind::name(kind)
            ),
            PublishError::FrameTooLarge {
                source,
                kind,
                needed,
                limit,
            } => {
                write!(
                    f,
                    "a {} frame of source {source} would need {needed} bytes, above the \
                     {limit}-byte frame buffer, so this is refused",
                    kind::name(kind)
                )?;
                f.write_str(match kind {
                    kind::ROWS => {
                        "; a connection's first Rows frame also carries the latest row of every \
                         stream (rule 3), and room for it is kept"
                    }
                    kind::INDEX => "; every Full carries every slot (rules 2 and 7)",
                    _ => "",
                })
            }
            PublishError::StorageFull {
                source,
                needed,
                have,
            } => write!(
                f,
                "source {source} needs {needed} bytes of storage and has {have}, so this is \
                 refused; nothing it held is lost"
            ),
            PublishError::StorageShrank { source } => write!(
                f,
                "the storage of source {source} holds fewer bytes than the publisher wrote into \
                 it; a Storage must never shrink"
            ),
            PublishError::BufferTooSmall { needed, have } => write!(
                f,
                "the next frame needs a buffer of {needed} bytes and was given {have}; it stays \
                 due"
            ),
            PublishError::Encode(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for PublishError {}

impl From<Error> for PublishError {
    fn from(e: Error) -> Self {
        PublishError::Encode(e)
    }
}

// A source's storage holds, in this order, each region ending where the next
// begins:
//
//   handshake    its Handshake frame, sent again on every connection
//   index name   the index stream's name
//   table        a `StreamRec` per stream
//   latest       a slot per stream: its latest row, encoded as a frame
//                carries it, which starts with its prepared name
//   full         the slots, sorted by key: `u32 len | key | u32 len | value`
//                each, the Full blob and the slot bytes SlotSetHash hashes
//   delta        the changes since the last entry, sorted by key:
//                `u32 len | key | u8 present [| u32 len | value]` each, the
//                Delta blob
//
// and then the interval's Rows frame under way: its head, then its rows.
// The regions grow rarely; the frame grows with every row, and comes last
// so that growing it moves nothing.
const HANDSHAKE: usize = 0;
const INDEX_NAME: usize = 1;
const TABLE: usize = 2;
const LATEST: usize = 3;
const FULL: usize = 4;
const DELTA: usize = 5;
const REGIONS: usize = 6;

/// One stream's record in its source's table: all a row on it reads, in one
/// place.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct StreamRec {
    /// The name as a row carries it — length prefix, then bytes — padded
    /// with zeros to a word, or its first word if longer: a name of up to
    /// 12 bytes is copied into a row as this one move. Its first four bytes
    /// are the name's length.
    word: [u8; WORD],
    /// Its slot's size: the largest row seen, encoded, and never less than
    /// the name and an empty row.
    cap: U32,
    /// How many row lengths from 16 bytes [`put_small`] takes on this
    /// stream: up to 32 bytes that fit its slot, on a name of up to 12
    /// bytes; 0 on a longer name or a slot too small for 16.
    small: U32,
    /// Where this interval's last row of the stream starts in the frame;
    /// [`UNSEEN`] before its first.
    last_at: U32,
    /// Where its slot starts in the latest region.
    slot: U32,
    /// The latest row's encoded size; 0 before the first.
    len: U32,
    /// The interval it was last observed in, set as the interval ends.
    seen: U64,
}

impl StreamRec {
    /// The stream name's length.
    #[inline]
    fn name(&self) -> usize {
        le_u32(&self.word[..LEN_BYTES]) as usize
    }

    fn set_cap(&mut self, cap: usize) {
        let head = LEN_BYTES + self.name();
        let small = match head <= WORD {
            true => (cap.saturating_sub(head + TAIL).min(SMALL_ROW_BYTES) + 1).saturating_sub(16),
            false => 0,
        };
        self.cap = U32::new(cap as u32);
        self.small = U32::new(small as u32);
    }
}

const REC: usize = core::mem::size_of::<StreamRec>();
const NEVER: u64 = u64::MAX;
/// `last_at` of a stream not observed in the interval under way.
const UNSEEN: u32 = u32::MAX;
/// A row's fixed run: `ts`, `wall_offset`, the row's length.
const TAIL: usize = TAIL_BYTES;
/// A prepared name copied as one word.
const WORD: usize = NAME_WORD;

/// What a source owes the connection for the interval that ended.
#[derive(Clone, Copy, Debug, Default)]
struct Due {
    handshake: bool,
    index: Option<IndexKind>,
    rows: bool,
    /// The `Rows` frame is the connection's first (rule 3), built when
    /// polled.
    opening: bool,
    seq: u64,
    /// The index entry's `ts` (rule 5).
    stamp: i64,
    /// The `Rows` frame's size, and its rows.
    rows_len: usize,
    rows_count: u32,
}

/// What has gone out for a source on this connection.
#[derive(Clone, Copy, Debug, Default)]
struct Sent {
    handshake: bool,
    full: bool,
    rows: bool,
}

struct Source<S> {
    storage: S,
    ends: [usize; REGIONS],
    /// The frame under way: its bytes, head included, and its rows.
    pending: usize,
    rows: u32,
    /// The most the frame under way may grow to: the frame buffer less the
    /// slots of every stream, which a connection's first `Rows` frame
    /// carries (rule 3).
    room: usize,
    /// The newest of the streams' latest rows, to stamp an entry sent in an
    /// interval that observed nothing (rule 5).
    last_ts: i64,
    streams: u32,
    /// The slots of every stream, the room kept for rule 3.
    caps: usize,
    seq: u64,
    indexed: bool,
    /// An `Index` frame with an empty blob.
    index_overhead: usize,
    hash: SlotSetHash,
    /// `hash`'s state, kept as the slots change rather than hashed again
    /// every interval.
    state: IndexState,
    intervals_since_full: u64,
    /// The changes since the last entry were not all kept: a `Full`
    /// replaces the `Delta`.
    delta_lost: bool,
    sent: Sent,
    due: Due,
}

/// The sending rules of [protocol §5](crate::protocol) for up to `SOURCES` sources, each kept in
/// its own [`Storage`].
///
/// The caller declares sources, then tells the publisher what happens —
/// [`connected`](Self::connected), [`observe`](Self::observe) a row,
/// [`set_slot`](Self::set_slot), [`end_interval`](Self::end_interval) — and
/// pulls the frames the rules then require with
/// [`poll_transmit`](Self::poll_transmit) until it returns `None`. It never
/// decides what comes next; the publisher does, so a program that only
/// calls it cannot send a stream that breaks rules 1 to 8:
///
/// - every connection starts with a handshake per source, ordinals from 0
///   in declaration order (rules 1, 8), and a frame for a source whose
///   handshake has not gone out is refused (rule 1);
/// - a connection's first `Index` for a source is a `Full` with every slot
///   (rule 2), and a `Full` goes again every
///   [`full_every`](PublisherConfig::full_every) intervals (rule 7); in
///   between, a `Delta` carries what changed, each with the
///   [`SlotSetHash`] of the whole set;
/// - a connection's first `Rows` frame for a source carries the latest row
///   of every stream (rule 3);
/// - each interval sends a source's index entry before its rows (rule 4),
///   stamped no later than any row sent after it (rule 5), then exactly one
///   `Rows` frame, empty when nothing was observed, with the next `seq`
///   (rule 6) — spent even when the frame is never sent, so a frame lost on
///   the way is a gap.
///
/// Nothing allocates. Each source's bytes live in a [`Storage`] the caller
/// supplies; what does not fit it, or would make a frame larger than
/// [`frame_buffer`](PublisherConfig::frame_buffer), is refused when it is
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
///         while let Some(t) = publisher.poll_transmit(&mut frame)? {
///             if !link.send(&frame[..t.len]) {
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
pub struct Publisher<S: Storage, const SOURCES: usize> {
    config: PublisherConfig,
    sources: Vec<Source<S>, SOURCES>,
    connected: bool,
    /// The interval under way, counted from 0.
    interval: u64,
    cursor: Cursor,
    stats: PublisherStats,
}

/// Where polling is: the handshakes of every source go before any other
/// frame, then each source's index entry and rows.
#[derive(Clone, Copy, Debug)]
enum Cursor {
    Handshakes(usize),
    Frames(usize),
    Idle,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    Handshake,
    Index(IndexKind),
    Rows,
}

/// Where a polled frame is: in the caller's buffer, or in a source's
/// storage, already encoded.
enum Place {
    Buffer(usize),
    Stored(core::ops::Range<usize>),
}

impl<S: Storage, const SOURCES: usize> fmt::Debug for Publisher<S, SOURCES> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("sources", &self.sources.len())
            .field("connected", &self.connected)
            .field("interval", &self.interval)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<S: Storage, const SOURCES: usize> Publisher<S, SOURCES> {
    /// A publisher with no sources and no connection.
    pub const fn new(config: PublisherConfig) -> Self {
        let most = MAX_FRAME_BYTES as usize + LENGTH_PREFIX_BYTES;
        let frame_buffer = if config.frame_buffer < most {
            config.frame_buffer
        } else {
            most
        };
        Publisher {
            config: PublisherConfig {
                frame_buffer,
                ..config
            },
            sources: Vec::new(),
            connected: false,
            interval: 0,
            cursor: Cursor::Idle,
            stats: PublisherStats {
                intervals: 0,
                connections: 0,
                frames_sent: 0,
                rows_sent: 0,
                frames_unsent: 0,
                rows_unsent: 0,
                rows_refused: 0,
                slot_changes_refused: 0,
            },
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> PublisherConfig {
        self.config
    }

    /// What the publisher has done so far.
    pub fn stats(&self) -> PublisherStats {
        self.stats
    }

    /// Whether a connection is open: between [`connected`](Self::connected)
    /// and [`disconnected`](Self::disconnected).
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// The sources declared.
    pub fn source_count(&self) -> usize {
        self.sources.len()
    }

    /// Declare a source, kept in `storage`. Its handshake goes out at the
    /// end of the interval after each connection opens — this one's too,
    /// if one is open. Refused if the handshake or the streams' room in a
    /// connection's first `Rows` frame would not fit the frame buffer, or
    /// the storage cannot hold them.
    // Out of line: it runs once a source, and a firmware that declares
    // sources in more than one place had a copy of it at each.
    #[inline(never)]
    pub fn add_source(
        &mut self,
        decl: &SourceDecl<'_>,
        mut storage: S,
    ) -> Result<SourceId, PublishError> {
        if self.sources.is_full() {
            return Err(PublishError::TooManySources { limit: SOURCES });
        }
        let ordinal = self.sources.len() as u32;
        let limit = self.config.frame_buffer;
        let too_large = |kind, needed| PublishError::FrameTooLarge {
            source: ordinal,
            kind,
            needed,
            limit,
        };
        let handshake = Handshake {
            source: ordinal,
            uuid: decl.uuid,
            labels: decl.labels,
            metadata: decl.metadata,
            clock_anchor_wall_ns: decl.clock_anchor_wall_ns,
            complete: decl.complete,
        };
        let handshake_len = handshake.buffer_len()?;
        if handshake_len > limit {
            return Err(too_large(kind::HANDSHAKE, handshake_len));
        }
        let index_name = decl.index_stream.unwrap_or_default();
        let index_overhead = match decl.index_stream {
            Some(stream) => empty_index(ordinal, stream).buffer_len()?,
            None => 0,
        };
        if index_overhead > limit {
            return Err(too_large(kind::INDEX, index_overhead));
        }
        let mut caps = 0usize;
        for (i, name) in decl.streams.iter().enumerate() {
            if decl.streams[..i].contains(name) {
                return Err(PublishError::DuplicateStream {
                    source: ordinal,
                    stream: i as u32,
                });
            }
            caps = caps.saturating_add(LEN_BYTES + name.len() + TAIL);
        }
        let rows_len = ROWS_HEAD_BYTES.saturating_add(caps);
        if rows_len > limit {
            return Err(too_large(kind::ROWS, rows_len));
        }
        let streams = decl.streams.len();
        let mut ends = [0; REGIONS];
        ends[HANDSHAKE] = handshake_len;
        ends[INDEX_NAME] = ends[HANDSHAKE] + index_name.len();
        ends[TABLE] = ends[INDEX_NAME] + streams * REC;
        ends[LATEST] = ends[TABLE] + caps;
        ends[FULL] = ends[LATEST];
        ends[DELTA] = ends[FULL];
        let needed = ends[DELTA] + ROWS_HEAD_BYTES;
        if !storage.grow(needed) {
            return Err(PublishError::StorageFull {
                source: ordinal,
                needed,
                have: storage.bytes().len(),
            });
        }
        let bytes = storage.bytes_mut();
        let shrank = PublishError::StorageShrank { source: ordinal };
        let region = bytes.get_mut(..needed).ok_or(shrank)?;
        handshake.emit(region)?;
        let (index, rest) = region
            .get_mut(ends[HANDSHAKE]..ends[LATEST])
            .and_then(|r| r.split_at_mut_checked(index_name.len()))
            .ok_or(shrank)?;
        copy(index, index_name.as_bytes()).ok_or(shrank)?;
        let (table, latest) = rest.split_at_mut_checked(streams * REC).ok_or(shrank)?;
        let mut slot = 0;
        for (name, rec) in decl.streams.iter().zip(table.chunks_exact_mut(REC)) {
            let cap = LEN_BYTES + name.len() + TAIL;
            let head = latest.get_mut(slot..).ok_or(shrank)?;
            let n = write_name(head, name.as_bytes()).ok_or(shrank)?;
            // Written in place: a record built aside and copied in was a
            // `memmove` on a Cortex-M.
            let rec = StreamRec::mut_from_bytes(rec).map_err(|_| shrank)?;
            rec.word = [0; WORD];
            let word = n.min(WORD);
            copy(&mut rec.word[..word], head.get(..word).ok_or(shrank)?).ok_or(shrank)?;
            rec.set_cap(cap);
            rec.last_at = U32::new(UNSEEN);
            rec.slot = U32::new(slot as u32);
            rec.len = U32::new(0);
            rec.seen = U64::new(NEVER);
            slot += cap;
        }
        let hash = SlotSetHash::new();
        let source = Source {
            storage,
            ends,
            pending: ROWS_HEAD_BYTES,
            rows: 0,
            room: limit - caps,
            last_ts: 0,
            streams: streams as u32,
            caps,
            seq: 0,
            indexed: decl.index_stream.is_some(),
            index_overhead,
            hash,
            state: match decl.index_stream {
                Some(_) => hash.state(),
                None => NO_INDEX_STATE,
            },
            intervals_since_full: 0,
            delta_lost: false,
            sent: Sent::default(),
            due: Due::default(),
        };
        if self.sources.push(source).is_err() {
            return Err(PublishError::TooManySources { limit: SOURCES });
        }
        Ok(SourceId(ordinal))
    }

    fn source_mut(&mut self, source: SourceId) -> Result<&mut Source<S>, PublishError> {
        self.sources
            .get_mut(source.0 as usize)
            .ok_or(PublishError::UnknownSource { source: source.0 })
    }

    fn source(&self, source: SourceId) -> Result<&Source<S>, PublishError> {
        self.sources
            .get(source.0 as usize)
            .ok_or(PublishError::UnknownSource { source: source.0 })
    }

    /// The source's stream named `name`, for a caller that holds names
    /// rather than [`StreamId`]s: a walk over the declared names.
    pub fn stream_id(&self, source: SourceId, name: &str) -> Option<StreamId> {
        let s = self.sources.get(source.0 as usize)?;
        s.find_stream(name.as_bytes()).map(|i| source.stream(i))
    }

    /// The source's index state now: the [`SlotSetHash`] of its slots, or
    /// [`NO_INDEX_STATE`] for a source without an index.
    pub fn index_state(&self, source: SourceId) -> Result<IndexState, PublishError> {
        Ok(self.source(source)?.state())
    }

    /// Observe one row on a declared stream, for this interval's `Rows`
    /// frame. The row is encoded into the frame now, behind the stream's
    /// name as it was encoded at declaration.
    ///
    /// Refused, and counted in [`rows_refused`](PublisherStats::rows_refused),
    /// if it would make a `Rows` frame larger than the frame buffer (a
    /// connection's first keeps room for the latest row of every stream,
    /// rule 3) or the storage cannot hold it; refused if the source still
    /// has frames of the last interval to send.
    //
    // What `Observer::observe` does for one row, written out: going through
    // an `Observer` costs the firmware agent 144 bytes of flash.
    #[inline]
    pub fn observe(
        &mut self,
        stream: StreamId,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), PublishError> {
        let limit = self.config.frame_buffer;
        let Some(src) = self.sources.get_mut(stream.source as usize) else {
            return Err(PublishError::UnknownSource {
                source: stream.source,
            });
        };
        let mut pos = src.pos();
        if put_small(
            src.storage.bytes_mut(),
            &mut pos,
            stream.index,
            ts,
            wall_offset,
            row,
        )
        .is_some()
        {
            src.pending = pos.at;
            src.rows = pos.rows;
            return Ok(());
        }
        let result = src.observe_slow(stream, limit, ts, wall_offset, row);
        if let Err(PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. }) = result {
            self.stats.rows_refused += 1;
        }
        result
    }

    /// Observe many rows of one source at once: what [`observe`](Self::observe)
    /// does for each, with the frame's position and bounds held by the
    /// [`Observer`] rather than read and written back for every row.
    /// Refused if the source still has frames of the last interval to send.
    pub fn observer(&mut self, source: SourceId) -> Result<Observer<'_, S>, PublishError> {
        let limit = self.config.frame_buffer;
        let src = self
            .sources
            .get_mut(source.0 as usize)
            .ok_or(PublishError::UnknownSource { source: source.0 })?;
        if src.due.rows {
            return Err(PublishError::FramesDue { source: source.0 });
        }
        let pos = src.pos();
        Ok(Observer {
            src,
            refused: &mut self.stats.rows_refused,
            source: source.0,
            limit,
            pos,
        })
    }

    /// Set an index slot, adding it or changing its value. Sent in the
    /// interval's `Delta`, or in the next `Full`.
    ///
    /// Refused, and counted in
    /// [`slot_changes_refused`](PublisherStats::slot_changes_refused), if
    /// every slot would no longer fit one `Full` in the frame buffer (rules 2
    /// and 7) or the storage cannot hold it.
    pub fn set_slot(
        &mut self,
        source: SourceId,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), PublishError> {
        let (limit, track) = (self.config.frame_buffer, self.connected);
        let result = self
            .source_mut(source)
            .and_then(|s| s.set_slot(source.0, key, Some(value), limit, track));
        if let Err(PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. }) = result {
            self.stats.slot_changes_refused += 1;
        }
        result
    }

    /// Remove an index slot; a slot that is not there is no change.
    pub fn remove_slot(&mut self, source: SourceId, key: &[u8]) -> Result<(), PublishError> {
        let (limit, track) = (self.config.frame_buffer, self.connected);
        self.source_mut(source)?
            .set_slot(source.0, key, None, limit, track)
    }

    /// A new connection is open (its preamble written): anything still due
    /// for the last one is dropped, and the next interval opens this one
    /// with every handshake, a `Full` per indexed source and the latest row
    /// of every stream (rules 2, 3, 8).
    pub fn connected(&mut self) {
        self.drop_due();
        self.connected = true;
        self.stats.connections += 1;
        for s in &mut self.sources {
            s.sent = Sent::default();
            s.clear_delta();
        }
    }

    /// The connection ended: anything still due is dropped, and until the
    /// next, intervals send nothing and count their rows as unsent.
    pub fn disconnected(&mut self) {
        self.drop_due();
        self.connected = false;
        for s in &mut self.sources {
            s.clear_delta();
        }
    }

    /// End the interval. For every source this spends one `seq`, keeps the
    /// latest row of every stream observed (rule 3), and, on a connection,
    /// makes due what the rules require: a handshake not yet sent on it, an
    /// index entry if one is due, and exactly one `Rows` frame (rules 4, 6,
    /// 7). Poll them until none is left.
    ///
    /// Frames of the last interval still due are dropped first and counted
    /// ([`frames_unsent`](PublisherStats::frames_unsent)): their `seq` stays
    /// spent, a handshake or a `Full` not sent is due again, and changes a
    /// `Delta` did not carry go in the next.
    pub fn end_interval(&mut self) {
        self.drop_due();
        let (interval, connected) = (self.interval, self.connected);
        for (ordinal, s) in self.sources.iter_mut().enumerate() {
            let rows = s.rows;
            if !s.end_interval(ordinal as u32, interval, connected, &self.config) {
                self.stats.rows_unsent += u64::from(rows);
            }
        }
        self.interval += 1;
        self.stats.intervals += 1;
        self.cursor = Cursor::Handshakes(0);
    }

    /// Write the next frame the rules require into `buf`: `None` when none
    /// is left. A buffer too small is refused with the size needed and the
    /// frame stays due; a buffer of
    /// [`frame_buffer`](PublisherConfig::frame_buffer) bytes always holds it.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Result<Option<Transmit>, PublishError> {
        let Some((i, item, len)) = self.peek() else {
            return Ok(None);
        };
        if buf.len() < len {
            return Err(PublishError::BufferTooSmall {
                needed: len,
                have: buf.len(),
            });
        }
        let (place, t) = self.take(i, item, len, buf)?;
        if let Place::Stored(range) = place {
            let stored = self
                .sources
                .get(i)
                .and_then(|s| s.storage.bytes().get(range));
            let copied = stored.zip(buf.get_mut(..len));
            if copied.and_then(|(src, dst)| copy(dst, src)).is_none() {
                return Err(PublishError::StorageShrank { source: i as u32 });
            }
        }
        Ok(Some(t))
    }

    /// The next frame, as [`poll_transmit`](Self::poll_transmit) gives it,
    /// without copying one the publisher already holds encoded (a
    /// handshake, an interval's `Rows` frame): those are lent from the
    /// source's storage, and only the others are written into `scratch`.
    /// For a caller that hands the bytes straight to a transport.
    pub fn poll_frame<'a>(
        &'a mut self,
        scratch: &'a mut [u8],
    ) -> Result<Option<(&'a [u8], Transmit)>, PublishError> {
        let Some((i, item, len)) = self.peek() else {
            return Ok(None);
        };
        let (place, t) = self.take(i, item, len, scratch)?;
        let bytes = match place {
            Place::Buffer(n) => scratch.get(..n),
            Place::Stored(range) => self
                .sources
                .get(i)
                .and_then(|s| s.storage.bytes().get(range)),
        };
        match bytes {
            Some(bytes) => Ok(Some((bytes, t))),
            None => Err(PublishError::StorageShrank { source: i as u32 }),
        }
    }

    /// The size of the frame the next poll returns, or `None` if none is
    /// due: for a caller that sizes its buffer to the frame.
    pub fn next_frame_len(&mut self) -> Option<usize> {
        self.peek().map(|(_, _, len)| len)
    }

    /// Encode a frame built elsewhere — a `Segment`, a `ClockOffset`, a
    /// frame of a kind this crate does not know — into `buf`, after the
    /// rules: its source must be handshaken on this connection (rule 1).
    /// Returns its length.
    pub fn send(&mut self, frame: &Frame<'_>, buf: &mut [u8]) -> Result<usize, PublishError> {
        match frame {
            Frame::Segment(_) | Frame::ClockOffset(_) | Frame::Unknown { .. } => {}
            other => return Err(PublishError::NotPassthrough { kind: other.kind() }),
        }
        if let Some(source) = frame.source() {
            if !self.source(SourceId(source))?.sent.handshake {
                return Err(PublishError::NotHandshaken {
                    source,
                    kind: frame.kind(),
                });
            }
        }
        let n = frame.emit(buf)?;
        self.stats.frames_sent += 1;
        Ok(n)
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
        let shrank = PublishError::StorageShrank { source: source.0 };
        let stored = s.storage.bytes().get(..s.ends[HANDSHAKE]).ok_or(shrank)?;
        let Ok(Status::Complete((Frame::Handshake(old), _))) = decode(stored) else {
            return Err(shrank);
        };
        let mut uuid = [0u8; 36];
        let uuid_len = old.uuid.map(str::len);
        if let Some(u) = old.uuid {
            uuid.get_mut(..u.len())
                .ok_or(shrank)?
                .copy_from_slice(u.as_bytes());
        }
        let (anchor, complete) = (old.clock_anchor_wall_ns, old.complete);
        let uuid = match uuid_len {
            Some(n) => {
                Some(core::str::from_utf8(uuid.get(..n).ok_or(shrank)?).map_err(|_| shrank)?)
            }
            None => None,
        };
        let handshake = Handshake {
            source: source.0,
            uuid,
            labels,
            metadata,
            clock_anchor_wall_ns: anchor,
            complete,
        };
        let len = handshake.buffer_len()?;
        if len > limit {
            return Err(PublishError::FrameTooLarge {
                source: source.0,
                kind: kind::HANDSHAKE,
                needed: len,
                limit,
            });
        }
        let update = SourceUpdate {
            source: source.0,
            ts,
            labels,
            metadata,
        };
        let send = s.sent.handshake;
        if send {
            let needed = update.buffer_len()?;
            if needed > buf.len() {
                return Err(PublishError::BufferTooSmall {
                    needed,
                    have: buf.len(),
                });
            }
        }
        let old_len = s.ends[HANDSHAKE];
        s.resize(source.0, HANDSHAKE, 0, old_len, len)?;
        let region = s.storage.bytes_mut().get_mut(..len).ok_or(shrank)?;
        handshake.emit(region)?;
        if !send {
            return Ok(None);
        }
        let n = update.emit(buf)?;
        self.stats.frames_sent += 1;
        Ok(Some(n))
    }

    /// Drop every frame still due, counting it.
    fn drop_due(&mut self) {
        for s in &mut self.sources {
            // The flags alone: what else `Due` holds is read only while
            // they are set.
            let due = s.due;
            (s.due.handshake, s.due.index, s.due.rows) = (false, None, false);
            let frames = u64::from(due.handshake) + u64::from(due.index.is_some());
            self.stats.frames_unsent += frames + u64::from(due.rows);
            if due.rows {
                self.stats.rows_unsent += u64::from(s.rows);
                s.reset_rows();
            }
        }
        self.cursor = Cursor::Idle;
    }

    /// The next frame due, without taking it: its source, what it is, and
    /// its size.
    fn peek(&mut self) -> Option<(usize, Item, usize)> {
        loop {
            match self.cursor {
                Cursor::Handshakes(i) => match self.sources.get(i) {
                    Some(s) if s.due.handshake => return Some((i, Item::Handshake, s.ends[0])),
                    Some(_) => self.cursor = Cursor::Handshakes(i + 1),
                    None => self.cursor = Cursor::Frames(0),
                },
                Cursor::Frames(i) => match self.sources.get(i) {
                    Some(s) => match (s.due.index, s.due.rows) {
                        (Some(kind), _) => return Some((i, Item::Index(kind), s.index_len(kind))),
                        (None, true) => return Some((i, Item::Rows, s.due.rows_len)),
                        (None, false) => self.cursor = Cursor::Frames(i + 1),
                    },
                    None => self.cursor = Cursor::Idle,
                },
                Cursor::Idle => return None,
            }
        }
    }

    /// Take the frame [`peek`](Self::peek) found, of `len` bytes: build it
    /// into `buf` if it is not held encoded, and record that it went out.
    /// A `buf` too small for a frame built into it is refused, the frame
    /// still due.
    fn take(
        &mut self,
        i: usize,
        item: Item,
        len: usize,
        buf: &mut [u8],
    ) -> Result<(Place, Transmit), PublishError> {
        let ended = self.interval.wrapping_sub(1);
        let source = i as u32;
        let s = self
            .sources
            .get_mut(i)
            .ok_or(PublishError::UnknownSource { source })?;
        let built = match item {
            Item::Handshake => false,
            Item::Index(_) => true,
            Item::Rows => s.due.opening,
        };
        if built && buf.len() < len {
            return Err(PublishError::BufferTooSmall {
                needed: len,
                have: buf.len(),
            });
        }
        let mut t = Transmit {
            len: 0,
            kind: kind::ROWS,
            source,
            rows: 0,
        };
        let place = match item {
            Item::Handshake => {
                s.due.handshake = false;
                s.sent.handshake = true;
                t.kind = kind::HANDSHAKE;
                Place::Stored(0..s.ends[HANDSHAKE])
            }
            Item::Index(kind) => {
                let n = s.emit_index(source, kind, buf)?;
                s.due.index = None;
                s.clear_delta();
                if kind == IndexKind::Full {
                    s.sent.full = true;
                    s.intervals_since_full = 0;
                    s.delta_lost = false;
                }
                t.kind = kind::INDEX;
                Place::Buffer(n)
            }
            Item::Rows => {
                let place = if s.due.opening {
                    Place::Buffer(s.emit_opening(source, ended, buf)?)
                } else {
                    let at = s.ends[DELTA];
                    Place::Stored(at..at + s.pending)
                };
                t.rows = s.due.rows_count;
                s.due.rows = false;
                s.sent.rows = true;
                s.reset_rows();
                self.stats.rows_sent += u64::from(t.rows);
                place
            }
        };
        t.len = match &place {
            Place::Buffer(n) => *n,
            Place::Stored(range) => range.len(),
        };
        self.stats.frames_sent += 1;
        Ok((place, t))
    }
}

/// One source's rows, observed many at a time: from
/// [`Publisher::observer`], for an agent that samples a source's streams
/// together. Each row is refused, kept, and counted exactly as
/// [`Publisher::observe`] would; the publisher is borrowed until the
/// observer is dropped, so no interval can end under it.
///
/// ```
/// use dendro_wire_core::{Map, Publisher, PublisherConfig, SourceDecl};
///
/// let mut p: Publisher<[u8; 1024], 1> = Publisher::new(PublisherConfig::default());
/// let decl = SourceDecl {
///     uuid: None,
///     labels: Map::EMPTY,
///     metadata: Map::EMPTY,
///     clock_anchor_wall_ns: 0,
///     complete: false,
///     streams: &["cpu0/usage", "cpu1/usage"],
///     index_stream: None,
/// };
/// let cpu = p.add_source(&decl, [0; 1024])?;
/// let mut rows = p.observer(cpu)?;
/// for c in 0..2 {
///     rows.observe(cpu.stream(c), 1_000, 0, &[c as u8; 8])?;
/// }
/// drop(rows);
/// p.connected();
/// p.end_interval();
/// # Ok::<(), dendro_wire_core::PublishError>(())
/// ```
pub struct Observer<'a, S: Storage> {
    src: &'a mut Source<S>,
    refused: &'a mut u64,
    source: u32,
    limit: usize,
    pos: Pos,
}

impl<S: Storage> Observer<'_, S> {
    /// Observe one row on one of the source's streams: see
    /// [`Publisher::observe`].
    #[inline]
    pub fn observe(
        &mut self,
        stream: StreamId,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), PublishError> {
        if stream.source == self.source {
            let bytes = self.src.storage.bytes_mut();
            if put_small(bytes, &mut self.pos, stream.index, ts, wall_offset, row).is_some() {
                return Ok(());
            }
        }
        // Out of line, with the position handed over through the source
        // rather than as a value whose address a call takes: the observer's
        // position stays in registers across a caller's loop.
        self.src.pending = self.pos.at;
        self.src.rows = self.pos.rows;
        let result = observe_slow(
            self.src,
            self.refused,
            self.source,
            self.limit,
            stream,
            (ts, wall_offset, row),
        );
        self.pos = self.src.pos();
        result
    }
}

/// An [`Observer`]'s row that [`put_small`] did not take: a stream of
/// another source, or what [`Source::observe_slow`] handles.
#[cold]
#[inline(never)]
fn observe_slow<S: Storage>(
    src: &mut Source<S>,
    refused: &mut u64,
    source: u32,
    limit: usize,
    stream: StreamId,
    (ts, wall_offset, row): (i64, i64, &[u8]),
) -> Result<(), PublishError> {
    if stream.source != source {
        return Err(PublishError::OtherSource {
            source,
            stream_source: stream.source,
        });
    }
    let result = src.observe_slow(stream, limit, ts, wall_offset, row);
    if let Err(PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. }) = result {
        *refused += 1;
    }
    result
}

impl<S: Storage> Drop for Observer<'_, S> {
    fn drop(&mut self) {
        self.src.pending = self.pos.at;
        self.src.rows = self.pos.rows;
    }
}

/// An `Index` frame with an empty blob: its size is what every entry of the
/// source costs beyond its blob.
fn empty_index(source: u32, stream: &str) -> Index<'_> {
    Index {
        source,
        stream,
        ts: 0,
        kind: IndexKind::Full,
        state: NO_INDEX_STATE,
        blob: &[],
    }
}

impl<S: Storage> Source<S> {
    fn state(&self) -> IndexState {
        self.state
    }

    fn region(&self, r: usize) -> core::ops::Range<usize> {
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        start..self.ends[r]
    }

    fn rec(&self, i: u32) -> Option<&StreamRec> {
        if i >= self.streams {
            return None;
        }
        let at = self.ends[INDEX_NAME] + i as usize * REC;
        let bytes = self.storage.bytes().get(at..at + REC)?;
        StreamRec::ref_from_bytes(bytes).ok()
    }

    /// The place of the stream named `name`. A name of up to 12 bytes is
    /// found by its prepared word, one comparison a stream.
    fn find_stream(&self, name: &[u8]) -> Option<u32> {
        let head = LEN_BYTES + name.len();
        if head > WORD {
            return (0..self.streams).find(|&i| self.stream_name(i) == Some(name));
        }
        let mut word = [0u8; WORD];
        word[..LEN_BYTES].copy_from_slice(&(name.len() as u32).to_le_bytes());
        word[LEN_BYTES..head].copy_from_slice(name);
        let table = self.storage.bytes().get(self.region(TABLE))?;
        table
            .chunks_exact(REC)
            .position(|rec| rec.first_chunk::<WORD>() == Some(&word))
            .map(|i| i as u32)
    }

    fn stream_name(&self, i: u32) -> Option<&[u8]> {
        let rec = self.rec(i)?;
        let at = self.ends[TABLE] + rec.slot.get() as usize + LEN_BYTES;
        self.storage.bytes().get(at..at + rec.name())
    }

    fn reset_rows(&mut self) {
        self.pending = ROWS_HEAD_BYTES;
        self.rows = 0;
    }

    /// Where the frame under way stands.
    fn pos(&self) -> Pos {
        Pos {
            table_at: self.ends[INDEX_NAME],
            slots_at: self.ends[TABLE],
            frame_at: self.ends[DELTA],
            streams: if self.due.rows { 0 } else { self.streams },
            at: self.pending,
            rows: self.rows,
            room: self.room,
        }
    }

    /// The row into the frame under way, if every bound holds.
    fn write_row(&mut self, stream: u32, ts: i64, wall_offset: i64, row: &[u8]) -> Option<()> {
        let pos = self.pos();
        let pos = put_any(self.storage.bytes_mut(), pos, stream, ts, wall_offset, row)?;
        self.pending = pos.at;
        self.rows = pos.rows;
        Some(())
    }

    /// A row [`put_small`] did not take: written by [`put_any`], or refused
    /// with the reason, or written once the stream's slot or the storage
    /// has grown.
    #[cold]
    #[inline(never)]
    fn observe_slow(
        &mut self,
        stream: StreamId,
        limit: usize,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), PublishError> {
        if self.write_row(stream.index, ts, wall_offset, row).is_some() {
            return Ok(());
        }
        let source = stream.source;
        if self.due.rows {
            return Err(PublishError::FramesDue { source });
        }
        if stream.index >= self.streams {
            return Err(PublishError::UnknownStream {
                source,
                stream: stream.index,
            });
        }
        let rec = self
            .rec(stream.index)
            .ok_or(PublishError::StorageShrank { source })?;
        let (slot, cap) = (rec.slot.get() as usize, rec.cap.get() as usize);
        let len = LEN_BYTES + rec.name() + TAIL + row.len();
        // The frame with this row, and the latest row of every stream with
        // this stream's as large as this row.
        let grown = len.saturating_sub(cap);
        let needed = self
            .pending
            .saturating_add(len)
            .saturating_add(self.caps)
            .saturating_add(grown);
        if needed > limit {
            return Err(PublishError::FrameTooLarge {
                source,
                kind: kind::ROWS,
                needed,
                limit,
            });
        }
        if grown > 0 {
            let at = self.ends[TABLE] + slot + cap;
            self.resize(source, LATEST, at, 0, grown)?;
            for i in 0..self.streams {
                let rec_at = self.ends[INDEX_NAME] + i as usize * REC;
                let bytes = self.storage.bytes_mut().get_mut(rec_at..rec_at + REC);
                let Some(rec) = bytes.and_then(|b| StreamRec::mut_from_bytes(b).ok()) else {
                    return Err(PublishError::StorageShrank { source });
                };
                if i == stream.index {
                    rec.set_cap(len);
                } else if rec.slot.get() as usize > slot {
                    rec.slot = U32::new(rec.slot.get() + grown as u32);
                }
            }
            self.caps += grown;
            self.room = limit - self.caps;
        }
        let end = self.ends[DELTA] + self.pending + len;
        self.ensure(source, end)?;
        self.write_row(stream.index, ts, wall_offset, row)
            .ok_or(PublishError::StorageShrank { source })
    }

    /// Make the storage hold `len` bytes.
    fn ensure(&mut self, source: u32, len: usize) -> Result<(), PublishError> {
        if self.storage.grow(len) {
            Ok(())
        } else {
            Err(PublishError::StorageFull {
                source,
                needed: len,
                have: self.storage.bytes().len(),
            })
        }
    }

    /// Resize `old` bytes at `at`, inside region `r`, to `new`: what follows
    /// moves, the frame under way included. Nothing changes on an error.
    fn resize(
        &mut self,
        source: u32,
        r: usize,
        at: usize,
        old: usize,
        new: usize,
    ) -> Result<(), PublishError> {
        let end = self.ends[DELTA] + self.pending;
        let new_end = end - old + new;
        if new > old {
            self.ensure(source, new_end)?;
        }
        let bytes = self.storage.bytes_mut();
        if bytes.len() < end.max(new_end) || at + old > end {
            return Err(PublishError::StorageShrank { source });
        }
        move_bytes(bytes, at + old..end, at + new);
        for e in &mut self.ends[r..] {
            *e = *e + new - old;
        }
        Ok(())
    }

    fn clear_delta(&mut self) {
        let delta = self.region(DELTA);
        // Shrinking moves bytes down and cannot fail on storage that held
        // them.
        let _ = self.resize(0, DELTA, delta.start, delta.len(), 0);
        self.delta_lost = false;
    }

    /// End the interval for this source; `false` if no connection took its
    /// rows.
    fn end_interval(
        &mut self,
        source: u32,
        interval: u64,
        connected: bool,
        config: &PublisherConfig,
    ) -> bool {
        let seq = self.seq;
        self.seq = seq.wrapping_add(1);
        let opening = connected && !self.sent.rows;
        // The latest rows a connection's first frame carries beside this
        // interval's: their size, count, and earliest timestamp.
        let (mut extra_len, mut extra_rows, mut earliest) = (0, 0u32, i64::MAX);
        let (table_at, slots_at, frame_at) =
            (self.ends[INDEX_NAME], self.ends[TABLE], self.ends[DELTA]);
        let bytes = self.storage.bytes_mut();
        if let Some((front, frame)) = bytes.split_at_mut_checked(frame_at) {
            if let Some((table, slots)) = front.split_at_mut_checked(slots_at) {
                let records = table.get_mut(table_at..).unwrap_or_default();
                for rec in records.chunks_exact_mut(REC).take(self.streams as usize) {
                    let Ok(rec) = StreamRec::mut_from_bytes(rec) else {
                        break;
                    };
                    let slot = rec.slot.get() as usize;
                    if rec.last_at.get() != UNSEEN {
                        // This interval's last row of the stream is its
                        // latest now (rule 3).
                        let from = rec.last_at.get() as usize;
                        rec.last_at = U32::new(UNSEEN);
                        rec.seen = U64::new(interval);
                        let Some((len, ts)) = frame.get(from..).and_then(row_at) else {
                            continue;
                        };
                        let src = frame.get(from..from + len);
                        let dst = slots.get_mut(slot..slot + len);
                        if let Some(()) = src.zip(dst).and_then(|(src, dst)| copy(dst, src)) {
                            rec.len = U32::new(len as u32);
                            self.last_ts = self.last_ts.max(ts);
                        }
                    } else if opening && rec.len.get() > 0 {
                        if let Some((len, ts)) = slots.get(slot..).and_then(row_at) {
                            earliest = earliest.min(ts);
                            extra_len += len;
                            extra_rows += 1;
                        }
                    }
                }
            }
        }
        if !connected {
            self.reset_rows();
            return false;
        }
        let mut due = Due {
            handshake: !self.sent.handshake,
            index: None,
            rows: true,
            opening,
            seq,
            stamp: self.last_ts,
            // An opening carries the latest rows beside the interval's;
            // for any other frame there are none.
            rows_len: self.pending + extra_len,
            rows_count: self.rows + extra_rows,
        };
        if self.indexed {
            self.intervals_since_full += 1;
            let delta = self.region(DELTA).len();
            let full = !self.sent.full
                || self.intervals_since_full >= config.full_every
                || self.delta_lost
                || self.index_overhead + delta > config.frame_buffer;
            due.index = if full {
                Some(IndexKind::Full)
            } else if delta > 0 {
                Some(IndexKind::Delta)
            } else {
                None
            };
            if due.index.is_some() {
                // Rule 5: the entry is stamped no later than any row sent
                // after it — this frame's, and on an opening the latest of
                // every stream — and with nothing observed, the newest row
                // before it.
                let frame = self.storage.bytes().get(frame_at..frame_at + self.pending);
                due.stamp = match frame.and_then(|f| earliest_ts(f, self.rows, earliest)) {
                    Some(ts) if self.rows > 0 || extra_rows > 0 => ts,
                    _ if extra_rows > 0 => earliest,
                    _ => self.last_ts,
                };
            }
        }
        if !opening {
            let (state, count, len) = (self.state(), self.rows, self.pending);
            let head = self.storage.bytes_mut().get_mut(frame_at..);
            let _ = head.and_then(|h| write_rows_head(h, source, seq, state, count, len));
        }
        self.due = due;
        true
    }

    /// Where the blob of an entry of `kind` is kept.
    fn blob(&self, kind: IndexKind) -> core::ops::Range<usize> {
        match kind {
            IndexKind::Full => self.region(FULL),
            IndexKind::Delta => self.region(DELTA),
        }
    }

    fn index_len(&self, kind: IndexKind) -> usize {
        self.index_overhead + self.blob(kind).len()
    }

    /// The interval's entry of `kind`, written field by field as
    /// `Index::emit` writes it: that one takes the stream as a `&str`, and
    /// making one of the stored name is a UTF-8 check whose code and table
    /// were 600 bytes of a device's flash. The name was a `&str` when it
    /// was declared; the golden tests hold the bytes to the encoder's.
    fn emit_index(
        &self,
        source: u32,
        kind: IndexKind,
        buf: &mut [u8],
    ) -> Result<usize, PublishError> {
        let shrank = PublishError::StorageShrank { source };
        let bytes = self.storage.bytes();
        let name = bytes.get(self.region(INDEX_NAME)).ok_or(shrank)?;
        let blob = bytes.get(self.blob(kind)).ok_or(shrank)?;
        let len = self.index_len(kind);
        let state = self.state();
        let mut out = Out::new(buf, 0);
        out.fixed(&FrameHead {
            len: U32::new((len - LENGTH_PREFIX_BYTES) as u32),
            kind: kind::INDEX,
        })?;
        out.u32(source)?;
        out.bytes(name)?;
        out.fixed(&IndexTail {
            ts: I64::new(self.due.stamp),
            kind: kind.to_byte(),
            state_0: U64::new(state.0),
            state_1: U64::new(state.1),
        })?;
        out.bytes(blob)?;
        match out.at() == len {
            true => Ok(len),
            false => Err(shrank),
        }
    }

    /// A connection's first `Rows` frame (rule 3): the latest row of every
    /// stream not observed in the interval that `ended`, then the
    /// interval's rows.
    fn emit_opening(&self, source: u32, ended: u64, buf: &mut [u8]) -> Result<usize, PublishError> {
        let shrank = PublishError::StorageShrank { source };
        let bytes = self.storage.bytes();
        let mut b = RowsBuilder::new(
            buf,
            RowsHeader {
                source,
                seq: self.due.seq,
                index_state: self.state(),
            },
        )?;
        for i in 0..self.streams {
            let rec = self.rec(i).ok_or(shrank)?;
            let len = rec.len.get() as usize;
            if len > 0 && rec.seen.get() != ended {
                let at = self.ends[TABLE] + rec.slot.get() as usize;
                b.extend_encoded(bytes.get(at..at + len).ok_or(shrank)?, 1)?;
            }
        }
        let frame = self.ends[DELTA];
        let rows = bytes
            .get(frame + ROWS_HEAD_BYTES..frame + self.pending)
            .ok_or(shrank)?;
        b.extend_encoded(rows, self.rows)?;
        Ok(b.finish()?)
    }

    /// Set (`Some`) or remove (`None`) a slot; `track` keeps the change for
    /// the next `Delta`.
    fn set_slot(
        &mut self,
        source: u32,
        key: &[u8],
        value: Option<&[u8]>,
        limit: usize,
        track: bool,
    ) -> Result<(), PublishError> {
        if !self.indexed {
            return Err(PublishError::NoIndex { source });
        }
        if self.due.rows || self.due.index.is_some() {
            return Err(PublishError::FramesDue { source });
        }
        let shrank = PublishError::StorageShrank { source };
        let full = self.region(FULL);
        let records = self.storage.bytes().get(full.clone()).ok_or(shrank)?;
        let (at, old) = match find(records, key, Layout::Full) {
            Found::At(at, len) => {
                let old = records.get(at..at + len).ok_or(shrank)?;
                if value.is_some_and(|v| full_record_value(old) == Some(v)) {
                    return Ok(());
                }
                (at, len)
            }
            Found::Before(_) if value.is_none() => return Ok(()),
            Found::Before(at) => (at, 0),
        };
        let new = value.map_or(0, |v| 2 * LEN_BYTES + key.len() + v.len());
        let needed = self.index_overhead + full.len() - old + new;
        if needed > limit {
            return Err(PublishError::FrameTooLarge {
                source,
                kind: kind::INDEX,
                needed,
                limit,
            });
        }
        // The change for the next Delta: kept if the storage holds it, else
        // the next entry is a Full.
        let delta = self.region(DELTA);
        let records = self.storage.bytes().get(delta.clone()).ok_or(shrank)?;
        let delta_change = match (track && !self.delta_lost, find(records, key, Layout::Delta)) {
            (false, _) => None,
            (true, Found::At(d_at, len)) => Some((d_at, len)),
            (true, Found::Before(d_at)) => Some((d_at, 0)),
        };
        let delta_new = LEN_BYTES + key.len() + 1 + value.map_or(0, |v| LEN_BYTES + v.len());
        let end = self.ends[DELTA] + self.pending;
        self.ensure(source, end - old + new)?;
        let mut delta_change = delta_change;
        if let Some((_, d_old)) = delta_change {
            if !self
                .storage
                .grow((end - old + new + delta_new).saturating_sub(d_old))
            {
                delta_change = None;
                self.clear_delta();
                self.delta_lost = true;
            }
        }
        let at = full.start + at;
        // The hash changes with the slot bytes, and only if they do.
        let mut hash = self.hash;
        if old > 0 {
            hash.remove(self.storage.bytes().get(at..at + old).ok_or(shrank)?);
        }
        self.resize(source, FULL, at, old, new)?;
        if let Some(v) = value {
            let rec = self
                .storage
                .bytes_mut()
                .get_mut(at..at + new)
                .ok_or(shrank)?;
            write_record(rec, key, Some(v), Layout::Full).ok_or(shrank)?;
            hash.insert(rec);
        }
        self.hash = hash;
        self.state = hash.state();
        if let Some((d_at, d_old)) = delta_change {
            let d_at = self.ends[FULL] + d_at;
            self.resize(source, DELTA, d_at, d_old, delta_new)?;
            let rec = self
                .storage
                .bytes_mut()
                .get_mut(d_at..d_at + delta_new)
                .ok_or(shrank)?;
            write_record(rec, key, value, Layout::Delta).ok_or(shrank)?;
        }
        Ok(())
    }
}

/// Where a source's frame under way stands, as the row path reads it: the
/// regions it touches, the frame's size and rows, and the most it may
/// grow to. Kept in registers by an [`Observer`] across its rows.
#[derive(Clone, Copy, Debug)]
struct Pos {
    table_at: usize,
    slots_at: usize,
    frame_at: usize,
    /// The streams a row may go on: none while the last interval's frames
    /// are due.
    streams: u32,
    /// The frame under way: its size so far, its rows, and the most it
    /// may grow to.
    at: usize,
    rows: u32,
    room: usize,
}

/// A row into a source's frame under way, behind its stream's name as
/// encoded at declaration, if the name has up to 12 bytes and the row up
/// to 32, as most do, and there is room for the most such a row takes: its
/// stream's record says whether it fits the slot (rule 3), and the row goes
/// into one window of fixed size, every move in it of a fixed size. `None`,
/// having changed nothing `pos` says, for any other row: the caller's slow
/// path takes it to [`put_any`] or says why it cannot be kept.
#[inline(always)]
fn put_small(
    bytes: &mut [u8],
    pos: &mut Pos,
    stream: u32,
    ts: i64,
    wall_offset: i64,
    row: &[u8],
) -> Option<()> {
    if stream >= pos.streams {
        return None;
    }
    let rec_at = pos.table_at + stream as usize * REC;
    let rec = StreamRec::ref_from_bytes(bytes.get(rec_at..)?.first_chunk::<REC>()?).ok()?;
    let (word, name, small) = (rec.word, rec.name(), rec.small.get() as usize);
    let at = pos.at;
    // One comparison for both ends: shorter rows wrap to a large number.
    if row.len().wrapping_sub(16) >= small || at + SMALL_ROW > pos.room {
        return None;
    }
    let window = bytes
        .get_mut(pos.frame_at + at..)?
        .first_chunk_mut::<SMALL_ROW>()?;
    // At most a word: `small` is 0 for a longer name. Masked rather than
    // clamped, which is one instruction and keeps the window's offsets in
    // it.
    let head = (LEN_BYTES + name) & (2 * WORD - 1);
    *window.first_chunk_mut::<WORD>()? = u128::from_ne_bytes(word).to_ne_bytes();
    let (tail, rest) = window.get_mut(head..)?.split_first_chunk_mut::<TAIL>()?;
    write_row_tail(tail, ts, wall_offset, row.len());
    copy_small(rest.first_chunk_mut()?, row)?;
    let last_at = bytes.get_mut(rec_at + LAST_AT..)?.first_chunk_mut::<4>()?;
    *last_at = (at as u32).to_le_bytes();
    pos.at = at + head + TAIL + row.len();
    pos.rows += 1;
    Some(())
}

/// Where [`StreamRec::last_at`] is in a record.
const LAST_AT: usize = core::mem::offset_of!(StreamRec, last_at);

/// Any row into a source's frame under way, the name copied from the
/// front of its stream's slot; `None` if the stream is not one the row may
/// go on, its slot is too small for the row (rule 3), or the frame buffer
/// or the storage would be outgrown.
#[cold]
#[inline(never)]
fn put_any(
    bytes: &mut [u8],
    mut pos: Pos,
    stream: u32,
    ts: i64,
    wall_offset: i64,
    row: &[u8],
) -> Option<Pos> {
    if stream >= pos.streams {
        return None;
    }
    let (front, frame) = bytes.split_at_mut_checked(pos.frame_at)?;
    let (table, slots) = front.split_at_mut_checked(pos.slots_at)?;
    let rec_at = pos.table_at + stream as usize * REC;
    let rec = StreamRec::mut_from_bytes(table.get_mut(rec_at..rec_at + REC)?).ok()?;
    let head = LEN_BYTES + rec.name();
    let len = head + TAIL + row.len();
    let at = pos.at;
    if len > rec.cap.get() as usize || at + len > pos.room {
        return None;
    }
    let slot = rec.slot.get() as usize;
    let name = slots.get(slot..slot + head)?;
    write_prepared_row(frame.get_mut(at..)?, name, ts, wall_offset, row)?;
    rec.last_at = U32::new(at as u32);
    pos.at = at + len;
    pos.rows += 1;
    Some(pos)
}

/// The bytes [`put_small`] may write a row into: a head (length prefix and
/// name) masked to 31 bytes, the fixed run, and room for the row's last
/// 16 bytes at an offset masked to 31.
const SMALL_ROW: usize = 2 * WORD - 1 + TAIL + 2 * WORD - 1 + 16;
/// The longest row [`put_small`] takes.
const SMALL_ROW_BYTES: usize = 2 * WORD;

/// A row of 16 to 32 bytes to the front of `dst`, as two overlapping moves
/// of 16 bytes. Words rather than `copy_from_slice`, whose copies the
/// compiler merged into one call to `memcpy` of a variable size, a third
/// of a row's time; the second move's offset masked into `dst`, so that
/// no length needs checking here.
#[inline(always)]
fn copy_small(dst: &mut [u8; 2 * WORD - 1 + 16], row: &[u8]) -> Option<()> {
    let (first, last) = (row.first_chunk::<16>()?, row.last_chunk::<16>()?);
    let (first, last) = (u128::from_ne_bytes(*first), u128::from_ne_bytes(*last));
    let at = row.len().wrapping_sub(16) & (2 * WORD - 1);
    *dst.first_chunk_mut::<16>()? = first.to_ne_bytes();
    *dst.get_mut(at..)?.first_chunk_mut::<16>()? = last.to_ne_bytes();
    Some(())
}

/// `bytes.copy_within(from, to)`, through a small buffer so that no piece
/// overlaps where it goes: `copy_within` is a `memmove`, 1.6 KB of flash on
/// a Cortex-M built for size, for moves that are rare there (a slot set, a
/// stream's latest row outgrowing its slot) and short. A move that does
/// not fit in `bytes` moves nothing.
fn move_bytes(bytes: &mut [u8], from: core::ops::Range<usize>, to: usize) {
    const PIECE: usize = 64;
    let mut piece = [0u8; PIECE];
    let len = from.len();
    if from.end > bytes.len() || to.saturating_add(len) > bytes.len() {
        return;
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(PIECE);
        // Upwards from the end, downwards from the start, so that no piece
        // lands on bytes still to move.
        let at = if to > from.start {
            len - done - n
        } else {
            done
        };
        let (src, dst) = (from.start + at, to + at);
        let (Some(p), Some(src)) = (piece.get_mut(..n), bytes.get(src..src + n)) else {
            return;
        };
        copy(p, src);
        let (Some(dst), Some(p)) = (bytes.get_mut(dst..dst + n), piece.get(..n)) else {
            return;
        };
        copy(dst, p);
        done += n;
    }
}

/// `name` as a row carries it — its length, then its bytes — at the front
/// of `dst`; the bytes it took.
fn write_name(dst: &mut [u8], name: &[u8]) -> Option<usize> {
    let (len, rest) = dst.split_first_chunk_mut::<LEN_BYTES>()?;
    *len = (name.len() as u32).to_le_bytes();
    copy(rest.get_mut(..name.len())?, name)?;
    Some(LEN_BYTES + name.len())
}

#[inline]
fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
}

/// The encoded size and the `ts` of the row at the front of `bytes`. Out
/// of line: inlined where it is used, it was 100 bytes more of a device's
/// flash.
#[inline(never)]
fn row_at(bytes: &[u8]) -> Option<(usize, i64)> {
    let mut rest = bytes;
    let (_, fixed, _) = split_row(&mut rest)?;
    Some((bytes.len() - rest.len(), tail(fixed).ts.get()))
}

/// The earliest of `earliest` and the `ts` of the `count` rows of the
/// `Rows` frame `frame`.
fn earliest_ts(frame: &[u8], count: u32, mut earliest: i64) -> Option<i64> {
    let mut rest = frame.get(ROWS_HEAD_BYTES..)?;
    for _ in 0..count {
        let (_, fixed, _) = split_row(&mut rest)?;
        earliest = earliest.min(tail(fixed).ts.get());
    }
    Some(earliest)
}

/// The two record layouts of the slot regions: a `Full` blob's
/// (`u32 len | key | u32 len | value`) and a `Delta` blob's
/// (`u32 len | key | u8 present [| u32 len | value]`). Both are what the
/// std publisher has always sent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Full,
    Delta,
}

enum Found {
    /// The record of the key: its offset and length.
    At(usize, usize),
    /// Where a record of the key goes, keeping the keys sorted.
    Before(usize),
}

/// The key and the whole length of the record at the front of `rec`.
fn record(rec: &[u8], layout: Layout) -> Option<(&[u8], usize)> {
    let key_len = le_u32(rec.get(..LEN_BYTES)?) as usize;
    let key = rec.get(LEN_BYTES..LEN_BYTES + key_len)?;
    let mut at = LEN_BYTES + key_len;
    if layout == Layout::Delta {
        let present = *rec.get(at)?;
        at += 1;
        if present == 0 {
            return Some((key, at));
        }
    }
    let value_len = le_u32(rec.get(at..at + LEN_BYTES)?) as usize;
    Some((key, at + LEN_BYTES + value_len))
}

/// A `Full` record's value.
fn full_record_value(rec: &[u8]) -> Option<&[u8]> {
    let key_len = le_u32(rec.get(..LEN_BYTES)?) as usize;
    rec.get(2 * LEN_BYTES + key_len..)
}

/// The record of `key` in sorted `records`, or where it would go. The keys
/// are in byte order, the order std's `BTreeMap<Vec<u8>, _>` kept them in.
fn find(records: &[u8], key: &[u8], layout: Layout) -> Found {
    let mut at = 0;
    while let Some((k, len)) = records.get(at..).and_then(|r| record(r, layout)) {
        match k.cmp(key) {
            core::cmp::Ordering::Less => at += len,
            core::cmp::Ordering::Equal => return Found::At(at, len),
            core::cmp::Ordering::Greater => break,
        }
    }
    Found::Before(at)
}

/// Write a record of exactly `rec`'s length.
fn write_record(rec: &mut [u8], key: &[u8], value: Option<&[u8]>, layout: Layout) -> Option<()> {
    let (len, rest) = rec.split_first_chunk_mut::<LEN_BYTES>()?;
    *len = (key.len() as u32).to_le_bytes();
    let (k, mut rest) = rest.split_at_mut_checked(key.len())?;
    copy(k, key)?;
    if layout == Layout::Delta {
        let (present, r) = rest.split_first_mut()?;
        *present = u8::from(value.is_some());
        rest = r;
    }
    if let Some(v) = value {
        let (len, rest) = rest.split_first_chunk_mut::<LEN_BYTES>()?;
        *len = (v.len() as u32).to_le_bytes();
        copy(rest.get_mut(..v.len())?, v)?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;
    use crate::rows::Row;

    #[test]
    fn moving_bytes_is_copy_within_up_and_down_near_and_far() {
        // Distances shorter and longer than the moving piece, regions of
        // several pieces, and both directions, against `copy_within`.
        let fresh = || (0..=255u8).cycle().take(600).collect::<Vec<u8>>();
        for len in [0, 1, 5, 63, 64, 65, 130, 300] {
            for from in [0, 3, 100] {
                for to in [0, 1, 2, 40, 64, 99, 101, 163, 290] {
                    let mut want = fresh();
                    want.copy_within(from..from + len, to);
                    let mut got = fresh();
                    move_bytes(&mut got, from..from + len, to);
                    assert_eq!(got, want, "{len} bytes from {from} to {to}");
                }
            }
        }
    }

    #[test]
    fn moving_bytes_out_of_range_moves_nothing_past_the_end() {
        let mut bytes = [1u8, 2, 3, 4];
        move_bytes(&mut bytes, 1..3, 3);
        assert_eq!(bytes, [1, 2, 3, 4]);
        move_bytes(&mut bytes, 2..9, 0);
        assert_eq!(bytes, [1, 2, 3, 4]);
        // Pieces that would fit before one that does not.
        let mut bytes: Vec<u8> = (0..200).collect();
        move_bytes(&mut bytes, 100..250, 0);
        assert!(bytes.iter().copied().eq(0..200));
    }

    /// Every row length around the fast path's bounds, on names shorter
    /// than, as long as, and longer than a word holds, whether the row
    /// grows its stream's slot, takes the fast path or the general one,
    /// and through both `Publisher::observe` and an `Observer`: the frame
    /// holds the bytes `RowsBuilder` writes for the same rows.
    #[test]
    fn every_row_and_name_length_is_written_as_the_builder_writes_it() {
        let names = [
            "a",
            "cpu/usage",
            "twelve-bytes",
            "thirteen-byte",
            "a-name-of-twenty-byt",
        ];
        for observer in [false, true] {
            let mut p: Publisher<[u8; 8192], 1> = Publisher::new(PublisherConfig::default());
            let decl = SourceDecl {
                uuid: None,
                labels: Map::EMPTY,
                metadata: Map::EMPTY,
                clock_anchor_wall_ns: 0,
                complete: false,
                streams: &names,
                index_stream: None,
            };
            let source = p.add_source(&decl, [0; 8192]).unwrap();
            let mut buf = [0u8; 4096];
            // Past the connection's opening, whose Rows frame also carries
            // the latest row of every stream.
            p.connected();
            p.end_interval();
            while p.poll_transmit(&mut buf).unwrap().is_some() {}
            for (i, name) in names.iter().enumerate() {
                // The first pass grows the stream's slot row by row; the
                // second finds it large enough.
                for pass in 0..2 {
                    let rows: Vec<Vec<u8>> = (0..=40u8)
                        .map(|n| (0..n).map(|b| b ^ n ^ pass).collect())
                        .collect();
                    let stream = source.stream(i as u32);
                    let each = |p: &mut Publisher<[u8; 8192], 1>| {
                        if observer {
                            let mut o = p.observer(source).unwrap();
                            for (n, row) in rows.iter().enumerate() {
                                o.observe(stream, n as i64, -(n as i64), row).unwrap();
                            }
                        } else {
                            for (n, row) in rows.iter().enumerate() {
                                p.observe(stream, n as i64, -(n as i64), row).unwrap();
                            }
                        }
                    };
                    each(&mut p);
                    p.end_interval();
                    let t = p.poll_transmit(&mut buf).unwrap().unwrap();
                    assert_eq!((t.kind, t.rows), (kind::ROWS, rows.len() as u32));
                    let got = &buf[..t.len];
                    let Ok(Status::Complete((Frame::Rows(frame), _))) = decode(got) else {
                        panic!("{name}: a Rows frame");
                    };
                    let mut want = [0u8; 4096];
                    let mut b = RowsBuilder::new(
                        &mut want,
                        RowsHeader {
                            source: 0,
                            seq: frame.seq,
                            index_state: NO_INDEX_STATE,
                        },
                    )
                    .unwrap();
                    for (n, row) in rows.iter().enumerate() {
                        let (ts, wall_offset) = (n as i64, -(n as i64));
                        b.push(&Row {
                            stream: name,
                            ts,
                            wall_offset,
                            row,
                        })
                        .unwrap();
                    }
                    let len = b.finish().unwrap();
                    assert_eq!(
                        got,
                        &want[..len],
                        "{name}, pass {pass}, observer {observer}"
                    );
                    assert!(p.poll_transmit(&mut buf).unwrap().is_none());
                }
            }
        }
    }
}
