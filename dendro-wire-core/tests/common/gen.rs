//! A small deterministic generator of dendro 0.6.1 frames (xorshift), so a
//! failure reproduces from its seed. Shared by the core's and the std
//! crate's differential tests.

use std::collections::BTreeMap;

use dendro::archive::{SegmentMeta, WalRow};
use dendro::replicate::Frame as DFrame;
use dendro::replicate::IndexKind as DKind;

pub struct Gen(pub u64);

impl Gen {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn int(&mut self) -> i64 {
        match self.below(4) {
            0 => i64::MIN,
            1 => i64::MAX,
            2 => 0,
            _ => self.next() as i64,
        }
    }
    pub fn string(&mut self) -> String {
        const PARTS: [&str; 8] = ["", "cpu", "usage", "/", "ü", "🦀", "mem/used", "\0"];
        (0..self.below(4))
            .map(|_| PARTS[self.below(8) as usize])
            .collect()
    }
    pub fn bytes(&mut self) -> Vec<u8> {
        (0..self.below(40)).map(|_| self.next() as u8).collect()
    }
    pub fn map(&mut self) -> BTreeMap<String, String> {
        (0..self.below(5))
            .map(|_| (self.string(), self.string()))
            .collect()
    }
    pub fn uuid(&mut self) -> Option<String> {
        (self.below(3) > 0).then(|| {
            let bytes = (u128::from(self.next()) << 64 | u128::from(self.next())).to_be_bytes();
            dendro_wire_core::write_uuid(&bytes, &mut [0; 36]).to_string()
        })
    }
    pub fn frame(&mut self) -> DFrame {
        let source = self.next() as u32;
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
                state: (self.next(), self.next()),
                blob: self.bytes(),
            },
            2 => DFrame::Rows {
                source,
                seq: self.next(),
                index_state: (self.next(), self.next()),
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
                    rows: self.next(),
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
