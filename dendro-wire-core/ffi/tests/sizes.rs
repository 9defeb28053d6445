//! A C publisher's storage, sized by its source limit: the header's
//! figures are the functions' on this target, a byte less is refused, and
//! a publisher holds exactly as many sources as its limit, for every limit
//! swept.

mod common;

use core::ptr::null_mut;

use common::*;
use dendro_wire_ffi::*;

/// Zeroed, 16-aligned storage, held by raw pointer for an object's life as
/// C holds it, freed when dropped.
struct Raw(*mut [u128]);

impl Raw {
    fn new(bytes: usize) -> Raw {
        let words = bytes.div_ceil(16).max(1);
        Raw(Box::into_raw(vec![0u128; words].into_boxed_slice()))
    }

    fn at(&self) -> *mut core::ffi::c_void {
        self.0.cast()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: made by `Raw::new` from a boxed slice.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

const CONFIG: dw_publisher_config = dw_publisher_config {
    full_every: 4,
    frame_buffer: 512,
};

fn init(storage: &Raw, len: usize, limit: u32) -> (dw_result, *mut dw_publisher, dw_error) {
    let (mut handle, mut error) = (null_mut(), no_error());
    // SAFETY: the storage is the test's, lent for the publisher's life.
    let r =
        unsafe { dw_publisher_init(storage.at(), len, limit, &CONFIG, &mut handle, &mut error) };
    (r, handle, error)
}

const SOURCE_BYTES: usize = 512;

#[test]
fn a_publisher_holds_as_many_sources_as_its_limit_in_storage_sized_for_them() {
    let limits: &[u32] = match cfg!(miri) {
        true => &[1, 3],
        false => &[1, 2, 3, 7, 8, 9, 16, 100, 1023, 1024],
    };
    let streams = [s("t")];
    let decl = c_source_decl(&streams, NO_STR);
    for &limit in limits {
        let exact = dw_publisher_size(limit);
        assert_eq!(exact, publisher_bytes(limit as usize), "{limit}");
        assert_eq!(exact % 16, 0, "{limit}: a size the alignment divides");

        let storage = Raw::new(exact);
        let (r, _, error) = init(&storage, exact - 1, limit);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{limit}");
        assert_eq!(
            error.reason,
            dw_invalid::DW_INVALID_STORAGE_TOO_SMALL as u32
        );
        assert_eq!(error.values[..2], [exact as u64, exact as u64 - 1]);

        let (r, p, _) = init(&storage, exact, limit);
        assert_eq!(r, dw_result::DW_RESULT_OK, "{limit}");
        let sources = Raw::new((limit as usize + 1) * SOURCE_BYTES);
        let declare = |n: usize| {
            let (mut ordinal, mut error) = (u32::MAX, no_error());
            // SAFETY: a live handle; storage the test holds past release.
            let r = unsafe {
                dw_publisher_add_source(
                    p,
                    &decl,
                    sources.at().cast::<u8>().add(n * SOURCE_BYTES).cast(),
                    SOURCE_BYTES,
                    &mut ordinal,
                    &mut error,
                )
            };
            (r, ordinal, error)
        };
        for n in 0..limit as usize {
            let (r, ordinal, _) = declare(n);
            assert_eq!((r, ordinal), (dw_result::DW_RESULT_OK, n as u32), "{limit}");
        }
        let (r, _, error) = declare(limit as usize);
        assert_eq!(r, dw_result::DW_RESULT_REFUSED, "{limit}");
        assert_eq!(
            error.reason,
            dw_publish_error::DW_PUBLISH_TOO_MANY_SOURCES as u32
        );
        assert_eq!(error.values[0], u64::from(limit));
        // Every source still answers, the last as the first.
        for source in [0, limit - 1] {
            let mut error = no_error();
            // SAFETY: a live handle.
            let r =
                unsafe { dw_publisher_observe(p, source, 0, 1, 0, [1u8].as_ptr(), 1, &mut error) };
            assert_eq!(r, dw_result::DW_RESULT_OK, "{limit}: source {source}");
        }
        // SAFETY: the live handle, released once.
        assert_eq!(
            unsafe { dw_publisher_release(p, null_mut()) },
            dw_result::DW_RESULT_OK
        );
    }
}

#[test]
fn a_source_limit_a_publisher_cannot_have_is_refused_never_lowered() {
    let storage = Raw::new(publisher_bytes(1025));
    for limit in [0, 1025, u32::MAX] {
        assert_eq!(dw_publisher_size(limit), 0);
        let (r, _, error) = init(&storage, publisher_bytes(1025), limit);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        assert_eq!(error.reason, dw_invalid::DW_INVALID_SOURCE_LIMIT as u32);
        assert_eq!(
            message(&error),
            format!(
                "a source limit of {limit}: a publisher holds 1 to 1024 sources, as many as a \
                 subscriber allows on one connection"
            )
        );
    }
}

#[test]
fn storage_aligned_for_the_head_but_not_the_table_is_refused() {
    let align = match cfg!(target_pointer_width = "64") {
        true => DW_PUBLISHER_ALIGN_64,
        false => DW_PUBLISHER_ALIGN_32,
    };
    let storage = Raw::new(publisher_bytes(2) + 16);
    for offset in [1usize, 4, 8, 16] {
        // SAFETY: inside the test's storage.
        let at = unsafe { storage.at().cast::<u8>().add(offset) };
        let (mut handle, mut error) = (null_mut(), no_error());
        // SAFETY: as above, with room for the size past the offset.
        let r = unsafe {
            dw_publisher_init(
                at.cast(),
                publisher_bytes(2),
                2,
                &CONFIG,
                &mut handle,
                &mut error,
            )
        };
        match offset % align {
            0 => assert_eq!(r, dw_result::DW_RESULT_OK, "offset {offset}"),
            _ => assert_eq!(
                (r, error.reason),
                (
                    dw_result::DW_RESULT_INVALID_ARGUMENT,
                    dw_invalid::DW_INVALID_MISALIGNED as u32
                ),
                "offset {offset}"
            ),
        }
    }
}

/// One call's refusal of a null pointer: the parameter, and its sentence.
fn named(r: dw_result, error: &dw_error, param: dw_param, name: &str) {
    named_at(r, error, param, -1, name);
}

/// [`named`] for an element of an array: its place in `dw_error.item`.
fn named_at(r: dw_result, error: &dw_error, param: dw_param, item: i64, name: &str) {
    assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER, "{name}");
    assert_eq!(error.reason, param as u32, "{name}");
    assert_eq!(error.item, item, "{name}");
    assert_eq!(
        message(error),
        format!("{name} is null, and the call needs it")
    );
}

#[test]
fn a_null_pointer_error_names_its_parameter() {
    use dw_param::*;
    let storage = Raw::new(publisher_bytes(1));
    let len = publisher_bytes(1);
    let (mut handle, mut error) = (null_mut(), no_error());
    // SAFETY: each call has one null pointer, every other live.
    unsafe {
        let r = dw_publisher_init(null_mut(), len, 1, &CONFIG, &mut handle, &mut error);
        named(r, &error, DW_PARAM_STORAGE, "storage");
        let r = dw_publisher_init(
            storage.at(),
            len,
            1,
            core::ptr::null(),
            &mut handle,
            &mut error,
        );
        named(r, &error, DW_PARAM_CONFIG, "config");
        let r = dw_publisher_init(storage.at(), len, 1, &CONFIG, null_mut(), &mut error);
        named(r, &error, DW_PARAM_PUBLISHER, "publisher");
        let r = dw_publisher_init(storage.at(), len, 1, &CONFIG, &mut handle, &mut error);
        assert_eq!(r, dw_result::DW_RESULT_OK);

        let source = Raw::new(SOURCE_BYTES);
        let streams = [
            s("t"),
            dw_str {
                ptr: core::ptr::null(),
                len: 1,
            },
        ];
        let mut ordinal = 0;
        let add = |decl: &dw_source_decl, error: &mut dw_error| {
            let mut ordinal = 0;
            dw_publisher_add_source(handle, decl, source.at(), SOURCE_BYTES, &mut ordinal, error)
        };
        let good = c_source_decl(&streams[..1], NO_STR);
        let r = dw_publisher_add_source(
            handle,
            core::ptr::null(),
            source.at(),
            SOURCE_BYTES,
            &mut ordinal,
            &mut error,
        );
        named(r, &error, DW_PARAM_DECL, "decl");
        let bad_streams = dw_source_decl {
            streams: core::ptr::null(),
            ..good
        };
        named(
            add(&bad_streams, &mut error),
            &error,
            DW_PARAM_DECL_STREAMS,
            "decl->streams",
        );
        let bad_name = c_source_decl(&streams, NO_STR);
        named_at(
            add(&bad_name, &mut error),
            &error,
            DW_PARAM_DECL_STREAM_NAME,
            1,
            "decl->streams[1]",
        );
        let bad_labels = dw_source_decl {
            labels: core::ptr::null(),
            labels_len: 1,
            ..good
        };
        named(
            add(&bad_labels, &mut error),
            &error,
            DW_PARAM_DECL_LABELS,
            "decl->labels",
        );
        let pair = [dw_pair {
            key: s("k"),
            value: dw_str {
                ptr: core::ptr::null(),
                len: 2,
            },
        }];
        let bad_pair = dw_source_decl {
            metadata: pair.as_ptr(),
            metadata_len: 1,
            ..good
        };
        named_at(
            add(&bad_pair, &mut error),
            &error,
            DW_PARAM_DECL_METADATA_VALUE,
            0,
            "decl->metadata[0].value",
        );
        // A key of the third label: the map, the side and the place.
        let null_key = dw_str {
            ptr: core::ptr::null(),
            len: 1,
        };
        let labels = [
            dw_pair {
                key: s("a"),
                value: s("1"),
            },
            dw_pair {
                key: s("b"),
                value: s("2"),
            },
            dw_pair {
                key: null_key,
                value: s("3"),
            },
        ];
        let bad_key = dw_source_decl {
            labels: labels.as_ptr(),
            labels_len: labels.len(),
            ..good
        };
        named_at(
            add(&bad_key, &mut error),
            &error,
            DW_PARAM_DECL_LABEL_KEY,
            2,
            "decl->labels[2].key",
        );
        let r = dw_publisher_add_source(
            handle,
            &good,
            source.at(),
            SOURCE_BYTES,
            null_mut(),
            &mut error,
        );
        named(r, &error, DW_PARAM_SOURCE, "source");
        assert_eq!(add(&good, &mut error), dw_result::DW_RESULT_OK);

        let r = dw_publisher_observe(handle, 0, 0, 1, 0, core::ptr::null(), 1, &mut error);
        named(r, &error, DW_PARAM_ROW, "row");
        let r = dw_publisher_observe(null_mut(), 0, 0, 1, 0, [1u8].as_ptr(), 1, &mut error);
        named(r, &error, DW_PARAM_PUBLISHER, "publisher");
        let mut buf = [0u8; 512];
        let mut transmit = core::mem::MaybeUninit::uninit();
        let r = dw_publisher_poll(handle, null_mut(), 512, transmit.as_mut_ptr(), &mut error);
        named(r, &error, DW_PARAM_BUF, "buf");
        let r = dw_publisher_poll(handle, buf.as_mut_ptr(), 512, null_mut(), &mut error);
        named(r, &error, DW_PARAM_TRANSMIT, "transmit");
        assert_eq!(
            dw_publisher_release(handle, null_mut()),
            dw_result::DW_RESULT_OK
        );
    }
    // A dw_error of another version, with no parameter said, still reads.
    let mut unnamed = no_error();
    unnamed.result = dw_result::DW_RESULT_NULL_PARAMETER as u32;
    unnamed.reason = 9999;
    assert_eq!(message(&unnamed), "a pointer the call needs is null");
}

#[test]
fn maps_of_every_size_up_to_the_most_are_declared_as_the_core_declares_them() {
    let keys: Vec<String> = (0..=DW_MAX_MAP_ENTRIES)
        .map(|i| format!("k{i:02}"))
        .collect();
    let all: Vec<dw_pair> = keys
        .iter()
        .map(|k| dw_pair {
            key: s(k),
            value: s("v"),
        })
        .collect();
    let rust: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "v")).collect();
    let streams = [s("t")];
    let budget = dw_budget {
        largest_row: 8,
        rows_per_interval: 2,
        slots: 0,
        largest_slot: 0,
        slot_changes_per_interval: 0,
    };
    // Each count of labels beside each of metadata, across the small
    // frame's four and the large one's sixteen, and one past the most.
    for labels in 0..=DW_MAX_MAP_ENTRIES + 1 {
        for metadata in [0, 1, 4, 5, DW_MAX_MAP_ENTRIES, DW_MAX_MAP_ENTRIES + 1] {
            let decl = dw_source_decl {
                labels: all.as_ptr(),
                labels_len: labels,
                metadata: all.as_ptr(),
                metadata_len: metadata,
                ..c_source_decl(&streams, NO_STR)
            };
            let (mut sizing, mut error) = (
                dw_sizing {
                    storage: 0,
                    frame_buffer: 0,
                    latest_rows: 0,
                },
                no_error(),
            );
            // SAFETY: locals, alive for the call.
            let r = unsafe { dw_source_sizing(&decl, &budget, &mut sizing, &mut error) };
            if labels > DW_MAX_MAP_ENTRIES || metadata > DW_MAX_MAP_ENTRIES {
                assert_eq!(
                    (r, error.reason),
                    (
                        dw_result::DW_RESULT_INVALID_ARGUMENT,
                        dw_invalid::DW_INVALID_TOO_MANY as u32
                    ),
                    "{labels} labels, {metadata} metadata"
                );
                continue;
            }
            assert_eq!(r, dw_result::DW_RESULT_OK, "{labels} {metadata}");
            let core = dendro_wire_core::SourceDecl {
                labels: dendro_wire_core::Map::from_pairs(&rust[..labels]),
                metadata: dendro_wire_core::Map::from_pairs(&rust[..metadata]),
                streams: &["t"],
                ..Default::default()
            }
            .sizing(&dendro_wire_core::Budget::rows(8, 2));
            assert_eq!(
                (sizing.storage, sizing.frame_buffer),
                (core.storage, core.frame_buffer),
                "{labels} labels, {metadata} metadata"
            );
        }
    }
}
