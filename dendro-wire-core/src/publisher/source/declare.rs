//! Declaring a source: its handshake and stream names encoded once into its
//! storage, every bound checked first; and a later change of its labels
//! and metadata, which rewrites the stored handshake.

use super::{OnLink, Source};
use crate::codec::{copy, LEN_BYTES};
use crate::frame::{decode, Frame, Status};
use crate::framing::emit_exact;
use crate::handshake::Handshake;
use crate::index_state::{IndexState, SlotSetHash, NO_INDEX_STATE};
use crate::kind;
use crate::map::Map;
use crate::publisher::config::{SourceDecl, StreamNames};
use crate::publisher::error::PublishError;
use crate::publisher::regions::{DeclaredRegions, Region, Regions};
use crate::publisher::sizing::index_bytes;
use crate::publisher::stats::count;
use crate::publisher::stats::SourceCounts;
use crate::publisher::stream_rec::{write_name, StreamRec};
use crate::rows::{ROWS_HEAD_BYTES, TAIL_BYTES};
use crate::source_update::SourceUpdate;
use crate::storage::Storage;

impl<S: Storage> Source<S> {
    /// Source `ordinal` as `decl` declares it, its streams named by
    /// `streams` (in place of `decl.streams`): its handshake, index name,
    /// stream records and slots (each made for rows of up to `largest_row`
    /// bytes) written into `storage`, and the rest of its state, for
    /// [`DeclaredState::into_source`] to join with the storage. Refused if its
    /// handshake or its streams' room in a connection's first `Rows` frame
    /// would outgrow `limit`, the frame buffer, or the storage cannot hold
    /// them. The storage is not taken here: moved in and out, it was copied
    /// once more through the stack. Inlined into its one caller, whose
    /// frame it then shares: a frame of its own took 256 B more of a
    /// device's stack while declaring, where the caller is built for size.
    #[inline(always)]
    pub(in crate::publisher) fn declare<N: StreamNames + ?Sized>(
        ordinal: u32,
        decl: &SourceDecl<'_>,
        streams: &N,
        largest_row: usize,
        storage: &mut S,
        limit: usize,
    ) -> Result<DeclaredState, PublishError> {
        let too_large = |kind, needed| PublishError::FrameTooLarge {
            source: ordinal,
            kind,
            needed,
            limit,
        };
        let handshake = Handshake {
            source: ordinal,
            uuid: decl.uuid,
            labels: decl.labels,
            metadata: decl.metadata,
            clock_anchor_wall_ns: decl.clock_anchor_wall_ns,
            complete: decl.complete,
        };
        let handshake_len = handshake.buffer_len()?;
        if handshake_len > limit {
            return Err(too_large(kind::HANDSHAKE, handshake_len));
        }
        let index_name = decl.index_stream.unwrap_or_default();
        let index_overhead = match decl.index_stream {
            // What every entry costs beyond its blob; `sizing.rs` says it.
            Some(stream) => index_bytes(stream.len()),
            None => 0,
        };
        if index_overhead > limit {
            return Err(too_large(kind::INDEX, index_overhead));
        }
        let mut caps = 0usize;
        for i in 0..streams.count() {
            let name = streams.name(i);
            if (0..i).any(|j| streams.name(j) == name) {
                return Err(PublishError::DuplicateStream {
                    source: ordinal,
                    stream: i as u32,
                });
            }
            caps = caps.saturating_add(LEN_BYTES + name.len() + TAIL_BYTES + largest_row);
        }
        let rows_len = ROWS_HEAD_BYTES.saturating_add(caps);
        if rows_len > limit {
            return Err(too_large(kind::ROWS, rows_len));
        }
        let count = streams.count();
        let regions = Regions::new(handshake_len, index_name.len(), count, caps);
        let needed = regions.end();
        if !storage.grow(needed) {
            return Err(PublishError::StorageFull {
                source: ordinal,
                needed,
                have: storage.bytes().len(),
            });
        }
        let shrank = PublishError::StorageShrank { source: ordinal };
        let parts = regions.declared(storage.bytes_mut()).ok_or(shrank)?;
        emit_exact(&handshake, parts.handshake)?;
        write_streams(parts, index_name, streams, largest_row).ok_or(shrank)?;
        let hash = SlotSetHash::new();
        Ok(DeclaredState {
            ordinal,
            regions,
            room: limit - caps,
            streams: count as u32,
            caps,
            indexed: decl.index_stream.is_some(),
            index_overhead,
            hash,
            state: match decl.index_stream {
                Some(_) => hash.state(),
                None => NO_INDEX_STATE,
            },
        })
    }

    /// Replace the source's labels and metadata: every later handshake
    /// carries them, and, if its handshake has gone out on this
    /// connection, a `SourceUpdate` with both maps whole (stamped `ts`) is
    /// written into `buf` and its length returned. The handshake must fit
    /// `limit`, the frame buffer. On an error the source keeps its
    /// identity.
    pub(in crate::publisher) fn update(
        &mut self,
        ts: i64,
        labels: Map<'_>,
        metadata: Map<'_>,
        limit: usize,
        buf: &mut [u8],
    ) -> Result<Option<usize>, PublishError> {
        let update = SourceUpdate {
            source: self.ordinal,
            ts,
            labels,
            metadata,
        };
        let send = self.link.handshake_sent;
        // The update's room is checked once the handshake is known to fit,
        // and before it is rewritten.
        let room = || match send {
            true => match update.buffer_len()? {
                needed if needed > buf.len() => Err(PublishError::BufferTooSmall {
                    needed,
                    have: buf.len(),
                }),
                _ => Ok(()),
            },
            false => Ok(()),
        };
        self.rewrite_handshake(labels, metadata, limit, room)?;
        if !send {
            return Ok(None);
        }
        let n = update.emit(buf)?;
        count(&mut self.stats.frames_sent, 1);
        Ok(Some(n))
    }

    /// Rewrite the stored handshake with new `labels` and `metadata`, its
    /// uuid, anchor and `complete` kept, if it fits `limit` and then
    /// `before` allows it. Nothing changes on an error.
    fn rewrite_handshake(
        &mut self,
        labels: Map<'_>,
        metadata: Map<'_>,
        limit: usize,
        before: impl FnOnce() -> Result<(), PublishError>,
    ) -> Result<(), PublishError> {
        let (source, shrank) = (self.ordinal, self.shrank());
        let old_range = self.regions.range(Region::Handshake);
        let stored = self.storage.bytes().get(old_range.clone()).ok_or(shrank)?;
        let Ok(Status::Complete((Frame::Handshake(old), _))) = decode(stored) else {
            return Err(shrank);
        };
        let mut uuid = [0u8; 36];
        let uuid_len = old.uuid.map(str::len);
        if let Some(u) = old.uuid {
            uuid.get_mut(..u.len())
                .ok_or(shrank)?
                .copy_from_slice(u.as_bytes());
        }
        let (anchor, complete) = (old.clock_anchor_wall_ns, old.complete);
        let uuid = match uuid_len {
            Some(n) => {
                Some(core::str::from_utf8(uuid.get(..n).ok_or(shrank)?).map_err(|_| shrank)?)
            }
            None => None,
        };
        let handshake = Handshake {
            source,
            uuid,
            labels,
            metadata,
            clock_anchor_wall_ns: anchor,
            complete,
        };
        let len = handshake.buffer_len()?;
        if len > limit {
            return Err(PublishError::FrameTooLarge {
                source,
                kind: kind::HANDSHAKE,
                needed: len,
                limit,
            });
        }
        before()?;
        self.resize(Region::Handshake, 0, old_range.len(), len)?;
        let region = self.regions.range(Region::Handshake);
        let region = self.storage.bytes_mut().get_mut(region).ok_or(shrank)?;
        emit_exact(&handshake, region)?;
        Ok(())
    }
}

/// The index stream's name, and each stream's record and slot (its name,
/// and room for rows of up to `largest_row` bytes), into the regions of a
/// source being declared; `None` if they do not hold them.
fn write_streams<N: StreamNames + ?Sized>(
    parts: DeclaredRegions<'_>,
    index_name: &str,
    streams: &N,
    largest_row: usize,
) -> Option<()> {
    copy(parts.index_name, index_name.as_bytes())?;
    let mut slot = 0;
    let mut recs = StreamRec::all_mut(parts.table);
    for i in 0..streams.count() {
        let name = streams.name(i);
        let cap = LEN_BYTES + name.len() + TAIL_BYTES + largest_row;
        let head = parts.latest.get_mut(slot..)?;
        let n = write_name(head, name.as_bytes())?;
        // Written in place: a record built aside and copied in was a
        // `memmove` on a Cortex-M.
        recs.next()?.declare(head.get(..n)?, cap, slot)?;
        slot += cap;
    }
    Some(())
}

/// A declared source's state but its storage.
pub(in crate::publisher) struct DeclaredState {
    ordinal: u32,
    regions: Regions,
    room: usize,
    streams: u32,
    caps: usize,
    indexed: bool,
    index_overhead: usize,
    hash: SlotSetHash,
    state: IndexState,
}

impl DeclaredState {
    /// The source, kept in `storage`, which [`Source::declare`] wrote.
    pub(in crate::publisher) fn into_source<S>(self, storage: S) -> Source<S> {
        Source {
            ordinal: self.ordinal,
            storage,
            regions: self.regions,
            rows: 0,
            room: self.room,
            last_ts: i64::MIN,
            floor: i64::MIN,
            observed: false,
            streams: self.streams,
            caps: self.caps,
            seq: 0,
            valid_from: 0,
            indexed: self.indexed,
            index_overhead: self.index_overhead,
            hash: self.hash,
            state: self.state,
            intervals_since_full: 0,
            unseen_gap: 0,
            polled_seq: 0,
            delta_lost: false,
            link: OnLink::default(),
            repeated: 0,
            stats: SourceCounts::default(),
        }
    }
}
