//! The HTTP status of a 2026-07-28 error answer, as the server sends it
//! and the client checks it.

use axum::http::StatusCode;

use crate::jsonrpc::codes;

/// The HTTP status of a 2026-07-28 era error answer: 404 for an unknown
/// method, 400 for a malformed request (and the era's protocol errors),
/// else 200 (the error is the handler's answer).
pub(crate) fn status_for_error(code: i64) -> StatusCode {
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
