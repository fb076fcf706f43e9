//! The MCP protocol, typed: versions, eras, `_meta` keys, method names, and
//! a model for every request, result and notification of the two schemas
//! this library speaks (2025-11-25, the last revision with the
//! `initialize` handshake, and 2026-07-28, the first without).
//!
//! # Why our own types
//!
//! The models are this crate's, not re-exports of another SDK's model or
//! types generated from the JSON Schema:
//!
//! - **Round trip.** Every object keeps the members it does not know
//!   (`extra`), and every closed set (content block kinds, roles, log
//!   levels, ...) keeps the values it does not know (`Unknown(Value)`,
//!   `Other(String)`): a newer peer's additions are never dropped or turned
//!   into decoding errors, and a proxy re-encodes what it received.
//! - **One model for both eras.** A field that exists in one revision only
//!   is optional here; `resultType`, `ttlMs`, `cacheScope`, `inputRequests`
//!   and `requestState` sit next to the 2025-11-25 fields.
//! - **Semver.** These types are part of this crate's API; re-exporting
//!   another SDK's model would make each of its breaking releases one of
//!   ours.
//!
//! # Conventions
//!
//! - Field names are the schema's in `snake_case` (`inputSchema` is
//!   `input_schema`); `_meta` is `meta`. Optional members are `Option`s and
//!   are omitted when `None`, so what was absent stays absent.
//! - Objects with a `type` member (content blocks, references) are enums
//!   with one variant per kind; their structs do not repeat the tag.
//! - Requests' parameters are `*Params`, results `*Result`.

use serde::{Deserialize, Serialize};

#[macro_use]
pub(crate) mod macros;

mod capabilities;
mod common;
mod completion;
mod content;
mod elicitation;
mod lifecycle;
mod logging;
mod multi_round;
mod notifications;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod subscriptions;
mod tasks;
mod tools;

pub(crate) use capabilities::add_missing;
pub use capabilities::*;
pub use common::*;
pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use lifecycle::*;
pub use logging::*;
pub use multi_round::*;
pub(crate) use notifications::cancelled_request_id;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;

/// The newest protocol revision of the 2026-07-28 era ([`Era::Stateless`]: no
/// handshake, `server/discover`, `_meta` on every request).
pub const STATELESS_VERSION: &str = "2026-07-28";
/// The revisions of the 2026-07-28 era this library speaks, newest first.
pub const STATELESS_VERSIONS: &[&str] = &[STATELESS_VERSION];
/// The newest revision with the `initialize` handshake ([`Era::Stateful`]).
pub const LATEST_STATEFUL_VERSION: &str = "2025-11-25";
/// The revisions with the `initialize` handshake this library speaks,
/// newest first.
pub const STATEFUL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The methods whose results may be `input_required` in the 2026-07-28 era:
/// the only ones that may ask the client for input.
pub(crate) const MULTI_ROUND_METHODS: &[&str] = &[
    methods::TOOLS_CALL,
    methods::PROMPTS_GET,
    methods::RESOURCES_READ,
];

/// What a request of `method` is for: `params.name` of `tools/call` and
/// `prompts/get`, `params.uri` of `resources/read`; `None` for other
/// methods, `Some(None)` when the body has no string there. (HTTP mirrors
/// it in `Mcp-Name`; a held call's retry must match it.)
pub(crate) fn request_target<'a>(
    method: &str,
    params: Option<&'a serde_json::Value>,
) -> Option<Option<&'a str>> {
    let key = match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
        methods::RESOURCES_READ => "uri",
        _ => return None,
    };
    Some(
        params
            .and_then(|p| p.get(key))
            .and_then(serde_json::Value::as_str),
    )
}

/// `_meta` keys of the 2026-07-28 era.
pub mod meta {
    /// The protocol version of this request (required).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's name and version (should).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The log level the client wants (optional).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's name and version, in a DiscoverResult's `_meta`.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The `subscriptions/listen` stream a notification (or the stream's
    /// closing result) belongs to: the listen request's id.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// A request's progress token (both eras; not namespaced).
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

/// Method names.
pub mod methods {
    /// 2026-07-28: discovery.
    pub const DISCOVER: &str = "server/discover";
    /// 2025-11-25: handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// 2025-11-25: handshake completion notification.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Liveness check (2025-11-25 era).
    pub const PING: &str = "ping";
    /// Cancellation of an in-flight request.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Progress of a request.
    pub const PROGRESS: &str = "notifications/progress";
    /// Server-to-client: list the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Server-to-client: ask the client's model.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Server-to-client: ask the user.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// List the server's tools.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Call a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// List the server's resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// List the server's resource templates.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Read a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// 2025-11-25: subscribe to a resource's updates.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// 2025-11-25: end a resource subscription.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// List the server's prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Get a prompt.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Complete an argument.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// 2025-11-25: set the server's log level.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// 2026-07-28: open a notification stream.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// 2025-11-25 (experimental): a task's state.
    pub const TASKS_GET: &str = "tasks/get";
    /// 2025-11-25 (experimental): a task's result.
    pub const TASKS_RESULT: &str = "tasks/result";
    /// 2025-11-25 (experimental): list tasks.
    pub const TASKS_LIST: &str = "tasks/list";
    /// 2025-11-25 (experimental): cancel a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// A log message from the server.
    pub const MESSAGE: &str = "notifications/message";
    /// The server's resource list changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// A subscribed resource changed.
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// The server's prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// The server's tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// 2025-11-25: the client's roots changed.
    pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// 2026-07-28: a `subscriptions/listen` stream is open.
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
    /// 2025-11-25: a URL-mode elicitation completed.
    pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
    /// 2025-11-25 (experimental): a task's status changed.
    pub const TASKS_STATUS: &str = "notifications/tasks/status";
}

/// A protocol era: how a client and a server agree on what they speak.
///
/// The documentation names each era by its revision: 2025-11-25 (with the
/// older revisions of its kind) and 2026-07-28 (with the later ones). The
/// variants are named by the property that tells the two apart. Serialised
/// (and printed by the `mcp` command and the gateway's `/health`) as
/// `"legacy"` and `"modern"`, as they always were; the revision dates,
/// `"stateful"` and `"stateless"` are read too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Era {
    /// 2025-11-25 and older, back to 2024-11-05 ([`STATEFUL_VERSIONS`]): an
    /// `initialize` handshake opens a session that holds what the client
    /// declared.
    #[doc(alias = "2025-11-25", alias = "legacy")]
    #[serde(rename = "legacy", alias = "stateful", alias = "2025-11-25")]
    Stateful,
    /// 2026-07-28 and later ([`STATELESS_VERSIONS`]): no handshake; every
    /// request carries what the client declares in `_meta`, and
    /// `server/discover` describes the server.
    #[doc(alias = "2026-07-28", alias = "modern")]
    #[serde(rename = "modern", alias = "stateless", alias = "2026-07-28")]
    Stateless,
}

impl Era {
    /// The era a protocol version belongs to, if this library knows it.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::Era;
    ///
    /// assert_eq!(Era::of_version("2025-06-18"), Some(Era::Stateful));
    /// assert_eq!(Era::of_version("2026-07-28"), Some(Era::Stateless));
    /// assert_eq!(Era::of_version("1999-01-01"), None);
    /// ```
    pub fn of_version(version: &str) -> Option<Era> {
        if STATELESS_VERSIONS.contains(&version) {
            Some(Era::Stateless)
        } else if STATEFUL_VERSIONS.contains(&version) {
            Some(Era::Stateful)
        } else {
            None
        }
    }

    /// `"legacy"` or `"modern"`: its serialised name.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::Era;
    ///
    /// assert_eq!(Era::Stateful.as_str(), "legacy");
    /// assert_eq!(serde_json::to_value(Era::Stateless)?, Era::Stateless.as_str());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Stateful => "legacy",
            Era::Stateless => "modern",
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
