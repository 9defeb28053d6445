//! A collector on a Unix socket: created owner-only and never over what is
//! already there, and peers checked against the user ids allowed.

#![cfg(all(unix, feature = "tokio"))]

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::time::Duration;

use dendro_wire_std::receive::{bind_unix, bind_unix_file, Peer, ServeError, Server, ServerConfig};
use dendro_wire_std::CountingSink;
use dendro_wire_test_support::{scratch, streams};

#[test]
fn the_socket_is_owner_only_and_never_replaces_what_is_there() {
    let dir = scratch!("unix-bind");
    let path = dir.join("collector.sock");
    let listener = bind_unix(&path, 0o600).unwrap();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // Nothing left beside it.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

    // A socket another listener serves is not taken over.
    let e = bind_unix(&path, 0o600).unwrap_err();
    assert!(
        e.to_string()
            .contains("a socket another listener is serving"),
        "{e}"
    );
    // A stale one, left by a listener that is gone, is.
    drop(listener);
    assert!(bind_unix(&path, 0o660).is_ok());
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o660
    );

    // A link planted at the path, or a file, is never replaced.
    let other = dir.join("planted.sock");
    let target = dir.join("target");
    std::fs::write(&target, b"not yours").unwrap();
    std::os::unix::fs::symlink(&target, &other).unwrap();
    let e = bind_unix(&other, 0o600).unwrap_err();
    assert!(e.to_string().contains("not a socket"), "{e}");
    assert!(std::fs::symlink_metadata(&other)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"not yours");
}

#[test]
fn only_the_user_ids_allowed_are_served() {
    let dir = scratch!("unix-uids");
    let path = dir.join("collector.sock");
    let me = std::fs::metadata(&dir).unwrap().uid();
    for (allowed, served) in [(vec![me], true), (vec![me + 1], false)] {
        let _ = std::fs::remove_file(&path);
        let mut config = ServerConfig::default();
        config.allow_uids = Some(allowed.clone());
        let (tx, rx) = mpsc::channel();
        let server = Server::start(
            bind_unix(&path, 0o600).unwrap(),
            config,
            |_| CountingSink::default(),
            move |ended, sink| tx.send((ended, sink)).unwrap(),
        )
        .unwrap();
        let mut s = UnixStream::connect(&path).unwrap();
        let _ = s.write_all(&streams::honest_stream(3));
        drop(s);
        let (ended, sink) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(
            matches!(ended.info.peer, Peer::Unix { uid: Some(uid), .. } if uid == me),
            "{ended}"
        );
        if served {
            assert!(ended.result.is_ok(), "{ended}");
            assert_eq!(sink.rows, 3 * streams::ROWS_PER_FRAME);
        } else {
            assert!(
                matches!(ended.result, Err(ServeError::NotAllowed(_))),
                "{ended}"
            );
            assert!(
                ended
                    .to_string()
                    .contains(&format!("user id {me} is not one of those allowed")),
                "{ended}"
            );
            assert_eq!(sink.rows, 0);
        }
        server.shutdown(Duration::ZERO);
    }
}

#[test]
fn at_exit_only_the_socket_that_was_made_is_removed() {
    let dir = scratch!("unix-remove");
    let path = dir.join("collector.sock");

    // Still there: removed.
    let (listener, made) = bind_unix_file(&path, 0o600).unwrap();
    drop(listener);
    assert_eq!(made.path(), path);
    assert!(made.remove().unwrap());
    assert!(std::fs::symlink_metadata(&path).is_err());

    // A file put in its place: left.
    let (_listener, made) = bind_unix_file(&path, 0o600).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"put here since").unwrap();
    assert!(!made.remove().unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), b"put here since");
    std::fs::remove_file(&path).unwrap();

    // A second listener's live socket at the path: left, and still served.
    let (_first, first) = bind_unix_file(&path, 0o600).unwrap();
    std::fs::remove_file(&path).unwrap();
    let (second_listener, second) = bind_unix_file(&path, 0o600).unwrap();
    assert!(!first.remove().unwrap());
    assert!(UnixStream::connect(&path).is_ok());
    assert!(second.remove().unwrap());
    drop(second_listener);

    // Gone already: nothing to do.
    assert!(!first.remove().unwrap());
}

/// The private directory the socket is made in has a random name, so the
/// names an earlier build used (`.dendro-wire-PID-N`), made beforehand by
/// another user, do not stop it; and none is left behind.
#[test]
fn predictable_names_made_beforehand_do_not_stop_a_bind() {
    let dir = scratch!("unix-private");
    for n in 0..100 {
        let taken = dir.join(format!(".dendro-wire-{}-{n}", std::process::id()));
        std::fs::create_dir(taken).unwrap();
    }
    let before = std::fs::read_dir(&dir).unwrap().count();
    let path = dir.join("collector.sock");
    let (_listener, made) = bind_unix_file(&path, 0o600).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before + 1);
    assert!(made.remove().unwrap());
}
