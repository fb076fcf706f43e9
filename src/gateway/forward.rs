//! One client's request sent on to its server: its `_meta` translated for the
//! server's era, its progress passed back, its cancellation passed on (the
//! server's call is dropped with the client's, which cancels it), the
//! server's requests routed to this call's client ([`server_requests`](super::server_requests)),
//! and the answer returned as the server gave it.
//!
//! | client | server | input the server asks for |
//! |---|---|---|
//! | 2026-07-28 | 2026-07-28 | the server's `input_required` passed through as it is (its `requestState` too) |
//! | 2025-11-25 | 2026-07-28 | fulfilled by the gateway's client: each input request goes to the client's session as a request on the call's SSE stream |
//! | 2025-11-25 | stateful | the server's request goes to the client's session on the call's SSE stream |
//! | 2026-07-28 | stateful | the server's call is held open ([`RequestContext::run_held`]); the client gets `input_required` with the call's `requestState`, and the retry's answer goes to the server's request |

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::client::{Progress, RequestOptions};
use crate::error::Error;
use crate::jsonrpc::RawJson;
use crate::protocol::{meta, Era, MULTI_ROUND_METHODS};
use crate::server::{HandlerError, RequestContext};

use super::auth::Principal;
use super::server_requests::CURRENT;
use super::state::GatewayState;
use super::target::{backend_era, failure, Target};

/// One client's request on its way to a server: who asks, where it goes,
/// and the request it came in as.
#[derive(Clone, Copy)]
pub(crate) struct Call<'a> {
    pub(crate) gateway: &'a Arc<GatewayState>,
    pub(crate) caller: &'a Arc<Principal>,
    pub(crate) target: &'a Target,
    /// The method sent to the server.
    pub(crate) method: &'a str,
    /// The client's request.
    pub(crate) ctx: &'a RequestContext,
}

/// Sends `call`'s method with `params` (already in the server's own
/// names) to its target, observed in the metrics and the call log, and
/// returns the server's answer as the client's era wants it.
///
/// With `as_is`, when the server's answer needs no change for the client's
/// era, it is handed to the client as the server wrote it
/// ([`RequestContext::answer_raw`], not parsed and written again) and
/// `Value::Null` is returned in its place.
pub(crate) async fn forward(
    call: Call<'_>,
    params: Option<Value>,
    as_is: bool,
) -> Result<Value, HandlerError> {
    let Call {
        gateway,
        caller: principal,
        target,
        method,
        ctx,
    } = call;
    // Only the call log reads these: no copies without one.
    let log = gateway.call_log();
    let tool = match method {
        "tools/call" | "prompts/get" if log.is_some() => params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    let arguments = if log.is_some_and(|l| l.logs_arguments()) {
        params.as_ref().and_then(|p| p.get("arguments")).cloned()
    } else {
        None
    };
    let mut record = gateway.observe(principal, target.server(), method, tool, arguments);
    let result = match route(call, params).await {
        Ok(Answer::Raw(raw)) if as_is && passes_as_is(&raw, ctx.era()) => {
            let len = raw.len();
            match ctx.answer_raw(raw) {
                Ok(()) => {
                    record.finish_ok(len);
                    return Ok(Value::Null);
                }
                // Not one JSON line: parsed, it is refused or written anew.
                Err(refused) => parsed(target.server(), Ok(refused.into_raw())),
            }
        }
        Ok(Answer::Raw(raw)) => parsed(target.server(), Ok(raw)),
        Ok(Answer::Value(v)) => Ok(v),
        Err(e) => Err(e),
    };
    record.finish(&result);
    result.map(|v| for_client(v, method, ctx.era()))
}

/// A server's answer as the client's: its result text as a `Value`, its
/// failure as a JSON-RPC error.
fn parsed(server: &str, result: Result<RawJson, Error>) -> Result<Value, HandlerError> {
    let raw = result.map_err(|e| failure(server, &e))?;
    raw.parse::<Value>().map_err(|e| {
        HandlerError::Internal(format!(
            "server `{server}` sent a result that is not JSON: {e}"
        ))
    })
}

/// A server's answer: as it wrote it, or parsed.
enum Answer {
    Raw(RawJson),
    Value(Value),
}

/// Whether a server's result can go to a client of `client_era` as
/// the server wrote it: a 2025-11-25 client (a 2026-07-28 client's results
/// get members from the transport), nothing in it that [`for_client`] would
/// remove (none of the names it removes appears anywhere in it, spelt out
/// or escaped). [`RequestContext::answer_raw`] checks that it is JSON on
/// one line.
fn passes_as_is(raw: &RawJson, client_era: Era) -> bool {
    if client_era != Era::Stateful {
        return false;
    }
    let bytes = raw.as_bytes();
    !escapes_a_name_character(bytes)
        && !MODERN_ONLY
            .iter()
            .chain(&["io.modelcontextprotocol/"])
            .any(|name| memchr::memmem::find(bytes, name.as_bytes()).is_some())
}

/// Whether JSON text `json` has an escape that stands for a character a
/// member name [`for_client`] removes could hold (`\/`, or `\u` of a
/// printable ASCII character): such a name is not in the text as its own
/// bytes (`result\u0054ype`), so only the parsed members tell. Other
/// escapes (`\n`, `\"`, `\\`, `\u` of a control or non-ASCII
/// character) keep the text on the fast path.
fn escapes_a_name_character(json: &[u8]) -> bool {
    let mut at = 0;
    while let Some(i) = json.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let i = at + i;
        match json.get(i + 1) {
            Some(b'/') => return true,
            Some(b'u') => {
                let code = json
                    .get(i + 2..i + 6)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u16::from_str_radix(h, 16).ok());
                if code.is_some_and(|c| (0x20..0x7f).contains(&c)) {
                    return true;
                }
                at = i + 6;
            }
            // The escaped character (`\\` included) is skipped with it.
            _ => at = i + 2,
        }
    }
    false
}

/// Result members only 2026-07-28 defines (the gateway's transport adds
/// `resultType` and the cache hints to every 2026-07-28 answer).
const MODERN_ONLY: &[&str] = &[
    "resultType",
    "ttlMs",
    "cacheScope",
    "inputRequests",
    "requestState",
];

/// The `_meta` keys of the protocol's namespace that 2025-11-25 defines.
const LEGACY_META: &[&str] = &["io.modelcontextprotocol/related-task"];

/// Members of a tool only 2025-11-25 defines (tasks).
const LEGACY_ONLY_TOOL: &[&str] = &["execution"];

/// A server's result (of `method`) as a client of `client_era` may
/// get it, whatever the server's era: without the members, and the
/// `io.modelcontextprotocol/` keys of `_meta`, that only the other era
/// defines.
pub(crate) fn for_client(mut v: Value, method: &str, client_era: Era) -> Value {
    let Some(obj) = v.as_object_mut() else {
        return v;
    };
    let foreign_meta = |k: &str| match client_era {
        Era::Stateful => k.starts_with("io.modelcontextprotocol/") && !LEGACY_META.contains(&k),
        Era::Stateless => LEGACY_META.contains(&k),
    };
    if let Some(Value::Object(m)) = obj.get_mut("_meta") {
        let before = m.len();
        m.retain(|k, _| !foreign_meta(k));
        if m.is_empty() && before > 0 {
            obj.remove("_meta");
        }
    }
    match client_era {
        Era::Stateful => {
            for k in MODERN_ONLY {
                obj.remove(*k);
            }
        }
        Era::Stateless if method == crate::protocol::methods::TOOLS_LIST => {
            let tools = obj.get_mut("tools").and_then(Value::as_array_mut);
            for t in tools.into_iter().flatten().filter_map(Value::as_object_mut) {
                for k in LEGACY_ONLY_TOOL {
                    t.remove(*k);
                }
            }
        }
        Era::Stateless => {}
    }
    v
}

/// Sends the call on: held across the client's rounds for a 2026-07-28
/// client of a stateful server, else one request, its progress passed
/// back and the server's requests routed to this call.
async fn route(call: Call<'_>, params: Option<Value>) -> Result<Answer, HandlerError> {
    let Call {
        gateway,
        caller: principal,
        target,
        method,
        ctx,
    } = call;
    let backend = backend_era(target).await?;
    if ctx.era() == Era::Stateless
        && backend == Era::Stateful
        && MULTI_ROUND_METHODS.contains(&method)
    {
        return held(call, server_params(params, ctx, backend))
            .await
            .map(Answer::Value);
    }
    let params = server_params(params, ctx, backend);
    let slots = target.client().max_inbound_requests();
    let registered =
        gateway
            .relay()
            .register(target.server(), slots, principal.clone(), ctx.clone());
    let mut opts = RequestOptions::new();
    if ctx.era() == Era::Stateless {
        // The server's own `input_required` goes back to the client
        // as it is; its retry comes back here with the answers.
        opts = opts.single_round();
    }
    let (opts, progress) = with_progress(opts, ctx);
    let call = CURRENT.scope(
        registered.call().clone(),
        target.client().request_raw(method, params, opts),
    );
    let result = pass_progress(call, progress, |p| send_progress(ctx, p)).await;
    gateway.notes().flush(target.server()).await;
    drop(registered);
    result
        .map(Answer::Raw)
        .map_err(|e| failure(target.server(), &e))
}

/// A 2026-07-28 client's call to a stateful server: the server's call runs
/// once, held across the client's input rounds
/// ([`RequestContext::run_held`]). What the server asks over its stdio is
/// the held call's ask: the client's round ends `input_required`, and the
/// retry's answer goes to the server's waiting request. A retry arrives
/// here too, and resumes the call.
async fn held(call: Call<'_>, params: Option<Value>) -> Result<Value, HandlerError> {
    let (gateway, principal, ctx) = (call.gateway.clone(), call.caller.clone(), call.ctx);
    let (server, client, method) = (
        call.target.server().clone(),
        call.target.client().clone(),
        call.method.to_owned(),
    );
    ctx.run_held(move |held| async move {
        let (fail, failed) = tokio::sync::oneshot::channel();
        let slots = client.max_inbound_requests();
        let registered =
            gateway
                .relay()
                .register_held(&server, slots, principal, held.clone(), fail);
        let (opts, progress) = with_progress(RequestOptions::new(), &held.context());
        let request = CURRENT.scope(
            registered.call().clone(),
            client.request_raw(&method, params, opts),
        );
        let request = pass_progress(request, progress, |p| send_progress(&held.context(), p));
        let result = tokio::select! {
            r = request => r,
            Ok(e) = failed => return Err(HandlerError::from(e)),
        };
        gateway.notes().flush(&server).await;
        drop(registered);
        parsed(&server, result)
    })
    .await
}

/// Asks for progress when the client's request did.
fn with_progress(
    opts: RequestOptions,
    ctx: &RequestContext,
) -> (RequestOptions, Option<mpsc::UnboundedReceiver<Progress>>) {
    if ctx.progress_token().is_none() {
        return (opts, None);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    (opts.progress(tx), Some(rx))
}

/// Runs `call`, passing its progress on with `to`.
async fn pass_progress<F, T>(
    call: F,
    progress: Option<mpsc::UnboundedReceiver<Progress>>,
    to: impl Fn(&Progress),
) -> T
where
    F: std::future::Future<Output = T>,
{
    let Some(mut progress) = progress else {
        return call.await;
    };
    tokio::pin!(call);
    loop {
        tokio::select! {
            r = &mut call => {
                while let Ok(p) = progress.try_recv() {
                    to(&p);
                }
                return r;
            }
            Some(p) = progress.recv() => to(&p),
        }
    }
}

/// One progress notification of the server's call, as the client's.
fn send_progress(ctx: &RequestContext, p: &Progress) {
    let _ = ctx.progress(p.progress, p.total, p.message.as_deref());
}

/// The client's request's params as the server's era wants them: the gateway's
/// own progress token and protocol version out (the gateway's client sets
/// its own); for a 2026-07-28 server, the client's capabilities,
/// identity and log level, so that the server asks only for what this
/// client can give; for a stateful server, no `io.modelcontextprotocol/`
/// keys and no retry fields.
fn server_params(params: Option<Value>, ctx: &RequestContext, backend: Era) -> Option<Value> {
    let mut p = match params {
        Some(Value::Object(m)) => m,
        None => Map::new(),
        other => return other,
    };
    let mut m = match p.remove("_meta") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    m.remove(meta::PROGRESS_TOKEN);
    m.remove(meta::PROTOCOL_VERSION);
    match backend {
        Era::Stateless => {
            let caps = ctx
                .client_capabilities()
                .cloned()
                .unwrap_or_else(|| json!({}));
            m.insert(meta::CLIENT_CAPABILITIES.into(), caps);
            if ctx.era() == Era::Stateful {
                if let Some(info) = ctx.handle().client_info() {
                    m.entry(meta::CLIENT_INFO).or_insert(info);
                }
                // A stateful client gets every log message of its calls
                // unless it set a level.
                let level = ctx
                    .handle()
                    .log_level()
                    .map_or_else(|| "debug".to_owned(), |l| l.as_str().to_owned());
                m.insert(meta::LOG_LEVEL.into(), json!(level));
            }
        }
        Era::Stateful => {
            m.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
            p.remove("inputResponses");
            p.remove("requestState");
        }
    }
    if !m.is_empty() {
        p.insert("_meta".into(), Value::Object(m));
    }
    Some(Value::Object(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_passes_as_is_only_when_for_front_would_leave_it_as_it_is() {
        let raw = |s: &str| RawJson::from_vec(s.as_bytes().to_vec());
        let plain = r#"{"content":[{"type":"text","text":"hi \"there\""}],"isError":false}"#;
        assert!(passes_as_is(&raw(plain), Era::Stateful));
        // The 2026-07-28 client's results get members from the transport.
        assert!(!passes_as_is(&raw(plain), Era::Stateless));
        for changed in [
            r#"{"content":[],"resultType":"complete"}"#,
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{}}}"#,
            r#"{"content":[],"ttlMs":5}"#,
        ] {
            let v: Value = serde_json::from_str(changed).unwrap();
            assert_ne!(
                for_client(v, "tools/call", Era::Stateful).to_string(),
                changed
            );
            assert!(!passes_as_is(&raw(changed), Era::Stateful), "{changed}");
        }
    }

    #[test]
    fn a_member_name_spelt_with_escapes_is_decided_on_the_parsed_members() {
        let raw = |s: &str| RawJson::from_vec(s.as_bytes().to_vec());
        for escaped in [
            r#"{"content":[],"result\u0054ype":"complete","requestState":"s"}"#,
            r#"{"content":[],"\u0072esultType":"complete"}"#,
            r#"{"content":[],"ttl\u004Ds":5}"#,
            r#"{"content":[],"_meta":{"io.modelcontextprotocol\/serverInfo":{}}}"#,
            r#"{"content":[],"_meta":{"io\u002emodelcontextprotocol/serverInfo":{}}}"#,
        ] {
            let v: Value = serde_json::from_str(escaped).unwrap();
            assert_ne!(
                for_client(v, "tools/call", Era::Stateful),
                serde_json::from_str::<Value>(escaped).unwrap(),
                "{escaped}"
            );
            assert!(!passes_as_is(&raw(escaped), Era::Stateful), "{escaped}");
        }
        // Escapes no removed name can hold keep the fast path: control
        // characters, quotes, backslashes (`\\u0054` is a backslash and
        // text), non-ASCII characters.
        for plain in [
            r#"{"content":[{"type":"text","text":"a\nb\t\"c\" \\u0054 \u00e9 \u001f"}]}"#,
            r#"{"content":[{"type":"text","text":"ends in a backslash \\"}]}"#,
        ] {
            assert!(passes_as_is(&raw(plain), Era::Stateful), "{plain}");
        }
    }

    #[test]
    fn each_front_era_gets_only_its_own_members() {
        let modern = json!({
            "resultType": "complete", "ttlMs": 60000, "cacheScope": "public",
            "tools": [{ "name": "t", "inputSchema": {} }],
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "s", "version": "1" } },
        });
        assert_eq!(
            for_client(modern, "tools/list", Era::Stateful),
            json!({ "tools": [{ "name": "t", "inputSchema": {} }] })
        );
        let legacy = json!({
            "tools": [{ "name": "t", "inputSchema": {}, "execution": { "taskSupport": "optional" } }],
            "_meta": { "io.modelcontextprotocol/related-task": { "taskId": "1" }, "x": 1 },
        });
        assert_eq!(
            for_client(legacy.clone(), "tools/list", Era::Stateless),
            json!({ "tools": [{ "name": "t", "inputSchema": {} }], "_meta": { "x": 1 } })
        );
        // Each era's own members stay.
        assert_eq!(
            for_client(legacy.clone(), "tools/list", Era::Stateful),
            legacy
        );
        let answer =
            json!({ "resultType": "input_required", "requestState": "s", "inputRequests": {} });
        assert_eq!(
            for_client(answer.clone(), "tools/call", Era::Stateless),
            answer
        );
    }
}
