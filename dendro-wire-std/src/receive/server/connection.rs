//! One connection, from the peer's check to its session's end: a Unix
//! peer's user id, the TLS handshake and the identity it proves, the
//! capture (made at the first whole frame), then the [`Session`] and the [`Ended`] that says how it went.

#[cfg(feature = "tls")]
use std::io;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use super::proxied::{read_header, Rewound};
use super::report::{ConnectionInfo, Ended, Peer};
use super::shared::{Live, ServerShared};
#[cfg(feature = "tls")]
use super::tls_charge::{Charged, Metered, READ_SIZE};
use crate::read_error::Position;
use crate::receive::error::ServeError;
use crate::receive::proxy::ProxiedFrom;
use crate::receive::session::{after, Admission, Limits, Session, SessionCounts};
use crate::receive::sink::Sink;
use crate::receive::subscriber::{SinkSubscriber, SubscribeError};

/// A stream a connection is served over: TCP, a Unix socket, or TLS over
/// TCP.
pub(super) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Whether the peer may be served at all, before a byte of its stream is
/// read: through a load balancer, its PROXY header (which names the peer);
/// a Unix peer's user id; and a TLS client's certificate (the handshake,
/// bounded by the idle timeout). The stream to read, and the identity the
/// certificate proves.
async fn check_peer(
    mut stream: Box<dyn Io>,
    info: &mut ConnectionInfo,
    proxied: bool,
    shared: &ServerShared,
) -> Result<(Box<dyn Io>, Option<String>), ServeError> {
    let config = &shared.config;
    if let (true, Peer::Tcp(balancer)) = (proxied, info.peer.clone()) {
        let (from, rest) = read_header(&mut stream).await?;
        if let ProxiedFrom::Client(client) = from {
            info.peer = Peer::Proxied { client, balancer };
        }
        // The balancer's own connection is counted under its address.
        shared
            .proxied(info.id, &info.peer)
            .map_err(ServeError::Refused)?;
        stream = Box::new(Rewound::new(rest, stream));
    }
    #[cfg(unix)]
    if let (Peer::Unix { uid, .. }, Some(allowed)) = (&info.peer, &config.allow_uids) {
        if !uid.is_some_and(|uid| allowed.contains(&uid)) {
            return Err(ServeError::NotAllowed(match uid {
                Some(uid) => format!("user id {uid} is not one of those allowed {allowed:?}"),
                None => "the peer's user id is unknown".into(),
            }));
        }
    }
    #[cfg(feature = "tls")]
    if let (Peer::Tcp(_) | Peer::Proxied { .. }, Some(tls)) = (&info.peer, &config.tls) {
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
        // What rustls holds of the records it reads is charged as it
        // holds them; what every TLS connection holds, at accept.
        let held = shared.budget.hold(0).ok_or_else(|| {
            ServeError::Tls(io::Error::other("the memory budget cannot be charged"))
        })?;
        let stream = Metered::new(stream, held);
        let handshake = tokio::time::timeout(config.idle_timeout, acceptor.accept(stream));
        let mut tls = match handshake.await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => return Err(ServeError::Tls(crate::tls::plain_refusal(e))),
            Err(_) => {
                return Err(ServeError::Tls(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "not finished within {:?}, the idle timeout",
                        config.idle_timeout
                    ),
                )))
            }
        };
        let (metered, session) = tls.get_mut();
        // The server writes nothing past its handshake but a close_notify.
        session.set_buffer_limit(Some(READ_SIZE));
        let chain = session.peer_certificates().unwrap_or_default();
        metered.handshaken(chain.iter().map(|c| c.len()).sum());
        // Bound to a label, an identity must be proved: a certificate that
        // proves none is refused, never let through unbound. Unbound, an
        // unusable one is only not reported.
        let identity = match (
            crate::tls::identity(chain, config.identity_from),
            &config.bind_identity,
        ) {
            (Ok(identity), _) => Some(identity),
            (Err(e), Some(label)) => {
                return Err(ServeError::Tls(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{e}; its sources' `{label}` label is bound to one"),
                )))
            }
            (Err(_), None) => None,
        };
        return Ok((Box::new(Charged(tls)), identity));
    }
    let _ = config;
    Ok((stream, None))
}

/// Serve one accepted connection to its end: the peer checked, then its
/// session, sharing what it has done in `live`; the socket is closed when
/// this returns. Until it opens a source it is bounded by the handshake
/// timeout, and closed if told to make room.
pub(super) async fn serve_connection<S: Sink, M: Fn(&ConnectionInfo) -> S>(
    stream: Box<dyn Io>,
    mut info: ConnectionInfo,
    proxied: bool,
    shared: &ServerShared,
    live: &Live,
    make_sink: &M,
    stop: watch::Receiver<bool>,
) -> (Ended, S) {
    let started = Instant::now();
    let config = &shared.config;
    let id = info.id;
    let opened = move || shared.opened(id);
    let spoke = move || shared.spoke(id);
    let admission = Admission {
        deadline: after(started, config.handshake_timeout),
        timeout: config.handshake_timeout,
        evicted: &live.evict,
        opened: &opened,
        spoke: &spoke,
    };
    let checked = tokio::select! {
        checked = check_peer(stream, &mut info, proxied, shared) => checked,
        _ = admission.evicted.notified() => Err(ServeError::Evicted),
        _ = tokio::time::sleep_until(admission.deadline.into()) => {
            Err(ServeError::HandshakeTimeout { after: admission.timeout })
        }
    };
    if let Ok((_, identity)) = &checked {
        info.identity = identity.clone();
    }
    // A capture only for a connection that got in, made at its first
    // whole frame.
    let mut capture = match (&checked, &shared.recorder) {
        (Ok(_), Some(recorder)) => Some(recorder.capture(info.id)),
        _ => None,
    };
    let mut subscriber = SinkSubscriber::new(make_sink(&info))
        .with_source_limit(config.max_sources)
        .bound_lost_from(Instant::now());
    #[cfg(feature = "tls")]
    if let (Some(label), Some(identity)) = (&config.bind_identity, &info.identity) {
        subscriber = subscriber.bind_identity(label.clone(), identity.clone());
    }
    let (result, SessionCounts { bytes, tally, .. }) = match checked {
        Err(e) => (Err(e), SessionCounts::default()),
        Ok((mut stream, _)) => {
            let budget = Some(shared.budget.clone());
            Session::new(&mut stream, &mut subscriber, Limits::from(config), budget)
                .capture(capture.as_mut())
                .share_progress(&live.progress)
                .admit(admission)
                .stop_on(stop)
                .half_close_on_stop()
                .run()
                .await
        }
    };
    info.capture = capture.and_then(|c| c.path());
    // The session's buffer is given back by now, before the sink hears of
    // the end.
    let segments_held = subscriber.segments_held();
    let (sink, finished) = subscriber.end();
    let result = match (result, finished) {
        (Ok(()), Err(e)) => Err(ServeError::Subscribe(
            Position {
                frame: tally.frames,
                offset: bytes,
            },
            SubscribeError::Sink(e),
        )),
        (result, Err(e)) => {
            log::warn!("connection {id}: the sink failed to end the connection: {e}");
            result
        }
        (result, Ok(())) => result,
    };
    let ended = Ended {
        info,
        bytes,
        tally,
        segments_held,
        duration: started.elapsed(),
        result,
    };
    (ended, sink)
}
