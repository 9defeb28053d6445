//! [`Session`]: one stream served into its subscriber on tokio, the loop
//! every async receiver runs: a [`Server`](super::Server)'s connections and
//! [`serve_async`](super::serve_async) alike.

use std::io;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dendro_wire_core::{FrameDecoder, Tally, PREAMBLE, PREAMBLE_BYTES};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{watch, Notify};

use super::capture::Capture;
use super::error::ServeError;
use super::proxy::{looks_like_header, ProxyHeaderError};
use super::sink::Sink;
use super::subscriber::SinkSubscriber;
use crate::cut::{FrameBuffer, MemoryBudget, Next};
use crate::read_error::{ReadError, ReadErrorKind};

/// How long a session may stay quiet, and how large its frames may be.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) decoder: FrameDecoder,
    pub(crate) idle_timeout: Duration,
    pub(crate) frame_timeout: Duration,
}

impl Default for Limits {
    /// The protocol's frame limit, and a minute both to go without a whole
    /// frame and to finish one: a lone connection's bounds, and the ones a
    /// server's configuration starts from.
    fn default() -> Self {
        Limits {
            decoder: FrameDecoder::new(),
            idle_timeout: Duration::from_secs(60),
            frame_timeout: Duration::from_secs(60),
        }
    }
}

/// What a session has read and applied so far: shared after every read
/// with whoever watches it, and handed back when it ends.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SessionCounts {
    /// Stream bytes received.
    pub(crate) bytes: u64,
    /// What its frames did, every frame cut counted.
    pub(crate) tally: Tally,
    /// When its frames last delivered something (rows applied, or a
    /// segment), if they have.
    pub(crate) gave: Option<Instant>,
    /// Whether bytes it sent wait for room in the sink's backlog: the
    /// wait is the sink's, so it is not judged to deliver nothing then.
    pub(crate) waiting: bool,
}

/// What a server asks of a connection before it has opened a source: to
/// open one by `deadline`, and to go if told to make room.
pub(crate) struct Admission<'a> {
    pub(crate) deadline: Instant,
    /// The handshake timeout `deadline` comes from, to say it.
    pub(crate) timeout: Duration,
    pub(crate) evicted: &'a Notify,
    /// Called once, as the first source opens.
    pub(crate) opened: &'a (dyn Fn() + Sync),
    /// Called once, when a whole frame has arrived and no source is open.
    pub(crate) spoke: &'a (dyn Fn() + Sync),
}

/// How long a session stays quiet before its grown buffer is given back.
const QUIET: Duration = Duration::from_secs(1);

/// How long a frame (or the preamble) that has begun may take before its
/// bytes must keep up [`MIN_FRAME_RATE`]: an agent writes each frame
/// whole, so its bytes arrive together, but a lost segment is resent
/// after a second or more.
pub(crate) const FRAME_ALLOWANCE: Duration = Duration::from_secs(10);

/// Past [`FRAME_ALLOWANCE`], the bytes of a frame that has begun must
/// have arrived at this many a second on average, or the connection ends
/// (`FrameTimeout`): one byte every second and a half, which no agent
/// sends and which would keep a small frame arriving past both timeouts,
/// is ended at the allowance.
pub(crate) const MIN_FRAME_RATE: u64 = 1024;

/// When a frame that began at `started`, with `got` bytes of it in hand,
/// must be whole or have more: `frame_timeout` after it began at the
/// latest, and before that, [`FRAME_ALLOWANCE`] plus a millisecond for
/// each of its bytes in hand at [`MIN_FRAME_RATE`].
fn frame_due(started: Instant, got: usize, frame_timeout: Duration) -> Instant {
    let earned = Duration::from_millis((got as u64).saturating_mul(1000) / MIN_FRAME_RATE);
    after(
        started,
        frame_timeout.min(FRAME_ALLOWANCE.saturating_add(earned)),
    )
}

/// What applying the frames in hand came to.
enum Applied {
    /// At least this many more bytes are needed.
    Need(usize),
    /// The sink's backlog is full: the next frame waits in the buffer.
    Held,
}

/// What woke a session.
enum Event {
    Read(io::Result<usize>),
    /// Nothing arrived for [`QUIET`].
    Quiet,
    Timeout,
    Evicted,
    Stop,
}

/// One stream served into its subscriber: read as bytes arrive, cut and
/// apply every whole frame, until a clean end, a broken rule, a timeout or
/// a stop, after which what has already arrived is applied.
///
/// What a server ties a session to beyond its subscriber is each optional:
/// a [capture](Self::capture) of its bytes, [progress](Self::share_progress)
/// shared after every read, and a [stop](Self::stop_on) at shutdown.
pub(crate) struct Session<'a, IO, S: Sink> {
    io: &'a mut IO,
    subscriber: &'a mut SinkSubscriber<S>,
    buffer: FrameBuffer,
    limits: Limits,
    capture: Option<&'a mut Capture>,
    /// Where its progress is shared after every read, if anywhere.
    shared: Option<&'a Mutex<SessionCounts>>,
    stop: Option<watch::Receiver<bool>>,
    /// Until it opens a source, if asked.
    admission: Option<Admission<'a>>,
    /// Told if it is to make room for a newer connection, if it may be.
    evict: Option<&'a Notify>,
    /// When its frames last delivered, and how much they had then.
    gave: Option<Instant>,
    delivered: u64,
    waiting: bool,
    /// How to close the stream's sending side at a stop, if it has one.
    half_close: Option<HalfClose<IO>>,
}

/// Closes a stream's sending side: at a stop, the peer reads its end
/// (TLS's close_notify, then TCP's FIN) and can stop sending and connect
/// elsewhere, while what it already sent is read and applied.
type HalfClose<IO> =
    for<'x> fn(&'x mut IO) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'x>>;

/// How long a stop waits for the stream's sending side to close.
const HALF_CLOSE: Duration = Duration::from_millis(100);

impl<'a, IO: AsyncRead + Unpin, S: Sink> Session<'a, IO, S> {
    /// A session reading `io` into `subscriber` within `limits`, its buffer
    /// charged to `budget` if given.
    pub(crate) fn new(
        io: &'a mut IO,
        subscriber: &'a mut SinkSubscriber<S>,
        limits: Limits,
        budget: Option<Arc<MemoryBudget>>,
    ) -> Self {
        Session {
            io,
            subscriber,
            buffer: FrameBuffer::new(limits.decoder, budget),
            limits,
            capture: None,
            shared: None,
            stop: None,
            admission: None,
            evict: None,
            gave: None,
            delivered: 0,
            waiting: false,
            half_close: None,
        }
    }

    /// Record the stream in `capture`, if given: from its first whole
    /// frame, every byte as it arrives.
    pub(crate) fn capture(mut self, capture: Option<&'a mut Capture>) -> Self {
        self.capture = capture;
        self
    }

    /// Share what the session has done `to` a watcher after every read.
    pub(crate) fn share_progress(mut self, to: &'a Mutex<SessionCounts>) -> Self {
        self.shared = Some(to);
        self
    }

    /// Open a source as `admission` asks, or end; and go whenever told to
    /// make room, before and after.
    pub(crate) fn admit(mut self, admission: Admission<'a>) -> Self {
        self.evict = Some(admission.evicted);
        self.admission = Some(admission);
        self
    }

    /// End, once what has arrived is applied, when `stop` turns true (or its
    /// sender is gone).
    pub(crate) fn stop_on(mut self, stop: watch::Receiver<bool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Serve the stream to its end; why it ended, and what it did. The
    /// buffer is given back before this returns.
    pub(crate) async fn run(mut self) -> (Result<(), ServeError>, SessionCounts) {
        let result = self.serve().await;
        (result, self.progress())
    }

    /// What the session has done so far.
    fn progress(&self) -> SessionCounts {
        let mut tally = self.subscriber.tally();
        // The cut skips unknown kinds before the subscriber sees them, and
        // counts every frame.
        tally.frames = self.buffer.frames();
        tally.unknown_skipped = self.buffer.unknown();
        SessionCounts {
            bytes: self.buffer.received(),
            tally,
            gave: self.gave,
            waiting: self.waiting,
        }
    }

    async fn serve(&mut self) -> Result<(), ServeError> {
        let mut last_frame = Instant::now();
        // Whether the admission has heard that a frame arrived and no
        // source opened.
        let mut spoke = false;
        // When the frame in hand (or the preamble) started arriving.
        let mut frame_started: Option<Instant> = None;
        loop {
            let before = self.buffer.frames();
            let applied = self.apply_whole_frames()?;
            // Held with bytes in hand: they wait for the sink, not the peer.
            self.waiting = matches!(applied, Applied::Held) && self.buffer.uncut() > 0;
            let now = Instant::now();
            if self.buffer.frames() > before {
                last_frame = now;
                frame_started = None;
                let tally = self.subscriber.tally();
                let delivered = tally.rows_applied.saturating_add(tally.segments);
                if delivered > self.delivered {
                    self.delivered = delivered;
                    self.gave = Some(now);
                }
            }
            if self.buffer.uncut() == 0 {
                frame_started = None;
            } else {
                frame_started.get_or_insert(now);
            }
            if let Some(shared) = self.shared {
                *shared.lock().unwrap_or_else(|e| e.into_inner()) = self.progress();
            }
            if self.admission.is_some() && self.subscriber.tally().sources > 0 {
                if let Some(admission) = self.admission.take() {
                    (admission.opened)();
                }
            }
            if !spoke && self.buffer.frames() > 0 {
                if let Some(admission) = &self.admission {
                    spoke = true;
                    (admission.spoke)();
                }
            }
            let needed = match applied {
                Applied::Need(needed) => needed,
                Applied::Held => {
                    // The sink is behind: the frame waits in the buffer and
                    // the socket is not read. The wait is the sink's, not the
                    // peer's, so its timeouts start again after it.
                    match self.wait_for_room().await {
                        ControlFlow::Break(Event::Evicted) => return Err(ServeError::Evicted),
                        ControlFlow::Break(_) => return self.stop_and_apply_what_arrived().await,
                        ControlFlow::Continue(()) => {}
                    }
                    last_frame = Instant::now();
                    frame_started = frame_started.map(|_| last_frame);
                    continue;
                }
            };
            let mut deadline = match frame_started {
                Some(started) => frame_due(started, self.buffer.uncut(), self.limits.frame_timeout),
                None => after(last_frame, self.limits.idle_timeout),
            };
            let handshake_due = self
                .admission
                .as_ref()
                .is_some_and(|admission| admission.deadline <= deadline);
            if let Some(admission) = self.admission.as_ref().filter(|_| handshake_due) {
                deadline = admission.deadline;
            }
            // What a large frame needed is given back as soon as it is
            // applied; the read-ahead a busy spell grew, once the connection
            // has been quiet for a while, not at every frame boundary: a
            // fast stream would otherwise shrink and regrow it.
            let quiet = self
                .buffer
                .can_release()
                .then(|| (now + QUIET).min(deadline))
                .filter(|&quiet| quiet < deadline);
            let room = self.buffer.spare(needed).map_err(ServeError::Read)?;
            let evicted = self.evict;
            let event = tokio::select! {
                biased;
                _ = stopped_if_asked(&mut self.stop) => Event::Stop,
                _ = notified_if_asked(evicted) => Event::Evicted,
                read = tokio::time::timeout_at(
                    quiet.unwrap_or(deadline).into(),
                    self.io.read(room),
                ) => match read {
                    Ok(read) => Event::Read(read),
                    Err(_) if quiet.is_some() => Event::Quiet,
                    Err(_) => Event::Timeout,
                }
            };
            match event {
                Event::Quiet => self.buffer.release(),
                Event::Read(read) => {
                    if self.keep_read(read, needed)?.is_break() {
                        return Ok(());
                    }
                }
                Event::Evicted => return Err(ServeError::Evicted),
                Event::Timeout => {
                    let at = self.buffer.position();
                    if let Some(admission) = self.admission.as_ref().filter(|_| handshake_due) {
                        return Err(ServeError::HandshakeTimeout {
                            after: admission.timeout,
                        });
                    }
                    return Err(match frame_started {
                        Some(started) => ServeError::FrameTimeout {
                            // What it had: the frame timeout, or less
                            // for a frame too slow to be an agent's.
                            after: Instant::now().saturating_duration_since(started),
                            at,
                            have: self.buffer.uncut(),
                        },
                        None => ServeError::IdleTimeout {
                            after: self.limits.idle_timeout,
                            at,
                        },
                    });
                }
                Event::Stop => return self.stop_and_apply_what_arrived().await,
            }
        }
    }

    /// Cut and apply every whole frame in hand, and give back what a large
    /// one needed; then how many more bytes the next one needs, or that the
    /// sink's backlog is full and the rest must wait for room (once a
    /// source is open: see [`Backlog`](super::Backlog)).
    fn apply_whole_frames(&mut self) -> Result<Applied, ServeError> {
        loop {
            if self.held_back() {
                return Ok(Applied::Held);
            }
            let next = match self.buffer.next() {
                Ok(next) => next,
                Err(e) => return Err(self.read_error(e)),
            };
            self.start_capture();
            match next {
                Next::Frame(range, at) => {
                    let frame = self.buffer.decode(range, at).map_err(ServeError::Read)?;
                    self.subscriber
                        .apply(&frame)
                        .map_err(|e| ServeError::Subscribe(at, e))?;
                }
                Next::Need(needed) => {
                    self.buffer.shrink();
                    return Ok(Applied::Need(needed));
                }
            }
        }
    }

    /// Why the stream could not be read: a stream that begins with a PROXY
    /// protocol header, from an address a header is not expected from, is
    /// said to, and refused as such.
    fn read_error(&self, e: ReadError) -> ServeError {
        let proxy_header = matches!(e.kind(), ReadErrorKind::Preamble(_))
            && self.buffer.since(0).is_some_and(looks_like_header);
        match proxy_header {
            true => ServeError::ProxyHeader(ProxyHeaderError::NotExpected),
            false => ServeError::Read(e),
        }
    }

    /// Whether the next frame must wait for room in the sink's backlog:
    /// it is full, and this connection has opened a source.
    fn held_back(&self) -> bool {
        self.subscriber.tally().sources > 0
            && self.subscriber.backlog().is_some_and(|b| b.is_full())
    }

    /// Wait until the sink's backlog has room (`Continue`), or until told
    /// to stop or to make room for a newer connection (`Break`, saying
    /// which).
    async fn wait_for_room(&mut self) -> ControlFlow<Event> {
        let Some(backlog) = self.subscriber.backlog() else {
            return ControlFlow::Continue(());
        };
        tokio::select! {
            biased;
            _ = stopped_if_asked(&mut self.stop) => ControlFlow::Break(Event::Stop),
            _ = notified_if_asked(self.evict) => ControlFlow::Break(Event::Evicted),
            _ = backlog.room() => ControlFlow::Continue(()),
        }
    }

    /// Make the capture once the first whole frame is cut (a known kind or
    /// an unknown one skipped), with the stream so far: the preamble (there
    /// is one, or no frame would be cut) and every byte since, all still in
    /// the buffer, as nothing is moved out of it before this first cut.
    fn start_capture(&mut self) {
        let Some(capture) = self.capture.as_deref_mut() else {
            return;
        };
        if capture.not_yet() && self.buffer.frames() > 0 {
            if let Some(since) = self.buffer.since(PREAMBLE_BYTES as u64) {
                capture.start(&[&PREAMBLE, since]);
            }
        }
    }

    /// What one read came to, live or at shutdown: what arrived is captured
    /// and kept (`Continue`, as after an interrupted read); an end (`Break`)
    /// is clean only at a frame boundary. A TLS peer that closes without a
    /// close_notify has ended its stream as a plaintext one does (the
    /// protocol has no end marker).
    fn keep_read(
        &mut self,
        read: io::Result<usize>,
        needed: usize,
    ) -> Result<ControlFlow<()>, ServeError> {
        let ended = match read {
            Ok(0) => true,
            Ok(n) => {
                let arrived = self.buffer.filled(n);
                if let Some(capture) = self.capture.as_deref_mut() {
                    capture.write(arrived);
                }
                false
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => false,
            Err(e) => return Err(ServeError::Read(self.buffer.error(ReadErrorKind::Io(e)))),
        };
        if !ended {
            return Ok(ControlFlow::Continue(()));
        }
        self.buffer
            .end_of_stream(needed)
            .map_err(ServeError::Read)?;
        Ok(ControlFlow::Break(()))
    }

    /// Told to stop: say so to the peer, if the stream can, then apply
    /// what has arrived.
    async fn stop_and_apply_what_arrived(&mut self) -> Result<(), ServeError> {
        if let Some(half_close) = self.half_close {
            let _ = tokio::time::timeout(HALF_CLOSE, half_close(self.io)).await;
        }
        self.apply_what_arrived().await
    }

    /// At shutdown: read what has already arrived, apply its whole frames,
    /// and end. Bytes still on their way in (a sender's kernel holds what
    /// the receive window had no room for) arrive within moments of each
    /// read, so it reads until the socket is quiet for [`DRAIN_QUIET`], for
    /// at most [`DRAIN_FOR`].
    ///
    /// A sink whose backlog is full is waited for, and the wait does not
    /// count against that bound: what the socket held when the stop came is
    /// applied, however long the sink takes to make room for it (the
    /// socket's buffer bounds it); only a sender that goes on sending is cut
    /// off.
    async fn apply_what_arrived(&mut self) -> Result<(), ServeError> {
        let mut until = Instant::now() + DRAIN_FOR;
        loop {
            let needed = match self.apply_whole_frames()? {
                Applied::Need(needed) => needed,
                Applied::Held => {
                    // Waiting for the sink is not reading: what the socket
                    // already holds is applied however long the sink
                    // takes, and the time is given back to the drain.
                    let waiting = Instant::now();
                    if let Some(room) = self.subscriber.backlog().map(|b| b.room()) {
                        room.await;
                    }
                    until += waiting.elapsed();
                    continue;
                }
            };
            let quiet = (Instant::now() + DRAIN_QUIET).min(until);
            let room = self.buffer.spare(needed).map_err(ServeError::Read)?;
            match tokio::time::timeout_at(quiet.into(), self.io.read(room)).await {
                Ok(read) => {
                    if self.keep_read(read, needed)?.is_break() {
                        return Ok(());
                    }
                }
                Err(_) => return Err(self.shut_down()),
            }
        }
    }

    /// How a stop ended the session: where, and what was left uncut.
    fn shut_down(&self) -> ServeError {
        ServeError::Shutdown {
            at: self.buffer.position(),
            cut: self.buffer.uncut(),
        }
    }
}

impl<'a, IO: AsyncRead + tokio::io::AsyncWrite + Unpin + Send, S: Sink> Session<'a, IO, S> {
    /// At a stop, close the stream's sending side before reading what has
    /// arrived: a publisher that reads sees the end at once and stops
    /// sending, so what it sent before is what the session applies.
    pub(crate) fn half_close_on_stop(mut self) -> Self {
        self.half_close = Some(|io| {
            Box::pin(async move {
                let _ = tokio::io::AsyncWriteExt::shutdown(io).await;
            })
        });
        self
    }
}

/// At shutdown, how long a socket must be quiet to have given all it held.
const DRAIN_QUIET: Duration = Duration::from_millis(250);

/// At shutdown, the longest a connection reads what it holds: a sender that
/// keeps sending is cut off here.
const DRAIN_FOR: Duration = Duration::from_secs(2);

/// `from + wait`, or a time too far off to matter if that is past what an
/// `Instant` holds (`Duration::MAX` means no timeout).
pub(crate) fn after(from: Instant, wait: Duration) -> Instant {
    from.checked_add(wait)
        .unwrap_or_else(|| from + Duration::from_secs(100 * 365 * 86_400))
}

/// Resolves once the server is told to stop (or is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|&stopped| stopped).await;
}

/// [`stopped`], for a session that may have nothing to stop it: then never.
async fn stopped_if_asked(stop: &mut Option<watch::Receiver<bool>>) {
    match stop {
        Some(stop) => stopped(stop).await,
        None => std::future::pending().await,
    }
}

/// Resolves once `evict` is told, if given: else never.
async fn notified_if_asked(evict: Option<&Notify>) {
    match evict {
        Some(evict) => evict.notified().await,
        None => std::future::pending().await,
    }
}
