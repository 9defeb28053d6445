//! A `CallError` into the `dw_error` C reads, and back: each error the
//! core can return, taken into a `dw_error`'s plain integers and made
//! again from them, so the sentence C asks for later is the core's own
//! `Display` of the very same value.

use core::mem::MaybeUninit;

use dendro_wire_core::{Error, ProtocolError, PublishError, Rule, Truncated};

use super::{
    dw_error, dw_field, dw_invalid, dw_protocol_error, dw_publish_error, dw_result, dw_rule,
    dw_truncated, At, CallError, FIELDS,
};

impl CallError {
    /// The C form, written into `slot`: out of line, the fields every
    /// failure has written once, then its family's own.
    #[inline(never)]
    pub(crate) fn write_c(self, slot: &mut MaybeUninit<dw_error>) {
        let e = blank(slot, self.result());
        match self {
            CallError::Null(at) => (e.reason, e.item) = (at.param_value(), at.item_value()),
            CallError::MessageTooLong => {}
            CallError::Invalid(why) => e.reason = why as u32,
            CallError::Arg(why, at) => {
                (e.reason, e.item) = (why as u32, at.item_value());
                e.values[0] = u64::from(at.param_value());
            }
            CallError::Bound(why, values) => (e.reason, e.values) = (why as u32, values),
            CallError::Truncated(cut) => {
                e.reason = match cut.in_preamble {
                    true => dw_truncated::DW_TRUNCATED_PREAMBLE as u32,
                    false => dw_truncated::DW_TRUNCATED_FRAME as u32,
                };
                e.values = [cut.have as u64, cut.needed as u64, 0, 0];
            }
            CallError::Wire(wire) => wire_parts(wire, e),
            CallError::Protocol(p) => {
                let (reason, values) = protocol_parts(p);
                (e.reason, e.values) = (reason as u32, widen(values));
            }
            CallError::Publish(PublishError::Encode(wire)) => {
                e.reason = dw_publish_error::DW_PUBLISH_ENCODE as u32;
                wire_parts(wire, e);
            }
            CallError::Publish(p) => {
                let (reason, values) = publish_parts(p);
                (e.reason, e.values) = (reason as u32, widen(values));
            }
        }
    }

    /// The failure a `dw_error` describes, if the library could have
    /// written it.
    pub(crate) fn from_c(e: &dw_error) -> Option<CallError> {
        let wire = || wire_from(e);
        Some(match e.result {
            r if r == dw_result::DW_RESULT_NULL_PARAMETER as u32 => {
                CallError::Null(At::from_c(e.reason.into(), e.item))
            }
            r if r == dw_result::DW_RESULT_INVALID_ARGUMENT as u32 => {
                match invalid_from(e.reason)? {
                    why if CallError::has_values(why) => CallError::Bound(why, e.values),
                    why if CallError::names_param(why) => {
                        CallError::Arg(why, At::from_c(e.values[0], e.item))
                    }
                    why => CallError::Invalid(why),
                }
            }
            r if r == dw_result::DW_RESULT_TRUNCATED as u32 => CallError::Truncated(Truncated {
                in_preamble: match e.reason {
                    r if r == dw_truncated::DW_TRUNCATED_FRAME as u32 => false,
                    r if r == dw_truncated::DW_TRUNCATED_PREAMBLE as u32 => true,
                    _ => return None,
                },
                have: usize::try_from(e.values[0]).ok()?,
                needed: usize::try_from(e.values[1]).ok()?,
            }),
            r if r == dw_result::DW_RESULT_MALFORMED as u32 => CallError::Wire(wire()?),
            r if r == dw_result::DW_RESULT_PROTOCOL_ERROR as u32 => {
                CallError::Protocol(protocol_from(e.reason, Values(e.values))?)
            }
            r if r == dw_result::DW_RESULT_REFUSED as u32
                || (r == dw_result::DW_RESULT_BUFFER_TOO_SMALL as u32 && e.reason != 0) =>
            {
                if e.reason == dw_publish_error::DW_PUBLISH_ENCODE as u32 {
                    CallError::Publish(PublishError::Encode(wire()?))
                } else {
                    CallError::Publish(publish_from(e.reason, Values(e.values))?)
                }
            }
            r if r == dw_result::DW_RESULT_BUFFER_TOO_SMALL as u32 => CallError::MessageTooLong,
            _ => return None,
        })
    }

    /// Whether a refusal for `why` names the parameter refused
    /// (`CallError::Arg`).
    fn names_param(why: dw_invalid) -> bool {
        use dw_invalid::*;
        matches!(
            why,
            DW_INVALID_MISALIGNED | DW_INVALID_TOO_LONG | DW_INVALID_NOT_UTF8 | DW_INVALID_TOO_MANY
        )
    }

    /// Whether a refusal for `why` carries numbers (`CallError::Bound`).
    fn has_values(why: dw_invalid) -> bool {
        use dw_invalid::*;
        matches!(
            why,
            DW_INVALID_STORAGE_TOO_SMALL
                | DW_INVALID_SOURCE_LIMIT
                | DW_INVALID_FULL_EVERY
                | DW_INVALID_FRAME_BUFFER
                | DW_INVALID_NOT_CUT
                | DW_INVALID_CAPACITY
        )
    }
}

/// A `dw_error` that says `result` and nothing more, in `slot`.
fn blank(slot: &mut MaybeUninit<dw_error>, result: dw_result) -> &mut dw_error {
    slot.write(dw_error {
        result: result as u32,
        reason: 0,
        rule: dw_rule::DW_RULE_NONE as u32,
        field: dw_field::DW_FIELD_NONE as u32,
        offset: 0,
        item: -1,
        frame_kind: -1,
        encoding: 0,
        values: [0; 4],
    })
}

fn wire_parts(wire: Error, e: &mut dw_error) {
    let (rule, values) = rule_parts(wire.rule());
    e.rule = rule as u32;
    e.values = widen(values);
    e.field = FIELDS
        .iter()
        .position(|f| *f == wire.field())
        .map_or(dw_field::DW_FIELD_OTHER as u32, |i| i as u32 + 1);
    e.offset = wire.offset() as u64;
    e.item = wire.item().map_or(-1, i64::from);
    e.frame_kind = wire.frame_kind().map_or(-1, i32::from);
    e.encoding = u32::from(wire.is_encoding());
}

fn wire_from(e: &dw_error) -> Option<Error> {
    let field = *FIELDS.get((e.field as usize).checked_sub(1)?)?;
    let item = match e.item {
        -1 => None,
        item => Some(u32::try_from(item).ok()?),
    };
    let frame_kind = match e.frame_kind {
        -1 => None,
        kind => Some(u8::try_from(kind).ok()?),
    };
    let encoding = match e.encoding {
        0 => false,
        1 => true,
        _ => return None,
    };
    Some(Error::from_parts(
        rule_from(e.rule, Values(e.values))?,
        field,
        usize::try_from(e.offset).ok()?,
        frame_kind,
        item,
        encoding,
    ))
}

/// A number the core keeps as a `u32`, among the `usize`s of an error's
/// numbers: no wider than a `usize` on any target the crate builds for.
fn w(v: u32) -> usize {
    v as usize
}

const _: () = assert!(usize::BITS >= u32::BITS);

/// An error's numbers, each a `usize` at most, as `dw_error` holds them:
/// widened once, here, rather than in each error's arm.
fn widen(values: [usize; 4]) -> [u64; 4] {
    values.map(|v| v as u64)
}

/// A `dw_error`'s values, each read back as the type its field has in the
/// core: `None` for one out of that type's range, which C wrote.
struct Values([u64; 4]);

impl Values {
    fn size(&self, i: usize) -> Option<usize> {
        usize::try_from(self.0[i]).ok()
    }

    fn word(&self, i: usize) -> Option<u32> {
        u32::try_from(self.0[i]).ok()
    }

    fn byte(&self, i: usize) -> Option<u8> {
        u8::try_from(self.0[i]).ok()
    }
}

fn rule_parts(rule: Rule) -> (dw_rule, [usize; 4]) {
    use dw_rule::*;
    match rule {
        Rule::NotADendroStream => (DW_RULE_NOT_A_DENDRO_STREAM, [0; 4]),
        Rule::UnsupportedVersion { version } => {
            (DW_RULE_UNSUPPORTED_VERSION, [version.into(), 0, 0, 0])
        }
        Rule::ZeroLength => (DW_RULE_ZERO_LENGTH, [0; 4]),
        Rule::FrameTooLarge { len, limit } => (DW_RULE_FRAME_TOO_LARGE, [len, w(limit), 0, 0]),
        Rule::EndsEarly { needed, left } => (DW_RULE_ENDS_EARLY, [needed, left, 0, 0]),
        Rule::NotABool { value } => (DW_RULE_NOT_A_BOOL, [value.into(), 0, 0, 0]),
        Rule::NotAPresenceByte { value } => (DW_RULE_NOT_A_PRESENCE_BYTE, [value.into(), 0, 0, 0]),
        Rule::NotAnIndexKind { value } => (DW_RULE_NOT_AN_INDEX_KIND, [value.into(), 0, 0, 0]),
        Rule::NotUtf8 => (DW_RULE_NOT_UTF8, [0; 4]),
        Rule::NotACanonicalUuid => (DW_RULE_NOT_A_CANONICAL_UUID, [0; 4]),
        Rule::KeysNotAscending => (DW_RULE_KEYS_NOT_ASCENDING, [0; 4]),
        Rule::CountTooLarge { count, left } => (DW_RULE_COUNT_TOO_LARGE, [w(count), left, 0, 0]),
        Rule::TrailingBytes { count } => (DW_RULE_TRAILING_BYTES, [count, 0, 0, 0]),
        Rule::KnownKindAsUnknown => (DW_RULE_KNOWN_KIND_AS_UNKNOWN, [0; 4]),
        Rule::BufferTooSmall { needed, have } => (DW_RULE_BUFFER_TOO_SMALL, [needed, have, 0, 0]),
        _ => (DW_RULE_OTHER, [0; 4]),
    }
}

fn rule_from(rule: u32, v: Values) -> Option<Rule> {
    use dw_rule::*;
    Some(match rule {
        r if r == DW_RULE_NOT_A_DENDRO_STREAM as u32 => Rule::NotADendroStream,
        r if r == DW_RULE_UNSUPPORTED_VERSION as u32 => Rule::UnsupportedVersion {
            version: u16::try_from(v.0[0]).ok()?,
        },
        r if r == DW_RULE_ZERO_LENGTH as u32 => Rule::ZeroLength,
        r if r == DW_RULE_FRAME_TOO_LARGE as u32 => Rule::FrameTooLarge {
            len: v.size(0)?,
            limit: v.word(1)?,
        },
        r if r == DW_RULE_ENDS_EARLY as u32 => Rule::EndsEarly {
            needed: v.size(0)?,
            left: v.size(1)?,
        },
        r if r == DW_RULE_NOT_A_BOOL as u32 => Rule::NotABool { value: v.byte(0)? },
        r if r == DW_RULE_NOT_A_PRESENCE_BYTE as u32 => {
            Rule::NotAPresenceByte { value: v.byte(0)? }
        }
        r if r == DW_RULE_NOT_AN_INDEX_KIND as u32 => Rule::NotAnIndexKind { value: v.byte(0)? },
        r if r == DW_RULE_NOT_UTF8 as u32 => Rule::NotUtf8,
        r if r == DW_RULE_NOT_A_CANONICAL_UUID as u32 => Rule::NotACanonicalUuid,
        r if r == DW_RULE_KEYS_NOT_ASCENDING as u32 => Rule::KeysNotAscending,
        r if r == DW_RULE_COUNT_TOO_LARGE as u32 => Rule::CountTooLarge {
            count: v.word(0)?,
            left: v.size(1)?,
        },
        r if r == DW_RULE_TRAILING_BYTES as u32 => Rule::TrailingBytes { count: v.size(0)? },
        r if r == DW_RULE_KNOWN_KIND_AS_UNKNOWN as u32 => Rule::KnownKindAsUnknown,
        r if r == DW_RULE_BUFFER_TOO_SMALL as u32 => Rule::BufferTooSmall {
            needed: v.size(0)?,
            have: v.size(1)?,
        },
        _ => return None,
    })
}

fn protocol_parts(p: ProtocolError) -> (dw_protocol_error, [usize; 4]) {
    use dw_protocol_error::*;
    match p {
        ProtocolError::UnknownSource { source, kind } => {
            (DW_PROTOCOL_UNKNOWN_SOURCE, [w(source), kind.into(), 0, 0])
        }
        ProtocolError::DuplicateHandshake { source } => {
            (DW_PROTOCOL_DUPLICATE_HANDSHAKE, [w(source), 0, 0, 0])
        }
        ProtocolError::TooManySources { limit } => (DW_PROTOCOL_TOO_MANY_SOURCES, [limit, 0, 0, 0]),
        _ => (DW_PROTOCOL_OTHER, [0; 4]),
    }
}

fn protocol_from(reason: u32, v: Values) -> Option<ProtocolError> {
    use dw_protocol_error::*;
    Some(match reason {
        r if r == DW_PROTOCOL_UNKNOWN_SOURCE as u32 => ProtocolError::UnknownSource {
            source: v.word(0)?,
            kind: v.byte(1)?,
        },
        r if r == DW_PROTOCOL_DUPLICATE_HANDSHAKE as u32 => {
            ProtocolError::DuplicateHandshake { source: v.word(0)? }
        }
        r if r == DW_PROTOCOL_TOO_MANY_SOURCES as u32 => {
            ProtocolError::TooManySources { limit: v.size(0)? }
        }
        _ => return None,
    })
}

fn publish_parts(p: PublishError) -> (dw_publish_error, [usize; 4]) {
    use dw_publish_error::*;
    match p {
        PublishError::TooManySources { limit } => (DW_PUBLISH_TOO_MANY_SOURCES, [limit, 0, 0, 0]),
        PublishError::UnknownSource { source } => (DW_PUBLISH_UNKNOWN_SOURCE, [w(source), 0, 0, 0]),
        PublishError::UnknownStream { source, stream } => {
            (DW_PUBLISH_UNKNOWN_STREAM, [w(source), w(stream), 0, 0])
        }
        PublishError::DuplicateStream { source, stream } => {
            (DW_PUBLISH_DUPLICATE_STREAM, [w(source), w(stream), 0, 0])
        }
        PublishError::OtherSource {
            source,
            stream_source,
        } => (DW_PUBLISH_OTHER_SOURCE, [w(source), w(stream_source), 0, 0]),
        PublishError::NoIndex { source } => (DW_PUBLISH_NO_INDEX, [w(source), 0, 0, 0]),
        PublishError::NotHandshaken { source, kind } => {
            (DW_PUBLISH_NOT_HANDSHAKEN, [w(source), kind.into(), 0, 0])
        }
        PublishError::NotPassthrough { kind } => {
            (DW_PUBLISH_NOT_PASSTHROUGH, [kind.into(), 0, 0, 0])
        }
        PublishError::FrameTooLarge {
            source,
            kind,
            needed,
            limit,
        } => (
            DW_PUBLISH_FRAME_TOO_LARGE,
            [w(source), kind.into(), needed, limit],
        ),
        PublishError::StorageFull {
            source,
            needed,
            have,
        } => (DW_PUBLISH_STORAGE_FULL, [w(source), needed, have, 0]),
        PublishError::StorageShrank { source } => (DW_PUBLISH_STORAGE_SHRANK, [w(source), 0, 0, 0]),
        PublishError::BufferTooSmall { needed, have } => {
            (DW_PUBLISH_BUFFER_TOO_SMALL, [needed, have, 0, 0])
        }
        PublishError::Encode(_) => (DW_PUBLISH_ENCODE, [0; 4]),
        PublishError::NotAfterSlotChange { source } => {
            (DW_PUBLISH_NOT_AFTER_SLOT_CHANGE, [w(source), 0, 0, 0])
        }
        _ => (DW_PUBLISH_OTHER, [0; 4]),
    }
}

fn publish_from(reason: u32, v: Values) -> Option<PublishError> {
    use dw_publish_error::*;
    Some(match reason {
        r if r == DW_PUBLISH_TOO_MANY_SOURCES as u32 => {
            PublishError::TooManySources { limit: v.size(0)? }
        }
        r if r == DW_PUBLISH_UNKNOWN_SOURCE as u32 => {
            PublishError::UnknownSource { source: v.word(0)? }
        }
        r if r == DW_PUBLISH_UNKNOWN_STREAM as u32 => PublishError::UnknownStream {
            source: v.word(0)?,
            stream: v.word(1)?,
        },
        r if r == DW_PUBLISH_DUPLICATE_STREAM as u32 => PublishError::DuplicateStream {
            source: v.word(0)?,
            stream: v.word(1)?,
        },
        r if r == DW_PUBLISH_OTHER_SOURCE as u32 => PublishError::OtherSource {
            source: v.word(0)?,
            stream_source: v.word(1)?,
        },
        r if r == DW_PUBLISH_NO_INDEX as u32 => PublishError::NoIndex { source: v.word(0)? },
        r if r == DW_PUBLISH_NOT_HANDSHAKEN as u32 => PublishError::NotHandshaken {
            source: v.word(0)?,
            kind: v.byte(1)?,
        },
        r if r == DW_PUBLISH_NOT_PASSTHROUGH as u32 => {
            PublishError::NotPassthrough { kind: v.byte(0)? }
        }
        r if r == DW_PUBLISH_FRAME_TOO_LARGE as u32 => PublishError::FrameTooLarge {
            source: v.word(0)?,
            kind: v.byte(1)?,
            needed: v.size(2)?,
            limit: v.size(3)?,
        },
        r if r == DW_PUBLISH_STORAGE_FULL as u32 => PublishError::StorageFull {
            source: v.word(0)?,
            needed: v.size(1)?,
            have: v.size(2)?,
        },
        r if r == DW_PUBLISH_STORAGE_SHRANK as u32 => {
            PublishError::StorageShrank { source: v.word(0)? }
        }
        r if r == DW_PUBLISH_NOT_AFTER_SLOT_CHANGE as u32 => {
            PublishError::NotAfterSlotChange { source: v.word(0)? }
        }
        r if r == DW_PUBLISH_BUFFER_TOO_SMALL as u32 => PublishError::BufferTooSmall {
            needed: v.size(0)?,
            have: v.size(1)?,
        },
        _ => return None,
    })
}

fn invalid_from(reason: u32) -> Option<dw_invalid> {
    use dw_invalid::*;
    [
        DW_INVALID_NONE,
        DW_INVALID_MISALIGNED,
        DW_INVALID_TOO_LONG,
        DW_INVALID_NOT_UTF8,
        DW_INVALID_STORAGE_TOO_SMALL,
        DW_INVALID_NOT_A_HANDLE,
        DW_INVALID_OVERLAP,
        DW_INVALID_TOO_MANY,
        DW_INVALID_CURSOR,
        DW_INVALID_VALUE,
        DW_INVALID_MOVED,
        DW_INVALID_SOURCE_LIMIT,
        DW_INVALID_FULL_EVERY,
        DW_INVALID_FRAME_BUFFER,
        DW_INVALID_NOT_CUT,
        DW_INVALID_CAPACITY,
    ]
    .into_iter()
    .find(|i| *i as u32 == reason)
}
