//! `cargo xtask fleet [--quick]`: a fleet as a real deployment, on one
//! machine. Every agent is its own 127/8 address and its own connection,
//! the core's publisher machine sending a Handshake, a Full, one Rows frame
//! an interval and a ClockOffset every ten (`xtask/fleet`, a workspace of
//! its own); every collector is the release `dendro-wire listen --archive`.
//!
//! - the ceiling: dendro 0.6.1's own `Writer` at its best, in the same run
//!   (one source, one large batch after another);
//! - Run A: the fleet into one collector;
//! - overload: twice the rows, to show what a collector does with more
//!   than its archive holds: slows and counts, never buffers without end;
//! - Run B: the fleet through HAProxy (`haproxy.rs`) into two collectors,
//!   one stopped with SIGTERM mid-run and started again, every row
//!   accounted for;
//! - Run C: the fleet connecting within seconds, as after a restart.
//!
//! Not part of `ci`: the full runs hold 10,000 connections for minutes.

mod haproxy;
mod process;
mod runs;
mod scale;

use crate::setup;
use crate::steps::{cargo, copy, release_tool_with, root, run};
use scale::{Scale, Tools};

pub(crate) fn run_fleet(args: &[String]) -> Result<(), String> {
    let quick = args.iter().any(|a| a == "--quick");
    if let Some(other) = args.iter().find(|a| *a != "--quick") {
        return Err(format!("fleet: unknown argument {other}; only --quick"));
    }
    let scale = if quick { Scale::quick() } else { Scale::full() };
    setup::ensure("fleet", &[setup::FLEET])?;
    let tools = build()?;
    let dir = root().join("target/fleet");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let results = runs::all(&tools, &dir, &scale)?;
    println!("{results}");
    Ok(())
}

/// The release listener with the archive feature, copied aside (a later
/// build without it writes the same path), and the fleet.
fn build() -> Result<Tools, String> {
    let built = release_tool_with(&["archive"])?;
    let listener = root().join("target/fleet-tools/dendro-wire-archive");
    copy(&built, &listener)?;
    run(
        "build the fleet (release)",
        cargo()
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(root().join("xtask/fleet/Cargo.toml"))
            .env("CARGO_TARGET_DIR", root().join("target")),
    )?;
    let fleet = root().join("target/fleet-tools/fleet");
    copy(&root().join("target/release/fleet"), &fleet)?;
    Ok(Tools { listener, fleet })
}
