//! A node server built with the checks ractor_cluster leaves to you: a
//! cookie that is not empty, a listener on loopback unless told otherwise,
//! and no transitive connections.

use std::net::IpAddr;

use ractor_cluster::node::NodeConnectionMode;
use ractor_cluster::{IncomingEncryptionMode, NodeServer};

/// Why a [`NodeConfig`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeConfigError {
    /// The cookie is empty: every node with an empty cookie would pass the
    /// handshake.
    #[error("the cookie is empty: use a long random secret shared by the cluster's nodes")]
    EmptyCookie,
}

/// How to build this node's `NodeServer` (ractor_cluster's listener and
/// session manager).
///
/// Unlike `NodeServer::new`, it refuses an empty cookie, listens on
/// loopback unless [`listen_addr`](Self::listen_addr) says otherwise (the
/// `NodeServer` default is every interface), and never connects to the
/// peers of a peer (`NodeConnectionMode::Isolated`: with `Transitive`, a
/// node connects to every node its peers know, so one peer decides whom
/// this node talks to). The cookie never appears in `Debug`.
///
/// ```no_run
/// # async fn f(cookie: String) -> Result<(), Box<dyn std::error::Error>> {
/// use conduit_mcp::cluster::NodeConfig;
/// let server = NodeConfig::new("node-a", "host-a", cookie).port(4697).build()?;
/// let (node, _) = ractor::Actor::spawn(None, server, ()).await?;
/// # let _ = node; Ok(()) }
/// ```
pub struct NodeConfig {
    name: String,
    hostname: String,
    cookie: String,
    port: u16,
    listen: IpAddr,
    encryption: Option<IncomingEncryptionMode>,
    max_inbound_frame_size: Option<u64>,
}

impl std::fmt::Debug for NodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeConfig")
            .field("name", &self.name)
            .field("hostname", &self.hostname)
            .field("cookie", &"<redacted>")
            .field("port", &self.port)
            .field("listen", &self.listen)
            .field("tls", &self.encryption.is_some())
            .field("max_inbound_frame_size", &self.max_inbound_frame_size)
            .finish()
    }
}

impl NodeConfig {
    /// A node named `name@hostname` (what it declares to its peers), with
    /// the cluster's `cookie`. Port 0 (the system picks one), loopback, no
    /// TLS.
    pub fn new(
        name: impl Into<String>,
        hostname: impl Into<String>,
        cookie: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            hostname: hostname.into(),
            cookie: cookie.into(),
            port: 0,
            listen: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            encryption: None,
            max_inbound_frame_size: None,
        }
    }

    /// The port to listen on (0: the system picks one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The address to listen on (default: 127.0.0.1).
    pub fn listen_addr(mut self, addr: IpAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Accepts connections over TLS ([`tls::acceptor`](super::tls::acceptor),
    /// or [`tls::mutual_acceptor`](super::tls::mutual_acceptor) to require
    /// client certificates).
    pub fn tls(mut self, acceptor: IncomingEncryptionMode) -> Self {
        self.encryption = Some(acceptor);
        self
    }

    /// The largest inbound cluster frame (default: ractor_cluster's
    /// 16 MiB).
    pub fn max_inbound_frame_size(mut self, bytes: u64) -> Self {
        self.max_inbound_frame_size = Some(bytes);
        self
    }

    /// The node server, to spawn (`ractor::Actor::spawn(None, server, ())`).
    pub fn build(self) -> Result<NodeServer, NodeConfigError> {
        if self.cookie.is_empty() {
            return Err(NodeConfigError::EmptyCookie);
        }
        let server = NodeServer::new(
            self.port,
            self.cookie,
            self.name,
            self.hostname,
            self.encryption,
            Some(NodeConnectionMode::Isolated),
        )
        .with_listen_addr(self.listen);
        Ok(match self.max_inbound_frame_size {
            Some(bytes) => server.with_max_inbound_frame_size(bytes),
            None => server,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_cookie_is_refused_and_a_cookie_never_shows() {
        let e = NodeConfig::new("a", "h", "").build().unwrap_err();
        assert_eq!(e, NodeConfigError::EmptyCookie);
        let c = NodeConfig::new("a", "h", "s3cr3t-cookie");
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert!(c.build().is_ok());
    }
}
