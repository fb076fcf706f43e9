//! TLS between nodes, from PEM files: the two halves ractor_cluster takes.
//! These are an acceptor for the node server, [`NodeConfig::tls`](super::NodeConfig::tls),
//! and a connector for `client_connect_enc`.
//!
//! [`acceptor`] and [`connector`] encrypt and authenticate the listening
//! node to the connecting one. [`mutual_acceptor`] and [`mutual_connector`]
//! also make the connecting node show a certificate signed by an authority
//! the listener trusts: a node without one cannot open a session at all,
//! whatever cookie it holds. What the certificates do not do is name the
//! node: the name a node declares in ractor_cluster's handshake is not
//! checked against its certificate, as the
//! [`Security model`](super#security-model) says.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use conduit_mcp::cluster::tls;
//! let (cert, key, ca) = (std::fs::read("node.pem")?, std::fs::read("node.key")?, std::fs::read("ca.pem")?);
//! use conduit_mcp::cluster::NodeConfig;
//! let server = NodeConfig::new("node-a", "node-a.example", "cookie")
//!     .port(4697)
//!     .tls(tls::acceptor(&cert, &key)?)
//!     .build()?;
//! # let (node, _) = ractor::Actor::spawn(None, server, ()).await?;
//! ractor_cluster::client_connect_enc(&node, "node-b.example:4697", tls::connector(&ca)?, tls::server_name("node-b.example")?).await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use ractor_cluster::IncomingEncryptionMode;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// Why a TLS setting could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM input holds no usable certificate or key.
    #[error("bad PEM ({what}): {problem}")]
    Pem {
        /// Which input.
        what: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// rustls refused the certificates or key.
    #[error("TLS configuration refused: {0}")]
    Config(#[from] rustls::Error),
    /// The host name is not a valid DNS name or IP address.
    #[error("`{0}` is not a valid server name")]
    ServerName(String),
    /// The client certificate verifier could not be built from the
    /// authorities given.
    #[error("client certificate verifier refused: {0}")]
    ClientVerifier(String),
}

fn certs(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what,
            problem: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            what,
            problem: "no certificate".into(),
        });
    }
    Ok(certs)
}

fn key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| TlsError::Pem {
        what: "private key",
        problem: e.to_string(),
    })
}

fn roots(ca_pem: &[u8]) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs(ca_pem, "certificate authorities")? {
        roots.add(cert)?;
    }
    Ok(roots)
}

fn acceptor_from(config: rustls::ServerConfig) -> IncomingEncryptionMode {
    IncomingEncryptionMode::Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// The node server's side: its certificate chain and private key, in PEM.
/// Connecting nodes show no certificate.
///
/// # Examples
///
/// ```no_run
/// use conduit_mcp::cluster::{tls, NodeConfig};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (cert, key) = (std::fs::read("node-a.pem")?, std::fs::read("node-a.key")?);
/// let server = NodeConfig::new("node-a", "node-a.example", "a-long-random-cookie")
///     .tls(tls::acceptor(&cert, &key)?)
///     .build()?;
/// # Ok(()) }
/// ```
pub fn acceptor(cert_chain_pem: &[u8], key_pem: &[u8]) -> Result<IncomingEncryptionMode, TlsError> {
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs(cert_chain_pem, "certificate chain")?, key(key_pem)?)?;
    Ok(acceptor_from(config))
}

/// The node server's side with mutual TLS: its certificate chain and
/// private key, and the authorities that must have signed the
/// certificate of every connecting node, all in PEM. A node that shows none, or one
/// signed by another authority, fails the TLS handshake and never reaches
/// ractor_cluster's.
///
/// # Examples
///
/// ```no_run
/// use conduit_mcp::cluster::{tls, NodeConfig};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cert = std::fs::read("node-a.pem")?;
/// let key = std::fs::read("node-a.key")?;
/// let nodes_ca = std::fs::read("nodes-ca.pem")?; // signs every node's certificate
/// let server = NodeConfig::new("node-a", "node-a.example", "a-long-random-cookie")
///     .tls(tls::mutual_acceptor(&cert, &key, &nodes_ca)?)
///     .build()?;
/// # Ok(()) }
/// ```
pub fn mutual_acceptor(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: &[u8],
) -> Result<IncomingEncryptionMode, TlsError> {
    let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots(client_ca_pem)?))
        .build()
        .map_err(|e| TlsError::ClientVerifier(e.to_string()))?;
    let config = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs(cert_chain_pem, "certificate chain")?, key(key_pem)?)?;
    Ok(acceptor_from(config))
}

/// The connecting side: trusts the certificate authorities in `ca_pem`.
///
/// # Examples
///
/// ```no_run
/// use conduit_mcp::cluster::tls;
///
/// # async fn example(node: ractor::ActorRef<ractor_cluster::NodeServerMessage>) -> Result<(), Box<dyn std::error::Error>> {
/// let ca = std::fs::read("ca.pem")?;
/// let connector = tls::connector(&ca)?;
/// ractor_cluster::client_connect_enc(&node, "node-a.example:4697", connector, tls::server_name("node-a.example")?).await?;
/// # Ok(()) }
/// ```
pub fn connector(ca_pem: &[u8]) -> Result<tokio_rustls::TlsConnector, TlsError> {
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots(ca_pem)?)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// The connecting side with mutual TLS: trusts the authorities in
/// `ca_pem`, and shows its own certificate chain and private key, in PEM,
/// to the node it connects to, whose side is [`mutual_acceptor`].
///
/// # Examples
///
/// ```no_run
/// use conduit_mcp::cluster::tls;
///
/// # async fn example(node: ractor::ActorRef<ractor_cluster::NodeServerMessage>) -> Result<(), Box<dyn std::error::Error>> {
/// let ca = std::fs::read("ca.pem")?;
/// let (cert, key) = (std::fs::read("node-b.pem")?, std::fs::read("node-b.key")?);
/// let connector = tls::mutual_connector(&ca, &cert, &key)?;
/// ractor_cluster::client_connect_enc(&node, "node-a.example:4697", connector, tls::server_name("node-a.example")?).await?;
/// # Ok(()) }
/// ```
pub fn mutual_connector(
    ca_pem: &[u8],
    cert_chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<tokio_rustls::TlsConnector, TlsError> {
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots(ca_pem)?)
        .with_client_auth_cert(certs(cert_chain_pem, "certificate chain")?, key(key_pem)?)?;
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// The name the server's certificate must carry.
///
/// # Examples
///
/// ```
/// use conduit_mcp::cluster::tls;
///
/// assert!(tls::server_name("node-a.example").is_ok());
/// assert!(tls::server_name("10.0.0.7").is_ok());
/// assert!(tls::server_name("not a name").is_err());
/// ```
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(host.to_owned()).map_err(|_| TlsError::ServerName(host.to_owned()))
}
