//! Byte moves and reads the publisher's storage code shares: a region's
//! bytes moved without a `memmove`, and a stored length read back.

use core::ops::Range;

use zerocopy::little_endian::U32;

use crate::codec::copy;
use crate::LENGTH_PREFIX_BYTES;

/// `bytes.copy_within(from, to)`, in pieces of 16 bytes each read whole
/// before it is written, so that no piece lands on bytes still to move:
/// `copy_within` is a `memmove`, its code in the flash of a Cortex-M built
/// for size (and keeps a panic there; `cargo xtask firmware` prints the
/// footprint), for moves that are rare (a slot set, a
/// stream's latest row outgrowing its slot, frames polled). A move that
/// does not fit in `bytes` moves nothing.
pub(super) fn move_bytes(bytes: &mut [u8], from: Range<usize>, to: usize) {
    const PIECE: usize = 16;
    let len = from.len();
    if from.end > bytes.len() || to.saturating_add(len) > bytes.len() {
        return;
    }
    let (pieces, rest) = (len / PIECE, len % PIECE);
    // Upwards from the end, downwards from the start.
    let up = to > from.start;
    let mut piece = |at: usize| -> Option<()> {
        let read: [u8; PIECE] = *bytes.get(from.start + at..)?.first_chunk()?;
        // Written by the out-of-line copy: a read and a write the compiler
        // sees whole it merges into a `memmove`.
        copy(bytes.get_mut(to + at..)?.first_chunk_mut::<PIECE>()?, &read)
    };
    for k in 0..pieces {
        let at = match up {
            true => rest + (pieces - 1 - k) * PIECE,
            false => k * PIECE,
        };
        let _ = piece(at);
    }
    // The last few bytes, one at a time, on the side the pieces left.
    for k in 0..rest {
        let at = match up {
            true => rest - 1 - k,
            false => pieces * PIECE + k,
        };
        if let Some(&b) = bytes.get(from.start + at) {
            if let Some(d) = bytes.get_mut(to + at) {
                *d = b;
            }
        }
    }
}

/// The little-endian `u32` that is all of `b`; 0 if `b` is not four bytes.
///
/// Inline where a word loads from any offset in one instruction
/// (`cfg(unaligned_words)`, `build.rs`); out of line where it takes four
/// byte loads and the shifts that join them, which each of its callers
/// would otherwise hold a copy of (`cargo xtask firmware` prints the
/// footprint); a row there, which goes by `put_any`, pays one call for its
/// stream's name length.
#[cfg_attr(unaligned_words, inline)]
#[cfg_attr(not(unaligned_words), inline(never))]
pub(super) fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
}

/// `*dst = U32::new(v)`: out of line where `le_u32` is, for the same
/// reason, the four byte stores of an unaligned word made once.
#[cfg_attr(unaligned_words, inline)]
#[cfg_attr(not(unaligned_words), inline(never))]
pub(super) fn set_le_u32(dst: &mut U32, v: u32) {
    *dst = U32::new(v);
}

/// The whole length of the frame at the front of `bytes`, from its length
/// prefix: for walking the queue, whose frames the publisher wrote.
pub(super) fn frame_len_at(bytes: &[u8]) -> Option<usize> {
    let len = le_u32(bytes.get(..LENGTH_PREFIX_BYTES)?) as usize;
    Some(LENGTH_PREFIX_BYTES + len)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    #[test]
    fn moving_bytes_is_copy_within_up_and_down_near_and_far() {
        // Distances shorter and longer than the moving piece, regions of
        // several pieces, and both directions, against `copy_within`.
        let fresh = || (0..=255u8).cycle().take(600).collect::<Vec<u8>>();
        for len in [0, 1, 5, 63, 64, 65, 130, 300] {
            for from in [0, 3, 100] {
                for to in [0, 1, 2, 40, 64, 99, 101, 163, 290] {
                    let mut want = fresh();
                    want.copy_within(from..from + len, to);
                    let mut got = fresh();
                    move_bytes(&mut got, from..from + len, to);
                    assert_eq!(got, want, "{len} bytes from {from} to {to}");
                }
            }
        }
    }

    #[test]
    fn moving_bytes_out_of_range_moves_nothing_past_the_end() {
        let mut bytes = [1u8, 2, 3, 4];
        move_bytes(&mut bytes, 1..3, 3);
        assert_eq!(bytes, [1, 2, 3, 4]);
        move_bytes(&mut bytes, 2..9, 0);
        assert_eq!(bytes, [1, 2, 3, 4]);
        // Pieces that would fit before one that does not.
        let mut bytes: Vec<u8> = (0..200).collect();
        move_bytes(&mut bytes, 100..250, 0);
        assert!(bytes.iter().copied().eq(0..200));
    }
}
