//! Whether the bytes of a string C passed are UTF-8: the rule
//! `core::str::from_utf8` checks, in a byte-at-a-time loop a small
//! fraction of its size. The strings C passes are names (of sources'
//! labels, metadata and streams), a few dozen bytes checked once as a
//! source is declared, where `core`'s word-at-a-time loop over ASCII buys
//! nothing and took more of a device's flash than any entry point.

/// Whether `bytes` are UTF-8: every sequence well formed, none overlong,
/// no surrogate, nothing past U+10FFFF, exactly what
/// `core::str::from_utf8` accepts (the tests compare the two).
pub(crate) fn is_utf8(mut bytes: &[u8]) -> bool {
    while let [lead, rest @ ..] = bytes {
        bytes = rest;
        if *lead < 0x80 {
            continue;
        }
        // The bytes that follow a lead byte, and the range the first of
        // them falls in: the one that rules out an overlong form, a
        // surrogate (U+D800 to U+DFFF) or a value past U+10FFFF.
        let (follow, mut low, mut high) = match *lead {
            0xC2..=0xDF => (1, 0x80, 0xBF),
            0xE0 => (2, 0xA0, 0xBF),
            0xED => (2, 0x80, 0x9F),
            0xE1..=0xEF => (2, 0x80, 0xBF),
            0xF0 => (3, 0x90, 0xBF),
            0xF1..=0xF3 => (3, 0x80, 0xBF),
            0xF4 => (3, 0x80, 0x8F),
            _ => return false,
        };
        for _ in 0..follow {
            match bytes {
                [next, rest @ ..] if (low..=high).contains(next) => bytes = rest,
                _ => return false,
            }
            (low, high) = (0x80, 0xBF);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::is_utf8;

    fn agrees(bytes: &[u8]) {
        assert_eq!(
            is_utf8(bytes),
            core::str::from_utf8(bytes).is_ok(),
            "{bytes:02x?}"
        );
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "millions of strings: hours under Miri, and the check is safe code"
    )]
    fn every_sequence_of_one_to_three_bytes() {
        for a in 0..=255u8 {
            agrees(&[a]);
            for b in 0..=255u8 {
                agrees(&[a, b]);
                for c in 0..=255u8 {
                    agrees(&[a, b, c]);
                }
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "millions of strings: hours under Miri, and the check is safe code"
    )]
    fn every_four_byte_sequence_of_a_lead_byte() {
        // The four-byte forms and their neighbours, every continuation.
        for a in 0xEE..=0xFFu8 {
            for b in 0..=255u8 {
                for c in [0x00, 0x7F, 0x80, 0x8F, 0x90, 0xBF, 0xC0, 0xFF] {
                    for d in 0..=255u8 {
                        agrees(&[a, b, c, d]);
                    }
                }
            }
        }
    }

    /// xorshift64: the same sequence on every run, no dependency.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "millions of strings: hours under Miri, and the check is safe code"
    )]
    fn random_longer_strings() {
        let mut state = 0x9E37_79B9_7F4A_7C15;
        let mut bytes = Vec::new();
        for round in 0..200_000 {
            bytes.clear();
            let len = 4 + next(&mut state) % 60;
            for _ in 0..len {
                let r = next(&mut state);
                // Mostly UTF-8 of every width, with a byte made wrong in
                // some: otherwise nearly every string is refused at once.
                let ch = match r % 4 {
                    0 => (r >> 8) as u32 % 0x80,
                    1 => (r >> 8) as u32 % 0x800,
                    2 => (r >> 8) as u32 % 0x1_0000,
                    _ => (r >> 8) as u32 % 0x11_0000,
                };
                let ch = char::from_u32(ch).unwrap_or('\u{FFFD}');
                bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            }
            if round % 2 == 1 {
                let at = (next(&mut state) as usize) % bytes.len();
                bytes[at] = next(&mut state) as u8;
            }
            if round % 7 == 3 {
                bytes.truncate((next(&mut state) as usize) % bytes.len());
            }
            agrees(&bytes);
            let random: Vec<u8> = (0..len).map(|_| next(&mut state) as u8).collect();
            agrees(&random);
        }
    }
}
