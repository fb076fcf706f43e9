//! The host's namespace with real servers: lists refreshed on
//! `list_changed`, collisions reported, long names kept within 64
//! characters, prompts and resources of the example server routed.

use crate::common;
use crate::example_bin;
use crate::host_support;

use std::time::Duration;

use conduit_mcp::host::{Host, HostConfig, HostError, HostEvent, ItemKind};
use conduit_mcp::protocol::ContentBlock;
use conduit_mcp::{ClientConfig, StderrMode};
use host_support::{finish, listed, until};
use serde_json::json;

async fn add_tool(host: &Host, server: &str, name: &str) {
    host.client(server)
        .unwrap()
        .request("fixture/add_tool", Some(json!({ "name": name })))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_changed_notification_refreshes_the_namespace() {
    for era in ["modern", "legacy"] {
        let host = Host::start(HostConfig::new().server("fx", common::config(&["--era", era])))
            .await
            .unwrap();
        let mut events = host.events();
        assert!(!host.tools().iter().any(|t| t.name == "fx__late"));
        add_tool(&host, "fx", "late").await;
        let listed = until(&mut events, |e| matches!(e, HostEvent::Listed { .. })).await;
        assert!(
            matches!(listed, HostEvent::Listed { ref server, tools: 6, .. } if server == "fx"),
            "{era}: {listed:?}"
        );
        let late = host
            .tools()
            .into_iter()
            .find(|t| t.name == "fx__late")
            .unwrap_or_else(|| panic!("{era}: fx__late not listed"));
        assert_eq!(late.tool.name, "late");
        let r = host
            .call_tool("fx__late", json!({"text": "new"}))
            .await
            .unwrap();
        assert_eq!(r.joined_text(), "late: new", "{era}");
        finish(host).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_cannot_take_over_another_servers_tool_name() {
    // Issue 20's attack: `a` adds `b__echo`, whose namespaced name is
    // `a__b__echo`, the name of server `a__b`'s `echo`. A server name
    // holding the separator is refused, so no name can mean two servers.
    let config = HostConfig::new()
        .server("a", common::config(&[]))
        .server("a__b", common::config(&[]));
    match Host::start(config).await {
        Err(HostError::Config(e)) => assert!(e.problem.contains("`a__b`"), "{e}"),
        Ok(host) => {
            let mut events = host.events();
            add_tool(&host, "a", "b__echo").await;
            listed(&mut events, "a").await;
            let r = host
                .call_tool("a__b__echo", json!({"text": "who"}))
                .await
                .map(|r| r.joined_text());
            finish(host).await;
            panic!("`a__b` was started beside `a`; `a__b__echo` answered {r:?}");
        }
        Err(other) => panic!("{other}"),
    }
    // Added at run time: refused the same way; the host goes on.
    let config = HostConfig::new()
        .server("a", common::config(&[]))
        .server("my_fx", common::config(&[]));
    let host = Host::start(config).await.unwrap();
    let e = host.add("a__b", common::config(&[])).await.unwrap_err();
    assert!(matches!(e, HostError::Config(_)), "{e}");
    assert!(host.server("a__b").is_none());
    let e = host.add("my.fx", common::config(&[])).await.unwrap_err();
    assert!(
        e.to_string().contains("`my_fx`"),
        "same prefix as `my_fx`: {e}"
    );
    assert!(host.server("my.fx").is_none());
    let r = host.call_tool("a__echo", json!({"text": "still"})).await;
    assert_eq!(r.unwrap().joined_text(), "still");
    finish(host).await;
}

#[test]
fn server_names_that_would_make_a_name_ambiguous_are_refused() {
    let long = "s".repeat(54);
    let cases: [(&[&str], &str); 5] = [
        // Holds the separator.
        (&["a", "a__b"], "`a__b`"),
        // Two names, one prefix once sanitised.
        (&["my.fx", "my_fx"], "`my_fx`"),
        // `a_` + `__` + `x` reads as `a` + `__` + `_x`.
        (&["a_"], "`a_`"),
        (&["a-"], ""),
        // Cut with the item's name: two servers could share the cut part.
        (&[long.as_str()], "54"),
    ];
    for (names, culprit) in cases {
        let config = names.iter().fold(HostConfig::new(), |c, n| {
            c.server(*n, ClientConfig::new("unused"))
        });
        match (config.validate(), culprit) {
            (Ok(()), "") => {}
            (Ok(()), _) => panic!("{names:?} accepted"),
            (Err(e), "") => panic!("{names:?} refused: {e}"),
            (Err(e), _) => {
                assert_eq!(e.key, "servers", "{e}");
                assert!(e.problem.contains(culprit), "{names:?}: {e}");
            }
        }
    }
    // A longer limit makes room; another separator other names.
    let mut config = HostConfig::new().server(long.as_str(), ClientConfig::new("unused"));
    config.max_name_len = 128;
    config.validate().unwrap();
    let dotted = HostConfig::new()
        .server("a", ClientConfig::new("unused"))
        .server("a__b", ClientConfig::new("unused"))
        .separator(".");
    dotted.validate().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_uri_keeps_the_server_that_listed_it_first() {
    // `attacker` sorts first; `victim` lists the URI first.
    let config = HostConfig::new()
        .server("attacker", common::config(&["--resources"]))
        .server("victim", common::config(&["--resources"]));
    let host = Host::start(config).await.unwrap();
    let mut events = host.events();
    let add = |server: &'static str| {
        let client = host.client(server).unwrap();
        async move {
            client
                .request(
                    "fixture/add_resource",
                    Some(json!({"uri": "victim://data"})),
                )
                .await
                .unwrap();
        }
    };
    let listed = |server: &'static str| move |e: &HostEvent| matches!(e, HostEvent::Listed { server: s, resources: 1, .. } if s == server);
    add("victim").await;
    until(&mut events, listed("victim")).await;
    add("attacker").await;
    until(&mut events, listed("attacker")).await;
    let e = until(&mut events, |e| matches!(e, HostEvent::Collision(_))).await;
    assert_eq!(
        e.server(),
        "attacker",
        "the later claimant is left out: {e:?}"
    );
    let victim_pid = host.client("victim").unwrap().pid().unwrap();
    let read = host.read_resource("victim://data").await.unwrap();
    assert_eq!(
        read.contents[0].as_text(),
        Some(format!("victim://data from {victim_pid}").as_str()),
        "the later claimant took the URI over"
    );
    let owner = host.resources();
    assert_eq!(owner.len(), 1);
    assert_eq!(owner[0].server, "victim");
    let c = host.collisions();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        (
            c[0].kind,
            c[0].kept.server.as_str(),
            c[0].dropped.server.as_str()
        ),
        (ItemKind::Resource, "victim", "attacker")
    );
    // The victim re-lists (a new resource): it keeps the URI.
    host.client("victim")
        .unwrap()
        .request(
            "fixture/add_resource",
            Some(json!({"uri": "victim://more"})),
        )
        .await
        .unwrap();
    until(
        &mut events,
        |e| matches!(e, HostEvent::Listed { server, resources: 2, .. } if server == "victim"),
    )
    .await;
    assert_eq!(
        host.resources()
            .iter()
            .find(|r| r.uri == "victim://data")
            .map(|r| r.server.as_str()),
        Some("victim")
    );
    // Once its holder is gone, the name passes to the next claimant.
    host.remove("victim").unwrap().wait().await;
    let r = host.resources();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].uri.as_str(), r[0].server.as_str()),
        ("victim://data", "attacker")
    );
    assert!(host.collisions().is_empty(), "{:?}", host.collisions());
    finish(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_names_are_kept_within_64_characters_and_still_routed() {
    let server = "a-server-with-a-rather-long-name";
    let config = HostConfig::new().server(server, common::config(&[]));
    let host = Host::start(config.clone()).await.unwrap();
    let mut events = host.events();
    // Two long tools that differ only past the cut.
    let stem = "a-tool-whose-name-alone-is-longer-than-hosts-allow";
    for end in ["one", "two"] {
        add_tool(&host, server, &format!("{stem}-{end}")).await;
    }
    until(&mut events, |e| {
        matches!(e, HostEvent::Listed { tools: 7, .. })
    })
    .await;
    let tools = host.tools();
    assert_eq!(tools.len(), 7);
    for t in &tools {
        assert!(t.name.len() <= 64, "{} is {} long", t.name, t.name.len());
        assert!(t.name.starts_with(&format!("{server}__")), "{}", t.name);
    }
    let cut: Vec<_> = tools
        .iter()
        .filter(|t| t.tool.name.starts_with(stem))
        .collect();
    assert_eq!(cut.len(), 2);
    assert_ne!(cut[0].name, cut[1].name);
    for t in cut {
        assert_eq!(t.name.len(), 64, "{}", t.name);
        let r = host
            .call_tool(&t.name, json!({"text": "cut"}))
            .await
            .unwrap();
        assert_eq!(r.joined_text(), format!("{}: cut", t.tool.name));
    }
    assert!(host.collisions().is_empty(), "{:?}", host.collisions());
    finish(host).await;

    // The limit and the separator are configurable.
    let mut config = HostConfig::new().server("short", common::config(&[]));
    config.max_name_len = 20;
    config = config.separator(".");
    let host = Host::start(config).await.unwrap();
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert!(names.iter().all(|n| n.len() <= 20), "{names:?}");
    assert!(names.contains(&"short.echo".to_owned()), "{names:?}");
    assert!(host.collisions().is_empty(), "{:?}", host.collisions());
    finish(host).await;
}

/// `examples/server.rs`: one resource (`demo://readme`) and one prompt
/// (`greet`).
fn example_server() -> ClientConfig {
    let exe = example_bin::example_bin("server").expect("the server example builds");
    ClientConfig::new(exe.to_str().unwrap())
        .env("RUST_LOG", "warn")
        .stderr(StderrMode::Discard)
        .stdin_grace(Duration::from_millis(500))
        .term_grace(Duration::from_millis(500))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_of_the_example_server_are_routed() {
    let config = HostConfig::new()
        .server("demo", example_server())
        .server("fx", common::config(&[]));
    let host = Host::start(config).await.unwrap();
    let demo = host.server("demo").unwrap();
    assert!(demo.is_ready(), "{demo:?}");
    assert_eq!(
        (demo.tools, demo.prompts, demo.resources),
        (4, 1, 1),
        "{demo:?}"
    );
    // The fixture declares no prompts or resources: none asked for.
    let fx = host.server("fx").unwrap();
    assert_eq!((fx.prompts, fx.resources), (0, 0));
    assert!(fx.list_error.is_none(), "{fx:?}");

    let prompts = host.prompts();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "demo__greet");
    let got = host
        .get_prompt("demo__greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(got.messages.len(), 1, "{got:?}");
    match &got.messages[0].content {
        ContentBlock::Text(t) => assert_eq!(t.text, "Say hello to Ada."),
        other => panic!("{other:?}"),
    }

    let resources = host.resources();
    assert_eq!(resources.len(), 1);
    assert_eq!(
        (resources[0].uri.as_str(), resources[0].server.as_str()),
        ("demo://readme", "demo")
    );
    let read = host.read_resource("demo://readme").await.unwrap();
    let text = read.contents[0].as_text().unwrap_or_default();
    assert!(text.contains("example server"), "{read:?}");

    // Tools of both, side by side.
    let r = host
        .call_tool("demo__add", json!({"a": 1.5, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "3.5");
    let r = host
        .call_tool("fx__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "3");

    assert!(matches!(
        host.get_prompt("fx__greet", json!({})).await,
        Err(HostError::UnknownPrompt(_))
    ));
    assert!(matches!(
        host.read_resource("demo://nothing").await,
        Err(HostError::UnknownResource(_))
    ));
    finish(host).await;
}
