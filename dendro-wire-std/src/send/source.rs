//! [`SourceConfig`]: a source an agent declares, and the identity minted
//! for one declared without a uuid.

use std::collections::BTreeMap;

/// A source to declare: its identity, its streams, and whether it keeps an
/// index of slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceConfig {
    /// The source's identity across connections, canonical lowercase
    /// 8-4-4-4-12 hex; `None` (the default) has a random version-4 uuid
    /// minted when the source is declared, so give one that is kept (in a
    /// file, say) for a source that should stay the same source across
    /// restarts.
    pub uuid: Option<String>,
    /// The source's name: what tells it from other sources (`host`,
    /// `source`, ...). Empty by default.
    pub labels: BTreeMap<String, String>,
    /// Everything else. Put the rows' `encoder` here: a name for the layout
    /// of the rows' bytes (and the segments'), with its version, such as
    /// `"dendro-wire-agent-1"` — changed whenever that layout changes,
    /// because a subscriber that stores another encoder refuses the source
    /// ([PROTOCOL.md §4.1, §8.8](dendro_wire_core::protocol)). Empty by
    /// default; a source with no `encoder` passes that check.
    pub metadata: BTreeMap<String, String>,
    /// The publisher's wall clock, in nanoseconds since the Unix epoch, at
    /// the point the source's timeline is pinned to (when it started, say).
    /// 0 by default.
    pub clock_anchor_wall_ns: i64,
    /// The streams rows are observed on.
    pub streams: Vec<String>,
    /// The `caller_rows` stream index entries land in, for a source that
    /// keeps an index; `None` for one that does not (its rows declare
    /// `NO_INDEX_STATE`).
    pub index_stream: Option<String>,
}

impl SourceConfig {
    /// An empty declaration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Add a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Add a stream.
    pub fn stream(mut self, name: impl Into<String>) -> Self {
        self.streams.push(name.into());
        self
    }

    /// Keep an index, whose entries land in `stream`.
    pub fn index(mut self, stream: impl Into<String>) -> Self {
        self.index_stream = Some(stream.into());
        self
    }

    /// Set the uuid.
    pub fn uuid(mut self, uuid: impl Into<String>) -> Self {
        self.uuid = Some(uuid.into());
        self
    }

    /// Set the clock anchor, in nanoseconds since the Unix epoch.
    pub fn clock_anchor(mut self, wall_ns: i64) -> Self {
        self.clock_anchor_wall_ns = wall_ns;
        self
    }
}

/// Nanoseconds since the Unix epoch, by the wall clock; 0 before it.
pub(super) fn wall_now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A random version-4 uuid from the operating system's random source (the
/// `uuid` crate's `new_v4`), in the canonical form a handshake carries.
pub(super) fn mint_uuid() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}
