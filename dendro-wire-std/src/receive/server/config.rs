//! [`ServerConfig`]: what a [`Server`](super::Server)'s connections may
//! cost, and the [`Limits`] each connection's session runs within.

use std::path::PathBuf;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::time::Duration;

use dendro_wire_core::FrameDecoder;

use crate::receive::session::Limits;

/// How a [`Server`](super::Server) bounds what its connections may cost.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Connections served at once. One more is admitted in place of the
    /// oldest connection yet to open a source, or, if every one has opened
    /// one, closed as soon as it is accepted, and counted.
    pub max_connections: usize,
    /// Of those, connections that have not yet opened a source (sent a
    /// valid `Handshake`). When either cap is reached, the oldest such
    /// connection is closed to admit a new one, so peers that never open a
    /// source cannot hold the door shut.
    pub max_unopened_connections: usize,
    /// Connections served at once from one remote address (TCP). One more
    /// from it is admitted in place of the oldest of that address's
    /// connections yet to open a source, or, if each has opened one, closed
    /// as soon as it is accepted.
    pub max_connections_per_peer: usize,
    /// End a connection that has not opened a source this long after it
    /// was accepted, its TLS handshake included.
    pub handshake_timeout: Duration,
    /// Bytes that every connection may hold together: its receive buffer,
    /// and an estimate of its state beside it (4 KiB; 32 KiB more under
    /// TLS). A frame that would take them past it, or past a connection's
    /// share ([`MemoryBudget`](crate::MemoryBudget)), ends its connection;
    /// the others go on. A connection accepted while it is full is closed
    /// at once.
    pub max_memory: usize,
    /// End a connection that has sent no whole frame for this long. A
    /// publisher sends one every interval, even an empty one (rule 6), so
    /// set it well above the slowest publisher's interval.
    pub idle_timeout: Duration,
    /// End a connection whose frame has started arriving and is not whole
    /// this long after.
    pub frame_timeout: Duration,
    /// The largest frame accepted (at most the protocol's 64 MiB).
    pub max_frame_bytes: u32,
    /// The most sources one connection may open.
    pub max_sources: usize,
    /// Capture each connection's bytes, as they arrive, in this directory:
    /// `connection-N.dwr`, `N` the first number whose name is free, made
    /// once the connection's first whole frame has arrived (one that sends
    /// none leaves no file).
    pub record: Option<PathBuf>,
    /// The most bytes the capture directory may hold, its files at start
    /// counted (1 GiB unless set): past it, captures stop (each with a
    /// line) and connections are served on.
    pub record_max: u64,
    /// The most bytes one connection's capture may hold (64 MiB unless
    /// set); past it, its recording stops with a line and it is served on.
    pub record_max_per_connection: u64,
    /// Worker threads serving connections (at least 1).
    pub threads: usize,
    /// TLS for every TCP connection: a connection whose client certificate
    /// does not chain to the configured CA is ended at the handshake
    /// ([`tls::server_config`](crate::tls::server_config)).
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The label every source a TLS client opens or updates must carry,
    /// with its certificate's identity as the value
    /// ([`SinkSubscriber::bind_identity`](crate::SinkSubscriber::bind_identity)).
    /// A client whose certificate proves no identity is then refused at
    /// the handshake.
    #[cfg(feature = "tls")]
    pub bind_identity: Option<String>,
    /// Where a client's identity comes from: its certificate's DNS names
    /// unless asked otherwise ([`tls::identity`](crate::tls::identity)).
    #[cfg(feature = "tls")]
    pub identity_from: crate::tls::IdentityFrom,
    /// On a Unix socket, the user ids allowed to connect, checked against the
    /// peer's credentials; `None` allows whoever the socket's permissions
    /// let in.
    #[cfg(unix)]
    pub allow_uids: Option<Vec<u32>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        // A connection's bounds are a lone session's unless configured.
        let session = Limits::default();
        ServerConfig {
            max_connections: 10_000,
            max_unopened_connections: 1_000,
            max_connections_per_peer: 256,
            handshake_timeout: Duration::from_secs(5),
            max_memory: 256 << 20,
            idle_timeout: session.idle_timeout,
            frame_timeout: session.frame_timeout,
            max_frame_bytes: session.decoder.max_frame_bytes(),
            max_sources: 256,
            record: None,
            record_max: 1 << 30,
            record_max_per_connection: 64 << 20,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "tls")]
            bind_identity: None,
            #[cfg(feature = "tls")]
            identity_from: crate::tls::IdentityFrom::default(),
            #[cfg(unix)]
            allow_uids: None,
        }
    }
}

/// What a connection is taken to hold beside its receive buffer: its task,
/// its socket's state and its subscriber's (sources that open charge their
/// buffers as they grow). Measured: a release listener holding 3,000
/// connections that sent their preamble grew 7.6 KiB each, its 4 KiB start
/// buffer included.
pub(super) const CONNECTION_STATE: usize = 4 << 10;

/// What a TLS connection holds more: rustls's buffers for a whole record
/// (16 KiB) received and one decrypted, and the handshake's state. Measured:
/// 3,000 connections stalled inside their ClientHello grew it 12.0 KiB
/// each; a finished handshake with full records holds more.
#[cfg(feature = "tls")]
pub(super) const TLS_STATE: usize = 32 << 10;

impl ServerConfig {
    /// What one connection is charged to the memory budget at accept.
    pub(super) fn connection_state(&self) -> usize {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return CONNECTION_STATE + TLS_STATE;
        }
        CONNECTION_STATE
    }
}

/// One connection's session runs within the configured frame limit and
/// timeouts.
impl From<&ServerConfig> for Limits {
    fn from(config: &ServerConfig) -> Self {
        Limits {
            decoder: FrameDecoder::new().with_max_frame_bytes(config.max_frame_bytes),
            idle_timeout: config.idle_timeout,
            frame_timeout: config.frame_timeout,
        }
    }
}
