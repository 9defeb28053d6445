//! `dw_param`: the parameter a null pointer was given for, by the name the
//! header gives it, so that the refusal says which.

/// The parameter a null pointer was given for: `dw_error.reason` with
/// `DW_RESULT_NULL_PARAMETER`, named in its sentence as the header spells
/// it (`decl->streams` for a pointer inside a struct).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_param {
    /// Not said (a `dw_error` from another version).
    DW_PARAM_UNNAMED = 0,
    /// `publisher`.
    DW_PARAM_PUBLISHER = 1,
    /// `subscriber`.
    DW_PARAM_SUBSCRIBER = 2,
    /// `storage`.
    DW_PARAM_STORAGE = 3,
    /// `config`.
    DW_PARAM_CONFIG = 4,
    /// `decl`.
    DW_PARAM_DECL = 5,
    /// `budget`.
    DW_PARAM_BUDGET = 6,
    /// `sizing`.
    DW_PARAM_SIZING = 7,
    /// `source`.
    DW_PARAM_SOURCE = 8,
    /// `row`.
    DW_PARAM_ROW = 9,
    /// `key`.
    DW_PARAM_KEY = 10,
    /// `value`.
    DW_PARAM_VALUE = 11,
    /// `buf`.
    DW_PARAM_BUF = 12,
    /// `transmit`.
    DW_PARAM_TRANSMIT = 13,
    /// `waiting`.
    DW_PARAM_WAITING = 14,
    /// `stats`.
    DW_PARAM_STATS = 15,
    /// `state`.
    DW_PARAM_STATE = 16,
    /// `len`.
    DW_PARAM_LEN = 17,
    /// `frame`.
    DW_PARAM_FRAME = 18,
    /// `consumed`.
    DW_PARAM_CONSUMED = 19,
    /// `needed`.
    DW_PARAM_NEEDED = 20,
    /// `cursor`.
    DW_PARAM_CURSOR = 21,
    /// `rows`.
    DW_PARAM_ROWS = 22,
    /// `filled`.
    DW_PARAM_FILLED = 23,
    /// `map`.
    DW_PARAM_MAP = 24,
    /// `rest`.
    DW_PARAM_REST = 25,
    /// `verdict`.
    DW_PARAM_VERDICT = 26,
    /// `count`.
    DW_PARAM_COUNT = 27,
    /// `error`.
    DW_PARAM_ERROR = 28,
    /// `written`.
    DW_PARAM_WRITTEN = 29,
    /// `decl->uuid`.
    DW_PARAM_DECL_UUID = 30,
    /// `decl->labels`.
    DW_PARAM_DECL_LABELS = 31,
    /// `decl->metadata`.
    DW_PARAM_DECL_METADATA = 32,
    /// `decl->streams`.
    DW_PARAM_DECL_STREAMS = 33,
    /// `decl->index_stream`.
    DW_PARAM_DECL_INDEX_STREAM = 34,
    /// A name in decl->streams (`dw_error.item` its place).
    DW_PARAM_DECL_STREAM_NAME = 35,
    /// A key or value in decl->labels or decl->metadata: no longer given
    /// (the four below name which), kept so that its value means nothing
    /// else.
    DW_PARAM_DECL_PAIR = 36,
    /// A key in decl->labels (`dw_error.item` its place).
    DW_PARAM_DECL_LABEL_KEY = 37,
    /// A value in decl->labels (`dw_error.item` its place).
    DW_PARAM_DECL_LABEL_VALUE = 38,
    /// A key in decl->metadata (`dw_error.item` its place).
    DW_PARAM_DECL_METADATA_KEY = 39,
    /// A value in decl->metadata (`dw_error.item` its place).
    DW_PARAM_DECL_METADATA_VALUE = 40,
}

impl dw_param {
    /// Every parameter, in the order of its value from 1.
    const ALL: [dw_param; 40] = [
        dw_param::DW_PARAM_PUBLISHER,
        dw_param::DW_PARAM_SUBSCRIBER,
        dw_param::DW_PARAM_STORAGE,
        dw_param::DW_PARAM_CONFIG,
        dw_param::DW_PARAM_DECL,
        dw_param::DW_PARAM_BUDGET,
        dw_param::DW_PARAM_SIZING,
        dw_param::DW_PARAM_SOURCE,
        dw_param::DW_PARAM_ROW,
        dw_param::DW_PARAM_KEY,
        dw_param::DW_PARAM_VALUE,
        dw_param::DW_PARAM_BUF,
        dw_param::DW_PARAM_TRANSMIT,
        dw_param::DW_PARAM_WAITING,
        dw_param::DW_PARAM_STATS,
        dw_param::DW_PARAM_STATE,
        dw_param::DW_PARAM_LEN,
        dw_param::DW_PARAM_FRAME,
        dw_param::DW_PARAM_CONSUMED,
        dw_param::DW_PARAM_NEEDED,
        dw_param::DW_PARAM_CURSOR,
        dw_param::DW_PARAM_ROWS,
        dw_param::DW_PARAM_FILLED,
        dw_param::DW_PARAM_MAP,
        dw_param::DW_PARAM_REST,
        dw_param::DW_PARAM_VERDICT,
        dw_param::DW_PARAM_COUNT,
        dw_param::DW_PARAM_ERROR,
        dw_param::DW_PARAM_WRITTEN,
        dw_param::DW_PARAM_DECL_UUID,
        dw_param::DW_PARAM_DECL_LABELS,
        dw_param::DW_PARAM_DECL_METADATA,
        dw_param::DW_PARAM_DECL_STREAMS,
        dw_param::DW_PARAM_DECL_INDEX_STREAM,
        dw_param::DW_PARAM_DECL_STREAM_NAME,
        dw_param::DW_PARAM_DECL_PAIR,
        dw_param::DW_PARAM_DECL_LABEL_KEY,
        dw_param::DW_PARAM_DECL_LABEL_VALUE,
        dw_param::DW_PARAM_DECL_METADATA_KEY,
        dw_param::DW_PARAM_DECL_METADATA_VALUE,
    ];

    /// Its name, as the header spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            dw_param::DW_PARAM_UNNAMED => "",
            dw_param::DW_PARAM_PUBLISHER => "publisher",
            dw_param::DW_PARAM_SUBSCRIBER => "subscriber",
            dw_param::DW_PARAM_STORAGE => "storage",
            dw_param::DW_PARAM_CONFIG => "config",
            dw_param::DW_PARAM_DECL => "decl",
            dw_param::DW_PARAM_BUDGET => "budget",
            dw_param::DW_PARAM_SIZING => "sizing",
            dw_param::DW_PARAM_SOURCE => "source",
            dw_param::DW_PARAM_ROW => "row",
            dw_param::DW_PARAM_KEY => "key",
            dw_param::DW_PARAM_VALUE => "value",
            dw_param::DW_PARAM_BUF => "buf",
            dw_param::DW_PARAM_TRANSMIT => "transmit",
            dw_param::DW_PARAM_WAITING => "waiting",
            dw_param::DW_PARAM_STATS => "stats",
            dw_param::DW_PARAM_STATE => "state",
            dw_param::DW_PARAM_LEN => "len",
            dw_param::DW_PARAM_FRAME => "frame",
            dw_param::DW_PARAM_CONSUMED => "consumed",
            dw_param::DW_PARAM_NEEDED => "needed",
            dw_param::DW_PARAM_CURSOR => "cursor",
            dw_param::DW_PARAM_ROWS => "rows",
            dw_param::DW_PARAM_FILLED => "filled",
            dw_param::DW_PARAM_MAP => "map",
            dw_param::DW_PARAM_REST => "rest",
            dw_param::DW_PARAM_VERDICT => "verdict",
            dw_param::DW_PARAM_COUNT => "count",
            dw_param::DW_PARAM_ERROR => "error",
            dw_param::DW_PARAM_WRITTEN => "written",
            dw_param::DW_PARAM_DECL_UUID => "decl->uuid",
            dw_param::DW_PARAM_DECL_LABELS => "decl->labels",
            dw_param::DW_PARAM_DECL_METADATA => "decl->metadata",
            dw_param::DW_PARAM_DECL_STREAMS => "decl->streams",
            dw_param::DW_PARAM_DECL_INDEX_STREAM => "decl->index_stream",
            dw_param::DW_PARAM_DECL_STREAM_NAME => "decl->streams[]",
            dw_param::DW_PARAM_DECL_PAIR => "a key or value in decl->labels or decl->metadata",
            dw_param::DW_PARAM_DECL_LABEL_KEY => "decl->labels[].key",
            dw_param::DW_PARAM_DECL_LABEL_VALUE => "decl->labels[].value",
            dw_param::DW_PARAM_DECL_METADATA_KEY => "decl->metadata[].key",
            dw_param::DW_PARAM_DECL_METADATA_VALUE => "decl->metadata[].value",
        }
    }

    /// The parameter of a `dw_error.reason`: unnamed for a value not here.
    pub(crate) fn from_reason(reason: u32) -> dw_param {
        let at = (reason as usize).wrapping_sub(1);
        Self::ALL
            .get(at)
            .copied()
            .unwrap_or(dw_param::DW_PARAM_UNNAMED)
    }
}
