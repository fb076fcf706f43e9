//! Property tests: arbitrary input never makes the server panic or fail,
//! and it never sends more than one reply per input line.

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServeEnd, ServerConfig};
use proptest::prelude::*;

use crate::server_support;
use serde_json::{json, Map, Value};

struct Echo;

impl Handler for Echo {
    async fn handle_request(
        &self,
        req: Request,
        _ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        Ok(req.params.unwrap_or(Value::Null))
    }
}

/// Feeds `lines` then EOF; returns every output line and how serving ended.
fn run(lines: Vec<Vec<u8>>) -> (Vec<String>, ServeEnd) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = ServerConfig::new(Implementation::new("prop", "0")).max_message_bytes(256);
    rt.block_on(server_support::serve_lines(config, Echo, lines))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z0-9/_.]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Objects shaped like JSON-RPC messages, valid or not.
fn rpc_like() -> impl Strategy<Value = Value> {
    let jsonrpc = prop_oneof![
        Just(Some(json!("2.0"))),
        Just(Some(json!("1.0"))),
        Just(None),
        Just(Some(json!(2)))
    ];
    let id = prop_oneof![
        Just(None),
        (0i64..4).prop_map(|n| Some(json!(n))),
        (0i64..4).prop_map(|n| Some(json!(n.to_string()))),
        Just(Some(Value::Null)),
        Just(Some(json!(1.5))),
        Just(Some(json!({}))),
    ];
    let method = prop_oneof![
        Just(None),
        Just(Some(json!("ping"))),
        Just(Some(json!("initialize"))),
        Just(Some(json!("server/discover"))),
        Just(Some(json!("tools/call"))),
        Just(Some(json!("notifications/cancelled"))),
        Just(Some(json!("notifications/initialized"))),
        Just(Some(json!(7))),
    ];
    let params = prop_oneof![
        Just(None),
        json_value().prop_map(Some),
        Just(Some(
            json!({ "protocolVersion": "2025-11-25", "capabilities": {} })
        )),
        Just(Some(json!({ "requestId": 1 }))),
        Just(Some(json!({ "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {} } }))),
    ];
    let extra = prop_oneof![
        Just(None),
        json_value().prop_map(|v| Some(("result", v))),
        json_value().prop_map(|v| Some(("error", v))),
        Just(Some(("error", json!({ "code": -1, "message": "x" })))),
    ];
    (jsonrpc, id, method, params, extra).prop_map(|(j, i, m, p, e)| {
        let mut o = Map::new();
        for (k, v) in [("jsonrpc", j), ("id", i), ("method", m), ("params", p)] {
            if let Some(v) = v {
                o.insert(k.into(), v);
            }
        }
        if let Some((k, v)) = e {
            o.insert(k.into(), v);
        }
        Value::Object(o)
    })
}

fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Raw bytes (newlines removed: one line each).
        prop::collection::vec(any::<u8>(), 0..300).prop_map(|v| v
            .into_iter()
            .map(|b| if b == b'\n' { b' ' } else { b })
            .collect()),
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        rpc_like().prop_map(|v| serde_json::to_vec(&v).unwrap()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_input_never_panics_and_gets_at_most_one_reply_per_line(
        lines in prop::collection::vec(line(), 0..24)
    ) {
        let n = lines.len();
        let (out, end) = run(lines);
        prop_assert_eq!(end, ServeEnd::Eof);
        // The echo handler never sends notifications or requests, so every
        // output line is a reply.
        prop_assert!(out.len() <= n, "{} replies to {} lines: {:?}", out.len(), n, out);
        for l in &out {
            let v: Value = serde_json::from_str(l).expect("reply is JSON");
            prop_assert_eq!(&v["jsonrpc"], &json!("2.0"));
            prop_assert!(v.get("result").is_some() != v.get("error").is_some());
        }
    }
}
