//! What the C-surface tests share: calling the entry points as C does
//! (raw pointers, out-parameters), and reading what they wrote back into
//! Rust values to compare with the core's.

#![allow(dead_code)]

use core::mem::MaybeUninit;
use core::ptr::{null, null_mut};

use dendro_wire_core::Frame;
use dendro_wire_ffi::*;

/// This target's figures, as the header's macros pick them by the width
/// of a pointer.
pub const PUBLISHER_HEAD: usize = match cfg!(target_pointer_width = "64") {
    true => DW_PUBLISHER_HEAD_BYTES_64,
    false => DW_PUBLISHER_HEAD_BYTES_32,
};
pub const PUBLISHER_SOURCE: usize = match cfg!(target_pointer_width = "64") {
    true => DW_PUBLISHER_SOURCE_BYTES_64,
    false => DW_PUBLISHER_SOURCE_BYTES_32,
};
pub const SUBSCRIBER_HEAD: usize = match cfg!(target_pointer_width = "64") {
    true => DW_SUBSCRIBER_HEAD_BYTES_64,
    false => DW_SUBSCRIBER_HEAD_BYTES_32,
};

/// `DW_PUBLISHER_SIZE(sources)`.
pub const fn publisher_bytes(sources: usize) -> usize {
    PUBLISHER_HEAD + sources * PUBLISHER_SOURCE
}

/// The sources the tests' publishers hold at most.
pub const PUBLISHER_SOURCES: u32 = 8;

/// `DW_PUBLISHER_SIZE(PUBLISHER_SOURCES)`.
pub const PUBLISHER_BYTES: usize = publisher_bytes(PUBLISHER_SOURCES as usize);

/// `DW_PUBLISHER_STORAGE(storage, PUBLISHER_SOURCES)`, on the host.
#[repr(C, align(16))]
pub struct PublisherStorage(pub [u8; PUBLISHER_BYTES]);

/// A `dw_error` as a caller declares one: written only on failure.
pub fn no_error() -> dw_error {
    // SAFETY: a dw_error is integers only; all zeros is a value.
    unsafe { MaybeUninit::zeroed().assume_init() }
}

/// What one `dw_decode` call said.
pub struct Decoded {
    pub result: dw_result,
    pub frame: MaybeUninit<dw_frame>,
    pub consumed: usize,
    pub needed: usize,
    pub error: dw_error,
}

impl Decoded {
    /// The frame, once the call said `DW_RESULT_OK`.
    pub fn frame(&self) -> &dw_frame {
        assert_eq!(self.result, dw_result::DW_RESULT_OK);
        // SAFETY: written by dw_decode, which said OK.
        unsafe { self.frame.assume_init_ref() }
    }
}

/// `dw_decode_limited` over `buf`, as C calls it.
pub fn decode_limited(buf: &[u8], max: u32) -> Decoded {
    let mut d = Decoded {
        result: dw_result::DW_RESULT_OK,
        frame: MaybeUninit::uninit(),
        consumed: usize::MAX,
        needed: usize::MAX,
        error: no_error(),
    };
    // SAFETY: every pointer is to a live local or `buf`.
    d.result = unsafe {
        dw_decode_limited(
            buf.as_ptr(),
            buf.len(),
            max,
            d.frame.as_mut_ptr(),
            &mut d.consumed,
            &mut d.needed,
            &mut d.error,
        )
    };
    d
}

/// `dw_decode` over `buf`.
pub fn decode(buf: &[u8]) -> Decoded {
    decode_limited(buf, DW_MAX_FRAME_BYTES)
}

/// The sentence `dw_error_message` writes for `error`.
pub fn message(error: &dw_error) -> String {
    let mut buf = [0u8; 256];
    let mut written = usize::MAX;
    // SAFETY: live locals, the buffer's true length.
    let r = unsafe { dw_error_message(error, buf.as_mut_ptr().cast(), buf.len(), &mut written) };
    assert_eq!(r, dw_result::DW_RESULT_OK, "256 bytes hold every sentence");
    assert_eq!(buf[written], 0, "a NUL follows the sentence");
    String::from_utf8(buf[..written].to_vec()).unwrap()
}

/// The bytes a `dw_bytes` names.
pub fn bytes(b: dw_bytes) -> Vec<u8> {
    if b.len == 0 {
        return Vec::new();
    }
    // SAFETY: the decoder pointed it into a buffer the test still holds.
    unsafe { core::slice::from_raw_parts(b.ptr, b.len) }.to_vec()
}

/// A `dw_str` naming `v`'s bytes, for the call it is passed to.
pub fn s(v: &str) -> dw_str {
    dw_str {
        ptr: v.as_ptr().cast(),
        len: v.len(),
    }
}

/// A `dw_str` of no string: an absent uuid or index stream, or one for a
/// call to write.
pub const NO_STR: dw_str = dw_str {
    ptr: null(),
    len: 0,
};

/// A source declared with nothing but its streams and its index stream
/// (`NO_STR` for none): no uuid, labels or metadata, anchor 0, not
/// complete.
pub fn c_source_decl(streams: &[dw_str], index_stream: dw_str) -> dw_source_decl {
    dw_source_decl {
        uuid: NO_STR,
        labels: null(),
        labels_len: 0,
        metadata: null(),
        metadata_len: 0,
        clock_anchor_wall_ns: 0,
        complete: 0,
        streams: streams.as_ptr(),
        streams_len: streams.len(),
        index_stream,
    }
}

/// The string a `dw_str` names.
pub fn string(s: dw_str) -> String {
    String::from_utf8(bytes(dw_bytes {
        ptr: s.ptr.cast(),
        len: s.len,
    }))
    .unwrap()
}

/// Every entry of a map, stepped with `dw_map_next` until `DW_RESULT_DONE`.
pub fn entries(mut map: dw_map) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        let (mut k, mut v) = (NO_STR, NO_STR);
        // SAFETY: live locals; the map's bytes are still held.
        match unsafe { dw_map_next(&mut map, &mut k, &mut v, null_mut()) } {
            dw_result::DW_RESULT_OK => out.push((string(k), string(v))),
            dw_result::DW_RESULT_DONE => return out,
            other => panic!("dw_map_next: {other:?}"),
        }
    }
}

/// One row as the cursor gives it.
pub type RowOut = (String, i64, i64, Vec<u8>);

/// Every row of a cursor, stepped with `dw_rows_next`.
pub fn rows(mut cursor: dw_row_cursor) -> Vec<RowOut> {
    let mut out = Vec::new();
    loop {
        let mut row = MaybeUninit::<dw_row>::uninit();
        // SAFETY: live locals; the rows' bytes are still held.
        match unsafe { dw_rows_next(&mut cursor, row.as_mut_ptr(), null_mut()) } {
            dw_result::DW_RESULT_OK => {
                // SAFETY: written, as the call said OK.
                let r = unsafe { row.assume_init() };
                out.push((string(r.stream), r.ts, r.wall_offset, bytes(r.row)));
            }
            dw_result::DW_RESULT_DONE => return out,
            other => panic!("dw_rows_next: {other:?}"),
        }
    }
}

fn map_pairs(m: &dendro_wire_core::Map<'_>) -> Vec<(String, String)> {
    m.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Every field of the C frame is the core's decoded frame's.
pub fn assert_same(c: &dw_frame, f: &Frame<'_>) {
    use dw_frame_kind::*;
    // SAFETY (each union read below): the member read is the one `kind`
    // names, which dw_decode filled.
    unsafe {
        match f {
            Frame::Handshake(h) => {
                assert_eq!(c.kind, DW_FRAME_HANDSHAKE as u32);
                let b = c.body.handshake;
                assert_eq!(b.source, h.source);
                assert_eq!(b.has_uuid, h.uuid.is_some());
                assert_eq!(b.has_uuid.then(|| string(b.uuid)).as_deref(), h.uuid);
                assert_eq!(entries(b.labels), map_pairs(&h.labels));
                assert_eq!(entries(b.metadata), map_pairs(&h.metadata));
                assert_eq!(b.clock_anchor_wall_ns, h.clock_anchor_wall_ns);
                assert_eq!(b.complete, h.complete);
            }
            Frame::Index(i) => {
                assert_eq!(c.kind, DW_FRAME_INDEX as u32);
                let b = c.body.index;
                assert_eq!(b.source, i.source);
                assert_eq!(string(b.stream), i.stream);
                assert_eq!(b.ts, i.ts);
                assert_eq!(b.kind, u32::from(i.kind.to_byte()));
                assert_eq!(b.state, [i.state.0, i.state.1]);
                assert_eq!(bytes(b.blob), i.blob);
            }
            Frame::Rows(r) => {
                assert_eq!(c.kind, DW_FRAME_ROWS as u32);
                let b = c.body.rows;
                assert_eq!(b.source, r.source);
                assert_eq!(b.seq, r.seq);
                assert_eq!(b.index_state, [r.index_state.0, r.index_state.1]);
                assert_eq!(b.count as usize, r.rows.len());
                let want: Vec<RowOut> = r
                    .rows
                    .iter()
                    .map(|row| {
                        (
                            row.stream.to_string(),
                            row.ts,
                            row.wall_offset,
                            row.row.to_vec(),
                        )
                    })
                    .collect();
                assert_eq!(rows(b.rows), want);
            }
            Frame::Segment(s) => {
                assert_eq!(c.kind, DW_FRAME_SEGMENT as u32);
                let b = c.body.segment;
                assert_eq!(b.source, s.source);
                assert_eq!(string(b.stream), s.stream);
                assert_eq!(
                    (b.rows, b.first_ts, b.last_ts),
                    (s.rows, s.first_ts, s.last_ts)
                );
                assert_eq!(bytes(b.bytes), s.bytes);
                assert_eq!(b.has_caller_index, s.caller_index.is_some());
                assert_eq!(bytes(b.caller_index), s.caller_index.unwrap_or(&[]));
            }
            Frame::ClockOffset(o) => {
                assert_eq!(c.kind, DW_FRAME_CLOCK_OFFSET as u32);
                let b = c.body.clock_offset;
                assert_eq!((b.source, b.ts, b.offset_ns), (o.source, o.ts, o.offset_ns));
            }
            Frame::SourceUpdate(u) => {
                assert_eq!(c.kind, DW_FRAME_SOURCE_UPDATE as u32);
                let b = c.body.source_update;
                assert_eq!((b.source, b.ts), (u.source, u.ts));
                assert_eq!(entries(b.labels), map_pairs(&u.labels));
                assert_eq!(entries(b.metadata), map_pairs(&u.metadata));
            }
            Frame::Unknown { kind, payload } => {
                assert_eq!(c.kind, DW_FRAME_UNKNOWN as u32);
                let b = c.body.unknown;
                assert_eq!(b.kind, *kind);
                assert_eq!(bytes(b.payload), *payload);
            }
        }
    }
}

/// A null out-pointer of any type.
pub fn nul<T>() -> *mut T {
    null_mut()
}

/// The publisher's next frame due, into `buf`: its length, or `None` when
/// none is.
pub fn poll(handle: *mut dw_publisher, buf: &mut [u8]) -> Option<usize> {
    let mut t = MaybeUninit::uninit();
    // SAFETY: the caller's live handle, a buffer of its true length and a
    // local.
    let r = unsafe {
        dw_publisher_poll(
            handle,
            buf.as_mut_ptr(),
            buf.len(),
            t.as_mut_ptr(),
            null_mut(),
        )
    };
    match r {
        // SAFETY: written, as the call said OK.
        dw_result::DW_RESULT_OK => Some(unsafe { t.assume_init() }.len),
        dw_result::DW_RESULT_DONE => None,
        other => panic!("{other:?}"),
    }
}
