//! [`PublishError`]: a call the publisher refuses, naming the rule or the
//! bound.

use core::fmt;

use crate::error::Error;
use crate::kind;

/// A call the publisher refuses, naming the rule it would break or the
/// bound it would cross. Nothing changes when one is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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
    /// A row given to the [`Observer`](crate::Observer) of one source on a stream of another.
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
    /// A frame for a source whose handshake has not gone out on this
    /// connection (rule 1).
    NotHandshaken {
        /// The source's ordinal.
        source: u32,
        /// The frame's kind byte.
        kind: u8,
    },
    /// A `Handshake`, `Index`, `Rows` or `SourceUpdate` given to
    /// [`encode_passthrough`](super::Publisher::encode_passthrough): the publisher sends those itself.
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
        /// [`PublisherConfig::frame_buffer`](crate::PublisherConfig::frame_buffer).
        limit: usize,
    },
    /// A row observed after a slot change whose `ts` is not later than
    /// the newest row observed before the change (or earlier than an entry
    /// that brought slots in since). Read by time (rule 5), it would fall
    /// under the slots before the change, and read by its `index_state`
    /// (rule 9) under the slots after it: no stamp of the change's entry
    /// can put it after the one and before the other
    /// ([protocol §8.16](crate::protocol)). A later `ts` is taken. (The
    /// `ts`s are the caller's to say: carried here, they made every
    /// `Result` of the publisher larger on a 32-bit device.)
    NotAfterSlotChange {
        /// The source's ordinal.
        source: u32,
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
    /// [`Storage`](crate::Storage) must never shrink.
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
            PublishError::NotAfterSlotChange { source } => write!(
                f,
                "a row of source {source} observed after a slot change, is not later \
                 than the newest row observed before the change; read by time (rule 5) \
                 it would fall under the slots before the change, so it is refused (a later ts \
                 is taken)"
            ),
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

impl PublishError {
    /// The variant's name, for a device that logs errors without
    /// `core::fmt` (whose machinery and these messages take much of its
    /// flash; `cargo xtask firmware` prints the footprint); [`Display`](fmt::Display) says the whole sentence.
    pub const fn name(&self) -> &'static str {
        match self {
            PublishError::TooManySources { .. } => "TooManySources",
            PublishError::UnknownSource { .. } => "UnknownSource",
            PublishError::UnknownStream { .. } => "UnknownStream",
            PublishError::DuplicateStream { .. } => "DuplicateStream",
            PublishError::OtherSource { .. } => "OtherSource",
            PublishError::NoIndex { .. } => "NoIndex",
            PublishError::NotHandshaken { .. } => "NotHandshaken",
            PublishError::NotPassthrough { .. } => "NotPassthrough",
            PublishError::FrameTooLarge { .. } => "FrameTooLarge",
            PublishError::NotAfterSlotChange { .. } => "NotAfterSlotChange",
            PublishError::StorageFull { .. } => "StorageFull",
            PublishError::StorageShrank { .. } => "StorageShrank",
            PublishError::BufferTooSmall { .. } => "BufferTooSmall",
            PublishError::Encode(_) => "Encode",
        }
    }
}

impl core::error::Error for PublishError {}

impl From<Error> for PublishError {
    fn from(e: Error) -> Self {
        PublishError::Encode(e)
    }
}
