//! The SEP-2322 (multi round-trip) tools of the `input-required-result-*` scenarios.

use super::*;

/// The SEP-2322 (multi round-trip) tools of the `input-required-result-*`
/// scenarios. Each asks through [`RequestContext::ask`], so in the legacy
/// era they send real requests and complete in one call.
pub(super) fn input_required_tools(router: &Router, seal: Arc<Seal>) {
    const ELICIT: &str = "test_input_required_result_elicitation";
    const STATE: &str = "test_input_required_result_request_state";
    const MULTIPLE: &str = "test_input_required_result_multiple_inputs";
    const ROUNDS: &str = "test_input_required_result_multi_round";
    const TAMPER: &str = "test_input_required_result_tampered_state";
    const CAPS: &str = "test_input_required_result_capabilities";
    let name = || json!({ "name": { "type": "string" } });
    let (s1, s2, s3, s4, s5) = (seal.clone(), seal.clone(), seal.clone(), seal.clone(), seal);
    router
        .clone()
        .tool(
            ELICIT,
            "MRTR: returns InputRequiredResult with elicitation request",
            move |_: NoArguments, ctx: RequestContext| async move {
                let v = ctx
                    .ask("user_name", elicit("What is your name?", name(), &["name"]))
                    .await?;
                let r: ElicitResult = answer("user_name", v)?;
                let who = field(&r, "name").unwrap_or_else(|| "unknown".into());
                Ok(CallToolResult::text(format!("Hello, {who}!")))
            },
        )
        .tool(
            "test_input_required_result_sampling",
            "MRTR: returns InputRequiredResult with sampling request",
            |_: NoArguments, ctx: RequestContext| async move {
                let v = ctx
                    .ask(
                        "capital_question",
                        sample("What is the capital of France?", 100),
                    )
                    .await?;
                let r: CreateMessageResult = answer("capital_question", v)?;
                Ok(CallToolResult::text(format!(
                    "Sampling result: {}",
                    sampled_text(&r)
                )))
            },
        )
        .tool(
            "test_input_required_result_list_roots",
            "MRTR: returns InputRequiredResult with roots/list request",
            |_: NoArguments, ctx: RequestContext| async move {
                let v = ctx.ask("client_roots", InputRequest::list_roots()).await?;
                let r: ListRootsResult = answer("client_roots", v)?;
                Ok(CallToolResult::text(format!(
                    "Found {} root(s)",
                    r.roots.len()
                )))
            },
        )
        .tool(
            STATE,
            "MRTR: returns InputRequiredResult with requestState",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s1.clone();
                async move {
                    let state = seal.open(STATE, &ctx)?;
                    ctx.set_request_state(seal.seal(STATE, json!({ "step": "confirm" })));
                    let confirm = elicit(
                        "Please confirm",
                        json!({ "ok": { "type": "boolean" } }),
                        &["ok"],
                    );
                    let v = ctx.ask("confirm", confirm).await?;
                    let r: ElicitResult = answer("confirm", v)?;
                    let ok = r.action == ElicitAction::Accept
                        && r.content.as_ref().and_then(|c| c.get("ok")) == Some(&json!(true));
                    // Legacy: no round trip, so no state to check.
                    let text = match (state, ok) {
                        (Some(_), true) => "state-ok: requestState validated",
                        (None, true) => "confirmed (no requestState in this era)",
                        (_, false) => "not confirmed",
                    };
                    Ok(CallToolResult::text(text))
                }
            },
        )
        .tool(
            MULTIPLE,
            "MRTR: returns InputRequiredResult with multiple input requests",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s2.clone();
                async move {
                    seal.open(MULTIPLE, &ctx)?;
                    ctx.set_request_state(seal.seal(MULTIPLE, json!({ "step": "inputs" })));
                    let got = ctx
                        .ask_all(vec![
                            (
                                "user_name".into(),
                                elicit("What is your name?", name(), &["name"]),
                            ),
                            ("greeting".into(), sample("Generate a greeting", 50)),
                            ("client_roots".into(), InputRequest::list_roots()),
                        ])
                        .await?;
                    let take = |k: &str| got.get(k).cloned().unwrap_or(Value::Null);
                    let user: ElicitResult = answer("user_name", take("user_name"))?;
                    let greeting: CreateMessageResult = answer("greeting", take("greeting"))?;
                    let roots: ListRootsResult = answer("client_roots", take("client_roots"))?;
                    Ok(CallToolResult::text(format!(
                        "Name: {}; Greeting: {}; Roots: {}",
                        field(&user, "name").unwrap_or_else(|| "unknown".into()),
                        sampled_text(&greeting),
                        roots.roots.len()
                    )))
                }
            },
        )
        .tool(
            ROUNDS,
            "MRTR: multi-round InputRequiredResult workflow",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s3.clone();
                async move {
                    // The state says how far the client got: round 2 carries
                    // the name, so step 1 is not asked again.
                    let state = seal.open(ROUNDS, &ctx)?.unwrap_or(Value::Null);
                    let name_from_state = (state["round"] == 2)
                        .then(|| state["name"].as_str().map(str::to_owned))
                        .flatten();
                    let who = match name_from_state {
                        Some(n) => n,
                        None => {
                            ctx.set_request_state(seal.seal(ROUNDS, json!({ "round": 1 })));
                            let q = elicit("Step 1: What is your name?", name(), &["name"]);
                            let r: ElicitResult = answer("step1", ctx.ask("step1", q).await?)?;
                            field(&r, "name").unwrap_or_else(|| "friend".into())
                        }
                    };
                    ctx.set_request_state(seal.seal(ROUNDS, json!({ "round": 2, "name": who })));
                    let q = elicit(
                        "Step 2: What is your favorite color?",
                        json!({ "color": { "type": "string" } }),
                        &["color"],
                    );
                    let r: ElicitResult = answer("step2", ctx.ask("step2", q).await?)?;
                    let color = field(&r, "color").unwrap_or_else(|| "no color".into());
                    Ok(CallToolResult::text(format!(
                        "Multi-round complete for {who} who likes {color}"
                    )))
                }
            },
        )
        .tool(
            TAMPER,
            "MRTR: integrity-protected requestState",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s4.clone();
                async move {
                    // A tampered state fails here, before anything else.
                    seal.open(TAMPER, &ctx)?;
                    ctx.set_request_state(seal.seal(TAMPER, json!({ "step": "confirm" })));
                    let confirm = elicit(
                        "Please confirm",
                        json!({ "ok": { "type": "boolean" } }),
                        &["ok"],
                    );
                    let r: ElicitResult = answer("confirm", ctx.ask("confirm", confirm).await?)?;
                    Ok(CallToolResult::text(format!(
                        "integrity-ok: state verified, {}",
                        elicit_text(&r)
                    )))
                }
            },
        )
        .tool(
            CAPS,
            "MRTR: asks only for what the client declared",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s5.clone();
                async move {
                    seal.open(CAPS, &ctx)?;
                    let mut wanted = Vec::new();
                    if ctx.client_supports("elicitation") {
                        let q = elicit(
                            "Elicitation input",
                            json!({ "value": { "type": "string" } }),
                            &["value"],
                        );
                        wanted.push(("elicit_input".to_owned(), q));
                    }
                    if ctx.client_supports("sampling") {
                        wanted.push(("sample_input".to_owned(), sample("Sample request", 50)));
                    }
                    if wanted.is_empty() {
                        return Ok(CallToolResult::text("No supported capabilities declared"));
                    }
                    ctx.set_request_state(seal.seal(CAPS, json!({ "step": "capabilities" })));
                    let got = ctx.ask_all(wanted).await?;
                    let keys: Vec<&str> = got.keys().map(String::as_str).collect();
                    Ok(CallToolResult::text(format!(
                        "capabilities-ok: received {}",
                        keys.join(",")
                    )))
                }
            },
        );
}
