//! The cut layer, under every receiver: how a received stream is cut into
//! the preamble and frames ([`Cutter`]), the buffer that holds a stream's
//! bytes as they arrive and cuts them ([`FrameBuffer`]), and the memory
//! many buffers share ([`MemoryBudget`]). [`FrameReader`](crate::FrameReader),
//! [`SliceReader`](crate::SliceReader), the scanner, the tokio codecs and a
//! collector's sessions all cut here, so a stream is read by one set of
//! rules whatever carries it.
//!
//! The [`Cutter`] reads the bytes in hand and never holds them: the
//! [`FrameBuffer`] cuts its own bytes with it, and the tokio codecs a
//! `BytesMut`. A frame's length is read to cut it once, by the cut; the
//! decode takes the frame as cut (the core's `decode_cut`), checking
//! nothing against the limit again.

mod budget;
mod buffer;
mod cutter;

#[cfg(feature = "tokio")]
pub(crate) use budget::Held;
pub use budget::MemoryBudget;
/// What a receive buffer starts at: a collector's idle connection holds it
/// (`receive/server/config.rs`).
#[cfg(feature = "tokio")]
pub(crate) use buffer::START;
pub(crate) use buffer::{FrameBuffer, Next};
pub(crate) use cutter::{Cut, Cutter};
