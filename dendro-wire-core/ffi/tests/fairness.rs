//! Which source a slow link loses, through the C API: the sweep of
//! `dendro_wire_test_support::fairness` (every link capacity from 5% to
//! 100%, two and three sources of different shapes, a reconnect halfway)
//! drives the publisher with `dw_publisher_*` calls only. No source
//! starves, the shares stay within 10 points, and every `Rows` frame lost
//! is a gap the subscriber sees (the core's own tests run the same sweep
//! on the Rust API, and check it source by source).

mod common;

use core::mem::MaybeUninit;
use core::ptr::null_mut;

use common::{c_source_decl, s, PublisherStorage, NO_STR, PUBLISHER_BYTES, PUBLISHER_SOURCES};
use dendro_wire_ffi::*;
use dendro_wire_test_support::fairness::{self, Machine, Shape, INDEX_STREAM};

const SOURCE_BYTES: usize = 16 << 10;

/// A C publisher, its storage and its sources' held as C holds them.
struct CMachine {
    handle: *mut dw_publisher,
    own: Box<PublisherStorage>,
    sources: Vec<Box<[u8; SOURCE_BYTES]>>,
}

impl CMachine {
    fn new() -> Self {
        let mut own = Box::new(PublisherStorage([0; PUBLISHER_BYTES]));
        let config = dw_publisher_config {
            full_every: 100,
            frame_buffer: 2048,
        };
        let mut handle = null_mut();
        // SAFETY: the storage lives as long as the handle, in the machine.
        let r = unsafe {
            dw_publisher_init(
                own.0.as_mut_ptr().cast(),
                PUBLISHER_BYTES,
                PUBLISHER_SOURCES,
                &config,
                &mut handle,
                null_mut(),
            )
        };
        assert_eq!(r, dw_result::DW_RESULT_OK);
        CMachine {
            handle,
            own,
            sources: Vec::new(),
        }
    }

    fn ok(&self, r: dw_result) {
        assert_eq!(r, dw_result::DW_RESULT_OK, "{:p}", self.own.0.as_ptr());
    }
}

impl Machine for CMachine {
    fn declare(&mut self, shape: &Shape) {
        let streams: Vec<dw_str> = shape.streams.iter().map(|n| s(n)).collect();
        let index = if shape.indexed {
            s(INDEX_STREAM)
        } else {
            NO_STR
        };
        let decl = c_source_decl(&streams, index);
        let mut storage = Box::new([0u8; SOURCE_BYTES]);
        let mut ordinal = u32::MAX;
        // SAFETY: a live handle; the source's storage lives in the machine,
        // touched only through the handle from now on.
        let r = unsafe {
            dw_publisher_add_source(
                self.handle,
                &decl,
                storage.as_mut_ptr().cast(),
                SOURCE_BYTES,
                &mut ordinal,
                null_mut(),
            )
        };
        self.ok(r);
        assert_eq!(ordinal as usize, self.sources.len());
        self.sources.push(storage);
    }
    fn set_slot(&mut self, source: u32, key: &[u8], value: &[u8]) {
        // SAFETY: a live handle and slices of their true lengths.
        let r = unsafe {
            dw_publisher_set_slot(
                self.handle,
                source,
                key.as_ptr(),
                key.len(),
                value.as_ptr(),
                value.len(),
                null_mut(),
            )
        };
        self.ok(r);
    }
    fn observe(&mut self, source: u32, stream: u32, ts: i64, row: &[u8]) {
        // SAFETY: a live handle and a slice of its true length.
        let r = unsafe {
            dw_publisher_observe(
                self.handle,
                source,
                stream,
                ts,
                0,
                row.as_ptr(),
                row.len(),
                null_mut(),
            )
        };
        self.ok(r);
    }
    fn connected(&mut self) {
        // SAFETY: a live handle.
        self.ok(unsafe { dw_publisher_connected(self.handle, null_mut()) });
    }
    fn end_interval(&mut self) {
        // SAFETY: a live handle.
        self.ok(unsafe { dw_publisher_end_interval(self.handle, null_mut()) });
    }
    fn poll(&mut self, buf: &mut [u8]) -> Option<usize> {
        common::poll(self.handle, buf)
    }
    fn frames_dropped(&self) -> u64 {
        let mut st = MaybeUninit::uninit();
        // SAFETY: a live handle and a local.
        self.ok(unsafe { dw_publisher_stats(self.handle, st.as_mut_ptr(), null_mut()) });
        // SAFETY: written, as the call said OK.
        unsafe { st.assume_init() }.frames_dropped
    }
    fn source_frames_dropped(&self, _: u32) -> Option<u64> {
        // The C API counts for the publisher only.
        None
    }
}

#[test]
fn at_every_link_capacity_no_source_starves_and_every_frame_lost_is_seen() {
    if cfg!(miri) {
        // The sweep is thousands of intervals a capacity; Miri runs the
        // same calls in the attribution test.
        return;
    }
    fairness::sweep(CMachine::new);
}
