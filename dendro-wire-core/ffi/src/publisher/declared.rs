//! A C declaration as the core takes it, and what a source so declared
//! needs: `dw_source_sizing`, the core's own `SourceDecl::sizing` called
//! from C.

use crate::boundary::{self, finish, overlap, Checked, Plain};
use crate::error::{dw_error, dw_invalid, dw_param, dw_result, At, CallError};
use crate::frame::dw_str;
use dendro_wire_core::{
    Budget, Map, SourceDecl, StreamNames, FAST_NAME_BYTES, FAST_ROW_BYTES, FAST_WINDOW_BYTES,
};

/// The streams one source may declare through the C API: a stream per CPU
/// of a 255-CPU host and one more. They are read from the caller's array
/// as the library needs each, never gathered on the stack.
pub const DW_MAX_STREAMS: usize = 256;

/// The entries of a declared source's labels, and of its metadata, the C
/// API takes: gathered on the stack to declare or size a source, and only
/// then (16 bytes each on a 32-bit target, 32 on a 64-bit one), in room
/// for 4 of each when neither map has more, for 16 when one has.
pub const DW_MAX_MAP_ENTRIES: usize = 16;

/// A row of up to this many bytes, on a stream whose name is up to
/// `DW_SIZING_FAST_NAME_BYTES`, takes the row path's short way when the
/// storage keeps `DW_SIZING_FAST_WINDOW_BYTES` past it: the figures the
/// header's `DW_SOURCE_STORAGE` and `DW_SOURCE_FRAME_BUFFER` use (the
/// core's `FAST_ROW_BYTES`, `FAST_NAME_BYTES` and `FAST_WINDOW_BYTES`).
pub const DW_SIZING_FAST_ROW_BYTES: usize = 32;

/// See `DW_SIZING_FAST_ROW_BYTES`.
pub const DW_SIZING_FAST_NAME_BYTES: usize = 32;

/// See `DW_SIZING_FAST_ROW_BYTES`.
pub const DW_SIZING_FAST_WINDOW_BYTES: usize = 88;

const _: () = assert!(DW_SIZING_FAST_ROW_BYTES == FAST_ROW_BYTES);
const _: () = assert!(DW_SIZING_FAST_NAME_BYTES == FAST_NAME_BYTES);
const _: () = assert!(DW_SIZING_FAST_WINDOW_BYTES == FAST_WINDOW_BYTES);

/// One entry of a map to declare: both strings UTF-8, the keys of a map
/// in strictly ascending byte order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_pair {
    /// The key.
    pub key: dw_str,
    /// The value.
    pub value: dw_str,
}

// SAFETY: pointers and integers only.
unsafe impl Plain for dw_pair {}

/// A source as it is declared. Every string is UTF-8 and copied into the
/// source's storage by `dw_publisher_add_source`: none need outlive the
/// call. An array may be null when its length is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_source_decl {
    /// Canonical lowercase 8-4-4-4-12, or a null `ptr` to let the
    /// subscriber mint one.
    pub uuid: dw_str,
    /// The source's labels, in key order.
    pub labels: *const dw_pair,
    /// How many (at most `DW_MAX_MAP_ENTRIES`).
    pub labels_len: usize,
    /// The source's metadata (the rows' `encoder`), in key order.
    pub metadata: *const dw_pair,
    /// How many (at most `DW_MAX_MAP_ENTRIES`).
    pub metadata_len: usize,
    /// The anchor of the source's timeline, ns.
    pub clock_anchor_wall_ns: i64,
    /// 1 if the source was finalized, else 0.
    pub complete: u32,
    /// The streams rows are observed on, named by their place here.
    pub streams: *const dw_str,
    /// How many (at most `DW_MAX_STREAMS`).
    pub streams_len: usize,
    /// The `caller_rows` stream of the source's index, or a null `ptr` for
    /// a source without one (its rows declare no index state).
    pub index_stream: dw_str,
}

// SAFETY: pointers and integers only.
unsafe impl Plain for dw_source_decl {}

/// The entries of each map most declarations stay within: theirs are
/// gathered in a frame a quarter the size of one for `DW_MAX_MAP_ENTRIES`.
const FEW: usize = 4;

/// A caller of [`with_declaration`]: given the declaration as the core
/// takes it, its streams apart (for `add_source_named` and
/// `sizing_named`). Called through `dyn`, so that each frame size below
/// shares one copy of the code; a trait of one method rather than
/// `dyn FnMut`, whose table would keep a second copy of each caller's
/// closure (its `call_once`) that nothing calls.
pub(super) trait Declared {
    fn declared(&mut self, decl: &SourceDecl<'_>, streams: &Streams<'_>) -> Checked<()>;
}

impl<F: FnMut(&SourceDecl<'_>, &Streams<'_>) -> Checked<()>> Declared for F {
    fn declared(&mut self, decl: &SourceDecl<'_>, streams: &Streams<'_>) -> Checked<()> {
        self(decl, streams)
    }
}

/// Call `f` with the declaration at `decl`, its maps' pairs gathered on
/// the stack in a frame no larger than they need.
///
/// # Safety
///
/// `decl` is null or points at a `dw_source_decl` whose arrays and
/// strings are readable for the call.
pub(super) unsafe fn with_declaration(
    decl: *const dw_source_decl,
    mut f: impl FnMut(&SourceDecl<'_>, &Streams<'_>) -> Checked<()>,
) -> Checked<()> {
    // SAFETY: the caller's contract, passed on.
    unsafe { declaration(decl, &mut f) }
}

/// [`with_declaration`], one copy for every caller.
///
/// # Safety
///
/// As for [`with_declaration`].
unsafe fn declaration(decl: *const dw_source_decl, f: &mut dyn Declared) -> Checked<()> {
    // SAFETY: the caller's contract, passed on.
    let d = unsafe { boundary::read(decl, dw_param::DW_PARAM_DECL) }?;
    match d.labels_len <= FEW && d.metadata_len <= FEW {
        // SAFETY: as above.
        true => unsafe { gather::<FEW>(&d, f) },
        // SAFETY: as above.
        false => unsafe { gather::<DW_MAX_MAP_ENTRIES>(&d, f) },
    }
}

/// [`with_declaration`] with room for `N` pairs of each map, in a frame of
/// its own.
///
/// # Safety
///
/// As for [`with_declaration`].
#[inline(never)]
unsafe fn gather<const N: usize>(d: &dw_source_decl, f: &mut dyn Declared) -> Checked<()> {
    let mut labels = [("", ""); N];
    let mut metadata = [("", ""); N];
    // SAFETY: the caller's contract, passed on.
    unsafe { declare_in(d, &mut labels, &mut metadata, f) }
}

/// The declaration `d` as the core takes it, its maps' pairs gathered into
/// `labels` and `metadata`, given to `f`.
///
/// # Safety
///
/// `d`'s arrays and strings are readable for the call.
#[inline(never)]
unsafe fn declare_in<'a>(
    d: &dw_source_decl,
    labels: &'a mut [(&'a str, &'a str)],
    metadata: &'a mut [(&'a str, &'a str)],
    f: &mut dyn Declared,
) -> Checked<()> {
    let complete = match d.complete {
        0 => false,
        1 => true,
        _ => return Err(CallError::Invalid(dw_invalid::DW_INVALID_VALUE)),
    };
    // SAFETY: the caller's contract, passed on; each pointer is checked
    // before use.
    unsafe {
        let labels = pairs(
            d.labels,
            d.labels_len,
            labels,
            dw_param::DW_PARAM_DECL_LABELS,
        )?;
        let metadata = pairs(
            d.metadata,
            d.metadata_len,
            metadata,
            dw_param::DW_PARAM_DECL_METADATA,
        )?;
        let declared = SourceDecl {
            uuid: optional(d.uuid, dw_param::DW_PARAM_DECL_UUID)?,
            labels: Map::from_pairs(labels),
            metadata: Map::from_pairs(metadata),
            clock_anchor_wall_ns: d.clock_anchor_wall_ns,
            complete,
            streams: &[],
            index_stream: optional(d.index_stream, dw_param::DW_PARAM_DECL_INDEX_STREAM)?,
        };
        let streams = strs(d.streams, d.streams_len)?;
        f.declared(&declared, &streams)
    }
}

/// The streams of a C declaration, read from C's array as the core asks
/// for each: every one checked once by `declare_in`, and
/// gathered nowhere.
pub(super) struct Streams<'a>(&'a [dw_str]);

impl StreamNames for Streams<'_> {
    fn count(&self) -> usize {
        self.0.len()
    }

    fn name(&self, index: usize) -> &str {
        const NAME: dw_param = dw_param::DW_PARAM_DECL_STREAM_NAME;
        // SAFETY: `declare_in` made this only after finding
        // every string readable and UTF-8, and the caller's contract keeps
        // them so for the call; a string it found otherwise is never here.
        let name =
            |s: &dw_str| unsafe { boundary::str(s.ptr, s.len, NAME.into()) }.unwrap_or_default();
        self.0.get(index).map_or("", name)
    }
}

/// The most a source is given in one interval, for `dw_source_sizing`: the
/// core's `Budget`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_budget {
    /// The longest row any of the source's streams is given, in bytes.
    pub largest_row: usize,
    /// The most rows observed on the source in one interval, all its
    /// streams together.
    pub rows_per_interval: usize,
    /// The most index slots the source holds at once (0 without an index).
    pub slots: usize,
    /// The longest slot, its key and value together, in bytes.
    pub largest_slot: usize,
    /// The most slots set or removed in one interval.
    pub slot_changes_per_interval: usize,
}

// SAFETY: integers only.
unsafe impl Plain for dw_budget {}

/// What one source needs, from `dw_source_sizing`: the core's `Sizing`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dw_sizing {
    /// The bytes of the source's storage (`dw_publisher_add_source`).
    pub storage: usize,
    /// The frame buffer its frames need, length prefixes included (a
    /// publisher's `frame_buffer` is the largest of its sources').
    pub frame_buffer: usize,
    /// Of `frame_buffer`, the room a connection's first `Rows` frame keeps
    /// for the latest row of every stream (rule 3).
    pub latest_rows: usize,
}

/// The storage and frame buffer a source declared as `*decl` needs so that
/// nothing it is given within `*budget` is refused, into `*sizing`: the
/// core's own `SourceDecl::sizing`, the figure a Rust firmware sizes its
/// arrays by, so no C program finds it by trial; `DW_SOURCE_STORAGE` and
/// `DW_SOURCE_FRAME_BUFFER` give the same figures at compile time.
///
/// Enough: nothing given within the budget is refused, on a link that
/// keeps up or one that lets frames wait and drop (the core's
/// `tests/sizing.rs`, over 300 declarations and budgets). For a source
/// without an index it is also the least, but for the row path's window
/// (at most 64 bytes, which refuses nothing and keeps every row on the
/// short way): a byte less of storage for the rows, or of frame buffer, is
/// refused at the budget's worst. For a source with an index the storage
/// also keeps room for two intervals' index entries,
/// 2 * (full + delta) + (2 * changes + 1) * (42 + index name), and for the
/// `Rows` frames slot changes close, 74 * changes (full is
/// slots * (8 + largest_slot), delta changes * (9 + largest_slot), changes
/// the budget's slot changes an interval); a workload whose frames do not
/// wait needs less, and no tighter bound is claimed there.
///
/// `DW_RESULT_INVALID_ARGUMENT` for a declaration `dw_publisher_add_source`
/// would refuse as an argument (a string that is not UTF-8, too many
/// streams or entries).
///
/// # Safety
///
/// `decl` points at a `dw_source_decl` whose arrays and strings are
/// readable for the call; `budget` at a `dw_budget`; `sizing` at a
/// `dw_sizing`; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_source_sizing(
    decl: *const dw_source_decl,
    budget: *const dw_budget,
    sizing: *mut dw_sizing,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let b = boundary::read(budget, dw_param::DW_PARAM_BUDGET)?;
        let out = boundary::out(sizing, dw_param::DW_PARAM_SIZING)?;
        let budget = Budget::rows(b.largest_row, b.rows_per_interval).with_slots(
            b.slots,
            b.largest_slot,
            b.slot_changes_per_interval,
        );
        with_declaration(decl, |decl, streams| {
            let s = decl.sizing_named(streams, &budget);
            out.write(dw_sizing {
                storage: s.storage,
                frame_buffer: s.frame_buffer,
                latest_rows: s.latest_rows,
            });
            Ok(())
        })?;
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// The `len` strings at `ptr`, each found UTF-8, not gathered.
///
/// # Safety
///
/// As for `boundary::items`, and each string as for `boundary::str`.
unsafe fn strs<'a>(ptr: *const dw_str, len: usize) -> Checked<Streams<'a>> {
    // SAFETY: the caller's contract, passed on.
    let given =
        unsafe { boundary::items(ptr, len, DW_MAX_STREAMS, dw_param::DW_PARAM_DECL_STREAMS) }?;
    for (at, s) in given.iter().enumerate() {
        let name = At::from(dw_param::DW_PARAM_DECL_STREAM_NAME).place(at);
        // SAFETY: as above.
        unsafe { boundary::str(s.ptr, s.len, name) }?;
    }
    Ok(Streams(given))
}

/// The pairs of `len` `dw_pair`s at `ptr`, into `out`; `array` names the
/// array (`decl->labels` or `decl->metadata`) in a refusal.
///
/// # Safety
///
/// As for `boundary::items`, and each string as for `boundary::str`.
unsafe fn pairs<'a>(
    ptr: *const dw_pair,
    len: usize,
    out: &'a mut [(&'a str, &'a str)],
    array: dw_param,
) -> Checked<&'a [(&'a str, &'a str)]> {
    use dw_param::*;
    let (key, value) = match array {
        DW_PARAM_DECL_LABELS => (DW_PARAM_DECL_LABEL_KEY, DW_PARAM_DECL_LABEL_VALUE),
        _ => (DW_PARAM_DECL_METADATA_KEY, DW_PARAM_DECL_METADATA_VALUE),
    };
    // SAFETY: the caller's contract, passed on.
    let given = unsafe { boundary::items(ptr, len, DW_MAX_MAP_ENTRIES.min(out.len()), array) }?;
    for (at, (to, p)) in out.iter_mut().zip(given).enumerate() {
        // SAFETY: as above.
        *to = unsafe {
            (
                boundary::str(p.key.ptr, p.key.len, At::from(key).place(at))?,
                boundary::str(p.value.ptr, p.value.len, At::from(value).place(at))?,
            )
        };
    }
    Ok(out.get(..given.len()).unwrap_or(&[]))
}

/// Whether the storage `avoid` (an address and a length) a caller lends a
/// source shares no byte with the declaration `decl` C gave: any of its
/// strings, or the array its streams are read from, which are read while
/// the storage is written. Plain loops and one answer, out of line: a
/// refusal at each string cost a C device 0.5 KB of flash.
#[inline(never)]
pub(super) fn apart(decl: &SourceDecl<'_>, streams: &Streams<'_>, avoid: (usize, usize)) -> bool {
    let mut shared = overlap(held(streams.0), avoid);
    for s in [decl.uuid, decl.index_stream].into_iter().flatten() {
        shared |= overlap(held(s.as_bytes()), avoid);
    }
    for map in [decl.labels, decl.metadata] {
        for (k, v) in map.given().unwrap_or(&[]) {
            shared |= overlap(held(k.as_bytes()), avoid) | overlap(held(v.as_bytes()), avoid);
        }
    }
    for s in streams.0 {
        shared |= overlap((s.ptr as usize, s.len), avoid);
    }
    !shared
}

/// The bytes `items` lie in: an address and a length.
fn held<T>(items: &[T]) -> (usize, usize) {
    (items.as_ptr() as usize, size_of_val(items))
}

/// An optional string: a null `ptr` is absent.
///
/// # Safety
///
/// As for `boundary::str`.
unsafe fn optional<'a>(s: dw_str, param: dw_param) -> Checked<Option<&'a str>> {
    match s.ptr.is_null() {
        true => Ok(None),
        // SAFETY: the caller's contract, passed on.
        false => unsafe { boundary::str(s.ptr, s.len, param.into()) }.map(Some),
    }
}
