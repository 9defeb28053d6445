//! The shared library's name for the dynamic linker and what it exports:
//! `libdendro_wire.so.N`, N the ABI version written once, in
//! `src/version.rs`; libc as what it needs (`memcpy` and its kin).

use std::env;
use std::fs;

fn main() {
    println!("cargo:rerun-if-changed=src/version.rs");
    let version = fs::read_to_string("src/version.rs").expect("src/version.rs is readable");
    let abi = version
        .lines()
        .find_map(|l| l.strip_prefix("pub const DW_ABI_VERSION: u32 = "))
        .and_then(|n| n.strip_suffix(';'))
        .expect("src/version.rs declares DW_ABI_VERSION");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdendro_wire.so.{abi}");
        // A `no_std` build links no libc by default; the library's few
        // calls into it are named as a dependency, as a C library's are.
        println!("cargo:rustc-cdylib-link-arg=-lc");
    }
}
