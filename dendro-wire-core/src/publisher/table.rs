//! [`SourceTable`]: where a publisher keeps its declared sources, a
//! `heapless::Vec` of a size the compiler knows ([`Publisher`](crate::Publisher)),
//! or places a caller lends at run time (the C API's, whose count a C
//! program chooses as it makes the publisher).

use heapless::Vec;

use super::source::Source;
use crate::storage::Storage;

/// A publisher's sources, in declaration order: their places and how many
/// it may hold. Declaring a source pushes one; none is ever removed.
pub trait SourceTable<S: Storage> {
    /// The sources declared, in declaration order.
    fn sources(&self) -> &[Source<S>];
    /// The same, to change.
    fn sources_mut(&mut self) -> &mut [Source<S>];
    /// Add a source after the others: `false`, and the source dropped, if
    /// the table is full (the publisher asks [`limit`](Self::limit) first).
    fn push(&mut self, source: Source<S>) -> bool;
    /// The most sources it holds.
    fn limit(&self) -> usize;
}

// `Source` is `PublisherSource` outside the crate: opaque, only held and
// moved by a table.

impl<S: Storage, const N: usize> SourceTable<S> for Vec<Source<S>, N> {
    #[inline]
    fn sources(&self) -> &[Source<S>] {
        self
    }

    #[inline]
    fn sources_mut(&mut self) -> &mut [Source<S>] {
        self
    }

    #[inline]
    fn push(&mut self, source: Source<S>) -> bool {
        Vec::push(self, source).is_ok()
    }

    #[inline]
    fn limit(&self) -> usize {
        N
    }
}
