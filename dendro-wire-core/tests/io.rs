//! Frames over embedded-io and embedded-io-async (features `embedded-io`,
//! `embedded-io-async`).

#![cfg(feature = "embedded-io")]

mod common;

use dendro_wire_core::io::{read_frame, read_preamble, write_frame, write_preamble, IoError};
use dendro_wire_core::{Frame, FrameDecoder, Rule};

fn stream() -> Vec<u8> {
    let mut s = b"dendro-repl\0\x01\x00".to_vec();
    s.extend_from_slice(&common::stream_body());
    s
}

#[test]
fn every_kind_round_trips_through_a_device() {
    let mut wire = vec![0u8; 4096];
    let mut tx: &mut [u8] = &mut wire;
    let mut scratch = [0u8; 256];
    write_preamble(&mut tx).unwrap();
    for (frame, _) in common::all() {
        write_frame(&mut tx, &frame, &mut scratch).unwrap();
    }
    let sent = 4096 - tx.len();
    assert_eq!(wire[..sent], stream()[..]);

    let mut rx: &[u8] = &wire[..sent];
    let mut buf = [0u8; 256];
    read_preamble(&mut rx).unwrap();
    for (want, _) in common::all() {
        assert_eq!(
            read_frame(&mut rx, &mut buf, &FrameDecoder::new()).unwrap(),
            Some(want)
        );
    }
    assert_eq!(
        read_frame(&mut rx, &mut buf, &FrameDecoder::new()).unwrap(),
        None
    );
}

#[test]
fn a_stream_cut_inside_a_frame_is_truncated_not_the_end() {
    let s = stream();
    let mut ends = vec![14];
    for (_, b) in common::all() {
        ends.push(ends.last().unwrap() + b.len());
    }
    for cut in 14..s.len() {
        let mut rx: &[u8] = &s[..cut];
        let mut buf = [0u8; 256];
        read_preamble(&mut rx).unwrap();
        let result = loop {
            match read_frame(&mut rx, &mut buf, &FrameDecoder::new()) {
                Ok(Some(_)) => continue,
                other => break other.map(|_| ()),
            }
        };
        if ends.contains(&cut) {
            assert_eq!(result, Ok(()), "cut at a boundary, {cut}");
        } else {
            assert!(
                matches!(result, Err(IoError::Truncated { .. })),
                "cut at {cut}: {result:?}"
            );
        }
    }
}

#[test]
fn a_frame_larger_than_the_buffer_is_refused_from_its_prefix() {
    let s = stream();
    let mut rx: &[u8] = &s;
    read_preamble(&mut rx).unwrap();
    let mut small = [0u8; 16];
    let e = read_frame(&mut rx, &mut small, &FrameDecoder::new()).unwrap_err();
    assert!(
        matches!(e, IoError::Wire(w) if matches!(w.rule(), Rule::FrameTooLarge { len: 76, limit: 12 })),
        "{e:?}"
    );
    // Only the prefix was read.
    assert_eq!(rx.len(), s.len() - 14 - 4);

    let mut rx: &[u8] = b"GET / HTTP/1.1\r\n";
    assert!(matches!(read_preamble(&mut rx), Err(IoError::Wire(_))));
    let mut rx: &[u8] = b"dendro-repl";
    assert_eq!(
        read_preamble(&mut rx),
        Err(IoError::Truncated {
            needed: 14,
            have: 11
        })
    );
}

#[cfg(feature = "embedded-io-async")]
#[test]
fn the_async_functions_do_the_same() {
    use dendro_wire_core::io::asynch;
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    /// Slices are always ready, so one poll finishes.
    fn ready<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("a slice was not ready"),
        }
    }

    let mut wire = vec![0u8; 4096];
    let mut tx: &mut [u8] = &mut wire;
    let mut scratch = [0u8; 256];
    ready(asynch::write_preamble(&mut tx)).unwrap();
    for (frame, _) in common::all() {
        ready(asynch::write_frame(&mut tx, &frame, &mut scratch)).unwrap();
    }
    let sent = 4096 - tx.len();
    assert_eq!(wire[..sent], stream()[..]);
    let mut rx: &[u8] = &wire[..sent];
    let mut buf = [0u8; 256];
    ready(asynch::read_preamble(&mut rx)).unwrap();
    let mut n = 0;
    while let Some(frame) =
        ready(asynch::read_frame(&mut rx, &mut buf, &FrameDecoder::new())).unwrap()
    {
        assert!(!matches!(frame, Frame::Unknown { kind: 0, .. }));
        n += 1;
    }
    assert_eq!(n, common::all().len());
}

/// A link that takes at most `chunk` bytes a write, and, when `ready` runs
/// out, says it is not ready: a socket with a small window.
struct Trickle {
    out: Vec<u8>,
    chunk: usize,
    ready: usize,
    writes: usize,
    /// Writes made while it said it was not ready: a blocking write.
    blocked: usize,
}

impl embedded_io::ErrorType for Trickle {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Write for Trickle {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.writes += 1;
        self.blocked += usize::from(self.ready == 0);
        let n = buf.len().min(self.chunk).min(self.ready.max(1));
        self.ready = self.ready.saturating_sub(n);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl embedded_io::WriteReady for Trickle {
    fn write_ready(&mut self) -> Result<bool, Self::Error> {
        Ok(self.ready > 0)
    }
}

#[cfg(feature = "embedded-io-async")]
impl embedded_io_async::Write for Trickle {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        embedded_io::Write::write(self, buf)
    }
    async fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A publisher with one source through `intervals` intervals of rows and
/// slot changes, each interval's frames sent by `send`, which must send
/// them all before the next interval ends.
fn publish(intervals: u32, mut send: impl FnMut(&mut dendro_wire_core::Publisher<[u8; 2048], 1>)) {
    use dendro_wire_core::{Map, Publisher, PublisherConfig, SourceDecl};
    let mut p: Publisher<[u8; 2048], 1> = Publisher::new(PublisherConfig {
        full_every: 4,
        frame_buffer: 512,
    });
    let decl = SourceDecl {
        labels: Map::from_pairs(&[("host", "h")]),
        streams: &["cpu/usage", "mem/used"],
        index_stream: Some("slots"),
        ..SourceDecl::default()
    };
    let s = p.add_source(&decl, [0; 2048]).unwrap();
    p.set_slot(s, b"cpu0", b"on").unwrap();
    p.connected();
    for i in 0..intervals {
        for r in 0..3u8 {
            p.observe(s.stream(u32::from(r % 2)), i64::from(i), 0, &[r; 24])
                .unwrap();
        }
        if i % 3 == 1 {
            p.set_slot(s, b"cpu1", &[i as u8]).unwrap();
        }
        p.end_interval();
        send(&mut p);
    }
    let stats = p.stats();
    assert_eq!(stats.frames_dropped + stats.rows_dropped, 0, "{stats:?}");
}

#[test]
fn send_due_hands_every_frame_to_a_link_that_takes_a_few_bytes_at_a_time() {
    use dendro_wire_core::io::send_due;
    use dendro_wire_core::Outbox;
    // The stream polled whole, frame by frame.
    let mut want = Vec::new();
    publish(9, |p| {
        let mut buf = [0u8; 512];
        while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
            want.extend_from_slice(bytes);
        }
    });
    for chunk in [1, 2, 3, 7, 64, 4096] {
        let mut link = Trickle {
            out: Vec::new(),
            chunk,
            ready: usize::MAX,
            writes: 0,
            blocked: 0,
        };
        let mut buf = [0u8; 512];
        let mut out = Outbox::new(&mut buf);
        let mut frames = 0;
        publish(9, |p| frames += send_due(&mut link, p, &mut out).unwrap());
        assert_eq!(link.out, want, "{chunk} bytes a write");
        assert!(link.writes >= want.len().div_ceil(chunk));
        assert_eq!(frames, out.frames_done());
        assert!(out.under_way().is_none());
    }
}

#[test]
fn send_ready_sends_only_what_the_link_takes_now_and_the_rest_later() {
    use dendro_wire_core::io::send_ready;
    use dendro_wire_core::Outbox;
    let mut want = Vec::new();
    publish(6, |p| {
        let mut buf = [0u8; 512];
        while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
            want.extend_from_slice(bytes);
        }
    });
    // A window that opens 61 bytes at a time, until the interval is out: some
    // frames go out over several calls, none blocks.
    let mut link = Trickle {
        out: Vec::new(),
        chunk: 13,
        ready: 0,
        writes: 0,
        blocked: 0,
    };
    let mut buf = [0u8; 512];
    let mut out = Outbox::new(&mut buf);
    let mut split = 0;
    publish(6, |p| {
        for _ in 0..40 {
            link.ready += 61;
            send_ready(&mut link, p, &mut out).unwrap();
            split += usize::from(out.under_way().is_some());
            if p.waiting().frames == 0 && out.under_way().is_none() {
                break;
            }
        }
    });
    assert_eq!(link.blocked, 0, "it wrote while the link was not ready");
    assert_eq!(link.out, want);
    assert!(split > 0, "no frame went out in pieces");
}

#[cfg(feature = "embedded-io-async")]
#[test]
fn the_async_send_due_sends_the_same_bytes() {
    use dendro_wire_core::io::{asynch, send_due};
    use dendro_wire_core::Outbox;
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    fn ready<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("the link was not ready"),
        }
    }
    let mut sent = Vec::new();
    for asynchronous in [false, true] {
        let mut link = Trickle {
            out: Vec::new(),
            chunk: 5,
            ready: usize::MAX,
            writes: 0,
            blocked: 0,
        };
        let mut buf = [0u8; 512];
        let mut out = Outbox::new(&mut buf);
        publish(5, |p| {
            match asynchronous {
                true => ready(asynch::send_due(&mut link, p, &mut out)).unwrap(),
                false => send_due(&mut link, p, &mut out).unwrap(),
            };
        });
        sent.push(link.out);
    }
    assert_eq!(sent[0], sent[1]);
    assert!(!sent[0].is_empty());
}

#[test]
fn a_writer_that_takes_nothing_is_an_error_not_a_hang() {
    use dendro_wire_core::io::{send_due, SendError};
    use dendro_wire_core::Outbox;
    struct Closed;
    impl embedded_io::ErrorType for Closed {
        type Error = embedded_io::ErrorKind;
    }
    impl embedded_io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> Result<usize, Self::Error> {
            Ok(0)
        }
        fn flush(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }
    let mut buf = [0u8; 512];
    let mut out = Outbox::new(&mut buf);
    publish(1, |p| {
        assert_eq!(
            send_due(&mut Closed, p, &mut out),
            Err(SendError::WriteZero)
        );
        let (t, taken) = out.under_way().unwrap();
        assert_eq!((t.kind, taken), (dendro_wire_core::kind::HANDSHAKE, 0));
        let cut = out.abandon(p).unwrap();
        assert_eq!(cut.kind, dendro_wire_core::kind::HANDSHAKE);
        // Polled, so sent, and then cut: counted as both.
        let st = p.stats();
        assert_eq!((st.frames_sent, st.frames_cut, st.rows_cut), (1, 1, 0));
        assert!(out.abandon(p).is_none(), "nothing left to give up");
        assert_eq!(p.stats().frames_cut, 1);
        p.disconnected();
    });
    let e = write_preamble(&mut Closed).unwrap_err();
    assert_eq!(
        e,
        IoError::Truncated {
            needed: 14,
            have: 0
        }
    );
}

/// A link for the async drains that makes them wait: it takes at most
/// `chunk` bytes a write and no more than its `budget` until it is given
/// more (until then a write is pending, as a full socket's is), and its
/// flush is pending once after every write. Its readiness is its own
/// state, not its futures': a write made anew after a pending one goes on
/// where it would have, as embassy-net's `TcpSocket`'s does.
#[cfg(feature = "embedded-io-async")]
struct Waits {
    out: Vec<u8>,
    chunk: usize,
    budget: std::rc::Rc<std::cell::Cell<usize>>,
    flush_waits: bool,
}

#[cfg(feature = "embedded-io-async")]
impl embedded_io_async::ErrorType for Waits {
    type Error = embedded_io::ErrorKind;
}

#[cfg(feature = "embedded-io-async")]
impl embedded_io_async::Write for Waits {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        std::future::poll_fn(|_| {
            let budget = self.budget.get();
            if budget == 0 {
                return std::task::Poll::Pending;
            }
            let n = buf.len().min(self.chunk).min(budget);
            self.budget.set(budget - n);
            self.out.extend_from_slice(&buf[..n]);
            self.flush_waits = true;
            std::task::Poll::Ready(Ok(n))
        })
        .await
    }
    async fn flush(&mut self) -> Result<(), Self::Error> {
        std::future::poll_fn(|_| match std::mem::take(&mut self.flush_waits) {
            true => std::task::Poll::Pending,
            false => std::task::Poll::Ready(Ok(())),
        })
        .await
    }
}

#[cfg(feature = "embedded-io-async")]
impl embedded_io_async::WriteReady for Waits {
    fn write_ready(&mut self) -> Result<bool, Self::Error> {
        Ok(self.budget.get() > 0)
    }
}

/// Every await of the async drain, dropped there: each interval's
/// `send_due` is polled, its link given more room each time it waits, and
/// at the `drop_at`-th wait of the run it is dropped and a new one started
/// (as a `select` with a timer drops it). Whatever the point, a write's or
/// the flush's, the link carries exactly the frames, each once, in order.
/// `send_ready` never waits: it returns where it would, and is called
/// again once the link has room.
#[cfg(feature = "embedded-io-async")]
#[test]
fn the_async_drains_dropped_at_any_await_send_the_stream_whole() {
    use dendro_wire_core::io::asynch;
    use dendro_wire_core::Outbox;
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut want = Vec::new();
    publish(7, |p| {
        let mut buf = [0u8; 512];
        while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
            want.extend_from_slice(bytes);
        }
    });
    let mut cx = Context::from_waker(Waker::noop());
    for ready_only in [false, true] {
        // First without a drop, to count the waits of a whole run.
        let mut waits = usize::MAX;
        let mut drop_at = usize::MAX;
        loop {
            let budget = std::rc::Rc::new(std::cell::Cell::new(0));
            let mut link = Waits {
                out: Vec::new(),
                chunk: 11,
                budget: budget.clone(),
                flush_waits: false,
            };
            let mut buf = [0u8; 512];
            let mut out = Outbox::new(&mut buf);
            let (mut waited, mut dropped) = (0, 0);
            publish(7, |p| loop {
                let drain = match ready_only {
                    true => asynch::send_ready(&mut link, p, &mut out),
                    false => asynch::send_due(&mut link, p, &mut out),
                };
                let mut drain = std::pin::pin!(drain);
                let finished = loop {
                    match drain.as_mut().poll(&mut cx) {
                        Poll::Ready(r) => break r.is_ok(),
                        Poll::Pending if waited == drop_at => {
                            (waited, dropped) = (waited + 1, dropped + 1);
                            break false;
                        }
                        Poll::Pending => {
                            // The link drains a little and wakes the task.
                            waited += 1;
                            budget.set(budget.get() + 23);
                        }
                    }
                };
                // The drain is dropped here, at its last use: nothing of it
                // runs on, and the publisher and outbox are the caller's again.
                if finished && p.waiting().frames == 0 && out.under_way().is_none() {
                    break;
                }
                // send_ready stopped where it would have waited.
                budget.set(budget.get() + 23);
            });
            assert_eq!(
                link.out, want,
                "ready_only {ready_only}, dropped at wait {drop_at}"
            );
            if ready_only {
                // It writes only what the link is ready for: it never waits,
                // it returns, and the caller samples on.
                assert_eq!(waited, 0);
                break;
            }
            match drop_at {
                usize::MAX => {
                    waits = waited;
                    assert!(waits > 20, "the link made the drain wait: {waits}");
                    drop_at = 0;
                }
                _ => {
                    assert_eq!(dropped, 1, "dropped at wait {drop_at}");
                    drop_at += 1;
                    if drop_at >= waits {
                        break;
                    }
                }
            }
        }
    }
}

/// The async writes are futures of their own: each waits where the link
/// waits and goes on where it stopped, polled after it finished it finishes
/// again having written nothing (an `async fn` would panic there), a link
/// that takes nothing is a truncation, and a frame too large for the
/// scratch is refused before any byte goes.
#[cfg(feature = "embedded-io-async")]
#[test]
fn the_async_writes_wait_resume_and_finish_again_without_a_panic() {
    use dendro_wire_core::io::asynch;
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    let budget = std::rc::Rc::new(std::cell::Cell::new(0));
    let mut link = Waits {
        out: Vec::new(),
        chunk: 5,
        budget: budget.clone(),
        flush_waits: false,
    };
    let mut scratch = [0u8; 256];
    {
        let mut w = std::pin::pin!(asynch::write_preamble(&mut link));
        let mut waits = 0;
        while w.as_mut().poll(&mut cx).is_pending() {
            waits += 1;
            budget.set(budget.get() + 3);
        }
        assert!(waits >= 14 / 3, "it waited for the link: {waits}");
        budget.set(100);
        assert!(matches!(w.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
    }
    assert_eq!(budget.get(), 100, "polled again, it wrote nothing");
    for (frame, _) in common::all() {
        let mut w = std::pin::pin!(asynch::write_frame(&mut link, &frame, &mut scratch));
        while w.as_mut().poll(&mut cx).is_pending() {
            budget.set(budget.get() + 7);
        }
    }
    assert_eq!(link.out, stream());

    struct Closed;
    impl embedded_io::ErrorType for Closed {
        type Error = embedded_io::ErrorKind;
    }
    impl embedded_io_async::Write for Closed {
        async fn write(&mut self, _: &[u8]) -> Result<usize, Self::Error> {
            Ok(0)
        }
        async fn flush(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }
    let (mut closed, mut small) = (Closed, [0u8; 4]);
    let w = std::pin::pin!(asynch::write_preamble(&mut closed));
    assert!(matches!(
        w.poll(&mut cx),
        Poll::Ready(Err(IoError::Truncated {
            needed: 14,
            have: 0
        }))
    ));
    let (frame, _) = common::all().remove(0);
    let w = std::pin::pin!(asynch::write_frame(&mut closed, &frame, &mut small));
    assert!(matches!(
        w.poll(&mut cx),
        Poll::Ready(Err(IoError::Wire(_)))
    ));
}

/// A socket the peer closed, as embassy-net's `TcpSocket` is one: never
/// ready to write, and a write refused (`ConnectionReset`); or, `zero`,
/// ready and taking nothing.
#[cfg(feature = "embedded-io-async")]
struct Closed {
    zero: bool,
}

#[cfg(feature = "embedded-io-async")]
impl embedded_io_async::ErrorType for Closed {
    type Error = embedded_io::ErrorKind;
}

#[cfg(feature = "embedded-io-async")]
impl embedded_io_async::Write for Closed {
    async fn write(&mut self, _: &[u8]) -> Result<usize, Self::Error> {
        match self.zero {
            true => Ok(0),
            false => Err(embedded_io::ErrorKind::ConnectionReset),
        }
    }
    async fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[cfg(feature = "embedded-io-async")]
impl embedded_io_async::WriteReady for Closed {
    fn write_ready(&mut self) -> Result<bool, Self::Error> {
        Ok(self.zero)
    }
}

/// `send_ready` on a closed socket is the error its write says, at once,
/// not nothing sent on every call for ever; a writer that takes nothing
/// is `WriteZero`.
#[cfg(feature = "embedded-io-async")]
#[test]
fn the_async_ready_drain_reports_a_closed_socket() {
    use dendro_wire_core::io::{asynch, SendError};
    use dendro_wire_core::Outbox;
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    use dendro_wire_core::{Publisher, PublisherConfig, SourceDecl};
    for zero in [false, true] {
        let mut link = Closed { zero };
        let mut buf = [0u8; 512];
        let mut out = Outbox::new(&mut buf);
        let mut p: Publisher<[u8; 2048], 1> = Publisher::new(PublisherConfig::default());
        let decl = SourceDecl {
            streams: &["cpu/usage"],
            ..SourceDecl::default()
        };
        let s = p.add_source(&decl, [0; 2048]).unwrap();
        p.connected();
        for i in 0..3 {
            p.observe(s.stream(0), i, 0, &[1; 8]).unwrap();
            p.end_interval();
            let drain = asynch::send_ready(&mut link, &mut p, &mut out);
            let got = match std::pin::pin!(drain).poll(&mut cx) {
                Poll::Ready(got) => got,
                Poll::Pending => panic!("send_ready waited"),
            };
            match (zero, got) {
                (false, Err(SendError::Io(embedded_io::ErrorKind::ConnectionReset))) => {}
                (true, Err(SendError::WriteZero)) => {}
                (_, other) => panic!("zero {zero}, interval {i}: {other:?}"),
            }
        }
    }
}
