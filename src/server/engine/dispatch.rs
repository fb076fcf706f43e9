//! Dual-era routing: which era a request belongs to, `_meta` validation,
//! and the transport's own answers (`initialize`, `server/discover`, `ping`).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::jsonrpc::{codes, ErrorObject, Request};
use crate::protocol::{
    meta, methods, Era, LATEST_STATEFUL_VERSION, STATEFUL_VERSIONS, STATELESS_VERSIONS,
};

use crate::server::handle::SessionShared;

/// What to do with a request.
pub(crate) enum Route {
    /// Answered by the transport.
    Answer(Result<Value, ErrorObject>),
    /// For the user's handler.
    Dispatch(Dispatch),
}

/// A request's era and what it carried, for its context.
pub(crate) struct Dispatch {
    pub(crate) era: Era,
    pub(crate) meta: Option<Map<String, Value>>,
    /// SessionShared with the session state: not copied per request.
    pub(crate) client_capabilities: Option<Arc<Value>>,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) request_state: Option<String>,
    /// 2026-07-28 multi-round requests: the `name` (or `uri`) they are for,
    /// which a held call's retry must match.
    pub(crate) target: Option<String>,
    /// The head of the HTTP request that carried it; set by the HTTP
    /// transport after routing.
    #[cfg(feature = "http")]
    pub(crate) http: Option<Arc<axum::http::request::Parts>>,
}

fn meta_of(req: &Request) -> Option<Map<String, Value>> {
    req.params.as_ref()?.get("_meta")?.as_object().cloned()
}

fn invalid_params(msg: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, msg)
}

/// The required `_meta` member `key`, of the JSON type `is` checks
/// (`kind` names it in the error).
fn required<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    kind: &str,
    is: fn(&Value) -> bool,
) -> Result<&'a Value, ErrorObject> {
    match m.get(key) {
        Some(v) if is(v) => Ok(v),
        Some(_) => Err(invalid_params(format!("_meta {key} must be {kind}"))),
        None => Err(invalid_params(format!("missing required _meta key {key}"))),
    }
}

/// Validates the 2026-07-28 `_meta`; returns the client capabilities.
fn check_stateless_meta(m: &Map<String, Value>) -> Result<&Value, ErrorObject> {
    let version = required(m, meta::PROTOCOL_VERSION, "a string", Value::is_string)?
        .as_str()
        .unwrap_or_default();
    let caps = required(m, meta::CLIENT_CAPABILITIES, "an object", Value::is_object)?;
    if !STATELESS_VERSIONS.contains(&version) {
        return Err(ErrorObject::new(
            codes::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({ "supported": STATELESS_VERSIONS, "requested": version })));
    }
    Ok(caps)
}

fn is_stateless(m: Option<&Map<String, Value>>) -> bool {
    m.is_some_and(|m| {
        m.contains_key(meta::PROTOCOL_VERSION) || m.contains_key(meta::CLIENT_CAPABILITIES)
    })
}

/// Decides how to serve `req`, updating the session state it reveals.
pub(crate) fn route(shared: &SessionShared, req: &Request) -> Route {
    let meta = meta_of(req);
    match req.method.as_str() {
        methods::INITIALIZE => Route::Answer(initialize(shared, req)),
        methods::DISCOVER => {
            let m = meta.unwrap_or_default();
            Route::Answer(check_stateless_meta(&m).map(|caps| {
                record_stateless(shared, caps, &m);
                discover(shared)
            }))
        }
        methods::PING if !is_stateless(meta.as_ref()) => Route::Answer(Ok(json!({}))),
        _ => {
            if is_stateless(meta.as_ref()) {
                let m = meta.unwrap_or_default();
                let caps = match check_stateless_meta(&m) {
                    Ok(c) => c,
                    Err(e) => return Route::Answer(Err(e)),
                };
                let caps = record_stateless(shared, caps, &m);
                let params = req.params.as_ref();
                Route::Dispatch(Dispatch {
                    era: Era::Stateless,
                    client_capabilities: Some(caps),
                    input_responses: params
                        .and_then(|p| p.get("inputResponses"))
                        .and_then(Value::as_object)
                        .cloned(),
                    request_state: params
                        .and_then(|p| p.get("requestState"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    target: crate::protocol::request_target(&req.method, params)
                        .flatten()
                        .map(str::to_owned),
                    meta: Some(m),
                    #[cfg(feature = "http")]
                    http: None,
                })
            } else {
                let st = shared.session();
                if !st.is_stateful() {
                    return Route::Answer(Err(invalid_params(format!(
                        "no session: send initialize first (legacy), or include _meta {} and {} (modern)",
                        meta::PROTOCOL_VERSION,
                        meta::CLIENT_CAPABILITIES
                    ))));
                }
                Route::Dispatch(Dispatch {
                    era: Era::Stateful,
                    client_capabilities: st.stateful_capabilities().cloned(),
                    input_responses: None,
                    request_state: None,
                    target: None,
                    meta,
                    #[cfg(feature = "http")]
                    http: None,
                })
            }
        }
    }
}

/// Records what a 2026-07-28 request reveals; returns its capabilities, shared.
fn record_stateless(shared: &SessionShared, caps: &Value, m: &Map<String, Value>) -> Arc<Value> {
    shared
        .session()
        .record_stateless(caps, m.get(meta::CLIENT_INFO))
}

fn initialize(shared: &SessionShared, req: &Request) -> Result<Value, ErrorObject> {
    let params = req.params.as_ref().and_then(Value::as_object);
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_params("initialize: missing protocolVersion"))?;
    let caps = params
        .and_then(|p| p.get("capabilities"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    if !caps.is_object() {
        return Err(invalid_params("initialize: capabilities must be an object"));
    }
    // Echo a version we speak, else offer our newest (the client decides).
    let version = if STATEFUL_VERSIONS.contains(&requested) {
        requested
    } else {
        LATEST_STATEFUL_VERSION
    };
    shared.session().start_stateful(
        version,
        caps,
        params.and_then(|p| p.get("clientInfo")).cloned(),
    );
    tracing::info!(version, requested, "legacy session initialized");
    let c = shared.config();

    let mut result = json!({
        "protocolVersion": version,
        "capabilities": shared.capabilities(),
        "serverInfo": c.server_info,
    });
    if let Some(i) = &c.get_instructions() {
        result["instructions"] = json!(i);
    }
    Ok(result)
}

fn discover(shared: &SessionShared) -> Value {
    let c = shared.config();

    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": STATELESS_VERSIONS,
        "capabilities": shared.capabilities(),
        "_meta": { meta::SERVER_INFO: c.server_info },
        "ttlMs": c.get_cache_ttl_ms(),
        "cacheScope": c.get_cache_scope().as_str(),
    });
    if let Some(i) = &c.get_instructions() {
        result["instructions"] = json!(i);
    }
    result
}
