//! The same functions over `embedded-io-async`, and the drains as futures
//! a main loop may drop at any point.
//!
//! **Cancel-safety.** Every future here may be dropped at any await (a
//! `select` with a timer drops the one that lost) and the stream stays
//! whole, provided the device's `write` is side-effect-free when dropped,
//! as `embedded-io-async` asks of it and embassy-net's `TcpSocket` is
//! (its `write` copies into the socket only in the poll that returns):
//!
//! - [`send_due`] and [`send_ready`]: the frame under way, and how much of
//!   it the link took, live in the [`Outbox`], advanced only once a write
//!   has returned; dropped, the next call goes on from there, and no byte
//!   is sent twice or skipped. Each `write` is a fresh future polled once,
//!   never kept across polls, so a writer that must be polled on to finish
//!   a write it started is not one to drain with these.
//! - [`write_preamble`], [`write_frame`]: dropped part way, part of the
//!   preamble or frame may have gone; the link is then cut inside it, and
//!   the connection must be dropped.
//! - [`read_preamble`], [`read_frame`]: dropped part way, the bytes read so
//!   far are lost to the caller, and the stream must be read again from a
//!   new connection.
//!
//! The drains are futures of their own ([`SendDue`]) rather than `async
//! fn`s: an `async fn`'s future panics if polled after it finished, and
//! that panic stayed in a device's program wherever the compiler could not
//! see that it never is (a `select` polling it). Polled after finishing,
//! these finish again, with no frame sent.

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
/// **Cancel-safe** (as the module says), and it never waits: a write
/// that would wait is dropped there, and not polled again. A writer that
/// says it is not ready is still asked once for a write (an async write
/// that would wait says so and takes nothing), so that a closed or reset
/// socket, which is never ready, is reported as the error its write
/// returns (`SendError::Io`), and a write that takes nothing as
/// `SendError::WriteZero`, rather than as nothing sent, for ever.
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
            // For `send_ready`: a writer that cannot say whether it is ready
            // has failed.
            if let Some(Err(e)) = this.ready.map(|ready| ready(this.w)) {
                return Poll::Ready(Err(SendError::Io(e)));
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
            // For `send_ready`, a write is asked once whether or not the
            // writer said it was ready, and dropped where it would wait: a
            // closed socket says it is not ready for ever (embassy-net's
            // `TcpSocket`: `can_send` is false), and only a write says why
            // (`ConnectionReset`).
            match poll_once(this.w.write(bytes), cx) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(SendError::WriteZero)),
                Poll::Ready(Ok(n)) => this.outbox.advance(n),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(SendError::Io(e))),
                Poll::Pending if this.ready.is_some() => {
                    return Poll::Ready(Ok(done(this.outbox, this.before)))
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
