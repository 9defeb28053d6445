//! The dendro replication wire protocol, version 1, with no allocator.
//!
//! A dendro replication stream carries an archive's contents — sources, index
//! entries, live rows, sealed parquet segments, clock offsets — from a
//! publisher to a subscriber. This crate is the protocol and nothing else: it
//! reads no socket and owns no buffer. You hand it bytes and it tells you
//! "a frame, N bytes consumed", "at least N more bytes needed", or exactly
//! which rule the bytes broke and where.
//!
//! Everything here works in memory you supply: [`decode`] returns a
//! [`Frame`] whose strings, byte fields, maps and rows borrow from your
//! buffer; [`Frame::emit`] and [`RowsBuilder`] write into a slice you own; the
//! [`Publisher`] and [`Subscriber`] state machines keep their tables of
//! sources in a capacity you choose at compile time, and the publisher keeps
//! each source in a [`Storage`] you hand it. The crate is `no_std`, uses no
//! `alloc`, and forbids `unsafe`.
//!
//! # Decoding
//!
//! ```
//! use dendro_wire_core::{decode, Frame, Status};
//!
//! // A ClockOffset frame: len = 21, kind = 5, source 2, ts 10, offset_ns -3.
//! let mut bytes = vec![21, 0, 0, 0, 5, 2, 0, 0, 0];
//! bytes.extend_from_slice(&10i64.to_le_bytes());
//! bytes.extend_from_slice(&(-3i64).to_le_bytes());
//!
//! // A short buffer is not an error: it says how much more to read.
//! assert_eq!(decode(&bytes[..7]).unwrap(), Status::Incomplete { needed: 18 });
//!
//! let Status::Complete((frame, consumed)) = decode(&bytes).unwrap() else { unreachable!() };
//! assert_eq!(consumed, 25);
//! match frame {
//!     Frame::ClockOffset(c) => assert_eq!((c.source, c.ts, c.offset_ns), (2, 10, -3)),
//!     other => panic!("unexpected {other:?}"),
//! }
//! ```
//!
//! # Encoding
//!
//! ```
//! use dendro_wire_core::{decode, Frame, Row, RowsBuilder, RowsHeader, Status};
//!
//! let mut buf = [0u8; 256];
//! let header = RowsHeader { source: 0, seq: 7, index_state: (1, 2) };
//! let mut rows = RowsBuilder::new(&mut buf, header).unwrap();
//! rows.push(&Row { stream: "cpu/usage", ts: 10, wall_offset: -3, row: &[0x0a, 0x0b] }).unwrap();
//! let len = rows.finish().unwrap();
//!
//! let Status::Complete((Frame::Rows(r), used)) = decode(&buf[..len]).unwrap() else { unreachable!() };
//! assert_eq!((used, r.seq, r.rows.len()), (len, 7, 1));
//! assert_eq!(r.rows.iter().next().unwrap().stream, "cpu/usage");
//! ```
//!
//! # Where the rules live
//!
//! Every byte-level rule of [protocol §2–§4](crate::protocol) is checked while a frame is
//! decoded, in one pass, so that iterating a decoded view cannot fail. The
//! stream-level rules of §5 live in two state machines: [`Publisher`], which
//! decides every frame a sender sends (a program that only calls it cannot
//! break rules 1 to 9), and [`Subscriber`], which judges every frame a
//! receiver is given. `docs/RULES.md` in the repository maps each rule to
//! its item.
//!
//! # Features
//!
//! None is on by default; none needs std or an allocator.
//!
//! | feature | what it adds |
//! |---|---|
//! | `embedded-io` | [`io`]: the preamble and frames read from and written to `embedded_io::Read`/`Write`, into buffers the caller owns |
//! | `embedded-io-async` | the same in `io::asynch`, over `embedded_io_async` |
//! | `defmt` | `defmt::Format` for errors, statuses, the subscriber's verdicts, a [`Tally`] and frames (a line each), for logging on a device without `core::fmt` |
//! | `serde` | `serde::Serialize` for [`Frame`] and every view: the kind as `"frame"`, fields by the protocol's names, bytes as serde bytes, maps as maps, rows as a sequence; nothing allocated; and for [`Tally`], one object keyed by its counts' names |

#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod clock_offset;
mod codec;
mod consts;
mod error;
mod frame;
mod framing;
mod handshake;
mod index;
mod index_state;
#[cfg(feature = "embedded-io")]
pub mod io;
pub mod kind;
mod map;
mod preamble;
pub mod protocol;
mod publisher;
mod rows;
mod segment;
mod source_update;
mod storage;
mod subscriber;
mod tally;
mod truncated;

pub use clock_offset::ClockOffset;
pub use codec::{is_canonical_uuid, write_uuid};
pub use consts::{LENGTH_PREFIX_BYTES, MAGIC, MAX_FRAME_BYTES, PROTOCOL_VERSION};
pub use error::{Error, Field, Rule};
pub use frame::{decode, Frame, FrameDecoder, Status};
pub use handshake::Handshake;
pub use index::{Index, IndexKind};
pub use index_state::{IndexState, SlotSetHash, NO_INDEX_STATE};
pub use map::{Map, MapIter};
pub use preamble::{check_preamble, emit_preamble, PREAMBLE, PREAMBLE_BYTES};
pub use publisher::{
    Budget, DropPolicy, Observer, Outbox, PublishError, Publisher, PublisherConfig, PublisherIn,
    PublisherSource, PublisherStats, Sizing, SourceDecl, SourceId, SourceTable, StreamId,
    StreamNames, Transmit, Waiting, FAST_NAME_BYTES, FAST_ROW_BYTES, FAST_WINDOW_BYTES,
};
pub use rows::{Row, RowIter, RowList, Rows, RowsBuilder, RowsHeader};
pub use segment::Segment;
pub use source_update::SourceUpdate;
pub use storage::Storage;
pub use subscriber::{
    lost_allowance, Admitted, ProtocolError, RowsVerdict, SkipReason, SourceSlot, Subscriber,
    SubscriberIn, MAX_ROWS_FRAMES_PER_SECOND,
};
pub use tally::Tally;
pub use truncated::Truncated;

/// The README's examples, compiled and run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
