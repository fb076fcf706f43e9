//! The host's namespace with real servers: lists refreshed on
//! `list_changed`, collisions reported, long names kept within 64
//! characters, prompts and resources of the example server routed.

mod common;
#[path = "interop/example_bin.rs"]
mod example_bin;
mod host_support;

use std::time::Duration;

use conduit_mcp::host::{Host, HostConfig, HostError, HostEvent, ItemKind};
use conduit_mcp::{ClientConfig, StderrMode};
use host_support::{finish, until};
use serde_json::{json, Value};

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
async fn names_that_collide_are_reported_and_the_first_server_keeps_them() {
    // `my.fx` and `my_fx` both become `my_fx__...`; `my.fx` sorts first.
    let config = HostConfig::new()
        .server("my.fx", common::config(&[]))
        .server("my_fx", common::config(&["--era", "legacy"]));
    let host = Host::start(config).await.unwrap();
    let collisions = host.collisions();
    assert_eq!(collisions.len(), 5, "{collisions:?}");
    for c in &collisions {
        assert_eq!(c.kind, ItemKind::Tool);
        assert_eq!(c.kept.server, "my.fx");
        assert_eq!(c.dropped.server, "my_fx");
        assert_eq!(c.kept.name, c.dropped.name);
        assert_eq!(c.name, format!("my_fx__{}", c.kept.name));
    }
    assert_eq!(host.tools().len(), 5);
    assert!(host.tools().iter().all(|t| t.server == "my.fx"));
    // The name reaches the server that kept it: `my.fx` is the modern one.
    let era = host.client("my.fx").unwrap().session().unwrap().era;
    assert_eq!(era, conduit_mcp::Era::Modern);
    let r = host
        .call_tool("my_fx__echo", json!({"text": "first"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "first");
    finish(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collision_that_appears_at_run_time_is_reported_as_an_event() {
    // Server `a` adds a tool `b__echo`: `a__b__echo`, the name of server
    // `a__b`'s `echo`. `a` sorts first and keeps it.
    let config = HostConfig::new()
        .server("a", common::config(&[]))
        .server("a__b", common::config(&[]));
    let host = Host::start(config).await.unwrap();
    assert!(host.collisions().is_empty());
    let mut events = host.events();
    assert_eq!(
        host.tools()
            .into_iter()
            .find(|t| t.name == "a__b__echo")
            .unwrap()
            .server,
        "a__b"
    );
    add_tool(&host, "a", "b__echo").await;
    let e = until(&mut events, |e| matches!(e, HostEvent::Collision(_))).await;
    let HostEvent::Collision(c) = e else {
        unreachable!()
    };
    assert_eq!(c.name, "a__b__echo");
    assert_eq!(
        (c.kept.server.as_str(), c.kept.name.as_str()),
        ("a", "b__echo")
    );
    assert_eq!(
        (c.dropped.server.as_str(), c.dropped.name.as_str()),
        ("a__b", "echo")
    );
    assert_eq!(host.collisions(), vec![c]);
    let r = host
        .call_tool("a__b__echo", json!({"text": "who"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "b__echo: who", "the fixture `a` answers");
    finish(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_names_are_kept_within_64_characters_and_still_routed() {
    let long = "a-server-whose-name-alone-takes-up-nearly-all-of-the-limit";
    let mut config = HostConfig::new().server(long, common::config(&[]));
    let host = Host::start(config.clone()).await.unwrap();
    let tools = host.tools();
    assert_eq!(tools.len(), 5);
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for n in &names {
        assert!(n.len() <= 64, "{n} is {} long", n.len());
    }
    // `...__ask_roots` (69) is cut and hashed; `...__add` (63) fits.
    let add = format!("{long}__add");
    assert!(names.contains(&add.as_str()), "{names:?}");
    let cut = tools.iter().find(|t| t.tool.name == "ask_roots").unwrap();
    assert_eq!(cut.name.len(), 64, "{}", cut.name);
    assert_ne!(cut.name, format!("{long}__ask_roots"));
    let r = host.call_tool(&add, json!({"a": 1, "b": 1})).await.unwrap();
    assert_eq!(r.joined_text(), "2");
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 5);
    finish(host).await;

    // The limit and the separator are configurable.
    config.max_name_len = 32;
    config.separator = ".".into();
    let host = Host::start(config).await.unwrap();
    assert!(host.tools().iter().all(|t| t.name.len() <= 32));
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
        .graces(Duration::from_millis(500), Duration::from_millis(500))
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
    let text = got
        .pointer("/messages/0/content/text")
        .and_then(Value::as_str);
    assert_eq!(text, Some("Say hello to Ada."), "{got}");

    let resources = host.resources();
    assert_eq!(resources.len(), 1);
    assert_eq!(
        (resources[0].uri.as_str(), resources[0].server.as_str()),
        ("demo://readme", "demo")
    );
    let read = host.read_resource("demo://readme").await.unwrap();
    assert!(
        read.pointer("/contents/0/text")
            .and_then(Value::as_str)
            .is_some_and(|t| t.contains("example server")),
        "{read}"
    );

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
