//! Codecs for `tokio_util::codec` (feature `tokio`): frames owned, or
//! zero-copy over `bytes::Bytes`. The async transports are
//! [`receive::serve_async`](crate::receive::serve_async) and
//! [`send::drain_queue_async`](crate::send::drain_queue_async).
//!
//! The protocol is still the core's: the codecs ask it for the preamble, the
//! frame length (checked against the limit before anything else) and the
//! frame; the buffer grows with the bytes that arrive, never with what a
//! length claims; only a frame boundary is a clean end. Errors are
//! [`ReadError`]s, naming the frame and the stream offset.
//!
//! ```
//! use bytes::BytesMut;
//! use tokio_util::codec::{Decoder, Encoder};
//! use dendro_wire_core::{ClockOffset, Frame};
//! use dendro_wire_std::tokio_codec::FrameCodec;
//! use dendro_wire_std::OwnedFrame;
//!
//! // Borrowed frames encode without an allocation per frame.
//! let mut wire = BytesMut::new();
//! let offset = Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 });
//! FrameCodec::new().encode(&offset, &mut wire)?; // the preamble, then the frame
//!
//! let mut codec = FrameCodec::new();
//! assert_eq!(
//!     codec.decode(&mut wire)?,
//!     Some(OwnedFrame::ClockOffset { source: 0, ts: 1, offset_ns: 2 })
//! );
//! assert_eq!(codec.decode(&mut wire)?, None);
//! # Ok::<(), dendro_wire_std::ReadError>(())
//! ```

use std::marker::PhantomData;

use bytes::{Buf, Bytes, BytesMut};
use dendro_wire_core::{Frame, FrameDecoder, LENGTH_PREFIX_BYTES, PREAMBLE};
use tokio_util::codec::{Decoder, Encoder};

use crate::cut::{Cut, Cutter};
use crate::frame_buf::append;
use crate::owned::OwnedFrame;
use crate::read_error::{Position, ReadError, ReadErrorKind};
use crate::writer::{check_one_frame, WriteError};

/// A frame's bytes, framed but not yet decoded: its length checked against
/// the limit and its bytes whole, shared with the read buffer rather than
/// copied. [`view`](RawFrame::view) decodes it, once, in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawFrame {
    bytes: Bytes,
    at: Position,
}

impl RawFrame {
    /// A frame built elsewhere (a `RowsBuilder`'s, say), to send through
    /// [`RawFrameCodec`]: `bytes` must be exactly one frame, length prefix
    /// included, its length within the protocol's limit. Its fields are not
    /// checked until [`view`](Self::view).
    pub fn new(bytes: Bytes) -> Result<RawFrame, ReadError> {
        one_frame(&bytes, &FrameDecoder::new())?;
        let at = Position {
            frame: 1,
            offset: 0,
        };
        Ok(RawFrame { bytes, at })
    }

    /// The frame's bytes, length prefix included: what a forwarder writes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The frame's kind byte.
    pub fn kind(&self) -> u8 {
        self.bytes[LENGTH_PREFIX_BYTES]
    }

    /// Where it stood in the stream it was read from.
    pub fn position(&self) -> Position {
        self.at
    }

    /// The frame, decoded in place: every rule of the spec checked, every
    /// field borrowed from the bytes.
    pub fn view(&self) -> Result<Frame<'_>, ReadError> {
        // The codec cut these bytes, its limit checked: the length is not
        // read again.
        FrameDecoder::new()
            .decode_cut(&self.bytes)
            .map_err(|e| self.error(ReadErrorKind::Malformed(e)))
    }

    fn error(&self, kind: ReadErrorKind) -> ReadError {
        ReadError::new(kind, self.at.frame, self.at.offset)
    }
}

/// Check that `bytes` is exactly one frame (the writer's check), as a
/// codec's error.
fn one_frame(bytes: &[u8], decoder: &FrameDecoder) -> Result<(), ReadError> {
    check_one_frame(bytes, decoder).map_err(|e| {
        ReadError::unplaced(match e {
            WriteError::NotOneFrame { have, frame } => ReadErrorKind::NotOneFrame { have, frame },
            WriteError::Malformed(e) | WriteError::Encode(e) => ReadErrorKind::Malformed(e),
            WriteError::Io(e) => ReadErrorKind::Io(e),
        })
    })
}

/// The framing both codecs share: the receiving side's [`Cutter`] (the
/// preamble, then frames cut by their length, counted, with the position of
/// each) and, on the sending side, the preamble before the first frame.
#[derive(Debug, Default)]
struct Framing {
    cutter: Cutter,
    wrote_preamble: bool,
}

impl Framing {
    /// The next frame cut from `src`, else how many more bytes it needs.
    /// Nothing is reserved for what a length claims: the buffer grows as
    /// bytes arrive (`FramedRead` doubles a full buffer), so a peer that
    /// announces 64 MiB and sends nothing costs nothing.
    fn cut(&mut self, src: &mut BytesMut) -> Result<Result<RawFrame, usize>, ReadError> {
        loop {
            match self.cutter.cut(src)? {
                Cut::Skip(n) => src.advance(n),
                Cut::Need(needed) => return Ok(Err(needed)),
                Cut::Frame(n, at) => {
                    let bytes = src.split_to(n).freeze();
                    return Ok(Ok(RawFrame { bytes, at }));
                }
            }
        }
    }

    /// The next frame cut from `src`; `None` until its bytes have all
    /// arrived.
    fn next(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, ReadError> {
        Ok(self.cut(src)?.ok())
    }

    /// At the end of the stream: a clean end only at a frame boundary.
    fn end(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, ReadError> {
        match self.cut(src)? {
            Ok(frame) => Ok(Some(frame)),
            Err(needed) => self.cutter.end_of_stream(src.len(), needed).map(|()| None),
        }
    }

    /// The preamble, before the first frame written.
    fn preamble(&mut self, dst: &mut BytesMut) {
        if !std::mem::replace(&mut self.wrote_preamble, true) {
            dst.extend_from_slice(&PREAMBLE);
        }
    }

    /// Write `frame` at the end of `dst`, emitted in place: no allocation but
    /// the buffer's own growth.
    fn write(&mut self, frame: &Frame<'_>, dst: &mut BytesMut) -> Result<(), ReadError> {
        let error = |e| ReadError::unplaced(ReadErrorKind::Malformed(e));
        let len = frame.buffer_len().map_err(error)?;
        self.preamble(dst);
        append(dst, len, |room| frame.emit(room)).map_err(error)?;
        Ok(())
    }

    /// Write one frame's bytes, as an encoder made them, checked to be one
    /// whole frame.
    fn write_bytes(&mut self, bytes: &[u8], dst: &mut BytesMut) -> Result<(), ReadError> {
        one_frame(bytes, self.cutter.decoder())?;
        self.preamble(dst);
        dst.extend_from_slice(bytes);
        Ok(())
    }
}

/// A codec for `tokio_util::codec`, one for both item types: on decode, the
/// preamble, then one `Item` per frame — an [`OwnedFrame`] ([`FrameCodec`])
/// or a [`RawFrame`] ([`RawFrameCodec`]); on encode, the preamble before the
/// first frame, then frames borrowed ([`Frame`]), already encoded (`&[u8]`),
/// or of the item type. Unknown kinds are skipped and counted unless
/// [`yield_unknown`](Self::yield_unknown) asks for them.
#[derive(Debug)]
pub struct Codec<Item> {
    framing: Framing,
    items: PhantomData<fn() -> Item>,
}

/// The codec over owned frames: each frame decoded once, into an
/// [`OwnedFrame`].
pub type FrameCodec = Codec<OwnedFrame>;

/// The zero-copy codec: items are [`RawFrame`]s, split off the read buffer
/// without copying and decoded only when [`RawFrame::view`] is called, once;
/// encoding one writes its bytes as they are.
pub type RawFrameCodec = Codec<RawFrame>;

impl<Item> Default for Codec<Item> {
    fn default() -> Self {
        Self::with_decoder(FrameDecoder::new())
    }
}

impl<Item> Codec<Item> {
    /// A codec with the protocol's frame limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec whose frames are refused above `decoder`'s limit.
    pub fn with_decoder(decoder: FrameDecoder) -> Self {
        Codec {
            framing: Framing {
                cutter: Cutter::new(decoder),
                wrote_preamble: false,
            },
            items: PhantomData,
        }
    }

    /// Hand frames of unknown kinds to the caller (an
    /// [`OwnedFrame::Unknown`], or a [`RawFrame`] of that kind) instead of
    /// skipping them: what a forwarder needs. Either way they are counted.
    pub fn yield_unknown(mut self, yield_unknown: bool) -> Self {
        self.framing.cutter.set_yield_unknown(yield_unknown);
        self
    }

    /// Frames of unknown kinds met so far.
    pub fn unknown(&self) -> u64 {
        self.framing.cutter.unknown()
    }
}

impl Decoder for FrameCodec {
    type Item = OwnedFrame;
    type Error = ReadError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<OwnedFrame>, ReadError> {
        owned(self.framing.next(src)?)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<OwnedFrame>, ReadError> {
        owned(self.framing.end(src)?)
    }
}

/// A frame cut from the stream, decoded into an owned frame.
fn owned(raw: Option<RawFrame>) -> Result<Option<OwnedFrame>, ReadError> {
    raw.map(|raw| Ok(OwnedFrame::from(&raw.view()?)))
        .transpose()
}

impl Decoder for RawFrameCodec {
    type Item = RawFrame;
    type Error = ReadError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, ReadError> {
        self.framing.next(src)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, ReadError> {
        self.framing.end(src)
    }
}

impl<Item> Encoder<&Frame<'_>> for Codec<Item> {
    type Error = ReadError;

    fn encode(&mut self, frame: &Frame<'_>, dst: &mut BytesMut) -> Result<(), ReadError> {
        self.framing.write(frame, dst)
    }
}

impl<Item> Encoder<&[u8]> for Codec<Item> {
    type Error = ReadError;

    /// One frame as an encoder wrote it (a `RowsBuilder`'s, say), length
    /// prefix included; refused unless it is exactly one frame.
    fn encode(&mut self, frame: &[u8], dst: &mut BytesMut) -> Result<(), ReadError> {
        self.framing.write_bytes(frame, dst)
    }
}

impl Encoder<&OwnedFrame> for FrameCodec {
    type Error = ReadError;

    fn encode(&mut self, frame: &OwnedFrame, dst: &mut BytesMut) -> Result<(), ReadError> {
        frame.with_view(|view| self.framing.write(view, dst))
    }
}

impl Encoder<RawFrame> for RawFrameCodec {
    type Error = ReadError;

    /// A frame this codec or [`RawFrame::new`] checked to be one whole frame.
    fn encode(&mut self, frame: RawFrame, dst: &mut BytesMut) -> Result<(), ReadError> {
        self.framing.preamble(dst);
        dst.extend_from_slice(&frame.bytes);
        Ok(())
    }
}
