//! The files `dendro-wire listen` is pointed at, said plainly at start: a
//! `--record` directory that is a link to nothing.

#![cfg(unix)]

use dendro_wire_test_support::process::{stderr, Tool};
use dendro_wire_test_support::scratch;

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
