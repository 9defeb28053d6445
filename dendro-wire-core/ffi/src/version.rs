//! Which library this is: its version, its ABI's, and the preamble every
//! stream starts with, so a program can check at run time that the
//! library it loaded is one the header it was built with describes.

/// The library's major version (its package's).
pub const DW_VERSION_MAJOR: u32 = 0;

/// The library's minor version.
pub const DW_VERSION_MINOR: u32 = 1;

/// The library's patch version.
pub const DW_VERSION_PATCH: u32 = 0;

/// The three in one number, `major << 16 | minor << 8 | patch`, as
/// `dw_version()` returns it (a literal, so every C tool reads it).
pub const DW_VERSION: u32 = 0x00_01_00;
const _: () =
    assert!(DW_VERSION == DW_VERSION_MAJOR << 16 | DW_VERSION_MINOR << 8 | DW_VERSION_PATCH);

/// The ABI's version: the number in the shared library's name for the
/// dynamic linker (`libdendro_wire.so.2`), raised whenever a program built
/// against an older header could misread this library (see the header's
/// preamble). `build.rs` reads it from here.
pub const DW_ABI_VERSION: u32 = 2;

const fn number(digits: &str) -> u32 {
    let (bytes, mut n, mut i) = (digits.as_bytes(), 0, 0);
    while i < bytes.len() {
        n = n * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    n
}

// The header's numbers are the package's.
const _: () = assert!(DW_VERSION_MAJOR == number(env!("CARGO_PKG_VERSION_MAJOR")));
const _: () = assert!(DW_VERSION_MINOR == number(env!("CARGO_PKG_VERSION_MINOR")));
const _: () = assert!(DW_VERSION_PATCH == number(env!("CARGO_PKG_VERSION_PATCH")));

/// This library's `DW_VERSION`: compare it with the header's to know the
/// library loaded is the one built against (the major and, before 1.0,
/// the minor must match).
#[no_mangle]
pub extern "C" fn dw_version() -> u32 {
    DW_VERSION
}

/// This library's `DW_ABI_VERSION`.
#[no_mangle]
pub extern "C" fn dw_abi_version() -> u32 {
    DW_ABI_VERSION
}
