//! The TLS options of the commands that connect to a subscriber (`agent`,
//! `replay`) and of `listen`.

use std::path::{Path, PathBuf};

use dendro_wire_std::tls::{self, TlsClient};

use crate::failure::Failure;

/// TLS 1.3 to a subscriber, with this client's certificate.
#[derive(clap::Args, Debug)]
pub(crate) struct ClientTls {
    /// Speak TLS 1.3: the CA certificate(s) the subscriber's certificate
    /// must chain to (PEM). Needs --tls-cert and --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["tls_cert", "tls_key"])]
    tls_ca: Option<PathBuf>,
    /// This client's certificate chain (PEM), shown to the subscriber.
    #[arg(long, value_name = "FILE", requires = "tls_ca")]
    tls_cert: Option<PathBuf>,
    /// This client's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_ca")]
    tls_key: Option<PathBuf>,
    /// The name the subscriber's certificate must be valid for (default: the
    /// host part of --connect).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    server_name: Option<String>,
}

impl ClientTls {
    /// The client's TLS, if asked for, and the name to check the
    /// subscriber's certificate against when connecting to `connect`.
    pub(crate) fn client(&self, connect: &str) -> Result<Option<(TlsClient, String)>, Failure> {
        let (Some(ca), Some(cert), Some(key)) = (&self.tls_ca, &self.tls_cert, &self.tls_key)
        else {
            return Ok(None);
        };
        let client = tls::client_config(
            tls::load_certificates(ca)?,
            tls::load_certificates(cert)?,
            load_key(key, "dendro-wire")?,
        )?;
        let name = match &self.server_name {
            Some(name) => name.clone(),
            None => host_of(connect).to_string(),
        };
        Ok(Some((client, name)))
    }
}

/// The host part of `host:port` (an IPv6 address without its brackets).
fn host_of(connect: &str) -> &str {
    let host = connect.rsplit_once(':').map_or(connect, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// TLS 1.3 for a collector, with client certificates required.
#[derive(clap::Args, Debug)]
pub(crate) struct ServerTls {
    /// Speak TLS 1.3: this collector's certificate chain (PEM). Needs
    /// --tls-key and --client-ca.
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "client_ca"])]
    tls_cert: Option<PathBuf>,
    /// This collector's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The CA certificate(s) a client's certificate must chain to (PEM):
    /// only such clients get past the TLS handshake.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    client_ca: Option<PathBuf>,
    /// Every Handshake and SourceUpdate a client sends must carry this label
    /// with the client's identity (its certificate's first DNS subject
    /// alternative name) as the value, or its connection ends; a client
    /// whose certificate proves no identity is refused at the handshake.
    #[arg(long, value_name = "LABEL", requires = "tls_cert")]
    pub(crate) bind_identity: Option<String>,
    /// Take the identity of a client certificate with no subject
    /// alternative names from its common name. A CA's name constraints do
    /// not bind a common name: such a certificate under a name-constrained
    /// CA in its chain is refused, and --client-ca's own constraints are not
    /// looked at.
    #[arg(long, requires = "tls_cert")]
    pub(crate) identity_from_common_name: bool,
}

impl ServerTls {
    /// Where a client's identity comes from.
    pub(crate) fn identity_from(&self) -> tls::IdentityFrom {
        match self.identity_from_common_name {
            true => tls::IdentityFrom::DnsNamesOrCommonName,
            false => tls::IdentityFrom::DnsNames,
        }
    }

    /// The collector's TLS, if asked for.
    pub(crate) fn config(
        &self,
    ) -> Result<Option<std::sync::Arc<tls::rustls::ServerConfig>>, Failure> {
        let (Some(cert), Some(key), Some(ca)) = (&self.tls_cert, &self.tls_key, &self.client_ca)
        else {
            return Ok(None);
        };
        let (chain, key, cas) = (
            tls::load_certificates(cert)?,
            load_key(key, "dendro-wire listen")?,
            tls::load_certificates(ca)?,
        );
        Ok(Some(match self.bind_identity {
            // A client that proves no identity hears so at the handshake.
            Some(_) => tls::server_config_binding(chain, key, cas, self.identity_from())?,
            None => tls::server_config(chain, key, cas)?,
        }))
    }
}

/// The private key at `path`, with a line on stderr (after `who:`) if its
/// file is open to anyone but its owner: its group's or others' bits in its
/// mode, which ssh refuses a key for. The key is still used.
fn load_key(
    path: &Path,
    who: &str,
) -> Result<tls::rustls::pki_types::PrivateKeyDer<'static>, Failure> {
    let key = tls::load_private_key(path)?;
    #[cfg(unix)]
    if let Some(warning) = open_key(path) {
        eprintln!("{who}: {warning}");
    }
    Ok(key)
}

/// What is wrong with the key file at `path`'s mode, if anything.
#[cfg(unix)]
fn open_key(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o7777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "the TLS key {} has mode {mode:04o}: users other than its owner may read it \
             (its group's or others' permission bits); chmod 600 it",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_of_an_address() {
        assert_eq!(
            super::host_of("collector.example:7070"),
            "collector.example"
        );
        assert_eq!(super::host_of("127.0.0.1:7070"), "127.0.0.1");
        assert_eq!(super::host_of("[::1]:7070"), "::1");
        assert_eq!(super::host_of("collector"), "collector");
    }
}
