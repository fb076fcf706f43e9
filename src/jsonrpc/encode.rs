//! Serialisation of outbound messages straight into a line buffer.
//!
//! Every function appends exactly one line (JSON followed by `\n`). serde_json
//! escapes control characters, so the JSON never contains a raw newline.

use serde::Serialize;

use super::{ErrorObject, RequestId};

#[derive(Serialize)]
struct Req<'a, P: Serialize + ?Sized> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

#[derive(Serialize)]
struct Notif<'a, P: Serialize + ?Sized> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

#[derive(Serialize)]
struct Res<'a, R: Serialize + ?Sized> {
    jsonrpc: &'static str,
    id: &'a Option<RequestId>,
    result: &'a R,
}

#[derive(Serialize)]
struct Err<'a> {
    jsonrpc: &'static str,
    id: &'a Option<RequestId>,
    error: &'a ErrorObject,
}

fn line<T: Serialize>(msg: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    serde_json::to_writer(&mut out, msg)?;
    out.push(b'\n');
    Ok(out)
}

/// A request line.
pub(crate) fn request<P: Serialize + ?Sized>(
    id: &RequestId,
    method: &str,
    params: Option<&P>,
) -> Result<Vec<u8>, serde_json::Error> {
    line(&Req {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// A notification line.
pub(crate) fn notification<P: Serialize + ?Sized>(
    method: &str,
    params: Option<&P>,
) -> Result<Vec<u8>, serde_json::Error> {
    line(&Notif {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// A success response line.
pub(crate) fn result<R: Serialize + ?Sized>(
    id: &Option<RequestId>,
    result: &R,
) -> Result<Vec<u8>, serde_json::Error> {
    line(&Res {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// A result response line around `result`, JSON text written as it is
/// (its validity is the caller's business).
pub(crate) fn raw_result(id: &Option<RequestId>, result: &super::RawJson) -> Vec<u8> {
    let raw = result.as_bytes();
    let mut out = Vec::with_capacity(40 + raw.len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        // An id always serialises (a number or a string).
        Some(id) => {
            if serde_json::to_writer(&mut out, id).is_err() {
                out.extend_from_slice(b"null");
            }
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(raw);
    out.extend_from_slice(b"}\n");
    out
}

/// An error response line. Cannot fail: an [`ErrorObject`] always
/// serialises (its `data` is already a `Value`).
pub(crate) fn error(id: &Option<RequestId>, error: &ErrorObject) -> Vec<u8> {
    line(&Err {
        jsonrpc: "2.0",
        id,
        error,
    })
    .unwrap_or_else(|_| {
        // Unreachable in practice; keep the stream valid regardless.
        b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"internal error\"}}\n".to_vec()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_result_line_is_the_line_a_parsed_result_makes() {
        // Keys in order: a parsed object writes them sorted.
        let text = r#"{"content":[{"text":"a\"b","type":"text"}],"n":[1,2.5]}"#;
        let raw = super::super::RawJson::from_vec(text.as_bytes().to_vec());
        let parsed: serde_json::Value = serde_json::from_str(text).unwrap();
        for id in [
            Some(RequestId::Number(7)),
            Some(RequestId::String("x\"y".into())),
            None,
        ] {
            assert_eq!(raw_result(&id, &raw), result(&id, &parsed).unwrap());
        }
    }
}
