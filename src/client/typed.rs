//! Typed helpers for every client-to-server method of both eras. Each is a
//! thin layer over [`Client::request_as`]: the raw request stays available
//! for anything these do not cover.
//!
//! Era differences are handled here, not by the caller: [`Client::ping`]
//! sends `ping` (2025-11-25) or `server/discover` (2026-07-28, which has no
//! `ping`); [`Client::set_log_level`] sends `logging/setLevel` (2025-11-25) or
//! puts the level in every later request's `_meta` (2026-07-28). Methods that
//! exist in one era only fail locally with [`Error::Unsupported`] in the
//! other.

use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tracing::warn;

use super::pagination::Pager;
use super::status::ServerSession;
use super::{Client, RequestOptions};
use crate::error::Error;
use crate::jsonrpc::RawJson;
use crate::protocol::{
    meta, methods, CallToolParams, CallToolResult, CompleteParams, CompleteResult, Cursor, Era,
    GetPromptParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, Prompt, ReadResourceParams,
    ReadResourceResult, Resource, ResourceParams, ResourceTemplate, SetLevelParams, Tool,
};

/// State the typed layer keeps per client, shared by its handles.
#[derive(Debug, Default)]
pub(crate) struct TypedState {
    /// The log level for 2026-07-28 requests' `_meta` (from the config, then
    /// [`Client::set_log_level`]).
    log_level: Mutex<Option<LoggingLevel>>,
    /// The tool list and the session it was fetched from.
    tools: Mutex<Option<KeptTools>>,
}

/// A tool list and the server process (session) it came from.
type KeptTools = (Arc<ServerSession>, Arc<Vec<Tool>>);

impl TypedState {
    pub(crate) fn new(log_level: Option<LoggingLevel>) -> Self {
        Self {
            log_level: Mutex::new(log_level),
            tools: Mutex::new(None),
        }
    }

    fn level(&self) -> Option<LoggingLevel> {
        crate::sync::lock(&self.log_level).clone()
    }
}

/// Decodes one page of a list result, naming the method on failure.
fn decode_page<P: DeserializeOwned>(method: &str, raw: &RawJson) -> Result<P, Error> {
    raw.parse().map_err(|e| Error::Codec {
        method: method.to_owned(),
        problem: format!("could not decode the result: {e}"),
    })
}

/// A list result: its items and the next page's cursor.
trait Page: DeserializeOwned {
    type Item;
    fn split(self) -> (Vec<Self::Item>, Option<Cursor>);
}

macro_rules! page {
    ($($t:ty => $item:ty, $field:ident;)+) => {$(
        impl Page for $t {
            type Item = $item;
            fn split(self) -> (Vec<$item>, Option<Cursor>) {
                (self.$field, self.next_cursor)
            }
        }
    )+};
}

page! {
    ListToolsResult => Tool, tools;
    ListResourcesResult => Resource, resources;
    ListResourceTemplatesResult => ResourceTemplate, resource_templates;
    ListPromptsResult => Prompt, prompts;
}

/// `value` as a JSON object (tool and prompt arguments), or the local error
/// that says why it is not one.
fn object_of(method: &str, what: &str, value: impl Serialize) -> Result<Map<String, Value>, Error> {
    let kind = match serde_json::to_value(value) {
        Ok(Value::Object(m)) => return Ok(m),
        Ok(Value::Null) => "null",
        Ok(Value::Bool(_)) => "a boolean",
        Ok(Value::Number(_)) => "a number",
        Ok(Value::String(_)) => "a string",
        Ok(Value::Array(_)) => "an array",
        Err(e) => {
            return Err(Error::Codec {
                method: method.into(),
                problem: format!("{what} could not be serialised: {e}"),
            })
        }
    };
    Err(Error::Codec {
        method: method.into(),
        problem: format!("{what} must be a JSON object, not {kind}"),
    })
}

fn params_of(method: &str, params: impl Serialize) -> Result<Option<Value>, Error> {
    serde_json::to_value(params)
        .map(Some)
        .map_err(|e| Error::Codec {
            method: method.into(),
            problem: e.to_string(),
        })
}

impl Client {
    /// Checks that the server answers, in either era: `ping` with a 2025-11-25
    /// server, `server/discover` with a 2026-07-28 one (the 2026-07-28 revision
    /// has no `ping`; every 2026-07-28 server answers `server/discover`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let start = std::time::Instant::now();
    /// client.ping().await?;
    /// println!("answered in {:?}", start.elapsed());
    /// # Ok(()) }
    /// ```
    pub async fn ping(&self) -> Result<(), Error> {
        let method = match self.era_when_ready().await? {
            Era::Stateful => methods::PING,
            Era::Stateless => methods::DISCOVER,
        };
        self.request(method, None).await.map(drop)
    }

    /// Lists every tool, following `nextCursor` through all pages, within
    /// the list caps ([`max_list_pages`](crate::client::ClientConfig::max_list_pages),
    /// [`max_list_items`](crate::client::ClientConfig::max_list_items),
    /// [`max_list_bytes`](crate::client::ClientConfig::max_list_bytes)) and its
    /// [`list_timeout`](crate::client::ClientConfig::list_timeout): past one, on a
    /// cursor the server repeats, or out of time, it fails with
    /// [`Error::ListTooLong`], [`Error::RepeatedCursor`] or
    /// [`Error::ListTimeout`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// for tool in client.list_tools().await? {
    ///     println!("{}: {}", tool.display_name(), tool.description.as_deref().unwrap_or(""));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.all_pages::<ListToolsResult>(methods::TOOLS_LIST).await
    }

    /// The tool list, fetched once per server process and kept: later
    /// calls return the kept list. A restarted server's list is fetched
    /// again. With
    /// [`refresh_tools_on_list_changed`](crate::client::ClientConfig::refresh_tools_on_list_changed),
    /// the list is fetched again whenever the server says it changed;
    /// [`refresh_tools`](Self::refresh_tools) does it on demand.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let tools = client.tools().await?; // fetched once, then kept
    /// for tool in tools.iter() {
    ///     println!("{}", tool.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn tools(&self) -> Result<Arc<Vec<Tool>>, Error> {
        let session = self
            .ready(self.shared.config().get_request_timeout())
            .await?;
        let cached = crate::sync::lock(&self.typed.tools).clone();
        match cached {
            Some((s, tools)) if Arc::ptr_eq(&s, &session) => Ok(tools),
            _ => self.refresh_tools().await,
        }
    }

    /// Fetches the tool list again and keeps it (see [`tools`](Self::tools)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// // Fetched now, whatever is kept; `tools()` returns this list from now on.
    /// let tools = client.refresh_tools().await?;
    /// println!("{} tools", tools.len());
    /// # Ok(()) }
    /// ```
    pub async fn refresh_tools(&self) -> Result<Arc<Vec<Tool>>, Error> {
        let session = self
            .ready(self.shared.config().get_request_timeout())
            .await?;
        let tools = Arc::new(self.list_tools().await?);
        *crate::sync::lock(&self.typed.tools) = Some((session, tools.clone()));
        Ok(tools)
    }

    /// Calls a tool. `arguments` is a JSON object: a `serde_json::Map`, a
    /// `json!({...})`, or any `Serialize` type that serialises to an object
    /// (a struct, a map); anything else fails here with [`Error::Codec`]
    /// and nothing is sent.
    ///
    /// A tool that fails reports it in an `Ok` result
    /// ([`CallToolResult::is_error`]); `Err` is a protocol or transport
    /// failure. 2026-07-28 `input_required` rounds are fulfilled by the
    /// client's handler (see [`request_raw`](Self::request_raw)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::RequestOptions;
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let args = json!({ "timezone": "Europe/Paris" });
    /// let result = client.call_tool("get_current_time", args, RequestOptions::new()).await?;
    /// if result.is_error() {
    ///     eprintln!("the tool failed: {}", result.joined_text());
    /// } else {
    ///     println!("{}", result.joined_text());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
        opts: RequestOptions,
    ) -> Result<CallToolResult, Error> {
        let params = CallToolParams {
            name: name.to_owned(),
            arguments: Some(object_of(methods::TOOLS_CALL, "tool arguments", arguments)?),
            ..Default::default()
        };
        let params = params_of(methods::TOOLS_CALL, params)?;
        self.request_as(methods::TOOLS_CALL, params, opts).await
    }

    /// Lists every resource (all pages, within the list caps: see
    /// [`list_tools`](Self::list_tools)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// for resource in client.list_resources().await? {
    ///     println!("{} ({})", resource.uri, resource.mime_type.as_deref().unwrap_or("?"));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.all_pages::<ListResourcesResult>(methods::RESOURCES_LIST)
            .await
    }

    /// Lists every resource template (all pages, within the list caps).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// for template in client.list_resource_templates().await? {
    ///     println!("{}: {}", template.name, template.uri_template);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.all_pages::<ListResourceTemplatesResult>(methods::RESOURCES_TEMPLATES_LIST)
            .await
    }

    /// Reads a resource.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let read = client.read_resource("file:///srv/project/README.md").await?;
    /// for contents in &read.contents {
    ///     println!("{}", contents.as_text().unwrap_or("(binary)"));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let params = ReadResourceParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        let params = params_of(methods::RESOURCES_READ, params)?;
        self.request_as(methods::RESOURCES_READ, params, RequestOptions::new())
            .await
    }

    /// 2025-11-25 era: subscribes to `notifications/resources/updated` for
    /// `uri`. 2026-07-28 servers have no such method ([`Error::Unsupported`]):
    /// use [`listen`](Self::listen) with
    /// [`SubscriptionFilter::resource`](crate::protocol::SubscriptionFilter::resource).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::ServerNotification;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let mut notes = client.notifications();
    /// client.subscribe_resource("file:///srv/project/log.txt").await?;
    /// while let Some(n) = notes.recv_typed().await {
    ///     if let ServerNotification::ResourceUpdated(r) = n {
    ///         println!("{} changed", r.uri);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.stateful_only(methods::RESOURCES_SUBSCRIBE, ResourceParams::new(uri))
            .await
    }

    /// 2025-11-25 era: ends a [`subscribe_resource`](Self::subscribe_resource).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let uri = "file:///srv/project/log.txt";
    /// client.subscribe_resource(uri).await?;
    /// // ... later: no more `notifications/resources/updated` for it.
    /// client.unsubscribe_resource(uri).await?;
    /// # Ok(()) }
    /// ```
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.stateful_only(methods::RESOURCES_UNSUBSCRIBE, ResourceParams::new(uri))
            .await
    }

    /// Lists every prompt (all pages, within the list caps).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// for prompt in client.list_prompts().await? {
    ///     let args = prompt.arguments.unwrap_or_default();
    ///     println!("{} takes {} arguments", prompt.name, args.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.all_pages::<ListPromptsResult>(methods::PROMPTS_LIST)
            .await
    }

    /// Gets a prompt. `arguments` is a JSON object of string values (see
    /// [`call_tool`](Self::call_tool) for what is accepted).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let prompt = client.get_prompt("code_review", json!({ "language": "rust" })).await?;
    /// for message in &prompt.messages {
    ///     println!("{:?}: {:?}", message.role, message.content.as_text());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, Error> {
        let params = GetPromptParams {
            name: name.to_owned(),
            arguments: Some(object_of(
                methods::PROMPTS_GET,
                "prompt arguments",
                arguments,
            )?),
            ..Default::default()
        };
        let params = params_of(methods::PROMPTS_GET, params)?;
        self.request_as(methods::PROMPTS_GET, params, RequestOptions::new())
            .await
    }

    /// Asks for completions of a prompt's or resource template's argument.
    ///
    /// ```no_run
    /// # async fn demo(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// use conduit_mcp::protocol::{CompleteParams, Reference};
    /// let r = client
    ///     .complete(CompleteParams::new(Reference::prompt("code_review"), "language", "py"))
    ///     .await?;
    /// println!("{:?}", r.completion.values);
    /// # Ok(()) }
    /// ```
    pub async fn complete(&self, params: CompleteParams) -> Result<CompleteResult, Error> {
        let params = params_of(methods::COMPLETION_COMPLETE, params)?;
        self.request_as(methods::COMPLETION_COMPLETE, params, RequestOptions::new())
            .await
    }

    /// Sets the least severe log level the server should send, in either
    /// era: `logging/setLevel` with a 2025-11-25 server; with a 2026-07-28 one the
    /// level goes in the `_meta` of every later request
    /// (`io.modelcontextprotocol/logLevel`, as
    /// [`ClientConfig::log_level`](crate::client::ClientConfig::log_level) does from
    /// the start), and nothing is sent now.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::LoggingLevel;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// // Warnings and worse only, whichever era the server speaks.
    /// client.set_log_level(LoggingLevel::Warning).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), Error> {
        match self.era_when_ready().await? {
            Era::Stateful => {
                let params = SetLevelParams {
                    level,
                    meta: None,
                    extra: Map::new(),
                };
                let params = params_of(methods::LOGGING_SET_LEVEL, params)?;
                self.request(methods::LOGGING_SET_LEVEL, params)
                    .await
                    .map(drop)
            }
            Era::Stateless => {
                *crate::sync::lock(&self.typed.log_level) = Some(level);
                Ok(())
            }
        }
    }

    /// Follows `nextCursor` and concatenates the `key` arrays of every
    /// page, as sent (the raw form of the typed `list_*` helpers), within
    /// the list caps (see [`list_tools`](Self::list_tools)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let tools = client.list_all("tools/list", "tools").await?;
    /// let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    /// println!("{names:?}");
    /// # Ok(()) }
    /// ```
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, Error> {
        self.list_all_with(method, key, RequestOptions::new()).await
    }

    /// [`list_all`](Self::list_all) with options (timeout, progress,
    /// cancellation) for each page's request.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use conduit_mcp::RequestOptions;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let opts = RequestOptions::new().timeout(Duration::from_secs(10)); // per page
    /// let templates = client
    ///     .list_all_with("resources/templates/list", "resourceTemplates", opts)
    ///     .await?;
    /// println!("{} templates", templates.len());
    /// # Ok(()) }
    /// ```
    pub async fn list_all_with(
        &self,
        method: &str,
        key: &str,
        opts: RequestOptions,
    ) -> Result<Vec<Value>, Error> {
        self.paginate(method, &opts, |raw: RawJson| {
            let mut page: Value = decode_page(method, &raw)?;
            let items = match page.get_mut(key).map(Value::take) {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            };
            let next = match page.get_mut("nextCursor").map(Value::take) {
                Some(Value::String(c)) => Some(c),
                _ => None,
            };
            Ok((items, next))
        })
        .await
    }

    /// Every page of a typed list.
    async fn all_pages<P: Page>(&self, method: &str) -> Result<Vec<P::Item>, Error> {
        self.paginate(method, &RequestOptions::new(), |raw: RawJson| {
            decode_page::<P>(method, &raw).map(P::split)
        })
        .await
    }

    /// Requests `method` page after page, splitting each with `split`,
    /// within the list caps. Each page is measured from its bytes (what it
    /// would hold parsed, see [`Pager`]) and decoded straight into its
    /// items: no JSON tree per page in between.
    async fn paginate<T>(
        &self,
        method: &str,
        opts: &RequestOptions,
        split: impl Fn(RawJson) -> Result<(Vec<T>, Option<Cursor>), Error>,
    ) -> Result<Vec<T>, Error> {
        let mut pager = Pager::new(method, self.shared.config());
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let own = opts.timeout_or(self.shared.config().get_request_timeout());
        loop {
            let params = cursor.take().map(|c| json!({ "cursor": c }));
            // The page gets at most what is left of the list's time.
            let left = pager.time_left()?;
            let page_opts = opts.for_page(own, left);
            let raw = self
                .request_raw(method, params, page_opts)
                .await
                .map_err(|e| pager.page_failed(e))
                .inspect_err(|e| {
                    if matches!(e, Error::ListTimeout { .. }) {
                        warn!(server = %self.shared.name(), error = %e, "paginated list stopped");
                    }
                })?;
            let held = crate::memory_estimate::estimate(raw.as_bytes()).bytes();
            let (mut items, next) = split(raw)?;
            let next = pager
                .page(items.len(), held)
                .and_then(|()| pager.next(next))
                .inspect_err(|e| {
                    warn!(server = %self.shared.name(), error = %e, "paginated list stopped");
                })?;
            out.append(&mut items);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// A request of the 2025-11-25 era only, with an empty result.
    async fn stateful_only(&self, method: &str, params: impl Serialize) -> Result<(), Error> {
        if let era @ Era::Stateless = self.era_when_ready().await? {
            return Err(Error::Unsupported {
                method: method.into(),
                era,
            });
        }
        let params = params_of(method, params)?;
        self.request(method, params).await.map(drop)
    }

    /// The era, once a server is ready (within the request timeout).
    pub(crate) async fn era_when_ready(&self) -> Result<Era, Error> {
        Ok(self
            .ready(self.shared.config().get_request_timeout())
            .await?
            .era)
    }

    /// `params` with the 2026-07-28 log level in its `_meta`, when one is set
    /// and the server is not known to speak 2025-11-25 (the key is harmless to a
    /// server that does not know it). A `_meta` level the caller set wins.
    pub(crate) fn with_log_level(&self, params: Option<Value>) -> Option<Value> {
        if self.shared.era() == Some(Era::Stateful) {
            return params;
        }
        let Some(level) = self.typed.level() else {
            return params;
        };
        let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
        if let Some(obj) = params.as_object_mut() {
            if let Value::Object(m) = obj
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()))
            {
                m.entry(meta::LOG_LEVEL)
                    .or_insert_with(|| Value::String(level.as_str().to_owned()));
            }
        }
        Some(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert!(object_of("tools/call", "tool arguments", json!({"a": 1})).is_ok());
        #[derive(Serialize)]
        struct Args {
            city: &'static str,
        }
        let m = object_of("tools/call", "tool arguments", Args { city: "Paris" }).unwrap();
        assert_eq!(m["city"], "Paris");
        for (bad, kind) in [
            (json!(null), "null"),
            (json!(3), "a number"),
            (json!("x"), "a string"),
            (json!([1]), "an array"),
            (json!(true), "a boolean"),
        ] {
            let e = object_of("tools/call", "tool arguments", bad).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("tool arguments must be a JSON object, not {kind}")),
                "{e}"
            );
        }
    }
}
