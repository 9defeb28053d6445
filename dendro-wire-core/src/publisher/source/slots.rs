//! A source's index slots: setting and removing one, which keeps the
//! `Full` blob sorted, the `Delta` blob of changes since the last entry,
//! and the slot set's hash; and the two record layouts those blobs are
//! made of.

use super::Source;
use crate::publisher::bytes::le_u32;
use crate::publisher::config::PublisherConfig;
use crate::publisher::error::PublishError;
use crate::publisher::regions::Region;
use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::IntoBytes;

use crate::codec::{copy, Out, LEN_BYTES};
use crate::framing::FrameHead;
use crate::index::{IndexKind, IndexTail};
use crate::index_state::IndexState;
use crate::kind;
use crate::publisher::regions::Regions;
use crate::publisher::stats::count;
use crate::storage::Storage;
use crate::LENGTH_PREFIX_BYTES;

impl<S: Storage> Source<S> {
    /// The size of an entry of `kind` made now.
    pub(super) fn index_len(&self, kind: IndexKind) -> usize {
        let blob = match kind {
            IndexKind::Full => Region::Full,
            IndexKind::Delta => Region::Delta,
        };
        self.index_overhead + self.regions.len(blob)
    }

    /// Set (`Some`) or remove (`None`) a slot; on a connection the change
    /// is kept for the next `Delta`. A change refused for its size is
    /// counted.
    pub(in crate::publisher) fn set_slot(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        config: &PublisherConfig,
        connected: bool,
    ) -> Result<(), PublishError> {
        let result = self.change_slot(key, value, config, connected);
        if let Err(PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. }) = result {
            count(&mut self.stats.slot_changes_refused, 1);
        }
        result
    }

    fn change_slot(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        config: &PublisherConfig,
        keep_for_delta: bool,
    ) -> Result<(), PublishError> {
        let (source, limit) = (self.ordinal, config.frame_buffer);
        if !self.indexed {
            return Err(PublishError::NoIndex { source });
        }
        let shrank = self.shrank();
        let full = self.regions.range(Region::Full);
        let records = self.storage.bytes().get(full.clone()).ok_or(shrank)?;
        let (at, old) = match find(records, key, SlotRecord::Full) {
            Found::At(at, len) => {
                let old = records.get(at..at + len).ok_or(shrank)?;
                if value.is_some_and(|v| full_record_value(old) == Some(v)) {
                    return Ok(());
                }
                (at, len)
            }
            Found::Before(_) if value.is_none() => return Ok(()),
            Found::Before(at) => (at, 0),
        };
        let new = value.map_or(0, |v| 2 * LEN_BYTES + key.len() + v.len());
        let needed = self.index_overhead + full.len() - old + new;
        if needed > limit {
            return Err(PublishError::FrameTooLarge {
                source,
                kind: kind::INDEX,
                needed,
                limit,
            });
        }
        if self.rows > 0 {
            // Rows observed against the slots as they are go out under them
            // (rule 9): their frame closes before the change.
            self.close_frame(keep_for_delta, config);
        }
        // A stream's latest row from before the change is not repeated by
        // rule 3 against the slots after it.
        self.valid_from = self.seq;
        // The change for the next Delta: kept if the storage holds it, else
        // the next entry is a Full.
        let delta = self.regions.range(Region::Delta);
        let records = self.storage.bytes().get(delta.clone()).ok_or(shrank)?;
        let delta_change = match (
            keep_for_delta && !self.delta_lost,
            find(records, key, SlotRecord::Delta),
        ) {
            (false, _) => None,
            (true, Found::At(d_at, len)) => Some((d_at, len)),
            (true, Found::Before(d_at)) => Some((d_at, 0)),
        };
        let delta_new = LEN_BYTES + key.len() + 1 + value.map_or(0, |v| LEN_BYTES + v.len());
        let end = self.regions.end();
        self.ensure(end - old + new)?;
        let mut delta_change = delta_change;
        if let Some((_, d_old)) = delta_change {
            if !self
                .storage
                .grow((end - old + new + delta_new).saturating_sub(d_old))
            {
                delta_change = None;
                self.clear_delta();
                self.delta_lost = true;
            }
        }
        let at = self.regions.offset(Region::Full, at);
        // The hash changes with the slot bytes, and only if they do.
        let mut hash = self.hash;
        if old > 0 {
            hash.remove(self.storage.bytes().get(at..at + old).ok_or(shrank)?);
        }
        self.resize(Region::Full, at, old, new)?;
        if let Some(v) = value {
            let rec = self
                .storage
                .bytes_mut()
                .get_mut(at..at + new)
                .ok_or(shrank)?;
            write_record(rec, key, Some(v), SlotRecord::Full).ok_or(shrank)?;
            hash.insert(rec);
        }
        self.hash = hash;
        self.state = hash.state();
        // A row after the change is later than every row before it, or
        // read by time it would fall under the slots before (rule 5).
        if self.observed {
            self.floor = self.last_ts.wrapping_add(1);
        }
        if let Some((d_at, d_old)) = delta_change {
            let d_at = self.regions.offset(Region::Delta, d_at);
            self.resize(Region::Delta, d_at, d_old, delta_new)?;
            let rec = self
                .storage
                .bytes_mut()
                .get_mut(d_at..d_at + delta_new)
                .ok_or(shrank)?;
            write_record(rec, key, value, SlotRecord::Delta).ok_or(shrank)?;
        }
        Ok(())
    }
}

/// The two forms a slot's record takes: in the `Full` blob
/// (`u32 len | key | u32 len | value`) and in the `Delta` blob
/// (`u32 len | key | u8 present [| u32 len | value]`). Both are what the
/// std publisher has always sent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotRecord {
    Full,
    Delta,
}

enum Found {
    /// The record of the key: its offset and length.
    At(usize, usize),
    /// Where a record of the key goes, keeping the keys sorted.
    Before(usize),
}

/// The key and the whole length of the record at the front of `rec`.
fn record(rec: &[u8], layout: SlotRecord) -> Option<(&[u8], usize)> {
    let key_len = le_u32(rec.get(..LEN_BYTES)?) as usize;
    let key = rec.get(LEN_BYTES..LEN_BYTES + key_len)?;
    let mut at = LEN_BYTES + key_len;
    if layout == SlotRecord::Delta {
        let present = *rec.get(at)?;
        at += 1;
        if present == 0 {
            return Some((key, at));
        }
    }
    let value_len = le_u32(rec.get(at..at + LEN_BYTES)?) as usize;
    Some((key, at + LEN_BYTES + value_len))
}

/// A `Full` record's value.
fn full_record_value(rec: &[u8]) -> Option<&[u8]> {
    let key_len = le_u32(rec.get(..LEN_BYTES)?) as usize;
    rec.get(2 * LEN_BYTES + key_len..)
}

/// The record of `key` in sorted `records`, or where it would go. The keys
/// are in byte order, the order std's `BTreeMap<Vec<u8>, _>` kept them in.
fn find(records: &[u8], key: &[u8], layout: SlotRecord) -> Found {
    let mut at = 0;
    while let Some((k, len)) = records.get(at..).and_then(|r| record(r, layout)) {
        match k.cmp(key) {
            core::cmp::Ordering::Less => at += len,
            core::cmp::Ordering::Equal => return Found::At(at, len),
            core::cmp::Ordering::Greater => break,
        }
    }
    Found::Before(at)
}

/// Write a record of exactly `rec`'s length.
fn write_record(
    rec: &mut [u8],
    key: &[u8],
    value: Option<&[u8]>,
    layout: SlotRecord,
) -> Option<()> {
    let (len, rest) = rec.split_first_chunk_mut::<LEN_BYTES>()?;
    *len = (key.len() as u32).to_le_bytes();
    let (k, mut rest) = rest.split_at_mut_checked(key.len())?;
    copy(k, key)?;
    if layout == SlotRecord::Delta {
        let (present, r) = rest.split_first_mut()?;
        *present = u8::from(value.is_some());
        rest = r;
    }
    if let Some(v) = value {
        let (len, rest) = rest.split_first_chunk_mut::<LEN_BYTES>()?;
        *len = (v.len() as u32).to_le_bytes();
        copy(rest.get_mut(..v.len())?, v)?;
    }
    Some(())
}

/// An index entry of `kind`, stamped `ts`, declaring `state`, written into
/// `buf` field by field as `Index::emit` writes it, from the index name and
/// blob in `bytes`: `Index::emit` takes the stream as a `&str`, and making
/// one of the stored name is a UTF-8 check whose code and table are a
/// device's flash for nothing (`cargo xtask firmware` prints the
/// footprint). The name was a `&str` when it was declared; the golden
/// tests hold the bytes to the encoder's.
pub(super) fn write_index(
    bytes: &[u8],
    regions: &Regions,
    source: u32,
    (kind, ts, state): (IndexKind, i64, IndexState),
    overhead: usize,
    buf: &mut [u8],
) -> Result<usize, PublishError> {
    let shrank = PublishError::StorageShrank { source };
    let name = bytes.get(regions.range(Region::IndexName)).ok_or(shrank)?;
    let blob = match kind {
        IndexKind::Full => regions.range(Region::Full),
        IndexKind::Delta => regions.range(Region::Delta),
    };
    let blob = bytes.get(blob).ok_or(shrank)?;
    let len = overhead + blob.len();
    let mut out = Out::new(buf, 0);
    out.fixed(&FrameHead {
        len: U32::new((len - LENGTH_PREFIX_BYTES) as u32),
        kind: kind::INDEX,
    })?;
    out.u32(source)?;
    out.bytes(name)?;
    if cfg!(unaligned_words) {
        out.fixed(&IndexTail {
            ts: I64::new(ts),
            kind: kind.to_byte(),
            state_0: U64::new(state.0),
            state_1: U64::new(state.1),
        })?;
    } else {
        let words = IndexTail::words(ts, kind, state);
        out.put(words.as_bytes().get(3..).ok_or(shrank)?)?;
    }
    out.bytes(blob)?;
    match out.at() == len {
        true => Ok(len),
        false => Err(shrank),
    }
}
