//! Framing ([protocol §2](crate::protocol)): `u32 len | u8 kind | payload`.
//! What every frame kind implements to be read and written, and the one
//! place a whole frame is sized and emitted around a kind's payload.

use zerocopy::little_endian::U32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{Cursor, Out};
use crate::error::{Error, Field, Rule};
use crate::{LENGTH_PREFIX_BYTES, MAX_FRAME_BYTES};

/// The length prefix and the kind byte that open every frame (§2).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct FrameHead {
    pub len: U32,
    pub kind: u8,
}

/// The bytes before a payload: the length prefix and the kind byte.
pub(crate) const HEAD_BYTES: usize = core::mem::size_of::<FrameHead>();

/// What a known frame kind implements once to be decoded.
pub(crate) trait Decode<'a>: Sized {
    const KIND: u8;
    /// Read the payload (after the kind byte), checking every rule.
    fn parse(c: &mut Cursor<'a>) -> Result<Self, Error>;
}

/// What every frame kind, unknown ones included, implements once, so that
/// sizing and encoding go through the same two functions below.
pub(crate) trait Encode {
    fn kind(&self) -> u8;
    /// The payload's exact size; `at` is its offset in the frame, for errors.
    fn payload_len(&self, at: usize) -> Result<usize, Error>;
    /// Write the payload; `payload_len` has been checked against the buffer.
    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error>;
}

/// The whole encoded size of a frame with this body, length prefix included,
/// refused above [`MAX_FRAME_BYTES`] as §2 requires of a writer too.
pub(crate) fn buffer_len<B: Encode>(body: &B) -> Result<usize, Error> {
    let kind = body.kind();
    let len = body
        .payload_len(HEAD_BYTES)
        .map_err(|e| e.in_frame(kind))?
        .saturating_add(1);
    if len > MAX_FRAME_BYTES as usize {
        return Err(Error::encode(
            Rule::FrameTooLarge {
                len,
                limit: MAX_FRAME_BYTES,
            },
            Field::Length,
            0,
        )
        .in_frame(kind));
    }
    Ok(LENGTH_PREFIX_BYTES + len)
}

/// Encode a frame with this body at the start of `buf`.
pub(crate) fn emit<B: Encode>(body: &B, buf: &mut [u8]) -> Result<usize, Error> {
    let kind = body.kind();
    let total = buffer_len(body)?;
    let have = buf.len();
    match buf.get_mut(..total) {
        Some(frame) => emit_exact(body, frame),
        None => Err(Error::encode(
            Rule::BufferTooSmall {
                needed: total,
                have,
            },
            Field::Length,
            0,
        )
        .in_frame(kind)),
    }
}

/// [`emit`] into `frame`, exactly `body`'s [`buffer_len`] bytes, which
/// the caller has computed: the frame written without computing its
/// length again, as `emit` writes it.
pub(crate) fn emit_exact<B: Encode>(body: &B, frame: &mut [u8]) -> Result<usize, Error> {
    let (kind, len) = (body.kind(), frame.len().saturating_sub(LENGTH_PREFIX_BYTES));
    let mut out = Out::new(frame, 0);
    out.fixed(&FrameHead {
        len: U32::new(len as u32),
        kind,
    })?;
    body.emit_payload(&mut out).map_err(|e| e.in_frame(kind))?;
    Ok(out.at())
}

/// Gives a frame-kind type its public `buffer_len` and `emit`, the pair
/// smoltcp's `Repr` types have, from its [`Encode`] implementation.
macro_rules! encodable {
    ($ty:ty) => {
        impl $ty {
            /// The exact bytes [`emit`](Self::emit) writes: the whole frame,
            /// length prefix included. Checks every rule an encoder must
            /// (map key order, a canonical uuid, the frame size limit).
            pub fn buffer_len(&self) -> Result<usize, $crate::Error> {
                $crate::framing::buffer_len(self)
            }

            /// Write the whole frame at the start of `buf` and return its
            /// length. A buffer shorter than [`buffer_len`](Self::buffer_len)
            /// gives [`Rule::BufferTooSmall`](crate::Rule::BufferTooSmall),
            /// carrying the size needed, and writes nothing.
            pub fn emit(&self, buf: &mut [u8]) -> Result<usize, $crate::Error> {
                $crate::framing::emit(self, buf)
            }
        }
    };
}
pub(crate) use encodable;
