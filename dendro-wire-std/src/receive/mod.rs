//! The receiving side: a connection's frames applied to a [`Sink`] under the
//! subscriber's rules ([`SinkSubscriber`]), served from one stream
//! ([`serve`], blocking, or with the `tokio` feature `serve_async`) or, with
//! the `tokio` feature, from many publishers at once (`Server`).
//!
//! In the order a byte meets them: `crate::cut` holds a stream's bytes as
//! they arrive (`cut/buffer.rs`), against a [`MemoryBudget`]
//! (`cut/budget.rs`), and cuts them into the preamble and frames
//! (`cut/cutter.rs`); `session.rs` serves one stream on tokio, for
//! `serve_async` and each of a `Server`'s connections (`server/`: its
//! bounds, accepting, one connection, its reports), recording it if asked
//! (`capture.rs`); `subscriber.rs` applies
//! each frame under the rules to a `sink.rs` [`Sink`]; `error.rs` says why a
//! served stream ended ([`ServeError`]); `unix.rs` makes a collector's
//! Unix socket and removes it at exit.
//!
//! A collector is where bytes from anyone who can reach it arrive, so every
//! connection is bounded: its buffer grows with the bytes that arrived, never
//! with what a length prefix claims, against a memory budget shared fairly by
//! all connections; a connection that sends no whole frame for a while,
//! starts a frame and does not finish it, or opens no source in time, is
//! ended; those yet to open one make room for new ones, and connections past
//! a cap are closed as soon as they are accepted. Every connection that ends,
//! whatever the cause, closes its socket, frees what it held, and is
//! reported once with why it ended.
//!
//! The sending side is [`send`](crate::send).

mod backlog;
#[cfg(feature = "tokio")]
mod capture;
mod error;
pub mod proxy;
mod serve;
#[cfg(feature = "tokio")]
mod server;
#[cfg(feature = "tokio")]
mod session;
mod sink;
mod subscriber;
#[cfg(unix)]
mod unix;

pub use crate::cut::MemoryBudget;
pub use backlog::Backlog;
pub use error::ServeError;
pub use serve::serve;
#[cfg(feature = "tokio")]
pub use serve::serve_async;
#[cfg(feature = "tokio")]
pub use server::{
    ConnectionInfo, Ended, Listener, LiveConnection, Peer, Server, ServerConfig, ServerStats,
    ServerWatch, Serving,
};
pub use sink::{CountingSink, SegmentStored, Sink, SinkError};
pub use subscriber::{SinkSubscriber, SubscribeError, MAX_SOURCES_PER_CONNECTION};
#[cfg(unix)]
pub use unix::{bind_unix, bind_unix_file, UnixSocketFile};
