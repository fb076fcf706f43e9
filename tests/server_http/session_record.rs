//! Session records: the data of a 2025-11-25 session, apart from its live
//! parts, serialised, sealed by the caller's key, and materialised as a
//! live session by another service sharing the records.

use std::sync::Arc;

use conduit_mcp::protocol::{CallToolResult, Implementation};
use conduit_mcp::server::http::{
    HttpConfig, HttpService, MemoryStore, Owner, Principal, RecordError, Seal, SealError,
    SessionRecord, SessionStore,
};
use conduit_mcp::server::{RequestContext, Router, ServerConfig};
use serde_json::{json, Value};
use tower::ServiceExt;

use axum::body::Body;
use axum::http::Request;

/// A test sealer: XOR with a key byte, and a check byte that a wrong key
/// or a changed record fails.
struct Sealer(u8);

impl Seal for Sealer {
    fn seal(&self, plain: &[u8]) -> Vec<u8> {
        let mut out: Vec<u8> = plain.iter().map(|b| b ^ self.0).collect();
        out.push(self.0);
        out
    }

    fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        match sealed.split_last() {
            Some((&key, body)) if key == self.0 => Ok(body.iter().map(|b| b ^ self.0).collect()),
            _ => Err("sealed with another key".into()),
        }
    }
}

fn service(store: Arc<dyn SessionStore>) -> HttpService {
    let router = Router::new().tool(
        "hello",
        "Says hello.",
        |_: Value, _ctx: RequestContext| async { Ok(CallToolResult::text("hello")) },
    );
    let config = HttpConfig::new(ServerConfig::new(Implementation::new("t", "0")));
    HttpService::with_session_store(config, router, store).expect("a valid config")
}

fn post(session: Option<&str>, body: Value) -> Request<Body> {
    let mut b = Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

#[test]
fn a_record_round_trips_through_serde_and_a_sealer() {
    let mut record = SessionRecord::new("4f2a", Owner::Principal(Principal::new("alice")));
    record.protocol_version = Some("2025-11-25".into());
    record.client_capabilities = Some(json!({ "roots": {} }));
    record.subscriptions = vec!["file:///a".into()];
    let text = serde_json::to_string(&record).unwrap();
    assert_eq!(
        serde_json::from_str::<SessionRecord>(&text).unwrap(),
        record
    );
    let sealed = record.seal(&Sealer(7));
    assert!(
        !sealed.windows(5).any(|w| w == b"alice"),
        "sealed: not readable"
    );
    assert_eq!(SessionRecord::open(&sealed, &Sealer(7)).unwrap(), record);
}

#[test]
fn a_record_of_another_version_or_a_failed_seal_is_refused() {
    let record = SessionRecord::new("4f2a", Owner::Unknown);
    let sealed = record.seal(&Sealer(7));
    assert!(matches!(
        SessionRecord::open(&sealed, &Sealer(9)),
        Err(RecordError::Seal(_))
    ));
    let mut future = serde_json::to_value(&record).unwrap();
    future["version"] = json!(SessionRecord::VERSION + 1);
    let sealed = Sealer(7).seal(future.to_string().as_bytes());
    assert!(matches!(
        SessionRecord::open(&sealed, &Sealer(7)),
        Err(RecordError::Version { found }) if found == SessionRecord::VERSION + 1
    ));
    let sealed = Sealer(7).seal(b"{\"version\": 1}");
    assert!(matches!(
        SessionRecord::open(&sealed, &Sealer(7)),
        Err(RecordError::Format(_))
    ));
}

#[tokio::test]
async fn a_session_minted_by_one_service_is_served_by_another_from_its_record() {
    let (first, second) = (
        Arc::new(MemoryStore::default()),
        Arc::new(MemoryStore::default()),
    );
    let a = service(first.clone());
    let b = service(second.clone());
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": { "roots": {} },
        "clientInfo": { "name": "t", "version": "0" } } });
    let r = a.clone().oneshot(post(None, init)).await.unwrap();
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "hello", "arguments": {} } });
    // The second service knows nothing of it yet.
    let r = b
        .clone()
        .oneshot(post(Some(&sid), call.clone()))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // The first store's record, sealed on its way to the second store.
    let record = first.load(&sid).expect("the first store keeps the record");
    assert_eq!(record.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(record.client_capabilities, Some(json!({ "roots": {} })));
    let sealed = record.seal(&Sealer(3));
    second.save(SessionRecord::open(&sealed, &Sealer(3)).unwrap());
    let r = b.clone().oneshot(post(Some(&sid), call)).await.unwrap();
    assert_eq!(r.status(), 200);
    let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "hello");
    // A session ended where it is served leaves the store too.
    let end = Request::delete("/mcp")
        .header("host", "localhost")
        .header("mcp-session-id", &sid)
        .body(Body::empty())
        .unwrap();
    assert!(b.clone().oneshot(end).await.unwrap().status().is_success());
    assert!(second.load(&sid).is_none());
}
