//! The two-source device agent a firmware team writes from the docs: an
//! "env" source (three streams of 8-byte readings) and a "power" source
//! (four streams of 12-byte readings, its four rails as index slots), 300
//! intervals with a rail switched every 50, mid-interval, between two
//! readings (`workload.rs`). Stream names of 6 to 20 bytes, storage and
//! frame buffer sized by `SourceDecl::sizing`, every frame out through
//! the blocking drain (`io::send_due`) to one host file, `device.dwr`,
//! which `cargo xtask firmware` checks with `dendro-wire check`.
//!
//! It is the program whose flash `cargo xtask firmware` says on the
//! Cortex-M0 (issue 29 sought 14 KiB), and, built with feature `measure`,
//! whose instructions per observed row it counts on the Cortex-M3.

#![no_std]
#![no_main]

mod workload;

use dendro_wire_core::io::send_due;
use dendro_wire_firmware::{entry, exit, measure, stack, Console, HostFile};

/// The link: a host file, written through `embedded-io`.
struct Link<'a>(&'a mut HostFile);

impl embedded_io::ErrorType for Link<'_> {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Write for Link<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        match self.0.write_all(buf) {
            true => Ok(buf.len()),
            false => Err(embedded_io::ErrorKind::Other),
        }
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[entry]
fn main() -> ! {
    stack::paint();
    measure::start();
    let mut out = Console::open();
    let ok = workload::run(&mut out, "device", b"device.dwr\0", |p, outbox, file| {
        send_due(&mut Link(file), p, outbox).is_ok()
    });
    workload::report(&mut out);
    exit(ok)
}
