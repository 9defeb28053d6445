//! A small generator of dendro 0.6.1 frames, its choices drawn either from a
//! seeded [`XorShift`] (deterministic, so a failure reproduces from its
//! seed) or from a fuzzer's bytes (so the fuzzer steers it). Used by the core's, the
//! std crate's and the tool's differential tests, and the fuzz targets.

use std::collections::BTreeMap;

use dendro::archive::{SegmentMeta, WalRow};
use dendro::replicate::Frame as DFrame;
use dendro::replicate::IndexKind as DKind;

use crate::xorshift::XorShift;

pub struct Gen<'a> {
    choices: Choices<'a>,
}

/// Where a generator's choices come from.
enum Choices<'a> {
    XorShift(XorShift),
    /// Eight bytes a choice, little-endian; zeros once they run out, so a
    /// short input makes small frames rather than no test.
    Bytes(&'a [u8]),
}

impl Gen<'static> {
    /// Choices from a xorshift seeded with `seed` (not zero).
    pub fn new(seed: u64) -> Self {
        Gen {
            choices: Choices::XorShift(XorShift::new(seed)),
        }
    }
}

impl<'a> Gen<'a> {
    /// Choices read from `bytes`: a fuzzer's input.
    pub fn from_bytes(bytes: &'a [u8]) -> Self {
        Gen {
            choices: Choices::Bytes(bytes),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        match &mut self.choices {
            Choices::XorShift(x) => x.next_u64(),
            Choices::Bytes(bytes) => {
                let (word, rest) = bytes.split_at(bytes.len().min(8));
                *bytes = rest;
                let mut le = [0; 8];
                le[..word.len()].copy_from_slice(word);
                u64::from_le_bytes(le)
            }
        }
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn int(&mut self) -> i64 {
        match self.below(4) {
            0 => i64::MIN,
            1 => i64::MAX,
            2 => 0,
            _ => self.next_u64() as i64,
        }
    }
    /// Names made of parts that stress a reader (multi-byte UTF-8, a NUL,
    /// what JSON escapes), now and then a character of any plane.
    pub fn string(&mut self) -> String {
        const PARTS: [&str; 11] = [
            "", "cpu", "usage", "/", "ü", "🦀", "mem/used", "\0", "\"", "\\", "\n",
        ];
        let mut s = String::new();
        for _ in 0..self.below(4) {
            match PARTS.get(self.below(PARTS.len() as u64 + 1) as usize) {
                Some(part) => s.push_str(part),
                None => s.extend(char::from_u32(self.next_u64() as u32 % 0x11_0000)),
            }
        }
        s
    }
    pub fn bytes(&mut self) -> Vec<u8> {
        (0..self.below(40)).map(|_| self.next_u64() as u8).collect()
    }
    pub fn map(&mut self) -> BTreeMap<String, String> {
        (0..self.below(5))
            .map(|_| (self.string(), self.string()))
            .collect()
    }
    pub fn uuid(&mut self) -> Option<String> {
        (self.below(3) > 0).then(|| {
            let bytes =
                (u128::from(self.next_u64()) << 64 | u128::from(self.next_u64())).to_be_bytes();
            dendro_wire_core::write_uuid(&bytes, &mut [0; 36]).to_string()
        })
    }
    /// A frame of a kind dendro 0.6.1 does not know: its kind byte (7 and
    /// up) and payload. dendro cannot write one; its reader skips it.
    pub fn unknown(&mut self) -> (u8, Vec<u8>) {
        (7 + self.below(249) as u8, self.bytes())
    }
    pub fn frame(&mut self) -> DFrame {
        let source = self.next_u64() as u32;
        match self.below(6) {
            0 => DFrame::Handshake {
                source,
                uuid: self.uuid(),
                labels: self.map(),
                metadata: self.map(),
                clock_anchor_wall_ns: self.int(),
                complete: self.below(2) == 1,
            },
            1 => DFrame::Index {
                source,
                stream: self.string(),
                ts: self.int(),
                kind: if self.below(2) == 0 {
                    DKind::Full
                } else {
                    DKind::Delta
                },
                state: (self.next_u64(), self.next_u64()),
                blob: self.bytes(),
            },
            2 => DFrame::Rows {
                source,
                seq: self.next_u64(),
                index_state: (self.next_u64(), self.next_u64()),
                rows: (0..self.below(6))
                    .map(|_| WalRow {
                        stream: self.string(),
                        ts: self.int(),
                        wall_offset: self.int(),
                        row: self.bytes(),
                    })
                    .collect(),
            },
            3 => DFrame::Segment {
                source,
                stream: self.string(),
                meta: SegmentMeta {
                    rows: self.next_u64(),
                    first_ts: self.int(),
                    last_ts: self.int(),
                },
                bytes: self.bytes(),
                caller_index: (self.below(2) == 0).then(|| self.bytes()),
            },
            4 => DFrame::ClockOffset {
                source,
                ts: self.int(),
                offset_ns: self.int(),
            },
            _ => DFrame::SourceUpdate {
                source,
                ts: self.int(),
                labels: self.map(),
                metadata: self.map(),
            },
        }
    }
}
