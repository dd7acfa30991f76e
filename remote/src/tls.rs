//! TLS for the WebSocket transport (rustls, its `ring` provider): the
//! server's certificate and key from PEM files (`--tls-cert`,
//! `--tls-key`), and what a client trusts for `wss://`: the CA file it is
//! given, else the system's bundle (`SSL_CERT_FILE`, or the usual paths).

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A byte stream the transports read and write: a TCP connection, with or
/// without TLS.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// Where a system keeps its CA bundle (Debian, Fedora, Alpine and macOS
/// spellings), looked at when no CA file is given.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// ring's provider. rustls now marks it deprecated because ring has no
/// post-quantum key exchange; the provider that has one (aws-lc-rs) needs
/// cmake and minutes of C to build on every machine that builds conch, for
/// a server that mostly listens on a pod's network. Revisit when ring
/// gains the hybrid groups.
#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read the certificates in {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", path.display()));
    }
    Ok(certs)
}

/// The acceptor of a server with the certificate chain in `cert` and its
/// key in `key` (PEM).
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let chain = certificates(cert)?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("cannot read the private key in {}: {e}", key.display()))?;
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| format!("the certificate and key do not make a TLS server: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The connector of a client trusting the CAs in `ca` (PEM), or the
/// system's bundle when none is given.
pub fn connector(ca: Option<&Path>) -> Result<TlsConnector, String> {
    let mut roots = RootCertStore::empty();
    let bundle = match ca {
        Some(path) => path.to_path_buf(),
        None => std::env::var_os("SSL_CERT_FILE")
            .map(Into::into)
            .or_else(|| {
                SYSTEM_BUNDLES
                    .iter()
                    .map(Path::new)
                    .find(|p| p.exists())
                    .map(Path::to_path_buf)
            })
            .ok_or("no CA bundle on this system: give the CA file of the server's certificate")?,
    };
    let (added, _) = roots.add_parsable_certificates(certificates(&bundle)?);
    if added == 0 {
        return Err(format!("no usable CA certificate in {}", bundle.display()));
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}
