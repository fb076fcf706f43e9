//! Reading a request body: within `max_message_bytes`, `body_timeout` and
//! a share of the room for bodies being read.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Response, StatusCode};
use bytes::Bytes;

use crate::deadline::After;
use crate::jsonrpc::codes;

use super::config::HttpConfig;
use super::gate;
use super::principal::Owner;
use super::room::{BodyRoom, Closed};

/// Reads the body within `max_message_bytes` and `body_timeout`. What
/// all bodies being read hold together is bounded by `max_inbound_bytes`,
/// shared out per owner ([`BodyRoom`]): each chunk
/// takes room as it arrives (waiting while there is none, within the
/// deadline), so a client that announces a large body and stalls holds
/// only what it sent, only until `body_timeout`, and only of its share.
pub(crate) async fn read(
    config: &HttpConfig,
    room: &Arc<BodyRoom>,
    h: &HeaderMap,
    owner: Owner,
    body: Body,
) -> Result<Bytes, Response<Body>> {
    use http_body_util::BodyExt as _;
    let limit = config.server.max_message_bytes;
    let declared = h
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    let deadline = tokio::time::Instant::now().after(config.body_timeout);
    let mut body = body;
    let mut buf = bytes::BytesMut::with_capacity(declared.unwrap_or(0).min(64 * 1024));
    let mut room = room.hold(owner);
    let timed_out = || {
        gate::rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            None,
            codes::INVALID_REQUEST,
            format!(
                "the body did not arrive within body_timeout ({:?})",
                config.body_timeout
            ),
        )
    };
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(timed_out()),
            Ok(None) => return Ok(buf.freeze()),
            Ok(Some(Err(e))) => {
                return Err(gate::rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    codes::PARSE_ERROR,
                    format!("reading the body failed: {e}"),
                ))
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if buf.len().saturating_add(data.len()) > limit {
            return Err(too_large(limit));
        }
        let take = room.take(data.len(), buf.len(), declared);
        match tokio::time::timeout_at(deadline, take).await {
            Err(_) => return Err(timed_out()),
            Ok(Err(Closed)) => {
                return Err(gate::rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    -32000,
                    "the server is stopping",
                ))
            }
            Ok(Ok(())) => {}
        }
        buf.extend_from_slice(&data);
    }
}

fn too_large(limit: usize) -> Response<Body> {
    gate::rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        codes::INVALID_REQUEST,
        format!("the body exceeds max_message_bytes ({limit} bytes)"),
    )
}
