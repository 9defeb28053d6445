//! `map` ([protocol §3](crate::protocol)): a count, then `(str key, str value)` pairs in strictly
//! ascending key order.

use core::fmt;

use crate::codec::{bytes_len, Cursor, Items, Out, LEN_BYTES};
use crate::error::{Error, Field, Rule};

/// A `map` field: a view over the bytes of a decoded frame, or pairs a caller
/// supplies to encode.
///
/// A decoded map has had every key and value checked for UTF-8 and its keys
/// for strict ascending order, so [`iter`](Map::iter) cannot fail. Keys are
/// ordered so that two encodings of equal maps are equal byte strings
/// (§3); a map given out of order is refused when encoded rather than sorted,
/// because sorting would need storage this crate does not have.
///
/// ```
/// use dendro_wire_core::Map;
///
/// let labels = Map::from_pairs(&[("arch", "x86_64"), ("host", "web-01")]);
/// assert_eq!(labels.get("host"), Some("web-01"));
/// assert_eq!(labels.iter().count(), 2);
/// ```
#[derive(Clone, Copy)]
pub struct Map<'a>(Items<'a, (&'a str, &'a str)>);

impl<'a> Map<'a> {
    /// The map with no entries.
    pub const EMPTY: Map<'static> = Map(Items::Given(&[]));

    /// A map to encode. The pairs must be in strictly ascending key order;
    /// encoding checks it.
    pub const fn from_pairs(pairs: &'a [(&'a str, &'a str)]) -> Self {
        Map(Items::Given(pairs))
    }

    /// The pairs the map was made of ([`from_pairs`](Self::from_pairs)), as
    /// given, where they lie; `None` for a map read from the wire.
    pub const fn given(&self) -> Option<&'a [(&'a str, &'a str)]> {
        match self.0 {
            Items::Given(pairs) => Some(pairs),
            Items::Wire { .. } => None,
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The bytes the map takes on the wire, count included, if its keys are
    /// in order (encoding checks that; this only adds up).
    pub(crate) const fn wire_bytes(&self) -> usize {
        match self.0 {
            Items::Wire { bytes, .. } => LEN_BYTES + bytes.len(),
            Items::Given(pairs) => {
                let (mut n, mut i) = (LEN_BYTES, 0);
                while i < pairs.len() {
                    n += 2 * LEN_BYTES + pairs[i].0.len() + pairs[i].1.len();
                    i += 1;
                }
                n
            }
        }
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries, in key order.
    pub fn iter(&self) -> MapIter<'a> {
        MapIter(match self.0 {
            Items::Wire { count, bytes } => IterRepr::Wire {
                left: count,
                rest: bytes,
            },
            Items::Given(p) => IterRepr::Pairs(p.iter()),
        })
    }

    /// The value of `key`, if present. The keys are sorted, so the walk
    /// stops at the first key past it.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        for (k, v) in self.iter() {
            match k.as_bytes().cmp(key.as_bytes()) {
                core::cmp::Ordering::Less => continue,
                core::cmp::Ordering::Equal => return Some(v),
                core::cmp::Ordering::Greater => return None,
            }
        }
        None
    }

    /// Read a map at the cursor, checking every rule of §3 on the way.
    pub(crate) fn parse(c: &mut Cursor<'a>, field: Field) -> Result<Self, Error> {
        // The smallest entry is two empty strings: two lengths.
        let count = c.count(field, 2 * LEN_BYTES)?;
        let start = c.at();
        let mut previous: Option<&[u8]> = None;
        for i in 0..count {
            c.set_item(Some(i));
            let key_at = c.at();
            let key = c.str(field)?;
            if previous.is_some_and(|p| p >= key.as_bytes()) {
                return Err(c.error(Rule::KeysNotAscending, field, key_at));
            }
            previous = Some(key.as_bytes());
            c.str(field)?;
        }
        c.set_item(None);
        Ok(Map(Items::Wire {
            count,
            bytes: c.since(start),
        }))
    }

    /// The encoded size, checking the key order of caller-given pairs; `at`
    /// is where the map would start, for the error.
    pub(crate) fn wire_len(&self, field: Field, at: usize) -> Result<usize, Error> {
        match self.0 {
            Items::Wire { bytes, .. } => Ok(LEN_BYTES + bytes.len()),
            Items::Given(pairs) => {
                let mut len = LEN_BYTES;
                let mut previous: Option<&str> = None;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if previous.is_some_and(|p| p.as_bytes() >= k.as_bytes()) {
                        return Err(Error::encode(Rule::KeysNotAscending, field, at + len)
                            .at_item(i as u32));
                    }
                    previous = Some(k);
                    len = len
                        .saturating_add(bytes_len(k.len()))
                        .saturating_add(bytes_len(v.len()));
                }
                Ok(len)
            }
        }
    }

    pub(crate) fn emit(&self, out: &mut Out<'_>) -> Result<(), Error> {
        match self.0 {
            Items::Wire { count, bytes } => {
                out.u32(count)?;
                out.put(bytes)
            }
            Items::Given(pairs) => {
                out.u32(pairs.len() as u32)?;
                for (k, v) in pairs {
                    out.bytes(k.as_bytes())?;
                    out.bytes(v.as_bytes())?;
                }
                Ok(())
            }
        }
    }
}

impl Default for Map<'_> {
    fn default() -> Self {
        Map::EMPTY
    }
}

impl PartialEq for Map<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Map<'_> {}

impl fmt::Debug for Map<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// `{"key": "value", ...}`, in key order: the form a frame's one-line
/// `Display` shows a map in.
impl fmt::Display for Map<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{k:?}: {v:?}")?;
        }
        f.write_str("}")
    }
}

impl<'a> IntoIterator for Map<'a> {
    type Item = (&'a str, &'a str);
    type IntoIter = MapIter<'a>;
    fn into_iter(self) -> MapIter<'a> {
        self.iter()
    }
}

/// The entries of a [`Map`], in key order.
#[derive(Clone, Debug)]
pub struct MapIter<'a>(IterRepr<'a>);

#[derive(Clone, Debug)]
enum IterRepr<'a> {
    Wire { left: u32, rest: &'a [u8] },
    Pairs(core::slice::Iter<'a, (&'a str, &'a str)>),
}

/// One `str` off bytes that were checked when the map was decoded. `None`
/// cannot happen for a map this crate decoded; it ends the walk instead of
/// panicking.
pub(crate) fn next_str<'a>(rest: &mut &'a [u8]) -> Option<&'a str> {
    let (len, tail) = rest.split_first_chunk::<LEN_BYTES>()?;
    let len = u32::from_le_bytes(*len) as usize;
    let (s, tail) = tail.split_at_checked(len)?;
    *rest = tail;
    core::str::from_utf8(s).ok()
}

impl<'a> Iterator for MapIter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Wire { left, rest } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let k = next_str(rest)?;
                let v = next_str(rest)?;
                Some((k, v))
            }
            IterRepr::Pairs(p) => p.next().map(|&(k, v)| (k, v)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.0 {
            IterRepr::Wire { left, .. } => *left as usize,
            IterRepr::Pairs(p) => p.len(),
        };
        (n, Some(n))
    }
}

/// A map serializes as a map, in its (ascending) key order.
#[cfg(feature = "serde")]
impl serde::Serialize for Map<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Map<'_> {
    /// Each key and value, in key order.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{{");
        for (i, (k, v)) in self.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            defmt::write!(f, "{=str}{=str}: {=str}", sep, k, v);
        }
        defmt::write!(f, "}}");
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for MapIter<'_> {
    /// The pairs it has left.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "MapIter({=usize} left)", self.clone().count());
    }
}
