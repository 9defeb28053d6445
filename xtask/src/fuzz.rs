//! `cargo xtask fuzz --target NAME [--seconds N]`: one fuzz target run
//! coverage-guided (cargo-bolero's libFuzzer engine, on nightly).

use crate::steps::{self, cargo, target_dir};

/// The fuzz targets in `fuzz/tests/targets.rs`.
const FUZZ_TARGETS: &[&str] = &[
    "decode_arbitrary",
    "reader_chunks",
    "encode_decode",
    "json_identity",
    "differential_dendro",
    "subscriber_model",
    "c_entry_points",
    "proxy_header",
    "proxy_header_chunks",
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let target = value("--target").ok_or_else(|| {
        format!(
            "fuzz needs --target NAME, one of: {}",
            FUZZ_TARGETS.join(", ")
        )
    })?;
    if !FUZZ_TARGETS.contains(&target.as_str()) {
        return Err(format!(
            "no fuzz target `{target}`; the targets are: {}",
            FUZZ_TARGETS.join(", ")
        ));
    }
    let seconds: u64 = value("--seconds")
        .unwrap_or_else(|| "60".into())
        .parse()
        .map_err(|_| "--seconds takes a whole number".to_string())?;
    let installed = cargo()
        .args(["bolero", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        // From crates.io; without its default features it needs no system
        // libraries beyond a C compiler.
        steps::run(
            "install cargo-bolero",
            cargo().args([
                "install",
                "cargo-bolero",
                "--locked",
                "--no-default-features",
            ]),
        )?;
    }
    steps::run(
        &format!("fuzz {target} for {seconds} s"),
        cargo()
            .args([
                "bolero",
                "test",
                "-p",
                "dendro-wire-fuzz",
                "--toolchain",
                "nightly",
                "-T",
                &format!("{seconds}s"),
                &target,
            ])
            .arg("--target-dir")
            .arg(target_dir().join("fuzz")),
    )
}
