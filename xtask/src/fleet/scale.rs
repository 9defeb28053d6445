//! What a fleet run is given: how large it is, and the programs it starts.
//! A leaf of `fleet`: `mod.rs` chooses them, `runs.rs` uses them.

use std::path::PathBuf;

/// How large each run is.
pub(super) struct Scale {
    pub(super) agents_a: usize,
    pub(super) seconds_a: f64,
    pub(super) seconds_over: f64,
    pub(super) agents_b: usize,
    pub(super) seconds_b: f64,
    /// When, into Run B, its first collector is stopped, and how long it
    /// stays down.
    pub(super) stop_b: f64,
    pub(super) down_b: f64,
    pub(super) agents_c: usize,
    pub(super) ramp_c: f64,
    pub(super) seconds_c: f64,
    pub(super) ceiling_rows: u64,
}

impl Scale {
    pub(super) fn full() -> Scale {
        Scale {
            agents_a: 10_000,
            seconds_a: 60.0,
            seconds_over: 30.0,
            agents_b: 2_000,
            seconds_b: 40.0,
            stop_b: 15.0,
            down_b: 5.0,
            agents_c: 10_000,
            ramp_c: 10.0,
            seconds_c: 30.0,
            ceiling_rows: 2 << 20,
        }
    }

    pub(super) fn quick() -> Scale {
        Scale {
            agents_a: 500,
            seconds_a: 10.0,
            seconds_over: 8.0,
            agents_b: 200,
            seconds_b: 16.0,
            stop_b: 5.0,
            down_b: 3.0,
            agents_c: 1_000,
            ramp_c: 2.0,
            seconds_c: 8.0,
            ceiling_rows: 1 << 18,
        }
    }
}

/// The programs a run starts.
pub(super) struct Tools {
    pub(super) listener: PathBuf,
    pub(super) fleet: PathBuf,
}
