//! A driver for the Ethernet controller of the LM3S6965 (Stellaris), as
//! QEMU's lm3s6965evb models it (`-nic ...,model=stellaris`), for smoltcp.
//!
//! Polled, no interrupts, no DMA: the controller has one FIFO each way,
//! read and written a 32-bit word at a time through one data register. A
//! frame received starts with a 16-bit length (the frame, the length
//! itself and the 4-byte FCS); a frame to send starts with a 16-bit length
//! of its payload after the 14-byte Ethernet header, and goes when the
//! transmit-request register is written.

use core::ptr::{read_volatile, write_volatile};

use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

/// The controller's registers (LM3S6965 data sheet, "Ethernet Controller").
const BASE: usize = 0x4004_8000;
/// Interrupt status; written, acknowledges.
const RIS: usize = 0x00;
const RCTL: usize = 0x08;
const TCTL: usize = 0x0c;
const DATA: usize = 0x10;
/// The station address, bytes 0-3 and 4-5.
const IA0: usize = 0x14;
const IA1: usize = 0x18;
/// Frames waiting in the receive FIFO.
const NP: usize = 0x34;
/// Transmit request: write 1 to send the frame in the FIFO; reads 1 until
/// it has gone.
const TR: usize = 0x38;

const RCTL_RXEN: u32 = 0x01;
const RCTL_RSTFIFO: u32 = 0x10;
const TCTL_TXEN: u32 = 0x01;
const TCTL_PADEN: u32 = 0x02;
const TCTL_CRC: u32 = 0x04;

/// The largest Ethernet frame without its FCS, and what smoltcp may hand
/// to `transmit`.
const MTU: usize = 1514;
/// A frame, its 2-byte length ahead of it, its FCS after, in whole words.
const BUFFER: usize = 1524;

fn read(reg: usize) -> u32 {
    // SAFETY: a register of the controller, word-aligned, read as a word.
    unsafe { read_volatile((BASE + reg) as *const u32) }
}

fn write(reg: usize, value: u32) {
    // SAFETY: as in `read`.
    unsafe { write_volatile((BASE + reg) as *mut u32, value) }
}

/// The controller, and one buffer each way.
pub struct Enet {
    rx: [u8; BUFFER],
    tx: [u8; BUFFER],
    /// Frames received too large for `rx`, and dropped.
    pub oversized: u32,
}

impl Enet {
    /// Reset the receive FIFO and enable both directions: frames padded to
    /// the minimum and their FCS added by the controller.
    pub fn new() -> Enet {
        write(RCTL, RCTL_RSTFIFO);
        write(RCTL, RCTL_RXEN);
        write(TCTL, TCTL_TXEN | TCTL_PADEN | TCTL_CRC);
        // Nothing is pending yet; every status bit acknowledged.
        write(RIS, 0x7f);
        Enet {
            rx: [0; BUFFER],
            tx: [0; BUFFER],
            oversized: 0,
        }
    }

    /// The station address the board was given (QEMU's `-nic ...,mac=`).
    pub fn mac(&self) -> [u8; 6] {
        let [a, b, c, d] = read(IA0).to_le_bytes();
        let [e, f, _, _] = read(IA1).to_le_bytes();
        [a, b, c, d, e, f]
    }

    /// The next frame received, read out of the FIFO into `rx`: its bytes
    /// there, without the length and the FCS.
    fn take_frame(&mut self) -> Option<usize> {
        while read(NP) > 0 {
            let first = read(DATA);
            // The length counts itself (2 bytes) and the FCS (4).
            let total = (first & 0xffff) as usize;
            let words = total.div_ceil(4);
            let fits = (6..=BUFFER).contains(&total);
            let mut chunks = self.rx.chunks_exact_mut(4);
            if let Some(w) = chunks.next() {
                w.copy_from_slice(&first.to_le_bytes());
            }
            // Every word is read, whether it fits or not: the FIFO moves
            // to the next frame only past this one's last.
            for _ in 1..words {
                let word = read(DATA);
                if let Some(w) = chunks.next() {
                    w.copy_from_slice(&word.to_le_bytes());
                }
            }
            if fits {
                return Some(total - 6);
            }
            self.oversized += 1;
        }
        None
    }
}

/// Send `frame` (an Ethernet frame without its FCS, at most `MTU` bytes).
fn send(frame: &[u8]) {
    while read(TR) & 1 != 0 {}
    let Some((&[a, b], rest)) = frame.split_first_chunk::<2>() else {
        return;
    };
    let payload = frame.len().saturating_sub(14) as u32;
    write(DATA, payload | u32::from(a) << 16 | u32::from(b) << 24);
    let mut words = rest.chunks_exact(4);
    for w in &mut words {
        write(DATA, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut last = [0u8; 4];
        last[..tail.len()].copy_from_slice(tail);
        write(DATA, u32::from_le_bytes(last));
    }
    write(TR, 1);
}

pub struct RxToken<'a>(&'a [u8]);

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0)
    }
}

pub struct TxToken<'a>(&'a mut [u8; BUFFER]);

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let frame = &mut self.0[..len.min(MTU)];
        let r = f(frame);
        send(frame);
        r
    }
}

impl phy::Device for Enet {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _: Instant) -> Option<(RxToken<'_>, TxToken<'_>)> {
        let len = self.take_frame()?;
        // The frame's bytes start after its 2-byte length.
        let frame = self.rx.get(2..2 + len)?;
        Some((RxToken(frame), TxToken(&mut self.tx)))
    }

    fn transmit(&mut self, _: Instant) -> Option<TxToken<'_>> {
        Some(TxToken(&mut self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MTU;
        caps.max_burst_size = Some(1);
        caps
    }
}
