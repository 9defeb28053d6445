//! The sending side of the protocol ([protocol §5](crate::protocol), rules 1 to 9) as a sans-IO
//! state machine: the caller says what happened, and pulls the frames the
//! rules require.
//!
//! This file only names the parts. [`Publisher`] (`machine.rs`) keeps the
//! table of sources and the public methods, each a thin call into the file
//! that does the work, and `machine/poll.rs` the methods that hand frames
//! out; `config` the caller's value types, `stats` and `error` what it
//! reports; `source/` one source's state and every method on it (declaring
//! it, its intervals, its rows past the short path, its slots, its queue);
//! `regions` the map of its storage, `stream_rec` a stream's record in it
//! (each the one file that knows its bytes), `bytes` the moves both share;
//! `row_path` and `observer` the rows' short path; `outgoing` which
//! source's frame is polled next; `sizing` what a source needs; `table`
//! where the sources are kept ([`SourceTable`]: inside a [`Publisher`], or
//! in places a caller lends a [`PublisherIn`]).

mod bytes;
mod config;
mod error;
mod machine;
mod observer;
mod outbox;
mod outgoing;
mod regions;
mod row_path;
mod sizing;
mod source;
mod stats;
mod stream_rec;
mod table;

pub use config::{
    DropPolicy, PublisherConfig, SourceDecl, SourceId, StreamId, StreamNames, Transmit,
};
pub use error::PublishError;
pub use machine::{Publisher, PublisherIn};
pub use observer::Observer;
pub use outbox::Outbox;
pub use sizing::{Budget, Sizing};
pub use source::Source as PublisherSource;
pub use stats::{PublisherStats, Waiting};
pub use stream_rec::{FAST_NAME_BYTES, FAST_ROW_BYTES, FAST_WINDOW_BYTES};
pub use table::SourceTable;
