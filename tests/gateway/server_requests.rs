//! What a 2025-11-25 server asks of its clients through the gateway: a
//! request goes to the one client whose call it belongs to or to nobody,
//! one client cannot take every slot for the server's requests, a
//! `roots/list` outside any call is answered from the config, and a
//! result's members are judged as the client parses them, escapes and all.

use crate::gateway_support;

use conduit_mcp::gateway::{Auth, ClientGrant, HttpGateway, HttpGatewayConfig};
use conduit_mcp::host::HostConfig;
use conduit_mcp::Secret;
use gateway_support::common::{self, tempdir};
use gateway_support::{fixture, At, LEGACY, PATIENCE};
use serde_json::{json, Value};

const PATH: &str = "/servers/old/mcp";
const ALICE: [(&str, &str); 1] = [("authorization", "Bearer alice-token-0123456789")];
const BOB: [(&str, &str); 1] = [("authorization", "Bearer bob-token-0123456789ab")];

/// A gateway on 127.0.0.1:0 in front of the fixture as a 2025-11-25
/// server named `old` (with `args`), for `config`.
async fn front(args: &[&str], config: HttpGatewayConfig) -> (HttpGateway, At) {
    let mut all = vec!["--era", "legacy"];
    all.extend_from_slice(args);
    let host = HostConfig::new().server("old", common::config(&all));
    let f = HttpGateway::start(host, config)
        .await
        .expect("the gateway starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = f.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    (f, At { addr })
}

fn alice_and_bob() -> Auth {
    Auth::Clients(vec![
        ClientGrant::new("alice", Secret::new("alice-token-0123456789")).server("*", ["*"]),
        ClientGrant::new("bob", Secret::new("bob-token-0123456789ab")).server("*", ["*"]),
    ])
}

/// Posts `message` (an answer or a notification) in session `sid`.
async fn post(at: &At, sid: &str, who: &[(&str, &str)], message: Value) -> u16 {
    let mut h = vec![("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
    h.extend_from_slice(who);
    at.send("POST", PATH, &h, Some(&message)).await.status
}

/// The text of a tool result's first content item.
fn text(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {v}"))
        .to_owned()
}

#[tokio::test]
async fn a_question_of_a_call_waiting_for_its_next_round_never_reaches_another_client() {
    let (f, at) = front(&[], HttpGatewayConfig::new()).await;
    // The victim, a 2026-07-28 client: the server's first question is its
    // call's round; the call then waits for the victim's next round.
    let mut params = json!({ "name": "ask_twice", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } } });
    let r1 = at
        .modern(PATH, &[], 1, "tools/call", params.clone())
        .await
        .json()
        .await;
    let inputs = r1["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("an input round: {r1}"));
    let (key, asked) = inputs.iter().next().unwrap();
    assert_eq!(asked["params"]["message"], "question 1", "{r1}");
    let key = key.clone();

    // Another client, with a call running on the server, answers whatever
    // it is asked with a forgery.
    let other = at.session(PATH, &[], json!({ "elicitation": {} })).await;
    let running = at
        .legacy(
            PATH,
            &other,
            &[],
            1,
            "tools/call",
            json!({ "name": "sleep", "arguments": { "ms": 60000 }, "_meta": { "progressToken": "p" } }),
        )
        .await;
    let mut events = running.sse();
    let progress = events
        .next_message()
        .await
        .expect("the running call's progress");
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    let (addr, sid) = (at.addr, other.clone());
    let shown = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = shown.clone();
    let reader = tokio::spawn(async move {
        let at = At { addr };
        while let Some(m) = events.next_message().await {
            if m["method"] == "elicitation/create" {
                record.lock().unwrap().push(m["params"]["message"].clone());
                let forged = json!({ "jsonrpc": "2.0", "id": m["id"], "result": {
                    "action": "accept", "content": { "answer": "forged" } } });
                post(&at, &sid, &[], forged).await;
            }
        }
    });

    // The server asks the victim's call its second question now.
    let released = at
        .legacy(PATH, &other, &[], 2, "fixture/release", json!({}))
        .await
        .json()
        .await;
    assert_eq!(released["result"]["released"], 1, "{released}");
    // The victim's next round: its own answer to the first question.
    params["inputResponses"] =
        json!({ key: { "action": "accept", "content": { "answer": "the victim's" } } });
    params["requestState"] = r1["result"]["requestState"].clone();
    let r2 = at
        .modern(PATH, &[], 2, "tools/call", params)
        .await
        .json()
        .await;
    let answers = text(&r2);
    reader.abort();
    let shown = shown.lock().unwrap().clone();
    common::figure(
        "gateway: a 2025-11-25 server's second question for a waiting 2026-07-28 call, another client's call running",
        format!("shown to the other client: {shown:?}; the victim's call got {answers}"),
    );
    assert!(
        shown.is_empty(),
        "another client was shown the victim's question: {shown:?}"
    );
    assert!(!answers.contains("forged"), "{answers}");
    assert!(answers.contains("the victim's"), "{answers}");
    // Refused, not lost: the server was told it cannot be routed, and the
    // refusal is counted.
    assert!(answers.contains("cannot tell which"), "{answers}");
    let metrics = at.send("GET", "/metrics", &[], None).await.bytes().await;
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains(
            r#"mcp_gateway_server_requests_refused_total{server="old",reason="several_clients"} 1"#
        ),
        "{metrics}"
    );
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } });
    assert_eq!(post(&at, &other, &[], cancel).await, 202);
    f.shutdown().await;
}

#[tokio::test]
async fn a_client_that_never_answers_leaves_the_others_room_for_the_servers_requests() {
    let dir = tempdir("gw-slots");
    let log = dir.join("old.log");
    let config = HttpGatewayConfig::new().auth(alice_and_bob());
    let (f, at) = front(&["--log-file", log.to_str().unwrap()], config).await;
    // Alice's call makes the server ask her 16 questions (the client's
    // slots for the server's requests); she answers none, then cancels.
    let alice = at.session(PATH, &ALICE, json!({ "roots": {} })).await;
    let flood = at
        .legacy(
            PATH,
            &alice,
            &ALICE,
            1,
            "fixture/ask_many",
            json!({ "count": 16, "method": "roots/list" }),
        )
        .await;
    let mut events = flood.sse();
    for _ in 0..4 {
        let ask = events.next_message().await.expect("the server's request");
        assert_eq!(ask["method"], "roots/list", "{ask}");
    }
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } });
    assert_eq!(post(&at, &alice, &ALICE, cancel).await, 202);
    let cancelled = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("notifications/cancelled")
    };
    assert!(common::eventually(PATIENCE, cancelled).await.is_some());

    // Bob's call gets its input round.
    let bob = at.session(PATH, &BOB, json!({ "roots": {} })).await;
    let call = at
        .legacy(
            PATH,
            &bob,
            &BOB,
            1,
            "tools/call",
            json!({ "name": "ask_roots", "arguments": {} }),
        )
        .await;
    assert!(
        call.is_sse(),
        "Bob's call was answered at once: {}",
        call.json().await
    );
    let mut events = call.sse();
    let first = events.next_message().await.expect("a message for Bob");
    common::figure(
        "gateway: Bob's input round after Alice left 16 of the server's requests unanswered",
        format!("Bob's first message: {first}"),
    );
    assert_eq!(first["method"], "roots/list", "{first}");
    let answer = json!({ "jsonrpc": "2.0", "id": first["id"], "result": { "roots": [{ "uri": "file:///bob" }] } });
    assert_eq!(post(&at, &bob, &BOB, answer).await, 202);
    let done = events.next_message().await.expect("Bob's result");
    assert!(text(&done).contains("file:///bob"), "{done}");
    f.shutdown().await;
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn a_servers_roots_list_outside_any_call_gets_the_configured_roots() {
    let dir = tempdir("gw-roots-at-start");
    let entry = |name: &str| {
        let log = dir.join(format!("{name}.log"));
        let args = [
            "--era",
            "legacy",
            "--roots-at-start",
            "--log-file",
            log.to_str().unwrap(),
        ];
        (fixture(&dir, name, &args), log)
    };
    let (mut old, old_log) = entry("old");
    let (plain, plain_log) = entry("plain");
    old["conduit"] = json!({ "roots": [{ "uri": "file:///srv/docs", "name": "docs" }] });
    let gw = gateway_support::serve(&dir, json!({ "old": old, "plain": plain }), &[], &[]).await;
    let answer_in = |log: &std::path::Path| {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .find(|l| l.contains("\"roots-at-start\""))
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
    };
    let mut answers = Vec::new();
    for log in [&old_log, &plain_log] {
        common::eventually(PATIENCE, || answer_in(log).is_some()).await;
        answers.push(answer_in(log).expect("the server's roots/list answered"));
    }
    common::figure(
        "mcp serve: roots/list a 2025-11-25 server sends at start (configured roots, none)",
        format!("{} | {}", answers[0], answers[1]),
    );
    assert_eq!(
        answers[0]["result"],
        json!({ "roots": [{ "uri": "file:///srv/docs", "name": "docs" }] }),
        "{}",
        answers[0]
    );
    assert_eq!(
        answers[1]["result"],
        json!({ "roots": [] }),
        "{}",
        answers[1]
    );
    gw.terminate_clean().await;
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn a_member_name_the_server_escapes_is_still_removed_for_a_2025_client() {
    let (f, at) = front(&[], HttpGatewayConfig::new()).await;
    let sid = at.session(PATH, &[], json!({})).await;
    let mut seen = Vec::new();
    for result in [
        r#"{"content":[],"result\u0054ype":"complete","request\u0053tate":"s"}"#,
        r#"{"content":[],"_meta":{"io.modelcontextprotocol\/serverInfo":{"name":"x"}}}"#,
    ] {
        let r = at
            .legacy(
                PATH,
                &sid,
                &[],
                1,
                "fixture/raw",
                json!({ "result": result }),
            )
            .await
            .json()
            .await;
        seen.push(r["result"].clone());
    }
    common::figure(
        "gateway: results with escaped 2026-07-28 member names, to a 2025-11-25 session",
        format!("{seen:?}"),
    );
    assert_eq!(seen, [json!({ "content": [] }), json!({ "content": [] })]);
    f.shutdown().await;
}
