//! std front ends for `dendro-wire-core`.
