//! Storage for the publisher's tests that grows up to a bound, as a host's
//! would, so both growing and running out are reached.

use dendro_wire_core::Storage;

pub struct Grow {
    bytes: Vec<u8>,
    max: usize,
}

impl Grow {
    pub fn new(max: usize) -> Self {
        Grow {
            bytes: Vec::new(),
            max,
        }
    }
}

impl Storage for Grow {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
    fn grow(&mut self, len: usize) -> bool {
        if len > self.max {
            return false;
        }
        if len > self.bytes.len() {
            let doubled = len.max(2 * self.bytes.len()).min(self.max);
            self.bytes.resize(doubled, 0);
        }
        true
    }
}
