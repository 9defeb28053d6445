//! The two cursors every frame is read and written with.
//!
//! `Cursor` checks each length against the bytes that remain before it trusts
//! it, and reports a broken rule with the field and the byte offset where the
//! field starts. `Out` writes into a caller's slice; every frame's exact size
//! is computed first, so `Out` failing means that computation is wrong, and it
//! still fails with an error rather than a panic.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Error, Field, Rule};

/// The bytes of a `bytes` or `str` field's length.
pub(crate) const LEN_BYTES: usize = 4;

/// Whether `bytes` is a canonical lowercase 8-4-4-4-12 uuid, the only form a
/// `Handshake` carries (§4.1, [protocol §8](crate::protocol)).
///
/// ```
/// use dendro_wire_core::is_canonical_uuid;
///
/// assert!(is_canonical_uuid(b"3f2b1c4d-0000-4000-8000-00000000abcd"));
/// assert!(!is_canonical_uuid(b"3F2B1C4D-0000-4000-8000-00000000ABCD"));
/// ```
pub fn is_canonical_uuid(bytes: &[u8]) -> bool {
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

/// Write 16 bytes as a canonical lowercase 8-4-4-4-12 uuid into `out`, and
/// return it: how a publisher with no allocator names a source it mints.
///
/// ```
/// use dendro_wire_core::{is_canonical_uuid, write_uuid};
///
/// let mut out = [0u8; 36];
/// let uuid = write_uuid(&[0x3f, 0x2b, 0x1c, 0x4d, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0xab, 0xcd], &mut out);
/// assert_eq!(uuid, "3f2b1c4d-0000-4000-8000-00000000abcd");
/// assert!(is_canonical_uuid(uuid.as_bytes()));
/// ```
pub fn write_uuid<'o>(bytes: &[u8; 16], out: &'o mut [u8; 36]) -> &'o str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut at = 0;
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out[at] = b'-';
            at += 1;
        }
        out[at] = DIGITS[usize::from(b >> 4)];
        out[at + 1] = DIGITS[usize::from(b & 15)];
        at += 2;
    }
    // Every byte written is an ASCII hex digit or a hyphen.
    core::str::from_utf8(out).unwrap_or_default()
}

/// A run of fixed-size little-endian fields ([protocol §4](crate::protocol)),
/// read and written as one zerocopy struct, with each field's place named
/// once, so a run cut short says which field it ends in.
pub(crate) trait FixedRun:
    Sized + FromBytes + IntoBytes + KnownLayout + Immutable + Unaligned
{
    /// Each field's offset in the run (`core::mem::offset_of!`; a byte
    /// holds it, and keeps the table small in a device's flash), in order,
    /// and its name.
    const FIELDS: &'static [(u8, Field)];
}

/// The field a run of `size` bytes laid out as `fields` ends in when only
/// `have` of its bytes are there: its offset in the run, its size, and its
/// name. One function for every run, not one per run type: it is an error
/// path, and a device's flash holds it once.
fn field_at(fields: &[(u8, Field)], size: usize, have: usize) -> (usize, usize, Field) {
    let mut found = (0, size, Field::Length);
    for (i, &(offset, field)) in fields.iter().enumerate() {
        let offset = usize::from(offset);
        if offset > have {
            break;
        }
        let end = fields.get(i + 1).map_or(size, |&(next, _)| next.into());
        found = (offset, end - offset, field);
    }
    found
}

/// A list field's items ([protocol §3](crate::protocol) maps, §4.3 rows):
/// `count` of them as a decoded frame holds them, every one already
/// checked, or a slice a caller gives to encode. [`Map`](crate::Map) and
/// [`RowList`](crate::RowList) are each one of these and an iterator.
#[derive(Clone, Copy)]
pub(crate) enum Items<'a, T> {
    /// Checked items on the wire: the bytes after the count.
    Wire { count: u32, bytes: &'a [u8] },
    /// Items to encode.
    Given(&'a [T]),
}

impl<T> Items<'_, T> {
    /// The number of items.
    pub(crate) const fn len(&self) -> usize {
        match self {
            Items::Wire { count, .. } => *count as usize,
            Items::Given(items) => items.len(),
        }
    }
}

/// A reading position inside one whole frame (length prefix included, so
/// offsets match what a person sees in a hex dump of the frame).
pub(crate) struct Cursor<'a> {
    frame: &'a [u8],
    at: usize,
    kind: u8,
    item: Option<u32>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(frame: &'a [u8], at: usize, kind: u8) -> Self {
        Cursor {
            frame,
            at,
            kind,
            item: None,
        }
    }

    pub(crate) fn at(&self) -> usize {
        self.at
    }

    /// The bytes not yet read.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.frame.get(self.at..).unwrap_or(&[])
    }

    pub(crate) fn left(&self) -> usize {
        self.frame.len().saturating_sub(self.at)
    }

    /// Errors from here on name this row or map entry.
    pub(crate) fn set_item(&mut self, item: Option<u32>) {
        self.item = item;
    }

    pub(crate) fn error(&self, rule: Rule, field: Field, at: usize) -> Error {
        let e = Error::decode(rule, field, at).in_frame(self.kind);
        match self.item {
            Some(item) => e.at_item(item),
            None => e,
        }
    }

    pub(crate) fn take(&mut self, n: usize, field: Field) -> Result<&'a [u8], Error> {
        self.take_at(n, field, self.at)
    }

    /// `take`, reporting a short frame at `field_at` (the start of a length
    /// field rather than of the bytes it counts).
    pub(crate) fn take_at(
        &mut self,
        n: usize,
        field: Field,
        field_at: usize,
    ) -> Result<&'a [u8], Error> {
        let left = self.left();
        match self.frame.get(self.at..).and_then(|rest| rest.get(..n)) {
            Some(out) => {
                self.at += n;
                Ok(out)
            }
            None => Err(self.error(Rule::EndsEarly { needed: n, left }, field, field_at)),
        }
    }

    /// A run of fixed-size fields, read as one; a run cut short names the
    /// field the bytes end in.
    pub(crate) fn fixed<T: FixedRun>(&mut self) -> Result<&'a T, Error> {
        let size = core::mem::size_of::<T>();
        match self.rest().get(..size).map(T::ref_from_bytes) {
            Some(Ok(run)) => {
                self.at += size;
                Ok(run)
            }
            _ => Err(self.short_run(T::FIELDS, size)),
        }
    }

    /// A run of `size` bytes laid out as `fields` that the frame cuts short
    /// at the cursor, blamed on the field it ends in.
    #[cold]
    #[inline(never)]
    fn short_run(&self, fields: &[(u8, Field)], size: usize) -> Error {
        let (offset, needed, field) = field_at(fields, size, self.left());
        let left = self.left() - offset;
        self.error(Rule::EndsEarly { needed, left }, field, self.at + offset)
    }

    pub(crate) fn u8(&mut self, field: Field) -> Result<u8, Error> {
        let b = self.take(1, field)?;
        Ok(b.first().copied().unwrap_or(0))
    }

    pub(crate) fn u32(&mut self, field: Field) -> Result<u32, Error> {
        let b = self.take(4, field)?;
        // `take` gave exactly 4 bytes; a chunk rather than a copy keeps a
        // length check (and its panic) out of firmware builds.
        let word = b.first_chunk::<4>().copied().unwrap_or_default();
        Ok(u32::from_le_bytes(word))
    }

    /// `bytes` (§3): a `u32` length, then that many bytes, the length bounded
    /// by what is left before it is used.
    pub(crate) fn bytes(&mut self, field: Field) -> Result<&'a [u8], Error> {
        let start = self.at;
        let len = self.u32(field)? as usize;
        self.take_at(len, field, start)
    }

    /// `str` (§3): `bytes` that are valid UTF-8.
    pub(crate) fn str(&mut self, field: Field) -> Result<&'a str, Error> {
        let start = self.at;
        let raw = self.bytes(field)?;
        core::str::from_utf8(raw).map_err(|_| self.error(Rule::NotUtf8, field, start))
    }

    /// `opt<bytes>` (§3): a presence byte of exactly 0 or 1, then `bytes`.
    pub(crate) fn opt_bytes(&mut self, field: Field) -> Result<Option<&'a [u8]>, Error> {
        let start = self.at;
        match self.u8(field)? {
            0 => Ok(None),
            1 => self.bytes(field).map(Some),
            value => Err(self.error(Rule::NotAPresenceByte { value }, field, start)),
        }
    }

    /// `bool` (§3): exactly 0 or 1, read from a byte already taken at `at`.
    pub(crate) fn bool(&self, value: u8, field: Field, at: usize) -> Result<bool, Error> {
        match value {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(self.error(Rule::NotABool { value }, field, at)),
        }
    }

    /// A count of entries, refused at once if even entries of `min_entry`
    /// bytes each could not fit in what is left.
    pub(crate) fn count(&mut self, field: Field, min_entry: usize) -> Result<u32, Error> {
        let start = self.at;
        let count = self.u32(field)?;
        self.check_count(count, field, min_entry, start)?;
        Ok(count)
    }

    pub(crate) fn check_count(
        &self,
        count: u32,
        field: Field,
        min_entry: usize,
        at: usize,
    ) -> Result<(), Error> {
        let left = self.left();
        if (count as u64) * (min_entry as u64) > left as u64 {
            return Err(self.error(Rule::CountTooLarge { count, left }, field, at));
        }
        Ok(())
    }

    /// The bytes from `start` to the cursor: a run already walked and checked.
    pub(crate) fn since(&self, start: usize) -> &'a [u8] {
        self.frame.get(start..self.at).unwrap_or(&[])
    }

    /// No bytes may be left after the last field (§2).
    pub(crate) fn finish(self) -> Result<(), Error> {
        match self.left() {
            0 => Ok(()),
            count => Err(
                Error::decode(Rule::TrailingBytes { count }, Field::Payload, self.at)
                    .in_frame(self.kind),
            ),
        }
    }
}

/// A writing position inside a caller's buffer.
pub(crate) struct Out<'b> {
    buf: &'b mut [u8],
    at: usize,
}

impl<'b> Out<'b> {
    pub(crate) fn new(buf: &'b mut [u8], at: usize) -> Self {
        Out { buf, at }
    }

    pub(crate) fn at(&self) -> usize {
        self.at
    }

    /// The next `n` bytes of the buffer, to be written by the caller.
    pub(crate) fn reserve(&mut self, n: usize) -> Result<&mut [u8], Error> {
        let end = self.at + n;
        let have = self.buf.len();
        match self.buf.get_mut(self.at..end) {
            Some(dst) => {
                self.at = end;
                Ok(dst)
            }
            None => Err(Error::encode(
                Rule::BufferTooSmall { needed: end, have },
                Field::Payload,
                self.at,
            )),
        }
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        // `reserve` gives exactly `bytes.len()` bytes, so the copy is whole.
        let _ = copy(self.reserve(bytes.len())?, bytes);
        Ok(())
    }

    pub(crate) fn fixed<T: IntoBytes + Immutable>(&mut self, value: &T) -> Result<(), Error> {
        self.put(value.as_bytes())
    }

    pub(crate) fn u8(&mut self, v: u8) -> Result<(), Error> {
        self.put(&[v])
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<(), Error> {
        self.put(&v.to_le_bytes())
    }

    /// `bytes`; the caller has bounded the frame, so `len` fits a `u32`.
    pub(crate) fn bytes(&mut self, v: &[u8]) -> Result<(), Error> {
        self.u32(v.len() as u32)?;
        self.put(v)
    }

    pub(crate) fn opt_bytes(&mut self, v: Option<&[u8]>) -> Result<(), Error> {
        match v {
            None => self.u8(0),
            Some(b) => {
                self.u8(1)?;
                self.bytes(b)
            }
        }
    }

    /// Write `value` at `at`, behind the cursor: for a length or a count
    /// known only once what it covers has been written.
    pub(crate) fn patch(&mut self, at: usize, value: &[u8]) -> Result<(), Error> {
        let back = self.at;
        self.at = at;
        let done = self.put(value);
        self.at = back;
        done
    }
}

/// `dst.copy_from_slice(src)`, `None` rather than a panic if their lengths
/// differ: a panic's message and place are flash a device has no use for,
/// and a path of the machine that built it. zerocopy's `write_to` checks
/// the lengths and calls `memcpy`, which moves words: a loop of byte moves
/// is what this was on a Cortex-M built for size (several instructions a
/// byte; `cargo xtask firmware` prints the instructions per row), and
/// `copy_from_slice` keeps its panic there, its check out of line. Out of
/// line on a 32-bit core, one copy of it in flash; inline on a 64-bit
/// one, where the call took a seventh of a closing frame's instructions
/// (each stream's latest row kept; `encode-profile machine` under
/// callgrind).
#[cfg_attr(target_pointer_width = "64", inline)]
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
pub(crate) fn copy(dst: &mut [u8], src: &[u8]) -> Option<()> {
    src.write_to(dst).ok()
}

/// The last `N` bytes of `bytes`, if it has as many. On a 32-bit core not
/// `last_chunk`, whose out-of-line `split_at` keeps a panic path in a
/// library built for size (a C device's); on a 64-bit one `last_chunk`,
/// which the encoders inline to one comparison where this took two (a
/// fifth more instructions a row, `encode-profile builder` under
/// callgrind).
#[inline(always)]
pub(crate) fn last_of<const N: usize>(bytes: &[u8]) -> Option<&[u8; N]> {
    #[cfg(target_pointer_width = "64")]
    return bytes.last_chunk();
    #[cfg(not(target_pointer_width = "64"))]
    return bytes.get(bytes.len().checked_sub(N)?..)?.first_chunk();
}

/// [`last_of`], to change.
#[inline(always)]
pub(crate) fn last_of_mut<const N: usize>(bytes: &mut [u8]) -> Option<&mut [u8; N]> {
    #[cfg(target_pointer_width = "64")]
    return bytes.last_chunk_mut();
    #[cfg(not(target_pointer_width = "64"))]
    return {
        let from = bytes.len().checked_sub(N)?;
        bytes.get_mut(from..)?.first_chunk_mut()
    };
}

/// Copy `src` into `dst`, `None` (copying nothing) if their lengths differ.
///
/// A stream name or a row of a few words is copied as two overlapping
/// fixed-size moves: a call into `memcpy` costs more than such a copy, and
/// encoding a row would make two of them (`cargo xtask bench-report`
/// measures the encoder). Longer runs are `memcpy`.
#[inline(always)]
pub(crate) fn copy_short(dst: &mut [u8], src: &[u8]) -> Option<()> {
    /// The first and last `W` bytes of `src` onto those of `dst`: for
    /// `W <= len <= 2 * W` that covers every byte.
    #[inline(always)]
    fn ends<const W: usize>(dst: &mut [u8], src: &[u8]) -> Option<()> {
        // Array assignments: the copies' lengths are in their types, so no
        // check is left for a caller the compiler does not inline into
        // (`copy_from_slice` kept one, and a panic path, in a C device's
        // library built for size).
        *dst.first_chunk_mut::<W>()? = *src.first_chunk::<W>()?;
        *last_of_mut::<W>(dst)? = *last_of::<W>(src)?;
        Some(())
    }
    if src.len() != dst.len() {
        return None;
    }
    // A two-level choice, so the common sizes (names of 8 to 16 bytes,
    // rows of 17 to 32) are each two comparisons away.
    let n = src.len();
    if n <= 16 {
        if n >= 8 {
            ends::<8>(dst, src)
        } else if n >= 4 {
            ends::<4>(dst, src)
        } else if n > 0 {
            // 1 to 3 bytes: the first, the middle and the last.
            ends::<1>(dst, src)?;
            *dst.get_mut(n / 2)? = *src.get(n / 2)?;
            Some(())
        } else {
            Some(())
        }
    } else if n <= 32 {
        ends::<16>(dst, src)
    } else if n <= 64 {
        ends::<32>(dst, src)
    } else {
        copy(dst, src)
    }
}

/// The encoded size of a `bytes` or `str` field.
pub(crate) const fn bytes_len(n: usize) -> usize {
    LEN_BYTES + n
}

/// The encoded size of an `opt<bytes>` field.
pub(crate) const fn opt_bytes_len(v: Option<&[u8]>) -> usize {
    match v {
        None => 1,
        Some(b) => 1 + bytes_len(b.len()),
    }
}

/// A byte field as serde's bytes, not a sequence of numbers: what a binary
/// format keeps as it is.
#[cfg(feature = "serde")]
pub(crate) fn serialize_bytes<S: serde::Serializer>(
    bytes: &&[u8],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

/// An `opt<bytes>` as serde's bytes, or none.
#[cfg(feature = "serde")]
pub(crate) fn serialize_opt_bytes<S: serde::Serializer>(
    bytes: &Option<&[u8]>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match bytes {
        Some(bytes) => s.serialize_some(&serde_bytes_ref(bytes)),
        None => s.serialize_none(),
    }
}

/// A byte slice that serializes as bytes.
#[cfg(feature = "serde")]
fn serde_bytes_ref(bytes: &[u8]) -> impl serde::Serialize + '_ {
    struct Bytes<'a>(&'a [u8]);
    impl serde::Serialize for Bytes<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    Bytes(bytes)
}
