//! Framing ([protocol §2](crate::protocol)): `u32 len | u8 kind | payload`, the sans-IO decoder,
//! and the [`Frame`] that names every kind.

use zerocopy::little_endian::U32;

use crate::codec::{Cursor, Out};
use crate::error::{Error, Field, Rule};
use crate::layout::FrameHead;
use crate::{
    ClockOffset, Handshake, Index, Rows, Segment, SourceUpdate, LENGTH_PREFIX_BYTES,
    MAX_FRAME_BYTES,
};

/// The kind bytes of [protocol §4](crate::protocol).
pub mod kind {
    /// [`Handshake`](crate::Handshake), §4.1.
    pub const HANDSHAKE: u8 = 1;
    /// [`Index`](crate::Index), §4.2.
    pub const INDEX: u8 = 2;
    /// [`Rows`](crate::Rows), §4.3.
    pub const ROWS: u8 = 3;
    /// [`Segment`](crate::Segment), §4.4.
    pub const SEGMENT: u8 = 4;
    /// [`ClockOffset`](crate::ClockOffset), §4.5.
    pub const CLOCK_OFFSET: u8 = 5;
    /// [`SourceUpdate`](crate::SourceUpdate), added in dendro 0.6.1 ([protocol §4.6](crate::protocol)).
    pub const SOURCE_UPDATE: u8 = 6;

    /// Whether this build reads frames of `kind`; any other is skipped
    /// ([protocol §7](crate::protocol)).
    pub const fn is_known(kind: u8) -> bool {
        HANDSHAKE <= kind && kind <= SOURCE_UPDATE
    }
}

/// The frame's name for a kind byte, as the [protocol](crate::protocol)
/// writes it.
pub const fn kind_name(kind: u8) -> &'static str {
    match kind {
        kind::HANDSHAKE => "Handshake",
        kind::INDEX => "Index",
        kind::ROWS => "Rows",
        kind::SEGMENT => "Segment",
        kind::CLOCK_OFFSET => "ClockOffset",
        kind::SOURCE_UPDATE => "SourceUpdate",
        _ => "unknown",
    }
}

/// The bytes before a payload: the length prefix and the kind byte.
pub(crate) const HEAD_BYTES: usize = LENGTH_PREFIX_BYTES + 1;

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
pub(crate) fn encoded_len<B: Encode>(body: &B) -> Result<usize, Error> {
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
    let total = encoded_len(body)?;
    if buf.len() < total {
        return Err(Error::encode(
            Rule::BufferTooSmall {
                needed: total,
                have: buf.len(),
            },
            Field::Length,
            0,
        )
        .in_frame(kind));
    }
    let mut out = Out::new(buf, 0);
    out.fixed(&FrameHead {
        len: U32::new((total - LENGTH_PREFIX_BYTES) as u32),
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
                $crate::frame::encoded_len(self)
            }

            /// Write the whole frame at the start of `buf` and return its
            /// length. A buffer shorter than [`buffer_len`](Self::buffer_len)
            /// gives [`Rule::BufferTooSmall`](crate::Rule::BufferTooSmall),
            /// carrying the size needed, and writes nothing.
            pub fn emit(&self, buf: &mut [u8]) -> Result<usize, $crate::Error> {
                $crate::frame::emit(self, buf)
            }
        }
    };
}
pub(crate) use encodable;

/// One frame, every field borrowed from the bytes it was decoded from, or from
/// the caller who built it to encode.
///
/// A frame of a kind this crate does not know is [`Frame::Unknown`], not an
/// error ([protocol §7](crate::protocol)): a caller skips it, counts it, or forwards it
/// untouched.
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
    /// Kind 1: a source's identity and the ordinal later frames carry.
    Handshake(Handshake<'a>),
    /// Kind 2: one entry of the caller's secondary index.
    Index(Index<'a>),
    /// Kind 3: live observations.
    Rows(Rows<'a>),
    /// Kind 4: a sealed parquet segment.
    Segment(Segment<'a>),
    /// Kind 5: one clock-drift observation.
    ClockOffset(ClockOffset),
    /// Kind 6: a source's new labels and metadata.
    SourceUpdate(SourceUpdate<'a>),
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
            Frame::Handshake(_) => kind::HANDSHAKE,
            Frame::Index(_) => kind::INDEX,
            Frame::Rows(_) => kind::ROWS,
            Frame::Segment(_) => kind::SEGMENT,
            Frame::ClockOffset(_) => kind::CLOCK_OFFSET,
            Frame::SourceUpdate(_) => kind::SOURCE_UPDATE,
            Frame::Unknown { kind, .. } => *kind,
        }
    }

    /// The handshake ordinal the frame names; `None` for an unknown kind,
    /// whose layout is not known.
    pub const fn source(&self) -> Option<u32> {
        match self {
            Frame::Handshake(f) => Some(f.source),
            Frame::Index(f) => Some(f.source),
            Frame::Rows(f) => Some(f.source),
            Frame::Segment(f) => Some(f.source),
            Frame::ClockOffset(f) => Some(f.source),
            Frame::SourceUpdate(f) => Some(f.source),
            Frame::Unknown { .. } => None,
        }
    }

    /// The exact bytes [`emit`](Self::emit) writes, length prefix included.
    pub fn buffer_len(&self) -> Result<usize, Error> {
        match self {
            Frame::Handshake(f) => f.buffer_len(),
            Frame::Index(f) => f.buffer_len(),
            Frame::Rows(f) => f.buffer_len(),
            Frame::Segment(f) => f.buffer_len(),
            Frame::ClockOffset(f) => f.buffer_len(),
            Frame::SourceUpdate(f) => f.buffer_len(),
            Frame::Unknown { kind, payload } => encoded_len(&Unknown(*kind, payload)),
        }
    }

    /// Write the whole frame at the start of `buf`, returning its length.
    ///
    /// The output is byte-identical to dendro 0.6.1's `encode_frame` of the
    /// same frame. A decoded frame re-encodes to exactly the bytes it came
    /// from, so a filter can forward frames it has looked at.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        match self {
            Frame::Handshake(f) => f.emit(buf),
            Frame::Index(f) => f.emit(buf),
            Frame::Rows(f) => f.emit(buf),
            Frame::Segment(f) => f.emit(buf),
            Frame::ClockOffset(f) => f.emit(buf),
            Frame::SourceUpdate(f) => f.emit(buf),
            Frame::Unknown { kind, payload } => emit(&Unknown(*kind, payload), buf),
        }
    }
}

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

/// Decode exactly one whole frame whose length has been checked.
fn decode_whole(frame: &[u8]) -> Result<Frame<'_>, Error> {
    let kind = frame.get(LENGTH_PREFIX_BYTES).copied().unwrap_or(0);
    Ok(match kind {
        kind::HANDSHAKE => Frame::Handshake(parse_body(frame)?),
        kind::INDEX => Frame::Index(parse_body(frame)?),
        kind::ROWS => Frame::Rows(parse_body(frame)?),
        kind::SEGMENT => Frame::Segment(parse_body(frame)?),
        kind::CLOCK_OFFSET => Frame::ClockOffset(parse_body(frame)?),
        kind::SOURCE_UPDATE => Frame::SourceUpdate(parse_body(frame)?),
        kind => Frame::Unknown {
            kind,
            payload: frame.get(HEAD_BYTES..).unwrap_or(&[]),
        },
    })
}

/// One line for a person: the kind, the source, the key fields, and byte
/// fields summarized by their length (the pretty-printer's form, as smoltcp's
/// `Repr`s have).
/// One line per frame for `defmt` logging on a device: the kind, the
/// source, and what the frame carries in numbers (no strings are copied).
#[cfg(feature = "defmt")]
impl defmt::Format for Frame<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Frame::Handshake(h) => defmt::write!(
                f,
                "Handshake source={=u32} labels={=usize} metadata={=usize} complete={=bool}",
                h.source,
                h.labels.len(),
                h.metadata.len(),
                h.complete
            ),
            Frame::Index(i) => defmt::write!(
                f,
                "Index source={=u32} ts={=i64} kind={} blob={=usize}B",
                i.source,
                i.ts,
                i.kind,
                i.blob.len()
            ),
            Frame::Rows(r) => defmt::write!(
                f,
                "Rows source={=u32} seq={=u64} rows={=usize}",
                r.source,
                r.seq,
                r.rows.len()
            ),
            Frame::Segment(s) => defmt::write!(
                f,
                "Segment source={=u32} rows={=u64} bytes={=usize}B",
                s.source,
                s.rows,
                s.bytes.len()
            ),
            Frame::ClockOffset(c) => defmt::write!(f, "{}", c),
            Frame::SourceUpdate(u) => defmt::write!(
                f,
                "SourceUpdate source={=u32} ts={=i64} labels={=usize} metadata={=usize}",
                u.source,
                u.ts,
                u.labels.len(),
                u.metadata.len()
            ),
            Frame::Unknown { kind, payload } => {
                defmt::write!(
                    f,
                    "unknown kind={=u8} payload={=usize}B",
                    kind,
                    payload.len()
                )
            }
        }
    }
}

impl core::fmt::Display for Frame<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        struct Pairs<'m>(crate::Map<'m>);
        impl core::fmt::Display for Pairs<'_> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("{")?;
                for (i, (k, v)) in self.0.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{k:?}: {v:?}")?;
                }
                f.write_str("}")
            }
        }
        match self {
            Frame::Handshake(h) => {
                write!(f, "Handshake source={} uuid=", h.source)?;
                match h.uuid {
                    Some(u) => f.write_str(u)?,
                    None => f.write_str("absent")?,
                }
                write!(
                    f,
                    " labels={} metadata={} clock_anchor_wall_ns={} complete={}",
                    Pairs(h.labels),
                    Pairs(h.metadata),
                    h.clock_anchor_wall_ns,
                    h.complete
                )
            }
            Frame::Index(i) => write!(
                f,
                "Index source={} stream={:?} ts={} kind={:?} state=({:#x}, {:#x}) blob={}B",
                i.source,
                i.stream,
                i.ts,
                i.kind,
                i.state.0,
                i.state.1,
                i.blob.len()
            ),
            Frame::Rows(r) => {
                let bytes: usize = r.rows.iter().map(|row| row.row.len()).sum();
                write!(
                    f,
                    "Rows source={} seq={} index_state=({:#x}, {:#x}) rows={} row_bytes={}",
                    r.source,
                    r.seq,
                    r.index_state.0,
                    r.index_state.1,
                    r.rows.len(),
                    bytes
                )?;
                if let Some(first) = r.rows.iter().next() {
                    write!(f, " first={:?}@{}", first.stream, first.ts)?;
                }
                Ok(())
            }
            Frame::Segment(s) => {
                write!(
                    f,
                    "Segment source={} stream={:?} rows={} ts={}..={} bytes={}B caller_index=",
                    s.source,
                    s.stream,
                    s.rows,
                    s.first_ts,
                    s.last_ts,
                    s.bytes.len()
                )?;
                match s.caller_index {
                    Some(c) => write!(f, "{}B", c.len()),
                    None => f.write_str("absent"),
                }
            }
            Frame::ClockOffset(c) => write!(
                f,
                "ClockOffset source={} ts={} offset_ns={}",
                c.source, c.ts, c.offset_ns
            ),
            Frame::SourceUpdate(u) => write!(
                f,
                "SourceUpdate source={} ts={} labels={} metadata={}",
                u.source,
                u.ts,
                Pairs(u.labels),
                Pairs(u.metadata)
            ),
            Frame::Unknown { kind, payload } => {
                write!(f, "unknown kind={} payload={}B", kind, payload.len())
            }
        }
    }
}
