//! [`ArchiveConfig`]: how an archive's writer path batches its commits,
//! and how much it may hold that is not yet committed.

use std::time::Duration;

/// How a [`SharedArchive`](super::SharedArchive)'s writer path batches its
/// commits, and how much it may hold that is not yet committed. Every field
/// has a setter of its name.
///
/// ```
/// use std::time::Duration;
/// use dendro_wire_std::archive::ArchiveConfig;
///
/// let config = ArchiveConfig::default().commit_age(Duration::from_millis(250));
/// assert_eq!(config.commit_rows, 1 << 20, "the rest as they default");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ArchiveConfig {
    /// A batch is committed once it holds this many rows (default
    /// 1,048,576), however young. What arrives while a commit is under way
    /// goes into the next, so a writer that falls behind commits larger
    /// batches, and larger batches commit more rows a second: a commit's
    /// cost is mostly the index pages it writes, one for each stream of
    /// each source it touches, shared by that stream's rows in the batch.
    /// This bounds one commit's size and time; the
    /// [backlog](Self::backlog_bytes) bounds memory.
    pub commit_rows: usize,
    /// A batch is committed once its oldest row has waited this long
    /// (default 100 ms), however few rows it holds.
    pub commit_age: Duration,
    /// What may be handed over and not yet committed, in bytes (default 64
    /// MiB; an estimate: each row's bytes, its stream's name, and what
    /// holding them costs). Past it, connections are not read until
    /// commits make room ([`Backlog`](crate::receive::Backlog)).
    pub backlog_bytes: usize,
    /// The most sources the archive holds (default 500,000): those it held
    /// when opened, and those connections create. Every source is a row in
    /// the archive for good; a Handshake past this is refused and its
    /// connection ended. A fleet of 10,000 agents with a few sources each
    /// is some tens of thousands, and each agent that restarts minting new
    /// uuids adds its sources again: room for ten such restarts of the
    /// whole fleet, at some 300 bytes of the archive each (and a uuid's
    /// worth of the collector's memory), before a new archive is due.
    pub max_sources: usize,
    /// The most sources connections from one client address create
    /// (default 64), whatever becomes of them: what a source costs stays in
    /// the archive when its connection ends. An agent has a few; room for
    /// several restarts of an agent that mints new uuids, or for a few
    /// agents behind one address. A Handshake whose uuid the archive holds
    /// and no connection holds open (a reconnect) is not counted again.
    pub max_sources_per_address: usize,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        ArchiveConfig {
            commit_rows: 1 << 20,
            commit_age: Duration::from_millis(100),
            backlog_bytes: 64 << 20,
            max_sources: 500_000,
            max_sources_per_address: 64,
        }
    }
}

impl ArchiveConfig {
    /// Set [`commit_rows`](Self::commit_rows) (at least 1).
    pub fn commit_rows(mut self, rows: usize) -> Self {
        self.commit_rows = rows.max(1);
        self
    }

    /// Set [`commit_age`](Self::commit_age).
    pub fn commit_age(mut self, age: Duration) -> Self {
        self.commit_age = age;
        self
    }

    /// Set [`backlog_bytes`](Self::backlog_bytes).
    pub fn backlog_bytes(mut self, bytes: usize) -> Self {
        self.backlog_bytes = bytes;
        self
    }

    /// Set [`max_sources`](Self::max_sources).
    pub fn max_sources(mut self, sources: usize) -> Self {
        self.max_sources = sources;
        self
    }

    /// Set [`max_sources_per_address`](Self::max_sources_per_address).
    pub fn max_sources_per_address(mut self, sources: usize) -> Self {
        self.max_sources_per_address = sources;
        self
    }
}
