//! Link with cortex-m-rt's `link.x`, and put `memory.x` where the linker
//! finds it: `link.x` includes it by name. Given here rather than in
//! `.cargo/config.toml` so that a `RUSTFLAGS` in the environment, which
//! replaces the config's, cannot drop it.

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::copy("memory.x", out.join("memory.x")).expect("memory.x beside Cargo.toml");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=build.rs");
}
