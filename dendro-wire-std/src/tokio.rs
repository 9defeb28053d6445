//! tokio (feature `tokio`): a codec for frames, owned or zero-copy over
//! `bytes::Bytes`, and async transports.
//!
//! The protocol is still the core's: the codec asks it for the preamble, the
//! frame length (checked against the limit before the buffer grows) and the
//! frame; the transports only move bytes.
//!
//! ```
//! use bytes::BytesMut;
//! use tokio_util::codec::{Decoder, Encoder};
//! use dendro_wire_std::tokio::FrameCodec;
//! use dendro_wire_std::OwnedFrame;
//!
//! let frame = OwnedFrame::ClockOffset { source: 0, ts: 1, offset_ns: 2 };
//! let mut wire = BytesMut::new();
//! FrameCodec::new().encode(&frame, &mut wire)?; // the preamble, then the frame
//!
//! let mut codec = FrameCodec::new();
//! assert_eq!(codec.decode(&mut wire)?, Some(frame));
//! assert_eq!(codec.decode(&mut wire)?, None);
//! # Ok::<(), dendro_wire_std::tokio::CodecError>(())
//! ```

use std::fmt;
use std::io;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use dendro_wire_core::{
    check_preamble, emit_preamble, Decoder as WireDecoder, Error as WireError, Frame, Rows, Status,
    PREAMBLE_BYTES,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder};

use crate::owned::OwnedFrame;
use crate::queue::FrameQueue;
use crate::recv::FrameBuffer;
use crate::server::{serve_async, Limits, ServeError, ServerConfig};
use crate::subscriber::{Sink, Subscriber};
use crate::transport::{Backoff, TransportStats};

/// Why the codec could not go on.
#[derive(Debug)]
#[non_exhaustive]
pub enum CodecError {
    /// The transport failed.
    Io(io::Error),
    /// The bytes broke a rule of the spec, or a frame to encode does.
    Wire(WireError),
    /// The stream ended inside the preamble or a frame (its length prefix
    /// included).
    Truncated {
        /// The bytes that arrived of it.
        have: usize,
    },
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Io(e) => write!(f, "the transport failed: {e}"),
            CodecError::Wire(e) => write!(f, "{e}"),
            CodecError::Truncated { have } => write!(
                f,
                "the stream ends inside a frame: {have} byte(s) of it arrived"
            ),
        }
    }
}

impl std::error::Error for CodecError {}

impl From<io::Error> for CodecError {
    fn from(e: io::Error) -> Self {
        CodecError::Io(e)
    }
}

impl From<WireError> for CodecError {
    fn from(e: WireError) -> Self {
        CodecError::Wire(e)
    }
}

/// A frame kept as its own bytes (`Bytes`, shared with the read buffer,
/// not copied), checked when it was decoded; [`view`](RawFrame::view) reads
/// it in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawFrame {
    bytes: Bytes,
}

impl RawFrame {
    /// The frame's bytes, length prefix included: what a forwarder writes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The frame, borrowed from its bytes. The bytes were checked when the
    /// frame was decoded, so this decodes again without finding a fault.
    pub fn view(&self) -> Result<Frame<'_>, WireError> {
        match dendro_wire_core::decode(&self.bytes)? {
            Status::Complete((frame, _)) => Ok(frame),
            Status::Incomplete { .. } => unreachable!("a RawFrame holds a whole frame"),
        }
    }
}

/// The codec: on decode, the preamble, then one frame per item; on encode,
/// the preamble before the first frame. Items are [`OwnedFrame`]s; see
/// [`RawFrameCodec`] for the zero-copy form.
#[derive(Debug, Default)]
pub struct FrameCodec {
    raw: RawFrameCodec,
}

impl FrameCodec {
    /// A codec with the protocol's frame limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec whose frames are refused above `decoder`'s limit.
    pub fn with_decoder(decoder: WireDecoder) -> Self {
        FrameCodec {
            raw: RawFrameCodec::with_decoder(decoder),
        }
    }

    /// Frames of unknown kinds skipped so far.
    pub fn unknown(&self) -> u64 {
        self.raw.unknown
    }
}

impl Decoder for FrameCodec {
    type Item = OwnedFrame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<OwnedFrame>, CodecError> {
        match self.raw.decode(src)? {
            Some(raw) => Ok(Some(OwnedFrame::from(&raw.view()?))),
            None => Ok(None),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<OwnedFrame>, CodecError> {
        match self.raw.decode_eof(src)? {
            Some(raw) => Ok(Some(OwnedFrame::from(&raw.view()?))),
            None => Ok(None),
        }
    }
}

impl Encoder<&OwnedFrame> for FrameCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: &OwnedFrame, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.raw.preamble(dst)?;
        frame.with_view(|view| {
            let at = dst.len();
            dst.resize(at + view.buffer_len()?, 0);
            view.emit(&mut dst[at..])
                .inspect_err(|_| dst.truncate(at))?;
            Ok(())
        })
    }
}

/// The zero-copy codec: items are [`RawFrame`]s, split off the read buffer
/// without copying; encoding writes a `RawFrame`'s bytes as they are.
/// Unknown kinds are skipped and counted.
#[derive(Debug, Default)]
pub struct RawFrameCodec {
    decoder: WireDecoder,
    read_preamble: bool,
    wrote_preamble: bool,
    unknown: u64,
}

impl RawFrameCodec {
    /// A codec with the protocol's frame limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec whose frames are refused above `decoder`'s limit.
    pub fn with_decoder(decoder: WireDecoder) -> Self {
        RawFrameCodec {
            decoder,
            ..Self::default()
        }
    }

    /// Frames of unknown kinds skipped so far.
    pub fn unknown(&self) -> u64 {
        self.unknown
    }

    fn preamble(&mut self, dst: &mut BytesMut) -> Result<(), CodecError> {
        if !std::mem::replace(&mut self.wrote_preamble, true) {
            let mut preamble = [0u8; PREAMBLE_BYTES];
            emit_preamble(&mut preamble)?;
            dst.extend_from_slice(&preamble);
        }
        Ok(())
    }
}

impl Decoder for RawFrameCodec {
    type Item = RawFrame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, CodecError> {
        if !self.read_preamble {
            match check_preamble(src)? {
                Status::Complete(n) => {
                    src.advance(n);
                    self.read_preamble = true;
                }
                Status::Incomplete { .. } => return Ok(None),
            }
        }
        loop {
            // The length is checked against the limit first. The buffer is
            // not grown to what the length claims: it grows as the bytes
            // arrive (`FramedRead` doubles a full buffer), so a peer that
            // announces 64 MiB and sends nothing costs nothing.
            let total = match self.decoder.frame_len(src)? {
                Status::Complete(total) => total,
                Status::Incomplete { .. } => return Ok(None),
            };
            if src.len() < total {
                return Ok(None);
            }
            let bytes = src.split_to(total).freeze();
            match self.decoder.decode(&bytes)? {
                Status::Complete((Frame::Unknown { .. }, _)) => self.unknown += 1,
                Status::Complete(_) => return Ok(Some(RawFrame { bytes })),
                Status::Incomplete { .. } => unreachable!("a whole frame was split off"),
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, CodecError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            // Only a frame boundary is a clean end.
            None if src.is_empty() && self.read_preamble => Ok(None),
            None => Err(CodecError::Truncated { have: src.len() }),
        }
    }
}

impl Encoder<RawFrame> for RawFrameCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: RawFrame, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.preamble(dst)?;
        dst.extend_from_slice(&frame.bytes);
        Ok(())
    }
}

/// Read one connection's stream and apply it to `subscriber`, until a clean
/// end or an error: the same loop a [`Server`](crate::server::Server) runs
/// for each connection, with its default bounds (the buffer grows with the
/// bytes that arrived; a minute with no whole frame, or a minute for one
/// frame to finish, ends the connection).
pub async fn serve<R: AsyncRead + Unpin, S: Sink>(
    mut reader: R,
    subscriber: &mut Subscriber<S>,
) -> Result<(), ServeError> {
    let config = ServerConfig::default();
    let limits = Limits {
        decoder: WireDecoder::new().with_max_frame_bytes(config.max_frame_bytes),
        idle_timeout: config.idle_timeout,
        frame_timeout: config.frame_timeout,
    };
    let mut frames = FrameBuffer::new(limits.decoder, None);
    serve_async(
        &mut reader,
        subscriber,
        &mut frames,
        &limits,
        None,
        None,
        None,
    )
    .await
}

/// Drain a publisher's queue into connections that `connect` opens, as
/// [`drain_queue`](crate::transport::drain_queue) does, on tokio: each
/// connection starts with the preamble and asks the publisher for
/// handshakes and full state; a write error reconnects after `backoff`.
/// Returns once the queue is closed and drained.
pub async fn drain_queue<W, C, F>(
    queue: FrameQueue,
    mut connect: C,
    backoff: Backoff,
) -> io::Result<TransportStats>
where
    W: AsyncWrite + Unpin,
    C: FnMut() -> F,
    F: std::future::Future<Output = io::Result<W>>,
{
    let mut stats = TransportStats::default();
    let mut delay = backoff.initial;
    while !queue.is_closed() {
        let mut conn = match connect().await {
            Ok(conn) => tokio::io::BufWriter::new(conn),
            Err(_) => {
                stats.failed_connects += 1;
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(backoff.max);
                continue;
            }
        };
        delay = backoff.initial;
        stats.connections += 1;
        let mut preamble = [0u8; PREAMBLE_BYTES];
        emit_preamble(&mut preamble).map_err(io::Error::other)?;
        let result: io::Result<()> = async {
            conn.write_all(&preamble).await?;
            conn.flush().await?;
            stats.bytes += PREAMBLE_BYTES as u64;
            queue.connected();
            loop {
                match queue.pop(Duration::ZERO) {
                    Some(frame) => {
                        conn.write_all(&frame).await?;
                        stats.frames += 1;
                        stats.rows += Rows::count_in_frame(&frame).map_or(0, u64::from);
                        stats.bytes += frame.len() as u64;
                        queue.recycle(frame);
                    }
                    None => {
                        conn.flush().await?;
                        if queue.is_closed() && queue.is_empty() {
                            return Ok(());
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
            }
        }
        .await;
        queue.disconnected();
        if result.is_ok() {
            return Ok(stats);
        }
    }
    Ok(stats)
}
