//! Criterion benchmarks, each beside dendro 0.6.1 and `memcpy` on the same
//! bytes: decoding with the sans-IO decoder, reading with FrameReader,
//! encoding, and the subscriber's rules, on the realistic agent stream and
//! per frame kind; and the scan for streams in a blob beside memchr's own
//! memmem and a byte-by-byte search. `cargo xtask bench-report` prints the
//! ratios as a table.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dendro_wire_benches::{
    decode_all, dendro_read_all, encode_dendro, encode_machine, encode_ours, encode_unchecked,
    memcpy, reader_all, realistic, stream_heads, subscribe, EncodeInput, MachineEncoder,
};
use dendro_wire_core::{decode, Status};

fn stream(c: &mut Criterion) {
    let s = realistic(2000);
    let body = s.body().to_vec();
    let mut dst = vec![0u8; s.bytes.len()];
    let mut g = c.benchmark_group("realistic stream");
    g.throughput(Throughput::Bytes(s.bytes.len() as u64));
    g.bench_function("ours: decode (sans-IO)", |b| {
        b.iter(|| decode_all(&body, false))
    });
    g.bench_function("ours: decode + read every row", |b| {
        b.iter(|| decode_all(&body, true))
    });
    g.bench_function("ours: FrameReader", |b| {
        b.iter(|| reader_all(&s.bytes, false))
    });
    g.bench_function("ours: FrameReader + read every row", |b| {
        b.iter(|| reader_all(&s.bytes, true))
    });
    g.bench_function("dendro: FrameReader", |b| {
        b.iter(|| dendro_read_all(&s.bytes))
    });
    g.bench_function("ours: decode + subscriber rules", |b| {
        b.iter(|| subscribe(&body))
    });
    g.bench_function("memcpy", |b| b.iter(|| memcpy(&mut dst, &s.bytes)));
    g.finish();
}

/// Encoding the Rows frames of 200 intervals, each into a reused buffer:
/// ours (RowsBuilder, and the publisher machine with its stream names
/// prepared once), dendro's encode_frame, memcpy of the frames, and the
/// check-free reference writer.
fn encode(c: &mut Criterion) {
    let hot = realistic(200).rows_only();
    let heads = stream_heads();
    let input = EncodeInput::new(&hot, &heads);
    let frames: Vec<&[u8]> = hot.frames.iter().map(|r| &hot.bytes[r.clone()]).collect();
    let mut out = vec![0u8; 8192];
    let mut theirs = Vec::with_capacity(8192);
    let mut g = c.benchmark_group("encode Rows frames");
    g.throughput(Throughput::Bytes(hot.body().len() as u64));
    g.bench_function("ours: RowsBuilder", |b| {
        b.iter(|| encode_ours(&input, &mut out))
    });
    let mut machine = MachineEncoder::new();
    g.bench_function("ours: publisher machine, prepared names", |b| {
        b.iter(|| encode_machine(&input, &mut machine))
    });
    g.bench_function("dendro: encode_frame", |b| {
        b.iter(|| encode_dendro(&input, &mut theirs))
    });
    g.bench_function("memcpy of each frame", |b| {
        b.iter(|| frames.iter().map(|f| memcpy(&mut out, f)).sum::<u64>())
    });
    g.bench_function("reference: nothing checked", |b| {
        b.iter(|| encode_unchecked(&input, &mut out))
    });
    g.finish();
}

/// One frame of each kind, decoded by ours and by dendro's decode_payload.
fn per_kind(c: &mut Criterion) {
    let s = realistic(SEGMENT_EVERY_PLUS_ONE);
    let mut g = c.benchmark_group("per kind");
    let mut seen = std::collections::BTreeSet::new();
    for r in &s.frames {
        let frame = &s.bytes[r.clone()];
        let kind = frame[4];
        if !seen.insert(kind) {
            continue;
        }
        let name = dendro_wire_core::kind::name(kind);
        g.throughput(Throughput::Bytes(frame.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", name), frame, |b, f| {
            b.iter(|| match decode(black_box(f)) {
                Ok(Status::Complete((frame, n))) => black_box((frame, n)).1,
                _ => unreachable!(),
            })
        });
        g.bench_with_input(BenchmarkId::new("dendro", name), frame, |b, f| {
            b.iter(|| dendro::replicate::wire::decode_payload(black_box(&f[4..])).unwrap())
        });
    }
    g.finish();
}

/// Finding the preamble in 4 MiB of bytes that hold none but at the end
/// (a blob read by `dump --scan`): the library's scanner over all of it,
/// memchr's memmem finding every preamble, and a byte-by-byte search of
/// the same bytes, each counting what it found.
fn preamble_scan(c: &mut Criterion) {
    use dendro_wire_core::PREAMBLE;
    use dendro_wire_std::scan::{Found, Scanner};
    // Bytes from the tests' seeded xorshift, so no preamble is there by
    // chance, and one preamble at the end for each search to find.
    let mut x = dendro_wire_test_support::xorshift::XorShift::new(0x9e37_79b9_7f4a_7c15);
    let mut blob: Vec<u8> = (0..4 << 20).map(|_| x.next_u64() as u8).collect();
    blob.extend_from_slice(&PREAMBLE);
    let mut g = c.benchmark_group("preamble scan");
    g.throughput(Throughput::Bytes(blob.len() as u64));
    g.bench_function("ours: Scanner", |b| {
        b.iter(|| {
            let mut scanner = Scanner::new(black_box(&blob[..]));
            let mut streams = 0u32;
            while let Some(found) = scanner.next().unwrap() {
                streams += u32::from(matches!(found, Found::Stream { .. }));
            }
            streams
        })
    });
    let finder = memchr::memmem::Finder::new(&PREAMBLE);
    g.bench_function("memchr: memmem find_iter", |b| {
        b.iter(|| finder.find_iter(black_box(&blob)).count())
    });
    g.bench_function("byte by byte", |b| {
        b.iter(|| {
            black_box(&blob)
                .windows(PREAMBLE.len())
                .filter(|w| *w == PREAMBLE)
                .count()
        })
    });
    g.finish();
}

const SEGMENT_EVERY_PLUS_ONE: usize = dendro_wire_benches::SEGMENT_EVERY + 1;

criterion_group!(benches, stream, encode, per_kind, preamble_scan);
criterion_main!(benches);
