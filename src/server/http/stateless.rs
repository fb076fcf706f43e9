//! 2026-07-28 era: a request's HTTP headers checked against its body
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and the `Mcp-Param-*`
//! headers a tool's `x-mcp-header` annotations ask for), so that an
//! intermediary routing on the headers and this server reading the body
//! cannot be told two different stories.

use axum::http::{HeaderMap, HeaderName};
use serde_json::{Map, Value};

use crate::http::headers;
use crate::jsonrpc::Request;
use crate::protocol::{meta, methods, STATEFUL_VERSIONS, STATELESS_VERSIONS};

use super::Rejection;

/// Methods of the 2025-11-25 era that the 2026-07-28 era removed: a 2026-07-28
/// request for one is an unknown method (404, -32601).
const REMOVED: &[&str] = &[
    methods::INITIALIZE,
    methods::PING,
    methods::LOGGING_SET_LEVEL,
    methods::RESOURCES_SUBSCRIBE,
    methods::RESOURCES_UNSUBSCRIBE,
];

/// Why a request was refused before it reached the server (its id is the
/// caller's to add: [`Rejection::with_id`]).
pub(crate) type Refusal = Rejection;

fn mismatch(detail: String) -> Refusal {
    Rejection::HeaderMismatch { id: None, detail }
}

fn header<'a>(h: &'a HeaderMap, name: &HeaderName) -> Option<&'a [u8]> {
    h.get(name).map(|v| v.as_bytes())
}

/// The header names as [`HeaderName`]s (a lookup by `&str` parses the name
/// first).
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(headers::PROTOCOL_VERSION);
const METHOD: HeaderName = HeaderName::from_static(headers::METHOD);
const NAME: HeaderName = HeaderName::from_static(headers::NAME);

/// A version header that names no version of either era, on a request
/// without the 2026-07-28 `_meta`: the version is what is wrong (-32022,
/// naming it), not the missing `_meta`.
fn unknown_version(version: &[u8]) -> Option<Refusal> {
    let v = String::from_utf8_lossy(version);
    if STATELESS_VERSIONS.contains(&v.as_ref()) || STATEFUL_VERSIONS.contains(&v.as_ref()) {
        return None;
    }
    Some(Rejection::UnsupportedVersion {
        id: None,
        requested: v.into_owned(),
    })
}

/// Checks `req`'s headers; `tool_schema` runs its function on a tool's
/// `inputSchema`, if it knows the tool.
pub(crate) fn check(
    h: &HeaderMap,
    req: &Request,
    tool_schema: impl FnOnce(&str, &mut dyn FnMut(&Value)),
) -> Result<(), Refusal> {
    let Some(version) = header(h, &PROTOCOL_VERSION) else {
        return Err(mismatch(
            "the MCP-Protocol-Version header is missing".into(),
        ));
    };
    let meta_map = req
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let meta_version = meta_map
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let caps = meta_map.and_then(|m| m.get(meta::CLIENT_CAPABILITIES));
    let (Some(meta_version), Some(Value::Object(_))) = (meta_version, caps) else {
        if let Some(refusal) = unknown_version(version) {
            return Err(refusal);
        }
        return Err(Rejection::MetaMissing { id: None });
    };
    if version != meta_version.as_bytes() {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header value '{}' does not match body value '{meta_version}'",
            String::from_utf8_lossy(version)
        )));
    }
    match header(h, &METHOD) {
        None => return Err(mismatch("the Mcp-Method header is missing".into())),
        Some(m) if m != req.method.as_bytes() => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{}' does not match body value '{}'",
                String::from_utf8_lossy(m),
                req.method
            )))
        }
        Some(_) => {}
    }
    if let Some(body_name) = headers::name_source(&req.method, req.params.as_ref()) {
        let Some(raw) = header(h, &NAME) else {
            return Err(mismatch("the Mcp-Name header is missing".into()));
        };
        // The common case, a plain name sent as is: what decoding would
        // give, without the copy it makes.
        let plain = body_name.is_some_and(|n| n.as_bytes() == raw && headers::is_plain(n));
        if !plain {
            let given = headers::decode_value(raw)
                .map_err(|e| mismatch(format!("the Mcp-Name header is invalid: {e}")))?;
            if body_name != Some(given.as_str()) {
                return Err(mismatch(format!(
                    "Mcp-Name header value '{given}' does not match body value '{}'",
                    body_name.unwrap_or("")
                )));
            }
        }
    }
    if REMOVED.contains(&req.method.as_str()) {
        return Err(Rejection::MethodRemoved {
            id: None,
            method: req.method.clone(),
            revision: meta_version.to_owned(),
        });
    }
    if req.method == methods::TOOLS_CALL {
        let params = req.params.as_ref();
        let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
        if let Some(name) = name {
            let empty = Map::new();
            let args = params
                .and_then(|p| p.get("arguments"))
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let mut checked = Ok(());
            tool_schema(name, &mut |schema| checked = check_params(h, schema, args));
            checked?;
        }
    }
    Ok(())
}

/// An `x-mcp-header` annotation: the header's name part and the property
/// path it mirrors.
struct Mirrored {
    name: String,
    path: Vec<String>,
}

/// A property's path, as a chain from it up to the root: walked without
/// allocating, copied only for an annotation.
struct Up<'a> {
    key: &'a str,
    up: Option<&'a Up<'a>>,
}

impl Up<'_> {
    fn path(&self) -> Vec<String> {
        let mut path = Vec::new();
        let mut at = Some(self);
        while let Some(u) = at {
            path.push(u.key.to_owned());
            at = u.up;
        }
        path.reverse();
        path
    }
}

/// The annotations statically reachable from the schema's root (through
/// `properties` only, as the specification requires).
fn annotations(schema: &Value, up: Option<&Up<'_>>, out: &mut Vec<Mirrored>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, sub) in props {
        let here = Up { key, up };
        if let Some(name) = sub.get("x-mcp-header").and_then(Value::as_str) {
            if headers::is_token(name) {
                out.push(Mirrored {
                    name: name.to_owned(),
                    path: here.path(),
                });
            }
        }
        annotations(sub, Some(&here), out);
    }
}

fn value_at<'a>(args: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = args.get(first)?;
    for key in rest {
        v = v.get(key)?;
    }
    Some(v)
}

/// Whether a header value and a body value agree (integers numerically).
fn same(header: &str, body: &Value) -> bool {
    match body {
        Value::Number(n) if n.is_i64() || n.is_u64() => header
            .trim()
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(a, b)| a == b),
        other => headers::param_value(other).as_deref() == Some(header),
    }
}

fn check_params(h: &HeaderMap, schema: &Value, args: &Map<String, Value>) -> Result<(), Refusal> {
    let mut found = Vec::new();
    annotations(schema, None, &mut found);
    for m in found {
        let header_name = format!("{}{}", headers::PARAM_PREFIX, m.name.to_ascii_lowercase());
        let given = match h.get(&header_name).map(|v| v.as_bytes()) {
            Some(raw) => Some(headers::decode_value(raw).map_err(|e| {
                mismatch(format!("the Mcp-Param-{} header is invalid: {e}", m.name))
            })?),
            None => None,
        };
        let body = value_at(args, &m.path).filter(|v| !v.is_null());
        match (given, body) {
            (None, None) => {}
            (Some(g), Some(b)) if same(&g, b) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "the Mcp-Param-{} header is missing (argument {} is set)",
                    m.name,
                    m.path.join(".")
                )))
            }
            (Some(g), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{} header value '{g}' but argument {} is not set",
                    m.name,
                    m.path.join(".")
                )))
            }
            (Some(g), Some(b)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{} header value '{g}' does not match body value {b}",
                    m.name
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn req(method: &str, params: Value) -> Request {
        let line =
            json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
        match crate::jsonrpc::Message::parse(line.as_bytes()) {
            Ok(crate::jsonrpc::Message::Request(r)) => r,
            other => panic!("not a request: {other:?}"),
        }
    }

    fn meta() -> Value {
        json!({ meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: {} })
    }

    fn hdrs(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn code(r: Result<(), Refusal>) -> Option<(u16, i64)> {
        r.err().map(|e| (e.status().as_u16(), e.code()))
    }

    const BASE: [(&str, &str); 2] = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
    ];

    #[test]
    fn headers_must_mirror_the_body() {
        let schema = json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "n": { "type": "integer", "x-mcp-header": "N" },
            "q": { "type": "string" } } });
        let call = |args: Value| {
            req(
                "tools/call",
                json!({ "name": "sql", "arguments": args, "_meta": meta() }),
            )
        };
        let with = |extra: &[(&str, &str)]| {
            let mut all: Vec<(&str, &str)> = BASE.to_vec();
            all.push(("mcp-name", "sql"));
            all.extend_from_slice(extra);
            hdrs(&all)
        };
        let s = |_: &str, f: &mut dyn FnMut(&Value)| f(&schema);
        let ok = check(
            &with(&[("mcp-param-region", "us-west1"), ("mcp-param-n", "42.0")]),
            &call(json!({ "region": "us-west1", "n": 42, "q": "x" })),
            s,
        );
        assert_eq!(code(ok), None);
        // Missing, different, unexpected, and base64-encoded values.
        assert_eq!(
            code(check(
                &with(&[("mcp-param-n", "42")]),
                &call(json!({ "region": "a", "n": 42 })),
                s
            )),
            Some((400, -32020))
        );
        assert_eq!(
            code(check(
                &with(&[("mcp-param-region", "b")]),
                &call(json!({ "region": "a" })),
                s
            )),
            Some((400, -32020))
        );
        assert_eq!(
            code(check(
                &with(&[("mcp-param-region", "a")]),
                &call(json!({})),
                s
            )),
            Some((400, -32020))
        );
        assert_eq!(
            code(check(
                &with(&[("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?=")]),
                &call(json!({ "region": "Hello, 世界" })),
                s
            )),
            None
        );
        // Mcp-Name: missing, mismatched, sentinel.
        assert_eq!(
            code(check(&hdrs(&BASE), &call(json!({})), |_, _| {})),
            Some((400, -32020))
        );
        let named = |n: &str| {
            let mut v: Vec<(&str, &str)> = BASE.to_vec();
            v.push(("mcp-name", n));
            hdrs(&v)
        };
        assert_eq!(
            code(check(&named("other"), &call(json!({})), |_, _| {})),
            Some((400, -32020))
        );
        assert_eq!(
            code(check(
                &named("=?base64?c3Fs?="),
                &call(json!({})),
                |_, _| {}
            )),
            None
        );
        // A body name shaped like the sentinel, sent as is: the header
        // decodes to "sql", which is not that name.
        let shaped = req(
            "tools/call",
            json!({ "name": "=?base64?c3Fs?=", "arguments": {}, "_meta": meta() }),
        );
        assert_eq!(
            code(check(&named("=?base64?c3Fs?="), &shaped, |_, _| {})),
            Some((400, -32020))
        );
    }

    #[test]
    fn version_meta_and_method_checks_come_in_order() {
        let r = req("server/discover", json!({ "_meta": meta() }));
        let h = |v: &str, m: &str| hdrs(&[("mcp-protocol-version", v), ("mcp-method", m)]);
        assert_eq!(
            code(check(&h("2026-07-28", "server/discover"), &r, |_, _| {})),
            None
        );
        assert_eq!(
            code(check(
                &hdrs(&[("mcp-method", "server/discover")]),
                &r,
                |_, _| {}
            )),
            Some((400, -32020))
        );
        assert_eq!(
            code(check(
                &h("2026-07-28", "server/discover"),
                &req("server/discover", json!({})),
                |_, _| {}
            )),
            Some((400, -32602))
        );
        assert_eq!(
            code(check(&h("2025-11-25", "server/discover"), &r, |_, _| {})),
            Some((400, -32020))
        );
        assert_eq!(
            code(check(&h("2026-07-28", "tools/list"), &r, |_, _| {})),
            Some((400, -32020))
        );
        let ping = req("ping", json!({ "_meta": meta() }));
        assert_eq!(
            code(check(&h("2026-07-28", "ping"), &ping, |_, _| {})),
            Some((404, -32601))
        );
    }
}
