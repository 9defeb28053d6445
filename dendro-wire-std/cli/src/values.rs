//! The values the commands' arguments take: durations, sizes and
//! addresses, each checked as clap reads it (a bad one is a usage error),
//! and a checked address resolved when it is used; and the encoder name
//! the agent's rows carry, which `listen` stores by default.

use crate::failure::Failure;

/// The encoder `agent`'s rows are in (named in each source's `encoder`
/// metadata), and so what `listen --archive` stores unless told otherwise.
pub(crate) const AGENT_ENCODER: &str = "dendro-wire-agent-1";

/// A duration as a number and a unit: `500ms`, `60s`, `1m 30s`.
pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e}; write e.g. 500ms, 60s or 2m"))
}

/// A duration above zero.
pub(crate) fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("the interval must be above zero".into()),
        d => Ok(d),
    }
}

/// An address to connect to or listen on: `host:port`, the host a name or
/// an address (`[::1]` for IPv6), the port a number. Checked here so a
/// mistyped one is a usage error; names are resolved when used.
pub(crate) fn host_port(s: &str) -> Result<String, String> {
    let bad = |why: &str| format!("{s:?} is not host:port: {why}");
    let (host, port) = s.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    port.parse::<u16>()
        .map_err(|_| bad("the port is not a number from 0 to 65535"))?;
    let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) if v6.parse::<std::net::Ipv6Addr>().is_ok() => v6,
        Some(_) => return Err(bad("not an IPv6 address in the brackets")),
        None if host.contains(':') => {
            return Err(bad("an IPv6 address goes in brackets, [::1]:7070"))
        }
        None => host,
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(bad("no host"));
    }
    Ok(s.to_string())
}

/// The first address a checked `host:port` resolves to.
pub(crate) fn resolve(connect: &str) -> Result<std::net::SocketAddr, Failure> {
    std::net::ToSocketAddrs::to_socket_addrs(connect)
        .map_err(|e| Failure(format!("cannot resolve {connect}: {e}")))?
        .next()
        .ok_or_else(|| Failure(format!("{connect} resolves to no address")))
}

/// `--archive` on a build without the `archive` feature: a usage error that
/// says how to get one, rather than clap's "unexpected argument".
#[cfg(not(feature = "archive"))]
pub(crate) fn archive_not_built(_: &str) -> Result<std::path::PathBuf, String> {
    Err(
        "this dendro-wire was built without the `archive` feature; build it with \
         `cargo install dendro-wire --features archive` (in this repository: \
         `cargo run --release --features dendro-wire/archive --bin dendro-wire -- ...`)"
            .into(),
    )
}

/// A size in bytes, with an optional unit: `1048576`, `64KiB`, `256MiB`,
/// `1GiB`.
pub(crate) fn parse_size(s: &str) -> Result<usize, String> {
    let size: bytesize::ByteSize = s
        .parse()
        .map_err(|e| format!("{s:?}: {e}; write e.g. 256MiB or 1GiB"))?;
    usize::try_from(size.as_u64()).map_err(|_| format!("{s:?} is more than this machine holds"))
}
