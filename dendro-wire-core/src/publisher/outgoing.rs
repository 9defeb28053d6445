//! What goes out next. Every handshake due goes first (rule 1), then each
//! source's queue in order (its entries before the rows they name,
//! rule 4), the sources taken in turn as the [`DropPolicy`] says. What a
//! source's queue drops, and when, is its own (`source/queue.rs`).

use core::ops::Range;

use super::config::DropPolicy;
use super::source::Source;
use crate::storage::Storage;

/// What a polled frame is: its source, whether it is the source's
/// handshake, and where its bytes are in the source's storage.
pub(super) struct Due {
    pub(super) source: usize,
    pub(super) handshake: bool,
    pub(super) range: Range<usize>,
}

/// The next frame due of `sources`, without taking it; under
/// [`DropPolicy::RoundRobin`], `turn` is the source polled first this
/// interval.
pub(super) fn next_due<S: Storage>(
    sources: &[Source<S>],
    policy: DropPolicy,
    turn: usize,
) -> Option<Due> {
    let n = sources.len();
    if let Some(i) = sources.iter().position(|s| s.handshake_due()) {
        let range = sources.get(i)?.handshake();
        return Some(Due {
            source: i,
            handshake: true,
            range,
        });
    }
    // Under round robin the source that has lost the fewest frames goes
    // last, next in line to lose one, ties taken in turn: the sources'
    // counts of lost frames stay close. Every frame a source lost counts, seen
    // as a gap or not (an index entry, a frame due when a connection
    // changed): ranked by gaps alone, a source whose losses were entries
    // would look the one that lost least, and go on losing.
    let first = match policy {
        DropPolicy::RoundRobin => turn,
        DropPolicy::DeclarationOrder => 0,
    };
    // Their low words, added: a 64-bit sum at every comparison was a
    // device's flash, and an order past 2^32 frames lost matters little.
    let lost = |s: &Source<S>| match policy {
        DropPolicy::RoundRobin => {
            let c = s.counts();
            (c.frames_dropped as u32).wrapping_add(c.frames_unsent as u32)
        }
        DropPolicy::DeclarationOrder => 0,
    };
    let mut next: Option<(usize, u32)> = None;
    // From `first` round to it, without a division.
    for i in (first..n).chain(0..first) {
        let Some(s) = sources.get(i) else {
            continue;
        };
        if s.has_queued() && next.is_none_or(|(_, most)| lost(s) > most) {
            next = Some((i, lost(s)));
        }
    }
    let (i, _) = next?;
    Some(Due {
        source: i,
        handshake: false,
        range: sources.get(i)?.next_queued(),
    })
}
