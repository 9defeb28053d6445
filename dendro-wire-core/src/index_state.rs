//! The index state ([protocol §4.2](crate::protocol)) and an incremental hash of a slot set for
//! publishers that keep an index.

mod xxh3;

use xxh3::xxh3_128;
use zerocopy::{Immutable, IntoBytes};

/// The publisher's 128-bit hash of its complete slot set, the only thing a
/// subscriber compares (rule 9). Two `u64`s, as dendro has it.
pub type IndexState = (u64, u64);

/// The state of "no index at all" ([protocol §8.7](crate::protocol)). A subscriber exempts rows that
/// declare it from waiting for a first `Full`; a publisher that has an index
/// must never declare it, which [`SlotSetHash::state`] guarantees.
pub const NO_INDEX_STATE: IndexState = (0, 0);

/// An incremental, order-independent hash of a set of slots.
///
/// A *slot* is whatever bytes the caller uses for one entry of its index,
/// identity and content together (`b"cpu3:online"`). The state is
/// the sum, modulo 2¹²⁸, of each slot's xxh3-128, finalized with the slot
/// count, so:
///
/// - the order slots were added in does not matter;
/// - adding, removing or changing one slot is O(1), whatever the set's size;
/// - the state is never [`NO_INDEX_STATE`], the empty set included, so a
///   publisher with an index cannot claim to have none by accident.
///
/// It holds no slots, so it cannot tell that a slot removed was never added:
/// the caller owns the set, and this owns only its hash.
///
/// ```
/// use dendro_wire_core::{SlotSetHash, NO_INDEX_STATE};
///
/// let mut a = SlotSetHash::new();
/// a.insert(b"cpu0");
/// a.insert(b"cpu1");
/// let mut b = SlotSetHash::new();
/// b.insert(b"cpu1");
/// b.insert(b"cpu0");
/// assert_eq!(a.state(), b.state());
///
/// a.replace(b"cpu1", b"cpu1:offline");
/// assert_ne!(a.state(), b.state());
/// assert_ne!(SlotSetHash::new().state(), NO_INDEX_STATE);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SlotSetHash {
    sum: u128,
    count: u64,
}

impl SlotSetHash {
    /// The empty set.
    pub const fn new() -> Self {
        SlotSetHash { sum: 0, count: 0 }
    }

    /// Add a slot.
    pub fn insert(&mut self, slot: &[u8]) {
        self.sum = self.sum.wrapping_add(xxh3_128(slot));
        self.count = self.count.wrapping_add(1);
    }

    /// Remove a slot that was added.
    pub fn remove(&mut self, slot: &[u8]) {
        self.sum = self.sum.wrapping_sub(xxh3_128(slot));
        self.count = self.count.wrapping_sub(1);
    }

    /// Change a slot from `old` to `new`.
    pub fn replace(&mut self, old: &[u8], new: &[u8]) {
        self.sum = self
            .sum
            .wrapping_sub(xxh3_128(old))
            .wrapping_add(xxh3_128(new));
    }

    /// The number of slots in the set.
    pub const fn len(&self) -> u64 {
        self.count
    }

    /// Whether the set is empty.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The state to put in an `Index` entry and the `Rows` built against it.
    pub fn state(&self) -> IndexState {
        // The sum's 16 bytes, then the count's 8, little-endian: fields of
        // a fixed layout rather than slices of an array, so that no bound
        // check is left where the compiler does not inline (a C device's
        // library built for size).
        let input = HashInput {
            sum: self.sum.to_le_bytes(),
            count: self.count.to_le_bytes(),
        };
        let h = xxh3_128(input.as_bytes());
        let state = (h as u64, (h >> 64) as u64);
        // A one-in-2^128 chance, mapped away so the guarantee is absolute.
        if state == NO_INDEX_STATE {
            (0, 1)
        } else {
            state
        }
    }
}

/// What the index state hashes: a slot set's sum, then its count.
#[derive(IntoBytes, Immutable)]
#[repr(C)]
struct HashInput {
    sum: [u8; 16],
    count: [u8; 8],
}
