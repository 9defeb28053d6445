//! The agent's sources, declared at build time, and the most each is
//! given in an interval, which sizes its storage (`publish.rs`).

use dendro_wire_core::{Budget, Map, Sizing, SourceDecl};

/// The sources this agent declares.
pub const SOURCES: usize = 2;

/// The sources' clock anchor, and the time of the first interval.
pub const START_NS: i64 = 1_764_672_000_000_000_000;

/// The rows' encoder, as a subscriber's archive checks it.
const ENCODER: &str = "sensor-7-raw-v1";

/// Each source's place in [`DECLARED`] and in the publisher's sources.
pub const ADC: usize = 0;
pub const POWER: usize = 1;

/// The sources, declared at build time: a `static`, so that no use
/// builds the table on the stack.
pub static DECLARED: [SourceDecl<'static>; SOURCES] = [ADC_DECL, POWER_DECL];
const ADC_DECL: SourceDecl<'static> = SourceDecl {
    uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332211"),
    labels: Map::from_pairs(&[("device", "sensor-7"), ("source", "adc")]),
    metadata: Map::from_pairs(&[("encoder", ENCODER)]),
    clock_anchor_wall_ns: START_NS,
    complete: false,
    streams: &["adc/ch0", "adc/ch1", "adc/ch2"],
    index_stream: Some("adc/channels"),
};
const POWER_DECL: SourceDecl<'static> = SourceDecl {
    uuid: Some("0b5e2c1a-7d43-4f6e-9a10-3c2b1d0e4f5b"),
    labels: Map::from_pairs(&[("device", "sensor-7"), ("source", "power")]),
    metadata: Map::from_pairs(&[("encoder", ENCODER)]),
    clock_anchor_wall_ns: START_NS,
    complete: false,
    streams: &["power/temp", "power/vbat"],
    index_stream: None,
};

/// The most each source is given in an interval: the ADC's three channels
/// of 8 bytes, its four channel slots (a gain of up to 9 bytes, key and
/// value) one changed at a time; the power source's two readings of 2.
pub const ADC_SIZE: Sizing = ADC_DECL.sizing(&Budget::rows(8, 3).with_slots(4, 9, 1));
pub const POWER_SIZE: Sizing = POWER_DECL.sizing(&Budget::rows(2, 2));
