//! Link with the runtime's linker script (cortex-m-rt's or riscv-rt's
//! `link.x`), and put the target's memory map, as `memory.x`, where the
//! linker finds it: `link.x` includes it by name. Given here rather than in
//! `.cargo/config.toml` so that a `RUSTFLAGS` in the environment, which
//! replaces the config's, cannot drop it.
//!
//! One board per target, each a QEMU machine: thumbv7m the lm3s6965evb
//! (Cortex-M3), thumbv6m the micro:bit (nRF51822, Cortex-M0), riscv32imc the
//! sifive_e (FE310).

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let memory = match target.as_str() {
        "thumbv7m-none-eabi" => "memory/lm3s6965.x",
        "thumbv6m-none-eabi" => "memory/nrf51822.x",
        "riscv32imc-unknown-none-elf" => "memory/fe310.x",
        other => panic!("no board for {other}: thumbv7m, thumbv6m or riscv32imc"),
    };
    std::fs::copy(memory, out.join("memory.x")).expect("the memory map beside Cargo.toml");
    if target.starts_with("thumb") {
        // cortex-m-rt's `device` feature includes `device.x`: the interrupt
        // handlers' names, of which these programs declare none.
        std::fs::write(out.join("device.x"), "").expect("OUT_DIR is writable");
    }
    // `src/mem.rs`: memcpy, memset and memmove built for size, for each
    // Arm core.
    println!("cargo::rustc-check-cfg=cfg(size_built_mem, values(\"armv6m\", \"armv7m\"))");
    match target.as_str() {
        "thumbv6m-none-eabi" => println!("cargo::rustc-cfg=size_built_mem=\"armv6m\""),
        "thumbv7m-none-eabi" => println!("cargo::rustc-cfg=size_built_mem=\"armv7m\""),
        _ => {}
    }
    println!("cargo:rustc-link-search={}", out.display());
    if target.starts_with("riscv") {
        // riscv-rt's `link.x` takes the memory map as a script of its own,
        // given first.
        println!("cargo:rustc-link-arg-bins=-Tmemory.x");
    }
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
    println!("cargo:rerun-if-changed=memory");
    println!("cargo:rerun-if-changed=build.rs");
}
