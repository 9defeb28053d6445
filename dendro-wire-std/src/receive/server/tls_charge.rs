//! What a TLS connection's records hold, charged to the memory budget as
//! rustls holds them: the socket under rustls is [`Metered`], so every byte
//! rustls is handed passes through here, record by record.
//!
//! rustls keeps received records in one buffer, which it sizes before each
//! read of the socket (the room it offers is what that read is handed),
//! and the plaintext of whole records in another until the session reads
//! it. Past the handshake, whole records are processed as soon as they
//! arrive, so the first buffer holds the record not yet whole (at most
//! [`MAX_RECORD`]); a handshake message split over records is kept until
//! whole (at most [`MAX_HANDSHAKE`]). tokio-rustls reads the socket only
//! once the plaintext is all read, so the plaintext held is at most what
//! the last read completed. A TLS connection is charged, beyond what it is
//! charged at accept (rustls's state and a first read's room, `TLS_STATE`):
//! the records buffer as sized, what the last read completed, and whatever
//! records have completed since the session last had plaintext (a
//! handshake message being joined); while the handshake is on, as much
//! again for rustls's copies of its messages, and after it, the client's
//! certificate chain, which rustls keeps.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::server::TlsStream;

use crate::cut::Held;

/// The largest TLS record rustls takes on the wire: 16 KiB of plaintext,
/// the 2 KiB of expansion allowed, and its 5-byte header.
const MAX_RECORD: usize = 16_384 + 2048 + 5;

/// The largest handshake message rustls joins from records.
const MAX_HANDSHAKE: usize = 0xffff;

/// What rustls reads of a socket at a time: every TLS connection's records
/// buffer holds it from its first read on, so it is charged at accept.
pub(super) const READ_SIZE: usize = 4096;

/// Where the bytes handed to rustls stand in the TLS record layer.
#[derive(Debug, Default)]
struct Records {
    header: [u8; 5],
    /// Bytes of the record not yet whole, its header included.
    have: usize,
}

impl Records {
    /// Take `bytes`; how many bytes of records they made whole.
    fn take(&mut self, mut bytes: &[u8]) -> usize {
        let mut whole = 0;
        while !bytes.is_empty() {
            if self.have < 5 {
                let n = (5 - self.have).min(bytes.len());
                self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                bytes = &bytes[n..];
                if self.have < 5 {
                    break;
                }
            }
            let length = 5 + usize::from(u16::from_be_bytes([self.header[3], self.header[4]]));
            let n = (length - self.have).min(bytes.len());
            self.have += n;
            bytes = &bytes[n..];
            if self.have == length {
                whole += length;
                self.have = 0;
            }
        }
        whole
    }
}

/// The socket under rustls, charging what rustls holds of the records
/// read through it.
pub(super) struct Metered<S> {
    inner: S,
    records: Records,
    held: Held,
    /// What the last read made whole (the plaintext rustls may hold).
    last_whole: usize,
    /// Records made whole since the session last had plaintext.
    joined: usize,
    /// Bytes read while the handshake is on; `None` after it.
    handshake: Option<usize>,
    /// The client's certificate chain, as rustls keeps it.
    certificates: usize,
    /// The room rustls's records buffer offered the last read.
    room: usize,
}

impl<S> Metered<S> {
    /// `inner`, its records charged to `held` (which holds nothing yet).
    pub(super) fn new(inner: S, held: Held) -> Self {
        Metered {
            inner,
            records: Records::default(),
            held,
            last_whole: 0,
            joined: 0,
            handshake: Some(0),
            certificates: 0,
            room: READ_SIZE,
        }
    }

    /// The handshake is done, and rustls keeps a chain of `certificates`
    /// bytes.
    pub(super) fn handshaken(&mut self, certificates: usize) {
        self.handshake = None;
        self.certificates = certificates;
        self.charge();
    }

    /// The session had plaintext: no handshake message is being joined but
    /// from the records the last read made whole.
    fn delivered(&mut self) {
        self.joined = self.last_whole;
        self.charge();
    }

    /// Charge what rustls holds now; whether the budget had room for it
    /// (holding less than before always has room).
    fn charge(&mut self) -> bool {
        self.held.set(self.holds(self.room))
    }

    /// What rustls holds beyond what was charged at accept, its records
    /// buffer offering `room` to the read in hand.
    fn holds(&self, room: usize) -> usize {
        let joined = self.joined.min(MAX_HANDSHAKE);
        let buffer = (self.records.have + joined + room).min(MAX_HANDSHAKE.max(MAX_RECORD));
        let copies = self
            .handshake
            .map_or(self.certificates, |read| read.min(MAX_HANDSHAKE));
        (buffer + self.last_whole + copies).saturating_sub(READ_SIZE)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let (room, before) = (buf.remaining(), buf.filled().len());
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        // tokio-rustls reads only once the plaintext is all read.
        this.last_whole = 0;
        if let Poll::Ready(Ok(())) = read {
            let fresh = &buf.filled()[before..];
            this.last_whole = this.records.take(fresh);
            this.joined = this.joined.saturating_add(this.last_whole);
            if let Some(read) = &mut this.handshake {
                *read = read.saturating_add(fresh.len());
            }
        }
        this.room = room;
        if !this.charge() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                "the memory budget is full: no room for the TLS records it sent",
            )));
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A TLS connection past its handshake, telling its [`Metered`] socket
/// whenever the session has plaintext.
pub(super) struct Charged<S>(pub(super) TlsStream<Metered<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Charged<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let tls = &mut self.get_mut().0;
        let before = buf.filled().len();
        let read = Pin::new(&mut *tls).poll_read(cx, buf);
        if buf.filled().len() > before {
            tls.get_mut().0.delivered();
        }
        read
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Charged<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(payload: usize) -> Vec<u8> {
        let mut r = vec![23, 3, 3];
        r.extend_from_slice(&(payload as u16).to_be_bytes());
        r.resize(5 + payload, 0xab);
        r
    }

    /// Records are told whole by their headers, however the bytes are cut.
    #[test]
    fn records_are_followed_across_any_cut() {
        let mut stream = record(100);
        stream.extend(record(0));
        stream.extend(record(16_384));
        for cut in [1, 3, 5, 7, 105, 4096] {
            let mut records = Records::default();
            let whole: usize = stream.chunks(cut).map(|c| records.take(c)).sum();
            assert_eq!((whole, records.have), (stream.len(), 0), "cut {cut}");
        }
        let mut records = Records::default();
        assert_eq!(records.take(&stream[..200]), 105 + 5);
        assert_eq!(records.have, 90, "the third record's first bytes");
    }
}
