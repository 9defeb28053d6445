//! std front ends for [`dendro_wire_core`]: the dendro replication wire
//! protocol over `std::io`.
//!
//! - [`FrameReader`] reads a stream from any `Read`: the preamble, then one
//!   borrowed frame at a time out of one reusable buffer. [`SliceReader`]
//!   reads one already in memory, each frame borrowed from its bytes.
//! - [`FrameWriter`] writes the preamble, then frames, to any `Write`.
//! - [`OwnedFrame`] is a frame that owns its fields, for callers who keep
//!   frames; with the `serde` feature it is the JSON Lines form of [protocol §10](dendro_wire_core::protocol).
//! - [`send`], the sending side: [`AgentPublisher`] turns an agent's
//!   observations and index slots into frames, interval by interval — the
//!   core's publisher machine decides which — into a bounded [`FrameQueue`]
//!   that a publishing transport drains into TCP (reconnecting), a Unix
//!   socket or a file.
//! - [`receive`], the receiving side: [`SinkSubscriber`] applies a
//!   connection's frames to a [`Sink`] under the subscriber's rules;
//!   [`serve`](receive::serve) serves one connection, and (feature `tokio`) a
//!   `receive::Server` many publishers at once, each connection bounded in
//!   memory, time and count.
//! - [`scan`]: every stream found in bytes that are not one clean stream
//!   (captures concatenated or cut, a connection's raw payload), each from
//!   its preamble, found with `memchr::memmem`, and every byte in none of
//!   them reported.
//!
//! # Configurations and counts
//!
//! Every configuration ([`AgentConfig`], [`DrainOptions`](send::DrainOptions),
//! `ServerConfig`) and every count ([`AgentStats`], [`QueueStats`],
//! [`TransportStats`](send::TransportStats), [`Tally`], `ServerStats`) is
//! `#[non_exhaustive]`, its fields public to read (and, for a
//! configuration, to assign), with a `Default`. Start from the default and
//! change what differs — `AgentConfig::default().full_every(600)` or
//! `ServerConfig::default().max_memory(1 << 30)` with the setters (one per
//! field, taking and returning the configuration, each field's default and
//! unit in its docs), or `let mut c
//! = AgentConfig::default(); c.full_every = 600;` — and a field added in a
//! later version breaks no caller.
//!
//! # Features
//!
//! The default build is the library alone, with no async runtime, TLS or
//! archive; the `dendro-wire` tool is a package of its own.
//!
//! | feature | what it adds |
//! |---|---|
//! | `serde` | `Serialize`/`Deserialize` for [`OwnedFrame`] in the JSON Lines form of [protocol §10](dendro_wire_core::protocol) |
//! | `tokio` | `receive::Server` (many publishers at once, every connection bounded in memory, time and count), `receive::serve_async` and `send::drain_queue_async`, and the `tokio_codec` module: codecs for `tokio_util::codec` |
//! | `tls` | the `tls` module: TLS 1.3 with client certificates (rustls) for the server and the publishing transports, and identities bound to sources (implies `tokio`) |
//! | `archive` | the `archive` module: a sink that writes a dendro 0.6.1 archive through dendro's own writer (builds SQLite, arrow and parquet) |
//!
//! The protocol itself — every byte rule and the subscriber's and publisher's
//! rules — lives in `dendro-wire-core`; this crate only moves bytes.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "archive")]
pub mod archive;
mod cut;
mod frame_buf;
mod growable;
mod lines;
mod owned;
mod read_error;
mod reader;
pub mod receive;
pub mod scan;
pub mod send;
#[cfg(feature = "serde")]
mod serde_form;
mod slice_reader;
mod throttle;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "tokio")]
pub mod tokio_codec;
mod writer;

pub use dendro_wire_core;
// The core's everyday types, so a program that uses this crate needs no
// second import path for a frame, a row or the rules; each keeps its own
// docs.
pub use dendro_wire_core::{
    Admitted, ClockOffset, Frame, FrameDecoder, Handshake, Index, IndexKind, IndexState, Map, Row,
    RowList, Rows, Segment, SourceId, SourceUpdate, Status, StreamId, Subscriber, Tally,
    NO_INDEX_STATE, PREAMBLE,
};
pub use lines::{Escaped, LineQueue};
pub use owned::{OwnedFrame, OwnedRow};
pub use read_error::{Position, ReadError, ReadErrorKind};
pub use reader::FrameReader;
pub use slice_reader::SliceReader;
// The receiving side's everyday types.
pub use receive::{
    CountingSink, MemoryBudget, SegmentStored, Sink, SinkError, SinkSubscriber, SubscribeError,
    MAX_SOURCES_PER_CONNECTION,
};
// The sending side's everyday types.
pub use frame_buf::write_frame_to;
pub use send::{
    AgentConfig, AgentError, AgentPublisher, AgentStats, FrameQueue, Pushed, QueueStats,
    SourceConfig, MAX_SOURCES,
};
pub use writer::{FrameWriter, WriteError};

/// The README's example, compiled and run as a doctest so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
