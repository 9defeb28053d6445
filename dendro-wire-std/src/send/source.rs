//! [`SourceConfig`]: a source an agent declares, and the identity minted
//! for one declared without a uuid.

use std::collections::BTreeMap;

use dendro_wire_core::write_uuid;

/// A source to declare: its identity, its streams, and whether it keeps an
/// index of slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceConfig {
    /// The source's identity across connections; minted (a random v4 uuid)
    /// when `None`.
    pub uuid: Option<String>,
    /// The source's name.
    pub labels: BTreeMap<String, String>,
    /// Everything else; put the rows' `encoder` here.
    pub metadata: BTreeMap<String, String>,
    /// The anchor that pins the source's timeline.
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

    /// Set the clock anchor.
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

/// A random version-4 uuid, from the randomness std's hash maps are seeded
/// with, the clock and a counter: unique per process and across processes,
/// which is all an identity here needs.
pub(super) fn mint_uuid() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut words = [0u64; 2];
    for (i, w) in words.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_i64(wall_now_ns());
        h.write_usize(i);
        h.write_u32(std::process::id());
        *w = h.finish();
    }
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&words[0].to_le_bytes());
    b[8..].copy_from_slice(&words[1].to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    write_uuid(&b, &mut [0; 36]).to_string()
}
