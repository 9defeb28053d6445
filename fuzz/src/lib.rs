//! Fuzz targets for dendro-wire, written with bolero in `tests/targets.rs`.
//!
//! Under `cargo test` each target is a property test over random inputs,
//! bounded in iterations so the suite stays fast. `cargo xtask fuzz --target
//! NAME --seconds N` runs one coverage-guided, with bolero's libFuzzer engine
//! on the nightly toolchain, starting from the committed corpus in
//! `tests/__fuzz__/`.
