//! Who may write into the archive: TLS 1.3 with client certificates, on both
//! ends (feature `tls`).
//!
//! Frames carry no credentials ([protocol §6](dendro_wire_core::protocol): "whatever decides who may hand it
//! anything is the transport's"), so the transport decides. A collector
//! ([`Server`](crate::receive::Server) with
//! [`ServerConfig::tls`](crate::receive::ServerConfig)) lets past its TLS
//! handshake only a client whose certificate chains to the client CA it was
//! given; the client's [`identity`] (its certificate's first DNS name; its
//! common name only if asked for, [`IdentityFrom`]) can then be bound to a label of every source it opens,
//! so an authenticated agent cannot write as another host
//! ([`SinkSubscriber::bind_identity`](crate::SinkSubscriber::bind_identity)).
//!
//! Only TLS 1.3 is spoken, with rustls and its `ring` provider. Sessions are
//! never resumed: every connection presents and has checked its certificate,
//! so an expired one is refused the moment it expires.
//!
//! ```no_run
//! use std::path::Path;
//! use dendro_wire_std::tls;
//!
//! // The collector: its certificate and key, and the CA that signs agents'.
//! let server = tls::server_config(
//!     tls::load_certificates(Path::new("collector.pem"))?,
//!     tls::load_private_key(Path::new("collector.key"))?,
//!     tls::load_certificates(Path::new("agents-ca.pem"))?,
//! )?;
//! // An agent: the CA that signs the collector's, its own certificate and key.
//! let agent = tls::client_config(
//!     tls::load_certificates(Path::new("collector-ca.pem"))?,
//!     tls::load_certificates(Path::new("agent.pem"))?,
//!     tls::load_private_key(Path::new("agent.key"))?,
//! )?;
//! # Ok::<(), tls::TlsError>(())
//! ```

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The rustls this module is built on, for callers who configure more.
pub use rustls;
use rustls::client::ClientSessionStore;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{StoresServerSessions, WebPkiClientVerifier};
use rustls::{ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::ServerName;
pub use rustls_pki_types::{CertificateDer, PrivateKeyDer};

mod identity;

pub(crate) use identity::plain_refusal;
use identity::IdentityVerifier;
pub use identity::{identity, IdentityFrom, NoIdentity};

use crate::send::{
    closed_by_subscriber_ending, connect_tcp, drain_checked, DrainOptions, FrameQueue,
    TransportStats,
};

/// Why TLS could not be set up: a file that could not be read or holds no
/// usable certificate or key, or a configuration rustls refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read or parsed.
    Pem {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        error: String,
    },
    /// A PEM file holds no certificate.
    NoCertificate(PathBuf),
    /// rustls refused the certificates or the key.
    Rustls(String),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Pem { path, error } => write!(f, "{}: {error}", path.display()),
            TlsError::NoCertificate(path) => write!(
                f,
                "{} holds no certificate (a PEM file with BEGIN CERTIFICATE blocks)",
                path.display()
            ),
            TlsError::Rustls(e) => write!(f, "TLS cannot be set up: {e}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// Every certificate in a PEM file, in order (a chain: the leaf first).
pub fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = |error: rustls_pki_types::pem::Error| TlsError::Pem {
        path: path.to_path_buf(),
        error: error.to_string(),
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(path.to_path_buf()));
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn load_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::Pem {
        path: path.to_path_buf(),
        error: format!("no private key: {e}"),
    })
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(certs: Vec<CertificateDer<'static>>) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| TlsError::Rustls(format!("a CA certificate: {e}")))?;
    }
    Ok(roots)
}

/// A collector's TLS: TLS 1.3 only, its certificate chain and key, and only
/// clients whose certificate chains to one of `client_cas`.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_cas: Vec<CertificateDer<'static>>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    build_server_config(chain, key, client_cas, None)
}

/// [`server_config`] for a collector that binds a label to each client's
/// identity ([`ServerConfig::bind_identity`](crate::receive::ServerConfig)):
/// a client whose certificate proves no [`identity`] (as `from` allows) is
/// refused during the handshake, so it hears an alert (`bad_certificate`)
/// rather than a connection closed after it.
pub fn server_config_binding(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_cas: Vec<CertificateDer<'static>>,
    from: IdentityFrom,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    build_server_config(chain, key, client_cas, Some(from))
}

fn build_server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_cas: Vec<CertificateDer<'static>>,
    identity_from: Option<IdentityFrom>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let rustls = |e: rustls::Error| TlsError::Rustls(e.to_string());
    let webpki =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots(client_cas)?), provider())
            .build()
            .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let verifier: Arc<dyn ClientCertVerifier> = match identity_from {
        Some(from) => Arc::new(IdentityVerifier { webpki, from }),
        None => webpki,
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(rustls)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(rustls)?;
    config.session_storage = Arc::new(NeverResume);
    Ok(Arc::new(config))
}

/// An agent's TLS: TLS 1.3 only, a collector whose certificate chains to one
/// of `server_cas`, and the agent's own chain and key to present.
pub fn client_config(
    server_cas: Vec<CertificateDer<'static>>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<TlsClient, TlsError> {
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Rustls(e.to_string()))?
        .with_root_certificates(roots(server_cas)?)
        .with_client_auth_cert(chain, key)
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let tickets = Arc::new(TicketSignal::default());
    config.resumption = rustls::client::Resumption::store(tickets.clone());
    Ok(TlsClient {
        config: Arc::new(config),
        tickets,
    })
}

/// A collector's session store that lets it send TLS 1.3 session tickets
/// (which tell a client its certificate was accepted) and never resumes one:
/// every connection shows and has checked its certificate.
#[derive(Debug)]
struct NeverResume;

impl StoresServerSessions for NeverResume {
    fn put(&self, _: Vec<u8>, _: Vec<u8>) -> bool {
        true
    }
    fn get(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn take(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn can_cache(&self) -> bool {
        true
    }
}

/// A client's session store that never offers a session to resume, and
/// counts the tickets a collector sends: a ticket comes only after the
/// collector has accepted the client's certificate.
#[derive(Debug, Default)]
struct TicketSignal {
    tickets: AtomicU64,
}

impl TicketSignal {
    fn count(&self) -> u64 {
        self.tickets.load(Ordering::Relaxed)
    }
}

impl ClientSessionStore for TicketSignal {
    fn set_kx_hint(&self, _: ServerName<'static>, _: rustls::NamedGroup) {}
    fn kx_hint(&self, _: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        None
    }
    fn set_tls12_session(
        &self,
        _: ServerName<'static>,
        _: rustls::client::Tls12ClientSessionValue,
    ) {
    }
    fn tls12_session(&self, _: &ServerName<'_>) -> Option<rustls::client::Tls12ClientSessionValue> {
        None
    }
    fn remove_tls12_session(&self, _: &ServerName<'static>) {}
    fn insert_tls13_ticket(
        &self,
        _: ServerName<'static>,
        _: rustls::client::Tls13ClientSessionValue,
    ) {
        self.tickets.fetch_add(1, Ordering::Relaxed);
    }
    fn take_tls13_ticket(
        &self,
        _: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        None
    }
}

/// A TLS connection to a collector, as an agent writes to it. Dropping it
/// ends the TLS session with a `close_notify`, so the collector can tell a
/// finished stream from a cut connection.
#[derive(Debug)]
pub struct TlsStream {
    inner: StreamOwned<ClientConnection, TcpStream>,
}

impl io::Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl TlsStream {
    /// At a clean end: whether the collector had closed the connection
    /// ([`closed_by_subscriber`](crate::send::closed_by_subscriber)). Its watch for an early end comes first;
    /// then the TLS session is ended with a `close_notify`, and the
    /// collector's answer (its own `close_notify` and FIN) is the orderly
    /// end of a stream it served, not a close by the collector.
    fn closed_by_subscriber(&mut self) -> Option<io::Error> {
        let StreamOwned { conn, sock } = &mut self.inner;
        let sock = &*sock;
        closed_by_subscriber_ending(sock, || close_notify(conn, sock))
    }
}

/// End the TLS session with a `close_notify`: best effort, and never stuck
/// behind a collector that stopped reading. A second call sends nothing.
fn close_notify(conn: &mut ClientConnection, mut sock: &TcpStream) {
    conn.send_close_notify();
    let _ = sock.set_write_timeout(Some(Duration::from_secs(1)));
    while conn.wants_write() {
        if conn.write_tls(&mut sock).is_err() {
            break;
        }
    }
}

impl Drop for TlsStream {
    fn drop(&mut self) {
        let StreamOwned { conn, sock } = &mut self.inner;
        close_notify(conn, sock);
    }
}

/// How long a client waits, after its handshake, for the collector to say
/// whether it accepted the client's certificate.
const ACCEPTANCE: Duration = Duration::from_secs(5);

/// An agent's side of TLS, from [`client_config`]: what it connects with.
#[derive(Clone, Debug)]
pub struct TlsClient {
    config: Arc<rustls::ClientConfig>,
    tickets: Arc<TicketSignal>,
}

impl TlsClient {
    /// The rustls configuration, for a caller with a transport of its own
    /// (tokio-rustls's `TlsConnector`, say).
    pub fn config(&self) -> &Arc<rustls::ClientConfig> {
        &self.config
    }

    /// Connect to a collector at `addr` over TLS, its certificate checked
    /// for `server_name`, and wait until it has accepted this client's
    /// certificate.
    ///
    /// In TLS 1.3 a client's handshake ends before the server has checked
    /// the client's certificate, so a refusal would otherwise surface later
    /// as a broken pipe; this waits for the collector's verdict (its session
    /// tickets, or the alert that says why it refused) and fails with the
    /// reason.
    pub fn connect(&self, addr: SocketAddr, server_name: &str) -> io::Result<TlsStream> {
        let failed = |what: &str, e: &dyn fmt::Display| {
            io::Error::other(format!("TLS with {server_name} at {addr}: {what}: {e}"))
        };
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|e| failed("not a server name", &e))?;
        let mut tcp = connect_tcp(addr)?;
        let mut tls = ClientConnection::new(self.config.clone(), name)
            .map_err(|e| failed("cannot start", &e))?;
        let tickets_before = self.tickets.count();
        while tls.is_handshaking() || tls.wants_write() {
            tls.complete_io(&mut tcp)
                .map_err(|e| failed("the handshake failed", &e))?;
        }
        let deadline = Instant::now() + ACCEPTANCE;
        while self.tickets.count() == tickets_before {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break; // a collector that sends no tickets: go on, and see
            }
            tcp.set_read_timeout(Some(left))?;
            match tls.read_tls(&mut tcp) {
                Ok(0) => return Err(failed("refused", &"the collector closed the connection")),
                Ok(_) => {
                    tls.process_new_packets()
                        .map_err(|e| failed("refused by the collector", &e))?;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break
                }
                Err(e) => return Err(failed("refused", &e)),
            }
        }
        tcp.set_read_timeout(None)?;
        Ok(TlsStream {
            inner: StreamOwned::new(tls, tcp),
        })
    }
}

/// Start a thread draining `queue` to a collector at `addr` over TLS, its
/// certificate checked for `server_name`, as `options` say (see
/// [`drain_queue`](crate::send::drain_queue)); a refused certificate is logged, with the collector's
/// reason, like any failed connect.
pub fn publish_tls(
    queue: FrameQueue,
    addr: SocketAddr,
    server_name: String,
    client: TlsClient,
    options: DrainOptions,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        let connect = || client.connect(addr, &server_name);
        drain_checked(&queue, connect, options, TlsStream::closed_by_subscriber)
    })
}
