use clap::Parser;
use dendro_wire_std::receive::ServerConfig;

/// The archive's writer path, given no flags, batches as the library's
/// does by default.
#[cfg(feature = "archive")]
#[test]
fn the_archive_defaults_to_the_librarys() {
    let cli = crate::Cli::try_parse_from([
        "dendro-wire",
        "listen",
        "--bind",
        "127.0.0.1:0",
        "--archive",
        "a.dendro",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let crate::Command::Listen(args) = cli.command else {
        panic!("not listen");
    };
    let (got, want) = (
        args.archive_config(),
        dendro_wire_std::archive::ArchiveConfig::default(),
    );
    assert_eq!(
        (
            got.commit_rows,
            got.commit_age,
            got.max_sources,
            got.max_sources_per_address
        ),
        (
            want.commit_rows,
            want.commit_age,
            want.max_sources,
            want.max_sources_per_address
        )
    );
    assert_eq!(got.backlog_bytes, args.max_memory / 4);
}

/// The tool's defaults are the library's, written a second time only so
/// that `--help` shows them: `listen` given no limits serves as
/// `ServerConfig::default()` does.
#[test]
fn the_limits_default_to_the_librarys() {
    let cli = crate::Cli::try_parse_from(["dendro-wire", "listen", "--bind", "127.0.0.1:0"])
        .unwrap_or_else(|e| panic!("{e}"));
    let crate::Command::Listen(args) = cli.command else {
        panic!("not listen");
    };
    let got = args.server_config().unwrap_or_else(|e| panic!("{}", e.0));
    let want = ServerConfig::default();
    assert_eq!(
        (
            got.max_sources,
            got.max_connections,
            got.max_unopened_connections,
            got.eviction_grace,
            got.max_connections_per_peer,
            got.handshake_timeout,
            got.max_memory,
            got.idle_timeout,
            got.frame_timeout,
            got.record_max,
            got.record_max_per_connection,
        ),
        (
            want.max_sources,
            want.max_connections,
            want.max_unopened_connections,
            want.eviction_grace,
            want.max_connections_per_peer,
            want.handshake_timeout,
            want.max_memory,
            want.idle_timeout,
            want.frame_timeout,
            want.record_max,
            want.record_max_per_connection,
        )
    );
}
