//! What the xtask's steps need on the machine beyond a stable toolchain,
//! checked before a step runs and installed where it can be: Rust targets,
//! toolchains and components through rustup (always), system packages
//! through apt-get when this runs as root (as CI does). Anything else
//! missing stops the run with exit code 2 and the one command that installs
//! it, so a fresh machine needs no step that README does not give.

use std::path::Path;
use std::process::Command;

/// A thing a step needs, and how to get it.
pub(crate) enum Need {
    /// A Rust target of the toolchain running the xtask.
    Target(&'static str),
    /// A rustup component of the toolchain running the xtask.
    Component(&'static str),
    /// A rustup component of the nightly toolchain.
    NightlyComponent(&'static str),
    /// A toolchain: "nightly", or the version the workspace declares
    /// ([`RUST_VERSION`]).
    Toolchain(&'static str),
    /// A program, from a Debian package.
    Apt {
        program: &'static str,
        package: &'static str,
    },
    /// A device file the kernel and the container provide: nothing here
    /// can install it.
    Device {
        path: &'static str,
        what: &'static str,
    },
}

/// Stands for the `rust-version` in the workspace's Cargo.toml.
pub(crate) const RUST_VERSION: &str = "rust-version";

use Need::*;

/// What `cargo xtask ci` uses beyond its steps' own lists (it ensures
/// those too, all before the first step, so a run never stops half way for
/// a missing tool).
pub(crate) const CI: &[Need] = &[
    Component("rustfmt"),
    Component("clippy"),
    Toolchain(RUST_VERSION),
    Toolchain("nightly"),
    // The ffi crate's tests under Miri.
    NightlyComponent("miri"),
    NightlyComponent("rust-src"),
];

/// `cargo xtask firmware` on its own: three targets, QEMU for Arm and
/// RISC-V, and for the network run `ip` and `tc` and the TUN device.
pub(crate) const FIRMWARE: &[Need] = &[
    Target("thumbv7m-none-eabi"),
    Target("thumbv6m-none-eabi"),
    Target("riscv32imc-unknown-none-elf"),
    Apt {
        program: "qemu-system-arm",
        package: "qemu-system-arm",
    },
    Apt {
        program: "qemu-system-riscv32",
        package: "qemu-system-misc",
    },
    Apt {
        program: "ip",
        package: "iproute2",
    },
    Apt {
        program: "tc",
        package: "iproute2",
    },
    Device {
        path: "/dev/net/tun",
        what: "the network run's TAP device (a kernel with TUN/TAP, the device in this container)",
    },
];

/// `cargo xtask c`: dump.c, check.c and bench.c built with gcc, a program
/// built through pkg-config with gcc and g++ and through CMake, the archive
/// stripped (binutils, gcc's own), decode.py run with python3.
pub(crate) const C: &[Need] = &[
    Apt {
        program: "gcc",
        package: "gcc",
    },
    Apt {
        program: "g++",
        package: "g++",
    },
    Apt {
        program: "pkg-config",
        package: "pkg-config",
    },
    Apt {
        program: "cmake",
        package: "cmake",
    },
    Apt {
        program: "python3",
        package: "python3",
    },
];

/// `cargo xtask python`: python3, whose `venv` makes the package's own
/// environment (pip fills it from PyPI), and cargo builds the wheel.
pub(crate) const PYTHON: &[Need] = &[Apt {
    program: "python3",
    package: "python3-venv",
}];

/// The C firmware agent, after `FIRMWARE`: built with arm-none-eabi-gcc
/// against the Cortex-M3's staticlib, run under its QEMU.
pub(crate) const C_FIRMWARE: &[Need] = &[
    Target("thumbv7m-none-eabi"),
    Apt {
        program: "arm-none-eabi-gcc",
        package: "gcc-arm-none-eabi",
    },
    Apt {
        program: "qemu-system-arm",
        package: "qemu-system-arm",
    },
];

/// `cargo xtask fleet`: HAProxy in front of two collectors (Run B).
pub(crate) const FLEET: &[Need] = &[Apt {
    program: "haproxy",
    package: "haproxy",
}];

/// `cargo xtask wireshark`: tshark runs the Lua dissector, dumpcap (from
/// the same Debian source) captures on loopback.
pub(crate) const WIRESHARK: &[Need] = &[
    Apt {
        program: "tshark",
        package: "tshark",
    },
    Apt {
        program: "dumpcap",
        package: "wireshark-common",
    },
];

/// `cargo xtask metrics` on its own.
pub(crate) const METRICS: &[Need] = &[
    Apt {
        program: "prometheus",
        package: "prometheus",
    },
    Apt {
        program: "promtool",
        package: "prometheus",
    },
];

impl Need {
    fn present(&self) -> bool {
        match self {
            Target(t) => sysroot().join("lib/rustlib").join(t).exists(),
            Component(c) => rustup(&["component", "list", "--installed"])
                .is_some_and(|out| out.lines().any(|l| l.starts_with(c))),
            NightlyComponent(c) => {
                rustup(&["component", "list", "--installed", "--toolchain", "nightly"])
                    .is_some_and(|out| out.lines().any(|l| l.starts_with(c)))
            }
            Toolchain(t) => Command::new("rustup")
                .args(["run", &toolchain(t), "rustc", "--version"])
                .output()
                .is_ok_and(|o| o.status.success()),
            Apt { program, .. } => on_path(program),
            Device { path, .. } => Path::new(path).exists(),
        }
    }

    /// The command that installs it.
    fn command(&self) -> Option<String> {
        match self {
            Target(t) => Some(format!("rustup target add {t}")),
            Component(c) => Some(format!("rustup component add {c}")),
            NightlyComponent(c) => Some(format!("rustup component add {c} --toolchain nightly")),
            Toolchain(t) => Some(format!(
                "rustup toolchain install {} --profile minimal",
                toolchain(t)
            )),
            Apt { package, .. } => Some(format!("apt-get install -y {package}")),
            Device { .. } => None,
        }
    }

    fn what(&self) -> String {
        match self {
            Target(t) => format!("the {t} target"),
            Component(c) => format!("the {c} component"),
            NightlyComponent(c) => format!("nightly's {c} component"),
            Toolchain(t) => format!("the {} toolchain", toolchain(t)),
            Apt { program, .. } => program.to_string(),
            Device { path, what } => format!("{path}, {what}"),
        }
    }
}

/// Make sure every need of `step` is met: rustup installs what it can, as
/// root apt-get installs the packages; anything left, the command that
/// installs it is printed and the xtask exits with code 2.
pub(crate) fn ensure(step: &str, needs: &[&[Need]]) -> Result<(), String> {
    let missing: Vec<&Need> = needs
        .iter()
        .flat_map(|n| n.iter())
        .filter(|n| !n.present())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if let Some(n) = missing.iter().find(|n| matches!(n, Device { .. })) {
        return Err(format!("{step} needs {}, which is missing", n.what()));
    }
    let root = is_root();
    let mut left = Vec::new();
    let mut packages: Vec<&str> = Vec::new();
    for n in &missing {
        match n {
            Apt { package, .. } if root => {
                if !packages.contains(package) {
                    packages.push(package)
                }
            }
            Apt { .. } => left.push(*n),
            _ => {
                let command = n.command().unwrap_or_default();
                eprintln!("==> {step} needs {}: {command}", n.what());
                let mut words = command.split(' ');
                let program = words.next().unwrap_or("rustup");
                let ok = Command::new(program)
                    .args(words)
                    .status()
                    .is_ok_and(|s| s.success());
                if !ok {
                    return Err(format!("{command} failed"));
                }
            }
        }
    }
    if !packages.is_empty() {
        eprintln!("==> {step} needs {}: apt-get install", packages.join(" "));
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        let install: Vec<&str> = ["install", "-y", "--no-install-recommends"]
            .into_iter()
            .chain(packages.iter().copied())
            .collect();
        if !(apt(&install) || (apt(&["update"]) && apt(&install))) {
            return Err(format!("apt-get install {} failed", packages.join(" ")));
        }
    }
    // What was installed must now be there.
    if let Some(n) = missing
        .iter()
        .find(|n| !matches!(n, Apt { .. } if !root) && !n.present())
    {
        return Err(format!("{} is still missing after installing it", n.what()));
    }
    if left.is_empty() {
        return Ok(());
    }
    let mut apt: Vec<&str> = left
        .iter()
        .filter_map(|n| match n {
            Apt { package, .. } => Some(*package),
            _ => None,
        })
        .collect();
    apt.sort_unstable();
    apt.dedup();
    let what: Vec<String> = left.iter().map(|n| n.what()).collect();
    eprintln!(
        "xtask: {step} needs {}, which only root can install; run\n  sudo apt-get install -y {}\nand \
         then this again",
        what.join(", "),
        apt.join(" ")
    );
    std::process::exit(2);
}

/// A toolchain's name, the declared rust-version resolved.
fn toolchain(t: &str) -> String {
    if t != RUST_VERSION {
        return t.to_string();
    }
    std::fs::read_to_string(crate::steps::root().join("Cargo.toml"))
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("rust-version = "))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "stable".into())
}

fn rustup(args: &[&str]) -> Option<String> {
    let out = Command::new("rustup").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn sysroot() -> std::path::PathBuf {
    let out = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output();
    let sysroot = out.map_or_else(
        |_| String::new(),
        |o| String::from_utf8_lossy(&o.stdout).trim().to_string(),
    );
    Path::new(&sysroot).to_path_buf()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}
