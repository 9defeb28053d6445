//! Against dendro 0.6.1's own archive side (feature `archive`): a stream from
//! our publisher lands whole through dendro's `Subscriber`; a stream from
//! dendro's `ArchivePublisher` is applied here as dendro applies it; our
//! `ArchiveSink` writes an archive dendro reads back; and the streams the
//! Cortex-M3 agent wrote under `cargo xtask firmware` land whole too.

#![cfg(feature = "archive")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use dendro::archive::{Archive, CallerRow, SourceMeta, WalRow};
use dendro::replicate::wire::{encode_frame, write_preamble, FrameReader as DReader};
use dendro::replicate::{ArchivePublisher, Frame as DFrame, Subscriber as DSubscriber};
use dendro::writer::Writer;
use dendro_wire_std::archive::{contents, RawRowsEncoder, SharedArchive};
use dendro_wire_std::dendro_wire_core::Frame;
use dendro_wire_std::receive::serve;
use dendro_wire_std::{
    AgentConfig, AgentPublisher, CountingSink, FrameReader, SinkSubscriber, SourceConfig,
};
use dendro_wire_test_support::scratch;

const ENCODER: &str = "test-raw-1";

/// Rows as (source label, stream, ts, bytes), for comparing sets of them.
type Rowset = BTreeSet<(String, String, i64, Vec<u8>)>;

/// A stream from our publisher: two sources, one indexed, slot churn, and
/// every row recorded as (source label, stream, ts, bytes).
fn published() -> (Vec<u8>, Rowset) {
    let mut p = AgentPublisher::new(AgentConfig::default().full_every(25));
    let streams = ["cpu0/usage", "cpu1/usage"];
    let cpu = p
        .add_source(
            SourceConfig::new()
                .label("source", "cpu")
                .metadata("encoder", ENCODER)
                .stream(streams[0])
                .stream(streams[1])
                .index("cpu/slots"),
        )
        .unwrap();
    let mem = p
        .add_source(
            SourceConfig::new()
                .label("source", "mem")
                .metadata("encoder", ENCODER)
                .stream("mem/used"),
        )
        .unwrap();
    let queue = p.queue();
    queue.connected();
    let mut rows = BTreeSet::new();
    for ts in 1..=200i64 {
        if ts % 9 == 0 {
            p.set_slot(cpu, format!("cpu{}", ts % 2).as_bytes(), &ts.to_le_bytes());
        }
        for s in streams {
            let row = [s.as_bytes(), &ts.to_le_bytes()].concat();
            p.observe(cpu, s, ts, 3, &row).unwrap();
            rows.insert(("cpu".to_string(), s.to_string(), ts, row));
        }
        let row = ts.to_be_bytes().to_vec();
        p.observe(mem, "mem/used", ts, -3, &row).unwrap();
        rows.insert(("mem".to_string(), "mem/used".to_string(), ts, row));
        if ts % 50 == 0 {
            p.clock_offset(cpu, ts, 11).unwrap();
        }
        p.end_interval();
    }
    let mut bytes = b"dendro-repl\0\x01\x00".to_vec();
    while let Some(f) = queue.pop(Duration::ZERO) {
        bytes.extend_from_slice(&f);
    }
    assert_eq!(p.stats().rows_dropped, 0);
    (bytes, rows)
}

/// Every WAL row of an archive, as (source label, stream, ts, bytes).
fn archived(path: &Path) -> Rowset {
    let db = Archive::open(path).unwrap();
    let mut out = BTreeSet::new();
    for source in db.read_sources().unwrap() {
        let label = source.meta.labels["source"].clone();
        for stream in db.all_streams(source.id).unwrap() {
            for r in db.live_wal(source.id, &stream).unwrap() {
                out.insert((label.clone(), r.stream, r.ts, r.row));
            }
        }
    }
    out
}

#[test]
fn our_stream_applied_by_dendros_subscriber_lands_every_row() {
    let (bytes, rows) = published();
    let path = scratch!("ours-into-dendro").join("copy.dendro");
    let writer = Writer::create(&path, Box::new(RawRowsEncoder::new(ENCODER))).unwrap();
    let mut sub = DSubscriber::new(writer);
    let mut reader = DReader::new(&bytes[..]).unwrap();
    let (mut applied, mut skipped, mut gaps) = (0, 0, 0);
    while let Some(frame) = reader.next_frame().unwrap() {
        let a = sub.apply(frame).unwrap();
        applied += a.rows;
        skipped += a.rows_skipped;
        gaps += usize::from(a.gap);
    }
    sub.sync().unwrap();
    sub.finish().unwrap();
    assert_eq!((applied, skipped, gaps), (rows.len(), 0, 0));
    assert_eq!(archived(&path), rows);
}

#[test]
fn our_archive_sink_writes_an_archive_dendro_reads() {
    let (bytes, rows) = published();
    let path = scratch!("ours-into-ours").join("copy.dendro");
    let archive = SharedArchive::create(&path, ENCODER).unwrap();
    let mut sub = SinkSubscriber::new(archive.connection());
    serve(&bytes[..], &mut sub).unwrap();
    let applied = sub.tally();
    assert_eq!(
        (applied.rows_applied, applied.rows_skipped),
        (rows.len() as u64, 0)
    );
    sub.finish().unwrap();
    archive.finish().unwrap();
    assert_eq!(archived(&path), rows);
    let db = Archive::open(&path).unwrap();
    let cpu = db
        .read_sources()
        .unwrap()
        .into_iter()
        .find(|s| s.meta.labels["source"] == "cpu")
        .unwrap();
    assert_eq!(cpu.meta.metadata["encoder"], ENCODER);
    // What `contents` reports is what dendro's reader holds, row for row.
    let held: BTreeMap<String, u64> = contents(&path)
        .unwrap()
        .into_iter()
        .map(|s| (s.labels["source"].clone(), s.wal_rows))
        .collect();
    let mut want = BTreeMap::new();
    for (source, ..) in &rows {
        *want.entry(source.clone()).or_default() += 1;
    }
    assert_eq!(held, want);
}

/// A publisher-side archive with something in every table: two sources,
/// caller rows, a sealed stream and a live one, finalized.
fn build_origin(path: &Path) {
    let mut w = Writer::create(path, Box::new(RawRowsEncoder::new(ENCODER))).unwrap();
    for name in ["a", "b"] {
        let mut s = w
            .add_source(SourceMeta {
                labels: [("source".to_string(), name.to_string())].into(),
                metadata: Default::default(),
                clock_anchor_wall_ns: 1_700_000_000_000_000_000,
            })
            .unwrap();
        s.caller_rows(
            "s",
            vec![CallerRow {
                ts: 500,
                blob: format!("{name}:slots").into_bytes(),
            }],
        )
        .unwrap();
        let row = |stream: &str, ts: i64| WalRow {
            stream: stream.into(),
            ts,
            wall_offset: 7,
            row: ts.to_le_bytes().to_vec(),
        };
        s.wal(vec![row("s", 1_000), row("s", 2_000), row("t", 1_500)])
            .unwrap();
        s.seal(vec!["s".to_string()]).unwrap();
        s.sync().unwrap();
        s.wal(vec![row("s", 3_000), row("t", 3_500)]).unwrap();
        s.sync().unwrap();
        s.finalize((3_500, 7)).unwrap();
    }
    w.join().unwrap();
}

#[test]
fn dendros_archive_publisher_stream_is_applied_here_as_dendro_applies_it() {
    let dir = scratch!("dendro-into-ours");
    let origin = dir.join("origin.dendro");
    build_origin(&origin);
    let db = Archive::open(&origin).unwrap();
    let (mut publisher, opening) = ArchivePublisher::catching_up(&db, i64::MIN).unwrap();
    let frames: Vec<DFrame> = opening
        .into_iter()
        .chain(publisher.next(&db).unwrap())
        .collect();
    let mut bytes = Vec::new();
    write_preamble(&mut bytes).unwrap();
    for f in &frames {
        encode_frame(f, &mut bytes).unwrap();
    }

    // dendro applies it into an archive of its own.
    let copy = dir.join("copy.dendro");
    let writer = Writer::create(&copy, Box::new(RawRowsEncoder::new(ENCODER))).unwrap();
    let mut theirs = DSubscriber::new(writer);
    let t = theirs.apply_all(frames).unwrap();
    theirs.sync().unwrap();
    theirs.finish().unwrap();

    // Ours applies the bytes.
    let mut ours = SinkSubscriber::new(CountingSink::default());
    serve(&bytes[..], &mut ours).unwrap();
    let o = ours.tally();
    assert_eq!(o.rows_skipped, 0, "nothing skipped");
    assert!(
        o.rows_applied > 0 && o.segments > 0 && o.index_entries > 0,
        "{o:?}"
    );
    assert_eq!(
        (
            o.rows_applied as usize,
            o.rows_skipped as usize,
            o.segments as usize,
            o.index_entries as usize,
            o.clock_offsets as usize,
            o.sources as usize,
            o.source_updates as usize,
        ),
        (
            t.rows,
            t.rows_skipped,
            t.segments + t.segments_held,
            t.index_entries,
            t.clock_offsets,
            t.sources,
            t.source_updates,
        )
    );
    assert_eq!(ours.sink().rows, o.rows_applied);
}

#[test]
fn dendros_tailing_publisher_stream_is_applied_here_with_nothing_skipped() {
    let dir = scratch!("dendro-tail-into-ours");
    let origin = dir.join("origin.dendro");
    let mut w = Writer::create(&origin, Box::new(RawRowsEncoder::new(ENCODER))).unwrap();
    let mut s = w
        .add_source(SourceMeta {
            labels: [("source".to_string(), "live".to_string())].into(),
            metadata: Default::default(),
            clock_anchor_wall_ns: 0,
        })
        .unwrap();
    let row = |ts: i64| WalRow {
        stream: "x".into(),
        ts,
        wall_offset: 0,
        row: ts.to_le_bytes().to_vec(),
    };
    s.wal((0..10).map(row).collect()).unwrap();
    s.sync().unwrap();

    let db = Archive::open(&origin).unwrap();
    let (mut publisher, mut frames) = ArchivePublisher::tailing(&db).unwrap();
    // Rows arriving after the publisher attached, in three polls.
    for batch in 1..=3 {
        s.caller_rows(
            "x",
            vec![CallerRow {
                ts: batch * 100,
                blob: vec![batch as u8],
            }],
        )
        .unwrap();
        s.wal((batch * 100..batch * 100 + 20).map(row).collect())
            .unwrap();
        s.clock_offset(batch * 100, 1).unwrap();
        s.sync().unwrap();
        frames.extend(publisher.next(&db).unwrap());
    }
    drop(s);
    w.join().unwrap();

    let mut bytes = Vec::new();
    write_preamble(&mut bytes).unwrap();
    for f in &frames {
        encode_frame(f, &mut bytes).unwrap();
    }
    let copy = dir.join("copy.dendro");
    let mut theirs =
        DSubscriber::new(Writer::create(&copy, Box::new(RawRowsEncoder::new(ENCODER))).unwrap());
    let t = theirs.apply_all(frames).unwrap();
    theirs.finish().unwrap();

    let mut ours = SinkSubscriber::new(CountingSink::default());
    serve(&bytes[..], &mut ours).unwrap();
    let o = ours.tally();
    assert_eq!(
        o.rows_applied, 60,
        "the rows that arrived after it attached: {o:?}"
    );
    assert_eq!(o.rows_skipped, 0);
    assert_eq!(
        (
            o.rows_applied as usize,
            o.index_entries as usize,
            o.clock_offsets as usize,
            o.sources as usize
        ),
        (t.rows, t.index_entries, t.clock_offsets, t.sources)
    );
    assert_eq!(t.rows_skipped, 0);
}

/// The streams the firmware agent wrote (connection N's as
/// `connection-N.dwr`), in connection order; none until
/// `cargo xtask firmware` has run it. The Cortex-M3 run's, or those of the
/// directory `FIRMWARE_STREAMS` names.
fn firmware_streams() -> Vec<PathBuf> {
    let dir = std::env::var_os("FIRMWARE_STREAMS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/firmware/thumbv7m-none-eabi"),
        PathBuf::from,
    );
    (0..)
        .map(|n| dir.join(format!("connection-{n}.dwr")))
        .take_while(|path| path.exists())
        .collect()
}

#[test]
#[ignore = "needs the firmware agent's streams: run by cargo xtask firmware"]
fn firmware_streams_applied_by_dendros_subscriber_land_every_row() {
    let streams = firmware_streams();
    // A connection and the reconnect (rule 8): never a pass over nothing.
    assert!(
        streams.len() >= 2,
        "target/firmware/<target> holds {} connection-N.dwr stream(s); `cargo xtask firmware` writes them",
        streams.len()
    );
    // One archive, as one subscriber sees an agent that reconnects.
    let copy = scratch!("firmware-into-dendro").join("copy.dendro");
    let mut theirs = None;
    let (mut rows, mut carried) = (BTreeSet::new(), 0);
    for path in &streams {
        let at = path.display();
        let bytes = std::fs::read(path).unwrap();
        // What the stream carries, read and judged here.
        let mut labels = BTreeMap::new();
        let mut ours = SinkSubscriber::new(CountingSink::default());
        let mut reader = FrameReader::new(&bytes[..]).unwrap();
        let mut encoder = None;
        while let Some(frame) = reader.next_frame().unwrap() {
            match &frame {
                Frame::Handshake(h) => {
                    labels.insert(h.source, h.labels.get("source").unwrap().to_string());
                    encoder = h.metadata.get("encoder").map(str::to_string);
                }
                Frame::Rows(r) => {
                    for row in r.rows.iter() {
                        let label = labels[&r.source].clone();
                        rows.insert((label, row.stream.into(), row.ts, row.row.to_vec()));
                        carried += 1;
                    }
                }
                _ => {}
            }
            ours.apply(&frame).unwrap();
        }
        let o = ours.tally();
        assert!(o.rows_applied > 0 && o.index_entries > 0, "{at}: {o:?}");

        // dendro applies the same bytes.
        let theirs = theirs.get_or_insert_with(|| {
            let encoder = encoder.expect("a handshake names the rows' encoder");
            let writer = Writer::create(&copy, Box::new(RawRowsEncoder::new(encoder)));
            DSubscriber::new(writer.unwrap())
        });
        let mut reader = DReader::new(&bytes[..]).unwrap();
        let (mut applied, mut skipped, mut gaps, mut entries) = (0, 0, 0, 0);
        while let Some(frame) = reader.next_frame().unwrap() {
            let a = theirs.apply(frame).unwrap();
            applied += a.rows as u64;
            skipped += a.rows_skipped as u64;
            gaps += u64::from(a.gap);
            entries += a.index_entries as u64;
        }
        assert_eq!(skipped, 0, "{at}: no row skipped");
        assert_eq!(
            (applied, entries, gaps),
            (o.rows_applied, o.index_entries, o.gaps),
            "{at}: dendro applies the stream as this crate does"
        );
    }
    let mut theirs = theirs.unwrap();
    theirs.sync().unwrap();
    theirs.finish().unwrap();
    assert_eq!(rows.len(), carried, "no row is carried twice");
    assert_eq!(archived(&copy), rows, "the archive holds every row carried");
}

/// The same frames, sent to a collector over plaintext TCP and over TLS:
/// each capture is the stream byte for byte, and dendro's own `Subscriber`
/// lands every row of it.
#[cfg(feature = "tls")]
#[test]
fn the_same_frames_over_plaintext_and_tls_reach_dendros_subscriber_whole() {
    use std::io::Write;

    use dendro_wire_std::receive::{Server, ServerConfig};
    use dendro_wire_std::tls;
    use dendro_wire_test_support::certs::Ca;

    let (bytes, rows) = published();
    let (servers, clients) = (Ca::new("servers"), Ca::new("clients"));
    for tls in [false, true] {
        let dir = scratch!(if tls { "interop-tls" } else { "interop-plain" });
        let mut config = ServerConfig::default();
        config.record = Some(dir.join("record"));
        if tls {
            config.tls = Some(servers.server(tls::server_config, &clients));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let server = Server::start(
            std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
            config,
            |_| CountingSink::default(),
            move |ended, _| tx.send(ended).unwrap(),
        )
        .unwrap();
        let addr = server.local_addr().unwrap();
        if tls {
            let agent = clients.client(tls::client_config, &servers, "agent", false);
            agent
                .connect(addr, "localhost")
                .unwrap()
                .write_all(&bytes)
                .unwrap();
        } else {
            std::net::TcpStream::connect(addr)
                .unwrap()
                .write_all(&bytes)
                .unwrap();
        }
        let ended = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(ended.result.is_ok(), "{ended}");
        server.shutdown(Duration::ZERO);
        let capture = std::fs::read(ended.info.capture.unwrap()).unwrap();
        assert!(
            capture == bytes,
            "tls {tls}: the capture differs from what was sent"
        );

        let path = dir.join("copy.dendro");
        let writer = Writer::create(&path, Box::new(RawRowsEncoder::new(ENCODER))).unwrap();
        let mut sub = DSubscriber::new(writer);
        let mut reader = DReader::new(&capture[..]).unwrap();
        let (mut applied, mut skipped) = (0, 0);
        while let Some(frame) = reader.next_frame().unwrap() {
            let a = sub.apply(frame).unwrap();
            applied += a.rows;
            skipped += a.rows_skipped;
        }
        sub.finish().unwrap();
        assert_eq!((applied, skipped), (rows.len(), 0), "tls {tls}");
        assert_eq!(archived(&path), rows, "tls {tls}");
    }
}
