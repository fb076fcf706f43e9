//! Reading a request body: within `max_message_bytes`, `body_timeout` and
//! a share of the room for bodies being read.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap};
use bytes::Bytes;

use crate::deadline::After;

use super::config::HttpConfig;
use super::principal::Owner;
use super::room::{BodyRoom, Closed};
use super::Rejection;

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
) -> Result<Bytes, Rejection> {
    use http_body_util::BodyExt as _;
    let limit = config.server.max_message_bytes;
    let declared = h
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(Rejection::BodyTooLarge { limit });
    }
    let deadline = tokio::time::Instant::now().after(config.body_timeout);
    let mut body = body;
    let mut buf = bytes::BytesMut::with_capacity(declared.unwrap_or(0).min(64 * 1024));
    let mut room = room.hold(owner);
    let timed_out = || Rejection::BodyTimeout {
        timeout: config.body_timeout,
    };
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(timed_out()),
            Ok(None) => return Ok(buf.freeze()),
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
        if buf.len().saturating_add(data.len()) > limit {
            return Err(Rejection::BodyTooLarge { limit });
        }
        let take = room.take(data.len(), buf.len(), declared);
        match tokio::time::timeout_at(deadline, take).await {
            Err(_) => return Err(timed_out()),
            Ok(Err(Closed)) => return Err(Rejection::Stopping),
            Ok(Ok(())) => {}
        }
        buf.extend_from_slice(&data);
    }
}
