//! Notifications: their parameters, and one enum per direction that types
//! a raw [`Notification`] (unknown methods, and known ones whose
//! parameters do not match their shape, are kept raw).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::common::{MetaParams, ProgressToken};
use super::elicitation::ElicitationCompleteParams;
use super::logging::LoggingMessageParams;
use super::methods;
use super::resources::ResourceParams;
use super::subscriptions::SubscriptionsAcknowledgedParams;
use super::tasks::TaskState;
use crate::jsonrpc::{Notification, RequestId};

schema_object! {
    /// The parameters of `notifications/cancelled`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CancelledParams {
        /// The request cancelled (absent only for task cancellations).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub request_id: Option<RequestId>,
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

/// The request a `notifications/cancelled` cancels, read without decoding
/// the rest of its params (both halves cancel by it).
pub(crate) fn cancelled_request_id(n: &Notification) -> Option<RequestId> {
    let id = n.params.as_ref()?.get("requestId")?;
    RequestId::deserialize(id).ok()
}

schema_object! {
    /// The parameters of `notifications/progress`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ProgressParams {
        /// The token the request carried in `_meta.progressToken`.
        pub progress_token: ProgressToken,
        /// Progress so far (increases).
        #[serde(serialize_with = "crate::protocol::common::number::serialize")]
        pub progress: f64,
        /// The total, if known.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            serialize_with = "crate::protocol::common::number::option"
        )]
        pub total: Option<f64>,
        /// A message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub message: Option<String>,
    }
}

/// `params` decoded as `T`; `Err` gives the notification back untouched.
fn typed<T: DeserializeOwned>(n: Notification) -> Result<T, Notification> {
    let empty = serde_json::Value::Object(Default::default());
    match T::deserialize(n.params.as_ref().unwrap_or(&empty)) {
        Ok(t) => Ok(t),
        Err(_) => Err(n),
    }
}

/// A notification from the server, typed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/cancelled`.
    Cancelled(CancelledParams),
    /// `notifications/progress` (one no caller waited for).
    Progress(ProgressParams),
    /// `notifications/message`: a log entry.
    Log(LoggingMessageParams),
    /// `notifications/tools/list_changed`.
    ToolsListChanged(MetaParams),
    /// `notifications/prompts/list_changed`.
    PromptsListChanged(MetaParams),
    /// `notifications/resources/list_changed`.
    ResourcesListChanged(MetaParams),
    /// `notifications/resources/updated`.
    ResourceUpdated(ResourceParams),
    /// 2026-07-28: `notifications/subscriptions/acknowledged`.
    SubscriptionsAcknowledged(SubscriptionsAcknowledgedParams),
    /// 2025-11-25: `notifications/elicitation/complete`.
    ElicitationComplete(ElicitationCompleteParams),
    /// 2025-11-25: `notifications/tasks/status`.
    TaskStatus(TaskState),
    /// Any other method, or a known one whose params do not match its
    /// shape, as received.
    Unknown(Notification),
}

impl ServerNotification {
    /// Types a raw notification.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ServerNotification;
    /// use conduit_mcp::Notification;
    /// use serde_json::json;
    ///
    /// let raw = Notification {
    ///     method: "notifications/message".into(),
    ///     params: Some(json!({ "level": "warning", "data": "disk almost full" })),
    /// };
    /// let ServerNotification::Log(entry) = ServerNotification::from_raw(raw) else { unreachable!() };
    /// assert_eq!(entry.data, "disk almost full");
    /// ```
    pub fn from_raw(n: Notification) -> Self {
        use ServerNotification as S;
        let r = match n.method.as_str() {
            methods::CANCELLED => typed(n).map(S::Cancelled),
            methods::PROGRESS => typed(n).map(S::Progress),
            methods::MESSAGE => typed(n).map(S::Log),
            methods::TOOLS_LIST_CHANGED => typed(n).map(S::ToolsListChanged),
            methods::PROMPTS_LIST_CHANGED => typed(n).map(S::PromptsListChanged),
            methods::RESOURCES_LIST_CHANGED => typed(n).map(S::ResourcesListChanged),
            methods::RESOURCES_UPDATED => typed(n).map(S::ResourceUpdated),
            methods::SUBSCRIPTIONS_ACKNOWLEDGED => typed(n).map(S::SubscriptionsAcknowledged),
            methods::ELICITATION_COMPLETE => typed(n).map(S::ElicitationComplete),
            methods::TASKS_STATUS => typed(n).map(S::TaskStatus),
            _ => Err(n),
        };
        r.unwrap_or_else(S::Unknown)
    }
}

impl From<Notification> for ServerNotification {
    fn from(n: Notification) -> Self {
        ServerNotification::from_raw(n)
    }
}

/// A notification from the client, typed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientNotification {
    /// `notifications/cancelled`.
    Cancelled(CancelledParams),
    /// `notifications/progress`.
    Progress(ProgressParams),
    /// 2025-11-25: `notifications/initialized`.
    Initialized(MetaParams),
    /// 2025-11-25: `notifications/roots/list_changed`.
    RootsListChanged(MetaParams),
    /// 2025-11-25: `notifications/tasks/status`.
    TaskStatus(TaskState),
    /// Any other method, or a known one whose params do not match its
    /// shape, as received.
    Unknown(Notification),
}

impl ClientNotification {
    /// Types a raw notification.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ClientNotification;
    /// use conduit_mcp::Notification;
    ///
    /// let raw = Notification { method: "notifications/roots/list_changed".into(), params: None };
    /// assert!(matches!(ClientNotification::from_raw(raw), ClientNotification::RootsListChanged(_)));
    /// let odd = Notification { method: "x/custom".into(), params: None };
    /// assert!(matches!(ClientNotification::from_raw(odd), ClientNotification::Unknown(_)));
    /// ```
    pub fn from_raw(n: Notification) -> Self {
        use ClientNotification as C;
        let r = match n.method.as_str() {
            methods::CANCELLED => typed(n).map(C::Cancelled),
            methods::PROGRESS => typed(n).map(C::Progress),
            methods::INITIALIZED => typed(n).map(C::Initialized),
            methods::ROOTS_LIST_CHANGED => typed(n).map(C::RootsListChanged),
            methods::TASKS_STATUS => typed(n).map(C::TaskStatus),
            _ => Err(n),
        };
        r.unwrap_or_else(C::Unknown)
    }
}

impl From<Notification> for ClientNotification {
    fn from(n: Notification) -> Self {
        ClientNotification::from_raw(n)
    }
}
