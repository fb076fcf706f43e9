//! Who a request is from, for the shares of the server's bounds: the
//! [`Principal`] an authentication layer named, else the peer's address.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::http::Extensions;

/// The caller of a request as an authentication layer in front of the
/// endpoint established it (a client's name, a key's id; never a secret).
///
/// Put it in the request's extensions. The sessions
/// ([`HttpConfig::max_sessions_per_principal`](super::HttpConfig::max_sessions_per_principal))
/// and the room for request bodies being read are shared out per
/// principal; a request without one counts as its peer address's (the
/// listener of [`HttpServer`](super::HttpServer) records it, as axum's
/// `ConnectInfo<SocketAddr>` does).
///
/// ```
/// use conduit_mcp::server::http::Principal;
///
/// let mut request = axum::http::Request::new(());
/// request.extensions_mut().insert(Principal::new("alice"));
/// assert_eq!(request.extensions().get::<Principal>().map(Principal::name), Some("alice"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The principal named `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::Principal;
    ///
    /// let alice = Principal::new("alice");
    /// assert_eq!(alice.name(), "alice");
    /// ```
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Principal(name.into())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// Whose share a request draws on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    Principal(Principal),
    Peer(IpAddr),
    /// Neither is known (a service mounted without peer addresses): one
    /// share for all.
    Unknown,
}

impl Owner {
    pub(crate) fn of(extensions: &Extensions) -> Owner {
        if let Some(p) = extensions.get::<Principal>() {
            return Owner::Principal(p.clone());
        }
        match extensions.get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(addr)) => Owner::Peer(addr.ip()),
            None => Owner::Unknown,
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Principal(p) => write!(f, "principal {}", p.name()),
            Owner::Peer(ip) => write!(f, "peer {ip}"),
            Owner::Unknown => f.write_str("unknown peer"),
        }
    }
}
