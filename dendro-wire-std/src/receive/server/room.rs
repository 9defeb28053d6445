//! Making room: when the table, or one address's share of it, is full,
//! which live connection is told to go for a newcomer. Those that give
//! least go first: a connection that spoke and opened nothing; one that
//! has had its grace to open a source and has not; one whose sources have
//! delivered nothing (no rows, no segment) for longer than the grace, the
//! stalest first; and, on a full table, a connection yet to open a source
//! from the address that holds the most of them, if it holds more than the
//! newcomer's would.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::shared::{Live, ServerShared, Table};

impl Table {
    /// Connection `id`, just accepted from `address` (if it is counted
    /// under one): live, yet to open a source.
    pub(super) fn join(&mut self, id: u64, live: Arc<Live>, address: Option<IpAddr>) {
        self.connections.insert(id, live);
        self.unopened.insert(id);
        if let Some(address) = address {
            self.count_under(id, address);
        }
    }

    /// Live connections from `address`.
    pub(super) fn live_from(&self, address: IpAddr) -> usize {
        self.members.get(&address).map_or(0, |ids| ids.len())
    }

    /// Count connection `id` under `address` from now on (once: a
    /// connection through a load balancer, when its PROXY header is read).
    pub(super) fn count_under(&mut self, id: u64, address: IpAddr) {
        let Some(live) = self.connections.get(&id) else {
            return;
        };
        *live.counted.lock().unwrap_or_else(|e| e.into_inner()) = Some(address);
        self.members.entry(address).or_default().insert(id);
        if self.unopened.contains(&id) {
            let from = self.unopened_from.entry(address).or_default();
            let had = from.len();
            from.insert(id);
            self.recount(address, had);
        }
    }

    /// Connection `id` has ended: off every list.
    pub(super) fn leave(&mut self, id: u64) {
        self.no_longer_weighed(id);
        if let Some(live) = self.connections.remove(&id) {
            if let Some(address) = live.counted_as() {
                if let Some(ids) = self.members.get_mut(&address) {
                    ids.remove(&id);
                    if ids.is_empty() {
                        self.members.remove(&address);
                    }
                }
            }
        }
    }

    /// Connection `id` opened its first source: weighed from now on by
    /// what it delivers, as if it had just delivered. One already told to
    /// go stays told.
    pub(super) fn opened(&mut self, id: u64) {
        if self.unopened.contains(&id) {
            self.no_longer_weighed(id);
            let now = Instant::now();
            self.giving.insert((now, id));
            self.gave_at.insert(id, now);
        }
    }

    /// Take `id` off the lists room is made from.
    fn no_longer_weighed(&mut self, id: u64) {
        self.spoke.remove(&id);
        if let Some(at) = self.gave_at.remove(&id) {
            self.giving.remove(&(at, id));
        }
        if !self.unopened.remove(&id) {
            return;
        }
        let Some(address) = self.connections.get(&id).and_then(|l| l.counted_as()) else {
            return;
        };
        if let Some(from) = self.unopened_from.get_mut(&address) {
            let had = from.len();
            from.remove(&id);
            if from.is_empty() {
                self.unopened_from.remove(&address);
            }
            self.recount(address, had);
        }
    }

    /// `address` held `had` connections yet to open a source: place it by
    /// what it holds now.
    fn recount(&mut self, address: IpAddr, had: usize) {
        self.by_unopened.remove(&(had, address));
        let now = self.unopened_from.get(&address).map_or(0, |ids| ids.len());
        if now > 0 {
            self.by_unopened.insert((now, address));
        }
    }

    /// Tell `id` to go, and take it off the lists at once, so that it is
    /// told only once.
    fn tell(&mut self, id: u64) {
        self.no_longer_weighed(id);
        if let Some(live) = self.connections.get(&id) {
            live.evict.notify_one();
        }
    }

    /// When `live` last delivered, as far as `at` (its place in `giving`)
    /// and its session say: now, while a frame of its waits for the sink
    /// (the wait is the sink's, not the peer's).
    fn gave(live: Option<&Arc<Live>>, at: Instant) -> Instant {
        let progress = live.map(|live| *live.progress.lock().unwrap_or_else(|e| e.into_inner()));
        match progress {
            Some(progress) if progress.waiting => Instant::now().max(at),
            Some(progress) => progress.gave.map_or(at, |gave| gave.max(at)),
            None => at,
        }
    }

    /// The connection with a source open that has delivered nothing for
    /// longest, if that is at least `grace`. `giving` is ordered by when
    /// each was last looked at: one that delivered since is moved to its
    /// place, so each is moved at most once for each time it delivers.
    fn stalest(&mut self, grace: Duration) -> Option<u64> {
        let now = Instant::now();
        loop {
            let &(at, id) = self.giving.first()?;
            if now.saturating_duration_since(at) < grace {
                return None;
            }
            let gave = Self::gave(self.connections.get(&id), at);
            if gave == at {
                return Some(id);
            }
            self.giving.remove(&(at, id));
            self.giving.insert((gave, id));
            self.gave_at.insert(id, gave);
        }
    }

    /// The connection from `address` that gives least, if one may go: one
    /// that spoke and opened nothing; else one yet to open a source that
    /// has had `grace`, the oldest; else one whose sources delivered
    /// nothing for `grace` or longer, the stalest.
    fn least_giving_from(&self, address: IpAddr, grace: Duration) -> Option<u64> {
        let ids = self.members.get(&address)?;
        if let Some(&id) = ids.iter().find(|id| self.spoke.contains(id)) {
            return Some(id);
        }
        let had_grace = |id: &&u64| {
            self.connections
                .get(id)
                .is_none_or(|live| live.accepted.elapsed() >= grace)
        };
        let mut unopened = ids.iter().filter(|id| self.unopened.contains(id));
        if let Some(&id) = unopened.find(had_grace) {
            return Some(id);
        }
        let now = Instant::now();
        ids.iter()
            .filter_map(|&id| {
                let at = *self.gave_at.get(&id)?;
                Some((Self::gave(self.connections.get(&id), at), id))
            })
            .min()
            .filter(|&(gave, _)| now.saturating_duration_since(gave) >= grace)
            .map(|(_, id)| id)
    }

    /// Make room for a newcomer from `newcomer` (if counted under an
    /// address); whether one was told to go. The oldest that spoke and
    /// opened nothing; else the oldest yet to open a source, once it has
    /// had `grace`. Only when the table is `full` (every connection, not
    /// just those yet to open a source): else the stalest of those with a
    /// source that delivered nothing for `grace`; else, one yet to open a
    /// source, within its grace, from the address that holds the most of
    /// them, if it holds at least two more than the newcomer's address
    /// does (so the share of each address evens out; one address's fleet
    /// reconnecting at once is not cut for itself).
    fn room_for(&mut self, newcomer: Option<IpAddr>, grace: Duration, full: bool) -> bool {
        let spoke = self.spoke.first().copied();
        // The oldest is the first accepted: if it is within its grace, so
        // is every other.
        let had_grace = self.unopened.first().copied().filter(|oldest| {
            self.connections
                .get(oldest)
                .is_none_or(|live| live.accepted.elapsed() >= grace)
        });
        let mut chosen = spoke.or(had_grace);
        if chosen.is_none() && full {
            chosen = self.stalest(grace);
        }
        if chosen.is_none() && full {
            let theirs = newcomer
                .and_then(|a| self.unopened_from.get(&a))
                .map_or(0, |ids| ids.len());
            chosen = self
                .by_unopened
                .last()
                .filter(|&&(most, _)| most >= theirs + 2)
                .and_then(|(_, address)| self.unopened_from.get(address))
                .and_then(|ids| ids.first().copied());
        }
        let Some(chosen) = chosen else {
            return false;
        };
        self.tell(chosen);
        true
    }
}

impl ServerShared {
    /// Make room on the table for a newcomer from `newcomer`, as
    /// [`Table::room_for`] chooses; whether one was told to go, counted.
    pub(super) fn make_room(&self, table: &mut Table, newcomer: Option<IpAddr>) -> bool {
        let full = table.len() >= self.config.max_connections;
        let told = table.room_for(newcomer, self.config.eviction_grace, full);
        if told {
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        told
    }

    /// Room for one more connection from `address`: at its share, the
    /// connection of its own that gives least goes, if one may (`true`);
    /// else why not. The cap is never turned on the address's own honest
    /// agent: its newcomer takes the place of a connection of the address
    /// that has opened nothing, or delivered nothing, within the grace.
    pub(super) fn room_from(&self, table: &mut Table, address: IpAddr) -> Result<bool, String> {
        let from = table.live_from(address);
        if from < self.config.max_connections_per_peer {
            return Ok(false);
        }
        if let Some(id) = table.least_giving_from(address, self.config.eviction_grace) {
            table.tell(id);
            self.evicted.fetch_add(1, Ordering::Relaxed);
            return Ok(true);
        }
        Err(format!(
            "{from} connections are live from {address}, the most allowed from one address, \
             each having opened a source and delivered within the last {:?}, being closed to \
             make room, or accepted within it",
            self.config.eviction_grace
        ))
    }
}
