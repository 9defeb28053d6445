//! The steps of `cargo xtask ci` that build with another toolchain than
//! stable: the docs as docs.rs builds them (nightly), and the crates on
//! the `rust-version` they declare.

use crate::steps::{root, run, rustup_cargo, target_dir};

/// The docs as docs.rs builds them (nightly, `--cfg docsrs`, each
/// feature-gated item marked with its feature), warnings denied. The
/// archive feature is left out: its SQLite, arrow and parquet would be built
/// again with nightly, and its docs build on stable above.
pub(crate) fn docs_rs() -> Result<(), String> {
    run(
        "rustdoc as docs.rs builds it (nightly, --cfg docsrs)",
        rustup_cargo("nightly")
            .env("RUSTDOCFLAGS", "--cfg docsrs -D warnings")
            .args([
                "doc",
                "--quiet",
                "--no-deps",
                "-p",
                "dendro-wire-core",
                "-p",
                "dendro-wire-std",
                "--features",
                "dendro-wire-core/embedded-io-async dendro-wire-core/defmt dendro-wire-core/serde \
                 dendro-wire-std/serde dendro-wire-std/tls",
            ])
            .arg("--target-dir")
            .arg(target_dir().join("docsrs")),
    )
}

/// The `rust-version` the crates declare: the core and the library build
/// and pass their tests with that toolchain (`.ci/run` installs it).
pub(crate) fn rust_version() -> Result<(), String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml"))
        .map_err(|e| format!("Cargo.toml: {e}"))?;
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .ok_or("Cargo.toml declares no rust-version")?;
    run(
        &format!("the core and the library on Rust {version}, the declared rust-version"),
        rustup_cargo(&version)
            // The only step that builds the tests with default features,
            // so the only one to see what is unused without them.
            .env("RUSTFLAGS", "-D warnings")
            .args([
                "test",
                "-p",
                "dendro-wire-core",
                "-p",
                "dendro-wire-std",
                "--lib",
                "--tests",
            ])
            .arg("--target-dir")
            .arg(target_dir().join("rust-version")),
    )
}
