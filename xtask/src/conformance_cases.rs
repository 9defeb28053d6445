//! The conformance suite's cases written from the spec (docs/PROTOCOL.md):
//! each a stream given as the JSON Lines of its frames (encoded by
//! `dendro-wire encode`), damaged where the case needs a byte no encoder
//! writes, and the outcome the spec asks for. `conformance.rs` writes them,
//! with the cases taken from the corpora the tests already have.

/// What a case holds an implementation to.
pub(crate) const ACCEPT: &str = "must-accept";
pub(crate) const REFUSE: &str = "must-refuse";
/// Where PROTOCOL §8 makes this project stricter than dendro 0.6.1: the
/// outcome expected is this project's, and no implementation is failed.
pub(crate) const DEFINED: &str = "implementation-defined";

/// The rules a case is about: the framing and fields alone, or the
/// subscriber's rules over the stream too (rule 1, §8.4, §8.9, the tally).
pub(crate) const DECODE: &str = "decode";
pub(crate) const SUBSCRIBER: &str = "subscriber";

/// The reference implementation's name in the matrix, and in a case's
/// known divergences.
pub(crate) const DENDRO: &str = "dendro 0.6.1";

/// What dendro 0.6.1 does with a stream cut inside a length (NOTES.md).
pub(crate) const CUT_LENGTH: &str =
    "its FrameReader reads a stream that ends after 1 to 3 bytes of \
     a length prefix as a clean end (a known defect of 0.6.1; PROTOCOL §8.3)";

pub(crate) enum Damage {
    None,
    /// The stream is these bytes, and no frame is encoded.
    Raw(Vec<u8>),
    /// Frame `frame` (from 1) has `byte` at `at` (from its length prefix).
    Set {
        frame: usize,
        at: usize,
        byte: u8,
    },
    /// Frame `frame`'s payload grows by `bytes`, its length with it.
    Grow {
        frame: usize,
        bytes: Vec<u8>,
    },
    /// Frame `frame`'s payload loses its last byte, its length with it.
    Shrink {
        frame: usize,
    },
    /// The stream loses its last `n` bytes.
    Cut(usize),
    /// The stream gains `bytes` at its end.
    Append(Vec<u8>),
}

pub(crate) enum Expect {
    /// The stream is read to its end, every frame of `lines`; the tally
    /// has these counts (`check --json`'s names), and the rest as the tool
    /// counts them.
    Accept(&'static [(&'static str, u64)]),
    /// Refused by one of `rules`, at frame `frame` (from 1; 0 the preamble).
    Refuse(&'static [&'static str], u64),
}

pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) class: &'static str,
    pub(crate) section: &'static str,
    pub(crate) layer: &'static str,
    pub(crate) about: &'static str,
    pub(crate) lines: Vec<String>,
    pub(crate) damage: Damage,
    pub(crate) expect: Expect,
    /// Why dendro 0.6.1 differs here, when it is a known defect.
    pub(crate) dendro: Option<&'static str>,
}

/// The state of the slot set `{cpu0: online}` (PROTOCOL §9.4), and another.
const S: &str = "[3812034424351027592,8726669433981808818]";
const T: &str = "[1,2]";
const NONE: &str = "[0,0]";

fn hs(source: u32) -> String {
    format!(
        r#"{{"frame":"handshake","source":{source},"uuid":null,"labels":{{}},"metadata":{{}},"clock_anchor_wall_ns":0,"complete":false}}"#
    )
}

/// A handshake with a uuid and the labels `a` = 1 and `b` = 2: the bytes
/// the uuid and map cases damage.
fn hs_full() -> String {
    r#"{"frame":"handshake","source":0,"uuid":"3f2b1c4d-0000-4000-8000-00000000abcd","labels":{"a":"1","b":"2"},"metadata":{},"clock_anchor_wall_ns":1700000000000000000,"complete":true}"#.into()
}

fn index(source: u32, kind: &str, state: &str) -> String {
    format!(
        r#"{{"frame":"index","source":{source},"stream":"cpu/slots","ts":1000,"kind":"{kind}","state":{state},"blob":"0400000063707530060000006f6e6c696e65"}}"#
    )
}

fn rows(source: u32, seq: u64, state: &str, count: usize) -> String {
    let row = r#"{"stream":"cpu/usage","ts":1000,"wall_offset":-3,"row":"2a000000"}"#;
    let rows = vec![row; count].join(",");
    format!(
        r#"{{"frame":"rows","source":{source},"seq":{seq},"index_state":{state},"rows":[{rows}]}}"#
    )
}

fn segment(source: u32) -> String {
    format!(
        r#"{{"frame":"segment","source":{source},"stream":"cpu/usage","rows":3,"first_ts":-1,"last_ts":2,"bytes":"50415231","caller_index":null}}"#
    )
}

fn clock(source: u32) -> String {
    format!(r#"{{"frame":"clock_offset","source":{source},"ts":2000,"offset_ns":-3}}"#)
}

fn update(source: u32) -> String {
    format!(
        r#"{{"frame":"source_update","source":{source},"ts":1700000001000000000,"labels":{{"host":"a"}},"metadata":{{}}}}"#
    )
}

fn unknown(kind: u8, payload: &str) -> String {
    format!(r#"{{"frame":"unknown","kind":{kind},"payload":"{payload}"}}"#)
}

/// The preamble: the magic and version 1.
pub(crate) const PREAMBLE: &[u8] = b"dendro-repl\0\x01\x00";

fn raw(tail: &[u8]) -> Damage {
    Damage::Raw([PREAMBLE, tail].concat())
}

// A case's parts, in the order of the tables below: a row each.
#[allow(clippy::too_many_arguments)]
fn case(
    name: &'static str,
    class: &'static str,
    section: &'static str,
    layer: &'static str,
    about: &'static str,
    lines: Vec<String>,
    damage: Damage,
    expect: Expect,
) -> Case {
    Case {
        name,
        class,
        section,
        layer,
        about,
        lines,
        damage,
        expect,
        dendro: None,
    }
}

/// Every case written from the spec.
#[rustfmt::skip]
pub(crate) fn spec_cases() -> Vec<Case> {
    use Damage::*;
    use Expect::*;
    let mut cases = framing();
    cases.extend(fields());
    let lines = |n: u64| (0..n).map(|s| hs(s as u32)).collect::<Vec<_>>();
    cases.extend([
        case("refuse-rows-before-handshake", REFUSE, "rule 1", SUBSCRIBER,
            "a Rows frame names a source no handshake introduced",
            vec![rows(0, 0, NONE, 0)], None, Refuse(&["UnknownSource"], 1)),
        case("refuse-index-for-unopened-source", REFUSE, "rule 1", SUBSCRIBER,
            "an Index frame names source 1 when only source 0 is open",
            vec![hs(0), index(1, "full", S)], None, Refuse(&["UnknownSource"], 2)),
        case("refuse-segment-for-unopened-source", REFUSE, "rule 1", SUBSCRIBER,
            "a Segment frame names a source no handshake introduced",
            vec![hs(0), segment(3)], None, Refuse(&["UnknownSource"], 2)),
        case("refuse-clock-offset-for-unopened-source", REFUSE, "rule 1", SUBSCRIBER,
            "a ClockOffset frame names a source no handshake introduced",
            vec![hs(0), clock(1)], None, Refuse(&["UnknownSource"], 2)),
        case("refuse-source-update-for-unopened-source", REFUSE, "rule 1, §4.6", SUBSCRIBER,
            "a SourceUpdate frame names a source no handshake introduced",
            vec![hs(0), update(1)], None, Refuse(&["UnknownSource"], 2)),
        case("defined-second-handshake", DEFINED, "§4.1, §8.4", SUBSCRIBER,
            "a second handshake for ordinal 0 on one connection: refused here; dendro opens a \
             second source",
            vec![hs(0), hs(0)], None, Refuse(&["DuplicateHandshake"], 2)),
        case("defined-1024-sources", DEFINED, "§8.9", SUBSCRIBER,
            "1024 sources on one connection: this project's default limit, accepted",
            lines(1024), None, Accept(&[("sources", 1024)])),
        case("defined-1025-sources", DEFINED, "§8.9", SUBSCRIBER,
            "1025 sources on one connection: one past this project's default limit",
            lines(1025), None, Refuse(&["TooManySources"], 1025)),
        case("accept-handshake-mid-stream", ACCEPT, "rule 1, §5.1", SUBSCRIBER,
            "a second source opens after the first one's frames",
            vec![hs(0), rows(0, 0, NONE, 1), hs(1), rows(1, 0, NONE, 1)], None,
            Accept(&[("sources", 2), ("rows_applied", 2)])),
        case("accept-seq-gap", ACCEPT, "§4.3, §5.1", SUBSCRIBER,
            "seq 5, 6, 9: one gap, two frames lost, the rows that came applied",
            vec![hs(0), rows(0, 5, NONE, 1), rows(0, 6, NONE, 1), rows(0, 9, NONE, 1)], None,
            Accept(&[("gaps", 1), ("frames_lost", 2), ("rows_applied", 3)])),
        case("accept-seq-regression", ACCEPT, "§5.1, §8.5", SUBSCRIBER,
            "seq 5, 6, 6, 4, 5: two regressions counted and their rows judged as usual",
            vec![hs(0), rows(0, 5, NONE, 1), rows(0, 6, NONE, 1), rows(0, 6, NONE, 1),
                 rows(0, 4, NONE, 1), rows(0, 5, NONE, 1)], None,
            Accept(&[("seq_regressions", 2), ("gaps", 0), ("rows_applied", 5)])),
        case("accept-seq-at-the-top", ACCEPT, "§4.3", SUBSCRIBER,
            "seq need not start at zero: 2^64-2 then 2^64-1, no gap",
            vec![hs(0), rows(0, u64::MAX - 1, NONE, 0), rows(0, u64::MAX, NONE, 0)], None,
            Accept(&[("gaps", 0), ("seq_regressions", 0)])),
        case("accept-keepalive", ACCEPT, "rule 6", SUBSCRIBER,
            "empty Rows frames count for seq and apply nothing",
            vec![hs(0), rows(0, 0, NONE, 0), rows(0, 1, NONE, 0)], None,
            Accept(&[("rows_applied", 0), ("gaps", 0)])),
        case("accept-rows-before-full-skipped", ACCEPT, "rule 9", SUBSCRIBER,
            "rows naming an index before the first Full are skipped; after it, applied",
            vec![hs(0), rows(0, 0, S, 1), index(0, "full", S), rows(0, 1, S, 1)], None,
            Accept(&[("rows_skipped", 1), ("rows_applied", 1), ("index_entries", 1)])),
        case("accept-delta-before-full", ACCEPT, "rule 2, rule 9", SUBSCRIBER,
            "a Delta before any Full moves the state but is no Full: its rows are skipped",
            vec![hs(0), index(0, "delta", T), rows(0, 0, T, 1)], None,
            Accept(&[("rows_skipped", 1), ("rows_applied", 0)])),
        case("accept-state-mismatch-skipped", ACCEPT, "rule 9", SUBSCRIBER,
            "rows built against another state than the one held are skipped",
            vec![hs(0), index(0, "full", S), rows(0, 0, T, 2)], None,
            Accept(&[("rows_skipped", 2), ("rows_applied", 0)])),
        case("accept-delta-replaces-state", ACCEPT, "§5.1, rule 9", SUBSCRIBER,
            "a Delta replaces the held state: rows on the new state applied, on the old skipped",
            vec![hs(0), index(0, "full", S), index(0, "delta", T), rows(0, 0, T, 1),
                 rows(0, 1, S, 1)], None,
            Accept(&[("rows_applied", 1), ("rows_skipped", 1), ("index_entries", 2)])),
        case("accept-no-index-state-exempt", ACCEPT, "§8.7", SUBSCRIBER,
            "rows declaring NO_INDEX_STATE need no Full",
            vec![hs(0), rows(0, 0, NONE, 2)], None, Accept(&[("rows_applied", 2)])),
        case("accept-no-index-state-after-index", ACCEPT, "§8.7", SUBSCRIBER,
            "once an Index moved the state, rows declaring NO_INDEX_STATE are skipped",
            vec![hs(0), index(0, "full", S), rows(0, 0, NONE, 1)], None,
            Accept(&[("rows_skipped", 1), ("rows_applied", 0)])),
        case("accept-states-per-source", ACCEPT, "§5.1, rule 9", SUBSCRIBER,
            "each source holds its own state: rows are judged against their source's",
            vec![hs(0), hs(1), index(0, "full", S), index(1, "full", T), rows(0, 0, S, 1),
                 rows(1, 0, T, 1), rows(1, 1, S, 1)], None,
            Accept(&[("rows_applied", 2), ("rows_skipped", 1)])),
        case("accept-unknown-before-handshake", ACCEPT, "§7, rule 1", SUBSCRIBER,
            "an unknown kind names no source: skipped even before any handshake",
            vec![unknown(9, "ffffffff"), hs(0)], None,
            Accept(&[("unknown_skipped", 1), ("sources", 1)])),
    ]);
    cases
}

/// §1, §2: the preamble, the length and where a stream may end.
#[rustfmt::skip]
fn framing() -> Vec<Case> {
    use Damage::*;
    use Expect::*;
    let every_kind: Vec<String> = vec![
        r#"{"frame":"handshake","source":0,"uuid":"3f2b1c4d-0000-4000-8000-00000000abcd","labels":{"host":"a"},"metadata":{"encoder":"le-u32"},"clock_anchor_wall_ns":1700000000000000000,"complete":false}"#.into(),
        index(0, "full", S), rows(0, 0, S, 1), rows(0, 1, S, 0), segment(0), clock(0),
        update(0), unknown(9, "abcd"),
    ];
    let mut cut_in_length = Vec::new();
    for (name, n) in [("refuse-cut-in-length-1", 1), ("refuse-cut-in-length-2", 2),
                      ("refuse-cut-in-length-3", 3)] {
        let mut c = case(name, REFUSE, "§1, §2, §8.3", DECODE,
            "the stream ends inside the length prefix of its second frame",
            vec![hs(0), rows(0, 0, NONE, 0)], Cut(37 - n), Refuse(&["Truncated"], 2));
        c.dendro = Some(CUT_LENGTH);
        cut_in_length.push(c);
    }
    let mut cases = vec![
        case("accept-preamble-only", ACCEPT, "§2", DECODE,
            "a stream that is only the preamble: valid, with no frames",
            vec![], raw(&[]), Accept(&[("frames", 0)])),
        case("accept-every-kind", ACCEPT, "§4, §10", DECODE,
            "one frame of every kind, as PROTOCOL §10 gives them",
            every_kind, None, Accept(&[("frames", 8), ("unknown_skipped", 1), ("rows_applied", 1)])),
        case("accept-unknown-kinds", ACCEPT, "§2, §7", DECODE,
            "kinds 0, 7 and 255 are skipped by their length, not refused",
            vec![hs(0), unknown(0, ""), unknown(7, "00"), unknown(255, "ffff0000ffff"),
                 rows(0, 0, NONE, 1)], None,
            Accept(&[("unknown_skipped", 3), ("rows_applied", 1)])),
        case("refuse-empty-input", REFUSE, "§2", DECODE, "no bytes at all: not even a preamble",
            vec![], Raw(vec![]), Refuse(&["Truncated"], 0)),
        case("refuse-preamble-cut", REFUSE, "§2", DECODE, "13 of the preamble's 14 bytes",
            vec![], Raw(PREAMBLE[..13].to_vec()), Refuse(&["Truncated"], 0)),
        case("refuse-wrong-magic", REFUSE, "§2", DECODE, "one byte of the magic differs",
            vec![], Raw(b"dendro-replX\x01\x00".to_vec()), Refuse(&["NotADendroStream"], 0)),
        case("refuse-version-2", REFUSE, "§2", DECODE, "the preamble names version 2",
            vec![], Raw(b"dendro-repl\0\x02\x00".to_vec()), Refuse(&["UnsupportedVersion"], 0)),
        case("refuse-version-0", REFUSE, "§2", DECODE, "the preamble names version 0",
            vec![], Raw(b"dendro-repl\0\x00\x00".to_vec()), Refuse(&["UnsupportedVersion"], 0)),
        case("refuse-version-256", REFUSE, "§2, §3", DECODE,
            "version 256: the version's bytes read big-endian would say 1",
            vec![], Raw(b"dendro-repl\0\x00\x01".to_vec()), Refuse(&["UnsupportedVersion"], 0)),
        case("refuse-zero-length", REFUSE, "§2, §8.11", DECODE,
            "a frame length of 0 has no kind byte",
            vec![hs(0)], Append(vec![0, 0, 0, 0, 3]), Refuse(&["ZeroLength", "EndsEarly"], 2)),
        case("refuse-length-over-limit", REFUSE, "§2", DECODE,
            "a length of 64 MiB + 1, refused before its bytes are read",
            vec![hs(0)], Append(vec![1, 0, 0, 4, 3]), Refuse(&["FrameTooLarge"], 2)),
        case("refuse-length-max", REFUSE, "§2", DECODE, "a length of 2^32 - 1",
            vec![hs(0)], Append(vec![255; 5]), Refuse(&["FrameTooLarge"], 2)),
        case("refuse-length-at-limit-cut", REFUSE, "§1, §2", DECODE,
            "a length of exactly 64 MiB is allowed, so the stream is cut, not over the limit",
            vec![hs(0)], Append(vec![0, 0, 0, 4, 3]), Refuse(&["Truncated"], 2)),
        case("refuse-cut-after-length", REFUSE, "§1, §2", DECODE,
            "the stream ends after a whole length prefix",
            vec![hs(0), rows(0, 0, NONE, 0)], Cut(33), Refuse(&["Truncated"], 2)),
        case("refuse-cut-mid-payload", REFUSE, "§1, §2", DECODE,
            "the stream ends one byte before the end of its last frame",
            vec![hs(0), rows(0, 0, NONE, 1)], Cut(1), Refuse(&["Truncated"], 2)),
    ];
    cases.push(case("refuse-second-preamble", REFUSE, "§2", DECODE,
        "a second preamble after a frame: its magic read as a length over the limit",
        vec![hs(0)], Append(PREAMBLE.to_vec()), Refuse(&["FrameTooLarge"], 2)));
    cases.push(case("refuse-kind-byte-alone", REFUSE, "§2, §4.3", DECODE,
        "a Rows frame of length 1: its kind byte and no field",
        vec![hs(0)], Append(vec![1, 0, 0, 0, 3]), Refuse(&["EndsEarly"], 2)));
    cases.push(case("accept-unknown-kind-long", ACCEPT, "§7", DECODE,
        "an unknown kind with 4,000 bytes of payload, skipped whole",
        vec![hs(0), unknown(100, &"ab".repeat(4000)), rows(0, 0, NONE, 0)], None,
        Accept(&[("unknown_skipped", 1), ("frames", 3)])));
    let mut garbage = case("refuse-garbage-after-frames", REFUSE, "§2, §8.3", DECODE,
        "two bytes after the last whole frame: the start of a length, cut",
        vec![hs(0)], Append(vec![0x10, 0]), Refuse(&["Truncated"], 2));
    garbage.dendro = Some(CUT_LENGTH);
    cases.push(garbage);
    cases.extend(cut_in_length);
    cases
}

/// §3, §4: a field or a frame's payload that breaks a rule.
#[rustfmt::skip]
fn fields() -> Vec<Case> {
    use Damage::*;
    use Expect::*;
    let full = || vec![hs(0), index(0, "full", S)];
    vec![
        case("accept-absent-and-empty", ACCEPT, "§3, §4.4", DECODE,
            "an absent uuid and caller index beside empty ones, empty strings, maps and bytes",
            vec![
                r#"{"frame":"handshake","source":0,"uuid":null,"labels":{},"metadata":{"":""},"clock_anchor_wall_ns":0,"complete":false}"#.into(),
                r#"{"frame":"segment","source":0,"stream":"","rows":0,"first_ts":0,"last_ts":0,"bytes":"","caller_index":null}"#.into(),
                r#"{"frame":"segment","source":0,"stream":"","rows":0,"first_ts":0,"last_ts":0,"bytes":"","caller_index":""}"#.into(),
                r#"{"frame":"index","source":0,"stream":"","ts":0,"kind":"full","state":[0,0],"blob":""}"#.into(),
                r#"{"frame":"rows","source":0,"seq":0,"index_state":[0,0],"rows":[{"stream":"","ts":0,"wall_offset":0,"row":""}]}"#.into(),
            ], None, Accept(&[("segments", 2), ("index_entries", 1)])),
        case("accept-extremes", ACCEPT, "§3", DECODE,
            "the largest ordinal and seq, the smallest and largest i64 in every i64 field",
            vec![
                r#"{"frame":"handshake","source":4294967295,"uuid":"ffffffff-ffff-ffff-ffff-ffffffffffff","labels":{},"metadata":{},"clock_anchor_wall_ns":-9223372036854775808,"complete":true}"#.into(),
                r#"{"frame":"rows","source":4294967295,"seq":18446744073709551615,"index_state":[0,0],"rows":[{"stream":"s","ts":-9223372036854775808,"wall_offset":9223372036854775807,"row":"00"}]}"#.into(),
                r#"{"frame":"index","source":4294967295,"stream":"s","ts":9223372036854775807,"kind":"delta","state":[18446744073709551615,18446744073709551615],"blob":"ff"}"#.into(),
                r#"{"frame":"clock_offset","source":4294967295,"ts":-9223372036854775808,"offset_ns":9223372036854775807}"#.into(),
                r#"{"frame":"segment","source":4294967295,"stream":"s","rows":18446744073709551615,"first_ts":9223372036854775807,"last_ts":-9223372036854775808,"bytes":"00","caller_index":"ff"}"#.into(),
            ], None, Accept(&[("rows_applied", 1), ("clock_offsets", 1)])),
        case("accept-utf8-and-escapes", ACCEPT, "§3, §10", DECODE,
            "names in several scripts and with characters JSON escapes",
            vec![
                r#"{"frame":"handshake","source":0,"uuid":null,"labels":{"host":"wëb-01","ключ":"日本","q\"\\\n\t\u0001":"\u007f"},"metadata":{},"clock_anchor_wall_ns":0,"complete":false}"#.into(),
                r#"{"frame":"rows","source":0,"seq":0,"index_state":[0,0],"rows":[{"stream":"cpu/µs 🌡","ts":1,"wall_offset":0,"row":"00"}]}"#.into(),
            ], None, Accept(&[("rows_applied", 1)])),
        case("refuse-trailing-byte-clock-offset", REFUSE, "§2", DECODE,
            "a ClockOffset with one byte after its last field",
            vec![hs(0), clock(0)], Grow { frame: 2, bytes: vec![0] },
            Refuse(&["TrailingBytes"], 2)),
        case("refuse-trailing-bytes-rows", REFUSE, "§2, §4.3", DECODE,
            "a Rows frame with bytes after its last row",
            vec![hs(0), rows(0, 0, NONE, 1)], Grow { frame: 2, bytes: vec![0; 24] },
            Refuse(&["TrailingBytes"], 2)),
        case("refuse-clock-offset-short", REFUSE, "§4.5", DECODE,
            "a ClockOffset one byte short of its fields",
            vec![hs(0), clock(0)], Shrink { frame: 2 }, Refuse(&["EndsEarly"], 2)),
        case("refuse-bool-2", REFUSE, "§3, §4.1", DECODE, "a handshake's complete is 2",
            vec![hs(0)], Set { frame: 1, at: 26, byte: 2 }, Refuse(&["NotABool"], 1)),
        case("refuse-presence-byte-uuid", REFUSE, "§3, §4.1", DECODE,
            "a handshake's uuid presence byte is 2",
            vec![hs(0)], Set { frame: 1, at: 9, byte: 2 }, Refuse(&["NotAPresenceByte"], 1)),
        case("refuse-presence-byte-caller-index", REFUSE, "§3, §4.4", DECODE,
            "a segment's caller_index presence byte is 2",
            vec![hs(0), segment(0)], Set { frame: 2, at: 54, byte: 2 },
            Refuse(&["NotAPresenceByte"], 2)),
        case("refuse-index-kind-2", REFUSE, "§4.2", DECODE, "an Index kind byte of 2",
            full(), Set { frame: 2, at: 30, byte: 2 }, Refuse(&["NotAnIndexKind"], 2)),
        case("refuse-stream-not-utf8", REFUSE, "§3, §4.2", DECODE,
            "an Index stream name with a byte that is not UTF-8",
            full(), Set { frame: 2, at: 13, byte: 0xff }, Refuse(&["NotUtf8"], 2)),
        case("refuse-label-not-utf8", REFUSE, "§3, §4.1", DECODE,
            "a label value that is a lone continuation byte",
            vec![hs_full()], Set { frame: 1, at: 63, byte: 0x80 }, Refuse(&["NotUtf8"], 1)),
        case("refuse-string-past-end", REFUSE, "§3", DECODE,
            "a stream name whose length runs past the end of its frame",
            full(), Set { frame: 2, at: 12, byte: 1 }, Refuse(&["EndsEarly"], 2)),
        case("refuse-row-count-too-large", REFUSE, "§4.3, §8.11", DECODE,
            "a Rows count of 2^28 in a frame with room for none",
            vec![hs(0), rows(0, 0, NONE, 0)], Set { frame: 2, at: 36, byte: 0x10 },
            Refuse(&["CountTooLarge", "EndsEarly"], 2)),
        case("refuse-map-count-too-large", REFUSE, "§3, §8.11", DECODE,
            "a labels count of 2^24 + 2 in a frame with room for two",
            vec![hs_full()], Set { frame: 1, at: 53, byte: 1 },
            Refuse(&["CountTooLarge", "EndsEarly"], 1)),
        case("refuse-label-key-not-utf8", REFUSE, "§3, §4.1", DECODE,
            "a label key that is not UTF-8",
            vec![hs_full()], Set { frame: 1, at: 58, byte: 0xff }, Refuse(&["NotUtf8"], 1)),
        case("refuse-row-stream-not-utf8", REFUSE, "§3, §4.3", DECODE,
            "a row's stream name with a lead byte and no continuation",
            vec![hs(0), rows(0, 0, NONE, 1)], Set { frame: 2, at: 41, byte: 0xc3 },
            Refuse(&["NotUtf8"], 2)),
        case("accept-rows-span-streams", ACCEPT, "§4.3", DECODE,
            "one Rows frame with rows of three streams",
            vec![hs(0), r#"{"frame":"rows","source":0,"seq":0,"index_state":[0,0],"rows":[{"stream":"cpu/usage","ts":1,"wall_offset":0,"row":"01"},{"stream":"mem/free","ts":1,"wall_offset":0,"row":"02"},{"stream":"cpu/usage","ts":2,"wall_offset":5,"row":""}]}"#.into()],
            None, Accept(&[("rows_applied", 3)])),
        case("defined-uuid-empty", DEFINED, "§4.1, §8.2", DECODE,
            "a uuid present and empty, which dendro accepts",
            vec![], raw(&[&[27, 0, 0, 0, 1][..], &[0; 4], &[1], &[0; 21]].concat()),
            Refuse(&["NotACanonicalUuid"], 1)),
        case("defined-metadata-keys-out-of-order", DEFINED, "§3, §8.1", DECODE,
            "handshake metadata c = 1, b = 2, which dendro accepts",
            vec![r#"{"frame":"handshake","source":0,"uuid":null,"labels":{},"metadata":{"a":"1","b":"2"},"clock_anchor_wall_ns":0,"complete":false}"#.into()],
            Set { frame: 1, at: 22, byte: b'c' }, Refuse(&["KeysNotAscending"], 1)),
        case("defined-source-update-keys-out-of-order", DEFINED, "§4.6, §8.1", DECODE,
            "a SourceUpdate's labels c = 1, b = 2, which dendro accepts",
            vec![hs(0), r#"{"frame":"source_update","source":0,"ts":0,"labels":{"a":"1","b":"2"},"metadata":{}}"#.into()],
            Set { frame: 2, at: 25, byte: b'c' }, Refuse(&["KeysNotAscending"], 2)),
        case("defined-map-keys-out-of-order", DEFINED, "§3, §8.1", DECODE,
            "labels c = 1, b = 2: keys out of order, which dendro accepts",
            vec![hs_full()], Set { frame: 1, at: 58, byte: b'c' },
            Refuse(&["KeysNotAscending"], 1)),
        case("defined-map-key-repeated", DEFINED, "§3, §8.1", DECODE,
            "labels a = 1, a = 2: a repeated key, of which dendro keeps the last",
            vec![hs_full()], Set { frame: 1, at: 68, byte: b'a' },
            Refuse(&["KeysNotAscending"], 1)),
        case("defined-uuid-uppercase", DEFINED, "§4.1, §8.2", DECODE,
            "a uuid with upper-case hex digits, which dendro accepts",
            vec![hs_full()], Set { frame: 1, at: 46, byte: b'A' },
            Refuse(&["NotACanonicalUuid"], 1)),
        case("defined-uuid-not-hyphenated", DEFINED, "§4.1, §8.2", DECODE,
            "a uuid with an x where a hyphen goes, which dendro accepts",
            vec![hs_full()], Set { frame: 1, at: 22, byte: b'x' },
            Refuse(&["NotACanonicalUuid"], 1)),
    ]
}
