//! 2026-07-28 notification streams: `subscriptions/listen`, its
//! acknowledgement, and the result that ends it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Extra, Meta, ResultType};

/// A notification's `params` with the stream `id` in
/// `_meta.io.modelcontextprotocol/subscriptionId`.
pub(crate) fn on_stream(params: Option<Value>, id: &impl Serialize) -> Value {
    let mut params = match params {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    if let Value::Object(m) = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()))
    {
        m.insert(super::meta::SUBSCRIPTION_ID.into(), serde_json::json!(id));
    }
    Value::Object(params)
}

/// The notifications a client opts in to on a `subscriptions/listen`
/// stream (the server sends no other kind on it), or, in the
/// acknowledgement, those the server agreed to send.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs (replaces the
    /// 2025-11-25 `resources/subscribe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SubscriptionFilter {
    /// Every list change (tools, prompts, resources).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::SubscriptionFilter;
    ///
    /// let filter = SubscriptionFilter::all_list_changes();
    /// assert_eq!(filter.tools_list_changed, Some(true));
    /// assert_eq!(filter.resource_subscriptions, None);
    /// ```
    pub fn all_list_changes() -> Self {
        Self {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resources_list_changed: Some(true),
            ..Self::default()
        }
    }

    /// Adds `notifications/resources/updated` for `uri`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::SubscriptionFilter;
    ///
    /// let filter = SubscriptionFilter::all_list_changes()
    ///     .resource("file:///srv/a.log")
    ///     .resource("file:///srv/b.log");
    /// assert_eq!(filter.resource_subscriptions.unwrap().len(), 2);
    /// ```
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.resource_subscriptions
            .get_or_insert_with(Vec::new)
            .push(uri.into());
        self
    }
}

schema_object! {
    /// The parameters of `subscriptions/listen`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    pub struct ListenParams {
        /// What to receive.
        pub notifications: SubscriptionFilter,
    }
}

/// The parameters of `notifications/subscriptions/acknowledged`: the
/// stream is open.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedParams {
    /// What the server agreed to send (a subset of what was asked).
    pub notifications: SubscriptionFilter,
    /// `_meta`: the stream's
    /// [`SUBSCRIPTION_ID`](super::meta::SUBSCRIPTION_ID).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of `subscriptions/listen`: the server ended the stream
/// gracefully (an abrupt close sends none).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenResult {
    /// `"complete"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `_meta`: the stream's
    /// [`SUBSCRIPTION_ID`](super::meta::SUBSCRIPTION_ID).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ListenResult {
    /// The stream it closes.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ListenResult;
    /// use serde_json::json;
    ///
    /// let end: ListenResult = serde_json::from_value(json!({
    ///     "resultType": "complete",
    ///     "_meta": { "io.modelcontextprotocol/subscriptionId": "s-1" },
    /// }))?;
    /// assert_eq!(end.subscription_id(), Some(&json!("s-1")));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn subscription_id(&self) -> Option<&Value> {
        self.meta.as_ref()?.get(super::meta::SUBSCRIPTION_ID)
    }
}
