//! Requests, responses, eras and notifications against the fixture server.

use crate::common;

use std::time::Duration;

use conduit_mcp::{Client, Era, EraPreference, Error, RequestOptions};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_in_both_eras_and_auto() {
    common::trace();
    for (era, args, want) in [
        (EraPreference::Auto, vec![], Era::Stateless),
        (EraPreference::Auto, vec!["--era", "legacy"], Era::Stateful),
        (EraPreference::Stateful, vec![], Era::Stateful),
        (EraPreference::Stateless, vec![], Era::Stateless),
    ] {
        let client = Client::start(common::config(&args).era(era)).await.unwrap();
        let r = client
            .request("echo", Some(json!({"hello": "world"})))
            .await
            .unwrap();
        assert_eq!(r["hello"], "world");
        let s = client.session().expect("ready after a call");
        assert_eq!(s.era, want, "{era:?} {args:?}");
        let reports = crate::common::shutdown(client.stop().wait()).await;
        assert_eq!(reports.len(), 1);
        assert!(!common::alive(reports[0].pid));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_requests_are_matched_by_id() {
    let client = Client::start(common::config(&[])).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..500 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            let r = c.request("echo", Some(json!({ "i": i }))).await.unwrap();
            assert_eq!(r["i"], i);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_not_local_errors() {
    let client = Client::start(common::config(&[])).await.unwrap();
    let e = client.request("no/such/method", None).await.unwrap_err();
    assert_eq!(e.server_error().map(|e| e.code), Some(-32601), "{e}");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_sends_cancelled_and_ignores_late_answer() {
    let dir = common::tempdir("timeout");
    let log = dir.join("in.log");
    let client = Client::start(common::config(&["--log-file", log.to_str().unwrap()]))
        .await
        .unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    let e = client
        .request_with(
            "sleep",
            Some(json!({"ms": 300})),
            RequestOptions::new().timeout(Duration::from_millis(50)),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    // The client still works after the late answer would have arrived.
    let r = client
        .request("echo", Some(json!({"after": 1})))
        .await
        .unwrap();
    assert_eq!(r["after"], 1);
    crate::common::shutdown(client.stop().wait()).await;
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(
        sent.lines()
            .any(|l| l.contains("notifications/cancelled") && l.contains("timeout")),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_caller() {
    let client = Client::start(common::config(&[])).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let r = client
        .request_with(
            "sleep",
            Some(json!({"ms": 100})),
            RequestOptions::new().progress(tx),
        )
        .await
        .unwrap();
    assert_eq!(r["slept"], 100);
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push(p.progress);
    }
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_bursts_lose_nothing() {
    let client = Client::start(common::config(&[])).await.unwrap();
    let mut notes = client.notifications();
    let r = client
        .request("fixture/notify", Some(json!({"count": 5000})))
        .await
        .unwrap();
    assert_eq!(r["sent"], 5000);
    for k in 0..5000 {
        let n = notes.recv().await.unwrap();
        assert_eq!(n.method, "notifications/message");
        assert_eq!(n.params.unwrap()["data"], k);
    }
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_helpers_follow_pages_and_call_tools() {
    let client = Client::start(common::config(&[])).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "add", "sleep", "fail", "ask_roots"]);
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "5");
    assert!(!r.is_error());
    let r = client
        .call_tool("fail", json!({}), RequestOptions::new())
        .await
        .unwrap();
    assert!(r.is_error());
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_handler_serves_both_eras() {
    use conduit_mcp::{ErrorObject, InboundRequest, StartOptions};
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let handler = |req: InboundRequest| async move {
            match req.method.as_str() {
                "roots/list" => Ok(json!({"roots": [{"uri": "file:///srv", "name": "srv"}]})),
                m => Err(ErrorObject::new(-32601, m.to_string())),
            }
        };
        let client = Client::start_with(
            common::config(&[]).era(era),
            StartOptions::new().handler(handler),
        )
        .await
        .unwrap();
        let r = client
            .call_tool("ask_roots", json!({}), RequestOptions::new())
            .await
            .unwrap();
        assert!(r.joined_text().contains("file:///srv"), "{era:?}: {r:?}");
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_handler_server_requests_get_method_not_found() {
    let client = Client::start(common::config(&[]).era(EraPreference::Stateful))
        .await
        .unwrap();
    let r = client
        .call_tool("ask_roots", json!({}), RequestOptions::new())
        .await
        .unwrap();
    assert!(r.joined_text().contains("-32601"), "{r:?}");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_cancel_sends_cancelled() {
    let dir = common::tempdir("cancel");
    let log = dir.join("in.log");
    let client = Client::start(common::config(&["--log-file", log.to_str().unwrap()]))
        .await
        .unwrap();
    let token = conduit_mcp::CancelToken::new();
    let c = client.clone();
    let t = token.clone();
    let call = tokio::spawn(async move {
        c.request_with(
            "sleep",
            Some(json!({"ms": 10_000})),
            RequestOptions::new().cancel_token(t),
        )
        .await
    });
    common::eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("\"sleep\"")
    })
    .await
    .unwrap();
    token.cancel();
    let e = call.await.unwrap().unwrap_err();
    assert!(matches!(e, Error::Cancelled { .. }), "{e}");
    common::eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("notifications/cancelled")
    })
    .await
    .expect("cancel notification sent");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_timeout_means_no_timeout() {
    let client = Client::start(common::config(&[])).await.unwrap();
    let r = client
        .request_with(
            "echo",
            Some(json!({"x": 1})),
            RequestOptions::new()
                .timeout(Duration::MAX)
                .reset_timeout_on_progress(Duration::MAX),
        )
        .await
        .unwrap();
    assert_eq!(r["x"], 1);
    assert!(client.ready(Duration::MAX).await.is_ok());
    crate::common::shutdown(client.stop().wait()).await;
}

/// Large results take the zero-copy path (the line handed over in its read
/// buffer, the stdout pipe grown): each arrives intact, with escapes and
/// non-ASCII text, while small calls run alongside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_arrive_intact_alongside_small_ones() {
    let mut cfg = common::config(&[]);
    cfg = cfg.max_message_bytes(16 * 1024 * 1024);
    let client = Client::start(cfg).await.unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    let small = {
        let c = client.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                let r = c.request("echo", Some(json!({ "i": i }))).await.unwrap();
                assert_eq!(r["i"], i);
            }
        })
    };
    for (k, size) in [70_000usize, 300_000, 1_000_000, 3_000_000, 64_000]
        .into_iter()
        .enumerate()
    {
        let unit = "é\"\\\n\u{1F600}x";
        let text: String = unit.repeat(size / unit.len() + 1);
        let r = client
            .request("echo", Some(json!({ "k": k, "text": text })))
            .await
            .unwrap();
        assert_eq!(r["k"], k);
        assert_eq!(
            r["text"].as_str(),
            Some(text.as_str()),
            "result {k} differs"
        );
    }
    small.await.unwrap();
    crate::common::shutdown(client.stop().wait()).await;
}
