//! The tokio feature: the codecs against FrameReader and FrameWriter, and a
//! publisher and subscriber over tokio TCP.

#![cfg(feature = "tokio")]

use std::path::Path;

use bytes::BytesMut;
use dendro_wire_std::tokio::{drain_queue, serve, CodecError, FrameCodec, RawFrameCodec};
use dendro_wire_std::transport::Backoff;
use dendro_wire_std::{
    CountingSink, FrameReader, FrameWriter, OwnedFrame, Publisher, PublisherConfig, SourceConfig,
    Subscriber,
};
use tokio_util::codec::{Decoder, Encoder};

fn sample() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/sample.dwr")).unwrap()
}

fn read_all(bytes: &[u8]) -> Vec<OwnedFrame> {
    let mut r = FrameReader::new(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push(OwnedFrame::from(&f));
    }
    out
}

#[test]
fn the_codec_reads_what_frame_reader_reads_however_the_bytes_arrive() {
    let bytes = sample();
    let want = read_all(&bytes);
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
fn a_cut_stream_is_truncated_at_eof_and_a_bad_length_is_refused_before_growing() {
    let bytes = sample();
    let mut codec = RawFrameCodec::new();
    let mut buf = BytesMut::from(&bytes[..bytes.len() - 3]);
    while codec.decode(&mut buf).unwrap().is_some() {}
    assert!(matches!(
        codec.decode_eof(&mut buf),
        Err(CodecError::Truncated { .. })
    ));

    let mut codec = RawFrameCodec::new();
    let mut buf = BytesMut::from(&b"dendro-repl\0\x01\x00\xff\xff\xff\xff"[..]);
    assert!(matches!(codec.decode(&mut buf), Err(CodecError::Wire(_))));
    assert!(buf.capacity() < 1 << 20, "grew to {}", buf.capacity());
}

#[test]
fn encoding_writes_what_frame_writer_writes() {
    let frames = read_all(&sample());
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    let mut codec = FrameCodec::new();
    let mut out = BytesMut::new();
    for f in &frames {
        w.write_owned(f).unwrap();
        codec.encode(f, &mut out).unwrap();
    }
    assert_eq!(&out[..], &w.into_inner()[..]);

    // The raw codec forwards frames byte for byte.
    let bytes = sample();
    let mut read = RawFrameCodec::new();
    let mut write = RawFrameCodec::new();
    let mut src = BytesMut::from(&bytes[..]);
    let mut dst = BytesMut::new();
    while let Some(raw) = read.decode(&mut src).unwrap() {
        raw.view().unwrap();
        write.encode(raw, &mut dst).unwrap();
    }
    assert_eq!(read_all(&dst), read_all(&bytes));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_streams_to_a_tokio_subscriber() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut sub = Subscriber::new(CountingSink::default());
        serve(stream, &mut sub).await.unwrap();
        sub.applied()
    });

    let mut p = Publisher::new(PublisherConfig::default());
    let s = p
        .add_source(SourceConfig::new().label("source", "x").stream("x/y"))
        .unwrap();
    let queue = p.queue();
    let transport = tokio::spawn(drain_queue(
        queue.clone(),
        move || tokio::net::TcpStream::connect(addr),
        Backoff::default(),
    ));
    while queue.stats().connections == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    for ts in 0..100 {
        p.observe(s, "x/y", ts, 0, &[1, 2, 3]).unwrap();
        p.end_interval();
    }
    queue.close();
    let sent = transport.await.unwrap().unwrap();
    let applied = server.await.unwrap();
    assert_eq!(sent.connections, 1);
    assert_eq!(
        (applied.sources, applied.rows, applied.rows_skipped),
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
