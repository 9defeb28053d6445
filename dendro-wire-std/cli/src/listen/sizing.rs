//! Whether `--max-memory` holds `--max-connections` connections at their
//! idle cost, said on stderr at start when it does not.

use dendro_wire_std::receive::ServerConfig;

/// The line `listen` prints at start when the memory `config` gives
/// connections (`--max-memory`, of `max_memory` bytes, less the archive's
/// backlog, a quarter, when `archive`) holds fewer idle connections than
/// `--max-connections`: how many it holds, and what to raise.
pub(super) fn too_small(config: &ServerConfig, max_memory: usize, archive: bool) -> Option<String> {
    let cost = config.idle_connection_cost();
    let held = config.max_memory / cost;
    if held >= config.max_connections {
        return None;
    }
    let needed = config.max_connections.saturating_mul(cost);
    // The archive's quarter beside what connections need.
    let needed = if archive {
        needed.saturating_mul(4).div_ceil(3)
    } else {
        needed
    };
    let kind = if config.tls.is_some() {
        "TLS"
    } else {
        "plaintext"
    };
    Some(format!(
        "dendro-wire listen: --max-memory {} holds {held} idle {kind} connections ({} KiB \
         each{}), fewer than --max-connections {}: past {held}, new connections are refused \
         at accept. Raise --max-memory to {} MiB or more, or lower --max-connections to {held}.",
        size(max_memory),
        cost >> 10,
        if archive {
            ", beside the archive's quarter"
        } else {
            ""
        },
        config.max_connections,
        needed.div_ceil(1 << 20),
    ))
}

/// `bytes` as a user wrote it: in MiB when it is whole MiB.
fn size(bytes: usize) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At the defaults, `--max-connections` idle connections fit
    /// `--max-memory`, plaintext or TLS, with the archive's quarter or
    /// without, so nothing is said.
    #[test]
    fn the_defaults_hold_the_connections_they_allow() {
        let plain = ServerConfig::default();
        assert_eq!(plain.idle_connection_cost(), 8 << 10);
        let tls = tls_config(ServerConfig::default());
        assert_eq!(tls.idle_connection_cost(), 17 << 10);
        for config in [plain, tls] {
            let max_memory = config.max_memory;
            assert!(config.max_connections * config.idle_connection_cost() <= max_memory / 4 * 3);
            assert_eq!(too_small(&config, max_memory, false), None);
            let mut archived = config.clone();
            archived.max_memory -= max_memory / 4;
            assert_eq!(too_small(&archived, max_memory, true), None);
        }
    }

    /// A memory too small for the cap is said, with the flag to raise and
    /// by how much; raised that much, nothing is said.
    #[test]
    fn a_memory_too_small_for_the_cap_is_said() {
        let config = tls_config(ServerConfig::default().max_memory(64 << 20));
        let said = too_small(&config, 64 << 20, false).unwrap();
        assert_eq!(
            said,
            "dendro-wire listen: --max-memory 64 MiB holds 3855 idle TLS connections (17 KiB \
             each), fewer than --max-connections 10000: past 3855, new connections are refused \
             at accept. Raise --max-memory to 167 MiB or more, or lower --max-connections to \
             3855."
        );
        assert_eq!(
            too_small(&config.clone().max_memory(167 << 20), 167 << 20, false),
            None
        );
        let archived = config.max_memory(48 << 20);
        let said = too_small(&archived, 64 << 20, true).unwrap();
        assert!(said.contains("Raise --max-memory to 222 MiB"), "{said}");
        let raised = 222 << 20;
        assert_eq!(
            too_small(&archived.max_memory(raised - raised / 4), raised, true),
            None
        );
    }

    fn tls_config(config: ServerConfig) -> ServerConfig {
        use dendro_wire_std::tls;
        let ca = rcgen_ca();
        config.tls(tls::server_config(ca.0.clone(), ca.1.clone_key(), ca.0).unwrap())
    }

    /// A self-signed certificate and its key, for a collector's TLS.
    fn rcgen_ca() -> (
        Vec<dendro_wire_std::tls::CertificateDer<'static>>,
        dendro_wire_std::tls::PrivateKeyDer<'static>,
    ) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (
            vec![cert.der().clone()],
            dendro_wire_std::tls::rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der())
                .into(),
        )
    }
}
