//! [`RowList`]: the rows of a frame, as a caller iterates them.

use core::fmt;

use super::layout::Row;
use super::walk::{split_row, tail};
use crate::codec::Items;

/// The rows of a [`Rows`](crate::Rows) frame: a checked view over decoded bytes, or a
/// slice a caller supplies to encode.
///
/// Iterating a decoded list cannot fail and does not allocate: every row was
/// checked when the frame was decoded.
#[derive(Clone, Copy)]
pub struct RowList<'a>(pub(super) Items<'a, Row<'a>>);

impl<'a> RowList<'a> {
    /// No rows: the keepalive of rule 6.
    pub const EMPTY: RowList<'static> = RowList(Items::Given(&[]));

    /// Rows to encode.
    pub const fn from_slice(rows: &'a [Row<'a>]) -> Self {
        RowList(Items::Given(rows))
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows, in frame order.
    pub fn iter(&self) -> RowIter<'a> {
        RowIter(match self.0 {
            Items::Wire { count, bytes } => IterRepr::Wire {
                left: count,
                rest: bytes,
                names: StreamNames::default(),
            },
            Items::Given(rows) => IterRepr::Slice(rows.iter()),
        })
    }

    /// The rows' encoded bytes, after the count.
    pub(super) fn wire_len(&self) -> usize {
        match self.0 {
            Items::Wire { bytes, .. } => bytes.len(),
            Items::Given(rows) => rows
                .iter()
                .fold(0usize, |n, r| n.saturating_add(r.wire_len())),
        }
    }
}

impl PartialEq for RowList<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for RowList<'_> {}

impl fmt::Debug for RowList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for RowList<'a> {
    type Item = Row<'a>;
    type IntoIter = RowIter<'a>;
    fn into_iter(self) -> RowIter<'a> {
        self.iter()
    }
}

/// The rows of a [`RowList`].
#[derive(Clone, Debug)]
pub struct RowIter<'a>(IterRepr<'a>);

/// The stream names an iterator has met, as `str`s.
///
/// A frame's rows come from a handful of streams, usually in a repeating
/// order. A name equal to one met before is that same `str` (equal bytes are
/// equal strings), so each distinct name is UTF-8-checked once per walk
/// rather than once per row; the decoder already checked all of them. The
/// next name is looked for first after the last one found.
#[derive(Clone, Debug, Default)]
struct StreamNames<'a> {
    names: [&'a str; 8],
    len: usize,
    next: usize,
    /// Where the next unseen name goes once the table is full.
    evict: usize,
}

/// Equality of two short byte strings without a call into `memcmp`, which
/// costs more than the comparison for a stream name: a name of 8 to 32
/// bytes is compared as its first and last words.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    /// The first and last `W` bytes: all of them, for `W <= len <= 2 * W`.
    #[inline(always)]
    fn ends<const W: usize>(a: &[u8], b: &[u8]) -> bool {
        a.first_chunk::<W>() == b.first_chunk::<W>() && a.last_chunk::<W>() == b.last_chunk::<W>()
    }
    a.len() == b.len()
        && match a.len() {
            8..=16 => ends::<8>(a, b),
            17..=32 => ends::<16>(a, b),
            _ => a == b,
        }
}

impl<'a> StreamNames<'a> {
    #[inline(always)]
    fn get(&mut self, name: &'a [u8]) -> Option<&'a str> {
        let guess = self.next;
        if let Some(s) = self.names.get(guess).filter(|s| same(s.as_bytes(), name)) {
            self.next = if guess + 1 == self.len { 0 } else { guess + 1 };
            return Some(s);
        }
        for i in 0..self.len {
            if same(self.names[i].as_bytes(), name) {
                self.next = if i + 1 == self.len { 0 } else { i + 1 };
                return Some(self.names[i]);
            }
        }
        let s = core::str::from_utf8(name).ok()?;
        let at = if self.len < self.names.len() {
            self.len += 1;
            self.len - 1
        } else {
            self.evict = (self.evict + 1) % self.names.len();
            self.evict
        };
        self.names[at] = s;
        self.next = if at + 1 == self.len { 0 } else { at + 1 };
        Some(s)
    }
}

#[derive(Clone, Debug)]
enum IterRepr<'a> {
    Wire {
        left: u32,
        rest: &'a [u8],
        names: StreamNames<'a>,
    },
    Slice(core::slice::Iter<'a, Row<'a>>),
}

impl<'a> Iterator for RowIter<'a> {
    type Item = Row<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<Row<'a>> {
        match &mut self.0 {
            IterRepr::Wire { left, rest, names } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                // Every `?` below is unreachable for a list this crate
                // decoded; each ends the walk rather than panicking.
                let (name, fixed, row) = split_row(rest)?;
                let stream = names.get(name)?;
                let fixed = tail(fixed);
                Some(Row {
                    stream,
                    ts: fixed.ts.get(),
                    wall_offset: fixed.wall_offset.get(),
                    row,
                })
            }
            IterRepr::Slice(rows) => rows.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.0 {
            IterRepr::Wire { left, .. } => *left as usize,
            IterRepr::Slice(rows) => rows.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for RowIter<'_> {}

/// The rows serialize as a sequence, in frame order.
#[cfg(feature = "serde")]
impl serde::Serialize for RowList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for RowList<'_> {
    /// How many rows.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "RowList({=usize} rows)", self.len());
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for RowIter<'_> {
    /// The rows it has left.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "RowIter({=usize} left)", self.clone().count());
    }
}
