//! [`ServerConfig`]: what a [`Server`](super::Server)'s connections may
//! cost, and the [`Limits`] each connection's session runs within.

use std::path::PathBuf;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::time::Duration;

use dendro_wire_core::FrameDecoder;

use super::report::Peer;
use crate::receive::proxy::Cidr;
use crate::receive::session::Limits;

/// How a [`Server`](super::Server) bounds what its connections may cost.
/// Every field has a setter of its name; the defaults are in each field's
/// doc.
///
/// ```
/// use std::time::Duration;
/// use dendro_wire_std::receive::ServerConfig;
///
/// let config = ServerConfig::default()
///     .max_memory(64 << 20)
///     .idle_timeout(Duration::from_secs(120))
///     .record("captures".into());
/// assert_eq!(config.max_memory, 64 << 20);
/// assert_eq!(config.record.as_deref(), Some("captures".as_ref()));
/// assert_eq!(config.max_connections, 10_000, "the rest as they default");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Connections served at once (default 10,000). One more is admitted
    /// in place of the connection that gives least: one yet to open a
    /// source that may go (as [`max_unopened_connections`](Self::max_unopened_connections)
    /// says); else one with a source open that has delivered nothing (no
    /// rows, no segment) for longest, once that is the
    /// [`eviction_grace`](Self::eviction_grace) or more; else one yet to
    /// open a source, within its grace, from the address that holds the
    /// most of them, if it holds two more than the newcomer's. Else it is
    /// closed as soon as it is accepted, and counted.
    pub max_connections: usize,
    /// Of those, connections that have not yet opened a source (sent a
    /// valid `Handshake`; default 1,000). When either cap is reached, one
    /// such connection is closed to admit a new one, so peers that never
    /// open a source cannot hold the door shut: the oldest whose first
    /// whole frame opened no source (an honest publisher's first is its
    /// `Handshake`), else the oldest once it has had its
    /// [`eviction_grace`](Self::eviction_grace). While every such
    /// connection is within it and has sent nothing whole (a fleet
    /// reconnecting at once, its handshakes not yet read), a new one is
    /// admitted past this cap, up to `max_connections`.
    pub max_unopened_connections: usize,
    /// How long a new connection has to open a source, and one with a
    /// source to deliver rows (at first, from its open), before it may be
    /// closed to make room for another (default 2 s; keep it above the
    /// agents' interval if the table may fill): an honest agent
    /// sends its handshake at once, and a collector busy with thousands
    /// reconnecting may take a while to read it. It is decided by how long
    /// a connection has had, never by arrival order alone: so peers that
    /// never open a source hold at most the cap, plus those accepted within
    /// the grace.
    pub eviction_grace: Duration,
    /// Connections served at once from one remote address (TCP; default
    /// 256). One more from it is admitted in place of that address's
    /// connection that gives least: one whose first frame opened nothing;
    /// else one yet to open a source that has had its
    /// [`eviction_grace`](Self::eviction_grace); else one whose sources
    /// delivered nothing for the grace or longer, the stalest. If there is
    /// none, it is closed as soon as it is accepted. So the cap is never
    /// turned on the address's own agent.
    pub max_connections_per_peer: usize,
    /// End a connection that has not opened a source this long after it
    /// was accepted, its TLS handshake included (default 5 s).
    pub handshake_timeout: Duration,
    /// Bytes that every connection may hold together (default 256 MiB): its
    /// receive buffer, an estimate of its state beside it (4 KiB), and under
    /// TLS rustls's state (5 KiB) and the records it holds, as it holds them
    /// (4 KiB from its first read; a record not yet whole, up to 18 KiB,
    /// and a handshake's, up to 64 KiB). Idle, a connection costs
    /// [`idle_connection_cost`](Self::idle_connection_cost). A frame that would take them past it, or past a connection's
    /// share ([`MemoryBudget`](crate::MemoryBudget)), ends its connection;
    /// the others go on. A connection accepted while it is full is closed
    /// at once.
    pub max_memory: usize,
    /// End a connection that has sent no whole frame for this long
    /// (default 60 s). A
    /// publisher sends one every interval, even an empty one (rule 6), so
    /// set it well above the slowest publisher's interval.
    pub idle_timeout: Duration,
    /// End a connection whose frame has started arriving and is not whole
    /// this long after (default 60 s); and before that, one whose frame
    /// arrives slower than an agent's: 10 s, then a millisecond more for
    /// each of its bytes that arrived (1 KiB a second on average).
    pub frame_timeout: Duration,
    /// The largest frame accepted, in bytes (default and most: the
    /// protocol's 64 MiB).
    pub max_frame_bytes: u32,
    /// The most sources one connection may open (default 256).
    pub max_sources: usize,
    /// Capture each connection's bytes, as they arrive, in this directory:
    /// `connection-N.dwr`, `N` the first number whose name is free, made
    /// once the connection's first whole frame has arrived (one that sends
    /// none leaves no file). Default: none.
    pub record: Option<PathBuf>,
    /// The most bytes the capture directory may hold, its files at start
    /// counted (1 GiB unless set): past it, captures stop (each with a
    /// line) and connections are served on.
    pub record_max: u64,
    /// The most bytes one connection's capture may hold (64 MiB unless
    /// set); past it, its recording stops with a line and it is served on.
    pub record_max_per_connection: u64,
    /// Worker threads serving connections (at least 1; default: the
    /// machine's available parallelism). [`Serving`](super::Serving) runs on
    /// the caller's runtime and ignores it.
    pub threads: usize,
    /// TLS for every TCP connection: a connection whose client certificate
    /// does not chain to the configured CA is ended at the handshake
    /// ([`tls::server_config`](crate::tls::server_config)). Default: none,
    /// plaintext.
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The label every source a TLS client opens or updates must carry,
    /// with its certificate's identity as the value
    /// ([`SinkSubscriber::bind_identity`](crate::SinkSubscriber::bind_identity)).
    /// A client whose certificate proves no identity is then refused at
    /// the handshake. Default: none.
    #[cfg(feature = "tls")]
    pub bind_identity: Option<String>,
    /// Where a client's identity comes from: its certificate's DNS names
    /// unless asked otherwise ([`tls::identity`](crate::tls::identity)).
    #[cfg(feature = "tls")]
    pub identity_from: crate::tls::IdentityFrom,
    /// On a Unix socket, the user ids allowed to connect, checked against the
    /// peer's credentials; `None` allows whoever the socket's permissions
    /// let in (the default).
    #[cfg(unix)]
    pub allow_uids: Option<Vec<u32>>,
    /// Load balancers: a TCP connection from these networks must begin with
    /// a PROXY protocol header (version 1 or 2), and the client it names is
    /// the connection's peer everywhere (its address's share, the logs,
    /// [`ConnectionInfo::peer`](super::ConnectionInfo::peer)). A header is
    /// read within the handshake timeout and before a TLS handshake; one
    /// missing, malformed, oversized or slow ends the connection, and one
    /// from any other address is refused, never trusted. Default: none.
    pub proxy_protocol_from: Vec<Cidr>,
    /// The kernel's receive buffer for each TCP connection, in bytes
    /// (`SO_RCVBUF`; Linux doubles it for its own bookkeeping). Default:
    /// the system's, which grows with a connection's rate. While a sink's
    /// backlog is full and a connection is not read, what its publisher
    /// sends waits here, and TCP pushes back only once it is full: for a
    /// small agent sending a frame a second, the default holds a minute or
    /// more of its rows, out of sight of every count. A fleet of small
    /// agents wants it small (16 KiB: a few seconds of theirs); a few fast
    /// publishers far away want the default, as a small buffer caps each
    /// connection's rate at about the buffer a round trip.
    pub receive_buffer: Option<usize>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        // A connection's bounds are a lone session's unless configured.
        let session = Limits::default();
        ServerConfig {
            max_connections: 10_000,
            max_unopened_connections: 1_000,
            eviction_grace: Duration::from_secs(2),
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
            proxy_protocol_from: Vec::new(),
            receive_buffer: None,
        }
    }
}

/// For each field, a setter of the same name that takes its value (an
/// optional one, the value inside): `ServerConfig::default().max_memory(1
/// << 30).record(dir)`. The struct grows without breaking its users, who
/// start from [`Default`] either way.
macro_rules! setters {
    ($($(#[$attr:meta])* $field:ident: $ty:ty),* ; $($(#[$oattr:meta])* $ofield:ident: $oty:ty),*) => {
        impl ServerConfig {
            $(
                $(#[$attr])*
                #[doc = concat!("Set [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                pub fn $field(mut self, $field: $ty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
            $(
                $(#[$oattr])*
                #[doc = concat!("Set [`", stringify!($ofield), "`](Self::", stringify!($ofield), ").")]
                pub fn $ofield(mut self, $ofield: $oty) -> Self {
                    self.$ofield = Some($ofield);
                    self
                }
            )*
        }
    };
}

setters! {
    max_connections: usize,
    max_unopened_connections: usize,
    eviction_grace: Duration,
    max_connections_per_peer: usize,
    handshake_timeout: Duration,
    max_memory: usize,
    idle_timeout: Duration,
    frame_timeout: Duration,
    max_frame_bytes: u32,
    max_sources: usize,
    record_max: u64,
    record_max_per_connection: u64,
    threads: usize,
    proxy_protocol_from: Vec<Cidr>,
    #[cfg(feature = "tls")]
    identity_from: crate::tls::IdentityFrom;
    record: PathBuf,
    #[cfg(feature = "tls")]
    tls: Arc<rustls::ServerConfig>,
    #[cfg(feature = "tls")]
    bind_identity: String,
    receive_buffer: usize,
    #[cfg(unix)]
    allow_uids: Vec<u32>
}

/// What a connection is taken to hold beside its receive buffer: its task,
/// its socket's state and its subscriber's (sources that open charge their
/// buffers as they grow). the book's "A collector under attack" gives what
/// a release listener was measured to hold per connection beside it.
pub(super) const CONNECTION_STATE: usize = 4 << 10;

/// What a TLS connection holds more from its accept on: rustls's state
/// (5 KiB: measured a little over 4) and the room of its records buffer for a first read (4 KiB).
/// The records it then holds (a record not yet whole, plaintext not yet
/// read, a handshake being joined) and the client's certificate chain are
/// charged as it holds them (`tls_charge.rs`). the book's "Running a fleet", its "Sizing", gives
/// what a release listener was measured to hold.
#[cfg(feature = "tls")]
pub(super) const TLS_STATE: usize = (5 << 10) + super::tls_charge::READ_SIZE;

impl ServerConfig {
    /// Whether a connection from `peer` must begin with a PROXY header.
    pub(super) fn expects_proxy_header(&self, peer: &Peer) -> bool {
        match peer {
            Peer::Tcp(addr) => self
                .proxy_protocol_from
                .iter()
                .any(|c| c.contains(addr.ip())),
            _ => false,
        }
    }

    /// What one connection is charged while it has no frame in hand: its
    /// state, its 4 KiB receive buffer, and under TLS rustls's state and
    /// records buffer. `max_memory` holds `max_connections` connections
    /// while this times `max_connections` fits in it (at the defaults,
    /// 8 KiB, or 17 KiB under TLS: 166 MiB for 10,000, within the 256 MiB,
    /// and within the 192 MiB left beside an archive's quarter).
    ///
    /// ```
    /// use dendro_wire_std::receive::ServerConfig;
    ///
    /// let config = ServerConfig::default();
    /// assert_eq!(config.idle_connection_cost(), 8 << 10);
    /// assert!(config.max_connections * config.idle_connection_cost() <= config.max_memory);
    /// ```
    pub fn idle_connection_cost(&self) -> usize {
        self.connection_state() + crate::cut::START
    }

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
