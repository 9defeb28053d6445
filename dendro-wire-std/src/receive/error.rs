//! [`ServeError`]: why a connection's stream stopped being applied, whoever
//! served it: [`serve`](super::serve), [`serve_async`](super::serve_async) or
//! a [`Server`](super::Server)'s connection.

use std::fmt;
use std::time::Duration;

use super::proxy::ProxyHeaderError;
use super::subscriber::SubscribeError;
use crate::read_error::{Position, ReadError, ReadErrorKind};

/// Why a connection's stream stopped being applied.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The stream could not be read: the transport failed, the bytes broke a
    /// rule of the spec, the stream ended inside a frame, or the memory
    /// budget could not hold the next frame.
    Read(ReadError),
    /// A frame broke a protocol rule, or the sink failed.
    Subscribe(Position, SubscribeError),
    /// No whole frame arrived for this long.
    IdleTimeout {
        /// The time allowed.
        after: Duration,
        /// Where the next frame would have started.
        at: Position,
    },
    /// A frame started arriving and did not finish in time.
    FrameTimeout {
        /// The time it had: the frame timeout, or less for a frame whose
        /// bytes arrived too slowly to be an agent's (past ten seconds,
        /// under 1 KiB a second).
        after: Duration,
        /// Where the frame started.
        at: Position,
        /// Its bytes that arrived.
        have: usize,
    },
    /// The server shut down; what had arrived of the stream was applied.
    Shutdown {
        /// Where the next frame would have started.
        at: Position,
        /// Bytes of a frame that had started to arrive and was cut off.
        cut: usize,
    },
    /// The peer may not connect: a Unix peer whose user id is not allowed.
    NotAllowed(String),
    /// The TLS handshake failed: no client certificate, one that does not
    /// chain to the client CA or has expired, or a client that refused the
    /// server's.
    Tls(std::io::Error),
    /// No `Handshake` opened a source this long after the connection was
    /// accepted (a TLS handshake included).
    HandshakeTimeout {
        /// The time allowed.
        after: Duration,
    },
    /// Closed to admit a newer connection, the connection cap (or its
    /// address's share, or the cap of those yet to open a source) being
    /// reached: it gave least of those that could go (it had opened no
    /// source, or its sources had delivered nothing, within its grace).
    Evicted,
    /// Its PROXY protocol header was missing, malformed or oversized (from
    /// a load balancer it is expected from), or it sent one it was not
    /// expected to.
    ProxyHeader(ProxyHeaderError),
    /// Closed once its PROXY header named its client: that client's address
    /// already had its share of connections, each having opened a source or
    /// within its grace.
    Refused(String),
}

impl ServeError {
    /// Why the stream ended, in a few words and without anything the peer
    /// sent: what a summary of many ended connections counts them by.
    pub fn reason(&self) -> &'static str {
        match self {
            ServeError::Read(e) => match e.kind() {
                // A TLS connection's records are charged below the reader,
                // in its transport (`tls_charge.rs`): the budget refusing
                // them arrives as the transport's error, and is the budget.
                ReadErrorKind::Io(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
                    "over the memory budget"
                }
                ReadErrorKind::Io(_) => "failed in transport",
                ReadErrorKind::Preamble(_) => "not a dendro replication stream",
                ReadErrorKind::MemoryBudget { .. } => "over the memory budget",
                ReadErrorKind::Truncated { .. } => "cut off inside a frame",
                _ => "broke a framing rule",
            },
            ServeError::Subscribe(..) => "broke a subscriber rule",
            ServeError::IdleTimeout { .. } => "idle timeout",
            ServeError::FrameTimeout { .. } => "frame timeout",
            ServeError::Shutdown { .. } => "shut down",
            ServeError::NotAllowed(_) => "not allowed",
            ServeError::Tls(_) => "refused at the TLS handshake",
            ServeError::HandshakeTimeout { .. } => "handshake timeout",
            ServeError::Evicted => "evicted for a newer connection",
            ServeError::ProxyHeader(_) => "refused for its PROXY header",
            ServeError::Refused(_) => "over its address's share",
        }
    }

    /// A short name for why the connection ended, the same for every
    /// connection that ended so (`"idle_timeout"`): a metric's label or a
    /// summary's key, where the sentence would be too long and too varied.
    pub fn name(&self) -> &'static str {
        match self {
            ServeError::Read(_) => "read",
            ServeError::Subscribe(..) => "subscribe",
            ServeError::IdleTimeout { .. } => "idle_timeout",
            ServeError::FrameTimeout { .. } => "frame_timeout",
            ServeError::Shutdown { .. } => "shutdown",
            ServeError::NotAllowed(_) => "not_allowed",
            ServeError::Tls(_) => "tls",
            ServeError::HandshakeTimeout { .. } => "handshake_timeout",
            ServeError::Evicted => "evicted",
            ServeError::ProxyHeader(_) => "proxy_header",
            ServeError::Refused(_) => "refused",
        }
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Read(e) => write!(f, "{e}"),
            ServeError::Subscribe(at, e) => write!(f, "{at}: {e}"),
            ServeError::IdleTimeout { after, at } => write!(
                f,
                "{at}: no whole frame arrived for {after:?}, the idle timeout; a publisher sends \
                 a frame every interval, even an empty one (rule 6)"
            ),
            ServeError::FrameTimeout { after, at, have } => write!(
                f,
                "{at}: the frame started arriving and was not whole within {after:?}, the frame \
                 timeout ({have} byte(s) of it arrived), or its bytes came too slowly for an \
                 agent's (under 1 KiB a second past 10 s)"
            ),
            ServeError::Shutdown { at, cut: 0 } => {
                write!(
                    f,
                    "{at}: the server shut down; everything that arrived was applied"
                )
            }
            ServeError::Shutdown { at, cut } => write!(
                f,
                "{at}: the server shut down with {cut} byte(s) of this frame arrived and the \
                 rest not; everything before it was applied"
            ),
            ServeError::NotAllowed(why) => write!(f, "not allowed to connect: {why}"),
            ServeError::Tls(e) => write!(f, "refused at the TLS handshake: {e}"),
            ServeError::HandshakeTimeout { after } => write!(
                f,
                "no Handshake opened a source within {after:?} of the connection, the handshake \
                 timeout (a TLS handshake included)"
            ),
            ServeError::ProxyHeader(e) => write!(f, "refused: {e}"),
            ServeError::Refused(why) => write!(f, "refused: {why}"),
            ServeError::Evicted => f.write_str(
                "closed to admit a newer connection, a cap being reached: of the connections \
                 that could go, this gave least (it had opened no source, or its sources had \
                 delivered nothing, within its grace)",
            ),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Read(e) => Some(e),
            ServeError::Subscribe(_, e) => Some(e),
            ServeError::Tls(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS connection the budget refuses ends "over the memory budget",
    /// as a plaintext one does, not as a transport that failed.
    #[test]
    fn the_budget_refusing_tls_records_is_the_budget() {
        let refused = std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            "the memory budget is full: no room for the TLS records it sent",
        );
        let ended = ServeError::Read(ReadError::from(refused));
        assert_eq!(ended.reason(), "over the memory budget");
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(
            ServeError::Read(ReadError::from(reset)).reason(),
            "failed in transport"
        );
    }
}
