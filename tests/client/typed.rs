//! The typed client against `examples/server.rs` (a Router-based server),
//! in both eras: every typed helper, the era-agnostic ping, the local
//! argument check, the listen stream, the kept tool list, and a typed
//! handler that declares its capability by itself.

#![cfg(unix)]

use crate::example_bin;

use std::time::Duration;

use conduit_mcp::protocol::{
    CompleteParams, ContentBlock, LoggingLevel, Reference, ResourceContents, Root,
    ServerNotification, SubscriptionFilter,
};
use conduit_mcp::{
    Client, ClientConfig, ClientResponder, Era, EraPreference, Error, ListenEnd, RequestOptions,
    StartOptions, StderrMode,
};
use serde::Serialize;
use serde_json::json;

fn config(era: EraPreference) -> ClientConfig {
    let exe = example_bin::example_bin("server").expect("the server example could not be built");
    ClientConfig::new(exe.to_string_lossy())
        .stderr(StderrMode::Discard)
        .era(era)
        .request_timeout(Duration::from_secs(20))
        .stdin_grace(Duration::from_millis(500))
        .term_grace(Duration::from_millis(500))
}

async fn start(era: EraPreference, handler: Option<ClientResponder>) -> Client {
    let opts = match handler {
        Some(h) => StartOptions::new().handler(h),
        None => StartOptions::new(),
    };
    let client = Client::start_with(config(era), opts).await.unwrap();
    client.ready(Duration::from_secs(20)).await.unwrap();
    client
}

#[derive(Serialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_typed_helper_in_both_eras() {
    for (pref, era) in [
        (EraPreference::Stateful, Era::Stateful),
        (EraPreference::Stateless, Era::Stateless),
    ] {
        let client = start(pref, None).await;
        assert_eq!(client.session().unwrap().era, era);
        client.ping().await.unwrap();

        let tools = client.list_tools().await.unwrap();
        let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo", "add", "sleep", "roots"], "{era}");
        let echo = &tools[0];
        assert_eq!(echo.input_schema["properties"]["text"]["type"], "string");
        assert_eq!(echo.input_schema["required"], json!(["text"]));

        // Any Serialize that is an object; anything else fails locally.
        let r = client
            .call_tool("add", AddArgs { a: 2.0, b: 40.5 }, RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(r.structured_content, Some(json!({ "sum": 42.5 })));
        let e = client
            .call_tool("add", [1, 2], RequestOptions::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&e, Error::Codec { problem, .. } if problem.contains("must be a JSON object, not an array")),
            "{e}"
        );
        // Bad arguments: a tool error naming the problem.
        let r = client
            .call_tool("add", json!({ "a": "two" }), RequestOptions::new())
            .await
            .unwrap();
        assert!(r.is_error(), "{r:?}");
        assert!(r.joined_text().contains("\"two\" is not of type"), "{r:?}");

        let resources = client.list_resources().await.unwrap();
        assert_eq!(resources[0].uri, "demo://readme");
        assert!(client.list_resource_templates().await.unwrap().is_empty());
        let read = client.read_resource("demo://readme").await.unwrap();
        assert!(
            matches!(&read.contents[0], ResourceContents::Text(t) if t.text.contains("example server"))
        );
        let e = client.read_resource("demo://nothing").await.unwrap_err();
        // -32002 up to 2025-11-25; -32602 in 2026-07-28 (SEP-2164).
        let code = if era == Era::Stateful { -32002 } else { -32602 };
        assert_eq!(e.server_error().map(|e| e.code), Some(code), "{e}");

        let prompts = client.list_prompts().await.unwrap();
        assert_eq!(prompts[0].name, "greet");
        let p = client
            .get_prompt("greet", json!({ "name": "Ada" }))
            .await
            .unwrap();
        assert!(
            matches!(&p.messages[0].content, ContentBlock::Text(t) if t.text == "Say hello to Ada.")
        );

        // No completer registered: the fallback answers -32601.
        let e = client
            .complete(CompleteParams::new(Reference::prompt("greet"), "name", "A"))
            .await
            .unwrap_err();
        assert_eq!(e.server_error().map(|e| e.code), Some(-32601), "{e}");

        client.set_log_level(LoggingLevel::Warning).await.unwrap();
        match era {
            Era::Stateful => {
                client.subscribe_resource("demo://readme").await.unwrap();
                client.unsubscribe_resource("demo://readme").await.unwrap();
                let e = client
                    .listen(SubscriptionFilter::default())
                    .await
                    .unwrap_err();
                assert!(
                    matches!(
                        e,
                        Error::Unsupported {
                            era: Era::Stateful,
                            ..
                        }
                    ),
                    "{e}"
                );
            }
            Era::Stateless => {
                let e = client
                    .subscribe_resource("demo://readme")
                    .await
                    .unwrap_err();
                assert!(
                    matches!(
                        e,
                        Error::Unsupported {
                            era: Era::Stateless,
                            ..
                        }
                    ),
                    "{e}"
                );
            }
        }

        // The kept tool list: the same Arc until refreshed.
        let a = client.tools().await.unwrap();
        let b = client.tools().await.unwrap();
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        let c = client.refresh_tools().await.unwrap();
        assert!(!std::sync::Arc::ptr_eq(&a, &c));
        assert_eq!(a, c);
        crate::common::shutdown(client.stop().wait()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_is_a_stream_past_the_request_timeout_that_ends_with_a_reason() {
    let client =
        Client::start(config(EraPreference::Stateless).request_timeout(Duration::from_millis(300)))
            .await
            .unwrap();
    client.ready(Duration::from_secs(20)).await.unwrap();
    let mut stream = client
        .listen(SubscriptionFilter::all_list_changes())
        .await
        .unwrap();
    match stream.next().await {
        Some(ServerNotification::SubscriptionsAcknowledged(ack)) => {
            assert_eq!(ack.notifications.tools_list_changed, Some(true));
            assert_eq!(
                ack.meta.unwrap()["io.modelcontextprotocol/subscriptionId"],
                json!(stream.id())
            );
        }
        other => panic!("{other:?}"),
    }
    // Three calls sent after it time out, one after the other: three
    // request timeouts later the stream is still open.
    for _ in 0..3 {
        let late = client
            .call_tool("sleep", json!({ "ms": 60_000 }), RequestOptions::default())
            .await;
        assert!(matches!(late, Err(Error::Timeout { .. })), "{late:?}");
    }
    assert!(
        stream.end().is_none(),
        "the stream ended: {:?}",
        stream.end()
    );
    // The client stops: the stream ends, saying why.
    let shutdown = client.stop();
    assert!(stream.next().await.is_none());
    assert!(
        matches!(stream.end(), Some(ListenEnd::Failed(Error::Stopped))),
        "{:?}",
        stream.end()
    );
    shutdown.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_handler_declares_roots_by_itself_in_both_eras() {
    for pref in [EraPreference::Stateful, EraPreference::Stateless] {
        let responder = ClientResponder::new()
            .roots(|| async { Ok(vec![Root::new("file:///typed/root", "typed")]) });
        // The config declares nothing: the responder does.
        let client = start(pref, Some(responder)).await;
        let r = client
            .call_tool("roots", json!({}), RequestOptions::new())
            .await
            .unwrap();
        assert!(!r.is_error(), "{pref:?}: {r:?}");
        assert_eq!(
            r.structured_content.unwrap()["roots"][0]["uri"],
            json!("file:///typed/root"),
            "{pref:?}"
        );
        crate::common::shutdown(client.stop().wait()).await;
    }
}
