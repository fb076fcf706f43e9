//! The caps of paginated lists: pages, items and bytes, and a repeated
//! cursor, on every path that follows `nextCursor` (the typed `list_*`
//! helpers, `list_all`, `tools()`; the `mcp tools` command uses
//! `list_all_with`). Item 10 of issue 20; the memory figure of an endless
//! list is in `client_pagination_memory.rs`.

use crate::common;

use std::time::Duration;

use conduit_mcp::error::ListCap;
use conduit_mcp::{Client, ClientConfig, Error, RequestOptions};

/// The caps reached, as `(cap, limit, pages, items)`.
fn cap_of(r: Result<usize, Error>) -> (ListCap, usize, usize, usize) {
    match r {
        Err(Error::ListTooLong {
            cap,
            limit,
            pages,
            items,
            ..
        }) => (cap, limit, pages, items),
        other => panic!("expected a list cap, got {other:?}"),
    }
}

async fn start(args: &[&str], tune: impl FnOnce(ClientConfig) -> ClientConfig) -> Client {
    let client = Client::start(tune(common::config(args))).await.unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_list_cap_stops_an_endless_list_with_the_cap_and_the_counts() {
    // 10 tools a page, a fresh cursor for ever.
    let endless = ["--endless-tools", "10"];

    let client = start(&endless, |c| c.max_list_pages(5)).await;
    let r = client.list_tools().await.map(|t| t.len());
    assert_eq!(cap_of(r), (ListCap::Pages, 5, 5, 50));
    // The raw loop, with options, has the same caps.
    let r = client
        .list_all_with(
            "tools/list",
            "tools",
            RequestOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .map(|t| t.len());
    assert_eq!(cap_of(r), (ListCap::Pages, 5, 5, 50));
    crate::common::shutdown(client.stop().wait()).await;

    let client = start(&endless, |c| c.max_list_items(25)).await;
    let r = client
        .list_all("tools/list", "tools")
        .await
        .map(|t| t.len());
    assert_eq!(cap_of(r), (ListCap::Items, 25, 3, 30));
    // The kept tool list is fetched by the same loop.
    let r = client.tools().await.map(|t| t.len());
    assert_eq!(cap_of(r), (ListCap::Items, 25, 3, 30));
    crate::common::shutdown(client.stop().wait()).await;

    let client = start(&endless, |c| c.max_list_bytes(100_000)).await;
    match client.list_tools().await {
        Err(
            e @ Error::ListTooLong {
                cap: ListCap::Bytes,
                limit: 100_000,
                bytes,
                pages,
                ..
            },
        ) => {
            assert!(bytes > 100_000 && pages > 1, "{e}");
            // The message says which cap and the counts.
            let text = e.to_string();
            assert!(
                text.contains("tools/list") && text.contains("100000 bytes"),
                "{text}"
            );
        }
        other => panic!("expected the byte cap, got {other:?}"),
    }
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_cursor_ends_the_list_with_an_error() {
    let client = start(&["--endless-tools", "2", "--repeat-cursor"], |c| c).await;
    for r in [
        client.list_tools().await.map(|t| t.len()),
        client
            .list_all("tools/list", "tools")
            .await
            .map(|t| t.len()),
    ] {
        match r {
            Err(Error::RepeatedCursor { method, pages }) => {
                assert_eq!((method.as_str(), pages), ("tools/list", 2))
            }
            other => panic!("expected a repeated cursor, got {other:?}"),
        }
    }
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_within_the_caps_is_whole() {
    // The fixture's own list: two pages, five tools.
    let client = start(&[], |c| c.max_list_pages(2).max_list_items(5)).await;
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 5);
    let raw = client.list_all("tools/list", "tools").await.unwrap();
    assert_eq!(raw.len(), 5);
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_listing_has_an_overall_deadline_named_in_its_error() {
    // Each page comes 300 ms after it is asked for, well inside the
    // request timeout (1 s), and points to the next one for ever.
    let client = start(&["--endless-tools", "2", "--page-delay-ms", "300"], |c| {
        c.request_timeout(Duration::from_secs(1))
            .max_list_pages(40)
            .list_timeout(Duration::from_secs(2))
    })
    .await;
    for raw in [false, true] {
        let started = std::time::Instant::now();
        let r = if raw {
            client
                .list_all_with(
                    "tools/list",
                    "tools",
                    RequestOptions::new().timeout(Duration::from_secs(5)),
                )
                .await
                .map(|t| t.len())
        } else {
            client.list_tools().await.map(|t| t.len())
        };
        let took = started.elapsed();
        common::figure(
            "one endless listing, 300 ms a page",
            format!("{took:?}: {r:?}"),
        );
        match r {
            Err(
                ref e @ Error::ListTimeout {
                    ref method,
                    limit,
                    pages,
                },
            ) => {
                assert_eq!(
                    (method.as_str(), limit),
                    ("tools/list", Duration::from_secs(2))
                );
                assert!((3..=7).contains(&pages), "{pages} pages");
                assert!(e.to_string().contains("list_timeout"), "{e}");
            }
            other => panic!("expected the list's deadline, got {other:?}"),
        }
    }
    // A list that fits in its time is whole, and the client still works.
    crate::common::shutdown(client.stop().wait()).await;
    let client = start(&[], |c| c.list_timeout(Duration::from_secs(2))).await;
    assert_eq!(client.list_tools().await.unwrap().len(), 5);
    crate::common::shutdown(client.stop().wait()).await;
}

#[test]
fn list_timeout_must_be_positive_and_is_read_in_milliseconds() {
    let e = ClientConfig::new("x")
        .list_timeout(Duration::ZERO)
        .validate()
        .unwrap_err();
    assert_eq!(e.key, "list_timeout");
    let c: ClientConfig =
        serde_json::from_str(r#"{"command": "x", "list_timeout_ms": 1500}"#).unwrap();
    assert_eq!(c.get_list_timeout(), Duration::from_millis(1500));
    assert_eq!(
        ClientConfig::new("x").get_list_timeout(),
        Duration::from_secs(300)
    );
}
