//! Who a request is from, for the shares of the server's bounds: the
//! [`Principal`] an authentication layer named, else the group of
//! addresses the peer's address belongs to ([`PeerGroup`]): one owner can
//! be many addresses.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::http::Extensions;

/// The caller of a request as an authentication layer in front of the
/// endpoint established it (a client's name, a key's id; never a secret).
///
/// Put it in the request's extensions. The sessions
/// ([`HttpConfig::max_sessions_per_principal`](super::HttpConfig::max_sessions_per_principal))
/// and the room for request bodies being read are shared out per
/// principal; a request without one counts as its peer address's group:
/// all of loopback, one IPv4 address, or one IPv6 /64 (the listener of
/// [`HttpServer`](super::HttpServer) records the address, as axum's
/// `ConnectInfo<SocketAddr>` does). Connections are shared out per group
/// of addresses only: the listener admits them before any request names
/// a principal.
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

/// The addresses that count as one peer, because one owner can use them
/// all: any local process can connect from every loopback address
/// (127.0.0.0/8 and `::1`), and a host is commonly given a whole IPv6 /64.
/// An IPv4 address counts alone; an IPv4-mapped IPv6 address is its IPv4
/// address.
///
/// ```
/// use conduit_mcp::server::http::PeerGroup;
///
/// let a = PeerGroup::of("127.0.0.1".parse().unwrap());
/// assert_eq!(a, PeerGroup::of("127.9.9.9".parse().unwrap()));
/// assert_eq!(a, PeerGroup::Loopback);
/// assert_eq!(
///     PeerGroup::of("2001:db8::1".parse().unwrap()),
///     PeerGroup::of("2001:db8::ffff".parse().unwrap()),
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PeerGroup {
    /// Every loopback address: the processes of this machine.
    Loopback,
    /// One IPv4 address.
    V4(Ipv4Addr),
    /// The first 64 bits of an IPv6 address.
    V6Net(u64),
}

impl PeerGroup {
    /// The group of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        let ip = ip.to_canonical();
        if ip.is_loopback() {
            return PeerGroup::Loopback;
        }
        match ip {
            IpAddr::V4(v4) => PeerGroup::V4(v4),
            // The upper half of a u128: it fits in 64 bits.
            IpAddr::V6(v6) => PeerGroup::V6Net((u128::from(v6) >> 64) as u64),
        }
    }
}

impl fmt::Display for PeerGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerGroup::Loopback => f.write_str("loopback"),
            PeerGroup::V4(ip) => write!(f, "{ip}"),
            PeerGroup::V6Net(net) => {
                write!(f, "{}/64", Ipv6Addr::from(u128::from(*net) << 64))
            }
        }
    }
}

/// Whose share of the server's bounds a request draws on: the
/// [`Principal`] an authentication layer set, else the [`PeerGroup`] of the
/// peer's address.
///
/// Layers of your own can key what they bound by it, as the server does.
///
/// ```
/// use conduit_mcp::server::http::{Owner, Principal};
///
/// let mut request = axum::http::Request::new(());
/// assert_eq!(Owner::of(request.extensions()), Owner::Unknown);
/// request.extensions_mut().insert(Principal::new("alice"));
/// assert_eq!(Owner::of(request.extensions()), Owner::Principal(Principal::new("alice")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Owner {
    /// The principal an authentication layer named.
    Principal(Principal),
    /// The group of the peer's address, from axum's
    /// `ConnectInfo<SocketAddr>`.
    Peer(PeerGroup),
    /// Neither is known (a service mounted without peer addresses): one
    /// share for all.
    Unknown,
}

impl Owner {
    /// The owner of a request with these extensions.
    pub fn of(extensions: &Extensions) -> Owner {
        if let Some(p) = extensions.get::<Principal>() {
            return Owner::Principal(p.clone());
        }
        match extensions.get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(addr)) => Owner::Peer(PeerGroup::of(addr.ip())),
            None => Owner::Unknown,
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Principal(p) => write!(f, "principal {}", p.name()),
            Owner::Peer(group) => write!(f, "peer {group}"),
            Owner::Unknown => f.write_str("unknown peer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(ip: &str) -> PeerGroup {
        PeerGroup::of(ip.parse().unwrap())
    }

    #[test]
    fn one_owner_can_be_many_addresses() {
        // Every local process can use all of these.
        for ip in [
            "127.0.0.1",
            "127.0.0.2",
            "127.255.255.254",
            "::1",
            "::ffff:127.0.0.9",
        ] {
            assert_eq!(group(ip), PeerGroup::Loopback, "{ip}");
        }
        // One host's IPv6 /64.
        assert_eq!(
            group("2001:db8:1:2::1"),
            group("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_ne!(group("2001:db8:1:2::1"), group("2001:db8:1:3::1"));
        assert_eq!(group("2001:db8:1:2::1").to_string(), "2001:db8:1:2::/64");
        // IPv4 addresses count alone, mapped or not.
        assert_eq!(group("::ffff:192.0.2.7"), group("192.0.2.7"));
        assert_ne!(group("192.0.2.7"), group("192.0.2.8"));
    }

    #[test]
    fn the_owner_of_a_request_is_its_principal_else_its_peers_group() {
        let mut ext = Extensions::new();
        assert_eq!(Owner::of(&ext), Owner::Unknown);
        ext.insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 3], 4000))));
        assert_eq!(Owner::of(&ext), Owner::Peer(PeerGroup::Loopback));
        ext.insert(Principal::new("alice"));
        assert_eq!(Owner::of(&ext), Owner::Principal(Principal::new("alice")));
    }
}
