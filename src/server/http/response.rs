//! The responses the endpoint gives itself (not refusals, which are
//! [`Rejection`](super::Rejection)s): JSON bodies, empty ones, and which of
//! JSON or an SSE stream the client's `Accept` header allows.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Response, StatusCode};

use crate::jsonrpc::{encode, ErrorObject, RequestId};

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

/// What the client's `Accept` header allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    json: bool,
    sse: bool,
}

impl Accepts {
    /// Whether a JSON response is accepted.
    #[inline]
    pub(crate) fn json(self) -> bool {
        self.json
    }

    /// Whether an SSE stream is accepted.
    #[inline]
    pub(crate) fn sse(self) -> bool {
        self.sse
    }

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
