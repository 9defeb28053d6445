//! Test code the workspace's crates share, in one place, so that moving a
//! helper moves it for every crate that uses it: the core's, the std
//! crate's and the tool's tests, and the fuzz targets take this crate as a
//! dev-dependency; the benches crate as a dependency, for the streams its
//! soak tool sends. It is never published.
//!
//! Each test crate turns on what it needs, so the core's tests build
//! neither the std crate nor rcgen: `dendro` (`dendro_map`, `gen`),
//! `streams` (`streams`), `certs` (`certs`), `peers` (`peers`). The rest is
//! always there.
//!
//! Only integration tests may use it: a `src/` unit test is built with a
//! second copy of its crate, whose types are not this crate's.

pub mod attribution;
pub mod chunked;
// `GlobalAlloc` is an unsafe trait: this crate's one unsafe.
#[allow(unsafe_code)]
pub mod counting;
pub mod fairness;
pub mod fixtures;
pub mod grow;
pub mod process;
pub mod scratch;
pub mod xorshift;

#[cfg(feature = "certs")]
pub mod certs;
#[cfg(feature = "dendro")]
pub mod dendro_map;
#[cfg(feature = "dendro")]
pub mod gen;
#[cfg(feature = "peers")]
pub mod peers;
#[cfg(feature = "streams")]
pub mod streams;
