//! [`AgentPublisher`]: frames for an agent that has no archive to tail — the
//! core's publisher machine, with storage that grows, feeding a bounded
//! [`FrameQueue`].

use std::collections::BTreeMap;

use dendro_wire_core::{
    is_canonical_uuid, kind, ClockOffset, Frame, Map, PublishError, Publisher, PublisherConfig,
    Segment, SourceDecl, SourceId, SourceUpdate, StreamId, Transmit, NO_INDEX_STATE,
};

use super::queue::{FrameQueue, Pushed};
use super::source::{mint_uuid, wall_now_ns, SourceConfig};
use crate::frame_buf::append;
use crate::growable::Growable;
use crate::owned::pairs;

/// The most sources one publisher declares.
pub const MAX_SOURCES: usize = 1024;

/// How an [`AgentPublisher`] paces full index state and bounds its queue.
///
/// `#[non_exhaustive]`, as every configuration of this crate is: start from
/// [`AgentConfig::default`] and set what differs with the setters (or by
/// assigning a field), so a field added later breaks no caller.
///
/// ```
/// use dendro_wire_std::{AgentConfig, AgentPublisher};
///
/// let config = AgentConfig::default().full_every(600).queue_frames(16_384);
/// assert_eq!((config.full_every, config.queue_bytes), (600, 16 << 20));
/// let _publisher = AgentPublisher::new(config);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentConfig {
    /// Re-send an indexed source's `Full` every this many intervals (rule 7),
    /// besides the one every connection opens with (rule 2). Default 60
    /// intervals: a minute at one interval a second.
    pub full_every: u64,
    /// The most frames waiting for the transport; past it a frame is
    /// dropped and counted. Default 4,096 frames.
    pub queue_frames: usize,
    /// The most bytes waiting for the transport; past it a frame is dropped
    /// and counted. Default 16 MiB (`16 << 20` bytes).
    pub queue_bytes: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            full_every: 60,
            queue_frames: 4096,
            queue_bytes: 16 << 20,
        }
    }
}

impl AgentConfig {
    /// Set [`full_every`](Self::full_every), in intervals.
    pub fn full_every(mut self, intervals: u64) -> Self {
        self.full_every = intervals;
        self
    }

    /// Set [`queue_frames`](Self::queue_frames).
    pub fn queue_frames(mut self, frames: usize) -> Self {
        self.queue_frames = frames;
        self
    }

    /// Set [`queue_bytes`](Self::queue_bytes), in bytes.
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }
}

/// What a publisher has done: counts since it was made, never reset.
/// `#[non_exhaustive]`, as every count of this crate is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentStats {
    /// Intervals ended.
    pub intervals: u64,
    /// Connections opened with handshakes and full state.
    pub connections: u64,
    /// Rows in `Rows` frames queued for the transport.
    pub rows_queued: u64,
    /// Rows dropped: observed with no connection open, too large for a
    /// frame, or in a `Rows` frame the queue could not take.
    pub rows_dropped: u64,
    /// `Rows` frames the queue could not take: full, or its connection
    /// gone. Each is a gap at the subscriber.
    pub rows_frames_dropped: u64,
    /// Index slot changes refused: the `Full` carrying every slot would
    /// not fit a frame. The slot keeps its value before the change.
    pub index_entries_dropped: u64,
}

/// What became of the frames handed to the queue: the one thing the core
/// machine cannot know.
#[derive(Clone, Copy, Debug, Default)]
struct Queued {
    rows: u64,
    rows_dropped: u64,
    rows_frames_dropped: u64,
    /// Connections whose opening the queue refused: gone before it was
    /// queued.
    openings_lost: u64,
}

/// The publisher for an agent that has no archive to tail.
///
/// The agent declares its sources, then, every interval, observes rows and
/// changes index slots and calls [`end_interval`](Self::end_interval). The
/// rules of what is sent live in the core's
/// [`Publisher`](dendro_wire_core::Publisher), which this wraps: per
/// source, index changes first (a `Delta` whose `state` is the
/// [`SlotSetHash`](dendro_wire_core::SlotSetHash) of the whole slot set,
/// or a `Full` every [`full_every`](AgentConfig::full_every) intervals),
/// then a `Rows` frame, empty when nothing was observed (rules 4, 6, 7);
/// a slot changed between two readings closes the frame under way first,
/// so every row goes under the slots it was observed against (rule 9). A
/// new connection opens with every handshake from ordinal 0, a `Full` for
/// every indexed source, and a `Rows` frame carrying the latest
/// observation of every stream still observed against the slots as they
/// are (rules 2, 3, 8).
///
/// It never waits on the transport: frames go into a bounded
/// [`FrameQueue`](crate::FrameQueue) that a transport thread drains, and a
/// frame that does not fit is dropped and counted, which the subscriber sees
/// as a `seq` gap. Rows observed while no connection is open are dropped
/// too, and counted in [`rows_dropped`](AgentStats::rows_dropped): wait for
/// the transport's first connection
/// ([`FrameQueue::wait_connected`](crate::FrameQueue::wait_connected))
/// before the first interval.
///
/// What it and its transports have to say as they go (a row left out, a
/// failed connect, a reconnect) goes through the [`log`] crate, at `warn`:
/// install a logger (`env_logger`, say) to see it.
///
/// Timestamps: a row's `ts` is in the caller's own unit (nanoseconds is
/// what the tool's agent uses), the same unit for every row and index
/// entry of a source; `wall_offset` is the wall clock minus `ts` at the
/// moment of observation, in that unit ([PROTOCOL.md §3, §4.3]); a clock
/// offset's `offset_ns` is in nanoseconds.
///
/// [PROTOCOL.md §3, §4.3]: dendro_wire_core::protocol
///
/// ```
/// use dendro_wire_std::{AgentConfig, AgentPublisher, FrameQueue, SourceConfig};
///
/// let mut publisher = AgentPublisher::new(AgentConfig::default());
/// let cpu = publisher.add_source(
///     SourceConfig::new().label("source", "cpu").stream("cpu/usage").index("cpu/slots"),
/// )?;
/// let queue: FrameQueue = publisher.queue();
/// queue.connected(); // what a transport does when it connects
///
/// publisher.set_slot(cpu, b"cpu0", b"online");
/// publisher.observe(cpu, "cpu/usage", 1_000, 0, &[0; 32])?;
/// publisher.end_interval();
/// // Handshake, Full, and the first Rows frame.
/// assert_eq!(queue.len().frames, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AgentPublisher {
    queue: FrameQueue,
    /// Boxed: its table holds [`MAX_SOURCES`] sources in place.
    machine: Box<Publisher<Growable, MAX_SOURCES>>,
    queued: Queued,
}

impl std::fmt::Debug for AgentPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentPublisher")
            .field("sources", &self.machine.source_count())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// A call the publisher refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentError {
    /// More sources than [`MAX_SOURCES`].
    TooManySources,
    /// A stream the source did not declare.
    UnknownStream(String),
    /// A source's uuid that is not canonical lowercase 8-4-4-4-12 hex.
    NotACanonicalUuid(String),
    /// A frame the encoder refuses: labels, metadata or a segment too large
    /// for a frame (64 MiB).
    Encode(dendro_wire_core::Error),
    /// A call the core's rules refuse: a frame for a source not declared,
    /// a source's streams too many for a frame.
    Refused(PublishError),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::TooManySources => {
                write!(f, "a publisher declares at most {MAX_SOURCES} sources")
            }
            AgentError::UnknownStream(s) => {
                write!(f, "the source declared no stream named {s:?}")
            }
            AgentError::Encode(e) => write!(f, "{e}"),
            AgentError::NotACanonicalUuid(u) => write!(
                f,
                "the uuid {u:?} is not canonical lowercase 8-4-4-4-12 hex, the only form a \
                 handshake carries"
            ),
            AgentError::Refused(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AgentError {}

impl From<PublishError> for AgentError {
    fn from(e: PublishError) -> Self {
        match e {
            PublishError::TooManySources { .. } => AgentError::TooManySources,
            PublishError::Encode(e) => AgentError::Encode(e),
            other => AgentError::Refused(other),
        }
    }
}

impl AgentPublisher {
    /// A publisher with no sources and an unconnected queue.
    pub fn new(config: AgentConfig) -> Self {
        let machine = PublisherConfig {
            full_every: config.full_every,
            ..PublisherConfig::DEFAULT
        };
        AgentPublisher {
            queue: FrameQueue::new(config.queue_frames, config.queue_bytes),
            machine: Box::new(Publisher::new(machine)),
            queued: Queued::default(),
        }
    }

    /// The queue a transport drains.
    pub fn queue(&self) -> FrameQueue {
        self.queue.clone()
    }

    /// What the publisher has done so far.
    pub fn stats(&self) -> AgentStats {
        let m = self.machine.stats();
        AgentStats {
            intervals: m.intervals,
            connections: m.connections - self.queued.openings_lost,
            rows_queued: self.queued.rows,
            rows_dropped: m.rows_unsent
                + m.rows_dropped
                + m.rows_refused
                + self.queued.rows_dropped,
            rows_frames_dropped: self.queued.rows_frames_dropped,
            index_entries_dropped: m.slot_changes_refused,
        }
    }

    /// Declare a source. Its handshake goes out when the next connection
    /// opens, or at the next interval if one is open.
    pub fn add_source(&mut self, mut config: SourceConfig) -> Result<SourceId, AgentError> {
        let uuid = config.uuid.get_or_insert_with(mint_uuid);
        if !is_canonical_uuid(uuid.as_bytes()) {
            return Err(AgentError::NotACanonicalUuid(uuid.clone()));
        }
        let (labels, metadata) = (pairs(&config.labels), pairs(&config.metadata));
        let streams: Vec<&str> = config.streams.iter().map(String::as_str).collect();
        let decl = SourceDecl {
            uuid: config.uuid.as_deref(),
            labels: Map::from_pairs(&labels),
            metadata: Map::from_pairs(&metadata),
            clock_anchor_wall_ns: config.clock_anchor_wall_ns,
            complete: false,
            streams: &streams,
            index_stream: config.index_stream.as_deref(),
        };
        Ok(self.machine.add_source(&decl, Growable::default())?)
    }

    /// The source's stream named `stream`, to observe rows on without
    /// looking its name up each time.
    pub fn stream(&self, source: SourceId, stream: &str) -> Option<StreamId> {
        self.machine.stream_id(source, stream)
    }

    /// Observe one row on a declared stream, for this interval's `Rows`
    /// frame. A row too large for a frame is left out and counted in
    /// [`rows_dropped`](AgentStats::rows_dropped).
    pub fn observe(
        &mut self,
        source: SourceId,
        stream: &str,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), AgentError> {
        let Some(id) = self.machine.stream_id(source, stream) else {
            return Err(AgentError::UnknownStream(stream.to_string()));
        };
        self.observe_stream(id, ts, wall_offset, row)
    }

    /// [`observe`](Self::observe), on a stream named by its id
    /// ([`stream`](Self::stream)).
    #[inline]
    pub fn observe_stream(
        &mut self,
        stream: StreamId,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), AgentError> {
        match self.machine.observe(stream, ts, wall_offset, row) {
            Ok(()) => Ok(()),
            Err(e @ PublishError::FrameTooLarge { .. }) => {
                // Counted by the machine; the interval's other rows go.
                log::warn!(
                    "source {}: a row on stream {} left out: {e}",
                    stream.source().ordinal(),
                    stream.index()
                );
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Set an index slot (add it or change it); sent as a `Delta` at the end
    /// of the interval. A source declared without an index ignores it; a
    /// slot that would take the `Full` past a frame is refused, logged and
    /// counted in [`index_entries_dropped`](AgentStats::index_entries_dropped).
    pub fn set_slot(&mut self, source: SourceId, key: &[u8], value: &[u8]) {
        let result = self.machine.set_slot(source, key, value);
        self.slot_changed(source, result);
    }

    /// Remove an index slot.
    pub fn remove_slot(&mut self, source: SourceId, key: &[u8]) {
        let result = self.machine.remove_slot(source, key);
        self.slot_changed(source, result);
    }

    fn slot_changed(&self, source: SourceId, result: Result<(), PublishError>) {
        match result {
            Ok(()) | Err(PublishError::NoIndex { .. }) => {}
            Err(e) => log::warn!("source {}: a slot change refused: {e}", source.ordinal()),
        }
    }

    /// The source's index state now.
    pub fn index_state(&self, source: SourceId) -> (u64, u64) {
        self.machine.index_state(source).unwrap_or(NO_INDEX_STATE)
    }

    /// Send one clock-drift observation now.
    pub fn clock_offset(
        &mut self,
        source: SourceId,
        ts: i64,
        offset_ns: i64,
    ) -> Result<Pushed, AgentError> {
        self.send(&Frame::ClockOffset(ClockOffset {
            source: source.ordinal(),
            ts,
            offset_ns,
        }))
    }

    /// Replace the source's labels and metadata, and send a `SourceUpdate`
    /// carrying both whole. Maps too large for a frame are refused, and the
    /// source keeps its identity.
    pub fn update_identity(
        &mut self,
        source: SourceId,
        labels: BTreeMap<String, String>,
        metadata: BTreeMap<String, String>,
    ) -> Result<Pushed, AgentError> {
        let (l, m) = (pairs(&labels), pairs(&metadata));
        let (labels, metadata) = (Map::from_pairs(&l), Map::from_pairs(&m));
        let ts = wall_now_ns();
        let update = SourceUpdate {
            source: source.ordinal(),
            ts,
            labels,
            metadata,
        };
        let len = update.buffer_len().map_err(AgentError::Encode)?;
        self.queue_frame(len, |machine, room| {
            machine.update_source(source, ts, labels, metadata, room)
        })
    }

    /// Pass a sealed segment through, for catch-up.
    pub fn segment(&mut self, segment: &Segment<'_>) -> Result<Pushed, AgentError> {
        self.send(&Frame::Segment(*segment))
    }

    /// Queue a frame built here now. A frame for a source whose handshake
    /// has not gone out on this connection is dropped (rule 1), and so is
    /// one the queue refuses while a new connection waits for its opening.
    fn send(&mut self, frame: &Frame<'_>) -> Result<Pushed, AgentError> {
        let len = frame.buffer_len().map_err(AgentError::Encode)?;
        self.queue_frame(len, |machine, room| {
            machine.encode_passthrough(frame, room).map(Some)
        })
    }

    /// Queue the frame of at most `len` bytes that `emit` has the machine
    /// write now. `None` from it, or its refusal for a source not yet
    /// handshaken, is a frame with no connection to go on.
    fn queue_frame(
        &mut self,
        len: usize,
        emit: impl FnOnce(
            &mut Publisher<Growable, MAX_SOURCES>,
            &mut [u8],
        ) -> Result<Option<usize>, PublishError>,
    ) -> Result<Pushed, AgentError> {
        let mut frame = self.queue.buffer();
        // No frame is empty, so 0 bytes written is "nothing to send".
        let written = append(&mut frame, len, |room| {
            emit(&mut self.machine, room).map(|n| n.unwrap_or(0))
        });
        match written {
            Ok(0) | Err(PublishError::NotHandshaken { .. }) => Ok(Pushed::Disconnected),
            Ok(_) => Ok(self.queue.push(frame)),
            Err(e) => Err(e.into()),
        }
    }

    /// End the interval: per source, index changes first, then exactly one
    /// `Rows` frame. On a new connection, the opening sequence instead.
    pub fn end_interval(&mut self) {
        let opening = self.queue.pending_opening();
        if opening.is_some() {
            self.machine.connected();
        } else if self.machine.is_connected() && !self.queue.is_open() {
            self.machine.disconnected();
        }
        self.machine.end_interval();
        match opening {
            Some(epoch) => {
                let mut frames = Vec::new();
                let mut rows = 0;
                while let Some((frame, t)) = self.poll() {
                    rows += u64::from(t.rows);
                    frames.push(frame);
                }
                if self.queue.push_opening(epoch, frames) {
                    self.queued.rows += rows;
                } else {
                    // The connection went before its opening was queued;
                    // the next one starts afresh.
                    self.machine.disconnected();
                    self.queued.openings_lost += 1;
                    self.queued.rows_dropped += rows;
                }
            }
            None => {
                while let Some((frame, t)) = self.poll() {
                    let pushed = self.queue.push(frame);
                    if t.kind != kind::ROWS {
                        continue;
                    }
                    match pushed {
                        Pushed::Queued => self.queued.rows += u64::from(t.rows),
                        Pushed::Full | Pushed::Disconnected => {
                            self.queued.rows_dropped += u64::from(t.rows);
                            self.queued.rows_frames_dropped += 1;
                        }
                    }
                }
            }
        }
    }

    /// The next frame the machine requires, in a queue buffer.
    fn poll(&mut self) -> Option<(Vec<u8>, Transmit)> {
        match self.machine.poll_frame() {
            Ok(Some((bytes, t))) => {
                let mut frame = self.queue.buffer();
                frame.extend_from_slice(bytes);
                Some((frame, t))
            }
            Ok(None) => None,
            Err(e) => {
                // The storage never shrinks; if this came, what is due is
                // dropped and counted when the next interval ends.
                log::error!("a frame the publisher owes could not be taken: {e}");
                None
            }
        }
    }
}
