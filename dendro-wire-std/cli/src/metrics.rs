//! `listen --metrics ADDR`: the listener's counts for Prometheus (`/metrics`,
//! the text exposition format 0.0.4) and a readiness check for a load
//! balancer (`/ready`), on a small HTTP server of their own.
//!
//! The format is prometheus-client's and the HTTP is hyper's; what is here
//! is which counts are exported and the bounds on whoever scrapes.

use std::collections::{BTreeMap, VecDeque};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::AbortHandle;

use bytes::Bytes;
use dendro_wire_std::receive::{Ended, ServerWatch};
use dendro_wire_std::Tally;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::failure::Failure;

/// Scrapers' connections served at once; one more closes the oldest.
const MAX_SCRAPERS: usize = 16;
/// The time a scraper has to send its request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest one scraper's connection is kept, keep-alive included.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);

/// What `listen` tells the metrics: each ended connection, and when it
/// stops being ready; and the archive it lands in, if any, with how far
/// behind it may fall before `/ready` says so.
pub(crate) struct Metrics {
    ended: Mutex<EndedTotals>,
    /// The highest value each counter has been exported with (see
    /// [`Metrics::render`]).
    exported: Mutex<BTreeMap<&'static str, u64>>,
    stopping: AtomicBool,
    #[cfg(feature = "archive")]
    archive: Option<(SharedArchive, Duration)>,
}

#[cfg(feature = "archive")]
use dendro_wire_std::archive::{ArchiveStats, SharedArchive, COMMIT_BUCKETS};

/// What the connections that ended added up to.
#[derive(Default)]
struct EndedTotals {
    /// Connections ended, by [`ServeError::name`] or `"clean"`: a label
    /// whose values the library fixes, so the series stay few.
    ///
    /// [`ServeError::name`]: dendro_wire_std::receive::ServeError::name
    by_reason: BTreeMap<&'static str, u64>,
    tally: Tally,
    bytes: u64,
}

impl Metrics {
    /// Metrics for a listener that lands in `archive`, if given, and is
    /// ready while it is no further behind than the duration beside it.
    #[cfg(feature = "archive")]
    pub(crate) fn new(archive: Option<(SharedArchive, Duration)>) -> Self {
        Metrics {
            ended: Mutex::default(),
            exported: Mutex::default(),
            stopping: AtomicBool::new(false),
            archive,
        }
    }

    /// Metrics for a listener.
    #[cfg(not(feature = "archive"))]
    pub(crate) fn new() -> Self {
        Metrics {
            ended: Mutex::default(),
            exported: Mutex::default(),
            stopping: AtomicBool::new(false),
        }
    }

    /// Why the listener is not ready, if it is not: it is stopping, the
    /// archive failed a commit, or it is further behind than allowed.
    fn unready(&self) -> Option<String> {
        if self.stopping.load(Ordering::Relaxed) {
            return Some("stopping\n".into());
        }
        #[cfg(feature = "archive")]
        if let Some((archive, max_lag)) = &self.archive {
            let stats = archive.stats();
            if let Some(why) = stats.failed {
                return Some(format!("failed: the archive cannot commit: {why}\n"));
            }
            let lag = stats.lag;
            if lag > *max_lag {
                return Some(format!(
                    "behind: the archive's oldest row not yet committed has waited {:.1} s, \
                     more than {:.1} s\n",
                    lag.as_secs_f64(),
                    max_lag.as_secs_f64()
                ));
            }
        }
        None
    }

    /// Count a connection that ended.
    pub(crate) fn record(&self, ended: &Ended) {
        let mut t = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        let reason = match &ended.result {
            Ok(()) => "clean",
            Err(e) => e.name(),
        };
        *t.by_reason.entry(reason).or_default() += 1;
        t.tally += ended.tally;
        t.bytes += ended.bytes;
    }

    /// From now on `/ready` answers 503: the listener is stopping.
    pub(crate) fn stopping(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// The exposition: the server's counts now, the connections that ended
    /// and those still live added together.
    ///
    /// A connection leaves the live list just before it is counted as
    /// ended, so for that moment a sum would fall back; each counter is
    /// exported as the highest value it has had, so that Prometheus never
    /// sees a counter go down (which it would take for a restart).
    fn render(&self, watch: &ServerWatch, max_memory: usize) -> String {
        let stats = watch.stats();
        let (mut tally, mut bytes, by_reason) = {
            let t = self.ended.lock().unwrap_or_else(|e| e.into_inner());
            (t.tally, t.bytes, t.by_reason.clone())
        };
        for live in watch.live() {
            tally += live.tally;
            bytes += live.bytes;
        }
        #[cfg(feature = "archive")]
        let archive = self.archive.as_ref().map(|(archive, _)| archive.stats());
        #[cfg(feature = "archive")]
        let backlog = archive.as_ref().map_or(0, |a| a.backlog_bytes);
        #[cfg(not(feature = "archive"))]
        let backlog = 0;
        let mut exported = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        let mut registry = Registry::with_prefix("dendro_wire");
        let mut counter = |name: &'static str, help: &str, value: u64| {
            let high = exported.entry(name).or_default();
            *high = (*high).max(value);
            let c: Counter = Counter::default();
            c.inc_by(*high);
            registry.register(name, help, c);
        };
        counter(
            "connections_accepted",
            "Connections accepted and served",
            stats.accepted,
        );
        counter(
            "connections_refused",
            "Connections closed at accept: a cap was reached (every connection, or one \
             address's, having opened a source) or the memory budget was full",
            stats.refused,
        );
        counter(
            "connections_evicted",
            "Connections yet to open a source, told to close to admit newer ones",
            stats.evicted,
        );
        counter("accept_errors", "Accepts that failed", stats.accept_errors);
        counter(
            "frames",
            "Frames read, unknown kinds included",
            tally.frames,
        );
        counter("bytes_received", "Stream bytes received", bytes);
        counter(
            "sources_opened",
            "Sources opened by a Handshake",
            tally.sources,
        );
        counter(
            "rows_applied",
            "Rows the subscriber's rules let through to the sink",
            tally.rows_applied,
        );
        counter(
            "rows_skipped",
            "Rows the subscriber's rules skipped",
            tally.rows_skipped,
        );
        counter(
            "index_entries",
            "Index entries applied",
            tally.index_entries,
        );
        counter("segments", "Segments received", tally.segments);
        counter("gaps", "Gaps in a source's Rows seq", tally.gaps);
        counter(
            "frames_lost",
            "Rows frames lost in transit, as the gaps say, at most what each connection \
             could have lost in the time it was open",
            tally.frames_lost,
        );
        counter(
            "seq_regressions",
            "Rows frames whose seq was not above its source's last, or jumped further than \
             its connection could have lost frames",
            tally.seq_regressions,
        );
        #[cfg(feature = "archive")]
        if let Some(a) = &archive {
            counter(
                "archive_rows_committed",
                "Rows the archive committed",
                a.rows_committed,
            );
            counter(
                "archive_rows_dropped",
                "Rows handed to the archive and not committed: their source could not be \
                 opened, or a commit failed",
                a.rows_dropped,
            );
            counter(
                "archive_commits",
                "Transactions of rows the archive committed",
                a.commits,
            );
            counter(
                "archive_commit_failures",
                "Commits the archive failed: dendro's writer answered an error or dropped the \
                 rows after its retries, or the archive's file was gone; the first stops the \
                 listener",
                a.commit_failures,
            );
            counter(
                "archive_sources_refused",
                "Handshakes refused a source in the archive, their connections closed: it \
                 held --archive-max-sources, or their address had created \
                 --archive-max-sources-per-address",
                a.sources_refused,
            );
            counter(
                "archive_waits",
                "Times a connection was not read because the archive's backlog was full",
                a.waits,
            );
        }
        let ended: Family<Vec<(String, String)>, Counter> = Family::default();
        for (reason, n) in by_reason {
            ended
                .get_or_create(&vec![("reason".to_owned(), reason.to_owned())])
                .inc_by(n);
        }
        registry.register(
            "connections_ended",
            "Connections ended, by why (clean: at a frame boundary)",
            ended,
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str, value: u64| {
            let g: Gauge = Gauge::default();
            g.set(i64::try_from(value).unwrap_or(i64::MAX));
            registry.register(name, help, g);
        };
        gauge(
            &mut registry,
            "connections_live",
            "Connections live now",
            stats.live,
        );
        gauge(
            &mut registry,
            "memory_in_use_bytes",
            "Bytes the connections' buffers hold now, and what is handed to the archive and \
             not yet committed, against the memory budget",
            (stats.memory_in_use + backlog) as u64,
        );
        gauge(
            &mut registry,
            "memory_limit_bytes",
            "The memory budget (--max-memory)",
            max_memory as u64,
        );
        #[cfg(feature = "archive")]
        if let Some(a) = &archive {
            register_archive(&mut registry, a);
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
        out
    }

    /// The answer to one request.
    fn answer(
        &self,
        request: &Request<hyper::body::Incoming>,
        watch: &ServerWatch,
        max_memory: usize,
    ) -> Response<Full<Bytes>> {
        let (status, kind, body) = match (request.method(), request.uri().path()) {
            (&Method::GET, "/metrics") => (
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                self.render(watch, max_memory),
            ),
            (&Method::GET, "/ready") => match self.unready() {
                Some(why) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain; charset=utf-8",
                    why,
                ),
                None => (
                    StatusCode::OK,
                    "text/plain; charset=utf-8",
                    "ready\n".into(),
                ),
            },
            (&Method::GET, _) => (
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "not found: /metrics or /ready\n".into(),
            ),
            _ => (
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain; charset=utf-8",
                "only GET\n".into(),
            ),
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(kind) = hyper::header::HeaderValue::from_str(kind) {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, kind);
        }
        response
    }
}

/// Serve `/metrics` and `/ready` on `addr` from a thread of their own until
/// the process ends; the address bound (`:0` picks a port).
///
/// At most [`MAX_SCRAPERS`] connections are served at once (one more closes
/// the oldest), each has [`HEAD_TIMEOUT`] to send a request and lives
/// at most [`CONNECTION_LIFETIME`]: idle or slow sockets cannot hold the
/// port, though a peer opening connections faster than a scraper sends its
/// request can evict it (the book's "Collecting": serve it where only the scraper reaches).
pub(crate) fn serve(
    addr: &str,
    metrics: Arc<Metrics>,
    watch: ServerWatch,
    max_memory: usize,
) -> Result<SocketAddr, Failure> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| Failure(format!("cannot serve metrics on {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("cannot start the metrics server: {e}")))?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || runtime.block_on(accept(listener, metrics, watch, max_memory)))
        .map_err(|e| Failure(format!("cannot start the metrics server: {e}")))?;
    Ok(bound)
}

async fn accept(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    watch: ServerWatch,
    max_memory: usize,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    // The connections served, oldest first: one past the cap closes the
    // oldest, so that holding the port takes more connections per second
    // than a scraper needs, never merely more connections.
    let served: Arc<Mutex<VecDeque<(u64, AbortHandle)>>> = Arc::default();
    for id in 0u64.. {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let (metrics, watch, done) = (metrics.clone(), watch.clone(), served.clone());
        let task = tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let response = metrics.answer(&request, &watch, max_memory);
                async move { Ok::<_, std::convert::Infallible>(response) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, connection).await;
            lock(&done).retain(|(served, _)| *served != id);
        });
        let mut served = lock(&served);
        if served.len() >= MAX_SCRAPERS {
            if let Some((_, oldest)) = served.pop_front() {
                oldest.abort();
            }
        }
        served.push_back((id, task.abort_handle()));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The archive's gauges and its commit-time histogram.
#[cfg(feature = "archive")]
fn register_archive(registry: &mut Registry, a: &ArchiveStats) {
    let gauge = |registry: &mut Registry, name: &str, help: &str, value: i64| {
        let g: Gauge = Gauge::default();
        g.set(value);
        registry.register(name, help, g);
    };
    let gauge_seconds = |registry: &mut Registry, name: &str, help: &str, value: Duration| {
        let g: Gauge<f64, std::sync::atomic::AtomicU64> = Gauge::default();
        g.set(value.as_secs_f64());
        registry.register(name, help, g);
    };
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    gauge(
        registry,
        "archive_pending_rows",
        "Rows handed to the archive and not yet committed",
        count(a.rows_pending),
    );
    gauge(
        registry,
        "archive_backlog_bytes",
        "Bytes handed to the archive and not yet done, against archive_backlog_limit_bytes",
        count(a.backlog_bytes as u64),
    );
    gauge(
        registry,
        "archive_backlog_limit_bytes",
        "What may be handed to the archive and not yet done: a quarter of --max-memory",
        count(a.backlog_limit as u64),
    );
    gauge(
        registry,
        "archive_connections_waiting",
        "Connections not read now because the archive's backlog is full",
        count(a.connections_waiting as u64),
    );
    gauge_seconds(
        registry,
        "archive_lag_seconds",
        "How long the oldest work handed to the archive and not yet done has waited",
        a.lag,
    );
    gauge_seconds(
        registry,
        "archive_max_lag_seconds",
        "The most archive_lag_seconds has been since the listener started",
        a.max_lag,
    );
    gauge(
        registry,
        "archive_sources",
        "Sources the archive holds, as its bounds count them, against --archive-max-sources",
        count(a.sources_held),
    );
    gauge(
        registry,
        "archive_sources_beating",
        "Sources whose heartbeat dendro's writer bumps every 5 s",
        count(a.sources_beating),
    );
    registry.register(
        "archive_commit_seconds",
        "How long each of the archive's commits took",
        CommitHistogram(a.commit_seconds.clone()),
    );
}

/// The archive's commit times as a Prometheus histogram: the buckets the
/// writer path counted, exported as they are.
#[cfg(feature = "archive")]
#[derive(Debug)]
struct CommitHistogram(dendro_wire_std::archive::CommitSeconds);

#[cfg(feature = "archive")]
impl prometheus_client::encoding::EncodeMetric for CommitHistogram {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        let buckets: Vec<(f64, u64)> = COMMIT_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.0.buckets.iter().copied())
            .collect();
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.0.sum,
            self.0.count,
            &buckets,
            None,
        )
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Histogram
    }
}

#[cfg(all(test, feature = "archive"))]
mod tests {
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use dendro_wire_std::archive::SharedArchive;
    use dendro_wire_std::receive::{Server, ServerConfig};
    use dendro_wire_std::{CountingSink, Sink};

    use super::Metrics;

    /// An archive whose writer path has failed a commit: its file removed
    /// under it, and rows handed over after.
    fn failed_archive() -> SharedArchive {
        let dir = std::env::temp_dir().join(format!("dendro-wire-metrics-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let archive = SharedArchive::create(&dir.join("a.dendro"), "test-raw-1").unwrap();
        let mut sink = archive.connection();
        sink.open_source(0, &dendro_wire_test_support::fixtures::bare_handshake(0))
            .unwrap();
        std::fs::remove_file(archive.path()).unwrap();
        let row = dendro_wire_core::Row {
            stream: "x",
            ts: 1,
            wall_offset: 0,
            row: b"row",
        };
        let rows = [row];
        let frame = dendro_wire_core::Rows {
            source: 0,
            seq: 0,
            index_state: (0, 0),
            rows: dendro_wire_core::RowList::from_slice(&rows),
        };
        sink.rows(0, &frame).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while archive.stats().failed.is_none() {
            assert!(Instant::now() < deadline, "{:?}", archive.stats());
            std::thread::sleep(Duration::from_millis(5));
        }
        archive
    }

    #[test]
    fn an_archive_that_failed_a_commit_is_not_ready_and_is_counted() {
        let archive = failed_archive();
        let metrics = Metrics::new(Some((archive, Duration::from_secs(3600))));
        let why = metrics.unready().unwrap_or_default();
        assert!(
            why.starts_with("failed: the archive cannot commit") && why.contains("is gone"),
            "{why}"
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = Server::start(
            listener,
            ServerConfig::default(),
            |_| CountingSink::default(),
            |_, _| {},
        )
        .unwrap();
        let text = metrics.render(&server.watch(), 1 << 20);
        server.shutdown(Duration::ZERO);
        assert!(
            text.lines()
                .any(|l| l == "dendro_wire_archive_commit_failures_total 1"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == "dendro_wire_archive_rows_dropped_total 1"),
            "{text}"
        );
    }
}
