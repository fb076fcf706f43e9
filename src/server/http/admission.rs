//! The first check of every request a listener serves: its `Host` (against
//! DNS rebinding) and its `Origin` (against pages in a browser), as a
//! tower [`Layer`](tower::Layer).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Request, Response};
use axum::response::IntoResponse;

use crate::throttle::Throttle;

use super::config::{Allow, HttpConfig};
use super::Rejection;

/// Refuses a request whose `Host` or `Origin` is not allowed, with 403
/// ([`Rejection::HostNotAllowed`], [`Rejection::OriginNotAllowed`]),
/// before the inner service sees it; logs the refusals at WARN, a few
/// times a minute, not once per request.
///
/// A request without `Origin` passes the origin check (it does not come
/// from a page in a browser); one without `Host` fails the host check
/// unless hosts are [`Allow::Any`]. [`HttpService`](super::HttpService)
/// and the gateway apply it to every route they serve, `/health` and
/// `/metrics` included (a rebinding page can reach them all). Put it on
/// routes of your own the same way:
///
/// ```
/// use conduit_mcp::server::http::{Allow, HostOriginLayer};
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let app = axum::Router::new()
///     .route("/status", axum::routing::get(|| async { "ok" }))
///     .layer(HostOriginLayer::new(Allow::Loopback, Allow::Loopback));
/// let rebinding = axum::http::Request::get("/status")
///     .header("host", "attacker.example:8080")
///     .body(axum::body::Body::empty())?;
/// assert_eq!(app.oneshot(rebinding).await?.status(), 403);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct HostOriginLayer {
    rules: Arc<Rules>,
}

#[derive(Debug, Clone)]
struct Rules {
    hosts: Allow,
    origins: Allow,
    /// Loopback origins pass besides `origins`.
    loopback_origins: bool,
    /// The `server` field of the refusals' log lines.
    name: Arc<str>,
    /// The rate of those lines: for hosts, for origins.
    warned: Arc<[Throttle; 2]>,
}

impl HostOriginLayer {
    /// Allows the `Host` values `hosts` and the `Origin` values `origins`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::{Allow, HostOriginLayer};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let hosts = Allow::List(vec!["mcp.example.com".into()]);
    /// let app = axum::Router::new()
    ///     .route("/status", axum::routing::get(|| async { "ok" }))
    ///     .layer(HostOriginLayer::new(hosts, Allow::Loopback));
    /// let request = axum::http::Request::get("/status")
    ///     .header("host", "mcp.example.com")
    ///     .body(axum::body::Body::empty())?;
    /// assert_eq!(app.oneshot(request).await?.status(), 200);
    /// # Ok(()) }
    /// ```
    pub fn new(hosts: Allow, origins: Allow) -> Self {
        HostOriginLayer {
            rules: Arc::new(Rules {
                hosts,
                origins,
                loopback_origins: false,
                name: Arc::from("http"),
                warned: Arc::default(),
            }),
        }
    }

    /// The rules of `config` ([`HttpConfig::allowed_hosts`],
    /// [`HttpConfig::allowed_origins`]), its log lines named after its
    /// server.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{HostOriginLayer, HttpConfig};
    /// use conduit_mcp::server::ServerConfig;
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
    /// let app = axum::Router::new()
    ///     .route("/status", axum::routing::get(|| async { "ok" }))
    ///     .layer(HostOriginLayer::of(&config)); // the MCP endpoint's rules: loopback only
    /// let request = axum::http::Request::get("/status")
    ///     .header("host", "evil.example")
    ///     .body(axum::body::Body::empty())?;
    /// assert_eq!(app.oneshot(request).await?.status(), 403);
    /// # Ok(()) }
    /// ```
    pub fn of(config: &HttpConfig) -> Self {
        HostOriginLayer::new(
            config.get_allowed_hosts().clone(),
            config.get_allowed_origins().clone(),
        )
        .named(config.server.server_info.name.as_str())
    }

    /// Lets loopback origins (`http://localhost:5173`, any port) in as
    /// well as those of `origins`: what a local tool next to a list of
    /// remote pages wants.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::{Allow, HostOriginLayer};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let origins = Allow::List(vec!["https://app.example.com".into()]);
    /// let layer = HostOriginLayer::new(Allow::Loopback, origins).with_loopback_origins();
    /// let app = axum::Router::new()
    ///     .route("/status", axum::routing::get(|| async { "ok" }))
    ///     .layer(layer);
    /// let dev_page = axum::http::Request::get("/status")
    ///     .header("host", "localhost")
    ///     .header("origin", "http://localhost:5173")
    ///     .body(axum::body::Body::empty())?;
    /// assert_eq!(app.oneshot(dev_page).await?.status(), 200);
    /// # Ok(()) }
    /// ```
    pub fn with_loopback_origins(mut self) -> Self {
        Arc::make_mut(&mut self.rules).loopback_origins = true;
        self
    }

    /// Names the refusals' log lines (their `server` field; `"http"` by
    /// default).
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Self {
        Arc::make_mut(&mut self.rules).name = name.into();
        self
    }
}

impl Rules {
    /// The refusal of a request with these headers, if any.
    fn check(&self, headers: &axum::http::HeaderMap) -> Option<Rejection> {
        if !host_allowed(&self.hosts, headers) {
            if let Some(skipped) = self.warned[0].admit() {
                tracing::warn!(server = %self.name, host = %shown(headers.get(header::HOST)), skipped, "request refused: Host not allowed (DNS rebinding protection)");
            }
            return Some(Rejection::HostNotAllowed);
        }
        let origin_ok = origin_allowed(&self.origins, headers)
            || (self.loopback_origins && origin_allowed(&Allow::Loopback, headers));
        if !origin_ok {
            if let Some(skipped) = self.warned[1].admit() {
                tracing::warn!(server = %self.name, origin = %shown(headers.get(header::ORIGIN)), skipped, "request refused: Origin not allowed");
            }
            return Some(Rejection::OriginNotAllowed);
        }
        None
    }
}

impl<S> tower::Layer<S> for HostOriginLayer {
    type Service = HostOrigin<S>;

    fn layer(&self, inner: S) -> HostOrigin<S> {
        HostOrigin {
            inner,
            rules: self.rules.clone(),
        }
    }
}

/// The service of a [`HostOriginLayer`] around `S`.
#[derive(Debug, Clone)]
pub struct HostOrigin<S> {
    inner: S,
    rules: Arc<Rules>,
}

impl<S, B> tower::Service<Request<B>> for HostOrigin<S>
where
    S: tower::Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = AdmissionFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        match self.rules.check(req.headers()) {
            Some(refused) => AdmissionFuture::refused(refused.into_response()),
            None => AdmissionFuture::admitted(self.inner.call(req)),
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of an admission layer's service ([`HostOrigin`],
    /// [`Bearer`](super::Bearer)): its refusal, or the inner service's
    /// answer.
    pub struct AdmissionFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = Projected]
    enum State<F> {
        Refused { response: Option<Response<Body>> },
        Admitted { #[pin] future: F },
    }
}

impl<F> AdmissionFuture<F> {
    pub(crate) fn refused(response: Response<Body>) -> Self {
        AdmissionFuture {
            state: State::Refused {
                response: Some(response),
            },
        }
    }

    pub(crate) fn admitted(future: F) -> Self {
        AdmissionFuture {
            state: State::Admitted { future },
        }
    }
}

impl<F, E> Future for AdmissionFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            Projected::Refused { response } => match response.take() {
                Some(r) => Poll::Ready(Ok(r)),
                // Polled after it completed: a contract of `Future` the
                // caller broke; an empty 500 rather than a panic.
                None => Poll::Ready(Ok(super::response::empty(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                ))),
            },
            Projected::Admitted { future } => future.poll(cx),
        }
    }
}

/// The loopback names a local server answers to.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// The host part of a `Host` header or an origin's authority (the port
/// removed; compare it ignoring ASCII case).
fn host_part(authority: &str) -> &str {
    let a = authority.trim();
    if a.starts_with('[') {
        // An IPv6 literal: `[::1]` or `[::1]:8080`; anything else after
        // the `]` makes it no literal (kept whole, so it matches nothing).
        return match a.find(']') {
            Some(end) => {
                let rest = &a[end + 1..];
                let port_only = rest.is_empty()
                    || rest
                        .strip_prefix(':')
                        .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
                if port_only {
                    &a[..=end]
                } else {
                    a
                }
            }
            None => a,
        };
    }
    match a.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => a,
    }
}

/// Whether `name` is one of the loopback names.
fn is_loopback(name: &str) -> bool {
    LOOPBACK.iter().any(|l| l.eq_ignore_ascii_case(name))
}

/// Whether the `Host` header is one this server answers to.
fn host_allowed(allow: &Allow, headers: &HeaderMap) -> bool {
    if *allow == Allow::Any {
        return true;
    }
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = host_part(host);
    match allow {
        Allow::Any => true,
        Allow::Loopback => is_loopback(name),
        Allow::List(list) => {
            let full = host.trim();
            list.iter()
                .any(|h| h.eq_ignore_ascii_case(name) || h.eq_ignore_ascii_case(full))
        }
    }
}

/// Whether the `Origin` header, if any, is allowed (a request without one
/// does not come from a browser page).
fn origin_allowed(allow: &Allow, headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    match allow {
        Allow::Any => true,
        Allow::List(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin.trim())),
        Allow::Loopback => {
            let o = origin.trim().to_ascii_lowercase();
            let authority = o
                .strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"));
            authority.is_some_and(|a| !a.contains('/') && is_loopback(host_part(a)))
        }
    }
}

/// A header value a peer chose, as a log shows it: at most 128 bytes of
/// it (a line in a log must not have the peer's size).
fn shown(value: Option<&HeaderValue>) -> String {
    const MAX: usize = 128;
    let Some(v) = value else {
        return "(none)".to_owned();
    };
    let bytes = v.as_bytes();
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX)]);
    if bytes.len() > MAX {
        format!("{text}... ({} bytes)", bytes.len())
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer as _, ServiceExt as _};

    fn echo() -> impl tower::Service<
        Request<Body>,
        Response = Response<Body>,
        Error = std::convert::Infallible,
        Future = impl Send,
    > + Clone {
        tower::service_fn(|_req: Request<Body>| async {
            Ok::<_, std::convert::Infallible>(Response::new(Body::from("in")))
        })
    }

    async fn status(layer: &HostOriginLayer, headers: &[(&str, &str)]) -> u16 {
        let mut req = Request::new(Body::empty());
        for (k, v) in headers {
            req.headers_mut().insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let resp = layer.layer(echo()).oneshot(req).await.unwrap();
        resp.status().as_u16()
    }

    #[tokio::test]
    async fn refuses_hosts_and_origins_outside_its_rules() {
        let loopback = HostOriginLayer::new(Allow::Loopback, Allow::Loopback);
        assert_eq!(status(&loopback, &[("host", "localhost:1")]).await, 200);
        assert_eq!(status(&loopback, &[("host", "evil.example")]).await, 403);
        assert_eq!(status(&loopback, &[]).await, 403, "no Host");
        let page = [("host", "127.0.0.1"), ("origin", "https://app.example")];
        assert_eq!(status(&loopback, &page).await, 403);
        let listed = HostOriginLayer::new(
            Allow::Loopback,
            Allow::List(vec!["https://app.example".into()]),
        );
        assert_eq!(status(&listed, &page).await, 200);
        let local = [("host", "127.0.0.1"), ("origin", "http://localhost:5173")];
        assert_eq!(status(&listed, &local).await, 403, "a list alone");
        let both = listed.with_loopback_origins();
        assert_eq!(status(&both, &local).await, 200);
        assert_eq!(status(&both, &page).await, 200);
        let other = [("host", "127.0.0.1"), ("origin", "https://evil.example")];
        assert_eq!(status(&both, &other).await, 403);
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_hosts_pass_and_others_do_not() {
        for ok in ["localhost", "127.0.0.1:8080", "[::1]:3000", "LOCALHOST:1"] {
            assert!(
                host_allowed(&Allow::Loopback, &headers(&[("host", ok)])),
                "{ok}"
            );
        }
        for bad in [
            "evil.example.com",
            "127.0.0.1.evil.com",
            "localhost.evil:80",
            "[::2]",
        ] {
            assert!(
                !host_allowed(&Allow::Loopback, &headers(&[("host", bad)])),
                "{bad}"
            );
        }
        assert!(!host_allowed(&Allow::Loopback, &HeaderMap::new()));
        let list = Allow::List(vec!["mcp.example.com".into()]);
        assert!(host_allowed(
            &list,
            &headers(&[("host", "mcp.example.com:443")])
        ));
        assert!(!host_allowed(&list, &headers(&[("host", "localhost")])));
    }

    #[test]
    fn origins_are_checked_only_when_sent() {
        assert!(origin_allowed(&Allow::Loopback, &HeaderMap::new()));
        assert!(origin_allowed(
            &Allow::Loopback,
            &headers(&[("origin", "http://127.0.0.1:5173")])
        ));
        for bad in [
            "http://evil.example.com",
            "null",
            "http://localhost.evil.com",
            "file://localhost",
        ] {
            assert!(
                !origin_allowed(&Allow::Loopback, &headers(&[("origin", bad)])),
                "{bad}"
            );
        }
    }
}
