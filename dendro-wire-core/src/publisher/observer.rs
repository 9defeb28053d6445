//! [`Observer`]: many rows of one source observed at once, the frame's
//! position held across them rather than read and written back per row.

use super::config::StreamId;
use super::error::PublishError;
use super::row_path::RowCursor;
use super::source::Source;
use crate::storage::Storage;

/// One source's rows, observed many at a time: from
/// [`Publisher::observer`](crate::Publisher::observer), for an agent that samples a source's streams
/// together. Each row is refused, kept, and counted exactly as
/// [`Publisher::observe`](crate::Publisher::observe) would; the publisher is borrowed until the
/// observer is dropped, so no interval can end under it.
///
/// ```
/// use dendro_wire_core::{Map, Publisher, PublisherConfig, SourceDecl};
///
/// let mut p: Publisher<[u8; 1024], 1> = Publisher::new(PublisherConfig::default());
/// let decl = SourceDecl {
///     uuid: None,
///     labels: Map::EMPTY,
///     metadata: Map::EMPTY,
///     clock_anchor_wall_ns: 0,
///     complete: false,
///     streams: &["cpu0/usage", "cpu1/usage"],
///     index_stream: None,
/// };
/// let cpu = p.add_source(&decl, [0; 1024])?;
/// let mut rows = p.observer(cpu)?;
/// for c in 0..2 {
///     rows.observe(cpu.stream(c), 1_000, 0, &[c as u8; 8])?;
/// }
/// drop(rows);
/// p.connected();
/// p.end_interval();
/// # Ok::<(), dendro_wire_core::PublishError>(())
/// ```
pub struct Observer<'a, S: Storage> {
    src: &'a mut Source<S>,
    source: u32,
    limit: usize,
    cursor: RowCursor,
}

impl<'a, S: Storage> Observer<'a, S> {
    /// `src`'s rows, bounded by `limit`, the frame buffer.
    pub(super) fn new(src: &'a mut Source<S>, limit: usize) -> Self {
        let (cursor, source) = (src.cursor(), src.ordinal());
        Observer {
            src,
            source,
            limit,
            cursor,
        }
    }

    /// Observe one row on one of the source's streams: see
    /// [`Publisher::observe`](crate::Publisher::observe).
    #[cfg_attr(unaligned_words, inline(always))]
    #[cfg_attr(not(unaligned_words), inline)]
    pub fn observe(
        &mut self,
        stream: StreamId,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), PublishError> {
        if stream.source == self.source {
            let cursor = &mut self.cursor;
            if self
                .src
                .put_small(cursor, stream.index, ts, wall_offset, row)
                .is_some()
            {
                return Ok(());
            }
        }
        // Out of line, with the position handed over through the source
        // rather than as a value whose address a call takes: the observer's
        // position stays in registers across a caller's loop.
        self.src.set_cursor(&self.cursor);
        let result = self
            .src
            .observe_slow(self.limit, stream, (ts, wall_offset, row));
        self.cursor = self.src.cursor();
        result
    }
}

impl<S: Storage> Drop for Observer<'_, S> {
    fn drop(&mut self) {
        self.src.set_cursor(&self.cursor);
    }
}

#[cfg(feature = "defmt")]
impl<S: Storage> defmt::Format for Observer<'_, S> {
    /// Its source, and the frame under way: its size and rows.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Observer source={=u32} frame={=usize}B rows={=u32}",
            self.source,
            self.cursor.at,
            self.cursor.rows
        );
    }
}
