//! What a [`Server`](super::Server) says about its connections: who each
//! is ([`ConnectionInfo`], [`Peer`]), what a live one has done so far
//! ([`LiveConnection`]), how one ended ([`Ended`]), and what the server has
//! done ([`ServerStats`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use dendro_wire_core::Tally;

use crate::receive::error::ServeError;

/// Who a connection is, as its sink is made and its end reported.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// The connection's number, from 0, in the order they were accepted.
    pub id: u64,
    /// Who connected.
    pub peer: Peer,
    /// The identity its TLS client certificate proves, if it has one.
    pub identity: Option<String>,
    /// Where its bytes are captured: known once its first whole frame has
    /// arrived, so never when its sink is made, and `None` for a connection
    /// that sent none or was not recorded.
    pub capture: Option<PathBuf>,
}

/// Who is at the other end of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Peer {
    /// A TCP peer's address.
    Tcp(SocketAddr),
    /// A peer on a Unix socket, with the credentials the system gives for it.
    Unix {
        /// Its user id.
        uid: Option<u32>,
        /// Its process id.
        pid: Option<i32>,
    },
    /// A TCP peer behind a load balancer: the client its PROXY header
    /// names, the peer every cap, log line and count goes by.
    Proxied {
        /// The client the balancer forwards for.
        client: SocketAddr,
        /// The balancer's own address, the connection's other end.
        balancer: SocketAddr,
    },
}

impl Peer {
    /// The address that per-address caps count the connection under: a TCP
    /// peer's, or the client a balancer forwards for; `None` on a Unix
    /// socket.
    pub fn address(&self) -> Option<IpAddr> {
        match self {
            Peer::Tcp(addr) => Some(addr.ip()),
            Peer::Proxied { client, .. } => Some(client.ip()),
            Peer::Unix { .. } => None,
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Tcp(addr) => write!(f, "{addr}"),
            Peer::Proxied { client, balancer } => write!(f, "{client} (via {balancer})"),
            Peer::Unix { uid, pid } => {
                f.write_str("a Unix socket")?;
                if let Some(uid) = uid {
                    write!(f, " (uid {uid}")?;
                    if let Some(pid) = pid {
                        write!(f, ", pid {pid}")?;
                    }
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

/// A live connection's counts, as of its last read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveConnection {
    /// The connection's number.
    pub id: u64,
    /// Who connected.
    pub peer: Peer,
    /// Stream bytes received.
    pub bytes: u64,
    /// What its frames did, every frame read counted (unknown kinds
    /// included).
    pub tally: Tally,
}

/// A connection that ended: what it did, and why it ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct Ended {
    /// Who it was.
    pub info: ConnectionInfo,
    /// Stream bytes received.
    pub bytes: u64,
    /// What its frames did, every frame read counted (unknown kinds
    /// included).
    pub tally: Tally,
    /// Of the tally's segments, those its sink already held.
    pub segments_held: u64,
    /// How long it was served.
    pub duration: Duration,
    /// `Ok` for a clean end at a frame boundary; else why it ended.
    pub result: Result<(), ServeError>,
}

impl std::fmt::Display for Ended {
    /// One line: the peer, frames, rows applied and skipped, gaps, and why
    /// it ended.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.tally;
        write!(
            f,
            "connection {} from {}{}: {} frames, {} bytes in {:.1} s; sources {}, rows {} applied \
             {} skipped, index entries {}, segments {}, gaps {} ({} frames lost); ",
            self.info.id,
            self.info.peer,
            match &self.info.identity {
                // A certificate's name is the peer's to choose.
                Some(identity) => format!(" ({})", crate::Escaped::bare(identity)),
                None => String::new(),
            },
            t.frames,
            self.bytes,
            self.duration.as_secs_f64(),
            t.sources,
            t.rows_applied,
            t.rows_skipped,
            t.index_entries,
            // The segments it inserted, as this line has always said.
            t.segments - self.segments_held,
            t.gaps,
            t.frames_lost,
        )?;
        if t.seq_regressions > 0 {
            write!(f, "seq regressions {}; ", t.seq_regressions)?;
        }
        match &self.result {
            Ok(()) => f.write_str("ended cleanly")?,
            Err(e) => write!(f, "ended: {e}")?,
        }
        if let Some(capture) = &self.info.capture {
            write!(f, "; captured in {}", capture.display())?;
        }
        Ok(())
    }
}

/// What a server has done: [`Server::stats`](super::Server::stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Connections closed at once: `max_connections` were live and none had
    /// yet to open a source, or `max_connections_per_peer` from its
    /// address, or the memory budget was full.
    pub refused: u64,
    /// Connections that had not opened a source, closed to admit newer
    /// ones.
    pub evicted: u64,
    /// Accepts that failed (out of file descriptors, say).
    pub accept_errors: u64,
    /// Connections live now.
    pub live: u64,
    /// Connections that ended.
    pub ended: u64,
    /// Bytes the connections' buffers hold now.
    pub memory_in_use: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_cannot_forge_a_line() {
        let ended = Ended {
            info: ConnectionInfo {
                id: 7,
                peer: Peer::Tcp(([127, 0, 0, 1], 4711).into()),
                identity: Some(
                    "db-01): ended cleanly\nconnection 99 from 10.9.9.9:4711 (db-01\0".into(),
                ),
                capture: None,
            },
            bytes: 0,
            tally: Tally::default(),
            segments_held: 0,
            duration: Duration::ZERO,
            result: Ok(()),
        };
        let line = ended.to_string();
        assert!(!line.contains(['\n', '\0']), "{line}");
        assert!(
            line.starts_with(concat!(
                r"connection 7 from 127.0.0.1:4711 (db-01): ended cleanly\nconnection 99 from ",
                r"10.9.9.9:4711 (db-01\0): 0 frames"
            )),
            "{line}"
        );
    }
}
