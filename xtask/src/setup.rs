//! What `cargo xtask firmware` needs on the machine, said exactly when it
//! is missing, and installed when this runs as root (as CI does): the
//! three Rust targets, QEMU for Arm and for RISC-V, and for the network
//! run `ip` and `tc` (iproute2) and `/dev/net/tun`.

use std::path::Path;
use std::process::Command;

/// A thing the firmware step needs, and how to get it.
struct Need {
    /// What it is, for a message.
    what: &'static str,
    present: fn() -> bool,
    install: Install,
}

enum Install {
    Target(&'static str),
    Apt(&'static str),
    /// Nothing to install: the kernel's or the container's.
    None(&'static str),
}

const NEEDS: &[Need] = &[
    Need {
        what: "the thumbv7m-none-eabi target",
        present: || has_target("thumbv7m-none-eabi"),
        install: Install::Target("thumbv7m-none-eabi"),
    },
    Need {
        what: "the thumbv6m-none-eabi target",
        present: || has_target("thumbv6m-none-eabi"),
        install: Install::Target("thumbv6m-none-eabi"),
    },
    Need {
        what: "the riscv32imc-unknown-none-elf target",
        present: || has_target("riscv32imc-unknown-none-elf"),
        install: Install::Target("riscv32imc-unknown-none-elf"),
    },
    Need {
        what: "qemu-system-arm",
        present: || runs("qemu-system-arm", "--version"),
        install: Install::Apt("qemu-system-arm"),
    },
    Need {
        what: "qemu-system-riscv32",
        present: || runs("qemu-system-riscv32", "--version"),
        install: Install::Apt("qemu-system-misc"),
    },
    Need {
        what: "ip and tc (the network run's namespace, TAP device and shaping)",
        present: || runs("ip", "-V") && runs("tc", "-V"),
        install: Install::Apt("iproute2"),
    },
    Need {
        what: "/dev/net/tun (the network run's TAP device)",
        present: || Path::new("/dev/net/tun").exists(),
        install: Install::None("a kernel with TUN/TAP, and the device in this container"),
    },
];

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn has_target(target: &str) -> bool {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output();
    let sysroot = sysroot.map_or_else(
        |_| String::new(),
        |o| String::from_utf8_lossy(&o.stdout).trim().to_string(),
    );
    Path::new(&sysroot)
        .join("lib/rustlib")
        .join(target)
        .exists()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Make sure everything is there: as root, install what is missing; else
/// say exactly what is and how to get it.
pub(crate) fn firmware() -> Result<(), String> {
    let missing: Vec<&Need> = NEEDS.iter().filter(|n| !(n.present)()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let how = |n: &Need| match n.install {
        Install::Target(t) => format!("{}: `rustup target add {t}`", n.what),
        Install::Apt(p) => format!("{}: `apt-get install -y {p}`", n.what),
        Install::None(why) => format!("{}: {why}", n.what),
    };
    if !is_root() {
        let list: Vec<String> = missing.iter().map(|n| how(n)).collect();
        return Err(format!(
            "the firmware step needs what is not installed:\n  {}",
            list.join("\n  ")
        ));
    }
    let mut apt_updated = false;
    for n in &missing {
        eprintln!("==> install {}", how(n));
        let ok = match n.install {
            Install::Target(t) => crate::run(
                &format!("rustup target add {t}"),
                Command::new("rustup").args(["target", "add", t]),
            )
            .is_ok(),
            Install::Apt(p) => {
                let apt = |args: &[&str]| {
                    Command::new("apt-get")
                        .args(args)
                        .env("DEBIAN_FRONTEND", "noninteractive")
                        .status()
                        .is_ok_and(|s| s.success())
                };
                apt(&["install", "-y", p])
                    || (!std::mem::replace(&mut apt_updated, true)
                        && apt(&["update"])
                        && apt(&["install", "-y", p]))
            }
            Install::None(_) => false,
        };
        if !ok || !(n.present)() {
            return Err(format!("could not install {}", how(n)));
        }
    }
    Ok(())
}
