//! The resources, the template, and the watched resource's updates.

use super::*;

/// The resources and the template, and the watched resource's updates.
pub(super) fn resources(router: &Router) {
    let version = Arc::new(AtomicU64::new(0));
    let described = |uri: &str, name: &str, title: &str, description: &str, mime: &str| Resource {
        title: Some(title.into()),
        description: Some(description.into()),
        mime_type: Some(mime.into()),
        ..Resource::new(uri, name)
    };
    let watched = version.clone();
    let updater = router.clone();
    router
        .clone()
        .resource(
            described(
                "test://static-text",
                "static-text",
                "Static Text Resource",
                "A static text resource for testing",
                "text/plain",
            ),
            |_ctx| async {
                Ok(text_contents(
                    "test://static-text",
                    "text/plain",
                    "This is the content of the static text resource.",
                ))
            },
        )
        .resource(
            described(
                "test://static-binary",
                "static-binary",
                "Static Binary Resource",
                "A static binary resource (image) for testing",
                "image/png",
            ),
            |_ctx| async {
                Ok(typed(json!({ "contents": [{
                    "uri": "test://static-binary", "mimeType": "image/png", "blob": PNG,
                }] })))
            },
        )
        .resource(
            described(
                WATCHED,
                "watched-resource",
                "Watched Resource",
                "A resource that changes when test_trigger_resource_update is called",
                "text/plain",
            ),
            move |_ctx| {
                let v = watched.load(Ordering::Relaxed);
                async move {
                    let text = match v {
                        0 => "Watched resource content".to_owned(),
                        v => format!("Watched resource content (update {v})"),
                    };
                    Ok(text_contents(WATCHED, "text/plain", &text))
                }
            },
        )
        .resource_template(
            ResourceTemplate {
                uri_template: TEMPLATE.into(),
                name: "template".into(),
                title: Some("Resource Template".into()),
                description: Some("A resource template with parameter substitution".into()),
                mime_type: Some("application/json".into()),
                ..Default::default()
            },
            |uri, vars, _ctx| async move {
                let id = vars.get("id").and_then(Value::as_str).unwrap_or_default();
                let body =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(text_contents(&uri, "application/json", &body.to_string()))
            },
        )
        .tool(
            "test_trigger_resource_update",
            "Changes test://watched-resource and notifies its subscribers",
            move |_: NoArguments, _ctx| {
                let (router, version) = (updater.clone(), version.clone());
                async move {
                    let v = version.fetch_add(1, Ordering::Relaxed) + 1;
                    router.resource_updated(WATCHED);
                    Ok(CallToolResult::text(format!("{WATCHED} update {v}")))
                }
            },
        );
}
