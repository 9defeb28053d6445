//! Benchmarks (see issue tracker): not yet written.
