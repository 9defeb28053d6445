//! The agent's publishing: the core's publisher machine, and nothing else
//! that knows a sending rule of PROTOCOL.md §5. The machine decides every
//! frame and its order; this file sizes the sources' storage and hands each
//! frame the machine writes to the link.
//!
//! The publisher, every source's storage and the frame buffer are
//! `static`s, lent to the machine once as `&'static mut`: nothing the size
//! of a storage is built on the stack and copied into place.

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use dendro_wire_core::{Publisher, PublisherConfig, Transmit};

use super::sources::{ADC_SIZE, POWER_SIZE, SOURCES};

/// The publisher, each source's bytes lent from a `static`.
pub type Publishing = Publisher<&'static mut [u8], SOURCES>;

/// The one buffer every frame is written into: larger than the largest
/// frame this agent sends (a handshake, about 200 bytes).
pub const FRAME_BUFFER: usize = 512;

// Zeroed (`.bss`), or not written at all until `take` (`.uninit`): none
// of these is an image in flash. Each source's storage is what
// `SourceDecl::sizing` says its budget needs.
static mut ADC_STORAGE: [u8; ADC_SIZE.storage] = [0; ADC_SIZE.storage];
static mut POWER_STORAGE: [u8; POWER_SIZE.storage] = [0; POWER_SIZE.storage];
static mut FRAME: [u8; FRAME_BUFFER] = [0; FRAME_BUFFER];
static mut PUBLISHER: MaybeUninit<Publishing> = MaybeUninit::uninit();

/// What the agent runs on: the publisher (its state only: the sources'
/// bytes are in their storage), the storage it has not yet been given,
/// and the frame buffer.
pub struct Parts {
    pub publisher: &'static mut Publishing,
    pub storages: [&'static mut [u8]; SOURCES],
    pub frame: &'static mut [u8],
}

/// The statics, with the publisher made in place.
///
/// # Safety
///
/// Called once: each call lends the same statics again.
// Out of line: the publisher is made on the stack before it is written
// into place, and inlined, that stayed in the caller's frame for the run.
#[inline(never)]
pub unsafe fn take(full_every: u32) -> Parts {
    let (a, b) = (
        &mut *addr_of_mut!(ADC_STORAGE),
        &mut *addr_of_mut!(POWER_STORAGE),
    );
    let publisher = (*addr_of_mut!(PUBLISHER)).write(Publisher::new(PublisherConfig {
        full_every: u64::from(full_every),
        frame_buffer: FRAME_BUFFER,
    }));
    Parts {
        publisher,
        storages: [a, b],
        frame: &mut *addr_of_mut!(FRAME),
    }
}

/// Where frames go: a transport, which may lose them.
pub trait Link {
    /// One whole frame, length prefix included, and what the machine says
    /// it is.
    fn transmit(&mut self, frame: &[u8], what: &Transmit);
}

/// End the interval and hand every frame the rules require to the link;
/// `false` if the machine refused to write one (it cannot, with a buffer of
/// the frame size it was given, but a refusal is said, never lost).
#[inline(never)]
pub fn end_interval(p: &mut Publishing, buf: &mut [u8], link: &mut impl Link) -> bool {
    p.end_interval();
    loop {
        match p.poll_transmit(buf) {
            Ok(Some((frame, t))) => link.transmit(frame, &t),
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}
