//! [`OwnedFrame`]: frames that own their fields, for callers who keep them.

use std::collections::BTreeMap;

use dendro_wire_core::{
    ClockOffset, Error, Frame, Handshake, Index, IndexKind, IndexState, Map, Row, RowList, Rows,
    Segment, SourceUpdate,
};

/// One frame that owns its fields: the shape of dendro 0.6.1's `Frame`, with
/// maps as `BTreeMap<String, String>` and bytes as `Vec<u8>`, plus `Unknown`
/// for a kind this build does not read.
///
/// Made from a view with `From`, and written with [`write_to`](Self::write_to)
/// or a [`FrameWriter`](crate::FrameWriter). With the `serde` feature it
/// (de)serializes in the JSON Lines form of [protocol §10](dendro_wire_core::protocol): `"frame"` names the
/// kind, bytes are lowercase hex, `null` is an absent `opt<bytes>`.
///
/// ```
/// use dendro_wire_core::{decode, Status};
/// use dendro_wire_std::OwnedFrame;
///
/// let frame = OwnedFrame::ClockOffset { source: 0, ts: 10, offset_ns: -3 };
/// let mut bytes = Vec::new();
/// frame.write_to(&mut bytes)?;
/// let Status::Complete((view, _)) = decode(&bytes)? else { unreachable!() };
/// assert_eq!(OwnedFrame::from(&view), frame);
/// # Ok::<(), dendro_wire_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "frame", rename_all = "snake_case", deny_unknown_fields)
)]
#[allow(missing_docs)] // the fields are docs/PROTOCOL.md §4's, documented on the core's views
pub enum OwnedFrame {
    /// Kind 1; see [`Handshake`].
    Handshake {
        source: u32,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::required"))]
        uuid: Option<String>,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::map"))]
        labels: BTreeMap<String, String>,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::map"))]
        metadata: BTreeMap<String, String>,
        clock_anchor_wall_ns: i64,
        complete: bool,
    },
    /// Kind 2; see [`Index`].
    Index {
        source: u32,
        stream: String,
        ts: i64,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::index_kind"))]
        kind: IndexKind,
        state: IndexState,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::hex_form"))]
        blob: Vec<u8>,
    },
    /// Kind 3; see [`Rows`].
    Rows {
        source: u32,
        seq: u64,
        index_state: IndexState,
        rows: Vec<OwnedRow>,
    },
    /// Kind 4; see [`Segment`]. Its metadata is flat, as in the JSON form.
    Segment {
        source: u32,
        stream: String,
        rows: u64,
        first_ts: i64,
        last_ts: i64,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::hex_form"))]
        bytes: Vec<u8>,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::opt_hex"))]
        caller_index: Option<Vec<u8>>,
    },
    /// Kind 5; see [`ClockOffset`].
    ClockOffset {
        source: u32,
        ts: i64,
        offset_ns: i64,
    },
    /// Kind 6; see [`SourceUpdate`].
    SourceUpdate {
        source: u32,
        ts: i64,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::map"))]
        labels: BTreeMap<String, String>,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::map"))]
        metadata: BTreeMap<String, String>,
    },
    /// A kind this build does not read: the kind byte and the bytes after it.
    Unknown {
        kind: u8,
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::hex_form"))]
        payload: Vec<u8>,
    },
}

/// One row of an [`OwnedFrame::Rows`]; see [`Row`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields)
)]
#[allow(missing_docs)]
pub struct OwnedRow {
    pub stream: String,
    pub ts: i64,
    pub wall_offset: i64,
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_form::hex_form"))]
    pub row: Vec<u8>,
}

/// A map view as the owned map std's types hold.
pub(crate) fn owned_map(m: Map<'_>) -> BTreeMap<String, String> {
    m.iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// An owned map's entries as the pairs a [`Map`] view is made from
/// ([`Map::from_pairs`]); a `BTreeMap` keeps them in the ascending order
/// the wire requires.
pub(crate) fn pairs(m: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

impl From<&Frame<'_>> for OwnedFrame {
    fn from(frame: &Frame<'_>) -> Self {
        match *frame {
            Frame::Handshake(h) => OwnedFrame::Handshake {
                source: h.source,
                uuid: h.uuid.map(str::to_owned),
                labels: owned_map(h.labels),
                metadata: owned_map(h.metadata),
                clock_anchor_wall_ns: h.clock_anchor_wall_ns,
                complete: h.complete,
            },
            Frame::Index(i) => OwnedFrame::Index {
                source: i.source,
                stream: i.stream.to_owned(),
                ts: i.ts,
                kind: i.kind,
                state: i.state,
                blob: i.blob.to_vec(),
            },
            Frame::Rows(r) => OwnedFrame::Rows {
                source: r.source,
                seq: r.seq,
                index_state: r.index_state,
                rows: r.rows.iter().map(OwnedRow::from).collect(),
            },
            Frame::Segment(s) => OwnedFrame::Segment {
                source: s.source,
                stream: s.stream.to_owned(),
                rows: s.rows,
                first_ts: s.first_ts,
                last_ts: s.last_ts,
                bytes: s.bytes.to_vec(),
                caller_index: s.caller_index.map(<[u8]>::to_vec),
            },
            Frame::ClockOffset(c) => OwnedFrame::ClockOffset {
                source: c.source,
                ts: c.ts,
                offset_ns: c.offset_ns,
            },
            Frame::SourceUpdate(u) => OwnedFrame::SourceUpdate {
                source: u.source,
                ts: u.ts,
                labels: owned_map(u.labels),
                metadata: owned_map(u.metadata),
            },
            Frame::Unknown { kind, payload } => OwnedFrame::Unknown {
                kind,
                payload: payload.to_vec(),
            },
        }
    }
}

impl From<Row<'_>> for OwnedRow {
    fn from(row: Row<'_>) -> Self {
        OwnedRow {
            stream: row.stream.to_owned(),
            ts: row.ts,
            wall_offset: row.wall_offset,
            row: row.row.to_vec(),
        }
    }
}

impl OwnedFrame {
    /// The handshake ordinal the frame names; `None` for an unknown kind.
    pub fn source(&self) -> Option<u32> {
        match self {
            OwnedFrame::Handshake { source, .. }
            | OwnedFrame::Index { source, .. }
            | OwnedFrame::Rows { source, .. }
            | OwnedFrame::Segment { source, .. }
            | OwnedFrame::ClockOffset { source, .. }
            | OwnedFrame::SourceUpdate { source, .. } => Some(*source),
            OwnedFrame::Unknown { .. } => None,
        }
    }

    /// Lend this frame to `f` as the core's view (the encoder's input).
    pub fn with_view<T>(&self, f: impl FnOnce(&Frame<'_>) -> T) -> T {
        match self {
            OwnedFrame::Handshake {
                source,
                uuid,
                labels,
                metadata,
                clock_anchor_wall_ns,
                complete,
            } => {
                let (labels, metadata) = (pairs(labels), pairs(metadata));
                f(&Frame::Handshake(Handshake {
                    source: *source,
                    uuid: uuid.as_deref(),
                    labels: Map::from_pairs(&labels),
                    metadata: Map::from_pairs(&metadata),
                    clock_anchor_wall_ns: *clock_anchor_wall_ns,
                    complete: *complete,
                }))
            }
            OwnedFrame::Index {
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
                kind: *kind,
                state: *state,
                blob,
            })),
            OwnedFrame::Rows {
                source,
                seq,
                index_state,
                rows,
            } => {
                let rows: Vec<Row<'_>> = rows
                    .iter()
                    .map(|r| Row {
                        stream: &r.stream,
                        ts: r.ts,
                        wall_offset: r.wall_offset,
                        row: &r.row,
                    })
                    .collect();
                f(&Frame::Rows(Rows {
                    source: *source,
                    seq: *seq,
                    index_state: *index_state,
                    rows: RowList::from_slice(&rows),
                }))
            }
            OwnedFrame::Segment {
                source,
                stream,
                rows,
                first_ts,
                last_ts,
                bytes,
                caller_index,
            } => f(&Frame::Segment(Segment {
                source: *source,
                stream,
                rows: *rows,
                first_ts: *first_ts,
                last_ts: *last_ts,
                bytes,
                caller_index: caller_index.as_deref(),
            })),
            OwnedFrame::ClockOffset {
                source,
                ts,
                offset_ns,
            } => f(&Frame::ClockOffset(ClockOffset {
                source: *source,
                ts: *ts,
                offset_ns: *offset_ns,
            })),
            OwnedFrame::SourceUpdate {
                source,
                ts,
                labels,
                metadata,
            } => {
                let (labels, metadata) = (pairs(labels), pairs(metadata));
                f(&Frame::SourceUpdate(SourceUpdate {
                    source: *source,
                    ts: *ts,
                    labels: Map::from_pairs(&labels),
                    metadata: Map::from_pairs(&metadata),
                }))
            }
            OwnedFrame::Unknown { kind, payload } => f(&Frame::Unknown {
                kind: *kind,
                payload,
            }),
        }
    }

    /// Append the frame's bytes (length, kind, payload) to `out`; on an error
    /// `out` is left as it was.
    pub fn write_to(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.with_view(|view| crate::write_frame_to(out, view))
    }
}
