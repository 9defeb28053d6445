//! The golden frames, and the decoder's fast walk against a plain
//! field-by-field walk: the fast walk guesses row lengths, checks names a
//! word at a time and reads ahead, and none of that may change what it
//! accepts.

extern crate std;

use std::string::String;
use std::vec::Vec;

use super::builder::*;
use super::walk::*;
use super::*;
use crate::codec::Items;
use crate::frame::golden::{assert_golden, cat};
use crate::framing::HEAD_BYTES;
use crate::{decode, Frame, NO_INDEX_STATE};

const ROW: Row<'static> = Row {
    stream: "cpu",
    ts: 10,
    wall_offset: -3,
    row: &[0x0a, 0x0b],
};

#[test]
fn the_golden_bytes_are_the_frame() {
    // Source 0, seq 7, index_state (1, 2), one row {cpu, ts 10,
    // wall_offset -3, row 0a 0b}; a payload of 32 + 29 bytes. Written from
    // the protocol's §4.3, field by field.
    let bytes = cat(&[
        &[62, 0, 0, 0],            // len
        &[3],                      // kind: Rows
        &[0, 0, 0, 0],             // source
        &[7, 0, 0, 0, 0, 0, 0, 0], // seq
        &[1, 0, 0, 0, 0, 0, 0, 0], // index_state.0
        &[2, 0, 0, 0, 0, 0, 0, 0], // index_state.1
        &[1, 0, 0, 0],             // count
        &[3, 0, 0, 0],             // stream len
        b"cpu",
        &[10, 0, 0, 0, 0, 0, 0, 0],                        // ts
        &[0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // wall_offset = -3
        &[2, 0, 0, 0],                                     // row len
        &[0x0a, 0x0b],                                     // row
    ]);
    let rows = [ROW];
    let frame = Rows {
        source: 0,
        seq: 7,
        index_state: (1, 2),
        rows: RowList::from_slice(&rows),
    };
    assert_golden(&bytes, Frame::Rows(frame));
    // The row borrows from the buffer.
    let Ok(crate::Status::Complete((Frame::Rows(r), _))) = decode(&bytes) else {
        panic!("not rows")
    };
    let row = r.rows.iter().next().unwrap();
    assert!(core::ptr::eq(row.row.as_ptr(), bytes[64..].as_ptr()));
    assert_eq!(
        std::format!("{}", Frame::Rows(frame)),
        "Rows source=0 seq=7 index_state=(0x1, 0x2) rows=1 row_bytes=2 first=\"cpu\"@10"
    );

    // The keepalive: source 4, seq u64::MAX, no index state, no rows.
    let keepalive = cat(&[
        &[33, 0, 0, 0], // len
        &[3],           // kind: Rows
        &[4, 0, 0, 0],  // source
        &[0xff; 8],     // seq = u64::MAX
        &[0; 16],       // NO_INDEX_STATE
        &[0, 0, 0, 0],  // count
    ]);
    let empty = Rows {
        source: 4,
        seq: u64::MAX,
        index_state: NO_INDEX_STATE,
        rows: RowList::EMPTY,
    };
    assert_golden(&keepalive, Frame::Rows(empty));
    let mut buf = [0u8; 37];
    let header = RowsHeader {
        source: 4,
        seq: u64::MAX,
        index_state: NO_INDEX_STATE,
    };
    let n = RowsBuilder::new(&mut buf[..], header)
        .unwrap()
        .finish()
        .unwrap();
    assert_eq!(&buf[..n], &keepalive[..]);
}

#[test]
fn a_short_head_or_row_is_named_by_its_field() {
    // A head that ends 2 bytes into its count: len 31, a payload of 30.
    let mut b = [0u8; 35];
    b[..5].copy_from_slice(&[31, 0, 0, 0, 3]);
    let e = decode(&b).unwrap_err();
    assert_eq!(e.rule(), Rule::EndsEarly { needed: 4, left: 2 });
    assert_eq!((e.field(), e.offset()), (Field::Count, 33));
    // A row that ends in its wall_offset.
    let mut b = std::vec![0u8; 37];
    b[..5].copy_from_slice(&[0, 0, 0, 0, 3]);
    b[33] = 1; // one row
    b.extend_from_slice(&[10, 0, 0, 0]); // a stream name of 10 bytes
    b.extend_from_slice(b"abcdefghij");
    b.extend_from_slice(&[0; 8 + 3]); // ts, and 3 bytes of wall_offset
    b[0] = (b.len() - 4) as u8;
    let e = decode(&b).unwrap_err();
    assert_eq!(e.rule(), Rule::EndsEarly { needed: 8, left: 3 });
    assert_eq!(
        (e.field(), e.offset(), e.item()),
        (Field::WallOffset, 59, Some(0))
    );
}

/// The rows a plain walk reads at the start of `bytes`, and the bytes
/// they take; `None` where a row is not whole or its name not UTF-8.
/// Each field is read in turn, each name validated in full.
fn plain_parse(bytes: &[u8], count: u32) -> Option<(Vec<Row<'_>>, usize)> {
    let mut at = 0usize;
    let mut field = |n: usize| {
        let b = bytes.get(at..at.checked_add(n)?)?;
        at += n;
        Some(b)
    };
    let mut rows = Vec::new();
    for _ in 0..count {
        let name_len = u32::from_le_bytes(field(4)?.try_into().ok()?);
        let stream = core::str::from_utf8(field(name_len as usize)?).ok()?;
        let ts = i64::from_le_bytes(field(8)?.try_into().ok()?);
        let wall_offset = i64::from_le_bytes(field(8)?.try_into().ok()?);
        let row_len = u32::from_le_bytes(field(4)?.try_into().ok()?);
        let row = field(row_len as usize)?;
        rows.push(Row {
            stream,
            ts,
            wall_offset,
            row,
        });
    }
    Some((rows, at))
}

/// Stream names of every length from 0 to 40, ASCII and not.
fn names() -> Vec<String> {
    let mut names: Vec<String> = (0..=40)
        .map(|n| "abcdefghijklmnopqrstuvwxyz0123456789ABCDE"[..n].into())
        .collect();
    for at in [0, 3, 7, 8, 14, 15, 16, 30] {
        let mut s: String = "n".repeat(at);
        s.push('é');
        names.push(s.clone());
        s.push_str("温度");
        names.push(s);
    }
    names
}

/// A small deterministic generator, so a failure is the same every run.
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The rows part of a `Rows` frame: row lengths that repeat, so the
/// guess holds, and change, so it fails.
fn rows_bytes(g: &mut Gen, names: &[String], count: usize) -> Vec<u8> {
    const ROW_LENS: [usize; 8] = [32, 32, 32, 0, 1, 33, 100, 32];
    let mut out = Vec::new();
    for i in 0..count {
        let name = names[g.below(names.len())].as_bytes();
        let row_len = ROW_LENS[g.below(ROW_LENS.len())];
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&(i as i64).to_le_bytes());
        out.extend_from_slice(&(-3i64).to_le_bytes());
        out.extend_from_slice(&(row_len as u32).to_le_bytes());
        out.extend((0..row_len).map(|b| b as u8));
    }
    out
}

#[test]
fn the_fast_walk_accepts_exactly_what_a_plain_walk_accepts() {
    let names = names();
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut refused) = (0, 0);
    for frame in 0..60 {
        let count = 1 + frame % 12;
        let bytes = rows_bytes(&mut g, &names, count);
        let count = count as u32;
        assert_eq!(walk_rows(&bytes, count), Some(bytes.len()));
        let mut check = |b: &[u8], count: u32| {
            let want = plain_parse(b, count).map(|(_, used)| used);
            assert_eq!(walk_rows(b, count), want, "{b:?}, {count} rows");
            if want.is_some() {
                accepted += 1;
            } else {
                refused += 1;
            }
        };
        // Every cut, and a count one too many or too few.
        for cut in 0..bytes.len() {
            check(&bytes[..cut], count);
        }
        check(&bytes, count + 1);
        check(&bytes, count - 1);
        // Every byte changed: a length one off either way, a high bit,
        // a lone UTF-8 lead byte.
        let mut b = bytes.clone();
        for at in 0..b.len() {
            let was = b[at];
            for now in [was.wrapping_add(1), was.wrapping_sub(1), was ^ 0x80, 0xc3] {
                b[at] = now;
                check(&b, count);
            }
            b[at] = was;
        }
    }
    // Both answers were reached many times, so the comparison bites.
    assert!(
        accepted > 10_000 && refused > 10_000,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn iterating_yields_every_row_as_a_plain_parse_reads_it() {
    let names = names();
    let mut g = Gen(0x6a09_e667_f3bc_c908);
    for frame in 0..60 {
        let count = frame % 12;
        let bytes = rows_bytes(&mut g, &names, count);
        let (want, used) = plain_parse(&bytes, count as u32).unwrap();
        assert_eq!(used, bytes.len());
        let list = RowList(Items::Wire {
            count: count as u32,
            bytes: &bytes,
        });
        assert_eq!(list.iter().collect::<Vec<_>>(), want);
    }
}

/// A row as a plain encoder writes it, field by field.
fn plain_row(out: &mut Vec<u8>, row: &Row<'_>) {
    out.extend_from_slice(&(row.stream.len() as u32).to_le_bytes());
    out.extend_from_slice(row.stream.as_bytes());
    out.extend_from_slice(&row.ts.to_le_bytes());
    out.extend_from_slice(&row.wall_offset.to_le_bytes());
    out.extend_from_slice(&(row.row.len() as u32).to_le_bytes());
    out.extend_from_slice(row.row);
}

#[test]
fn the_builder_and_emit_write_every_row_as_a_plain_encoder_does() {
    // Every name length to 40 and every row length to 80 cross each
    // size class of the short copies, and the `memcpy` beyond them.
    let names = names();
    let bytes: Vec<u8> = (0..80u8).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
    let mut buf = [0xeeu8; 512];
    for (i, name) in names.iter().enumerate() {
        for row_len in 0..=bytes.len() {
            let row = Row {
                stream: name,
                ts: i as i64 - 7,
                wall_offset: -(row_len as i64),
                row: &bytes[..row_len],
            };
            let mut want = Vec::new();
            plain_row(&mut want, &row);
            // Cleared each time, so a byte left from the last row
            // cannot pass for one this row wrote.
            buf.fill(0xee);
            let mut b = RowsBuilder::new(
                &mut buf[..],
                RowsHeader {
                    source: 1,
                    seq: 2,
                    index_state: (3, 4),
                },
            )
            .unwrap();
            let head = b.frame_len();
            b.push(&row).unwrap();
            b.push(&row).unwrap();
            let n = b.finish().unwrap();
            let (one, two) = buf[head..n].split_at(want.len());
            assert_eq!((one, two), (&want[..], &want[..]), "{name:?}, {row_len}");

            let rows = [row, row];
            let frame = Rows {
                source: 1,
                seq: 2,
                index_state: (3, 4),
                rows: RowList::from_slice(&rows),
            };
            let mut emitted = [0u8; 512];
            assert_eq!(crate::Frame::Rows(frame).emit(&mut emitted), Ok(n));
            assert_eq!(emitted[..n], buf[..n]);
        }
    }
}

#[test]
fn a_row_that_does_not_fit_leaves_the_frame_as_it_was() {
    let row = Row {
        stream: "net/rx_bytes",
        ts: 5,
        wall_offset: 6,
        row: &[9; 32],
    };
    let head = HEAD_BYTES + core::mem::size_of::<RowsHead>();
    let one = head + row.wire_len();
    // Every buffer size from one row's frame to two rows' but a byte.
    for size in one..one + row.wire_len() {
        let mut buf = std::vec![0u8; size];
        let mut b = RowsBuilder::new(
            &mut buf[..],
            RowsHeader {
                source: 0,
                seq: 0,
                index_state: (0, 0),
            },
        )
        .unwrap();
        b.push(&row).unwrap();
        let e = b.push(&row).unwrap_err();
        let needed = one + row.wire_len();
        assert_eq!(e.rule(), Rule::BufferTooSmall { needed, have: size });
        assert_eq!(
            (e.field(), e.offset(), e.item()),
            (Field::Row, one, Some(1))
        );
        assert_eq!((b.frame_len(), b.row_count()), (one, 1));
        assert_eq!(b.finish(), Ok(one));
        match crate::decode(&buf[..one]) {
            Ok(crate::Status::Complete((crate::Frame::Rows(r), used))) => {
                assert_eq!(used, one);
                assert_eq!(r.rows.iter().collect::<Vec<_>>(), [row]);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_name_is_utf8_exactly_when_the_validator_says_so() {
    let mut bytes = [b'a'; 40 + NAME_WORD];
    for len in 0..=40 {
        for at in 0..len.max(1) {
            for high in [0x80, 0xc3, 0xe6, 0xff] {
                let was = bytes[at];
                bytes[at] = high;
                let name = &bytes[..len];
                let want = core::str::from_utf8(name).is_ok();
                assert_eq!(is_utf8(name, bytes.first_chunk()), want, "{name:?}");
                assert_eq!(is_utf8(name, None), want, "{name:?} without a word");
                bytes[at] = was;
            }
        }
    }
    for name in names() {
        let mut padded = name.clone().into_bytes();
        padded.resize(name.len() + NAME_WORD, 0xff);
        assert!(is_utf8(name.as_bytes(), padded.first_chunk()), "{name:?}");
    }
}

#[test]
fn a_rows_head_made_in_words_is_the_head_written_in_place() {
    // The head a core without unaligned words makes (`build.rs`), against
    // the one written in place, in buffers long enough, of the frame head
    // alone, and shorter.
    let heads = [
        (0, 0, (0, 0), 0, ROWS_HEAD_BYTES),
        (3, 7, (1, 2), 1, 66),
        (
            u32::MAX,
            u64::MAX,
            (u64::MAX, 1 << 63),
            u32::MAX,
            0x0102_0304,
        ),
        (
            0x1234_5678,
            0x0102_0304_0506_0708,
            (0x1122_3344_5566_7788, 9),
            300,
            5,
        ),
    ];
    for (source, seq, state, count, len) in heads {
        for size in [0, 4, HEAD_BYTES, ROWS_HEAD_BYTES - 1, ROWS_HEAD_BYTES, 50] {
            let mut want = std::vec![0xaa; size];
            let wrote = write_rows_head(&mut want, source, seq, state, count, len);
            let mut got = std::vec![0xaa; size];
            let prefix = len.saturating_sub(crate::LENGTH_PREFIX_BYTES) as u32;
            let words = rows_head_words(prefix, source, seq, state, count);
            let made = copy_rows_head(&mut got, &zerocopy::IntoBytes::as_bytes(&words)[3..]);
            assert_eq!((made, got), (wrote, want), "{source} {seq} {len} in {size}");
        }
    }
}
