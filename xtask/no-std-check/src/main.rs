//! Proof that dendro-wire-core needs neither std nor alloc.
//!
//! This program defines its own panic handler, so if std reached the build
//! through any dependency the link would fail on a second `panic_impl`; and
//! it defines no global allocator, so if any crate in the graph used `alloc`
//! the build would fail asking for one. It decodes, encodes and runs both
//! state machines so none of that code is left out of the check.

#![no_std]
#![no_main]

use core::panic::PanicInfo;

use dendro_wire_core::{
    check_preamble, decode, emit_preamble, Frame, Publisher, PublisherConfig, Row, RowsBuilder,
    RowsHeader, SlotSetHash, SourceDecl, Status, Subscriber, NO_INDEX_STATE,
};

#[panic_handler]
fn panic(_: &PanicInfo<'_>) -> ! {
    loop {}
}

fn exercise(buf: &mut [u8; 512]) -> usize {
    let mut publisher: Publisher<[u8; 256], 1> = Publisher::new(PublisherConfig {
        full_every: 60,
        frame_buffer: 256,
    });
    let mut subscriber = Subscriber::<4>::new();
    let Ok(at) = emit_preamble(buf) else { return 0 };
    let decl = SourceDecl {
        streams: &["cpu"],
        index_stream: Some("slots"),
        ..SourceDecl::default()
    };
    let Ok(source) = publisher.add_source(&decl, [0; 256]) else {
        return 0;
    };
    let _ = publisher.set_slot(source, b"cpu0", b"on");
    publisher.connected();
    let _ = publisher.observe(source.stream(0), 1, 0, &[1]);
    publisher.end_interval();
    let mut sent = 0;
    while let Ok(Some((bytes, _))) = publisher.poll_transmit(&mut buf[at..]) {
        sent += bytes.len();
    }
    let (source, seq) = (source.ordinal(), sent as u64);
    let mut hash = SlotSetHash::new();
    hash.insert(b"cpu0");
    let Ok(mut rows) = RowsBuilder::new(
        &mut buf[at..],
        RowsHeader {
            source,
            seq,
            index_state: NO_INDEX_STATE,
        },
    ) else {
        return 0;
    };
    let row = Row {
        stream: "cpu",
        ts: 1,
        wall_offset: 0,
        row: &[1, 2, 3],
    };
    if rows.push(&row).is_err() {
        return 0;
    }
    let Ok(len) = rows.finish() else { return 0 };
    let end = at + len;
    // The same frame again, through embedded-io into the rest of the buffer.
    let (stream, rest) = buf.split_at_mut(end);
    let mut tx: &mut [u8] = rest;
    let mut scratch = [0u8; 128];
    if let Ok(Status::Complete((frame, _))) = decode(&stream[at..]) {
        if dendro_wire_core::io::write_frame(&mut tx, &frame, &mut scratch).is_err() {
            return 0;
        }
    }
    let mut n = 0;
    if let Ok(Status::Complete(p)) = check_preamble(&stream[..end]) {
        if let Ok(Status::Complete((frame, used))) = decode(&stream[p..end]) {
            let _ = subscriber.admit(&frame);
            if let Frame::Rows(r) = frame {
                n = used + r.rows.iter().count() + (hash.state().0 as usize & 1);
            }
        }
    }
    n
}

/// The host's prebuilt `core` names an unwinding personality even when
/// nothing unwinds (this program aborts on panic); a bare target has none to
/// name. Defined here so the program links on the host, and never called.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

/// The entry point, with no C runtime before it.
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    let mut buf = [0u8; 512];
    let n = exercise(&mut buf);
    // Keep the work observable so it is not optimized out.
    core::hint::black_box(n);
    loop {}
}
