//! The Client over Streamable HTTP against this crate's own HTTP server (and
//! small fakes for what it never does): both eras, the session's
//! lifecycle, streams and resumption, the server's requests, cancellation,
//! headers, and supervision of a lost connection.

use crate::client_http_support as http_support;
use crate::server_http_support as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conduit_mcp::protocol::Root;
use conduit_mcp::{
    Backoff, CancelToken, Client, ClientConfig, ClientResponder, CloseReason, Era, EraPreference,
    Error, RequestOptions, StartOptions, Status,
};
use http_support::{result, Fake, Proxy, Recorder};
use serde_json::json;
use support::{checked, config, start, start_with, with_token, PATIENCE};

fn client_config(url: &str, era: EraPreference) -> ClientConfig {
    ClientConfig::http(url)
        .name("http-under-test")
        .era(era)
        .request_timeout(PATIENCE)
}

async fn ready(client: &Client) -> Arc<conduit_mcp::ServerSession> {
    client.ready(PATIENCE).await.expect("ready")
}

/// A client of `url` in `era`, once ready, with its session.
async fn connect(url: &str, era: EraPreference) -> (Client, Arc<conduit_mcp::ServerSession>) {
    let client = Client::start(client_config(url, era)).await.unwrap();
    let session = ready(&client).await;
    (client, session)
}

fn text_of(r: &conduit_mcp::CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_legacy_session_keeps_its_id_calls_tools_and_ends_with_delete() {
    let rec = Recorder::new();
    let server = start_with(config(), |s| rec.install(s)).await;
    let (client, session) = connect(&server.url, EraPreference::Stateful).await;
    assert_eq!(session.era, Era::Stateful);
    assert_eq!(session.protocol_version, "2025-11-25");
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let r = client
        .call_tool("echo", json!({ "text": "hi" }), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(text_of(&r), "hi");
    // Every request after initialize carried the session and its version.
    let posts: Vec<_> = rec
        .all()
        .into_iter()
        .filter(|s| s.method == "POST")
        .collect();
    let sid = posts[1]
        .header("mcp-session-id")
        .expect("session id")
        .to_owned();
    for p in &posts[1..] {
        assert_eq!(p.header("mcp-session-id"), Some(sid.as_str()));
        assert_eq!(p.header("mcp-protocol-version"), Some("2025-11-25"));
    }
    assert!(posts[0].header("mcp-session-id").is_none());
    // The shutdown's wait covers the session's end: the DELETE was sent.
    crate::common::shutdown(client.stop().wait()).await;
    let deleted = rec
        .all()
        .iter()
        .any(|s| s.method == "DELETE" && s.header("mcp-session-id") == Some(sid.as_str()));
    assert!(deleted, "no DELETE for the session: {:?}", rec.all());
}

#[tokio::test]
async fn discovery_picks_the_modern_era_and_tool_arguments_are_mirrored_into_headers() {
    let rec = Recorder::new();
    let server = start_with(config(), |s| rec.install(s)).await;
    let (client, session) = connect(&server.url, EraPreference::Auto).await;
    assert_eq!(session.era, Era::Stateless);
    client.list_tools().await.unwrap();
    // The server checks Mcp-Param-Region against the body (-32020 if absent).
    let r = client
        .call_tool(
            "region",
            json!({ "region": "Zürich", "query": "q" }),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r), "Zürich");
    let call = rec
        .wait_for(PATIENCE, |s| s.header("mcp-method") == Some("tools/call"))
        .await
        .unwrap();
    assert_eq!(call.header("mcp-name"), Some("region"));
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(
        call.header("mcp-param-region"),
        Some("=?base64?WsO8cmljaA==?=")
    );
    assert!(call.header("mcp-param-query").is_none());
    assert!(
        rec.all().iter().all(|s| s.method == "POST"),
        "no GET or DELETE in the stateless era"
    );
}

#[tokio::test]
async fn the_server_s_requests_are_answered_by_the_client_responder_in_both_eras() {
    let server = start(config()).await;
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let responder = ClientResponder::new()
            .roots(|| async { Ok(vec![Root::new("file:///srv/project", "project")]) });
        let opts = StartOptions::new().handler(responder);
        let client = Client::start_with(client_config(&server.url, era), opts)
            .await
            .unwrap();
        ready(&client).await;
        let r = client
            .call_tool("roots", json!({}), RequestOptions::default())
            .await
            .unwrap();
        assert!(
            text_of(&r).contains("file:///srv/project"),
            "{era:?}: {r:?}"
        );
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test]
async fn progress_arrives_on_the_answer_s_stream_in_both_eras() {
    let server = start(config()).await;
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let (client, _) = connect(&server.url, era).await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let r = client
            .call_tool(
                "sleep",
                json!({ "ms": 50 }),
                RequestOptions::new().progress(tx),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&r), "slept 50 ms");
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert!(n >= 1, "{era:?}: no progress");
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test]
async fn a_response_stream_the_server_closes_is_resumed_with_last_event_id() {
    let rec = Recorder::new();
    let server = start_with(config().sse_retry(Duration::from_millis(100)), |s| {
        rec.install(s)
    })
    .await;
    let (client, _) = connect(&server.url, EraPreference::Stateful).await;
    let r = client
        .call_tool("poll", json!({}), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(text_of(&r), "closed=true");
    let resumed = rec
        .wait_for(PATIENCE, |s| {
            s.method == "GET" && s.header("last-event-id").is_some()
        })
        .await;
    assert!(resumed.is_some(), "{:?}", rec.all());
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test]
async fn list_changes_arrive_on_the_session_s_get_stream() {
    let rec = Recorder::new();
    let server = start_with(config(), |s| rec.install(s)).await;
    let (client, _) = connect(&server.url, EraPreference::Stateful).await;
    let mut notes = client.notifications();
    // The GET stream is open before the change is made.
    rec.wait_for(PATIENCE, |s| s.method == "GET")
        .await
        .expect("a GET stream");
    client
        .call_tool("add_tool", json!({}), RequestOptions::default())
        .await
        .unwrap();
    let n = tokio::time::timeout(PATIENCE, async {
        loop {
            match notes.recv().await {
                Some(n) if n.method == "notifications/tools/list_changed" => return n,
                Some(_) => continue,
                None => panic!("notifications ended"),
            }
        }
    })
    .await
    .expect("list_changed");
    assert_eq!(n.method, "notifications/tools/list_changed");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test]
async fn cancelling_a_call_stops_the_server_s_work_in_both_eras() {
    let server = start(config()).await;
    for (i, era) in [EraPreference::Stateful, EraPreference::Stateless]
        .into_iter()
        .enumerate()
    {
        let (client, _) = connect(&server.url, era).await;
        let token = CancelToken::new();
        let (tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
        let call = {
            let (client, token) = (client.clone(), token.clone());
            tokio::spawn(async move {
                let opts = RequestOptions::new().cancel_token(token).progress(tx);
                client
                    .call_tool("sleep", json!({ "ms": 60_000 }), opts)
                    .await
            })
        };
        // Cancel once the tool runs (its first progress arrived).
        tokio::time::timeout(PATIENCE, progress.recv())
            .await
            .expect("progress");
        assert_eq!(server.counts.dropped.load(Ordering::SeqCst), i);
        token.cancel();
        let r = tokio::time::timeout(PATIENCE, call)
            .await
            .expect("the cancelled call did not end")
            .unwrap();
        assert!(matches!(r, Err(Error::Cancelled { .. })), "{era:?}: {r:?}");
        assert!(
            support::eventually(|| server.counts.dropped.load(Ordering::SeqCst) == i + 1).await,
            "{era:?}: the server's work was not dropped"
        );
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test]
async fn an_answer_over_max_message_bytes_fails_that_call_alone() {
    let server = start(config()).await;
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let client = Client::start(client_config(&server.url, era).max_message_bytes(1024))
            .await
            .unwrap();
        ready(&client).await;
        let big = "x".repeat(8192);
        let r = client
            .call_tool("echo", json!({ "text": big }), RequestOptions::default())
            .await;
        match r {
            Err(Error::Unanswered { problem }) => {
                assert!(problem.contains("1024"), "{era:?}: {problem}")
            }
            other => panic!("{era:?}: {other:?}"),
        }
        // An event over the limit on an SSE answer: the same.
        let r = client
            .call_tool("big", json!({ "ms": 3 }), RequestOptions::default())
            .await;
        assert!(matches!(r, Err(Error::Unanswered { .. })), "{era:?}: {r:?}");
        // The link is still up.
        let r = client
            .call_tool(
                "echo",
                json!({ "text": "small" }),
                RequestOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&r), "small");
        assert!(matches!(client.status(), Status::Ready(_)));
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test]
async fn configured_headers_reach_the_server_and_never_show() {
    let server = start_with(config(), |s| with_token(s, "t0ken")).await;
    let cfg =
        client_config(&server.url, EraPreference::Auto).header("Authorization", "Bearer t0ken");
    assert!(!format!("{cfg:?}").contains("t0ken"));
    assert!(!serde_json::to_string(&cfg).unwrap().contains("t0ken"));
    let client = Client::start(cfg).await.unwrap();
    ready(&client).await;
    client.list_tools().await.unwrap();
    crate::common::shutdown(client.stop().wait()).await;
    // Without it: 401 to the probe and to initialize, a handshake failure.
    let client = Client::start(client_config(&server.url, EraPreference::Auto).max_reconnects(0))
        .await
        .unwrap();
    let err = client.ready(PATIENCE).await.unwrap_err();
    assert!(err.to_string().contains("401"), "{err}");
    assert!(!err.to_string().contains("t0ken"));
}

#[tokio::test]
async fn a_lost_server_fails_calls_in_flight_at_once_and_the_client_reconnects() {
    let server = start(config()).await;
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let mut proxy = Proxy::start(server.addr).await;
        let backoff = Backoff::new()
            .initial(Duration::from_millis(20))
            .max(Duration::from_millis(100));
        let client = Client::start(
            client_config(&proxy.url(), era)
                .backoff(backoff)
                .max_reconnects(50),
        )
        .await
        .unwrap();
        ready(&client).await;
        let (tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
        let call = {
            let client = client.clone();
            tokio::spawn(async move {
                let opts = RequestOptions::new().progress(tx);
                client
                    .call_tool("sleep", json!({ "ms": 60_000 }), opts)
                    .await
            })
        };
        let before = server.counts.finished.load(Ordering::SeqCst);
        // Cut once the tool runs (its first progress arrived).
        tokio::time::timeout(PATIENCE, progress.recv())
            .await
            .expect("progress");
        proxy.cut().await;
        // Failed by the cut, not by its timeout after waiting.
        let r = tokio::time::timeout(PATIENCE * 2, call)
            .await
            .expect("the call did not end")
            .unwrap();
        assert!(
            matches!(r, Err(Error::Closed(CloseReason::ConnectionFailed(_)))),
            "{era:?}: {r:?}"
        );
        assert_eq!(server.counts.finished.load(Ordering::SeqCst), before);
        proxy.restart().await;
        let status = client
            .ready(PATIENCE)
            .await
            .expect("ready again after the server came back");
        assert_eq!(
            status.era,
            if era == EraPreference::Stateful {
                Era::Stateful
            } else {
                Era::Stateless
            }
        );
        let r = client
            .call_tool("echo", json!({ "text": "back" }), RequestOptions::default())
            .await
            .unwrap();
        assert_eq!(text_of(&r), "back");
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test]
async fn an_unreachable_server_is_retried_with_backoff_then_given_up() {
    // A port nothing listens on (bound, then released).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let backoff = Backoff::new()
        .initial(Duration::from_millis(10))
        .max(Duration::from_millis(20));
    let client = Client::start(
        client_config(&format!("http://{addr}/mcp"), EraPreference::Auto)
            .backoff(backoff)
            .max_reconnects(2),
    )
    .await
    .unwrap();
    let status = tokio::time::timeout(PATIENCE, async {
        let mut rx = client.watch_status();
        loop {
            let s = rx.borrow_and_update().clone();
            if matches!(s, Status::GaveUp(_)) {
                return s;
            }
            rx.changed().await.unwrap();
        }
    })
    .await
    .expect("gave up");
    assert!(
        format!("{status:?}").contains("HTTP connection"),
        "{status:?}"
    );
    assert!(matches!(
        client.list_tools().await,
        Err(Error::GaveUp { attempts: 3, .. })
    ));
}

#[tokio::test]
async fn a_session_the_server_forgot_is_started_again() {
    let inits = Arc::new(AtomicUsize::new(0));
    let i = inits.clone();
    let fake = Fake::start(move |req, session| {
        let method = req["method"].as_str().unwrap_or_default();
        match method {
            "initialize" => {
                let n = i.fetch_add(1, Ordering::SeqCst) + 1;
                let body = result(
                    req,
                    json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
                    "serverInfo": { "name": "fake", "version": "0" } }),
                );
                (200, vec![("mcp-session-id", format!("s{n}"))], body)
            }
            // The first session is forgotten at once.
            _ if session == Some("s1") => (404, vec![], String::new()),
            "notifications/initialized" => (202, vec![], String::new()),
            "tools/list" => (200, vec![], result(req, json!({ "tools": [] }))),
            _ => (400, vec![], "unexpected".into()),
        }
    })
    .await;
    let client = Client::start(
        client_config(&fake.url, EraPreference::Stateful).backoff(
            Backoff::new()
                .initial(Duration::from_millis(10))
                .max(Duration::from_millis(10))
                .factor(1.0),
        ),
    )
    .await
    .unwrap();
    // notifications/initialized got 404: the link closed, a new session began.
    assert!(support::eventually(|| inits.load(Ordering::SeqCst) >= 2).await);
    let session = ready(&client).await;
    assert_eq!(session.era, Era::Stateful);
    assert!(client.list_tools().await.unwrap().is_empty());
    assert_eq!(inits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_probe_refused_with_400_falls_back_to_initialize_after_reading_the_body() {
    let bodies = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let b = bodies.clone();
    let fake = Fake::start(move |req, _| {
        let method = req["method"].as_str().unwrap_or_default().to_owned();
        b.lock().unwrap().push(method.clone());
        match method.as_str() {
            "server/discover" => (
                400,
                vec![("content-type", "text/plain".into())],
                "Bad Request: No valid session ID provided".into(),
            ),
            "initialize" => (
                200,
                vec![("mcp-session-id", "s".into())],
                result(
                    req,
                    json!({ "protocolVersion": "2025-06-18", "capabilities": {},
                    "serverInfo": { "name": "legacy-only", "version": "0" } }),
                ),
            ),
            "notifications/initialized" => (202, vec![], String::new()),
            _ => (200, vec![], result(req, json!({ "tools": [] }))),
        }
    })
    .await;
    // At once, not after the probe timeout (a minute, past the wait for
    // readiness).
    let mut cfg = client_config(&fake.url, EraPreference::Auto);
    cfg = cfg.probe_timeout(Duration::from_secs(60));
    let client = Client::start(cfg).await.unwrap();
    let session = ready(&client).await;
    assert_eq!(session.era, Era::Stateful);
    assert_eq!(session.protocol_version, "2025-06-18");
    assert_eq!(
        bodies.lock().unwrap()[..2],
        ["server/discover", "initialize"]
    );
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test]
async fn invalid_x_mcp_header_tools_are_dropped_and_valid_ones_kept() {
    let fake = Fake::start(|req, _| {
        let method = req["method"].as_str().unwrap_or_default();
        match method {
            "server/discover" => (
                200,
                vec![],
                result(
                    req,
                    json!({ "resultType": "complete",
                "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} } }),
                ),
            ),
            "tools/list" => (
                200,
                vec![],
                result(
                    req,
                    json!({ "resultType": "complete", "tools": [
                { "name": "good", "inputSchema": { "type": "object", "properties": {
                    "r": { "type": "string", "x-mcp-header": "R" } } } },
                { "name": "bad", "inputSchema": { "type": "object", "properties": {
                    "r": { "type": "object", "x-mcp-header": "R" } } } }
            ] }),
                ),
            ),
            _ => (400, vec![], String::new()),
        }
    })
    .await;
    let (client, _) = connect(&fake.url, EraPreference::Stateless).await;
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["good"]);
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test]
async fn a_modern_listen_stream_carries_list_changes() {
    use conduit_mcp::protocol::{ServerNotification, SubscriptionFilter};
    let server = start(config()).await;
    let (client, _) = connect(&server.url, EraPreference::Stateless).await;
    let mut stream = client
        .listen(SubscriptionFilter::all_list_changes())
        .await
        .unwrap();
    // The server has the subscription once it acknowledged it.
    let ack = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("ack");
    assert!(
        matches!(ack, Some(ServerNotification::SubscriptionsAcknowledged(_))),
        "{ack:?}"
    );
    client
        .call_tool("add_tool", json!({}), RequestOptions::default())
        .await
        .unwrap();
    let n = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.next().await {
                Some(ServerNotification::ToolsListChanged(n)) => return n,
                Some(_) => continue,
                None => panic!("the stream ended: {:?}", stream.end()),
            }
        }
    })
    .await
    .expect("tools/list_changed on the listen stream");
    let _ = n;
    // The listen request outlives the request timeout; other calls go on.
    let r = client
        .call_tool(
            "echo",
            json!({ "text": "beside" }),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r), "beside");
    drop(stream);
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_of_a_session_follows_the_acknowledged_initialized() {
    use std::sync::atomic::AtomicBool;
    // The server takes its time acknowledging `notifications/initialized`;
    // the session's first request must not overtake it.
    let acknowledged = Arc::new(AtomicBool::new(false));
    let overtaken = Arc::new(AtomicBool::new(false));
    let (a, o) = (acknowledged.clone(), overtaken.clone());
    let fake = Fake::start(
        move |req, _| match req["method"].as_str().unwrap_or_default() {
            "initialize" => (
                200,
                vec![("mcp-session-id", "s".into())],
                result(
                    req,
                    json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
                "serverInfo": { "name": "slow-ack", "version": "0" } }),
                ),
            ),
            "notifications/initialized" => {
                // A blocking pause inside the fake (its runtime has 2 workers).
                std::thread::sleep(Duration::from_millis(300));
                a.store(true, Ordering::SeqCst);
                (202, vec![], String::new())
            }
            "tools/list" => {
                if !a.load(Ordering::SeqCst) {
                    o.store(true, Ordering::SeqCst);
                }
                (200, vec![], result(req, json!({ "tools": [] })))
            }
            _ => (400, vec![], String::new()),
        },
    )
    .await;
    let client = Client::start(client_config(&fake.url, EraPreference::Stateful))
        .await
        .unwrap();
    client.list_tools().await.unwrap();
    assert!(acknowledged.load(Ordering::SeqCst));
    assert!(
        !overtaken.load(Ordering::SeqCst),
        "tools/list arrived before initialized was acknowledged"
    );
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test]
async fn notifications_a_subscriber_leaves_unread_are_bounded_in_bytes() {
    let server = start(config()).await;
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let client =
            Client::start(client_config(&server.url, era).max_queued_notification_bytes(16 * 1024))
                .await
                .unwrap();
        ready(&client).await;
        let notes = client.notifications();
        // 200 log notifications of 1 KiB each, none read.
        let r = client
            .call_tool("big", json!({ "ms": 200 }), RequestOptions::default())
            .await
            .unwrap();
        assert_eq!(text_of(&r), "refused=0");
        assert!(
            notes.dropped() > 100,
            "{era:?}: {} dropped",
            notes.dropped()
        );
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed_so_headers_never_reach_another_server() {
    let elsewhere_hits = Arc::new(AtomicUsize::new(0));
    let e = elsewhere_hits.clone();
    let elsewhere = Fake::start(move |req, _| {
        e.fetch_add(1, Ordering::SeqCst);
        (200, vec![], result(req, json!({})))
    })
    .await;
    let target = elsewhere.url.clone();
    let redirecting =
        Fake::start(move |_, _| (307, vec![("location", target.clone())], String::new())).await;
    let client = Client::start(
        client_config(&redirecting.url, EraPreference::Auto)
            .header("Authorization", "Bearer not-for-elsewhere")
            .max_reconnects(0),
    )
    .await
    .unwrap();
    let err = client.ready(PATIENCE).await.unwrap_err();
    assert!(err.to_string().contains("307"), "{err}");
    assert_eq!(elsewhere_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn calls_that_timed_out_give_their_room_in_the_write_queue_back() {
    let silent = http_support::Silent::start().await;
    // Room for about three tools/call bodies in transit.
    let client = Client::start(
        client_config(&silent.url, EraPreference::Stateless)
            .max_write_queue_bytes(1024)
            .request_timeout(Duration::from_millis(200)),
    )
    .await
    .unwrap();
    ready(&client).await;
    for i in 0..8 {
        let r = client
            .call_tool(
                "hang",
                json!({ "n": i, "pad": "x".repeat(100) }),
                RequestOptions::default(),
            )
            .await;
        assert!(matches!(r, Err(Error::Timeout { .. })), "call {i}: {r:?}");
    }
    // Each timed-out call was cancelled (its response closed): the queue
    // has room, and a call the server answers goes through.
    let tools = client.list_tools().await;
    assert!(matches!(tools, Ok(ref t) if t.is_empty()), "{tools:?}");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test]
async fn a_tool_called_before_any_listing_still_gets_its_mcp_param_headers() {
    let rec = Recorder::new();
    let server = start_with(config(), |s| rec.install(s)).await;
    let (client, session) = connect(&server.url, EraPreference::Stateless).await;
    assert_eq!(session.era, Era::Stateless);
    // No list_tools first: the server still requires Mcp-Param-Region.
    let r = client
        .call_tool(
            "region",
            json!({ "region": "eu-west" }),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r), "eu-west");
    let call = rec
        .wait_for(PATIENCE, |s| s.header("mcp-method") == Some("tools/call"))
        .await
        .unwrap();
    assert_eq!(call.header("mcp-param-region"), Some("eu-west"));
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_stream_is_open_before_the_session_s_first_request() {
    // A server may send requests not tied to any of the client's on the GET
    // stream only (the TypeScript SDK drops them when it is not open): the
    // session's first request must wait for it. This server is slow to
    // accept the GET.
    let order = Arc::new(std::sync::Mutex::new(Vec::<&'static str>::new()));
    let o = order.clone();
    let cfg = config();
    let server = start_with(cfg, |s| {
        checked(s, move |parts| {
            if parts.method() == "GET" {
                std::thread::sleep(Duration::from_millis(300));
                o.lock().unwrap().push("GET accepted");
            } else if parts
                .headers()
                .get("mcp-method")
                .is_some_and(|m| m == "tools/list")
            {
                o.lock().unwrap().push("tools/list");
            }
            true
        })
    })
    .await;
    let (client, _) = connect(&server.url, EraPreference::Stateful).await;
    client.list_tools().await.unwrap();
    assert_eq!(*order.lock().unwrap(), ["GET accepted", "tools/list"]);
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test]
async fn a_get_stream_that_asks_for_retry_0_is_reopened_with_a_floor_and_backoff() {
    // Each GET stream says `retry: 0` and ends at once, with no event.
    let gets = Arc::new(std::sync::Mutex::new(Vec::<Instant>::new()));
    let g = gets.clone();
    let fake = Fake::start_with_get(
        |req, _| match req["method"].as_str().unwrap_or_default() {
            "initialize" => (
                200,
                vec![("mcp-session-id", "s".into())],
                result(
                    req,
                    json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                        "serverInfo": { "name": "retry-0", "version": "0" } }),
                ),
            ),
            _ => (202, vec![], String::new()),
        },
        move || {
            g.lock().unwrap().push(Instant::now());
            (
                200,
                vec![("content-type", "text/event-stream".into())],
                "retry: 0\n\n".into(),
            )
        },
    )
    .await;
    let (client, _) = connect(&fake.url, EraPreference::Stateful).await;
    // Four GETs: the stream is reopened after each empty one.
    assert!(
        support::eventually(|| gets.lock().unwrap().len() >= 4).await,
        "the GET stream was not reopened three times within {PATIENCE:?}: {} GETs",
        gets.lock().unwrap().len()
    );
    // Between them the client waited the floor (250 ms, not the server's
    // 0), then twice that, then twice again: each gap is at least its wait.
    let at = gets.lock().unwrap().clone();
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    for (gap, wait_ms) in gaps.iter().zip([250, 500, 1000]) {
        assert!(
            *gap >= Duration::from_millis(wait_ms),
            "a GET came {gap:?} after the one before, before the {wait_ms} ms wait: {gaps:?}"
        );
    }
    crate::common::shutdown(client.stop().wait()).await;
}
