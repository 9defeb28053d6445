//! [`SinkSubscriber`]: a connection's frames applied to a [`Sink`], under
//! the core's subscriber rules.

use std::fmt;
use std::time::{Duration, Instant};

use dendro_wire_core::{
    kind, lost_allowance, Admitted, Frame, Handshake, ProtocolError, Subscriber, Tally,
    MAX_ROWS_FRAMES_PER_SECOND,
};

use super::sink::{SegmentStored, Sink, SinkError};

/// The most sources one connection may open, unless lowered with
/// [`SinkSubscriber::with_source_limit`].
pub const MAX_SOURCES_PER_CONNECTION: usize = 1024;

/// Why a frame could not be applied. The connection cannot go on after
/// any of these.
#[derive(Debug)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The frame broke a protocol rule.
    Protocol(ProtocolError),
    /// A handshake's `encoder` is not the one the sink stores.
    EncoderMismatch {
        /// The handshake's ordinal.
        source: u32,
        /// The encoder the publisher's rows are in.
        publisher: String,
        /// The encoder the sink expects.
        sink: String,
    },
    /// The sink failed.
    Sink(SinkError),
    /// A handshake or source update whose label does not name the identity
    /// the connection is bound to ([`SinkSubscriber::bind_identity`]).
    IdentityMismatch {
        /// The ordinal.
        source: u32,
        /// The frame's kind byte.
        kind: u8,
        /// The label that must carry the identity.
        label: String,
        /// The value the frame gave the label, if any.
        claimed: Option<String>,
        /// The identity the transport proved.
        identity: String,
    },
}

impl fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubscribeError::Protocol(e) => write!(f, "{e}"),
            SubscribeError::EncoderMismatch {
                source,
                publisher,
                sink,
            } => write!(
                f,
                "source {source}'s rows are in encoder {publisher:?}, and this sink stores \
                 {sink:?}; refusing it rather than storing rows nothing here can read"
            ),
            SubscribeError::Sink(e) => write!(f, "the sink failed: {e}"),
            SubscribeError::IdentityMismatch {
                source,
                kind,
                label,
                claimed,
                identity,
            } => {
                write!(f, "a {} for source {source} ", kind::name(*kind))?;
                match claimed {
                    Some(claimed) => write!(f, "claims {label}={claimed:?}")?,
                    None => write!(f, "has no {label:?} label")?,
                }
                write!(
                    f,
                    ", and this connection's certificate proves {label}={identity:?}; a client \
                     writes only as itself, so nothing more from it is applied"
                )
            }
        }
    }
}

impl std::error::Error for SubscribeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SubscribeError::Protocol(e) => Some(e),
            SubscribeError::Sink(e) => Some(&**e),
            SubscribeError::EncoderMismatch { .. } | SubscribeError::IdentityMismatch { .. } => {
                None
            }
        }
    }
}

impl From<ProtocolError> for SubscribeError {
    fn from(e: ProtocolError) -> Self {
        SubscribeError::Protocol(e)
    }
}

/// Applies one connection's frames to a sink, enforcing the subscriber's
/// rules through the core's state machine: a frame for an ordinal with no
/// handshake and a second handshake for a live one are refused; rows before
/// a source's first `Full` (unless they declare no index) and rows built
/// against another index state are skipped and counted; a `seq` gap is
/// counted and logged once per source.
///
/// ```
/// use dendro_wire_core::{Frame, Handshake, Map, RowList, Rows};
/// use dendro_wire_std::{CountingSink, SinkSubscriber};
///
/// let mut sub = SinkSubscriber::new(CountingSink::default());
/// let hs = Handshake { source: 0, uuid: None, labels: Map::EMPTY, metadata: Map::EMPTY,
///                      clock_anchor_wall_ns: 0, complete: false };
/// sub.apply(&Frame::Handshake(hs))?;
/// let keepalive = Rows { source: 0, seq: 0, index_state: (0, 0), rows: RowList::EMPTY };
/// sub.apply(&Frame::Rows(keepalive))?;
/// assert_eq!(sub.tally().sources, 1);
/// # Ok::<(), dendro_wire_std::SubscribeError>(())
/// ```
pub struct SinkSubscriber<S: Sink> {
    rules: SourceTable,
    /// The most sources the connection may open.
    limit: usize,
    /// What the connection's transport proved, if it is bound to it.
    identity: Option<BoundIdentity>,
    sink: S,
    tally: Tally,
    /// Segments the sink already held, counted in the tally too.
    segments_held: u64,
    /// When the connection opened, if frames lost are bounded by its age.
    opened: Option<Instant>,
    /// Whether an implausible `seq` jump has been logged.
    said_implausible: bool,
}

/// The label every handshake and source update must carry, and the value it
/// must have: the identity the connection's transport proved.
#[derive(Debug)]
struct BoundIdentity {
    label: String,
    identity: String,
}

/// The core's rules in a table sized to the sources a connection has
/// opened: a collector holds thousands of connections, most with a source
/// or three, and the largest table costs tens of KiB.
enum SourceTable {
    Few(Box<Subscriber<4>>),
    Dozens(Box<Subscriber<64>>),
    Many(Box<Subscriber<MAX_SOURCES_PER_CONNECTION>>),
}

impl SourceTable {
    fn allow_lost(&mut self, frames: u64) {
        match self {
            SourceTable::Few(rules) => rules.allow_lost(frames),
            SourceTable::Dozens(rules) => rules.allow_lost(frames),
            SourceTable::Many(rules) => rules.allow_lost(frames),
        }
    }

    fn admit(&mut self, frame: &Frame<'_>) -> Result<Admitted, ProtocolError> {
        match self {
            SourceTable::Few(rules) => rules.admit(frame),
            SourceTable::Dozens(rules) => rules.admit(frame),
            SourceTable::Many(rules) => rules.admit(frame),
        }
    }

    fn source_count(&self) -> usize {
        match self {
            SourceTable::Few(rules) => rules.source_count(),
            SourceTable::Dozens(rules) => rules.source_count(),
            SourceTable::Many(rules) => rules.source_count(),
        }
    }

    /// The next larger table, holding the same sources and allowing
    /// `limit`; `None` from the largest.
    fn grown(&self, limit: usize) -> Option<SourceTable> {
        // The limit is raised before the table is boxed: one allocation a
        // growth.
        Some(match self {
            SourceTable::Few(rules) => {
                SourceTable::Dozens(Box::new(rules.resize()?.with_source_limit(limit)))
            }
            SourceTable::Dozens(rules) => {
                SourceTable::Many(Box::new(rules.resize()?.with_source_limit(limit)))
            }
            SourceTable::Many(_) => return None,
        })
    }

    fn with_source_limit(self, limit: usize) -> SourceTable {
        match self {
            SourceTable::Few(rules) => SourceTable::Few(Box::new(rules.with_source_limit(limit))),
            SourceTable::Dozens(rules) => {
                SourceTable::Dozens(Box::new(rules.with_source_limit(limit)))
            }
            SourceTable::Many(rules) => SourceTable::Many(Box::new(rules.with_source_limit(limit))),
        }
    }
}

impl<S: Sink> fmt::Debug for SinkSubscriber<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SinkSubscriber")
            .field("sources", &self.rules.source_count())
            .field("tally", &self.tally)
            .finish_non_exhaustive()
    }
}

impl<S: Sink> SinkSubscriber<S> {
    /// A subscriber for one connection into `sink`.
    pub fn new(sink: S) -> Self {
        SinkSubscriber {
            rules: SourceTable::Few(Box::default()),
            limit: MAX_SOURCES_PER_CONNECTION,
            identity: None,
            sink,
            tally: Tally::default(),
            segments_held: 0,
            opened: None,
            said_implausible: false,
        }
    }

    /// Count frames lost by a connection that opened at `opened`: for each
    /// source, at most what it could have sent since at
    /// [`MAX_ROWS_FRAMES_PER_SECOND`], plus the frames it has sent
    /// ([`lost_allowance`], [protocol §8.17](dendro_wire_core::protocol)).
    /// A `seq` jump past that is counted as a regression, and the first is
    /// logged. Without it (a capture, read at any speed) every jump is
    /// frames lost.
    ///
    /// ```
    /// use std::time::Instant;
    /// use dendro_wire_core::{Frame, Handshake, Map, RowList, Rows};
    /// use dendro_wire_std::{CountingSink, SinkSubscriber};
    ///
    /// let mut sub = SinkSubscriber::new(CountingSink::default()).bound_lost_from(Instant::now());
    /// let hs = Handshake { source: 0, uuid: None, labels: Map::EMPTY, metadata: Map::EMPTY,
    ///                      clock_anchor_wall_ns: 0, complete: false };
    /// sub.apply(&Frame::Handshake(hs))?;
    /// for seq in [0, u64::MAX] {
    ///     sub.apply(&Frame::Rows(Rows { source: 0, seq, index_state: (0, 0),
    ///                                   rows: RowList::EMPTY }))?;
    /// }
    /// let tally = sub.tally();
    /// assert_eq!((tally.frames_lost, tally.seq_regressions), (0, 1));
    /// # Ok::<(), dendro_wire_std::SubscribeError>(())
    /// ```
    pub fn bound_lost_from(mut self, opened: Instant) -> Self {
        self.opened = Some(opened);
        self
    }

    /// Bind the connection's sources to `identity`, what its transport
    /// proved (a TLS client certificate's name, say): every `Handshake` and
    /// `SourceUpdate` must carry label `label` with exactly that value, or
    /// it is refused ([`SubscribeError::IdentityMismatch`]) and the
    /// connection cannot go on. This is what stops an authenticated agent
    /// from writing as another host.
    ///
    /// ```
    /// use dendro_wire_core::{Frame, Handshake, Map};
    /// use dendro_wire_std::{CountingSink, SinkSubscriber, SubscribeError};
    ///
    /// let mut sub = SinkSubscriber::new(CountingSink::default()).bind_identity("host", "web-01");
    /// let labels = [("host", "web-02")];
    /// let hs = Handshake { source: 0, uuid: None, labels: Map::from_pairs(&labels),
    ///                      metadata: Map::EMPTY, clock_anchor_wall_ns: 0, complete: false };
    /// let refused = sub.apply(&Frame::Handshake(hs)).unwrap_err();
    /// assert!(matches!(refused, SubscribeError::IdentityMismatch { .. }));
    /// assert_eq!(sub.sink().sources, 0);
    /// ```
    pub fn bind_identity(mut self, label: impl Into<String>, identity: impl Into<String>) -> Self {
        self.identity = Some(BoundIdentity {
            label: label.into(),
            identity: identity.into(),
        });
        self
    }

    /// Whether a frame's labels claim the identity the connection is bound
    /// to (frames without labels claim nothing).
    fn check_identity(&self, frame: &Frame<'_>) -> Result<(), SubscribeError> {
        let Some(BoundIdentity { label, identity }) = &self.identity else {
            return Ok(());
        };
        let (source, labels) = match frame {
            Frame::Handshake(h) => (h.source, &h.labels),
            Frame::SourceUpdate(u) => (u.source, &u.labels),
            _ => return Ok(()),
        };
        let claimed = labels.get(label);
        if claimed == Some(identity.as_str()) {
            return Ok(());
        }
        Err(SubscribeError::IdentityMismatch {
            source,
            kind: frame.kind(),
            label: label.clone(),
            claimed: claimed.map(str::to_string),
            identity: identity.clone(),
        })
    }

    /// Allow at most `limit` sources on the connection (at most
    /// [`MAX_SOURCES_PER_CONNECTION`]).
    pub fn with_source_limit(mut self, limit: usize) -> Self {
        self.limit = limit.min(MAX_SOURCES_PER_CONNECTION);
        self.rules = self.rules.with_source_limit(self.limit);
        self
    }

    /// The rules' judgement of `frame`; a handshake past the table's size
    /// and within the limit moves the sources to a larger table first.
    fn admit(&mut self, frame: &Frame<'_>) -> Result<Admitted, ProtocolError> {
        match self.rules.admit(frame) {
            Err(ProtocolError::TooManySources { .. }) => {
                let grown = match self.rules.grown(self.limit) {
                    Some(grown) if self.rules.source_count() < self.limit => grown,
                    _ => {
                        return Err(ProtocolError::TooManySources { limit: self.limit });
                    }
                };
                self.rules = grown;
                self.admit(frame)
            }
            judged => judged,
        }
    }

    /// What the frames it was given did, counted as every receiver counts
    /// them. Its `frames` are those it was given: a receiver that skips
    /// unknown kinds before they reach it (every one in this crate, unless
    /// asked to yield them) counts the frames it cut itself.
    pub fn tally(&self) -> Tally {
        self.tally
    }

    /// Segments the sink already held ([`Sink::segment`] said so): counted
    /// in the tally's `segments` as every receiver counts them, and only a
    /// sink can tell these apart.
    pub fn segments_held(&self) -> u64 {
        self.segments_held
    }

    /// The sink's backlog, if it queues work ([`Sink::backlog`]).
    pub fn backlog(&self) -> Option<&super::Backlog> {
        self.sink.backlog()
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, mutably.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Give the sink back, telling it the connection ended.
    pub fn finish(self) -> Result<S, SinkError> {
        let (sink, ended) = self.end();
        ended.map(|()| sink)
    }

    /// Tell the sink the connection ended, and give it back whether or not
    /// it could end it.
    pub fn end(mut self) -> (S, Result<(), SinkError>) {
        let ended = self.sink.end_connection();
        (self.sink, ended)
    }

    /// Apply one frame; returns what it did, as a tally of that frame.
    pub fn apply(&mut self, frame: &Frame<'_>) -> Result<Tally, SubscribeError> {
        self.check_identity(frame)?;
        if let Frame::Handshake(h) = frame {
            self.check_encoder(h)?;
        }
        let bound = match (frame, self.opened) {
            (Frame::Rows(_), Some(opened)) => {
                let age = opened.elapsed();
                let ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
                // The frames it has sent, this one included.
                let allowance = lost_allowance(ms, self.tally.frames.saturating_add(1));
                self.rules.allow_lost(allowance);
                Some((age, allowance))
            }
            _ => None,
        };
        let admitted = self.admit(frame)?;
        let sink = |e| SubscribeError::Sink(e);
        match (admitted, frame) {
            (Admitted::Opened { source }, Frame::Handshake(h)) => {
                self.sink.open_source(source, h).map_err(sink)?;
            }
            (Admitted::Index { source, .. }, Frame::Index(i)) => {
                self.sink.index_entry(source, i).map_err(sink)?;
            }
            (Admitted::Rows(v), Frame::Rows(rows)) => {
                if v.skip.is_none() && !rows.rows.is_empty() {
                    self.sink.rows(v.source, rows).map_err(sink)?;
                }
                if v.lost > 0 && v.first_gap {
                    log::warn!(
                        "source {}: {} frame(s) lost before seq {}; the rows that arrived are \
                         still good, and this is logged once per source",
                        v.source,
                        v.lost,
                        rows.seq
                    );
                }
                if let (true, Some((age, allowance))) = (v.implausible, bound) {
                    self.say_implausible(v.source, rows.seq, age, allowance);
                }
            }
            (Admitted::Apply { source }, Frame::Segment(s)) => {
                let stored = self.sink.segment(source, s).map_err(sink)?;
                self.segments_held += u64::from(stored == SegmentStored::AlreadyHeld);
            }
            (Admitted::Apply { source }, Frame::ClockOffset(c)) => {
                self.sink.clock_offset(source, c).map_err(sink)?;
            }
            (Admitted::Apply { source }, Frame::SourceUpdate(u)) => {
                self.sink.source_update(source, u).map_err(sink)?;
            }
            _ => {}
        }
        let mut did = Tally::default();
        did.count(frame, admitted);
        self.tally += did;
        Ok(did)
    }

    /// The first `seq` jump on the connection that it could not have
    /// produced: said once, as a peer chooses how many it sends.
    fn say_implausible(&mut self, source: u32, seq: u64, age: Duration, allowance: u64) {
        if std::mem::replace(&mut self.said_implausible, true) {
            return;
        }
        log::warn!(
            "source {source}: Rows seq {seq} jumps further than this connection could have lost \
             frames in the {age:.1?} it has been open (at most {allowance} a source: \
             {MAX_ROWS_FRAMES_PER_SECOND} a second, and one for each frame it sent); counted as \
             a seq regression, not as frames lost, and logged once per connection"
        );
    }

    fn check_encoder(&self, h: &Handshake<'_>) -> Result<(), SubscribeError> {
        let (Some(sink), Some(publisher)) =
            (self.sink.expected_encoder(), h.metadata.get("encoder"))
        else {
            return Ok(());
        };
        if sink == publisher {
            return Ok(());
        }
        Err(SubscribeError::EncoderMismatch {
            source: h.source,
            publisher: publisher.to_string(),
            sink: sink.to_string(),
        })
    }
}
