//! The publisher and the subscriber, end to end: in memory, over a bounded
//! queue that drops, and over loopback TCP with a forced disconnect.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use dendro_wire_core::{Frame, Handshake, Index, Map, Rows, Segment, SourceUpdate};
use dendro_wire_std::receive::serve;
use dendro_wire_std::{
    AgentConfig, AgentPublisher, CountingSink, FrameQueue, FrameReader, SegmentStored, Sink,
    SinkError, SinkSubscriber, SourceConfig, SourceId, SubscribeError,
};

/// A sink that remembers every row it was given, per connection, and each
/// source's labels as the handshake and any update left them.
#[derive(Default, Debug)]
struct Recording {
    rows: BTreeSet<(String, i64)>,
    sources: Vec<String>,
    labels: BTreeMap<u32, BTreeMap<String, String>>,
    index_entries: Vec<(u32, bool)>,
}

fn owned(labels: Map<'_>) -> BTreeMap<String, String> {
    labels.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

impl Sink for Recording {
    fn open_source(&mut self, o: u32, h: &Handshake<'_>) -> Result<(), SinkError> {
        self.sources
            .push(h.labels.get("source").unwrap_or("").into());
        self.labels.insert(o, owned(h.labels));
        Ok(())
    }
    fn index_entry(&mut self, o: u32, i: &Index<'_>) -> Result<(), SinkError> {
        self.index_entries
            .push((o, i.kind == dendro_wire_core::IndexKind::Full));
        Ok(())
    }
    fn rows(&mut self, _: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        for r in rows.rows {
            assert!(
                self.rows.insert((r.stream.to_string(), r.ts)),
                "a row twice"
            );
        }
        Ok(())
    }
    fn source_update(&mut self, o: u32, u: &SourceUpdate<'_>) -> Result<(), SinkError> {
        self.labels.insert(o, owned(u.labels));
        Ok(())
    }
}

fn agent(config: AgentConfig) -> (AgentPublisher, SourceId, SourceId) {
    let mut p = AgentPublisher::new(config);
    let cpu = p
        .add_source(
            SourceConfig::new()
                .label("source", "cpu")
                .metadata("encoder", "test-1")
                .stream("cpu/usage")
                .stream("cpu/irq")
                .index("cpu/slots"),
        )
        .unwrap();
    let mem = p
        .add_source(
            SourceConfig::new()
                .label("source", "mem")
                .stream("mem/used"),
        )
        .unwrap();
    (p, cpu, mem)
}

/// One interval: a row on every stream at `ts`, and slot churn now and then.
fn interval(p: &mut AgentPublisher, cpu: SourceId, mem: SourceId, ts: i64) {
    if ts % 7 == 0 {
        p.set_slot(cpu, format!("cpu{}", ts % 4).as_bytes(), &ts.to_le_bytes());
    }
    p.observe(cpu, "cpu/usage", ts, 0, &ts.to_le_bytes())
        .unwrap();
    p.observe(cpu, "cpu/irq", ts, 0, &[1; 32]).unwrap();
    p.observe(mem, "mem/used", ts, -1, &[2; 16]).unwrap();
    if ts % 10 == 0 {
        p.clock_offset(cpu, ts, -5).unwrap();
    }
    p.end_interval();
}

/// Everything queued, as a stream.
fn drain(queue: &FrameQueue) -> Vec<u8> {
    let mut out = b"dendro-repl\0\x01\x00".to_vec();
    while let Some(f) = queue.pop(Duration::ZERO) {
        out.extend_from_slice(&f);
    }
    out
}

#[test]
fn every_row_published_is_applied_and_none_skipped() {
    let (mut p, cpu, mem) = agent(AgentConfig::default().full_every(10));
    let queue = p.queue();
    queue.connected();
    for ts in 0..100 {
        interval(&mut p, cpu, mem, ts);
    }
    let bytes = drain(&queue);
    let mut sub = SinkSubscriber::new(Recording::default());
    serve(&bytes[..], &mut sub).unwrap();
    let applied = sub.tally();
    assert_eq!(applied.rows_applied, 300);
    assert_eq!(applied.rows_skipped, 0);
    assert_eq!((applied.gaps, applied.frames_lost), (0, 0));
    assert_eq!(applied.sources, 2);
    // The first is observed before the first interval opens the
    // connection, and no frame may precede the handshakes.
    assert_eq!(applied.clock_offsets, 9);
    assert_eq!(sub.tally().rows_applied, p.stats().rows_queued);
    let sink = sub.sink();
    assert_eq!(sink.sources, ["cpu", "mem"]);
    // A Full first (rule 2), then Deltas and a Full every 10 intervals.
    assert_eq!(sink.index_entries.first(), Some(&(0, true)));
    let fulls = sink.index_entries.iter().filter(|e| e.1).count();
    assert_eq!(fulls, 10, "{:?}", sink.index_entries);

    assert!(sink.index_entries.iter().any(|e| !e.1), "Deltas were sent");
}

/// A sink of one method, and one that also keeps segments by stream.
#[derive(Default)]
struct RowsOnly(u64);

impl Sink for RowsOnly {
    fn rows(&mut self, _: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        self.0 += rows.rows.len() as u64;
        Ok(())
    }
}

#[derive(Default)]
struct SegmentsByStream(BTreeSet<String>);

impl Sink for SegmentsByStream {
    fn rows(&mut self, _: u32, _: &Rows<'_>) -> Result<(), SinkError> {
        Ok(())
    }
    fn segment(&mut self, _: u32, s: &Segment<'_>) -> Result<SegmentStored, SinkError> {
        Ok(if self.0.insert(s.stream.to_string()) {
            SegmentStored::Added
        } else {
            SegmentStored::AlreadyHeld
        })
    }
}

#[test]
fn a_sink_of_one_method_gets_every_row_and_a_segment_held_is_counted() {
    let (mut p, cpu, mem) = agent(AgentConfig::default());
    let queue = p.queue();
    queue.connected();
    for ts in 0..20 {
        interval(&mut p, cpu, mem, ts);
    }
    for stream in ["cpu/usage", "cpu/irq", "cpu/usage"] {
        let segment = Segment {
            source: 0,
            stream,
            rows: 1,
            first_ts: 0,
            last_ts: 0,
            bytes: b"PAR1",
            caller_index: None,
        };
        p.segment(&segment).unwrap();
    }
    let bytes = drain(&queue);

    let mut sub = SinkSubscriber::new(RowsOnly::default());
    serve(&bytes[..], &mut sub).unwrap();
    assert_eq!(sub.sink().0, 60);
    assert_eq!(sub.tally().rows_applied, 60);
    // The default segment method takes every segment.
    assert_eq!((sub.tally().segments, sub.segments_held()), (3, 0));

    let mut sub = SinkSubscriber::new(SegmentsByStream::default());
    serve(&bytes[..], &mut sub).unwrap();
    assert_eq!((sub.tally().segments, sub.segments_held()), (3, 1));
}

#[test]
fn a_frame_that_cannot_be_queued_is_dropped_counted_and_seen_as_a_gap() {
    let (mut p, cpu, mem) = agent(AgentConfig::default().queue_frames(10));
    let queue = p.queue();
    queue.connected();
    let mut bytes = b"dendro-repl\0\x01\x00".to_vec();
    for ts in 0..50 {
        interval(&mut p, cpu, mem, ts);
        // The transport drains only every fifth interval: the rest drop.
        if ts % 5 == 4 {
            bytes.extend_from_slice(&drain(&queue)[14..]);
        }
    }
    // One more interval, delivered, so that every drop is followed by a
    // frame that reveals it.
    interval(&mut p, cpu, mem, 50);
    bytes.extend_from_slice(&drain(&queue)[14..]);
    let stats = p.stats();
    assert!(stats.rows_frames_dropped > 0);
    let mut sub = SinkSubscriber::new(CountingSink::default());
    serve(&bytes[..], &mut sub).unwrap();
    let applied = sub.tally();
    // Every Rows frame dropped shows up as a lost frame, and nothing else does.
    assert_eq!(applied.frames_lost, stats.rows_frames_dropped);
    assert_eq!(
        applied.rows_applied + applied.rows_skipped,
        stats.rows_queued
    );
    assert!(queue.stats().dropped_full >= stats.rows_frames_dropped);
}

#[test]
fn the_first_rows_frame_of_a_connection_carries_every_stream() {
    let (mut p, cpu, mem) = agent(AgentConfig::default());
    // Observed before any connection: not sent, but remembered.
    interval(&mut p, cpu, mem, 1);
    p.observe(cpu, "cpu/usage", 2, 0, &[9]).unwrap();
    p.end_interval();
    assert_eq!(p.stats().rows_dropped, 4, "no connection: dropped, counted");
    let queue = p.queue();
    queue.connected();
    p.end_interval(); // nothing observed in this interval
    let bytes = drain(&queue);
    let mut r = FrameReader::new(&bytes[..]).unwrap();
    let mut first_rows = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        if let Frame::Rows(rows) = f {
            first_rows.extend(rows.rows.iter().map(|r| (r.stream.to_string(), r.ts)));
        }
    }
    assert_eq!(
        first_rows,
        [
            ("cpu/usage".to_string(), 2),
            ("cpu/irq".to_string(), 1),
            ("mem/used".to_string(), 1)
        ]
    );
}

#[test]
fn a_source_whose_encoder_differs_is_refused() {
    let (mut p, cpu, mem) = agent(AgentConfig::default());
    let queue = p.queue();
    queue.connected();
    interval(&mut p, cpu, mem, 0);
    let bytes = drain(&queue);
    let mut sub = SinkSubscriber::new(CountingSink {
        encoder: Some("other-2".into()),
        ..CountingSink::default()
    });
    let mut r = FrameReader::new(&bytes[..]).unwrap();
    let f = r.next_frame().unwrap().unwrap();
    let e = sub.apply(&f).unwrap_err();
    assert!(matches!(e, SubscribeError::EncoderMismatch { .. }), "{e}");
    assert!(e.to_string().contains("\"test-1\""), "{e}");
    // A source with no encoder key is not refused: nothing says they differ.
    let f = r.next_frame().unwrap().unwrap();
    assert!(matches!(f, Frame::Handshake(_)));
    sub.apply(&f).unwrap();
}

#[test]
fn the_source_limit_of_a_connection_is_enforced() {
    let (mut p, cpu, mem) = agent(AgentConfig::default());
    let queue = p.queue();
    queue.connected();
    interval(&mut p, cpu, mem, 0);
    let bytes = drain(&queue);
    let mut sub = SinkSubscriber::new(CountingSink::default()).with_source_limit(1);
    let mut r = FrameReader::new(&bytes[..]).unwrap();
    sub.apply(&r.next_frame().unwrap().unwrap()).unwrap();
    let e = sub.apply(&r.next_frame().unwrap().unwrap()).unwrap_err();
    assert!(e.to_string().contains("limit of 1 sources"), "{e}");
}

#[cfg(feature = "tokio")]
#[test]
fn over_tcp_a_forced_disconnect_resynchronizes_and_loses_nothing_sent_after() {
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use dendro_wire_std::receive::{Server, ServerConfig};
    use dendro_wire_std::send::{default_backoff, drain_queue, DrainOptions, Reconnect};
    let sinks: Arc<Mutex<Vec<Recording>>> = Arc::default();
    let server = {
        let sinks = sinks.clone();
        Server::start(
            TcpListener::bind("127.0.0.1:0").unwrap(),
            ServerConfig::default(),
            |_| Recording::default(),
            move |_, sink| sinks.lock().unwrap().push(sink),
        )
        .unwrap()
    };
    let addr = server.local_addr().unwrap();
    let (mut p, cpu, mem) = agent(AgentConfig::default().full_every(1000));
    let queue = p.queue();
    let stop = Arc::new(AtomicBool::new(false));
    // Keep a handle on each connection, so the test can cut it.
    let live: Arc<Mutex<Option<TcpStream>>> = Arc::default();
    let transport = {
        let (queue, stop, live) = (queue.clone(), stop.clone(), live.clone());
        std::thread::spawn(move || {
            let connect = || {
                let s = TcpStream::connect(addr)?;
                *live.lock().unwrap() = Some(s.try_clone()?);
                Ok(s)
            };
            let options = DrainOptions::default()
                .reconnect(Reconnect::After(
                    default_backoff()
                        .with_min_delay(Duration::from_millis(2))
                        .with_max_delay(Duration::from_millis(25)),
                ))
                .stop(stop);
            drain_queue(&queue, connect, options).unwrap()
        })
    };
    let wait_open = |connections: u64| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while queue.stats().connections < connections {
            assert!(Instant::now() < deadline, "no connection");
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let mut ts = 0;
    // The first connection, opened by the first interval after connecting.
    wait_open(1);
    for _ in 0..200 {
        interval(&mut p, cpu, mem, ts);
        ts += 1;
    }
    // Cut it, and wait for the transport to reconnect.
    while queue.len().frames > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    live.lock()
        .unwrap()
        .take()
        .unwrap()
        .shutdown(std::net::Shutdown::Both)
        .unwrap();
    // Rows observed while the link is down are dropped or lost with it,
    // until an interval opens the new connection: handshakes, a Full, the
    // latest of every stream (that interval's rows). Every row from that
    // interval on must arrive.
    let mut before_reconnect = 0;
    while p.stats().connections < 2 {
        interval(&mut p, cpu, mem, ts);
        ts += 1;
        before_reconnect += 1;
        assert!(before_reconnect < 100_000, "never reconnected");
        std::thread::sleep(Duration::from_millis(1));
    }
    let first_after = ts - 1;
    let dropped_at_cut = queue.stats().dropped_disconnected;
    for _ in 0..200 {
        interval(&mut p, cpu, mem, ts);
        ts += 1;
    }
    // Closing the queue drains it; `stop` would end the transport at once
    // and drop what is still queued.
    queue.close();
    transport.join().unwrap();
    assert_eq!(queue.stats().dropped_disconnected, dropped_at_cut);
    // The test's own handle on the connection would keep it open.
    drop(live.lock().unwrap().take());
    // The second connection may still wait in the listener's backlog, and
    // shutting down stops accepting: wait until the server has taken it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.stats().accepted < 2 {
        assert!(
            Instant::now() < deadline,
            "the server never accepted the reconnect"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    server.shutdown(Duration::from_secs(10));

    let sinks = sinks.lock().unwrap();
    assert_eq!(sinks.len(), 2, "two connections");
    let second = sinks
        .iter()
        .find(|s| {
            s.rows
                .contains(&("mem/used".to_string(), first_after + 199))
        })
        .unwrap_or_else(|| {
            let spans: Vec<_> = sinks
                .iter()
                .map(|s| {
                    (
                        s.rows.len(),
                        s.rows.iter().map(|r| r.1).max(),
                        s.sources.clone(),
                    )
                })
                .collect();
            panic!("no sink holds the last rows; first_after {first_after}, ts {ts}: {spans:?}")
        });
    for t in first_after..ts {
        for stream in ["cpu/usage", "cpu/irq", "mem/used"] {
            assert!(
                second.rows.contains(&(stream.to_string(), t)),
                "{stream} at {t} lost after the resync"
            );
        }
    }
    // It resynchronized within one Full: the first entry it saw was a Full.
    assert_eq!(second.index_entries.first(), Some(&(0, true)));
}

#[cfg(unix)]
#[test]
fn over_a_unix_socket_every_row_arrives() {
    use dendro_wire_std::send::{publish_unix, DrainOptions};
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("pubsub.sock");
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut sub = SinkSubscriber::new(CountingSink::default());
        serve(stream, &mut sub).unwrap();
        sub.tally()
    });
    let (mut p, cpu, mem) = agent(AgentConfig::default());
    let queue = p.queue();
    let transport = publish_unix(queue.clone(), path, DrainOptions::default());
    assert!(queue.wait_connected(Duration::from_secs(10)));
    for ts in 0..50 {
        interval(&mut p, cpu, mem, ts);
    }
    queue.close();
    let sent = transport.join().unwrap().unwrap();
    let applied = server.join().unwrap();
    assert_eq!(sent.connections, 1);
    assert_eq!(applied.rows_applied, 150);
    assert_eq!(applied.rows_applied, p.stats().rows_queued);
}

#[test]
fn an_index_entry_is_stamped_no_later_than_the_rows_after_it() {
    // Rule 5: rows are read against entries at or before their timestamps.
    let (mut p, cpu, mem) = agent(AgentConfig::default().full_every(3));
    let queue = p.queue();
    queue.connected();
    for ts in 0..20 {
        interval(&mut p, cpu, mem, 1000 + ts);
    }
    let bytes = drain(&queue);
    let mut r = FrameReader::new(&bytes[..]).unwrap();
    let mut entry_ts = None;
    let mut checked = 0;
    while let Some(f) = r.next_frame().unwrap() {
        match f {
            Frame::Index(i) => entry_ts = Some(i.ts),
            Frame::Rows(rows) if rows.source == 0 => {
                if let Some(e) = entry_ts.take() {
                    for row in rows.rows {
                        assert!(e <= row.ts, "entry at {e}, row at {}", row.ts);
                        checked += 1;
                    }
                }
            }
            _ => {}
        }
    }
    assert!(checked > 10);
}

#[test]
fn a_source_with_a_bad_uuid_is_refused_at_declaration() {
    let mut p = AgentPublisher::new(AgentConfig::default());
    let e = p
        .add_source(SourceConfig::new().uuid("NOT-CANONICAL"))
        .unwrap_err();
    assert!(e.to_string().contains("not canonical"), "{e}");
    // A minted one is canonical, and differs each time.
    p.add_source(SourceConfig::new()).unwrap();
    p.add_source(SourceConfig::new()).unwrap();
    let queue = p.queue();
    queue.connected();
    p.end_interval();
    let bytes = drain(&queue);
    let mut r = FrameReader::new(&bytes[..]).unwrap();
    let mut uuids = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        if let Frame::Handshake(h) = f {
            uuids.push(h.uuid.expect("minted").to_string());
        }
    }
    assert_eq!(uuids.len(), 2);
    assert_ne!(uuids[0], uuids[1]);
    assert!(
        uuids.iter().all(|u| &u[14..15] == "4"),
        "version 4: {uuids:?}"
    );
}

#[test]
fn what_cannot_fit_a_frame_is_refused_or_counted_never_a_panic() {
    let huge = "x".repeat(dendro_wire_core::MAX_FRAME_BYTES as usize);
    let mut p = AgentPublisher::new(AgentConfig::default());
    let e = p
        .add_source(SourceConfig::new().label("big", huge.clone()))
        .unwrap_err();
    assert!(e.to_string().contains("limit"), "{e}");

    let (mut p, cpu, mem) = agent(AgentConfig::default());
    let queue = p.queue();
    queue.connected();
    interval(&mut p, cpu, mem, 0);
    let segment = Segment {
        source: 0,
        stream: "cpu0/usage",
        rows: 1,
        first_ts: 0,
        last_ts: 0,
        bytes: huge.as_bytes(),
        caller_index: None,
    };
    assert!(p.segment(&segment).is_err());
    let labels = [("big".to_string(), huge.clone())].into();
    assert!(p.update_identity(mem, labels, Default::default()).is_err());
    let mem_labels = BTreeMap::from([("source".to_string(), "mem".to_string())]);

    // A row too large for any frame is left out and counted; the interval's
    // other rows still go.
    p.observe(mem, "mem/used", 1, 0, huge.as_bytes()).unwrap();
    p.observe(mem, "mem/used", 2, 0, &[1]).unwrap();
    p.end_interval();
    assert_eq!(p.stats().rows_dropped, 1);
    let bytes = drain(&queue);
    let mut sub = SinkSubscriber::new(Recording::default());
    serve(&bytes[..], &mut sub).unwrap();
    assert_eq!(sub.tally().rows_applied, p.stats().rows_queued);
    // The refused update reached no one: the subscriber holds mem's labels
    // as its handshake gave them.
    assert_eq!(sub.tally().source_updates, 0);
    assert_eq!(sub.sink().labels.get(&1), Some(&mem_labels));
    // And the publisher kept them whole: a new connection's handshake
    // carries them, not the refused ones nor any half of them.
    queue.connected();
    p.end_interval();
    let mut sub = SinkSubscriber::new(Recording::default());
    serve(&drain(&queue)[..], &mut sub).unwrap();
    assert_eq!(
        sub.sink().labels.get(&1),
        Some(&mem_labels),
        "after a reconnect"
    );
}

/// Written is not delivered: a transport counts the connections the
/// subscriber closed on it (here every one, at accept), and none when the
/// subscriber read the stream to its end.
#[test]
fn over_tcp_connections_the_subscriber_closed_are_counted() {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use dendro_wire_std::send::{default_backoff, publish_tcp, DrainOptions, Reconnect};
    let options = || {
        DrainOptions::default().reconnect(Reconnect::After(
            default_backoff()
                .with_min_delay(Duration::from_millis(5))
                .with_max_delay(Duration::from_millis(20)),
        ))
    };
    let publish = |addr, intervals: i64| {
        let (mut p, cpu, mem) = agent(AgentConfig::default());
        let queue = p.queue();
        let transport = publish_tcp(queue.clone(), addr, options());
        for ts in 0..intervals {
            assert!(queue.wait_connected(Duration::from_secs(10)));
            interval(&mut p, cpu, mem, ts);
            std::thread::sleep(Duration::from_millis(10));
        }
        queue.close();
        transport.join().unwrap().unwrap()
    };

    // A subscriber that closes every connection as soon as it has it.
    let closing = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closing.local_addr().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let closer = {
        let done = done.clone();
        closing.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                match closing.accept() {
                    Ok((s, _)) => drop(s),
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        })
    };
    let stats = publish(addr, 20);
    done.store(true, Ordering::Relaxed);
    closer.join().unwrap();
    assert!(stats.connections >= 1 && stats.frames > 0, "{stats:?}");
    assert_eq!(stats.closed_by_peer, stats.connections, "{stats:?}");

    // One that reads the stream to its end.
    let reading = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = reading.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = reading.accept().unwrap();
        std::io::Read::read_to_end(&mut s, &mut Vec::new()).unwrap()
    });
    let stats = publish(addr, 5);
    assert!(reader.join().unwrap() > 0);
    assert_eq!(
        (stats.connections, stats.closed_by_peer),
        (1, 0),
        "{stats:?}"
    );
}

#[test]
fn a_transport_whose_backoff_runs_out_ends_with_the_last_error() {
    use dendro_wire_std::send::{default_backoff, drain_queue, DrainOptions, Reconnect};
    let queue = FrameQueue::new(16, 1 << 16);
    let mut attempts = 0;
    let connect = || -> std::io::Result<Vec<u8>> {
        attempts += 1;
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("refused, attempt {attempts}"),
        ))
    };
    let backoff = default_backoff()
        .with_min_delay(Duration::from_millis(1))
        .with_max_times(2);
    let options = DrainOptions::default().reconnect(Reconnect::After(backoff));
    let err = drain_queue(&queue, connect, options).unwrap_err();
    // Two waits, so three attempts, and the third's error is said.
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    assert_eq!(
        err.to_string(),
        "refused, attempt 3; gave up after 3 failed attempt(s), as the backoff says"
    );
    assert_eq!(attempts, 3);

    // Reconnect::Never: the first failure is the end.
    let mut attempts = 0;
    let connect = || -> std::io::Result<Vec<u8>> {
        attempts += 1;
        Err(std::io::Error::other("no"))
    };
    let options = DrainOptions::default().reconnect(Reconnect::Never);
    assert_eq!(
        drain_queue(&queue, connect, options)
            .unwrap_err()
            .to_string(),
        "no"
    );
    assert_eq!(attempts, 1);
}
