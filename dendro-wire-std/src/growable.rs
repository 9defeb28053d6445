//! [`Growable`]: the core's [`Storage`] on a host, a buffer that grows.

use dendro_wire_core::Storage;

/// Bytes on a host: a buffer that grows by doubling as the core asks, so a
/// publisher's source or a `Rows` frame under construction never runs out.
#[derive(Debug, Default)]
pub(crate) struct Growable(Vec<u8>);

impl Storage for Growable {
    fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }

    fn grow(&mut self, len: usize) -> bool {
        if len > self.0.len() {
            self.0.resize(len.max(2 * self.0.len()).max(256), 0);
        }
        true
    }
}
