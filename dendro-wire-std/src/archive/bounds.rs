//! How many sources connections may create in an archive: at most
//! [`max_sources`](super::ArchiveConfig::max_sources) in all (those the
//! archive held when it was opened included) and
//! [`max_sources_per_address`](super::ArchiveConfig::max_sources_per_address)
//! from each client address. Every source is a row in the archive for
//! good, so a peer sending Handshake after Handshake would otherwise grow
//! it without end.
//!
//! A Handshake whose uuid the archive already holds, and that no
//! connection holds open now, is a reconnect: it is not counted again. One
//! that repeats a uuid open on another connection at the same time is
//! counted as a new source, so repeating one uuid is no way around the
//! bounds.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often at most a refusal is logged; those in between are counted
/// into the next line.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Why a source was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// The archive holds `max_sources` sources.
    Total(usize),
    /// The address has created `max_sources_per_address` sources.
    Address(IpAddr, usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Total(max) => write!(
                f,
                "the archive holds its bound of {max} sources (--archive-max-sources)"
            ),
            Refused::Address(address, max) => write!(
                f,
                "{address} has created its bound of {max} sources in the archive \
                 (--archive-max-sources-per-address)"
            ),
        }
    }
}

/// What has been counted against the bounds.
#[derive(Debug)]
pub(super) struct Bounds {
    max: usize,
    max_per_address: usize,
    /// Sources the archive holds: those it held when opened, and those
    /// created since.
    total: usize,
    /// Sources created from each address.
    per_address: HashMap<IpAddr, usize>,
    /// Every uuid the archive holds (at most one entry per source counted),
    /// and how many connections hold it open now.
    uuids: HashMap<String, u32>,
    refused: u64,
    /// Refusals not yet logged, and when the last line was.
    unlogged: u64,
    logged_at: Option<Instant>,
}

impl Bounds {
    /// Bounds of `max` in all and `max_per_address` from each address, over
    /// an archive that holds `held` (the uuids among them).
    pub(super) fn new(
        max: usize,
        max_per_address: usize,
        held: impl IntoIterator<Item = Option<String>>,
    ) -> Self {
        let mut bounds = Bounds {
            max,
            max_per_address,
            total: 0,
            per_address: HashMap::new(),
            uuids: HashMap::new(),
            refused: 0,
            unlogged: 0,
            logged_at: None,
        };
        for uuid in held {
            bounds.total += 1;
            if let Some(uuid) = uuid {
                bounds.uuids.insert(uuid, 0);
            }
        }
        bounds
    }

    /// A connection from `address` (`None`: not known, as on a Unix
    /// socket, and only the bound in all applies) opens a source named
    /// `uuid`: admitted, and held open until [`close`](Self::close), or
    /// refused and counted.
    pub(super) fn open(
        &mut self,
        address: Option<IpAddr>,
        uuid: Option<&str>,
    ) -> Result<(), Refused> {
        if let Some(live) = uuid.and_then(|u| self.uuids.get_mut(u)) {
            if *live == 0 {
                // A reconnect: the archive already counts it.
                *live = 1;
                return Ok(());
            }
        }
        let refused = if self.total >= self.max {
            Some(Refused::Total(self.max))
        } else {
            address
                .filter(|a| self.per_address.get(a).copied().unwrap_or(0) >= self.max_per_address)
                .map(|a| Refused::Address(a, self.max_per_address))
        };
        if let Some(refused) = refused {
            self.refused += 1;
            self.log(&refused);
            return Err(refused);
        }
        self.total += 1;
        if let Some(address) = address {
            *self.per_address.entry(address).or_default() += 1;
        }
        if let Some(uuid) = uuid {
            *self.uuids.entry(uuid.to_owned()).or_default() += 1;
        }
        Ok(())
    }

    /// A source opened as `uuid` ended with its connection.
    pub(super) fn close(&mut self, uuid: Option<&str>) {
        if let Some(live) = uuid.and_then(|u| self.uuids.get_mut(u)) {
            *live = live.saturating_sub(1);
        }
    }

    /// Sources refused so far.
    pub(super) fn refused(&self) -> u64 {
        self.refused
    }

    /// Sources the archive holds, as counted.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    /// Say a refusal, at most once every [`LOG_EVERY`]: a log line is
    /// itself something a peer could aim at.
    fn log(&mut self, refused: &Refused) {
        self.unlogged += 1;
        if self.logged_at.is_some_and(|at| at.elapsed() < LOG_EVERY) {
            return;
        }
        log::warn!(
            "archive: a source refused: {refused}; {} refused since the last such line, {} in all",
            self.unlogged,
            self.refused
        );
        self.unlogged = 0;
        self.logged_at = Some(Instant::now());
    }
}

/// [`Bounds`] shared by an archive's connections.
#[derive(Debug)]
pub(super) struct SharedBounds(Mutex<Bounds>);

impl SharedBounds {
    pub(super) fn new(bounds: Bounds) -> Self {
        SharedBounds(Mutex::new(bounds))
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Bounds> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([127, 0, 0, last]))
    }

    #[test]
    fn each_address_creates_at_most_its_bound_and_all_at_most_the_total() {
        let mut b = Bounds::new(5, 2, []);
        assert_eq!(b.open(ip(1), None), Ok(()));
        assert_eq!(b.open(ip(1), Some("a")), Ok(()));
        assert_eq!(
            b.open(ip(1), Some("b")),
            Err(Refused::Address(IpAddr::from([127, 0, 0, 1]), 2))
        );
        // Ending its sources gives an address no more room: what it
        // created stays in the archive.
        b.close(Some("a"));
        assert!(b.open(ip(1), None).is_err());
        assert_eq!(b.open(ip(2), None), Ok(()));
        assert_eq!(b.open(ip(2), None), Ok(()));
        // Unknown addresses count toward the total only.
        assert_eq!(b.open(None, None), Ok(()));
        assert_eq!(b.total(), 5);
        assert_eq!(b.open(ip(3), None), Err(Refused::Total(5)));
        assert_eq!(b.open(None, None), Err(Refused::Total(5)));
        assert_eq!(b.refused(), 4);
    }

    #[test]
    fn a_reconnect_is_not_counted_again_but_a_uuid_open_twice_is() {
        let mut b = Bounds::new(3, 2, [Some("held".to_string()), None]);
        assert_eq!(b.total(), 2);
        // The archive held it: reopening it creates nothing new.
        assert_eq!(b.open(ip(1), Some("held")), Ok(()));
        assert_eq!(b.total(), 2);
        // Open twice at once: the second is a source of its own.
        assert_eq!(b.open(ip(1), Some("held")), Ok(()));
        assert_eq!(b.total(), 3);
        assert_eq!(b.open(ip(2), Some("held")), Err(Refused::Total(3)));
        b.close(Some("held"));
        b.close(Some("held"));
        // Both ended: the agent reconnects, at the total and past its
        // address's count.
        assert_eq!(b.open(ip(1), Some("held")), Ok(()));
        assert_eq!(b.total(), 3);
        assert_eq!(b.refused(), 1);
    }
}
