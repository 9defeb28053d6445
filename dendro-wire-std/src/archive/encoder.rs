//! [`RawRowsEncoder`], the segment encoding of the rows an archive lands,
//! and the opening of dendro's writer for them.

use std::path::Path;
use std::sync::Arc;

use dendro::archive::WalRow;
use dendro::segment::{EncodeContext, EncodeResult, Segment as DSegment, SegmentEncoder};
use dendro::writer::Writer;

use super::events::{self, Watch};

/// The segment encoding for rows this project does not interpret: each row
/// as `i64 ts | i64 wall_offset | u32 len | row`, little-endian, in order.
/// Its version is the `encoder` name the rows' publisher declares, so the
/// archive records it and every read path checks it.
#[derive(Clone, Debug)]
pub struct RawRowsEncoder {
    version: String,
    /// The archive whose dendro writer thread asks for the version, to be
    /// told of the ticks that thread drops.
    watch: Option<Arc<Watch>>,
}

impl RawRowsEncoder {
    /// An encoder for rows a publisher declares as `version`.
    pub fn new(version: impl Into<String>) -> Self {
        RawRowsEncoder {
            version: version.into(),
            watch: None,
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
        // dendro asks on its writer thread, as it adds each source (before
        // any of the source's rows): that thread is the one whose dropped
        // ticks are this archive's.
        if let Some(watch) = &self.watch {
            events::watch_this_thread(watch);
        }
        Some(&self.version)
    }
}

/// dendro's writer of the archive at `path` (opened if it exists, and
/// created if not and `create`), for rows declared as `encoder`; the ticks
/// its thread drops are told to `watch`. A writer opened anew heartbeats
/// none of the archive's sources until they are added again.
pub(super) fn open_writer(
    path: &Path,
    encoder: &str,
    watch: &Arc<Watch>,
    create: bool,
) -> Result<Writer, dendro::Error> {
    let encoder_box = Box::new(RawRowsEncoder {
        version: encoder.to_string(),
        watch: Some(watch.clone()),
    });
    if path.exists() || !create {
        Writer::open(path, encoder_box)
    } else {
        Writer::create(path, encoder_box)
    }
}
