//! A response body read within a byte bound, never buffered past it, and
//! a transport error described without its URL.

use reqwest::Response;

/// Describes a transport error, with its causes, without the URL (its
/// query may hold a token): written once, with the OAuth requests'.
pub(super) use crate::transport::http::oauth::describe;

/// Why a body was not read.
pub(super) enum BodyError {
    /// Over the limit: reading stopped there.
    TooLarge { at_least: usize },
    /// The connection failed.
    Failed(String),
}

/// Reads a whole body, at most `limit` bytes (never buffering more).
pub(super) async fn read_body(mut resp: Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    if let Some(len) = resp.content_length() {
        if len > limit as u64 {
            return Err(BodyError::TooLarge {
                at_least: usize::try_from(len).unwrap_or(usize::MAX),
            });
        }
    }
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(BodyError::TooLarge {
                        at_least: body.len() + chunk.len(),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(BodyError::Failed(describe(e))),
        }
    }
}
