//! Reading a request body whole, within the bounds of an [`HttpConfig`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use bytes::Bytes;

use crate::deadline::After;
use crate::jsonrpc::Message;
use crate::memory_estimate::{self, Estimate};

use super::config::HttpConfig;
use super::principal::Owner;
use super::room::{BodyRoom, Closed};
use super::Rejection;

/// Reads request bodies whole, as the endpoint of an [`HttpConfig`] reads
/// them: at most [`max_message_bytes`](crate::server::ServerConfig::max_message_bytes)
/// (413 otherwise, before a byte is read when `Content-Length` says so),
/// within [`body_timeout`](HttpConfig::body_timeout) (408), and within a
/// share of [`max_inbound_bytes`](crate::server::ServerConfig::max_inbound_bytes)
/// for all bodies being read at once.
///
/// The share is the request's [`Principal`](super::Principal)'s, else its
/// peer address group's (`ConnectInfo<SocketAddr>`; all of loopback is
/// one, an IPv6 /64 is one): each chunk takes room as it arrives, waiting
/// while there is none (within the deadline), so a
/// client that announces a large body and stalls holds only what it sent,
/// only until the deadline, and only of its share. A layer that must see a
/// body before the endpoint does (a check of what a call names) reads it
/// with a reader of its own and hands on what it parsed, as a
/// [`ParsedBody`].
///
/// Cancel safety: dropping [`read`](Self::read)'s future gives back the
/// room the body held; what was read is lost.
///
/// ```
/// use conduit_mcp::protocol::Implementation;
/// use conduit_mcp::server::http::{BodyReader, HttpConfig};
/// use conduit_mcp::server::ServerConfig;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
/// let reader = BodyReader::of(&config);
/// let (parts, body) = axum::http::Request::post("/mcp")
///     .body(axum::body::Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))?
///     .into_parts();
/// let bytes = reader.read(&parts, body).await?;
/// assert!(bytes.starts_with(b"{\"jsonrpc\""));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct BodyReader {
    limit: usize,
    timeout: Duration,
    room: Arc<BodyRoom>,
}

impl std::fmt::Debug for BodyReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyReader")
            .field("limit", &self.limit)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl BodyReader {
    /// A reader with the bounds of `config`, and room of its own (not
    /// shared with an endpoint of the same config).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{BodyReader, HttpConfig};
    /// use conduit_mcp::server::ServerConfig;
    ///
    /// let server = ServerConfig::new(Implementation::new("app", "1.0.0")).max_message_bytes(64 * 1024);
    /// let reader = BodyReader::of(&HttpConfig::new(server)); // bodies up to 64 KiB
    /// ```
    pub fn of(config: &HttpConfig) -> Self {
        BodyReader {
            limit: config.server.get_max_message_bytes(),
            timeout: config.get_body_timeout(),
            room: BodyRoom::new(
                config.server.get_max_inbound_bytes(),
                config.server.get_max_message_bytes(),
            ),
        }
    }

    /// Reads `body`, the body of the request of `parts`. The refusal says
    /// which bound it broke ([`Rejection::BodyTooLarge`],
    /// [`Rejection::BodyTimeout`], [`Rejection::BodyUnreadable`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{BodyReader, HttpConfig, Rejection};
    /// use conduit_mcp::server::ServerConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = ServerConfig::new(Implementation::new("app", "1.0.0")).max_message_bytes(8);
    /// let reader = BodyReader::of(&HttpConfig::new(server));
    /// let (parts, body) = axum::http::Request::post("/mcp")
    ///     .body(axum::body::Body::from("more than eight bytes"))?
    ///     .into_parts();
    /// let refused = reader.read(&parts, body).await.unwrap_err();
    /// assert!(matches!(refused, Rejection::BodyTooLarge { limit: 8 }));
    /// # Ok(()) }
    /// ```
    pub async fn read(&self, parts: &Parts, body: Body) -> Result<Bytes, Rejection> {
        self.read_as(&parts.headers, Owner::of(&parts.extensions), body)
            .await
    }

    /// [`read`](Self::read), on the share of `owner`.
    pub(crate) async fn read_as(
        &self,
        h: &HeaderMap,
        owner: Owner,
        body: Body,
    ) -> Result<Bytes, Rejection> {
        use http_body_util::BodyExt as _;
        let limit = self.limit;
        let declared = h
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > limit) {
            return Err(Rejection::BodyTooLarge { limit });
        }
        let deadline = tokio::time::Instant::now().after(self.timeout);
        let mut body = body;
        // A body that comes in one frame is that frame, not a copy of it.
        let mut first: Option<Bytes> = None;
        let mut buf = bytes::BytesMut::new();
        let mut room = self.room.hold(owner);
        let timed_out = || Rejection::BodyTimeout {
            timeout: self.timeout,
        };
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Err(timed_out()),
                Ok(None) => return Ok(first.unwrap_or_else(|| buf.freeze())),
                Ok(Some(Err(e))) => {
                    return Err(Rejection::BodyUnreadable {
                        reason: e.to_string(),
                    })
                }
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            let read = first.as_ref().map_or(buf.len(), Bytes::len);
            if read.saturating_add(data.len()) > limit {
                return Err(Rejection::BodyTooLarge { limit });
            }
            let take = room.take(data.len(), read, declared);
            match tokio::time::timeout_at(deadline, take).await {
                Err(_) => return Err(timed_out()),
                Ok(Err(Closed)) => return Err(Rejection::Stopping),
                Ok(Ok(())) => {}
            }
            if read == 0 {
                first = Some(data);
                continue;
            }
            if let Some(f) = first.take() {
                buf.reserve(declared.unwrap_or(0).min(64 * 1024));
                buf.extend_from_slice(&f);
            }
            buf.extend_from_slice(&data);
        }
    }
}

/// A POST body that a layer in front of the endpoint already read (with a
/// [`BodyReader`]) and parsed, for the endpoint to serve as is.
///
/// Put in the request's extensions, it is what the endpoint serves: the
/// request's own body is not read, and the message is not parsed again, so
/// a check of what a call names sees exactly the message the handler gets.
/// The endpoint charges it to `max_inbound_bytes` as it would the bytes.
///
/// ```
/// use conduit_mcp::jsonrpc::Message;
/// use conduit_mcp::server::http::ParsedBody;
///
/// let parsed = ParsedBody::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)?;
/// assert!(matches!(parsed.message(), Message::Request(r) if r.method == "ping"));
/// let mut request = axum::http::Request::post("/mcp").body(axum::body::Body::empty())?;
/// request.extensions_mut().insert(parsed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ParsedBody {
    message: Message,
    estimate: Estimate,
}

impl ParsedBody {
    /// Parses `bytes` with the endpoint's own parser; the refusal is the
    /// endpoint's for the same bytes (400: [`Rejection::NotJson`],
    /// [`Rejection::Batch`] or [`Rejection::InvalidMessage`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::{ParsedBody, Rejection};
    ///
    /// assert!(ParsedBody::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_ok());
    /// let refused = ParsedBody::parse(b"not json").unwrap_err();
    /// assert!(matches!(refused, Rejection::NotJson));
    /// assert_eq!(refused.status(), 400);
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<Self, Rejection> {
        // Estimated before parsing, as the endpoint does with bytes.
        let estimate = memory_estimate::estimate(bytes);
        match Message::parse(bytes) {
            Ok(message) => Ok(ParsedBody { message, estimate }),
            Err(e) => Err(Rejection::of_parse(e)),
        }
    }

    /// The message.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// The message and what the endpoint charges for it.
    pub(crate) fn into_parts(self) -> (Message, Estimate) {
        (self.message, self.estimate)
    }
}
