//! What a PROXY header's parse says: whom the header names
//! ([`ProxiedFrom`]), or why it is refused ([`ProxyHeaderError`]), and the
//! most bytes a header may take.

use std::fmt;
use std::net::SocketAddr;

/// The most bytes a PROXY header may take: a version 1 header is at most
/// 107, and a version 2 one from a balancer carries its addresses and a few
/// small TLVs (an AWS endpoint id, a unique id). A header that claims more
/// is refused before it arrives.
pub const MAX_HEADER: usize = 1024;

/// Whom a PROXY header says a connection is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxiedFrom {
    /// The client the balancer forwards for.
    Client(SocketAddr),
    /// The balancer's own connection (a version 2 `LOCAL` command, say, for
    /// a health check), or a client whose address it does not know
    /// (version 1 `UNKNOWN`, or an address that is not IP): the connection
    /// is taken to be from the balancer.
    Balancer,
}

/// Why a PROXY header was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProxyHeaderError {
    /// The connection's first bytes are not a PROXY header.
    Missing,
    /// A header that breaks the protocol: what the parser said.
    Malformed(String),
    /// A header longer than [`MAX_HEADER`] (its claimed length, if it said
    /// one).
    Oversized(usize),
    /// A header from an address that is not a load balancer's: refused,
    /// never trusted.
    NotExpected,
}

impl ProxyHeaderError {
    /// The refusal, in a word: a label whose values are fixed.
    pub fn name(&self) -> &'static str {
        match self {
            ProxyHeaderError::Missing => "missing",
            ProxyHeaderError::Malformed(_) => "malformed",
            ProxyHeaderError::Oversized(_) => "oversized",
            ProxyHeaderError::NotExpected => "not_expected",
        }
    }
}

impl fmt::Display for ProxyHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyHeaderError::Missing => f.write_str(
                "the connection does not begin with a PROXY protocol header, which every \
                 connection from this address must",
            ),
            ProxyHeaderError::Malformed(why) => {
                write!(f, "a malformed PROXY protocol header: {why}")
            }
            ProxyHeaderError::NotExpected => f.write_str(
                "the connection begins with a PROXY protocol header, from an address not named \
                 as a load balancer's (proxy_protocol_from): refused, never trusted",
            ),
            ProxyHeaderError::Oversized(n) => write!(
                f,
                "a PROXY protocol header of {n} bytes or more, past the {MAX_HEADER} a header \
                 may take"
            ),
        }
    }
}

impl std::error::Error for ProxyHeaderError {}
