//! Frames over `embedded-io` (feature `embedded-io`) and `embedded-io-async`
//! (feature `embedded-io-async`): a device reads a stream into one buffer it
//! owns and writes frames from one it owns. Still no_std, no alloc.
//!
//! A publisher's frames go out through [`send_due`] (blocking: every frame
//! due, each in as many writes as the writer takes), [`send_ready`] (only
//! what a [`WriteReady`](embedded_io::WriteReady) writer takes now, for a
//! main loop that must not block on a full socket), and their async forms
//! [`asynch::send_due`] (awaiting every frame) and [`asynch::send_ready`]
//! (never waiting: for an async loop that samples on while embassy-net's
//! `TcpSocket`, or any `embedded_io_async` writer that says when it is
//! ready, drains); each keeps the frame under way in an [`Outbox`], so a
//! write that takes part of it loses nothing and copies nothing again, and
//! the async ones may be dropped at any await ([`asynch`] says how).
//!
//! ```
//! # #[cfg(feature = "embedded-io")] {
//! use dendro_wire_core::io::{read_frame, read_preamble, write_frame, write_preamble};
//! use dendro_wire_core::{ClockOffset, FrameDecoder, Frame};
//!
//! // A "UART": embedded-io's Write for a byte slice.
//! let mut wire = [0u8; 64];
//! let mut tx: &mut [u8] = &mut wire;
//! let mut scratch = [0u8; 32];
//! write_preamble(&mut tx).unwrap();
//! let frame = Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 });
//! write_frame(&mut tx, &frame, &mut scratch).unwrap();
//! let sent = 64 - tx.len();
//!
//! let mut rx: &[u8] = &wire[..sent];
//! let mut buf = [0u8; 32];
//! read_preamble(&mut rx).unwrap();
//! let got = read_frame(&mut rx, &mut buf, &FrameDecoder::new()).unwrap();
//! assert_eq!(got, Some(frame));
//! assert_eq!(read_frame(&mut rx, &mut buf, &FrameDecoder::new()).unwrap(), None);
//! # }
//! ```

use core::fmt;

use crate::error::{Error, Field, Rule};
use crate::frame::{Frame, FrameDecoder, Status};
use crate::preamble::{check_preamble, PREAMBLE, PREAMBLE_BYTES};
use crate::publisher::{Outbox, PublishError, Publisher};
use crate::storage::Storage;
use crate::LENGTH_PREFIX_BYTES;

/// Why a frame could not be read or written over a device's I/O.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoError<E> {
    /// The device's I/O failed.
    Io(E),
    /// The bytes broke a rule, or a frame does not fit the buffer given.
    Wire(Error),
    /// The stream ended inside the preamble or a frame (its length prefix
    /// included): a lost frame, not the end. Reading, the stream stopped;
    /// writing, the writer took none of a write (`Ok(0)`, which
    /// `embedded_io::Write` allows only for an empty one), so the frame
    /// went out cut.
    Truncated {
        /// The bytes the preamble or frame needed.
        needed: usize,
        /// The bytes that arrived, or that the writer took.
        have: usize,
    },
}

impl<E> IoError<E> {
    /// The variant's name, for a device that logs without `core::fmt`.
    pub const fn name(&self) -> &'static str {
        match self {
            IoError::Io(_) => "Io",
            IoError::Wire(_) => "Wire",
            IoError::Truncated { .. } => "Truncated",
        }
    }
}

/// Why [`send_due`] or [`send_ready`] stopped before every frame due was
/// sent. The frame under way stays in the [`Outbox`].
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError<E> {
    /// The device's I/O failed.
    Io(E),
    /// The writer took none of a non-empty write: it will take no more.
    WriteZero,
    /// The publisher refused to poll its next frame (the outbox's buffer
    /// too small for it, say); the frame stays due.
    Publish(PublishError),
}

impl<E> SendError<E> {
    /// The variant's name, for a device that logs without `core::fmt`.
    pub const fn name(&self) -> &'static str {
        match self {
            SendError::Io(_) => "Io",
            SendError::WriteZero => "WriteZero",
            SendError::Publish(_) => "Publish",
        }
    }
}

impl<E: embedded_io::Error> fmt::Display for SendError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Io(e) => write!(f, "the device's I/O failed: {}", e.kind()),
            SendError::WriteZero => {
                f.write_str("the device took none of a write: the link takes no more")
            }
            SendError::Publish(e) => write!(f, "{e}"),
        }
    }
}

impl<E: embedded_io::Error> core::error::Error for SendError<E> {}

#[cfg(feature = "defmt")]
impl<E: embedded_io::Error> defmt::Format for SendError<E> {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            SendError::Io(e) => defmt::write!(f, "Io({})", defmt::Debug2Format(&e.kind())),
            SendError::WriteZero => defmt::write!(f, "WriteZero"),
            SendError::Publish(e) => defmt::write!(f, "Publish({})", e),
        }
    }
}

#[cfg(feature = "defmt")]
impl<E: embedded_io::Error> defmt::Format for IoError<E> {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            IoError::Io(e) => defmt::write!(f, "Io({})", defmt::Debug2Format(&e.kind())),
            IoError::Wire(e) => defmt::write!(f, "Wire({})", e),
            IoError::Truncated { needed, have } => {
                defmt::write!(f, "Truncated {{ needed: {}, have: {} }}", needed, have)
            }
        }
    }
}

impl<E: embedded_io::Error> fmt::Display for IoError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Io(e) => write!(f, "the device's I/O failed: {}", e.kind()),
            IoError::Wire(e) => write!(f, "{e}"),
            IoError::Truncated { needed, have } => write!(
                f,
                "the stream ends inside a frame: {have} of {needed} byte(s) went through"
            ),
        }
    }
}

impl<E: embedded_io::Error> core::error::Error for IoError<E> {}

/// The frame's whole length from its prefix, refused if it does not fit
/// `buf` (the device's limit) or breaks the decoder's.
fn whole_len<E>(
    prefix: &[u8],
    buf_len: usize,
    decoder: &FrameDecoder,
) -> Result<usize, IoError<E>> {
    let total = match decoder.frame_len(prefix).map_err(IoError::Wire)? {
        Status::Complete(total) => total,
        Status::Incomplete { needed } => {
            return Err(IoError::Truncated {
                needed: prefix.len() + needed,
                have: prefix.len(),
            })
        }
    };
    if total > buf_len {
        return Err(IoError::Wire(Error::decode(
            Rule::FrameTooLarge {
                len: total - LENGTH_PREFIX_BYTES,
                limit: buf_len.saturating_sub(LENGTH_PREFIX_BYTES) as u32,
            },
            Field::Length,
            0,
        )));
    }
    Ok(total)
}

/// Decode a frame whose bytes are all in `buf`.
fn decoded<'b, E>(buf: &'b [u8], decoder: &FrameDecoder) -> Result<Frame<'b>, IoError<E>> {
    match decoder.decode(buf).map_err(IoError::Wire)? {
        Status::Complete((frame, _)) => Ok(frame),
        Status::Incomplete { needed } => Err(IoError::Truncated {
            needed: buf.len() + needed,
            have: buf.len(),
        }),
    }
}

/// The preamble's bytes checked, once `have` of them arrived.
fn preamble_read<E>(preamble: &[u8], have: usize) -> Result<(), IoError<E>> {
    check_preamble(preamble.get(..have).unwrap_or(preamble)).map_err(IoError::Wire)?;
    if have < PREAMBLE_BYTES {
        return Err(IoError::Truncated {
            needed: PREAMBLE_BYTES,
            have,
        });
    }
    Ok(())
}

/// The same reading functions for `embedded-io` and `embedded-io-async`:
/// the traits differ, and the async ones are awaited (`$aw` is `.await` or
/// nothing). `$read_note` ends their docs: their cancel-safety, for the
/// async ones. The writing functions are written apart: the async ones are
/// futures of their own ([`asynch::WriteWhole`]), not `async fn`s.
macro_rules! device_io {
    ($read:path, $read_note:literal, $($async:ident)? ; $($aw:tt)*) => {
        /// Fill `buf` from the reader until it is full or the stream ends;
        /// the bytes read.
        $($async)? fn fill<R: $read>(r: &mut R, buf: &mut [u8]) -> Result<usize, IoError<R::Error>> {
            let mut have = 0;
            // `get_mut` rather than an index: no panic path in a firmware
            // build, even for a reader that claims more than it was given.
            while let Some(room) = buf.get_mut(have..).filter(|room| !room.is_empty()) {
                match r.read(room)$($aw)*.map_err(IoError::Io)? {
                    0 => break,
                    n => have += n,
                }
            }
            Ok(have.min(buf.len()))
        }

        /// Read and check the preamble.
        #[doc = $read_note]
        pub $($async)? fn read_preamble<R: $read>(r: &mut R) -> Result<(), IoError<R::Error>> {
            let mut preamble = [0u8; PREAMBLE_BYTES];
            let have = fill(r, &mut preamble)$($aw)*?;
            preamble_read(&preamble, have)
        }

        /// Read the next frame into `buf` and decode it there; `None` at a
        /// clean end (a frame boundary). A frame larger than `buf` is
        /// refused from its length prefix, before its bytes are read.
        #[doc = $read_note]
        pub $($async)? fn read_frame<'b, R: $read>(
            r: &mut R,
            buf: &'b mut [u8],
            decoder: &FrameDecoder,
        ) -> Result<Option<Frame<'b>>, IoError<R::Error>> {
            let mut prefix = [0u8; LENGTH_PREFIX_BYTES];
            match fill(r, &mut prefix)$($aw)*? {
                0 => return Ok(None),
                LENGTH_PREFIX_BYTES => {}
                have => {
                    return Err(IoError::Truncated {
                        needed: LENGTH_PREFIX_BYTES,
                        have,
                    })
                }
            }
            let total = whole_len(&prefix, buf.len(), decoder)?;
            // `whole_len` bounded `total` by the buffer and from below by
            // the prefix; split rather than index, so that no panic path
            // is left for a firmware build to carry.
            let truncated = IoError::Truncated { needed: total, have: LENGTH_PREFIX_BYTES };
            let frame = buf.get_mut(..total).ok_or(truncated)?;
            let Some((head, body)) = frame.split_first_chunk_mut::<LENGTH_PREFIX_BYTES>() else {
                return Err(IoError::Truncated { needed: total, have: 0 });
            };
            *head = prefix;
            let have = LENGTH_PREFIX_BYTES + fill(r, body)$($aw)*?;
            if have < total {
                return Err(IoError::Truncated {
                    needed: total,
                    have,
                });
            }
            decoded(frame, decoder).map(Some)
        }
    };
}

device_io!(embedded_io::Read, "", ;);

/// All of `bytes`, in as many writes as `w` takes: `write_all` without its
/// panic on a writer that takes nothing.
fn write_whole<W: embedded_io::Write>(w: &mut W, bytes: &[u8]) -> Result<(), IoError<W::Error>> {
    let mut have = 0;
    while have < bytes.len() {
        match w
            .write(bytes.get(have..).unwrap_or_default())
            .map_err(IoError::Io)?
        {
            0 => {
                return Err(IoError::Truncated {
                    needed: bytes.len(),
                    have,
                })
            }
            n => have += n,
        }
    }
    Ok(())
}

/// Write the preamble.
pub fn write_preamble<W: embedded_io::Write>(w: &mut W) -> Result<(), IoError<W::Error>> {
    write_whole(w, &PREAMBLE)
}

/// Encode `frame` into `scratch` and write it.
pub fn write_frame<W: embedded_io::Write>(
    w: &mut W,
    frame: &Frame<'_>,
    scratch: &mut [u8],
) -> Result<(), IoError<W::Error>> {
    let n = frame.emit(scratch).map_err(IoError::Wire)?;
    write_whole(w, scratch.get(..n).unwrap_or_default())
}

/// Send every frame `publisher` has due, through `outbox` (a frame it holds
/// from an earlier call first), each in as many writes as `w` takes, then
/// flush; the frames finished. On an error the frame under way stays in
/// `outbox`: after a failed link, [`Outbox::abandon`] it and tell the
/// publisher [`disconnected`](Publisher::disconnected).
pub fn send_due<W: embedded_io::Write, S: Storage, const N: usize>(
    w: &mut W,
    publisher: &mut Publisher<S, N>,
    outbox: &mut Outbox<'_>,
) -> Result<u64, SendError<W::Error>> {
    let before = outbox.frames_done();
    while let Some(bytes) = outbox.pending(publisher).map_err(SendError::Publish)? {
        match w.write(bytes).map_err(SendError::Io)? {
            0 => return Err(SendError::WriteZero),
            n => outbox.advance(n),
        }
    }
    w.flush().map_err(SendError::Io)?;
    Ok(outbox.frames_done() - before)
}

/// Send what `w` takes now of the frames `publisher` has due, without
/// blocking: a write only while `w` says it is ready
/// ([`WriteReady`](embedded_io::WriteReady)), the frame under way kept in
/// `outbox` for the next call; the frames finished. For a main loop that
/// samples on while a slow link drains: what is still due when the next
/// interval ends is dropped and counted by the publisher, never a reading
/// refused.
pub fn send_ready<W, S, const N: usize>(
    w: &mut W,
    publisher: &mut Publisher<S, N>,
    outbox: &mut Outbox<'_>,
) -> Result<u64, SendError<W::Error>>
where
    W: embedded_io::Write + embedded_io::WriteReady,
    S: Storage,
{
    let before = outbox.frames_done();
    while w.write_ready().map_err(SendError::Io)? {
        let Some(bytes) = outbox.pending(publisher).map_err(SendError::Publish)? else {
            break;
        };
        match w.write(bytes).map_err(SendError::Io)? {
            0 => break,
            n => outbox.advance(n),
        }
    }
    Ok(outbox.frames_done() - before)
}

#[cfg(feature = "embedded-io-async")]
pub mod asynch;
