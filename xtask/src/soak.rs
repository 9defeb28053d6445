//! `cargo xtask soak [--quick] [--seconds S]`: `dendro-wire listen` under
//! many idle connections, oversized claims, sequential connections, a
//! reconnect storm, and peers that speak the protocol and hold the table
//! (`benches/src/bin/soak.rs`); a table, not part of `ci`.

use std::process::Command;

use crate::steps::{self, cargo, release_tool, root, target_dir};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let tool = release_tool()?;
    steps::run(
        "build the soak (release)",
        cargo().args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "dendro-wire-benches",
            "--bin",
            "soak",
        ]),
    )?;
    // Tens of thousands of sockets: as many descriptors as the system
    // allows, for the soak and the listener it starts.
    let mut cmd = Command::new("sh");
    cmd.current_dir(root())
        .args(["-c", "ulimit -n \"$(ulimit -Hn)\" && exec \"$@\"", "sh"])
        .arg(target_dir().join("release/soak"))
        .arg("--bin")
        .arg(tool)
        .args(args);
    steps::run("soak", &mut cmd)
}
