//! The prompts and completions.

use super::*;

/// The prompts.
pub(super) fn prompts(router: &Router) {
    router
        .clone()
        .prompt(
            "test_simple_prompt",
            "A simple prompt without arguments",
            |_: NoArguments, _ctx| async {
                Ok(messages(json!([{ "role": "user", "content": {
                    "type": "text", "text": "This is a simple prompt for testing." } }])))
            },
        )
        .prompt(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
            |a: PromptArgs, _ctx| async move {
                let text = format!("Prompt with arguments: arg1='{}', arg2='{}'", a.arg1, a.arg2);
                Ok(messages(json!([{ "role": "user", "content": { "type": "text", "text": text } }])))
            },
        )
        .prompt(
            "test_prompt_with_embedded_resource",
            "A prompt that includes an embedded resource",
            |a: EmbedArgs, _ctx| async move {
                Ok(messages(json!([
                    { "role": "user", "content": { "type": "resource", "resource": {
                        "uri": a.resource_uri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    } } },
                    { "role": "user", "content": {
                        "type": "text", "text": "Please process the embedded resource above." } },
                ])))
            },
        )
        .prompt(
            "test_prompt_with_image",
            "A prompt that includes image content",
            |_: NoArguments, _ctx| async {
                Ok(messages(json!([
                    { "role": "user", "content": { "type": "image", "data": PNG, "mimeType": "image/png" } },
                    { "role": "user", "content": { "type": "text", "text": "Please analyze the image above." } },
                ])))
            },
        )
        .prompt(
            "test_input_required_result_prompt",
            "MRTR: prompt that requires elicitation input",
            |_: NoArguments, ctx: RequestContext| async move {
                let q = elicit(
                    "What context should the prompt use?",
                    json!({ "context": { "type": "string" } }),
                    &["context"],
                );
                let r: ElicitResult = answer("user_context", ctx.ask("user_context", q).await?)?;
                let context = field(&r, "context").unwrap_or_else(|| "unknown".into());
                Ok(messages(json!([{ "role": "user", "content": {
                    "type": "text", "text": format!("Prompt with context: {context}") } }])))
            },
        );
}

/// `completion/complete`: the arguments of `test_prompt_with_arguments` and
/// the template's `id`, by prefix.
pub(super) async fn complete(
    p: CompleteParams,
    _ctx: RequestContext,
) -> Result<CompleteResult, HandlerError> {
    let candidates: &[&str] = match (&p.reference, p.argument.name.as_str()) {
        (Reference::Prompt(r), "arg1" | "arg2") if r.name == "test_prompt_with_arguments" => {
            &["paris", "park", "party"]
        }
        (Reference::ResourceTemplate(r), "id") if r.uri == TEMPLATE => &["1", "2", "3", "123"],
        _ => &[],
    };
    let values: Vec<String> = candidates
        .iter()
        .filter(|c| c.starts_with(p.argument.value.as_str()))
        .map(|c| (*c).to_owned())
        .collect();
    Ok(CompleteResult {
        completion: Completion {
            total: Some(values.len() as u64),
            has_more: Some(false),
            values,
            ..Default::default()
        },
        ..Default::default()
    })
}
