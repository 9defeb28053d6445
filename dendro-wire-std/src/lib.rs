//! std front ends for [`dendro_wire_core`]: the dendro replication wire
//! protocol over `std::io`.
//!
//! - [`FrameReader`] reads a stream from any `Read`: the preamble, then one
//!   borrowed frame at a time out of one reusable buffer.
//! - [`FrameWriter`] writes the preamble, then frames, to any `Write`.
//! - [`OwnedFrame`] is a frame that owns its fields, for callers who keep
//!   frames; with the `serde` feature it is the JSON Lines form of NOTES.md.
//!
//! The protocol itself — every byte rule and the subscriber's and publisher's
//! rules — lives in `dendro-wire-core`; this crate only moves bytes.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "archive")]
pub mod archive;
mod owned;
mod publisher;
mod queue;
mod reader;
#[cfg(feature = "serde")]
mod serde_form;
mod subscriber;
#[cfg(feature = "tokio")]
pub mod tokio;
pub mod transport;
mod writer;

pub use dendro_wire_core;
pub use owned::{OwnedFrame, OwnedRow};
pub use publisher::{
    PublishError, Publisher, PublisherConfig, PublisherStats, SourceConfig, SourceId, MAX_SOURCES,
};
pub use queue::{FrameQueue, Pushed, QueueStats};
pub use reader::{FrameReader, Position, ReadError, ReadErrorKind};
pub use subscriber::{
    Applied, CountingSink, Sink, SinkError, SubscribeError, Subscriber, MAX_SOURCES_PER_CONNECTION,
};
pub use writer::{FrameWriter, WriteError};

/// Lowercase hex, as the JSON Lines form writes bytes.
#[cfg(feature = "serde")]
pub fn to_hex(bytes: &[u8]) -> String {
    serde_form::hex::encode(bytes)
}
