//! The one random generator of the tests: xorshift64 (shifts 13, 7, 17),
//! seeded, so a failure reproduces from its seed. `gen::Gen` draws from it
//! too. (The core's `src/` unit tests keep their own few lines of it: they
//! cannot use this crate.)

/// A xorshift64 generator.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// Seeded with `seed`, which must not be zero: a zero state stays zero.
    pub fn new(seed: u64) -> Self {
        assert_ne!(seed, 0, "a xorshift seeded with zero gives only zeros");
        XorShift(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`, as an index into something `n` long.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// Up to `max` bytes.
    pub fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}
