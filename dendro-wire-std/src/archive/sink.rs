//! [`ArchiveSink`]: one connection's sink into a [`SharedArchive`], which
//! hands each frame to the writer path and never waits on a commit.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use dendro::archive::{CallerRow, SegmentMeta, SourceMeta, WalRow};
use dendro_wire_core::{ClockOffset, Handshake, Index, Rows, Segment, SourceUpdate};

use super::batch::{Fate, SourceKey, What, Work};
use super::shared::SharedArchive;
use crate::owned::owned_map;
use crate::receive::{Backlog, SegmentStored, Sink, SinkError};

/// What holding one piece of work costs beside its bytes: the work's own
/// record and its allocations' overhead.
const WORK_BYTES: usize = 128;

/// What holding one row costs beside its stream's name and its bytes: the
/// row's record in a batch and its two allocations' overhead.
const ROW_BYTES: usize = std::mem::size_of::<WalRow>() + 32;

/// One connection's sources in a [`SharedArchive`].
///
/// Every frame is handed to the archive's writer path at once (rows as
/// dendro's rows, the rest as they will be applied), which commits rows
/// from every connection together; the connection never waits on a
/// commit. While the archive's [`Backlog`] is full, the receiver applying
/// this connection's frames waits before the next one instead. A frame the
/// writer path could not apply (dendro refused it) is said as the error of
/// the next frame handed over, which ends the connection.
///
/// A Handshake past the archive's bounds on sources
/// ([`ArchiveConfig::max_sources`](super::ArchiveConfig::max_sources) and
/// [`max_sources_per_address`](super::ArchiveConfig::max_sources_per_address))
/// opens nothing: [`open_source`](Sink::open_source) answers why, which
/// ends the connection, and the refusal is counted
/// ([`ArchiveStats::sources_refused`](super::ArchiveStats::sources_refused)).
pub struct ArchiveSink {
    archive: SharedArchive,
    /// The client address its sources count toward, if known.
    address: Option<IpAddr>,
    sources: BTreeMap<u32, Source>,
    fate: Arc<Fate>,
}

/// One of the connection's sources, as the sink knows it.
struct Source {
    key: SourceKey,
    uuid: Option<String>,
    complete: bool,
    last_offset: Option<(i64, i64)>,
}

impl std::fmt::Debug for ArchiveSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveSink")
            .field("archive", &self.archive)
            .field("sources", &self.sources.len())
            .finish()
    }
}

impl ArchiveSink {
    pub(super) fn new(archive: SharedArchive, address: Option<IpAddr>) -> Self {
        ArchiveSink {
            archive,
            address,
            sources: BTreeMap::new(),
            fate: Arc::default(),
        }
    }

    /// Hand `what` for the source of `ordinal` to the writer path.
    fn hand_over(&mut self, ordinal: u32, bytes: usize, what: What) -> Result<(), SinkError> {
        let key = self.source(ordinal)?.key;
        self.send(key, bytes, what)
    }

    fn send(&self, key: SourceKey, bytes: usize, what: What) -> Result<(), SinkError> {
        // A source's end goes through whatever happened, so the writer path
        // lets go of it.
        if !matches!(what, What::End { .. }) {
            if let Some(why) = self.fate.failed() {
                return Err(why.into());
            }
        }
        self.archive.inner.hand_over(Work {
            key,
            at: Instant::now(),
            bytes: WORK_BYTES + bytes,
            what,
        })
    }

    fn source(&mut self, ordinal: u32) -> Result<&mut Source, SinkError> {
        // The rules admit no frame for an ordinal with no handshake, and
        // every handshake opened one here.
        self.sources
            .get_mut(&ordinal)
            .ok_or_else(|| format!("no source opened for ordinal {ordinal}").into())
    }
}

/// The bytes `map` holds, as the backlog counts them.
fn map_bytes(map: &BTreeMap<String, String>) -> usize {
    map.iter().map(|(k, v)| k.len() + v.len() + 64).sum()
}

impl Sink for ArchiveSink {
    fn expected_encoder(&self) -> Option<&str> {
        Some(&self.archive.inner.encoder)
    }

    fn open_source(&mut self, ordinal: u32, h: &Handshake<'_>) -> Result<(), SinkError> {
        let bounds = &self.archive.inner.bounds;
        bounds
            .lock()
            .open(self.address, h.uuid)
            .map_err(|refused| format!("source {ordinal} refused: {refused}"))?;
        let key = self
            .archive
            .inner
            .next_key
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let meta = SourceMeta {
            labels: owned_map(h.labels),
            metadata: owned_map(h.metadata),
            clock_anchor_wall_ns: h.clock_anchor_wall_ns,
        };
        let bytes = map_bytes(&meta.labels) + map_bytes(&meta.metadata);
        let uuid = h.uuid.map(str::to_owned);
        let what = What::Open {
            meta,
            uuid: uuid.clone(),
            fate: self.fate.clone(),
        };
        if let Err(e) = self.send(key, bytes, what) {
            bounds.lock().close(h.uuid);
            return Err(e);
        }
        self.sources.insert(
            ordinal,
            Source {
                key,
                uuid,
                complete: h.complete,
                last_offset: None,
            },
        );
        Ok(())
    }

    fn index_entry(&mut self, ordinal: u32, i: &Index<'_>) -> Result<(), SinkError> {
        let row = CallerRow {
            ts: i.ts,
            blob: i.blob.to_vec(),
        };
        let bytes = i.stream.len() + i.blob.len();
        let stream = i.stream.to_owned();
        self.hand_over(ordinal, bytes, What::Index { stream, row })
    }

    fn rows(&mut self, ordinal: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        let mut bytes = 0;
        let owned: Vec<WalRow> = rows
            .rows
            .iter()
            .map(|r| {
                bytes += ROW_BYTES + r.stream.len() + r.row.len();
                WalRow {
                    stream: r.stream.to_owned(),
                    ts: r.ts,
                    wall_offset: r.wall_offset,
                    row: r.row.to_vec(),
                }
            })
            .collect();
        self.hand_over(ordinal, bytes, What::Rows(owned))
    }

    fn segment(&mut self, ordinal: u32, s: &Segment<'_>) -> Result<SegmentStored, SinkError> {
        let what = What::Segment {
            stream: s.stream.to_owned(),
            meta: SegmentMeta {
                rows: s.rows,
                first_ts: s.first_ts,
                last_ts: s.last_ts,
            },
            bytes: s.bytes.to_vec(),
            caller_index: s.caller_index.map(<[u8]>::to_vec),
        };
        let bytes = s.stream.len() + s.bytes.len() + s.caller_index.map_or(0, <[u8]>::len);
        self.hand_over(ordinal, bytes, what)?;
        Ok(SegmentStored::Queued)
    }

    fn clock_offset(&mut self, ordinal: u32, c: &ClockOffset) -> Result<(), SinkError> {
        self.source(ordinal)?.last_offset = Some((c.ts, c.offset_ns));
        let what = What::ClockOffset {
            ts: c.ts,
            offset_ns: c.offset_ns,
        };
        self.hand_over(ordinal, 0, what)
    }

    fn source_update(&mut self, ordinal: u32, u: &SourceUpdate<'_>) -> Result<(), SinkError> {
        let (labels, metadata) = (owned_map(u.labels), owned_map(u.metadata));
        let bytes = map_bytes(&labels) + map_bytes(&metadata);
        self.hand_over(ordinal, bytes, What::Update { labels, metadata })
    }

    /// Each source is ended on the writer path after its last frame:
    /// sources whose publisher said they were complete are finalized, at
    /// the newest clock observation seen, as dendro's own subscriber does;
    /// the rest are left open, which is the truth for a live tail.
    fn end_connection(&mut self) -> Result<(), SinkError> {
        let mut result = Ok(());
        for (_, source) in std::mem::take(&mut self.sources) {
            self.archive
                .inner
                .bounds
                .lock()
                .close(source.uuid.as_deref());
            let what = What::End {
                complete: source.complete,
                last_offset: source.last_offset,
            };
            if let Err(e) = self.send(source.key, 0, what) {
                result = result.and(Err(e));
            }
        }
        result
    }

    fn backlog(&self) -> Option<&Backlog> {
        Some(&self.archive.inner.backlog)
    }
}
