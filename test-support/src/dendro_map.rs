//! The one mapping between this project's frames and dendro 0.6.1's: a
//! view as dendro's owned frame, and dendro's frame lent as a view (the
//! encoder's input shape). Used by the core's and the std crate's
//! differential tests and the fuzz targets; the std crate's `OwnedFrame` is
//! reached through its own `From<&Frame>` and `with_view`.

use std::collections::BTreeMap;

use dendro::archive::{SegmentMeta, WalRow};
use dendro::replicate::Frame as DFrame;
use dendro::replicate::IndexKind as DKind;
use dendro_wire_core::{
    ClockOffset, Frame, Handshake, Index, IndexKind, Map, Row, RowList, Rows, Segment, SourceUpdate,
};

fn owned_map(m: Map<'_>) -> BTreeMap<String, String> {
    m.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

/// Our view, as dendro's owned frame.
pub fn to_dendro(f: &Frame<'_>) -> DFrame {
    match f {
        Frame::Handshake(h) => DFrame::Handshake {
            source: h.source,
            uuid: h.uuid.map(Into::into),
            labels: owned_map(h.labels),
            metadata: owned_map(h.metadata),
            clock_anchor_wall_ns: h.clock_anchor_wall_ns,
            complete: h.complete,
        },
        Frame::Index(i) => DFrame::Index {
            source: i.source,
            stream: i.stream.into(),
            ts: i.ts,
            kind: match i.kind {
                IndexKind::Full => DKind::Full,
                IndexKind::Delta => DKind::Delta,
            },
            state: i.state,
            blob: i.blob.into(),
        },
        Frame::Rows(r) => DFrame::Rows {
            source: r.source,
            seq: r.seq,
            index_state: r.index_state,
            rows: r
                .rows
                .iter()
                .map(|w| WalRow {
                    stream: w.stream.into(),
                    ts: w.ts,
                    wall_offset: w.wall_offset,
                    row: w.row.into(),
                })
                .collect(),
        },
        Frame::Segment(s) => DFrame::Segment {
            source: s.source,
            stream: s.stream.into(),
            meta: SegmentMeta {
                rows: s.rows,
                first_ts: s.first_ts,
                last_ts: s.last_ts,
            },
            bytes: s.bytes.into(),
            caller_index: s.caller_index.map(Into::into),
        },
        Frame::ClockOffset(c) => DFrame::ClockOffset {
            source: c.source,
            ts: c.ts,
            offset_ns: c.offset_ns,
        },
        Frame::SourceUpdate(u) => DFrame::SourceUpdate {
            source: u.source,
            ts: u.ts,
            labels: owned_map(u.labels),
            metadata: owned_map(u.metadata),
        },
        Frame::Unknown { .. } => unreachable!("dendro has no unknown frame"),
    }
}

/// dendro's frame as our view over caller-supplied pairs and rows (the
/// encoder's input shape, not a decoded view), handed to `f`.
pub fn with_view<T>(d: &DFrame, f: impl FnOnce(&Frame<'_>) -> T) -> T {
    fn pairs(m: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
        m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }
    match d {
        DFrame::Handshake {
            source,
            uuid,
            labels,
            metadata,
            clock_anchor_wall_ns,
            complete,
        } => {
            let (l, m) = (pairs(labels), pairs(metadata));
            f(&Frame::Handshake(Handshake {
                source: *source,
                uuid: uuid.as_deref(),
                labels: Map::from_pairs(&l),
                metadata: Map::from_pairs(&m),
                clock_anchor_wall_ns: *clock_anchor_wall_ns,
                complete: *complete,
            }))
        }
        DFrame::Rows {
            source,
            seq,
            index_state,
            rows,
        } => {
            let rows: Vec<Row<'_>> = rows
                .iter()
                .map(|w| Row {
                    stream: &w.stream,
                    ts: w.ts,
                    wall_offset: w.wall_offset,
                    row: &w.row,
                })
                .collect();
            f(&Frame::Rows(Rows {
                source: *source,
                seq: *seq,
                index_state: *index_state,
                rows: RowList::from_slice(&rows),
            }))
        }
        DFrame::SourceUpdate {
            source,
            ts,
            labels,
            metadata,
        } => {
            let (l, m) = (pairs(labels), pairs(metadata));
            f(&Frame::SourceUpdate(SourceUpdate {
                source: *source,
                ts: *ts,
                labels: Map::from_pairs(&l),
                metadata: Map::from_pairs(&m),
            }))
        }
        DFrame::Index {
            source,
            stream,
            ts,
            kind,
            state,
            blob,
        } => f(&Frame::Index(Index {
            source: *source,
            stream,
            ts: *ts,
            kind: match kind {
                DKind::Full => IndexKind::Full,
                _ => IndexKind::Delta,
            },
            state: *state,
            blob,
        })),
        DFrame::Segment {
            source,
            stream,
            meta,
            bytes,
            caller_index,
        } => f(&Frame::Segment(Segment {
            source: *source,
            stream,
            rows: meta.rows,
            first_ts: meta.first_ts,
            last_ts: meta.last_ts,
            bytes,
            caller_index: caller_index.as_deref(),
        })),
        DFrame::ClockOffset {
            source,
            ts,
            offset_ns,
        } => f(&Frame::ClockOffset(ClockOffset {
            source: *source,
            ts: *ts,
            offset_ns: *offset_ns,
        })),
        other => panic!("a dendro frame this test does not know: {other:?}"),
    }
}
