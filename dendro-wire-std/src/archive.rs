//! A [`Sink`] that writes into a dendro 0.6.1 archive through dendro's own
//! writer, so what is received is an archive dendro opens and reads.
//! Feature `archive`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dendro::archive::{Archive, CallerRow, SegmentMeta, SourceMeta, WalRow};
use dendro::segment::{EncodeContext, EncodeResult, Segment as DSegment, SegmentEncoder};
use dendro::writer::{SourceWriter, Writer};
use dendro_wire_core::{ClockOffset, Handshake, Index, Rows, Segment, SourceUpdate};

use crate::owned::owned_map;
use crate::receive::{SegmentStored, Sink, SinkError};

/// The segment encoding for rows this project does not interpret: each row
/// as `i64 ts | i64 wall_offset | u32 len | row`, little-endian, in order.
/// Its version is the `encoder` name the rows' publisher declares, so the
/// archive records it and every read path checks it.
#[derive(Clone, Debug)]
pub struct RawRowsEncoder {
    version: String,
}

impl RawRowsEncoder {
    /// An encoder for rows a publisher declares as `version`.
    pub fn new(version: impl Into<String>) -> Self {
        RawRowsEncoder {
            version: version.into(),
        }
    }
}

impl SegmentEncoder for RawRowsEncoder {
    fn encode(&self, _: &EncodeContext<'_>, rows: &[WalRow]) -> EncodeResult {
        let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        for r in rows {
            bytes.extend_from_slice(&r.ts.to_le_bytes());
            bytes.extend_from_slice(&r.wall_offset.to_le_bytes());
            bytes.extend_from_slice(&(r.row.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&r.row);
        }
        Ok(Some(DSegment {
            bytes,
            rows: rows.len() as u64,
            first_ts: first.ts,
            last_ts: last.ts,
            index: None,
        }))
    }

    fn version(&self) -> Option<&str> {
        Some(&self.version)
    }
}

/// One archive, written by one dendro `Writer`, shared by every connection
/// that lands in it.
///
/// ```no_run
/// use dendro_wire_std::archive::SharedArchive;
/// use dendro_wire_std::{FrameReader, SinkSubscriber};
///
/// let archive = SharedArchive::create("copy.dendro".as_ref(), "dendro-wire-agent-1")?;
/// let mut subscriber = SinkSubscriber::new(archive.connection());
/// let capture = std::fs::File::open("agent.dwr")?;
/// let mut reader = FrameReader::new(capture)?;
/// while let Some(frame) = reader.next_frame()? {
///     subscriber.apply(&frame)?;
/// }
/// subscriber.finish()?;
/// archive.finish()?; // everything committed; open it with dendro::archive::Archive
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
#[derive(Clone)]
pub struct SharedArchive {
    writer: Arc<Mutex<Writer>>,
    path: PathBuf,
    encoder: String,
}

impl std::fmt::Debug for SharedArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedArchive")
            .field("path", &self.path)
            .field("encoder", &self.encoder)
            .finish_non_exhaustive()
    }
}

fn sink_error(e: dendro::Error) -> SinkError {
    Box::new(e)
}

impl SharedArchive {
    /// Create an archive at `path` (opened if it exists) for rows in
    /// `encoder`; a publisher whose sources declare another is refused.
    pub fn create(path: &Path, encoder: &str) -> Result<Self, SinkError> {
        let encoder_box = Box::new(RawRowsEncoder::new(encoder));
        let writer = if path.exists() {
            Writer::open(path, encoder_box)
        } else {
            Writer::create(path, encoder_box)
        }
        .map_err(sink_error)?;
        Ok(SharedArchive {
            writer: Arc::new(Mutex::new(writer)),
            path: path.to_path_buf(),
            encoder: encoder.to_string(),
        })
    }

    /// A sink for one connection.
    pub fn connection(&self) -> ArchiveSink {
        ArchiveSink {
            archive: self.clone(),
            sources: BTreeMap::new(),
            pending_rows: 0,
            pending_since: None,
        }
    }

    /// The archive's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Wait until everything handed to the writer is committed, and stop it.
    /// Call once every connection has ended; then [`contents`] reads back
    /// what landed.
    pub fn finish(self) -> Result<(), SinkError> {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        writer.join().map_err(sink_error)
    }
}

/// One source of an archive, as dendro's own reader sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceContents {
    /// The id that names the source within the archive.
    pub id: i64,
    /// The labels it was opened with.
    pub labels: BTreeMap<String, String>,
    /// The rows in its live WAL, over all its streams.
    pub wal_rows: u64,
}

/// What the archive at `path` holds, read back with dendro 0.6.1's reader
/// (`Archive::open`, `read_sources`, `all_streams`, `live_wal`): proof that
/// what landed through a [`SharedArchive`] is an archive dendro reads.
pub fn contents(path: &Path) -> Result<Vec<SourceContents>, SinkError> {
    let db = Archive::open(path).map_err(sink_error)?;
    let mut sources = Vec::new();
    for source in db.read_sources().map_err(sink_error)? {
        let mut wal_rows = 0;
        for stream in db.all_streams(source.id).map_err(sink_error)? {
            wal_rows += db
                .live_wal_span(source.id, &stream)
                .map_err(sink_error)?
                .rows;
        }
        sources.push(SourceContents {
            id: source.id,
            labels: source.meta.labels,
            wal_rows,
        });
    }
    Ok(sources)
}

/// One connection's sources in a [`SharedArchive`].
///
/// Rows are handed to dendro's writer in batches rather than a frame at a
/// time: every hand-off is a commit, and an agent's frames are small. A
/// batch goes when it holds [`BATCH_ROWS`] rows, when it is [`BATCH_AGE`]
/// old as the next frame arrives, before any other kind of frame is applied
/// (so the archive sees frames in stream order), and when the connection
/// ends.
pub struct ArchiveSink {
    archive: SharedArchive,
    sources: BTreeMap<u32, Open>,
    pending_rows: usize,
    pending_since: Option<std::time::Instant>,
}

/// The most rows an [`ArchiveSink`] holds before handing them over.
pub const BATCH_ROWS: usize = 16_384;
/// The longest an [`ArchiveSink`] holds a row, measured as frames arrive.
pub const BATCH_AGE: std::time::Duration = std::time::Duration::from_millis(50);

impl std::fmt::Debug for ArchiveSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveSink")
            .field("archive", &self.archive)
            .field("sources", &self.sources.len())
            .finish()
    }
}

struct Open {
    writer: SourceWriter,
    complete: bool,
    last_offset: Option<(i64, i64)>,
    /// Rows not yet handed to the writer.
    pending: Vec<WalRow>,
}

impl ArchiveSink {
    /// Hand every source's pending rows to the writer.
    fn flush(&mut self) -> Result<(), SinkError> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        for open in self.sources.values_mut() {
            if !open.pending.is_empty() {
                let rows = std::mem::take(&mut open.pending);
                open.writer.wal(rows).map_err(sink_error)?;
            }
        }
        self.pending_rows = 0;
        self.pending_since = None;
        Ok(())
    }

    /// Flush before applying a frame that is not rows, so the archive sees
    /// frames in stream order.
    fn flushed(&mut self, ordinal: u32) -> Result<&mut Open, SinkError> {
        self.flush()?;
        self.source(ordinal)
    }

    fn source(&mut self, ordinal: u32) -> Result<&mut Open, SinkError> {
        // The rules admit no frame for an ordinal with no handshake, and
        // every handshake opened one here.
        self.sources
            .get_mut(&ordinal)
            .ok_or_else(|| format!("no source opened for ordinal {ordinal}").into())
    }
}

impl Sink for ArchiveSink {
    fn expected_encoder(&self) -> Option<&str> {
        Some(&self.archive.encoder)
    }

    fn open_source(&mut self, ordinal: u32, h: &Handshake<'_>) -> Result<(), SinkError> {
        self.flush()?;
        let meta = SourceMeta {
            labels: owned_map(h.labels),
            metadata: owned_map(h.metadata),
            clock_anchor_wall_ns: h.clock_anchor_wall_ns,
        };
        let writer = self
            .archive
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add_source_with_uuid(meta, h.uuid)
            .map_err(sink_error)?;
        self.sources.insert(
            ordinal,
            Open {
                writer,
                complete: h.complete,
                last_offset: None,
                pending: Vec::new(),
            },
        );
        Ok(())
    }

    fn index_entry(&mut self, ordinal: u32, i: &Index<'_>) -> Result<(), SinkError> {
        let row = CallerRow {
            ts: i.ts,
            blob: i.blob.to_vec(),
        };
        self.flushed(ordinal)?
            .writer
            .caller_rows(i.stream, vec![row])
            .map_err(sink_error)
    }

    fn rows(&mut self, ordinal: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        let open = self.source(ordinal)?;
        open.pending.extend(rows.rows.iter().map(|r| WalRow {
            stream: r.stream.to_owned(),
            ts: r.ts,
            wall_offset: r.wall_offset,
            row: r.row.to_vec(),
        }));
        self.pending_rows += rows.rows.len();
        let since = *self
            .pending_since
            .get_or_insert_with(std::time::Instant::now);
        if self.pending_rows >= BATCH_ROWS || since.elapsed() >= BATCH_AGE {
            self.flush()?;
        }
        Ok(())
    }

    fn segment(&mut self, ordinal: u32, s: &Segment<'_>) -> Result<SegmentStored, SinkError> {
        let meta = SegmentMeta {
            rows: s.rows,
            first_ts: s.first_ts,
            last_ts: s.last_ts,
        };
        self.flushed(ordinal)?
            .writer
            .adopt_segment(s.stream, &meta, s.bytes, s.caller_index)
            .map(|added| {
                if added {
                    SegmentStored::Added
                } else {
                    SegmentStored::AlreadyHeld
                }
            })
            .map_err(sink_error)
    }

    fn clock_offset(&mut self, ordinal: u32, c: &ClockOffset) -> Result<(), SinkError> {
        let open = self.flushed(ordinal)?;
        open.last_offset = Some((c.ts, c.offset_ns));
        open.writer
            .clock_offset(c.ts, c.offset_ns)
            .map_err(sink_error)
    }

    fn source_update(&mut self, ordinal: u32, u: &SourceUpdate<'_>) -> Result<(), SinkError> {
        self.flushed(ordinal)?
            .writer
            .set_identity(owned_map(u.labels), owned_map(u.metadata))
            .map_err(sink_error)
    }

    /// Sources whose publisher said they were complete are finalized, at the
    /// newest clock observation seen, as dendro's own subscriber does; the
    /// rest are left open, which is the truth for a live tail.
    fn end_connection(&mut self) -> Result<(), SinkError> {
        self.flush()?;
        for (_, mut open) in std::mem::take(&mut self.sources) {
            open.writer.sync().map_err(sink_error)?;
            if open.complete {
                open.writer
                    .finalize(open.last_offset.unwrap_or((0, 0)))
                    .map_err(sink_error)?;
            }
        }
        Ok(())
    }
}
