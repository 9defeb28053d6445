//! Certificate authorities and certificates made for a test run, so nothing
//! checked in can expire.
//!
//! This crate does not depend on the std crate's `tls` feature (it would
//! turn it on in every build of the std crate's tests), so [`Ca::client`]
//! and [`Ca::server`] are handed the std crate's `tls::client_config` and
//! `tls::server_config` to build with.

use std::fmt::Debug;
use std::path::Path;

/// rcgen, for a test that makes a certificate of an odd shape.
pub use rcgen;
use rcgen::{
    date_time_ymd, BasicConstraints, Certificate, CertificateParams, DnType, GeneralSubtree, IsCa,
    Issuer, KeyPair, NameConstraints,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate authority made for the test.
pub struct Ca {
    cert: Certificate,
    issuer: Issuer<'static, KeyPair>,
}

/// A leaf certificate and its key.
pub struct Leaf {
    pub cert: Certificate,
    pub key: KeyPair,
}

impl Leaf {
    pub fn chain(&self) -> Certs {
        vec![self.cert.der().clone()]
    }

    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key.serialize_der().into())
    }

    /// Write `NAME.pem` and `NAME.key` in `dir`, the key readable by its
    /// owner alone, as a deployment keeps one (the tool warns of one that
    /// is not).
    pub fn write(&self, dir: &Path, name: &str) {
        std::fs::write(dir.join(format!("{name}.pem")), self.cert.pem()).unwrap();
        let key = dir.join(format!("{name}.key"));
        std::fs::write(&key, self.key.serialize_pem()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }
}

/// Certificates as the std crate's TLS configurations take them.
pub type Certs = Vec<CertificateDer<'static>>;

impl Ca {
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            cert,
            issuer: Issuer::new(params, key),
        }
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.cert.der().clone()
    }

    /// Write `NAME.pem` in `dir`.
    pub fn write(&self, dir: &Path, name: &str) {
        std::fs::write(dir.join(format!("{name}.pem")), self.cert.pem()).unwrap();
    }

    /// A certificate for `name` signed by this CA; `expired` makes one that
    /// stopped being valid long ago.
    pub fn leaf(&self, name: &str, expired: bool) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        if expired {
            params.not_before = date_time_ymd(2000, 1, 1);
            params.not_after = date_time_ymd(2001, 1, 1);
        }
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf { cert, key }
    }

    /// A certificate made from `params`, signed by this CA.
    pub fn sign(&self, params: CertificateParams) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf { cert, key }
    }

    /// A CA signed by this one, its DNS names constrained to `permitted`.
    pub fn constrained_sub_ca(&self, name: &str, permitted: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: vec![GeneralSubtree::DnsName(permitted.into())],
            excluded_subtrees: vec![],
        });
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Ca {
            cert,
            issuer: Issuer::new(params, key),
        }
    }

    /// An agent's TLS: a certificate for `name` from this CA, trusting
    /// collectors signed by `servers`, built by `client_config` (the std
    /// crate's `tls::client_config`).
    pub fn client<T, E: Debug>(
        &self,
        client_config: impl FnOnce(Certs, Certs, PrivateKeyDer<'static>) -> Result<T, E>,
        servers: &Ca,
        name: &str,
        expired: bool,
    ) -> T {
        let leaf = self.leaf(name, expired);
        client_config(vec![servers.der()], leaf.chain(), leaf.key()).unwrap()
    }

    /// A collector's TLS: a certificate for `localhost` from this CA,
    /// accepting clients signed by `clients`, built by `server_config` (the
    /// std crate's `tls::server_config`).
    pub fn server<T, E: Debug>(
        &self,
        server_config: impl FnOnce(Certs, PrivateKeyDer<'static>, Certs) -> Result<T, E>,
        clients: &Ca,
    ) -> T {
        let leaf = self.leaf("localhost", false);
        server_config(leaf.chain(), leaf.key(), vec![clients.der()]).unwrap()
    }
}
