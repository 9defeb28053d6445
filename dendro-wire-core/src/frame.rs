//! The [`Frame`] that names every kind, made from the one table of kinds in
//! `kind.rs`, and the sans-IO decoder ([protocol §2](crate::protocol)).
//!
//! Each kind's file depends only on the layers below it (`codec.rs`,
//! `framing.rs`, `error.rs`, and `map.rs` or `index_state.rs` for its
//! fields) and on `kind.rs` for its byte, never on another kind's file or
//! on this one (its golden tests use this file's `golden`); this file is
//! the one that knows them all.

use crate::clock_offset::ClockOffset;
use crate::codec::{Cursor, Out};
use crate::error::{Error, Field, Rule};
use crate::framing::{buffer_len, emit, Decode, Encode, HEAD_BYTES};
use crate::handshake::Handshake;
use crate::index::Index;
use crate::kind::{self, known_kinds};
use crate::rows::Rows;
use crate::segment::Segment;
use crate::source_update::SourceUpdate;
use crate::{LENGTH_PREFIX_BYTES, MAX_FRAME_BYTES};

/// `Frame` and every dispatch over its kinds, from the table in `kind.rs`.
macro_rules! frame_of_kinds {
    ($($(#[$doc:meta])* $byte:literal => $variant:ident($ty:ty), $constant:ident;)*) => {
        /// One frame, every field borrowed from the bytes it was decoded from,
        /// or from the caller who built it to encode.
        ///
        /// A frame of a kind this crate does not know is [`Frame::Unknown`],
        /// not an error ([protocol §7](crate::protocol)): a caller skips it,
        /// counts it, or forwards it untouched.
        ///
        /// ```
        /// use dendro_wire_core::{decode, Frame, Status};
        ///
        /// // A frame of a kind from a newer publisher: skipped, counted, or forwarded.
        /// let bytes = [4, 0, 0, 0, 42, 1, 2, 3];
        /// let Status::Complete((frame, n)) = decode(&bytes)? else { unreachable!() };
        /// assert_eq!(frame, Frame::Unknown { kind: 42, payload: &[1, 2, 3] });
        /// let mut out = [0u8; 8];
        /// assert_eq!(frame.emit(&mut out)?, n);
        /// assert_eq!(out, bytes);
        /// # Ok::<(), dendro_wire_core::Error>(())
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize))]
        #[cfg_attr(feature = "serde", serde(tag = "frame", rename_all = "snake_case"))]
        pub enum Frame<'a> {
            $($(#[$doc])* $variant($ty),)*
            /// Any other kind: its kind byte and the payload after it, unread.
            Unknown {
                /// The kind byte.
                kind: u8,
                /// The bytes after the kind byte.
                #[cfg_attr(
                    feature = "serde",
                    serde(serialize_with = "crate::codec::serialize_bytes")
                )]
                payload: &'a [u8],
            },
        }

        impl<'a> Frame<'a> {
            /// The kind byte.
            pub const fn kind(&self) -> u8 {
                match self {
                    $(Frame::$variant(_) => kind::$constant,)*
                    Frame::Unknown { kind, .. } => *kind,
                }
            }

            /// The handshake ordinal the frame names; `None` for an unknown
            /// kind, whose layout is not known.
            pub const fn source(&self) -> Option<u32> {
                match self {
                    $(Frame::$variant(f) => Some(f.source),)*
                    Frame::Unknown { .. } => None,
                }
            }

            /// The exact bytes [`emit`](Self::emit) writes, length prefix
            /// included.
            pub fn buffer_len(&self) -> Result<usize, Error> {
                match self {
                    $(Frame::$variant(f) => f.buffer_len(),)*
                    Frame::Unknown { kind, payload } => buffer_len(&Unknown(*kind, payload)),
                }
            }

            /// Write the whole frame at the start of `buf`, returning its
            /// length.
            ///
            /// The output is byte-identical to dendro 0.6.1's `encode_frame`
            /// of the same frame. A decoded frame re-encodes to exactly the
            /// bytes it came from, so a filter can forward frames it has
            /// looked at.
            pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
                match self {
                    $(Frame::$variant(f) => f.emit(buf),)*
                    Frame::Unknown { kind, payload } => emit(&Unknown(*kind, payload), buf),
                }
            }
        }

        /// Decode exactly one whole frame whose length has been checked.
        fn decode_whole(frame: &[u8]) -> Result<Frame<'_>, Error> {
            let kind = frame.get(LENGTH_PREFIX_BYTES).copied().unwrap_or(0);
            Ok(match kind {
                $($byte => Frame::$variant(parse_body(frame)?),)*
                kind => Frame::Unknown {
                    kind,
                    payload: frame.get(HEAD_BYTES..).unwrap_or(&[]),
                },
            })
        }

        /// One line for a person: the kind, the source, the key fields, and
        /// byte fields summarized by their length (the pretty-printer's
        /// form, as smoltcp's `Repr`s have); each kind says its own.
        impl core::fmt::Display for Frame<'_> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    $(Frame::$variant(frame) => core::fmt::Display::fmt(frame, f),)*
                    Frame::Unknown { kind, payload } => {
                        write!(f, "unknown kind={kind} payload={}B", payload.len())
                    }
                }
            }
        }

        /// One line per frame for `defmt` logging on a device: each kind's
        /// own, in numbers (no strings are copied).
        #[cfg(feature = "defmt")]
        impl defmt::Format for Frame<'_> {
            fn format(&self, f: defmt::Formatter<'_>) {
                match self {
                    $(Frame::$variant(frame) => defmt::Format::format(frame, f),)*
                    Frame::Unknown { kind, payload } => defmt::write!(
                        f,
                        "unknown kind={=u8} payload={=usize}B",
                        kind,
                        payload.len()
                    ),
                }
            }
        }
    };
}

known_kinds!(frame_of_kinds);

/// An unknown frame as an [`Encode`], so forwarding one shares the framing
/// code.
struct Unknown<'a>(u8, &'a [u8]);

impl Encode for Unknown<'_> {
    fn kind(&self) -> u8 {
        self.0
    }

    fn payload_len(&self, _at: usize) -> Result<usize, Error> {
        if kind::is_known(self.0) {
            return Err(Error::encode(
                Rule::KnownKindAsUnknown,
                Field::FrameKind,
                LENGTH_PREFIX_BYTES,
            ));
        }
        Ok(self.1.len())
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.put(self.1)
    }
}

/// The outcome of reading from a buffer that may not yet hold a whole frame.
///
/// `Incomplete` is not an error: it is what a reader gets between two reads
/// of a socket, and it says how many more bytes are needed at least.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status<T> {
    /// The thing asked for, whole.
    Complete(T),
    /// At least `needed` more bytes must be appended to the buffer first.
    Incomplete {
        /// The fewest bytes that could complete it.
        needed: usize,
    },
}

impl<T> Status<T> {
    /// Whether the thing asked for is whole.
    ///
    /// ```
    /// use dendro_wire_core::{check_preamble, Status};
    ///
    /// assert!(check_preamble(b"dendro-repl\0\x01\x00").unwrap().is_complete());
    /// assert!(check_preamble(b"dendro").unwrap().is_incomplete());
    /// ```
    pub const fn is_complete(&self) -> bool {
        matches!(self, Status::Complete(_))
    }

    /// Whether more bytes are needed.
    pub const fn is_incomplete(&self) -> bool {
        matches!(self, Status::Incomplete { .. })
    }

    /// The thing asked for, or `None` if more bytes are needed.
    pub fn complete(self) -> Option<T> {
        match self {
            Status::Complete(t) => Some(t),
            Status::Incomplete { .. } => None,
        }
    }

    /// The fewest bytes still needed, or `None` if it is whole.
    pub const fn needed(&self) -> Option<usize> {
        match self {
            Status::Complete(_) => None,
            Status::Incomplete { needed } => Some(*needed),
        }
    }

    /// What is whole, changed by `f`; `Incomplete` stays as it is.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Status<U> {
        match self {
            Status::Complete(t) => Status::Complete(f(t)),
            Status::Incomplete { needed } => Status::Incomplete { needed },
        }
    }

    /// The thing asked for, for a caller that knows its buffer holds it
    /// whole (a test, or bytes it framed itself).
    ///
    /// # Panics
    ///
    /// If it is `Incomplete`, saying how many bytes were missing.
    #[track_caller]
    pub fn unwrap(self) -> T {
        match self {
            Status::Complete(t) => t,
            Status::Incomplete { needed } => {
                panic!("called `Status::unwrap()` on `Incomplete {{ needed: {needed} }}`")
            }
        }
    }
}

/// The sans-IO frame decoder: a limit, and nothing else.
///
/// It keeps no state between calls: give it the bytes you have, starting at
/// a frame boundary, and it returns a frame with the bytes it consumed, or
/// how many more it needs, or the rule the bytes broke.
///
/// ```
/// use dendro_wire_core::{FrameDecoder, Rule};
///
/// // A device with a 4 KiB buffer refuses longer frames from the prefix.
/// let decoder = FrameDecoder::new().with_max_frame_bytes(4096 - 4);
/// let err = decoder.decode(&100_000u32.to_le_bytes()).unwrap_err();
/// assert_eq!(err.rule(), Rule::FrameTooLarge { len: 100_000, limit: 4092 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameDecoder {
    max_frame_bytes: u32,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new()
    }
}

impl FrameDecoder {
    /// A decoder with the protocol's limit, [`MAX_FRAME_BYTES`].
    pub const fn new() -> Self {
        FrameDecoder {
            max_frame_bytes: MAX_FRAME_BYTES,
        }
    }

    /// Refuse frames whose `len` is above `limit` (a device with a 4 KiB
    /// buffer sets 4 KiB − 4). A limit above [`MAX_FRAME_BYTES`] is lowered to
    /// it: the protocol's own bound is not the caller's to raise.
    pub const fn with_max_frame_bytes(self, limit: u32) -> Self {
        FrameDecoder {
            max_frame_bytes: if limit < MAX_FRAME_BYTES {
                limit
            } else {
                MAX_FRAME_BYTES
            },
        }
    }

    /// The limit in force.
    pub const fn max_frame_bytes(&self) -> u32 {
        self.max_frame_bytes
    }

    /// The whole size of the frame at the start of `buf` (length prefix
    /// included), from its prefix alone, with the length checked against the
    /// limit: what a reader needs before it grows a buffer.
    pub fn frame_len(&self, buf: &[u8]) -> Result<Status<usize>, Error> {
        let Some(prefix) = buf.first_chunk::<LENGTH_PREFIX_BYTES>() else {
            return Ok(Status::Incomplete {
                needed: LENGTH_PREFIX_BYTES - buf.len(),
            });
        };
        let len = u32::from_le_bytes(*prefix);
        if len == 0 {
            return Err(Error::decode(Rule::ZeroLength, Field::Length, 0));
        }
        if len > self.max_frame_bytes {
            return Err(Error::decode(
                Rule::FrameTooLarge {
                    len: len as usize,
                    limit: self.max_frame_bytes,
                },
                Field::Length,
                0,
            ));
        }
        Ok(Status::Complete(LENGTH_PREFIX_BYTES + len as usize))
    }

    /// Decode a frame already cut by [`frame_len`](Self::frame_len):
    /// `frame` is its bytes, length prefix included. The limit is not
    /// checked again and nothing is sized by the prefix: a receiver that
    /// cuts a stream itself (a buffer that must know a frame's size before
    /// it grows) reads each length to cut once. The prefix is only compared
    /// with the cut, so bytes cut wrong are refused (a zero length; a frame
    /// that [ends early](crate::Rule::EndsEarly) or has
    /// [trailing bytes](crate::Rule::TrailingBytes) against its prefix),
    /// never read as a shorter frame of an unknown kind.
    ///
    /// ```
    /// use dendro_wire_core::{ClockOffset, Frame, FrameDecoder, Status};
    ///
    /// let mut buf = [0u8; 64];
    /// let frame = Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 });
    /// let n = frame.emit(&mut buf)?;
    /// let decoder = FrameDecoder::new();
    /// let Status::Complete(total) = decoder.frame_len(&buf[..n])? else { unreachable!() };
    /// assert_eq!(decoder.decode_cut(&buf[..total])?, frame);
    /// assert!(decoder.decode_cut(&buf[..total - 1]).is_err());
    /// # Ok::<(), dendro_wire_core::Error>(())
    /// ```
    pub fn decode_cut<'a>(&self, frame: &'a [u8]) -> Result<Frame<'a>, Error> {
        let claimed = match frame.first_chunk::<LENGTH_PREFIX_BYTES>() {
            Some(prefix) if *prefix != [0; LENGTH_PREFIX_BYTES] => {
                LENGTH_PREFIX_BYTES + u32::from_le_bytes(*prefix) as usize
            }
            _ => return Err(Error::decode(Rule::ZeroLength, Field::Length, 0)),
        };
        if frame.len() < claimed {
            let rule = Rule::EndsEarly {
                needed: claimed,
                left: frame.len(),
            };
            return Err(Error::decode(rule, Field::Length, 0));
        }
        if frame.len() > claimed {
            let rule = Rule::TrailingBytes {
                count: frame.len() - claimed,
            };
            return Err(Error::decode(rule, Field::Length, claimed));
        }
        decode_whole(frame)
    }

    /// Decode the frame at the start of `buf`.
    ///
    /// Returns the frame and the bytes it took, or how many more bytes are
    /// needed, or the first rule the bytes broke. A length of zero or above
    /// the limit is refused as soon as the prefix is in, before the rest
    /// arrives.
    pub fn decode<'a>(&self, buf: &'a [u8]) -> Result<Status<(Frame<'a>, usize)>, Error> {
        let total = match self.frame_len(buf)? {
            Status::Complete(total) => total,
            Status::Incomplete { needed } => return Ok(Status::Incomplete { needed }),
        };
        match buf.get(..total) {
            Some(frame) => Ok(Status::Complete((decode_whole(frame)?, total))),
            None => Ok(Status::Incomplete {
                needed: total - buf.len(),
            }),
        }
    }
}

/// Decode the frame at the start of `buf` with the protocol's limit; see
/// [`FrameDecoder::decode`].
pub fn decode(buf: &[u8]) -> Result<Status<(Frame<'_>, usize)>, Error> {
    FrameDecoder::new().decode(buf)
}

fn parse_body<'a, B: Decode<'a>>(frame: &'a [u8]) -> Result<B, Error> {
    let mut c = Cursor::new(frame, HEAD_BYTES, B::KIND);
    let body = B::parse(&mut c)?;
    c.finish()?;
    Ok(body)
}

/// What every kind's golden test checks of its hand-written bytes.
#[cfg(test)]
pub(crate) mod golden {
    extern crate std;

    use std::vec::Vec;

    use super::{decode, Frame, Status};
    use crate::Rule;

    /// The parts of a frame, written by hand, joined.
    pub(crate) fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// `bytes`, written by hand from the protocol, and `frame` are the same
    /// frame both ways: decoding takes exactly the bytes and gives the
    /// fields, encoding the fields writes exactly the bytes and nothing
    /// past them, and every prefix is `Incomplete` by the right count.
    #[track_caller]
    pub(crate) fn assert_golden(bytes: &[u8], frame: Frame<'_>) {
        match decode(bytes) {
            Ok(Status::Complete((got, used))) => {
                assert_eq!(got, frame);
                assert_eq!(used, bytes.len(), "{frame}: consumed");
            }
            other => panic!("{frame}: {other:?}"),
        }
        assert_eq!(frame.buffer_len(), Ok(bytes.len()), "{frame}");
        let mut buf = std::vec![0xaa; bytes.len() + 7];
        assert_eq!(frame.emit(&mut buf), Ok(bytes.len()), "{frame}");
        assert_eq!(&buf[..bytes.len()], bytes, "{frame}");
        assert!(
            buf[bytes.len()..].iter().all(|&b| b == 0xaa),
            "{frame}: wrote past"
        );
        let short = frame.emit(&mut buf[..bytes.len() - 1]).unwrap_err();
        assert!(
            matches!(short.rule(), Rule::BufferTooSmall { .. }),
            "{short}"
        );
        for cut in 0..bytes.len() {
            let needed = if cut < 4 { 4 - cut } else { bytes.len() - cut };
            assert_eq!(
                decode(&bytes[..cut]),
                Ok(Status::Incomplete { needed }),
                "{frame}"
            );
        }
    }
}
