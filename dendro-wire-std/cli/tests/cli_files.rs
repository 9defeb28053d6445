//! The files `dendro-wire listen` is pointed at, said plainly at start: a
//! `--record` directory that is a link to nothing, and a TLS key others may
//! read.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;

use dendro_wire_test_support::process::{stderr, Tool};
use dendro_wire_test_support::{certs, scratch};

const TOOL: Tool = Tool::new(env!("CARGO_BIN_EXE_dendro-wire"));

#[test]
fn a_record_directory_that_links_to_nothing_is_named_and_not_followed() {
    let dir = scratch!("cli-record-link");
    let (link, nowhere) = (dir.join("captures"), dir.join("nowhere"));
    std::os::unix::fs::symlink(&nowhere, &link).unwrap();
    let out = TOOL.run(
        [
            "listen".as_ref(),
            "--bind".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--record".as_ref(),
            link.as_os_str(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "{} is a symbolic link to nothing (to {})",
            link.display(),
            nowhere.display()
        )),
        "{said}"
    );
    assert!(said.contains("links are not followed"), "{said}");
    assert!(!said.contains("File exists"), "{said}");
    assert!(!nowhere.exists(), "a directory made through the link");
}

#[test]
fn a_tls_key_others_may_read_is_warned_of_at_start() {
    let dir = scratch!("cli-key-mode");
    let (collectors, agents) = (certs::Ca::new("collectors"), certs::Ca::new("agents"));
    agents.write(&dir, "agents-ca");
    collectors.leaf("localhost", false).write(&dir, "collector");
    let key = dir.join("collector.key");
    for (mode, warned) in [(0o644, true), (0o640, true), (0o600, false), (0o400, false)] {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let listening = TOOL.listen(&[
            "--bind".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--tls-cert".as_ref(),
            dir.join("collector.pem").as_os_str(),
            "--tls-key".as_ref(),
            key.as_os_str(),
            "--client-ca".as_ref(),
            dir.join("agents-ca.pem").as_os_str(),
        ]);
        assert!(listening.terminate());
        let listened = listening.finish();
        assert!(listened.status.success(), "{}", listened.stderr);
        let line = format!(
            "dendro-wire listen: the TLS key {} has mode {mode:04o}: users other than its \
             owner may read it",
            key.display()
        );
        assert_eq!(
            listened.stderr.lines().any(|l| l.starts_with(&line)),
            warned,
            "mode {mode:o}: {}",
            listened.stderr
        );
    }
}
