//! Who a client is: the identity its certificate proves
//! ([`identity`]), and the verifier that refuses, during the handshake, a
//! certificate that proves none.

use std::fmt;
use std::sync::Arc;

use crate::lines::Escaped;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls_pki_types::CertificateDer;

/// Where a client's [`identity`] may come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentityFrom {
    /// Only the certificate's DNS subject alternative names: the names a
    /// CA's name constraints are checked against, so a constrained CA
    /// cannot issue an identity outside them.
    #[default]
    DnsNames,
    /// The DNS names, or, for a certificate with no subject alternative
    /// name extension at all, its subject's common name. A CA's name
    /// constraints do not bind a common name, so this refuses one whose
    /// presented chain holds a name-constrained CA; a name-constrained
    /// client CA itself is not looked at: use this only with client CAs
    /// whose names are not constrained.
    DnsNamesOrCommonName,
}

/// Why a client certificate proves no identity: a sentence that says what
/// it holds instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoIdentity(pub String);

impl fmt::Display for NoIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the client certificate proves no identity: {}", self.0)
    }
}

impl std::error::Error for NoIdentity {}

/// A client's identity, from its certificate chain as it presented it (the
/// leaf first): its certificate's first DNS subject alternative name, or,
/// only as `from` allows, its common name. An identity is a label value, so
/// one that is empty or holds a control character (a NUL, a newline) is
/// refused, never cleaned up.
pub fn identity(chain: &[CertificateDer<'_>], from: IdentityFrom) -> Result<String, NoIdentity> {
    use x509_parser::extensions::GeneralName;
    let no = |why: String| Err(NoIdentity(why));
    let Some(leaf) = chain.first() else {
        return no("no certificate was presented".into());
    };
    let cert = parse(leaf)?;
    let san = cert
        .subject_alternative_name()
        .map_err(|e| NoIdentity(format!("its subject alternative names cannot be read: {e}")))?;
    let name = match san {
        Some(san) => {
            let names = &san.value.general_names;
            match names.iter().find_map(|name| match name {
                GeneralName::DNSName(dns) => Some(*dns),
                _ => None,
            }) {
                Some(dns) => dns.to_string(),
                None => {
                    let held: Vec<String> = names.iter().map(describe).collect();
                    return no(format!(
                        "its subject alternative names hold no DNS name (they hold {})",
                        held.join(", ")
                    ));
                }
            }
        }
        None if from == IdentityFrom::DnsNames => {
            return no(
                "it has no subject alternative names, and its common name is not \
                 used as an identity (a CA's name constraints do not bind it)"
                    .into(),
            )
        }
        None => {
            for ca in &chain[1..] {
                if parse(ca)?.name_constraints().ok().flatten().is_some() {
                    return no(
                        "it has no subject alternative names, and its common name is \
                 not used under a CA whose names are constrained"
                            .into(),
                    );
                }
            }
            match cert
                .subject()
                .iter_common_name()
                .next()
                .map(|cn| cn.as_str())
            {
                Some(Ok(cn)) => cn.to_string(),
                Some(Err(_)) => return no("its common name is not a UTF-8 string".into()),
                None => {
                    return no("it has neither subject alternative names nor a common name".into())
                }
            }
        }
    };
    if name.is_empty() {
        return no("its name is empty".into());
    }
    if name.chars().any(char::is_control) {
        return no(format!(
            "its name {} holds a control character",
            Escaped::bare(&name)
        ));
    }
    Ok(name)
}

fn parse<'a>(
    der: &'a CertificateDer<'_>,
) -> Result<x509_parser::certificate::X509Certificate<'a>, NoIdentity> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, cert)| cert)
        .map_err(|e| NoIdentity(format!("a certificate cannot be parsed: {e}")))
}

/// A subject alternative name that is not a DNS name, as a refusal quotes
/// it.
fn describe(name: &x509_parser::extensions::GeneralName<'_>) -> String {
    use x509_parser::extensions::GeneralName;
    match name {
        GeneralName::IPAddress(&[a, b, c, d]) => {
            format!("IP address {}", std::net::Ipv4Addr::new(a, b, c, d))
        }
        GeneralName::IPAddress(bytes) => match <[u8; 16]>::try_from(*bytes) {
            Ok(v6) => format!("IP address {}", std::net::Ipv6Addr::from(v6)),
            Err(_) => "an IP address".into(),
        },
        GeneralName::URI(uri) => format!("URI {}", Escaped::bare(uri)),
        GeneralName::RFC822Name(mail) => format!("e-mail {}", Escaped::bare(mail)),
        GeneralName::DirectoryName(dn) => {
            format!("directory name {}", Escaped::bare(&dn.to_string()))
        }
        _ => "a name of another kind".into(),
    }
}

/// A failed handshake's error, said plainly when it is this module's
/// refusal (rustls would quote it by its debug form).
pub(crate) fn plain_refusal(e: std::io::Error) -> std::io::Error {
    let no_identity = e
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
        .and_then(|e| match e {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) => {
                other.0.downcast_ref::<NoIdentity>().cloned()
            }
            _ => None,
        });
    match no_identity {
        Some(no) => std::io::Error::new(std::io::ErrorKind::PermissionDenied, no),
        None => e,
    }
}

/// The CA check, then the identity check: a chain that proves no identity
/// fails the handshake.
#[derive(Debug)]
pub(super) struct IdentityVerifier {
    pub(super) webpki: Arc<dyn ClientCertVerifier>,
    pub(super) from: IdentityFrom,
}

impl ClientCertVerifier for IdentityVerifier {
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: rustls_pki_types::UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .webpki
            .verify_client_cert(end_entity, intermediates, now)?;
        let chain: Vec<CertificateDer<'_>> = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|c| CertificateDer::from(c.as_ref()))
            .collect();
        match identity(&chain, self.from) {
            Ok(_) => Ok(verified),
            Err(e) => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Other(rustls::OtherError(Arc::new(e))),
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
