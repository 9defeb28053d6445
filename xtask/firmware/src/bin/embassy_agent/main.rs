//! The publisher on embassy-net: how a device running embassy keeps
//! sampling while its frames wait for a slow TCP link. Its workload is
//! `device`'s (`../device/workload.rs`): two sources, "env" (3 streams)
//! and "power" (4 streams, its 4 rails as index slots, one switched
//! between two readings every 50 intervals), sized at build time. Built for the
//! Cortex-M0 (`thumbv6m-none-eabi`, feature `embassy`) by `cargo xtask
//! firmware` against embassy-net's own `TcpSocket`; it is not run, since
//! no board QEMU models for the M0 has a network controller, so the
//! network device here is a stand-in (`Nowhere`) where a board's driver
//! goes.
//!
//! The pattern: the drain (`io::asynch::send_due`) holds `&mut Publisher`
//! while it waits on the socket, so it is raced against the interval's
//! tick with `select`. When the tick wins the drain is dropped where it
//! waits: it is cancel-safe, the frame under way and how much of it went
//! stay in the `Outbox`, and the next drain goes on from there. The
//! publisher is then free to take the interval's readings, and a frame the
//! link could not take before the next interval ends is dropped by the
//! publisher as a gap (rule 6), never blocking the sampling.
//!
//! smoltcp and embassy keep panic paths of their own, so this program has
//! the handler that reports (`net`'s); the drain itself has none, as
//! `async_device`, whose link fails on a panic path, proves.

#![no_std]
#![no_main]

// The device's declarations, budgets and statics; its blocking run is not
// used here.
#[allow(dead_code)]
#[path = "../device/workload.rs"]
mod workload;

use core::future::Future;
use core::mem::MaybeUninit;
use core::pin::pin;
use core::ptr::addr_of_mut;
use core::task::{Context, Poll, Waker};

use dendro_wire_core::io::asynch;
use dendro_wire_core::{Outbox, SourceId};
use dendro_wire_firmware::{entry, exit, Console};
use embassy_futures::select::{select, Either};
use embassy_net::tcp::TcpSocket;
use embassy_net::{Config, Ipv4Address, Ipv4Cidr, Stack, StackResources, StaticConfigV4};
use embassy_net_driver::{Capabilities, HardwareAddress, LinkState};
use embassy_time::{Duration, Ticker, Timer};

const COLLECTOR: (Ipv4Address, u16) = (Ipv4Address::new(10, 0, 23, 1), 7447);
const DEVICE: Ipv4Address = Ipv4Address::new(10, 0, 23, 2);
const INTERVAL: Duration = Duration::from_millis(10);

use workload::{Publishing, ENV, ENV_BUDGET, POWER, POWER_BUDGET, RAILS, SWITCH_EVERY};

static mut RESOURCES: MaybeUninit<StackResources<2>> = MaybeUninit::uninit();
static mut RX: [u8; 256] = [0; 256];
static mut TX: [u8; 1024] = [0; 1024];

/// Connect, then each interval: drain until the tick, sample, end the
/// interval. Never returns; a failed connection is started again.
async fn publish(
    stack: Stack<'static>,
    p: &mut Publishing,
    (env, power): (SourceId, SourceId),
    outbox: &mut Outbox<'_>,
) -> ! {
    // SAFETY: `publish` runs once, so the socket buffers are lent once.
    let (rx, tx) = unsafe { (&mut *addr_of_mut!(RX), &mut *addr_of_mut!(TX)) };
    let mut socket = TcpSocket::new(stack, rx, tx);
    let mut ticker = Ticker::every(INTERVAL);
    let (mut ts, mut until_switch, mut rail) = (0i64, SWITCH_EVERY, 0usize);
    loop {
        stack.wait_link_up().await;
        if socket.connect(COLLECTOR).await.is_err()
            || asynch::write_preamble(&mut socket).await.is_err()
        {
            socket.abort();
            Timer::after(Duration::from_secs(1)).await;
            continue;
        }
        p.connected();
        loop {
            // The drain waits on the socket until the tick; the tick wins
            // and the drain is dropped where it stands (cancel-safe).
            match select(asynch::send_due(&mut socket, p, outbox), ticker.next()).await {
                Either::First(Ok(_frames)) => ticker.next().await,
                Either::First(Err(_)) => break,
                Either::Second(()) => {}
            }
            ts += INTERVAL.as_micros() as i64 * 1000;
            // Refused readings and slot changes are counted in the
            // publisher's stats.
            for (stream, value) in (0..).zip([412u64, 21_500, 101_325]) {
                let _ = p.observe(env.stream(stream), ts, 0, &value.to_le_bytes());
            }
            until_switch -= 1;
            for (stream, ma) in (0..).zip([120u32, 340, 56, 910]) {
                // A rail switched between two readings of the interval.
                if stream == 2 && until_switch == 0 {
                    until_switch = SWITCH_EVERY;
                    rail = (rail + 1) % RAILS.len();
                    let state: &[u8] = if ts & 1 == 0 { b"off" } else { b"on" };
                    let _ = p.set_slot(power, RAILS[rail], state);
                }
                let mut row = [0u8; 12];
                row[..4].copy_from_slice(&ma.to_le_bytes());
                let _ = p.observe(power.stream(stream), ts, 0, &row);
            }
            p.end_interval();
        }
        // The link failed: what the outbox held is lost, and counted.
        outbox.abandon(p);
        p.disconnected();
        socket.abort();
    }
}

#[entry]
fn main() -> ! {
    // SAFETY: `main` runs once, so each static is lent once; the
    // publisher is made in its static by `lend` (out of line, so no copy
    // of it stays in `main`'s frame).
    let ((p, env_storage, power_storage, frame), resources) = unsafe {
        (
            workload::lend(),
            (*addr_of_mut!(RESOURCES)).write(StackResources::new()),
        )
    };
    let declared = (
        p.add_source_for(&ENV, &ENV_BUDGET, env_storage),
        p.add_source_for(&POWER, &POWER_BUDGET, power_storage),
    );
    let (Ok(env), Ok(power)) = declared else {
        Console::open().str("embassy_agent: the sources do not fit\n");
        exit(false)
    };
    for rail in RAILS {
        let _ = p.set_slot(power, rail, b"on");
    }
    let config = Config::ipv4_static(StaticConfigV4 {
        address: Ipv4Cidr::new(DEVICE, 24),
        gateway: None,
        dns_servers: Default::default(),
    });
    let (stack, mut runner) = embassy_net::new(Nowhere, config, resources, 0x5eed);
    let mut outbox = Outbox::new(frame);
    block_on(select(
        runner.run(),
        publish(stack, p, (env, power), &mut outbox),
    ));
    exit(false)
}

/// Poll `f` until it is done: the simplest executor, for one task that
/// never sleeps the core. A real program uses `embassy-executor`.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
        CLOCK.tick();
    }
}

/// The network device: where a board's Ethernet driver goes. It has no
/// link, so nothing is sent.
struct Nowhere;

impl embassy_net_driver::Driver for Nowhere {
    type RxToken<'a> = Never;
    type TxToken<'a> = Never;

    fn receive(&mut self, _: &mut Context<'_>) -> Option<(Never, Never)> {
        None
    }

    fn transmit(&mut self, _: &mut Context<'_>) -> Option<Never> {
        None
    }

    fn link_state(&mut self, _: &mut Context<'_>) -> LinkState {
        LinkState::Down
    }

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::default();
        caps.max_transmission_unit = 1514;
        caps
    }

    fn hardware_address(&self) -> HardwareAddress {
        HardwareAddress::Ethernet([0x02, 0, 0, 0, 0, 0x09])
    }
}

/// A token that cannot be made: `Nowhere` never hands one out.
enum Never {}

impl embassy_net_driver::RxToken for Never {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, _: F) -> R {
        match self {}
    }
}

impl embassy_net_driver::TxToken for Never {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, _: usize, _: F) -> R {
        match self {}
    }
}

/// embassy-time's clock: a count of executor polls, where a board uses a
/// hardware timer. Wakes are not scheduled: `block_on` polls without
/// sleeping.
struct Clock(core::sync::atomic::AtomicU32);

impl Clock {
    fn tick(&self) {
        use core::sync::atomic::Ordering::Relaxed;
        // One core, no interrupt writes it: a load and a store suffice,
        // and the Cortex-M0 has no atomic add.
        self.0.store(self.0.load(Relaxed).wrapping_add(1), Relaxed);
    }
}

impl embassy_time_driver::Driver for Clock {
    fn now(&self) -> u64 {
        u64::from(self.0.load(core::sync::atomic::Ordering::Relaxed))
    }

    fn schedule_wake(&self, _: u64, _: &Waker) {}
}

embassy_time_driver::time_driver_impl!(static CLOCK: Clock = Clock(core::sync::atomic::AtomicU32::new(0)));
