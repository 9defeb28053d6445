//! XXH3-128 with seed 0 and the default secret, the `H` of PROTOCOL.md
//! §9.4: bit for bit `xxh3_128` of xxhash-rust (`XXH3_128bits` of the C
//! library), written for size rather than speed.
//!
//! A slot set is hashed one slot at a time, as slots change, so the hash is
//! never on a hot path; on a microcontroller the unrolled, per-length
//! versions of a general-purpose crate were much of a publisher's flash
//! (`cargo xtask firmware` prints the footprint). Every length class of the algorithm is here, the long one too
//! (a slot may be of any size), and its loops are left as loops.

/// The default secret of XXH3.
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;
const PRIME_MX2: u64 = 0x9FB2_1C65_1E98_DF25;

/// The secret's bytes consumed per stripe, and its size less a stripe: a
/// block is that many stripes, then a scramble.
const STRIPES_PER_BLOCK: usize = (SECRET.len() - STRIPE) / 8;
const STRIPE: usize = 64;

/// The little-endian `u64` at `at`. Every caller reads inside `bytes` (the
/// tests hold it to that over every length); out of range it reads 0
/// rather than panic. Out of line, as are the helpers below: on a core
/// without unaligned loads each read is eight byte loads and their shifts,
/// and inlined at every use they were most of the hash's flash.
#[inline(never)]
fn read64(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..).and_then(|b| b.first_chunk::<8>()) {
        Some(b) => u64::from_le_bytes(*b),
        None => 0,
    }
}

#[inline(never)]
fn read32(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..).and_then(|b| b.first_chunk::<4>()) {
        Some(b) => u64::from(u32::from_le_bytes(*b)),
        None => 0,
    }
}

fn secret64(at: usize) -> u64 {
    read64(&SECRET, at)
}

/// The low and high halves of the 128-bit product.
#[inline(never)]
fn mul128(a: u64, b: u64) -> (u64, u64) {
    let p = u128::from(a) * u128::from(b);
    (p as u64, (p >> 64) as u64)
}

#[inline(never)]
fn fold64(a: u64, b: u64) -> u64 {
    let (lo, hi) = mul128(a, b);
    lo ^ hi
}

/// XXH3's avalanche.
#[inline(never)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

/// XXH64's avalanche, which XXH3 uses for inputs of 0 to 3 bytes.
#[inline(never)]
fn avalanche64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(PRIME64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> 32)
}

/// XXH3-128 of `input`, as `(low64, high64)`.
pub(crate) fn xxh3_128(input: &[u8]) -> u128 {
    let (lo, hi) = match input.len() {
        0..=16 => short(input),
        17..=240 => mid(input),
        _ => long(input),
    };
    u128::from(lo) | u128::from(hi) << 64
}

/// The little-endian `u64` of the secret at `at`, as a constant.
const fn secret_const(at: usize) -> u64 {
    let mut v = 0u64;
    let mut i = 8;
    while i > 0 {
        i -= 1;
        v = v << 8 | SECRET[at + i] as u64;
    }
    v
}

/// The secret's words `short` flips its input with, folded at build time:
/// read at run time, each was a call and its load.
const FLIP_1_3: (u64, u64) = (
    (secret_const(0) ^ (secret_const(0) >> 32)) & 0xffff_ffff,
    (secret_const(8) ^ (secret_const(8) >> 32)) & 0xffff_ffff,
);
const FLIP_4_8: u64 = secret_const(16) ^ secret_const(24);
const FLIP_9_16: (u64, u64) = (
    secret_const(32) ^ secret_const(40),
    secret_const(48) ^ secret_const(56),
);
/// The hash of no bytes: `avalanche64` of the secret at 64 and 72, and at
/// 80 and 88 (PROTOCOL.md §9.4 gives it).
const EMPTY: (u64, u64) = (0x6001_c324_468d_497f, 0x99aa_06d3_0147_98d8);

/// 0 to 16 bytes.
#[inline(never)]
fn short(input: &[u8]) -> (u64, u64) {
    let len = input.len() as u64;
    let last = input.len().saturating_sub(1);
    match input.len() {
        0 => EMPTY,
        1..=3 => {
            let byte = |at: usize| u32::from(input.get(at).copied().unwrap_or(0));
            let combined =
                byte(0) << 16 | byte(input.len() >> 1) << 24 | byte(last) | (len as u32) << 8;
            let swapped = combined.swap_bytes().rotate_left(13);
            (
                avalanche64(u64::from(combined) ^ FLIP_1_3.0),
                avalanche64(u64::from(swapped) ^ FLIP_1_3.1),
            )
        }
        4..=8 => {
            let joined = read32(input, 0).wrapping_add(read32(input, input.len() - 4) << 32);
            let (mut lo, mut hi) = mul128(joined ^ FLIP_4_8, PRIME64_1.wrapping_add(len << 2));
            hi = hi.wrapping_add(lo << 1);
            lo ^= hi >> 3;
            lo = (lo ^ (lo >> 35)).wrapping_mul(PRIME_MX2);
            (lo ^ (lo >> 28), avalanche(hi))
        }
        _ => {
            let first = read64(input, 0);
            let end = read64(input, input.len() - 8);
            let (mut lo, mut hi) = mul128(first ^ end ^ FLIP_9_16.0, PRIME64_1);
            lo = lo.wrapping_add((len - 1) << 54);
            let end = end ^ FLIP_9_16.1;
            hi = hi.wrapping_add(end.wrapping_add((end & 0xffff_ffff) * (PRIME32_2 - 1)));
            lo ^= hi.swap_bytes();
            let (r_lo, r_hi) = mul128(lo, PRIME64_2);
            (
                avalanche(r_lo),
                avalanche(r_hi.wrapping_add(hi.wrapping_mul(PRIME64_2))),
            )
        }
    }
}

/// XXH3's mix of two 16-byte lanes at `a` and `b` into the two
/// accumulators, against the secret at `s`.
fn mix32(acc: (u64, u64), input: &[u8], a: usize, b: usize, s: usize) -> (u64, u64) {
    (
        acc.0.wrapping_add(mix16(input, a, s)) ^ sum16(input, b),
        acc.1.wrapping_add(mix16(input, b, s + 16)) ^ sum16(input, a),
    )
}

/// XXH3's mix of the 16-byte lane at `at` against the secret at `s`.
#[inline(never)]
fn mix16(input: &[u8], at: usize, s: usize) -> u64 {
    fold64(
        read64(input, at) ^ secret64(s),
        read64(input, at + 8) ^ secret64(s + 8),
    )
}

/// The two words of the 16-byte lane at `at`, added.
#[inline(never)]
fn sum16(input: &[u8], at: usize) -> u64 {
    read64(input, at).wrapping_add(read64(input, at + 8))
}

/// 17 to 240 bytes: rounds of two 16-byte lanes each. Up to 128, the
/// lanes pair from both ends, innermost first; past that, they run in
/// order, with an avalanche after the fourth round, and a last round
/// from the end.
#[inline(never)]
fn mid(input: &[u8]) -> (u64, u64) {
    let len = input.len();
    let mut acc = ((len as u64).wrapping_mul(PRIME64_1), 0);
    let (short, pairs) = (len <= 128, len / 32);
    let rounds = if short { (len - 1) / 32 + 1 } else { pairs + 1 };
    for r in 0..rounds {
        let (a, b, s) = if short {
            let i = rounds - 1 - r;
            (16 * i, len - 16 * (i + 1), 32 * i)
        } else {
            if r == 4 {
                acc = (avalanche(acc.0), avalanche(acc.1));
            }
            match r {
                0..4 => (32 * r, 32 * r + 16, 32 * r),
                _ if r < pairs => (32 * r, 32 * r + 16, 32 * r - 125),
                _ => (len - 16, len - 32, 136 - 17 - 16),
            }
        };
        acc = mix32(acc, input, a, b, s);
    }
    let lo = acc.0.wrapping_add(acc.1);
    let hi = acc
        .0
        .wrapping_mul(PRIME64_1)
        .wrapping_add(acc.1.wrapping_mul(PRIME64_4))
        .wrapping_add((len as u64).wrapping_mul(PRIME64_2));
    (avalanche(lo), avalanche(hi).wrapping_neg())
}

/// More than 240 bytes: stripes of 64 bytes into eight accumulators, a
/// scramble after every block of stripes, the last stripe taken from the
/// end.
#[inline(never)]
fn long(input: &[u8]) -> (u64, u64) {
    let mut acc = [
        PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1,
    ];
    let stripes = (input.len() - 1) / STRIPE;
    for k in 0..stripes {
        accumulate(&mut acc, input, k * STRIPE, 8 * (k % STRIPES_PER_BLOCK));
        if k % STRIPES_PER_BLOCK == STRIPES_PER_BLOCK - 1 {
            for (i, a) in acc.iter_mut().enumerate() {
                let key = secret64(SECRET.len() - STRIPE + 8 * i);
                *a = (*a ^ (*a >> 47) ^ key).wrapping_mul(PRIME32_1);
            }
        }
    }
    accumulate(
        &mut acc,
        input,
        input.len() - STRIPE,
        SECRET.len() - STRIPE - 7,
    );
    let len = input.len() as u64;
    let merge = |s: usize, start: u64| {
        let mut h = start;
        for (i, pair) in acc.chunks_exact(2).enumerate() {
            h = h.wrapping_add(fold64(
                pair[0] ^ secret64(s + 16 * i),
                pair[1] ^ secret64(s + 16 * i + 8),
            ));
        }
        avalanche(h)
    };
    (
        merge(11, len.wrapping_mul(PRIME64_1)),
        merge(SECRET.len() - 64 - 11, !len.wrapping_mul(PRIME64_2)),
    )
}

/// One stripe of `input` at `at` into the accumulators, against the secret
/// at `s`.
fn accumulate(acc: &mut [u64; 8], input: &[u8], at: usize, s: usize) {
    for i in 0..8 {
        let value = read64(input, at + 8 * i);
        let keyed = value ^ secret64(s + 8 * i);
        acc[i ^ 1] = acc[i ^ 1].wrapping_add(value);
        acc[i] = acc[i].wrapping_add((keyed & 0xffff_ffff) * (keyed >> 32));
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::xxh3_128;

    /// `inputs` noisy inputs of each of `lengths`, hashed by both, as
    /// xorshift bytes no implementation gets right by accident.
    fn agree(lengths: impl IntoIterator<Item = usize>, inputs: u64) {
        for len in lengths {
            for input in 0..inputs {
                let mut x = (input << 32 | len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                assert_eq!(
                    xxh3_128(&bytes),
                    xxhash_rust::xxh3::xxh3_128(&bytes),
                    "length {len}, input {input}"
                );
            }
        }
    }

    #[test]
    fn every_length_up_to_240_matches_xxhash_rust() {
        agree(0..=240, 64);
    }

    #[test]
    fn long_inputs_across_blocks_match_xxhash_rust() {
        // Every length to past the first block of 16 stripes (1,024
        // bytes), around the next few block ends, and some far longer.
        let mut lengths: Vec<usize> = (241..=1100).collect();
        for block in 2..5 {
            lengths.extend(block * 1024 - 70..block * 1024 + 70);
        }
        lengths.extend([4096, 5000, 10_000, 65_537]);
        agree(lengths, 3);
    }

    #[test]
    fn the_protocols_vector_for_the_empty_input() {
        // PROTOCOL.md §9.4: the word order of an implementation.
        let h = xxh3_128(b"");
        assert_eq!(h as u64, 0x6001_c324_468d_497f);
        assert_eq!((h >> 64) as u64, 0x99aa_06d3_0147_98d8);
    }

    #[test]
    fn runs_of_one_byte_value_match_xxhash_rust() {
        // Where a sign or a shift error shows.
        for byte in [0x00, 0x01, 0x7f, 0x80, 0xff] {
            for len in [1, 2, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1025] {
                let input = [byte].repeat(len);
                assert_eq!(xxh3_128(&input), xxhash_rust::xxh3::xxh3_128(&input));
            }
        }
    }
}
