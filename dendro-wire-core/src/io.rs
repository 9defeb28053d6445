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

/// The same functions over `embedded-io-async`, and the drains as futures
/// a main loop may drop at any point.
///
/// **Cancel-safety.** Every future here may be dropped at any await (a
/// `select` with a timer drops the one that lost) and the stream stays
/// whole, provided the device's `write` is side-effect-free when dropped,
/// as `embedded-io-async` asks of it and embassy-net's `TcpSocket` is
/// (its `write` copies into the socket only in the poll that returns):
///
/// - [`send_due`] and [`send_ready`]: the frame under way, and how much of
///   it the link took, live in the [`Outbox`], advanced only once a write
///   has returned; dropped, the next call goes on from there, and no byte
///   is sent twice or skipped. Each `write` is a fresh future polled once,
///   never kept across polls, so a writer that must be polled on to finish
///   a write it started is not one to drain with these.
/// - [`write_preamble`], [`write_frame`]: dropped part way, part of the
///   preamble or frame may have gone; the link is then cut inside it, and
///   the connection must be dropped.
/// - [`read_preamble`], [`read_frame`]: dropped part way, the bytes read so
///   far are lost to the caller, and the stream must be read again from a
///   new connection.
///
/// The drains are futures of their own ([`SendDue`](asynch::SendDue)) rather than `async
/// fn`s: an `async fn`'s future panics if polled after it finished, and
/// that panic stayed in a device's program wherever the compiler could not
/// see that it never is (a `select` polling it). Polled after finishing,
/// these finish again, with no frame sent.
#[cfg(feature = "embedded-io-async")]
pub mod asynch {
    use core::future::Future;
    use core::pin::{pin, Pin};
    use core::task::{Context, Poll};

    use super::*;

    device_io!(
        embedded_io_async::Read,
        "\n\n**Not cancel-safe:** dropped part way, the bytes read so far are lost to the \
         caller; read the stream again from a new connection.",
        async; .await
    );

    /// Write the preamble. The async [`write_preamble`](super::write_preamble).
    ///
    /// **Not cancel-safe:** dropped part way, part of it may have gone; the
    /// link is then cut inside it, and the connection must be dropped.
    pub fn write_preamble<W: embedded_io_async::Write>(w: &mut W) -> WriteWhole<'_, W> {
        WriteWhole::new(w, &PREAMBLE, None)
    }

    /// Encode `frame` into `scratch` and write it. The async
    /// [`write_frame`](super::write_frame).
    ///
    /// **Not cancel-safe:** dropped part way, part of it may have gone; the
    /// link is then cut inside it, and the connection must be dropped.
    pub fn write_frame<'a, W: embedded_io_async::Write>(
        w: &'a mut W,
        frame: &Frame<'_>,
        scratch: &'a mut [u8],
    ) -> WriteWhole<'a, W> {
        match frame.emit(scratch) {
            Ok(n) => WriteWhole::new(w, scratch.get(..n).unwrap_or_default(), None),
            Err(e) => WriteWhole::new(w, &[], Some(IoError::Wire(e))),
        }
    }

    /// The future of [`write_preamble`] and [`write_frame`]: all of its
    /// bytes, in as many writes as the writer takes, each write a fresh
    /// future polled once. Its state is how much was written, so polled
    /// after it finished it finishes again, writing nothing: it has no
    /// panic path, where an `async fn` would keep one.
    pub struct WriteWhole<'a, W: embedded_io_async::ErrorType> {
        w: &'a mut W,
        bytes: &'a [u8],
        /// Of `bytes`, written.
        have: usize,
        /// Known before any write (a frame that did not encode).
        failed: Option<IoError<W::Error>>,
    }

    impl<'a, W: embedded_io_async::ErrorType> WriteWhole<'a, W> {
        fn new(w: &'a mut W, bytes: &'a [u8], failed: Option<IoError<W::Error>>) -> Self {
            WriteWhole {
                w,
                bytes,
                have: 0,
                failed,
            }
        }

        /// Finished: later polls write nothing.
        fn finish(
            &mut self,
            result: Result<(), IoError<W::Error>>,
        ) -> Poll<Result<(), IoError<W::Error>>> {
            self.bytes = &[];
            Poll::Ready(result)
        }
    }

    // Nothing in it is pinned: it only lends its writer a fresh future to
    // poll, never holds one.
    impl<W: embedded_io_async::ErrorType> Unpin for WriteWhole<'_, W> {}

    impl<W: embedded_io_async::Write> Future for WriteWhole<'_, W> {
        type Output = Result<(), IoError<W::Error>>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.get_mut();
            if let Some(e) = this.failed.take() {
                return this.finish(Err(e));
            }
            while let Some(rest) = this.bytes.get(this.have..).filter(|rest| !rest.is_empty()) {
                match poll_once(this.w.write(rest), cx) {
                    Poll::Ready(Ok(0)) => {
                        let (needed, have) = (this.bytes.len(), this.have);
                        return this.finish(Err(IoError::Truncated { needed, have }));
                    }
                    Poll::Ready(Ok(n)) => this.have += n,
                    Poll::Ready(Err(e)) => return this.finish(Err(IoError::Io(e))),
                    Poll::Pending => return Poll::Pending,
                }
            }
            this.finish(Ok(()))
        }
    }

    /// Send every frame `publisher` has due, through `outbox`, each in as
    /// many writes as `w` takes, then flush: the frames finished. The
    /// async [`send_due`](super::send_due).
    ///
    /// **Cancel-safe** (as the module says): dropped at any await, the
    /// frame under way and how much of it went stay in `outbox`, and the
    /// next call goes on from there. On an error the frame under way stays
    /// in `outbox`: after a failed link, [`Outbox::abandon`] it and tell
    /// the publisher [`disconnected`](Publisher::disconnected).
    pub fn send_due<'a, 'b, W, S, const N: usize>(
        w: &'a mut W,
        publisher: &'a mut Publisher<S, N>,
        outbox: &'a mut Outbox<'b>,
    ) -> SendDue<'a, 'b, W, S, N>
    where
        W: embedded_io_async::Write,
        S: Storage,
    {
        SendDue::new(w, publisher, outbox, None)
    }

    /// Send what `w` takes now of the frames `publisher` has due: a write
    /// only while `w` says it is ready
    /// ([`WriteReady`](embedded_io_async::WriteReady)), so that it does
    /// not wait on a full link, the frame under way kept in `outbox` for
    /// the next call; the frames finished, and no flush. The async
    /// [`send_ready`](super::send_ready), for an async main loop that
    /// samples on while a slow link drains (embassy-net's `TcpSocket` is
    /// such a writer).
    ///
    /// **Cancel-safe** (as the module says), and it never waits on a
    /// writer that says truly whether it is ready.
    pub fn send_ready<'a, 'b, W, S, const N: usize>(
        w: &'a mut W,
        publisher: &'a mut Publisher<S, N>,
        outbox: &'a mut Outbox<'b>,
    ) -> SendDue<'a, 'b, W, S, N>
    where
        W: embedded_io_async::Write + embedded_io_async::WriteReady,
        S: Storage,
    {
        SendDue::new(w, publisher, outbox, Some(W::write_ready))
    }

    /// The future of [`send_due`] and [`send_ready`]. Its state is the
    /// [`Outbox`]'s, so it may be dropped at any poll.
    pub struct SendDue<'a, 'b, W: embedded_io_async::ErrorType, S: Storage, const N: usize> {
        w: &'a mut W,
        publisher: &'a mut Publisher<S, N>,
        outbox: &'a mut Outbox<'b>,
        /// The outbox's frames done when the drain began.
        before: u64,
        /// For [`send_ready`]: whether the writer takes a write now. Then
        /// the drain stops where it would wait, and does not flush.
        ready: Option<ReadyFn<W>>,
        /// Every frame is written: the flush is under way.
        flushing: bool,
    }

    /// `WriteReady::write_ready` of a writer.
    type ReadyFn<W> = fn(&mut W) -> Result<bool, <W as embedded_io_async::ErrorType>::Error>;

    impl<'a, 'b, W: embedded_io_async::ErrorType, S: Storage, const N: usize> SendDue<'a, 'b, W, S, N> {
        fn new(
            w: &'a mut W,
            publisher: &'a mut Publisher<S, N>,
            outbox: &'a mut Outbox<'b>,
            ready: Option<ReadyFn<W>>,
        ) -> Self {
            let before = outbox.frames_done();
            SendDue {
                w,
                publisher,
                outbox,
                before,
                ready,
                flushing: false,
            }
        }
    }

    /// One poll of a fresh future: a write or a flush is made anew each
    /// time it is polled, polled once, and dropped, so no future of the
    /// writer's is polled again after it finished.
    fn poll_once<F: Future>(f: F, cx: &mut Context<'_>) -> Poll<F::Output> {
        pin!(f).poll(cx)
    }

    impl<W, S, const N: usize> Future for SendDue<'_, '_, W, S, N>
    where
        W: embedded_io_async::Write,
        S: Storage,
    {
        type Output = Result<u64, SendError<W::Error>>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.get_mut();
            let done = |o: &Outbox<'_>, before: u64| o.frames_done() - before;
            loop {
                if this.flushing {
                    return match poll_once(this.w.flush(), cx) {
                        Poll::Ready(Ok(())) => Poll::Ready(Ok(done(this.outbox, this.before))),
                        Poll::Ready(Err(e)) => Poll::Ready(Err(SendError::Io(e))),
                        Poll::Pending => Poll::Pending,
                    };
                }
                if let Some(ready) = this.ready {
                    match ready(this.w) {
                        Ok(true) => {}
                        Ok(false) => return Poll::Ready(Ok(done(this.outbox, this.before))),
                        Err(e) => return Poll::Ready(Err(SendError::Io(e))),
                    }
                }
                let bytes = match this.outbox.pending(this.publisher) {
                    Ok(Some(bytes)) => bytes,
                    Ok(None) if this.ready.is_some() => {
                        return Poll::Ready(Ok(done(this.outbox, this.before)))
                    }
                    Ok(None) => {
                        this.flushing = true;
                        continue;
                    }
                    Err(e) => return Poll::Ready(Err(SendError::Publish(e))),
                };
                match poll_once(this.w.write(bytes), cx) {
                    Poll::Ready(Ok(0)) if this.ready.is_some() => {
                        return Poll::Ready(Ok(done(this.outbox, this.before)))
                    }
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(SendError::WriteZero)),
                    Poll::Ready(Ok(n)) => this.outbox.advance(n),
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(SendError::Io(e))),
                    Poll::Pending => return Poll::Pending,
                }
            }
        }
    }
}
