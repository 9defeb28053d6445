//! A connection through a load balancer: its PROXY header read from the
//! socket ([`read_header`]), and the bytes read past it given back first
//! to whoever reads the stream next ([`Rewound`]): the TLS handshake, or
//! the session.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use dendro_wire_core::Status;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

use crate::receive::proxy::{parse_header, ProxiedFrom, ProxyHeaderError, MAX_HEADER};
use crate::receive::ServeError;

/// Read a PROXY header from `io`: whom it names, and the bytes that arrived
/// after it. A connection that ends inside it, or whose first bytes are not
/// one, is refused; the caller bounds the time it may take.
pub(super) async fn read_header<IO: AsyncRead + Unpin>(
    io: &mut IO,
) -> Result<(ProxiedFrom, Vec<u8>), ServeError> {
    // Read in small pieces: a header is usually one short segment, and
    // what arrives past it is handed on, not kept.
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    loop {
        match parse_header(&buf) {
            Ok(Status::Complete((from, used))) => return Ok((from, buf.split_off(used))),
            Ok(Status::Incomplete { .. }) => {}
            Err(e) => return Err(ServeError::ProxyHeader(e)),
        }
        // The parse judges a header by the time it could be whole within
        // MAX_HEADER; past that nothing more is read.
        let room = MAX_HEADER.saturating_sub(buf.len()).min(chunk.len());
        if room == 0 {
            return Err(ServeError::ProxyHeader(ProxyHeaderError::Oversized(
                buf.len(),
            )));
        }
        let n = io.read(&mut chunk[..room]).await.map_err(|e| {
            ServeError::ProxyHeader(ProxyHeaderError::Malformed(format!(
                "the connection failed inside it: {e}"
            )))
        })?;
        if n == 0 {
            return Err(ServeError::ProxyHeader(ProxyHeaderError::Malformed(
                format!("the connection ended after {} byte(s) of it", buf.len()),
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A stream with bytes already read from it put back in front: they are
/// read first, then the stream itself. Writes go to the stream.
pub(super) struct Rewound<IO> {
    before: Vec<u8>,
    at: usize,
    io: IO,
}

impl<IO> Rewound<IO> {
    pub(super) fn new(before: Vec<u8>, io: IO) -> Self {
        Rewound { before, at: 0, io }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Rewound<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.at < this.before.len() {
            let n = (this.before.len() - this.at).min(out.remaining());
            out.put_slice(&this.before[this.at..this.at + n]);
            this.at += n;
            if this.at == this.before.len() {
                this.before = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, out)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Rewound<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn the_bytes_past_the_header_are_read_first_then_the_rest() {
        let stream =
            b"PROXY TCP4 10.0.0.7 10.0.0.1 40000 7000\r\ndendro-repl\0\x01\0and on".to_vec();
        let (from, rest, all) = block_on(async {
            let mut io = &stream[..];
            let (from, rest) = read_header(&mut io).await.unwrap();
            let mut all = Vec::new();
            Rewound::new(rest.clone(), io)
                .read_to_end(&mut all)
                .await
                .unwrap();
            (from, rest, all)
        });
        assert_eq!(from, ProxiedFrom::Client("10.0.0.7:40000".parse().unwrap()));
        assert!(!rest.is_empty());
        assert_eq!(all, b"dendro-repl\0\x01\0and on");
    }

    #[test]
    fn a_stream_that_ends_inside_the_header_or_has_none_is_refused() {
        for (bytes, says) in [
            (&b"PROXY TCP4 10.0"[..], "ended after 15 byte(s)"),
            (
                &b"dendro-repl\0"[..],
                "does not begin with a PROXY protocol header",
            ),
        ] {
            let e = block_on(async { read_header(&mut &bytes[..]).await.unwrap_err() });
            assert!(e.to_string().contains(says), "{e}");
        }
    }
}
