//! A source's index slots: setting and removing one, which keeps the
//! `Full` blob sorted, the `Delta` blob of changes since the last entry,
//! and the slot set's hash; and the two record layouts those blobs are
//! made of.

use super::bytes::le_u32;
use super::config::PublisherConfig;
use super::error::PublishError;
use super::regions::{ensure, Region};
use super::source::Source;
use crate::codec::{copy, LEN_BYTES};
use crate::kind;
use crate::storage::Storage;

impl<S: Storage> Source<S> {
    /// Set (`Some`) or remove (`None`) a slot; on a connection the change
    /// is kept for the next `Delta`. A change refused for its size is
    /// counted.
    pub(super) fn set_slot(
        &mut self,
        source: u32,
        key: &[u8],
        value: Option<&[u8]>,
        config: &PublisherConfig,
        connected: bool,
    ) -> Result<(), PublishError> {
        let result = self.change_slot(source, key, value, config, connected);
        if let Err(PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. }) = result {
            self.stats.slot_changes_refused += 1;
        }
        result
    }

    fn change_slot(
        &mut self,
        source: u32,
        key: &[u8],
        value: Option<&[u8]>,
        config: &PublisherConfig,
        keep_for_delta: bool,
    ) -> Result<(), PublishError> {
        let limit = config.frame_buffer;
        if !self.indexed {
            return Err(PublishError::NoIndex { source });
        }
        let shrank = PublishError::StorageShrank { source };
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
            self.close_frame(source, keep_for_delta, config);
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
        ensure(&mut self.storage, source, end - old + new)?;
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
        self.regions
            .resize(&mut self.storage, source, Region::Full, at, old, new)?;
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
        if let Some((d_at, d_old)) = delta_change {
            let d_at = self.regions.offset(Region::Delta, d_at);
            self.regions.resize(
                &mut self.storage,
                source,
                Region::Delta,
                d_at,
                d_old,
                delta_new,
            )?;
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
