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
