//! Rule 9 from the sending side, through the C API: the model of
//! `dendro_wire_test_support::attribution` drives the publisher with
//! `dw_publisher_*` calls only, and checks that every row the core
//! `Subscriber` admits is carried under the slot set it was observed
//! against (the core's own tests run the same model on the Rust API).

mod common;

use core::mem::MaybeUninit;
use core::ptr::null_mut;

use common::{c_source_decl, s, PublisherStorage, NO_STR, PUBLISHER_BYTES, PUBLISHER_SOURCES};
use dendro_wire_ffi::*;
use dendro_wire_test_support::attribution::{
    run_many, Counts, Machine, Taken, INDEX_STREAM, STREAMS,
};

const SOURCES: usize = 3;
const SOURCE_BYTES: usize = 16 << 10;

/// A C publisher of three sources, its storage and theirs held as raw
/// pointers for its life, as C holds them.
struct CMachine {
    handle: *mut dw_publisher,
    own: *mut PublisherStorage,
    sources: [*mut [u8; SOURCE_BYTES]; SOURCES],
    indexed: usize,
}

impl Drop for CMachine {
    fn drop(&mut self) {
        // SAFETY: each came from Box::into_raw, and is freed once.
        unsafe {
            drop(Box::from_raw(self.own));
            for s in self.sources {
                drop(Box::from_raw(s));
            }
        }
    }
}

impl CMachine {
    fn new(seed: u64) -> Self {
        let own = Box::into_raw(Box::new(PublisherStorage([0; PUBLISHER_BYTES])));
        let sources = [(); SOURCES].map(|_| Box::into_raw(Box::new([0u8; SOURCE_BYTES])));
        let config = dw_publisher_config {
            full_every: [1, 3, 60][seed as usize % 3],
            frame_buffer: [700, 4096][seed as usize / 3 % 2],
        };
        let indexed = 1 + seed as usize % 2;
        let mut handle = null_mut();
        // SAFETY: the storages live until the CMachine is dropped, touched
        // only through the handle; the rest are live locals.
        unsafe {
            let r = dw_publisher_init(
                own.cast(),
                PUBLISHER_BYTES,
                PUBLISHER_SOURCES,
                &config,
                &mut handle,
                null_mut(),
            );
            assert_eq!(r, dw_result::DW_RESULT_OK);
            let streams = STREAMS.map(s);
            for (i, storage) in sources.iter().enumerate() {
                let index_stream = match i < indexed {
                    true => s(INDEX_STREAM),
                    false => NO_STR,
                };
                let decl = c_source_decl(&streams, index_stream);
                let mut ordinal = u32::MAX;
                let r = dw_publisher_add_source(
                    handle,
                    &decl,
                    storage.cast(),
                    SOURCE_BYTES,
                    &mut ordinal,
                    null_mut(),
                );
                assert_eq!((r, ordinal), (dw_result::DW_RESULT_OK, i as u32));
            }
        }
        CMachine {
            handle,
            own,
            sources,
            indexed,
        }
    }
}

impl Machine for CMachine {
    fn sources(&self) -> usize {
        SOURCES
    }
    fn indexed(&self) -> usize {
        self.indexed
    }
    fn observe(&mut self, source: usize, stream: usize, ts: i64, row: &[u8]) -> Taken {
        let (source, stream) = (source as u32, stream as u32);
        let (p, len) = (row.as_ptr(), row.len());
        let mut e = MaybeUninit::<dw_error>::zeroed();
        // SAFETY: a live handle, a slice of its true length, and an error
        // to write.
        let r = unsafe {
            dw_publisher_observe(self.handle, source, stream, ts, 0, p, len, e.as_mut_ptr())
        };
        // SAFETY: zeroed, and written whole by a call that fails.
        let e = unsafe { e.assume_init() };
        let early = dw_publish_error::DW_PUBLISH_NOT_AFTER_SLOT_CHANGE as u32;
        match r {
            dw_result::DW_RESULT_OK => Taken::Yes,
            dw_result::DW_RESULT_REFUSED if e.reason == early => {
                assert_eq!(e.values[0], u64::from(source), "the source in values[0]");
                Taken::Early
            }
            dw_result::DW_RESULT_REFUSED => Taken::TooLarge,
            other => panic!("{other:?}"),
        }
    }
    fn set_slot(&mut self, source: usize, key: &[u8], value: Option<&[u8]>) -> bool {
        let source = source as u32;
        // SAFETY: a live handle and slices of their true lengths.
        let r = unsafe {
            match value {
                Some(v) => dw_publisher_set_slot(
                    self.handle,
                    source,
                    key.as_ptr(),
                    key.len(),
                    v.as_ptr(),
                    v.len(),
                    null_mut(),
                ),
                None => dw_publisher_remove_slot(
                    self.handle,
                    source,
                    key.as_ptr(),
                    key.len(),
                    null_mut(),
                ),
            }
        };
        match r {
            dw_result::DW_RESULT_OK => true,
            dw_result::DW_RESULT_REFUSED => false,
            other => panic!("{other:?}"),
        }
    }
    fn end_interval(&mut self) {
        // SAFETY: a live handle.
        assert_eq!(
            unsafe { dw_publisher_end_interval(self.handle, null_mut()) },
            dw_result::DW_RESULT_OK
        );
    }
    fn connected(&mut self) {
        // SAFETY: a live handle.
        assert_eq!(
            unsafe { dw_publisher_connected(self.handle, null_mut()) },
            dw_result::DW_RESULT_OK
        );
    }
    fn disconnected(&mut self) {
        // SAFETY: a live handle.
        assert_eq!(
            unsafe { dw_publisher_disconnected(self.handle, null_mut()) },
            dw_result::DW_RESULT_OK
        );
    }
    fn drop_waiting(&mut self) {
        // SAFETY: a live handle.
        assert_eq!(
            unsafe { dw_publisher_drop_waiting(self.handle, null_mut()) },
            dw_result::DW_RESULT_OK
        );
    }
    fn poll(&mut self, buf: &mut [u8]) -> Option<usize> {
        common::poll(self.handle, buf)
    }
    fn counts(&self) -> Counts {
        let mut st = MaybeUninit::uninit();
        // SAFETY: a live handle and local.
        assert_eq!(
            unsafe { dw_publisher_stats(self.handle, st.as_mut_ptr(), null_mut()) },
            dw_result::DW_RESULT_OK
        );
        // SAFETY: written, as the call said OK.
        let st = unsafe { st.assume_init() };
        Counts {
            rows_observed: st.rows_observed,
            rows_sent: st.rows_sent,
            rows_repeated: st.rows_repeated,
            rows_dropped: st.rows_dropped,
            rows_unsent: st.rows_unsent,
            rows_refused: st.rows_refused,
        }
    }
}

#[test]
fn every_row_is_carried_under_the_slot_set_it_was_observed_against() {
    // Under Miri, a few seeds whose programs still reach every case.
    let (seeds, ops, least) = if cfg!(miri) {
        (0..3, 150, 1)
    } else {
        (0..300, 400, 200)
    };
    run_many(seeds, ops, least, CMachine::new);
}
