//! Which URLs the authorization flow reaches: the rules the
//! [module docs](super) give, applied by [`FlowClient::admit`] before
//! every request (and before the browser is sent to the authorization
//! endpoint), with [`Pins`] keeping a checked name on its checked
//! addresses.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oauth2::url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Client, Url};
use tracing::debug;

use super::error::UrlRule;
use super::AuthError;
use crate::error::ConfigError;
use crate::transport::http::http_client::{self, Connect};

/// A URL as errors and logs show it: no credentials, query or fragment.
pub(crate) fn shown(url: &str) -> String {
    crate::transport::display_url::display_url(url)
}

/// Time allowed to resolve one host name.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client of one server's authorization flow: the link's
/// settings, and a resolver that connects checked names to their checked
/// addresses only.
#[derive(Clone)]
pub(crate) struct FlowClient {
    client: Client,
    pins: Arc<Pins>,
    /// The MCP server the flow is for.
    server: Url,
}

impl std::fmt::Debug for FlowClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowClient")
            .field("server", &shown(self.server.as_str()))
            .finish_non_exhaustive()
    }
}

impl FlowClient {
    /// The flow's client for `server`, connecting as `connect` says.
    pub(crate) fn new(connect: Connect, server: Url) -> Result<Self, ConfigError> {
        let pins = Arc::new(Pins::default());
        let client = http_client::builder(connect)
            .dns_resolver(pins.clone())
            .build()
            .map_err(|e| {
                ConfigError::new("http", format!("could not build the HTTP client: {e}"))
            })?;
        Ok(Self {
            client,
            pins,
            server,
        })
    }

    /// The client (use it for a URL [`admit`](Self::admit) accepted).
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Checks `url` (what it is for: `what`) against the rules of the
    /// [module](self), resolving its name if it has one; a name that passes
    /// is pinned to the addresses checked. `query` says whether the
    /// specification lets this URL have a query.
    pub(crate) async fn admit(
        &self,
        what: &'static str,
        url: &Url,
        query: bool,
    ) -> Result<(), AuthError> {
        let refused = |rule: UrlRule| AuthError::RefusedUrl {
            what,
            origin: origin_of(url),
            rule,
        };
        check_form(&self.server, url, query).map_err(refused)?;
        if on_loopback(&self.server) || url.origin() == self.server.origin() {
            return Ok(());
        }
        match url.host() {
            Some(url::Host::Ipv4(a)) => public(IpAddr::V4(a)).map_err(refused),
            Some(url::Host::Ipv6(a)) => public(IpAddr::V6(a)).map_err(refused),
            Some(url::Host::Domain(name)) => {
                match resolve(name, url.port_or_known_default().unwrap_or(443)).await {
                    Ok(addrs) => {
                        for a in &addrs {
                            public(*a).map_err(refused)?;
                        }
                        self.pins.pin(name, addrs);
                    }
                    // Only a proxy may know it (the proxy's network is
                    // its own): a direct connection gets no address.
                    Err(problem) => {
                        debug!(url = %shown(url.as_str()), problem = %problem, "not resolved here: reachable through a proxy only");
                        self.pins.pin(name, Vec::new());
                    }
                }
                Ok(())
            }
            None => Err(refused(UrlRule::NotHttps)),
        }
    }
}

/// `scheme://host[:port]` of `url` (never its credentials).
fn origin_of(url: &Url) -> String {
    match url.origin() {
        o @ url::Origin::Tuple(..) => o.ascii_serialization(),
        url::Origin::Opaque(_) => format!("{}:", url.scheme()),
    }
}

/// `true` when `url`'s host is a loopback IP literal or `localhost`.
fn on_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(a)) => kind(IpAddr::V4(a)) == Some("loopback"),
        Some(url::Host::Ipv6(a)) => kind(IpAddr::V6(a)) == Some("loopback"),
        None => false,
    }
}

/// The rules that need no lookup: scheme, credentials, query.
fn check_form(server: &Url, url: &Url, query: bool) -> Result<(), UrlRule> {
    match url.scheme() {
        "https" => {}
        "http" if on_loopback(server) && on_loopback(url) => {}
        _ => return Err(UrlRule::NotHttps),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlRule::Credentials);
    }
    if !query && (url.query().is_some() || url.fragment().is_some()) {
        return Err(UrlRule::Query);
    }
    Ok(())
}

/// `Ok` for an address on the public Internet; the rule it breaks
/// otherwise.
fn public(address: IpAddr) -> Result<(), UrlRule> {
    match kind(address) {
        None => Ok(()),
        Some(kind) => Err(UrlRule::Internal { address, kind }),
    }
}

/// What an address that is not public is (`None`: public). IPv4 addresses
/// inside IPv6 ones (mapped, compatible, NAT64, 6to4) count as the IPv4
/// address.
fn kind(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(a) => kind_v4(a),
        IpAddr::V6(a) => match embedded_v4(a) {
            Some(v4) => kind_v4(v4),
            None => kind_v6(a),
        },
    }
}

fn kind_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, ..] = a.octets();
    Some(if a.is_loopback() {
        "loopback"
    } else if a.is_private() {
        "private"
    } else if a.is_link_local() {
        "link-local"
    } else if o0 == 0 {
        "unspecified"
    } else if o0 == 100 && (o1 & 0xc0) == 64 {
        "shared (carrier-grade NAT)"
    } else if a.is_multicast() || a.is_broadcast() {
        "multicast"
    } else if o0 >= 240 {
        "reserved"
    } else {
        return None;
    })
}

fn kind_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s0 = a.segments()[0];
    Some(if a.is_loopback() {
        "loopback"
    } else if a.is_unspecified() {
        "unspecified"
    } else if (s0 & 0xfe00) == 0xfc00 {
        "private (unique local)"
    } else if (s0 & 0xffc0) == 0xfe80 || (s0 & 0xffc0) == 0xfec0 {
        "link-local"
    } else if a.is_multicast() {
        "multicast"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 one carries: `::ffff:a.b.c.d`, `::a.b.c.d`,
/// `64:ff9b::a.b.c.d` (NAT64) and `2002:aabb:ccdd::` (6to4).
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if let Some(v4) = a.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !a.is_loopback() && !a.is_unspecified() {
        return Some(low);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// Every address of `name`, within [`RESOLVE_TIMEOUT`].
async fn resolve(name: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    let looked = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, port)))
        .await
        .map_err(|_| format!("{name} did not resolve within {RESOLVE_TIMEOUT:?}"))?
        .map_err(|e| format!("{name} does not resolve: {e}"))?;
    let addrs: Vec<IpAddr> = looked.map(|a| a.ip()).collect();
    if addrs.is_empty() {
        return Err(format!("{name} resolves to no address"));
    }
    Ok(addrs)
}

/// The flow client's resolver: a name [`admit`](FlowClient::admit)
/// checked resolves to the addresses it checked; any other (the server's
/// own, a proxy's) as the system says.
#[derive(Default)]
pub(crate) struct Pins {
    names: Mutex<HashMap<String, Vec<IpAddr>>>,
}

impl Pins {
    fn pin(&self, name: &str, addrs: Vec<IpAddr>) {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        names.insert(name.to_ascii_lowercase(), addrs);
    }
}

impl Resolve for Pins {
    fn resolve(&self, name: Name) -> Resolving {
        let name = name.as_str().to_ascii_lowercase();
        let pinned = {
            let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
            names.get(&name).cloned()
        };
        Box::pin(async move {
            let addrs = match pinned {
                Some(addrs) if addrs.is_empty() => {
                    return Err(format!("{name} did not resolve when it was checked").into())
                }
                Some(addrs) => addrs,
                None => resolve(&name, 0).await?,
            };
            // Port 0: the URL's (or its scheme's) port is used.
            let addrs: Addrs = Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(u: &str) -> Url {
        Url::parse(u).unwrap()
    }

    /// One flow client per server (building one loads the TLS roots).
    fn flow(server: &str) -> FlowClient {
        static FLOWS: Mutex<Vec<(String, FlowClient)>> = Mutex::new(Vec::new());
        let mut flows = FLOWS.lock().unwrap();
        if let Some((_, f)) = flows.iter().find(|(s, _)| s == server) {
            return f.clone();
        }
        let connect = Connect::new(Duration::from_secs(10), true);
        let f = FlowClient::new(connect, url(server)).unwrap();
        flows.push((server.to_owned(), f.clone()));
        f
    }

    /// The rule `target` breaks for a flow of `server` (`None`: admitted).
    async fn rule(server: &str, target: &str, query: bool) -> Option<UrlRule> {
        match flow(server).admit("x", &url(target), query).await {
            Ok(()) => None,
            Err(AuthError::RefusedUrl { rule, .. }) => Some(rule),
            Err(e) => panic!("{target}: {e}"),
        }
    }

    #[tokio::test]
    async fn plain_http_only_from_loopback_to_loopback() {
        for server in [
            "http://127.0.0.1:1/mcp",
            "http://localhost:1/mcp",
            "http://[::1]:1/",
        ] {
            for target in [
                "http://127.0.0.1:2/x",
                "http://localhost:2/x",
                "http://[::1]:2/x",
                "http://127.8.9.10/x",
            ] {
                assert_eq!(rule(server, target, false).await, None, "{server} {target}");
            }
            for target in [
                "http://192.0.2.7/x",
                "http://10.0.0.1/x",
                "http://example.com/",
            ] {
                assert_eq!(
                    rule(server, target, false).await,
                    Some(UrlRule::NotHttps),
                    "{server} {target}"
                );
            }
        }
        // A server that is not on loopback gets https only, even for
        // its own origin.
        let server = "http://192.0.2.7:8000/mcp";
        for target in ["http://127.0.0.1/x", "http://192.0.2.7:8000/.well-known/x"] {
            assert_eq!(rule(server, target, false).await, Some(UrlRule::NotHttps));
        }
        for target in ["file:///etc/passwd", "ftp://192.0.2.9/", "data:,{}"] {
            assert_eq!(
                rule("http://127.0.0.1:1/", target, false).await,
                Some(UrlRule::NotHttps)
            );
        }
    }

    #[tokio::test]
    async fn no_credentials_and_no_query_where_none_is_defined() {
        let server = "https://192.0.2.7/mcp";
        assert_eq!(
            rule(server, "https://u:p@192.0.2.8/x", false).await,
            Some(UrlRule::Credentials)
        );
        assert_eq!(
            rule(server, "https://u@192.0.2.8/x", true).await,
            Some(UrlRule::Credentials)
        );
        assert_eq!(
            rule(server, "https://192.0.2.8/x?a=1", false).await,
            Some(UrlRule::Query)
        );
        assert_eq!(
            rule(server, "https://192.0.2.8/x?", false).await,
            Some(UrlRule::Query)
        );
        assert_eq!(rule(server, "https://192.0.2.8/x?a=1", true).await, None);
        // Loopback to loopback too.
        assert_eq!(
            rule(
                "http://127.0.0.1:1/",
                "http://127.0.0.1:2/a?confirm=yes",
                false
            )
            .await,
            Some(UrlRule::Query)
        );
    }

    #[tokio::test]
    async fn a_server_not_on_loopback_reaches_public_addresses_and_its_own_origin_only() {
        for server in [
            "https://192.0.2.7/mcp",
            "https://10.0.0.5/mcp",
            "https://mcp.example/mcp",
        ] {
            for (target, kind) in [
                ("https://127.0.0.1/x", "loopback"),
                ("https://127.1/x", "loopback"),
                ("https://2130706433/x", "loopback"),
                ("https://[::1]/x", "loopback"),
                ("https://[::ffff:127.0.0.1]/x", "loopback"),
                ("https://[::ffff:10.1.2.3]/x", "private"),
                ("https://[64:ff9b::a9fe:a9fe]/x", "link-local"),
                ("https://[2002:c0a8:101::]/x", "private"),
                ("https://10.1.2.3/x", "private"),
                ("https://172.16.0.1/x", "private"),
                ("https://192.168.1.1/x", "private"),
                ("https://169.254.169.254/x", "link-local"),
                ("https://100.64.0.1/x", "shared (carrier-grade NAT)"),
                ("https://0.0.0.0/x", "unspecified"),
                ("https://[::]/x", "unspecified"),
                ("https://[fd00::1]/x", "private (unique local)"),
                ("https://[fe80::1]/x", "link-local"),
                ("https://224.0.0.1/x", "multicast"),
                ("https://255.255.255.255/x", "multicast"),
                ("https://240.0.0.1/x", "reserved"),
                // A name is resolved and its addresses checked.
                ("https://localhost:9/x", "loopback"),
            ] {
                match rule(server, target, false).await {
                    Some(UrlRule::Internal { kind: k, .. }) => {
                        assert_eq!(k, kind, "{server} {target}")
                    }
                    other => panic!("{server} {target}: {other:?}"),
                }
            }
            for target in [
                "https://192.0.2.8/x",
                "https://203.0.113.9:8443/x",
                "https://[2001:db8::1]/x",
            ] {
                assert_eq!(rule(server, target, false).await, None, "{server} {target}");
            }
        }
        // The server's own origin, whatever its address.
        assert_eq!(
            rule(
                "https://10.0.0.5/mcp",
                "https://10.0.0.5/.well-known/x",
                false
            )
            .await,
            None
        );
        assert!(matches!(
            rule(
                "https://10.0.0.5/mcp",
                "https://10.0.0.5:8443/.well-known/x",
                false
            )
            .await,
            Some(UrlRule::Internal { .. })
        ));
    }

    #[tokio::test]
    async fn a_loopback_server_may_point_anywhere_over_https() {
        for target in [
            "https://10.1.2.3/x",
            "https://169.254.169.254/x",
            "https://192.0.2.8/x",
            "https://127.0.0.1:9/x",
        ] {
            assert_eq!(
                rule("http://127.0.0.1:1/mcp", target, false).await,
                None,
                "{target}"
            );
        }
    }

    #[tokio::test]
    async fn the_error_names_the_origin_without_credentials_or_path() {
        let e = flow("https://192.0.2.7/mcp")
            .admit(
                "the protected resource metadata",
                &url("https://user:secret@127.0.0.1:8080/a/b?c=d"),
                false,
            )
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(
                "the protected resource metadata at https://127.0.0.1:8080 is refused"
            ),
            "{text}"
        );
        assert!(!text.contains("secret") && !text.contains("/a/b"), "{text}");
    }

    #[tokio::test]
    async fn a_checked_name_resolves_to_its_checked_addresses_only() {
        let pins = Pins::default();
        pins.pin("Rebind.Example", vec!["192.0.2.44".parse().unwrap()]);
        let got: Vec<SocketAddr> = pins
            .resolve("rebind.example".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert_eq!(got, ["192.0.2.44:0".parse::<SocketAddr>().unwrap()]);
        // A name that did not resolve when checked gets no address later
        // (only a proxy may reach it).
        let server = "https://192.0.2.7/mcp";
        assert_eq!(rule(server, "https://nowhere.invalid/x", false).await, None);
        let later = flow(server)
            .pins
            .resolve("nowhere.invalid".parse().unwrap())
            .await;
        assert!(later.is_err());
    }
}
