//! [`Storage`]: the bytes a publisher keeps a source in, supplied by the
//! caller.

/// The bytes a [`Publisher`](crate::Publisher) keeps one source in: its
/// handshake, its stream names, the latest row of every stream, its index
/// slots, and the `Rows` frame of the interval under way.
///
/// The core owns no memory, so the caller decides what a source may hold: a
/// fixed array or a `static` slice on a device, where running out is an
/// error the publisher names and counts, or a growable buffer on a host.
/// [`SourceDecl::sizing`](crate::SourceDecl::sizing) says how many bytes a
/// source needs for the most it is given in an interval.
///
/// On a device, lend a `&'static mut [u8]` (a `static` buffer, taken once:
/// with `static_cell`, or `cortex_m::singleton!`, which needs a
/// critical-section implementation, such as cortex-m's
/// `critical-section-single-core` feature on a single core): `add_source` takes its
/// storage by value, and a large array given by value is copied through the
/// stack on the way in, while a slice is a pointer and a length.
/// Every byte is written by the publisher before it is read, so storage
/// need not be zeroed; it must be initialized, which a slice always is.
///
/// ```
/// use dendro_wire_core::Storage;
///
/// let mut fixed = [0u8; 64];
/// assert!(fixed.grow(64));
/// assert!(!fixed.grow(65), "a fixed array cannot grow");
///
/// let mut buf = [0u8; 16];
/// let mut lent: &mut [u8] = &mut buf;
/// assert_eq!(lent.bytes().len(), 16);
/// ```
pub trait Storage {
    /// Every byte the storage holds.
    fn bytes(&self) -> &[u8];

    /// Every byte the storage holds, to write.
    fn bytes_mut(&mut self) -> &mut [u8];

    /// Make [`bytes`](Self::bytes) at least `len` long, keeping what it
    /// holds; `false` if this storage cannot, and then nothing changes.
    /// Storage that grows should grow by more than asked (doubling), so a
    /// source that keeps growing moves its bytes a logarithmic number of
    /// times.
    fn grow(&mut self, len: usize) -> bool {
        self.bytes().len() >= len
    }
}

/// A slice of any length, as a `RowsBuilder` writes into: it cannot grow.
impl Storage for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl Storage for &mut [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl<const N: usize> Storage for [u8; N] {
    fn bytes(&self) -> &[u8] {
        self
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
}
