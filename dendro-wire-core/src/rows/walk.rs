//! Reading rows: the one place a row's layout is read, by the decoder's
//! fast walk over a frame, by the iterator over a decoded one, and by the
//! publisher over the frame it is building.

use super::layout::{RowTail, TAIL_BYTES};
use crate::codec::LEN_BYTES;

/// A row's stream name and fixed run off the front of `rest`, and what
/// follows them: the row's bytes, then the next rows. `None` if `rest` does
/// not hold them. With [`split_row`], the one place a row's layout is read.
#[inline(always)]
fn split_head(rest: &[u8]) -> Option<(&[u8], &[u8; TAIL_BYTES], &[u8])> {
    let (len, tail) = rest.split_first_chunk::<LEN_BYTES>()?;
    let (name, tail) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    let (fixed, tail) = tail.split_first_chunk::<TAIL_BYTES>()?;
    Some((name, fixed, tail))
}

/// A row's fixed run by its fields: a view of the same bytes, no copy.
#[inline(always)]
pub(crate) fn tail(fixed: &[u8; TAIL_BYTES]) -> &RowTail {
    zerocopy::transmute_ref!(fixed)
}

/// The row length a fixed run declares.
#[inline(always)]
fn row_len(fixed: &[u8; TAIL_BYTES]) -> usize {
    tail(fixed).row_len.get() as usize
}

/// One row off the front of `rest`: its stream name's bytes, its fixed run,
/// and its row bytes; `None` if `rest` does not hold a whole row.
#[inline(always)]
pub(crate) fn split_row<'a>(
    rest: &mut &'a [u8],
) -> Option<(&'a [u8], &'a [u8; TAIL_BYTES], &'a [u8])> {
    let (name, fixed, tail) = split_head(rest)?;
    let (row, tail) = tail.split_at_checked(row_len(fixed))?;
    *rest = tail;
    Some((name, fixed, row))
}

/// The bytes a stream name is checked in at once: a name this long or
/// shorter is checked as one 16-byte word.
pub(crate) const NAME_WORD: usize = 16;

/// For a name of `len` bytes (the index), the high bit of each of its bytes
/// in a 16-byte little-endian word.
const ASCII_MASKS: [u128; NAME_WORD + 1] = {
    let mut masks = [0u128; NAME_WORD + 1];
    let mut len = 1;
    while len <= NAME_WORD {
        masks[len] = masks[len - 1] | 0x80 << (8 * (len - 1));
        len += 1;
    }
    masks
};

/// Whether `name` is UTF-8. `word` is the 16 bytes from the name's start,
/// when the frame holds them (it always does for a whole row: a name is
/// followed by its row's 20-byte fixed run). A name that fits the word is
/// checked as ASCII by one load and a mask, with no loop and no branch on
/// its length; any other name, or one that is not ASCII, by the full
/// validator.
#[inline(always)]
pub(super) fn is_utf8(name: &[u8], word: Option<&[u8; NAME_WORD]>) -> bool {
    let ascii = match (word, ASCII_MASKS.get(name.len())) {
        (Some(word), Some(mask)) => u128::from_le_bytes(*word) & mask == 0,
        _ => false,
    };
    ascii || core::str::from_utf8(name).is_ok()
}

/// The bytes `count` rows take at the start of `bytes`, if every one is
/// whole and its stream name is UTF-8: the decoder's fast path, which says
/// only yes or no. On no, the field-by-field walk finds and names the
/// broken rule.
///
/// Walking rows is a chain of dependent loads: where a row ends is known
/// only once its stream name's length, and then its row length, are read.
/// Three things keep that chain short, and none changes what is accepted:
///
/// - The row length is guessed to be the last row's (an agent's rows are
///   fixed records), so the next row's start waits on one load, not two;
///   the row's own length is compared with the guess off that chain, and a
///   wrong guess takes the length read.
/// - A name is checked by [`is_utf8`] as one word, not byte by byte.
/// - A byte [`READ_AHEAD`] bytes on is read each row, at a position that
///   steps by the frame's average row size rather than following the
///   chain, so the rows to come are on their way from memory while this one
///   is checked. What it reads is thrown away.
#[inline]
pub(super) fn walk_rows(bytes: &[u8], count: u32) -> Option<usize> {
    let mut rest = bytes;
    let mut guess = 0;
    let stride = bytes.len() / (count as usize).max(1);
    let mut ahead_at = READ_AHEAD;
    let mut ahead = 0u8;
    for _ in 0..count {
        ahead ^= bytes.get(ahead_at).copied().unwrap_or(0);
        ahead_at += stride;
        let (name, fixed, tail) = split_head(rest)?;
        let word = rest.get(LEN_BYTES..).and_then(<[u8]>::first_chunk);
        let len = row_len(fixed);
        rest = match tail.get(guess..) {
            Some(next) if len == guess => next,
            _ => {
                guess = len;
                tail.get(len..)?
            }
        };
        if !is_utf8(name, word) {
            return None;
        }
    }
    // Keeps the reads ahead from being optimized away.
    core::hint::black_box(ahead);
    Some(bytes.len() - rest.len())
}

/// How far ahead of the row being checked [`walk_rows`] reads: about eight
/// rows of a typical agent. Nearer, the bytes are not there in time; much
/// further (2 KiB and more), measured slower than not reading ahead at all
/// (the decode lines of `cargo xtask bench-report`).
const READ_AHEAD: usize = 512;
