//! Milliseconds since start, from SysTick: the core clock of QEMU's
//! lm3s6965evb runs at 12.5 MHz (its boot-time RCC: the 200 MHz PLL
//! divided by 16), and SysTick interrupts once a millisecond of it.

use core::ptr::write_volatile;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m_rt::exception;

const SYST_CSR: usize = 0xE000_E010;
const SYST_RVR: usize = 0xE000_E014;
const SYST_CVR: usize = 0xE000_E018;
const CORE_HZ: u32 = 12_500_000;

static MILLIS: AtomicU32 = AtomicU32::new(0);

/// Start counting: SysTick from the core clock, interrupting every ms.
pub fn start() {
    // SAFETY: SysTick's registers, written as words; nothing else uses it.
    unsafe {
        write_volatile(SYST_RVR as *mut u32, CORE_HZ / 1000 - 1);
        write_volatile(SYST_CVR as *mut u32, 0);
        // ENABLE, TICKINT, CLKSOURCE (the core clock).
        write_volatile(SYST_CSR as *mut u32, 0b111);
    }
}

/// Milliseconds since `start`.
pub fn millis() -> u32 {
    MILLIS.load(Ordering::Relaxed)
}

#[exception]
fn SysTick() {
    MILLIS.fetch_add(1, Ordering::Relaxed);
}
