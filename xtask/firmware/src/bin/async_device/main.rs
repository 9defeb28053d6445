//! The device agent of `device`, its frames drained by the async path
//! (`io::asynch::send_due`) instead, as an embassy task does it: the
//! drain is raced against a timer, as `select` with a timeout races them,
//! and dropped whenever the timer wins, at whatever await it stands; the
//! link (a host file) makes the drain wait every other write and after
//! every write before its flush, as a busy socket does. Whatever is
//! dropped, its stream, `async_device.dwr`, must be `device.dwr` byte for
//! byte, and the program has no panic path: like every program here, it
//! does not link if one is left (`lib.rs`), cancelled drains included.

#![no_std]
#![no_main]

#[path = "../device/workload.rs"]
mod workload;

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use dendro_wire_core::io::asynch;
use dendro_wire_firmware::{entry, exit, stack, Console, HostFile};

/// The link: a host file behind `embedded-io-async`, that is not ready
/// for every other write, nor for a flush right after a write. Its
/// readiness is its own state, as a socket's is: a write made anew after
/// a pending one goes on where it would have.
struct Link<'a> {
    file: &'a mut HostFile,
    busy: bool,
    unflushed: bool,
}

impl embedded_io_async::ErrorType for Link<'_> {
    type Error = embedded_io_async::ErrorKind;
}

impl embedded_io_async::Write for Link<'_> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        core::future::poll_fn(|_| {
            self.busy = !self.busy;
            if !self.busy {
                return Poll::Pending;
            }
            self.unflushed = true;
            match self.file.write_all(buf) {
                true => Poll::Ready(Ok(buf.len())),
                false => Poll::Ready(Err(embedded_io_async::ErrorKind::Other)),
            }
        })
        .await
    }

    async fn flush(&mut self) -> Result<(), Self::Error> {
        core::future::poll_fn(|_| match core::mem::take(&mut self.unflushed) {
            true => Poll::Pending,
            false => Poll::Ready(Ok(())),
        })
        .await
    }
}

/// A timer that fires on its `polls`-th poll.
struct Timer(u32);

impl Future for Timer {
    type Output = ();

    fn poll(mut self: core::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        self.0 = self.0.saturating_sub(1);
        match self.0 {
            0 => Poll::Ready(()),
            _ => Poll::Pending,
        }
    }
}

/// Send the interval's frames: each attempt raced against a timer of a
/// few polls, as `select(drain, Timer::after(..))` races them, the drain
/// dropped when the timer wins and started again; the drains dropped, in
/// `cancelled`.
fn drain(
    p: &mut workload::Publishing,
    outbox: &mut dendro_wire_core::Outbox<'_>,
    file: &mut HostFile,
    cancelled: &mut u32,
) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let mut link = Link {
        file,
        busy: false,
        unflushed: false,
    };
    // The timer lasts a few polls more each time: a drain that is dropped
    // again and again still finishes.
    for polls in 2.. {
        let mut send = pin!(asynch::send_due(&mut link, p, outbox));
        let mut timer = pin!(Timer(polls));
        loop {
            if let Poll::Ready(sent) = send.as_mut().poll(&mut cx) {
                return sent.is_ok();
            }
            if timer.as_mut().poll(&mut cx).is_ready() {
                *cancelled += 1;
                break;
            }
        }
    }
    false
}

#[entry]
fn main() -> ! {
    stack::paint();
    let mut out = Console::open();
    let mut cancelled = 0;
    let ok = workload::run(
        &mut out,
        "async_device",
        b"async_device.dwr\0",
        |p, outbox, file| drain(p, outbox, file, &mut cancelled),
    );
    out.str("async drains")
        .field("cancelled", cancelled)
        .str("\n");
    workload::report(&mut out);
    exit(ok && cancelled > 0)
}
