//! The tokio feature: the codecs against FrameReader and FrameWriter, and a
//! publisher and subscriber over tokio TCP.

#![cfg(feature = "tokio")]

use bytes::BytesMut;
use dendro_wire_core::Frame;
use dendro_wire_std::receive::serve_async;
use dendro_wire_std::send::{drain_queue_async, DrainOptions};
use dendro_wire_std::tokio_codec::{FrameCodec, RawFrame, RawFrameCodec};
use dendro_wire_std::{
    write_frame_to, AgentConfig, AgentPublisher, CountingSink, FrameReader, FrameWriter,
    OwnedFrame, Position, ReadErrorKind, SinkSubscriber, SourceConfig,
};
use dendro_wire_test_support::fixtures::testdata;
use dendro_wire_test_support::streams::read_rest;
use tokio_util::codec::{Decoder, Encoder};

fn sample() -> Vec<u8> {
    std::fs::read(testdata("sample.dwr")).unwrap()
}

#[test]
fn the_codec_reads_what_frame_reader_reads_however_the_bytes_arrive() {
    let bytes = sample();
    let (want, error) = read_rest(FrameReader::new(&bytes[..]).unwrap());
    assert!(error.is_none(), "{error:?}");
    for chunk in [1, 3, 17, 4096] {
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for piece in bytes.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(f) = codec.decode(&mut buf).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(codec.decode_eof(&mut buf).unwrap(), None, "a clean end");
        assert_eq!(got, want, "chunks of {chunk}");
        assert_eq!(codec.unknown(), 1);
    }
}

#[test]
fn a_cut_stream_is_truncated_at_eof_and_a_bad_length_is_refused_with_its_place() {
    let bytes = sample();
    let mut codec = RawFrameCodec::new();
    let mut buf = BytesMut::from(&bytes[..bytes.len() - 3]);
    let mut last = None;
    while let Some(raw) = codec.decode(&mut buf).unwrap() {
        last = Some(raw.position());
    }
    let err = codec.decode_eof(&mut buf).unwrap_err();
    let ReadErrorKind::Truncated { have, .. } = err.kind() else {
        panic!("{err}")
    };
    // Frame 13 is the last; 12 are cut whole (one of them unknown, skipped).
    assert_eq!(last.map(|p| p.frame), Some(12));
    assert_eq!(err.position().map(|p| p.frame), Some(13));
    assert_eq!(err.offset() + *have as u64, bytes.len() as u64 - 3);
    assert!(
        err.to_string().starts_with("frame 13 (stream byte "),
        "{err}"
    );

    let mut codec = RawFrameCodec::new();
    let mut buf = BytesMut::from(&b"dendro-repl\0\x01\x00\xff\xff\xff\xff"[..]);
    let err = codec.decode(&mut buf).unwrap_err();
    assert!(matches!(err.kind(), ReadErrorKind::Malformed(_)));
    assert_eq!(
        err.position(),
        Some(Position {
            frame: 1,
            offset: 14
        })
    );
    assert!(buf.capacity() < 1 << 20, "grew to {}", buf.capacity());
    // The error says where and why, and what caused it.
    assert!(std::error::Error::source(&err).is_some());
}

/// The stream cut at every offset: the codec ends as `FrameReader` does,
/// after the same frames, with the same error at the same place (or the
/// same clean end at a frame boundary).
#[test]
fn cut_anywhere_the_codec_ends_as_frame_reader_does() {
    let bytes = sample();
    for cut in 0..=bytes.len() {
        let cut_bytes = &bytes[..cut];
        let reader = FrameReader::new(cut_bytes).and_then(|mut r| {
            let mut frames = 0;
            while let Some(f) = r.next_frame()? {
                assert!(!matches!(f, Frame::Unknown { .. }));
                frames += 1;
            }
            Ok(frames)
        });
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(cut_bytes);
        let mut frames = 0;
        let codec_end = loop {
            match codec.decode_eof(&mut buf) {
                Ok(Some(_)) => frames += 1,
                Ok(None) => break Ok(frames),
                Err(e) => break Err(e),
            }
        };
        assert_eq!(
            reader.map_err(|e| e.to_string()),
            codec_end.map_err(|e| e.to_string()),
            "cut at {cut} of {}",
            bytes.len()
        );
    }
}

#[test]
fn encoding_writes_what_frame_writer_writes_from_borrowed_owned_and_built_frames() {
    let bytes = sample();
    let (frames, error) = read_rest(FrameReader::new(&bytes[..]).unwrap());
    assert!(error.is_none(), "{error:?}");
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    let (mut owned, mut borrowed, mut built) =
        (FrameCodec::new(), FrameCodec::new(), RawFrameCodec::new());
    let (mut a, mut b, mut c) = (BytesMut::new(), BytesMut::new(), BytesMut::new());
    for f in &frames {
        w.write_owned(f).unwrap();
        owned.encode(f, &mut a).unwrap();
        f.with_view(|view| {
            borrowed.encode(view, &mut b).unwrap();
            let mut encoded = Vec::new();
            write_frame_to(&mut encoded, view).unwrap();
            built.encode(&encoded[..], &mut c).unwrap();
        });
    }
    let want = w.into_inner();
    assert_eq!(&a[..], &want[..]);
    assert_eq!(&b[..], &want[..]);
    assert_eq!(&c[..], &want[..]);
    // Bytes that are not exactly one frame are refused, and nothing is
    // written.
    let mut out = BytesMut::new();
    let one = &want[14..14 + 4 + u32::from_le_bytes(want[14..18].try_into().unwrap()) as usize];
    let mut two = one.to_vec();
    two.extend_from_slice(one);
    let err = RawFrameCodec::new().encode(&two[..], &mut out).unwrap_err();
    assert!(
        matches!(err.kind(), ReadErrorKind::NotOneFrame { .. }),
        "{err}"
    );
    assert!(out.is_empty());
    assert!(RawFrame::new(bytes::Bytes::copy_from_slice(one)).is_ok());
    assert!(RawFrame::new(bytes::Bytes::copy_from_slice(&one[..one.len() - 1])).is_err());
}

#[test]
fn a_forwarder_passes_every_frame_on_byte_for_byte_unknown_kinds_included() {
    let bytes = sample();
    let mut read = RawFrameCodec::new().yield_unknown(true);
    let mut write = RawFrameCodec::new();
    let mut src = BytesMut::from(&bytes[..]);
    let mut dst = BytesMut::new();
    let mut viewed = 0;
    while let Some(raw) = read.decode(&mut src).unwrap() {
        // Decoded once, here, in place.
        let view = raw.view().unwrap();
        assert_eq!(view.kind(), raw.kind());
        viewed += 1;
        write.encode(raw, &mut dst).unwrap();
    }
    assert_eq!(read.decode_eof(&mut src).unwrap(), None);
    assert_eq!((viewed, read.unknown()), (13, 1));
    assert_eq!(&dst[..], &bytes[..], "not forwarded byte for byte");

    // Without asking, the unknown frame is skipped, and counted.
    let mut skipping = FrameCodec::new();
    let mut src = BytesMut::from(&bytes[..]);
    let mut frames = 0;
    while skipping.decode(&mut src).unwrap().is_some() {
        frames += 1;
    }
    assert_eq!((frames, skipping.unknown()), (12, 1));
    let mut keeping = FrameCodec::new().yield_unknown(true);
    let mut src = BytesMut::from(&bytes[..]);
    let mut kinds = Vec::new();
    while let Some(f) = keeping.decode(&mut src).unwrap() {
        kinds.push(matches!(f, OwnedFrame::Unknown { kind: 42, .. }));
    }
    assert_eq!(kinds.iter().filter(|u| **u).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_streams_to_a_tokio_subscriber() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut sub = SinkSubscriber::new(CountingSink::default());
        serve_async(stream, &mut sub).await.unwrap();
        sub.tally()
    });

    let mut p = AgentPublisher::new(AgentConfig::default());
    let s = p
        .add_source(SourceConfig::new().label("source", "x").stream("x/y"))
        .unwrap();
    let queue = p.queue();
    let transport = tokio::spawn(drain_queue_async(
        queue.clone(),
        move || tokio::net::TcpStream::connect(addr),
        DrainOptions::default(),
    ));
    let connected = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        queue.wait_connected_async(),
    );
    assert!(connected.await.unwrap(), "the transport connects");
    for ts in 0..100 {
        p.observe(s, "x/y", ts, 0, &[1, 2, 3]).unwrap();
        p.end_interval();
    }
    queue.close();
    let sent = transport.await.unwrap().unwrap();
    let applied = server.await.unwrap();
    assert_eq!(sent.connections, 1);
    assert_eq!(
        (applied.sources, applied.rows_applied, applied.rows_skipped),
        (1, 100, 0)
    );
}

#[test]
fn the_codec_grows_with_the_bytes_that_arrived_not_what_a_length_claims() {
    let mut codec = RawFrameCodec::new();
    let mut buf = BytesMut::new();
    buf.extend_from_slice(b"dendro-repl\0\x01\x00");
    buf.extend_from_slice(&(64u32 << 20).to_le_bytes());
    buf.extend_from_slice(&[3; 100]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(
        buf.capacity() < 64 << 10,
        "reserved {} bytes for a frame of which 104 arrived",
        buf.capacity()
    );
}

/// The async transport is the blocking one's logic: failed connects are
/// counted and their error kept, the backoff between them is the options',
/// and the stop flag ends it while it waits on an open connection with the
/// queue neither closed nor empty-and-closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_transport_retries_as_told_and_stops_when_told() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use dendro_wire_std::send::{default_backoff, Reconnect};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut bytes = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut bytes)
            .await
            .unwrap();
        bytes
    });
    let queue = AgentPublisher::new(AgentConfig::default()).queue();
    let attempts = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let options = DrainOptions::default()
        .reconnect(Reconnect::After(
            default_backoff()
                .with_min_delay(Duration::from_millis(1))
                .with_max_delay(Duration::from_millis(2)),
        ))
        .stop(stop.clone());
    let transport = tokio::spawn(drain_queue_async(
        queue.clone(),
        {
            let attempts = attempts.clone();
            move || {
                let attempt = attempts.fetch_add(1, Ordering::Relaxed);
                async move {
                    if attempt < 2 {
                        return Err(std::io::Error::other(format!("refused, attempt {attempt}")));
                    }
                    tokio::net::TcpStream::connect(addr).await
                }
            }
        },
        options,
    ));
    // Two refusals first: the wait sees only the third attempt's success.
    let connected = tokio::time::timeout(Duration::from_secs(10), queue.wait_connected_async());
    assert!(connected.await.unwrap(), "the transport connects");
    assert_eq!(attempts.load(Ordering::Relaxed), 3);
    stop.store(true, Ordering::Relaxed);
    let sent = tokio::time::timeout(Duration::from_secs(5), transport)
        .await
        .expect("the stop flag ends the async transport")
        .unwrap()
        .unwrap();
    assert!(!queue.is_closed(), "stopped, not closed");
    assert_eq!((sent.failed_connects, sent.connections), (2, 1));
    assert_eq!(sent.last_error.as_deref(), Some("refused, attempt 1"));
    // The one connection got its preamble, and the socket was closed.
    assert_eq!(&server.await.unwrap()[..], b"dendro-repl\0\x01\x00");
}

/// A task waiting on the queue is woken by a frame or the close, not by a
/// timer: with nothing pushed it stays pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_on_the_queue_is_woken_by_a_frame_or_the_close() {
    use std::time::Duration;

    let queue = AgentPublisher::new(AgentConfig::default()).queue();
    queue.connected();
    queue.push_opening(queue.pending_opening().unwrap(), []);
    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.ready().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "ready with nothing queued");
    queue.push(vec![1, 0, 0, 0, 42]);
    tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken by the push")
        .unwrap();
    assert_eq!(queue.pop(Duration::ZERO), Some(vec![1, 0, 0, 0, 42]));

    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.ready().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "ready with nothing queued");
    queue.close();
    tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken by the close")
        .unwrap();
}

/// `Serving` on the test's own runtime: spawned as a task, its bounds
/// `ServerConfig`'s (here a connection cap of one), stopped by a future.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_on_the_callers_runtime_keeps_its_bounds_and_stops_on_a_future() {
    use dendro_wire_std::receive::{ServerConfig, Serving};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut config = ServerConfig::default();
    config.max_connections = 1;
    let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
    let serving = Serving::new(
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        config,
        |_| CountingSink::default(),
        move |e, _sink| ended_tx.send(e).unwrap(),
    )
    .unwrap();
    let addr = serving.local_addr().unwrap();
    let watch = serving.watch();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serving.run_until(async {
        let _ = stopped.await;
    }));

    // One connection holds the cap: the sample, less its last 3 bytes.
    let bytes = sample();
    let mut first = tokio::net::TcpStream::connect(addr).await.unwrap();
    first.write_all(&bytes[..bytes.len() - 3]).await.unwrap();
    // Once it has opened its sources (a connection yet to open one would
    // be evicted to admit the next)...
    while watch.live().first().map(|c| c.tally.sources) != Some(2) {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    // ...a second is closed at once, as Server::start's would be.
    let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(second.read(&mut byte).await.unwrap_or(0), 0, "closed");
    while watch.stats().refused == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }

    // The caller's future stops it: what arrived is applied, the cut frame
    // reported, and every connection's `done` has run before it returns.
    stop.send(()).unwrap();
    let stats = server.await.unwrap();
    assert_eq!(
        (stats.accepted, stats.refused, stats.live, stats.ended),
        (1, 1, 0, 1)
    );
    let e = ended.recv().await.unwrap();
    assert_eq!(e.tally.rows_applied, 4, "{e}");
    assert!(e.to_string().contains("shut down"), "{e}");
    drop(first);
}
