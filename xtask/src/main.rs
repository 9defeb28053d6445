//! `cargo xtask`: the project's own commands, in Rust so they run wherever
//! cargo does.
//!
//! - `cargo xtask ci`: everything CI checks — formatting, clippy with
//!   warnings denied, every test, the no_std proof, and rustdoc with warnings
//!   denied.
//! - `cargo xtask no-std`: prove dendro-wire-core builds with neither std nor
//!   alloc (see `xtask/no-std-check`).
//! - `cargo xtask firmware`: build the agent, the decoder and a plain
//!   source in `xtask/firmware` for three families and the network agent
//!   for the Cortex-M3, run them under QEMU (the network agent into a live
//!   collector in a namespace of its own), check what they wrote and
//!   counted with `dendro-wire check`, and print their footprint (see
//!   `firmware.rs`, `qemu.rs`, `net.rs`, `footprint.rs`); then the C agent
//!   (`c_firmware.rs`).
//! - `cargo xtask c`: the C API proved from C (see `c.rs`).
//! - `cargo xtask conformance`: the conformance suite over the tool, the C
//!   API, the Python package and dendro 0.6.1 (see `conformance.rs`).
//! - `cargo xtask wireshark`: the Wireshark dissector held to `dendro-wire
//!   dump --json` and `check --json` under tshark (see `dissector.rs`).

mod bench_report;
mod book;
mod c;
mod c_build;
mod c_firmware;
mod c_install;
mod ci;
mod conformance;
mod conformance_cases;
mod conformance_damaged;
mod conformance_write;
mod dissector;
mod dissector_live;
mod firmware;
mod fleet;
mod footprint;
mod fuzz;
mod json;
mod metrics;
mod net;
mod pcap;
mod python;
mod qemu;
mod setup;
mod soak;
mod steps;
mod toolchains;
mod tshark;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci::ci(),
        Some("no-std") => ci::no_std(),
        Some("firmware") => firmware::run().and_then(|()| c_firmware::run()),
        Some("c-firmware") => c_firmware::run(),
        Some("c") => c::run(&args[1..]),
        Some("python") => python::run(),
        Some("book") => book::run(),
        Some("conformance") => conformance::run(&args[1..]),
        Some("bench-report") => bench_report::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("fleet") => fleet::run_fleet(&args[1..]),
        Some("metrics") => steps::release_tool().and_then(|tool| metrics::run_metrics(&tool)),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("wireshark") => setup::ensure("wireshark", &[setup::WIRESHARK])
            .and_then(|()| steps::release_tool())
            .and_then(|tool| dissector::run(&tool)),
        Some("-h" | "--help" | "help") | None => {
            print!("{USAGE}");
            return if args.is_empty() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci       formatting, unsafe only in the C boundary, clippy (-D warnings), all tests
           (the archive feature's too), no-std, firmware, c, python, conformance, metrics,
           wireshark, book, rustdoc (-D warnings)
  no-std   build a no_std, no_main program over dendro-wire-core with no allocator
  firmware build the agent, decoder and plain (xtask/firmware) for thumbv7m, thumbv6m and
           riscv32imc and run them under QEMU (lm3s6965evb, microbit, sifive_e),
           check the agent's streams (target/firmware/<target>/connection-N.dwr)
           and the decoder's counts with dendro-wire check, apply the streams
           with dendro's Subscriber; run the network agent over TCP into a live
           dendro-wire listen in a network namespace, shaped and restarted
           (target/firmware/net/); count observe's instructions per row
           (-icount); print every program's footprint
           then the C agent (dendro-wire-core/ffi/examples/firmware, arm-none-eabi-gcc)
           for thumbv7m under QEMU, its streams (target/firmware/c/) the Rust agent's
           bytes exactly
  c-firmware
           the C agent alone, against the Rust agent's streams and footprint of the
           last `firmware` run
  c [--update-header | --install PREFIX]
           the C API (dendro-wire-core/ffi): the headers regenerated with cbindgen and
           compared with the committed ones (or written); the library installed under
           target/c/prefix (or PREFIX, and nothing else) with pkg-config and CMake
           files, its SONAME and exports checked, a program built through pkg-config
           (C99 and C++11 -pedantic) and README's and the book's C example run; dump.c and check.c
           built with ASan and UBSan and compared with dendro-wire dump --json and
           check --json over testdata/ and generated and damaged streams; decode.py
           (ctypes) over the sample
  python   the Python package (python/, PyO3 over dendro-wire-std): its wheel built with
           maturin into target/python (a virtual environment filled from PyPI once),
           installed, and its pytest tests run against dendro-wire
  book     the guide (book/) built with mdBook (installed from crates.io into
           target/tools once) into target/book; every link in it resolved, every
           table within 8 columns, every chapter with Rust examples a doctest (part of ci)
  conformance [--write]
           the conformance suite (conformance/): its cases written again and compared with
           the committed ones (or written), the runner's own tests, then every case through
           the Rust tool, the C API, the Python package and dendro 0.6.1's codec; the matrix
           written to conformance/MATRIX.md (part of ci)
  fuzz --target NAME [--seconds N]
           run one fuzz target coverage-guided (bolero's libFuzzer engine, nightly)
           for N seconds (default 60); targets: decode_arbitrary, reader_chunks,
           encode_decode, json_identity, differential_dendro, subscriber_model,
           proxy_header, proxy_header_chunks, c_entry_points
  bench-report [--quick]
           measure ours, dendro 0.6.1 and memcpy on the same bytes; print one table
           (a full run writes it into book/src/performance-table.md)
  wireshark
           the Wireshark dissector (tools/wireshark/dendro.lua) under tshark: streams cut
           into TCP segments at random in a pcap written here, and a live loopback capture
           (dumpcap, as root), frame for frame as dendro-wire dump --json; a damaged
           capture's expert infos (part of ci)
  metrics  a real Prometheus scrapes `dendro-wire listen --metrics`; its query of the
           rows applied must equal the listener's summary (part of ci)
  fleet [--quick]
           10,000 agents, each its own 127/8 address, into dendro-wire listen --archive;
           twice the rows; 2,000 through HAProxy into two collectors, one stopped and
           started again, every row accounted for; 10,000 connecting within 10 s; and
           dendro's own Writer at its best beside them; print a table (not part of ci)
  soak [--quick] [--seconds S]
           dendro-wire listen under 10,000 idle connections, 1,000 clients claiming
           64 MiB frames, 5,000 sequential connections and a reconnect storm, with
           an honest agent throughout; print a table (not part of ci)
";
