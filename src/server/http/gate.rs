//! The rules a request's headers are checked by (its `Host` against DNS
//! rebinding, its `Origin`, the authorization hook), and the small helpers
//! that build responses.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Response, StatusCode};

use crate::jsonrpc::{codes, encode, ErrorObject, RequestId};

use super::config::{Allow, HttpConfig};

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
pub(crate) fn host_allowed(allow: &Allow, headers: &HeaderMap) -> bool {
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
pub(crate) fn origin_allowed(allow: &Allow, headers: &HeaderMap) -> bool {
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
pub(crate) fn shown(value: Option<&HeaderValue>) -> String {
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

/// Whether the request passes [`HttpConfig::authorize`] (the bearer
/// token is a [`BearerLayer`](super::BearerLayer) in front).
pub(crate) fn authorized(config: &HttpConfig, parts: &axum::http::request::Parts) -> bool {
    config.authorize.as_ref().is_none_or(|f| f(parts))
}

/// A JSON body with `status`.
pub(crate) fn json(status: StatusCode, body: impl Into<Body>) -> Response<Body> {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A JSON-RPC error answer with `status` (an answer the transport gives
/// itself, as the dispatcher made it: no refusal, which is a
/// [`Rejection`](super::Rejection)).
pub(crate) fn error_object(
    status: StatusCode,
    id: Option<RequestId>,
    e: &ErrorObject,
) -> Response<Body> {
    json(status, encode::error(&id, e))
}

/// A response with no body.
pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// The HTTP status of a 2026-07-28 era error answer: 404 for an unknown
/// method, 400 for a malformed request (and the era's protocol errors),
/// else 200 (the error is the handler's answer).
pub(crate) fn status_for(code: i64) -> StatusCode {
    match code {
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        codes::PARSE_ERROR
        | codes::INVALID_REQUEST
        | codes::INVALID_PARAMS
        | codes::HEADER_MISMATCH
        | codes::MISSING_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// What the client's `Accept` header allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accepts {
    pub(crate) fn of(headers: &HeaderMap) -> Accepts {
        let mut any = false;
        let mut a = Accepts {
            json: false,
            sse: false,
        };
        let values = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok());
        for range in values.flat_map(|v| {
            any = true;
            v.split(',')
        }) {
            let media = range.split(';').next().unwrap_or("").trim();
            let is = |m: &str| media.eq_ignore_ascii_case(m);
            if is("*/*") {
                a.json = true;
                a.sse = true;
            } else if is("application/json") || is("application/*") {
                a.json = true;
            } else if is("text/event-stream") || is("text/*") {
                a.sse = true;
            }
        }
        if !any {
            return Accepts {
                json: true,
                sse: true,
            };
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn accept_ranges() {
        let a = Accepts::of(&headers(&[(
            "accept",
            "application/json, text/event-stream",
        )]));
        assert!(a.json && a.sse);
        let a = Accepts::of(&headers(&[("accept", "text/event-stream")]));
        assert!(!a.json && a.sse);
        let a = Accepts::of(&headers(&[("accept", "text/html")]));
        assert!(!a.json && !a.sse);
        let a = Accepts::of(&headers(&[("accept", "Application/JSON; q=0.9, TEXT/*")]));
        assert!(a.json && a.sse);
        let a = Accepts::of(&HeaderMap::new());
        assert!(a.json && a.sse);
    }
}
