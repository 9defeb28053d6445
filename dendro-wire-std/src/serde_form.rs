//! The JSON Lines forms of [protocol §10](dendro_wire_core::protocol) for the fields serde has no one way to
//! write: bytes as lowercase hex, an `opt<bytes>` that must be present
//! (`null` when absent), the index kind as `"full"`/`"delta"`, and maps that
//! refuse a repeated key rather than keep the last.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serializer};

pub(crate) mod hex_form {
    use super::*;

    pub(crate) fn encode(bytes: &[u8]) -> String {
        hex::encode(bytes)
    }

    pub(crate) fn decode(s: &str) -> Result<Vec<u8>, String> {
        hex::decode(s).map_err(|e| match e {
            hex::FromHexError::OddLength => format!(
                "bad hex: an odd number of digits ({}) cannot be bytes",
                s.len()
            ),
            hex::FromHexError::InvalidHexCharacter { c, index } => {
                format!("bad hex: {c:?} at digit {index} is not a hex digit")
            }
            other => format!("bad hex: {other}"),
        })
    }

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(bytes))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        decode(&s).map_err(de::Error::custom)
    }
}

/// `opt<bytes>`: hex, or `null` for absent. Must be present: a missing key
/// is an error, not a guess that it was absent.
pub(crate) mod opt_hex {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(bytes) => hex_form::serialize(bytes, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        Option::<std::borrow::Cow<'de, str>>::deserialize(d)?
            .map(|s| hex_form::decode(&s).map_err(de::Error::custom))
            .transpose()
    }
}

/// An `Option<String>` that must be present (`null` for absent).
pub(crate) mod required {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(v),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Option::<String>::deserialize(d)
    }
}

pub(crate) mod index_kind {
    use super::*;
    use dendro_wire_core::IndexKind;

    pub(crate) fn serialize<S: Serializer>(k: &IndexKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match k {
            IndexKind::Full => "full",
            IndexKind::Delta => "delta",
        })
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<IndexKind, D::Error> {
        match &*<std::borrow::Cow<'de, str>>::deserialize(d)? {
            "full" => Ok(IndexKind::Full),
            "delta" => Ok(IndexKind::Delta),
            other => Err(de::Error::custom(format!(
                "{other:?} is not an index kind; it is \"full\" or \"delta\""
            ))),
        }
    }
}

/// A JSON object of strings; a repeated key is refused.
pub(crate) mod map {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        m: &BTreeMap<String, String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(m)
    }

    struct Strict;

    impl<'de> Visitor<'de> for Strict {
        type Value = BTreeMap<String, String>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of string values")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = access.next_entry::<String, String>()? {
                if out.contains_key(&k) {
                    return Err(de::Error::custom(format!("the key {k:?} appears twice")));
                }
                out.insert(k, v);
            }
            Ok(out)
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        d.deserialize_map(Strict)
    }
}
