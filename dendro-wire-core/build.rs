//! Whether the target moves unaligned words as cheaply as aligned ones
//! (`cfg(unaligned_words)`): the row path then copies a row and its
//! stream's name as whole words at any offset; on a core that cannot (a
//! Cortex-M0, a RISC-V without Zicclsm) each such word would be loaded and
//! stored a byte at a time, so rows go the general way, through `memcpy`,
//! which moves aligned words. And whether the row path keeps a source's
//! newest `ts` (`cfg(tracks_newest)`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(unaligned_words)");
    println!("cargo::rustc-check-cfg=cfg(tracks_newest)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=DENDRO_WIRE_WALK_NEWEST");
    // Whether the row path keeps a source's newest `ts` as it takes rows
    // (`cfg(tracks_newest)`): on a 64-bit core; on a 32-bit one the frame
    // is walked for it as it closes. DENDRO_WIRE_WALK_NEWEST set walks on
    // the host too, so that `cargo xtask ci` tests that way as well.
    let wide = std::env::var("CARGO_CFG_TARGET_POINTER_WIDTH").is_ok_and(|w| w == "64");
    if wide && std::env::var_os("DENDRO_WIRE_WALK_NEWEST").is_none() {
        println!("cargo::rustc-cfg=tracks_newest");
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let cheap = match arch.as_str() {
        "x86" | "x86_64" | "aarch64" | "powerpc64" | "s390x" => true,
        // ARMv7 and later, the M-profile's mainline included; not ARMv6-M
        // (Cortex-M0, M0+, M1) or ARMv8-M Baseline (Cortex-M23).
        "arm" => ["armv7", "thumbv7", "armv8", "thumbv8m.main", "aarch64"]
            .iter()
            .any(|prefix| target.starts_with(prefix)),
        _ => false,
    };
    if cheap {
        println!("cargo::rustc-cfg=unaligned_words");
    }
}
