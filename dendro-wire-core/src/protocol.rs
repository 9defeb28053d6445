//! The wire protocol and its rules, in this project's words: framing, every
//! frame kind's layout with its byte offsets, the protocol's rules 1 to 9,
//! where this project is stricter than dendro 0.6.1 or adds to it, the
//! index blob this project's publisher writes, and the JSON Lines form of a
//! stream. Complete enough to build a peer from; the same text is
//! `docs/PROTOCOL.md` in the repository, and every "§4.3" or "rule 6" in
//! these docs points here.
//!
#![doc = include_str!("../PROTOCOL.md")]
