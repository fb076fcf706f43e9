//! 2026-07-28 `subscriptions/listen` as a stream, and the background tool-list
//! refresh built on it.
//!
//! A listen request stays open for as long as the stream does: its answer
//! is the server ending the stream. So it is sent with no timeout, in a
//! task of its own; dropping the [`Subscription`] cancels it
//! (`notifications/cancelled`), the server's answer ends it with a reason.
//! The stream's notifications are the client's notifications that carry
//! the stream's id in `_meta` (`io.modelcontextprotocol/subscriptionId`).

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::notifications::Notifications;
use super::status::Status;
use super::{Client, RequestOptions};
use crate::error::Error;
use crate::jsonrpc::{Notification, RequestId};
use crate::protocol::{
    meta, methods, Era, ListenParams, ListenResult, ServerNotification, SubscriptionFilter,
};

/// Why a [`Subscription`] ended.
#[derive(Debug, Clone)]
pub enum ListenEnd {
    /// The server ended the stream (its answer to `subscriptions/listen`).
    Closed(ListenResult),
    /// The request failed: the server refused it, or the server or client
    /// went away (an abrupt close carries no answer).
    Failed(Error),
}

/// An open `subscriptions/listen` stream: see [`Client::listen`].
///
/// Holds a handle to the client (the client lives while the stream does).
/// Dropping it cancels the stream.
#[derive(Debug)]
pub struct Subscription {
    id: RequestId,
    notes: Notifications,
    done: Option<oneshot::Receiver<Result<ListenResult, Error>>>,
    end: Option<ListenEnd>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Drops the request future: it sends `notifications/cancelled`.
        self.task.abort();
    }
}

impl Subscription {
    /// The stream's id (the listen request's id).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The stream's next notification (the acknowledgement first, then
    /// what was asked for); `None` once the stream has ended (see
    /// [`end`](Self::end)).
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::{ServerNotification, SubscriptionFilter};
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let filter = SubscriptionFilter::default().resource("file:///srv/log.txt");
    /// let mut stream = client.listen(filter).await?;
    /// while let Some(n) = stream.next().await {
    ///     match n {
    ///         ServerNotification::SubscriptionsAcknowledged(_) => println!("listening"),
    ///         ServerNotification::ResourceUpdated(r) => println!("{} changed", r.uri),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next(&mut self) -> Option<ServerNotification> {
        self.next_raw().await.map(ServerNotification::from_raw)
    }

    /// [`next`](Self::next), as the server sent it (for a relay that passes
    /// the stream on).
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::SubscriptionFilter;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let mut stream = client.listen(SubscriptionFilter::all_list_changes()).await?;
    /// while let Some(n) = stream.next_raw().await {
    ///     println!("{} {}", n.method, n.params.unwrap_or_default());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_raw(&mut self) -> Option<Notification> {
        loop {
            let done = self.done.as_mut()?;
            tokio::select! {
                biased;
                n = self.notes.recv() => match n {
                    Some(n) if self.belongs(&n.params) => return Some(n),
                    Some(_) => {}
                    None => {
                        self.finish(Err(Error::Stopped));
                        return None;
                    }
                },
                r = done => {
                    let r = r.unwrap_or(Err(Error::Stopped));
                    // Notifications sent before the answer are still queued.
                    while let Some(n) = self.notes.try_recv() {
                        if self.belongs(&n.params) {
                            self.finish(r);
                            return Some(n);
                        }
                    }
                    self.finish(r);
                    return None;
                }
            }
        }
    }

    /// Why the stream ended, once [`next`](Self::next) returned `None`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::client::ListenEnd;
    /// use conduit_mcp::protocol::SubscriptionFilter;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let mut stream = client.listen(SubscriptionFilter::all_list_changes()).await?;
    /// while stream.next().await.is_some() {}
    /// match stream.end() {
    ///     Some(ListenEnd::Closed(result)) => println!("the server ended it: {result:?}"),
    ///     Some(ListenEnd::Failed(e)) => println!("failed: {e}"),
    ///     None => unreachable!("`next` returned None"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn end(&self) -> Option<&ListenEnd> {
        self.end.as_ref()
    }

    fn belongs(&self, params: &Option<Value>) -> bool {
        let id = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID));
        match (id, &self.id) {
            (Some(Value::Number(n)), RequestId::Number(mine)) => n.as_i64() == Some(*mine),
            (Some(Value::String(s)), RequestId::String(mine)) => s == mine,
            _ => false,
        }
    }

    fn finish(&mut self, r: Result<ListenResult, Error>) {
        self.done = None;
        // Queued notifications of the stream stay readable: `next` returns
        // them before `None` only if they were queued before the answer.
        if self.end.is_none() {
            self.end = Some(match r {
                Ok(result) => ListenEnd::Closed(result),
                Err(e) => ListenEnd::Failed(e),
            });
        }
    }
}

impl Client {
    /// 2026-07-28 era: opens a `subscriptions/listen` stream for the
    /// notifications in `filter` (list changes, resource updates). The
    /// stream is not cut off by the request timeout: it lasts until it is
    /// dropped, or the server ends it ([`ListenEnd`]). 2025-11-25 servers send
    /// their notifications without asking: read
    /// [`notifications`](Self::notifications) instead
    /// ([`Error::Unsupported`] here).
    ///
    /// Returns once the request is on its way, not once the server has the
    /// stream: the server's acknowledgement
    /// ([`crate::protocol::ServerNotification::SubscriptionsAcknowledged`])
    /// is the stream's first item; what the server sends before it has
    /// the stream is not on it. Wait for it before you cause an update you
    /// need to see.
    ///
    /// ```no_run
    /// # async fn demo(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// use conduit_mcp::protocol::{ServerNotification, SubscriptionFilter};
    /// let mut stream = client.listen(SubscriptionFilter::all_list_changes()).await?;
    /// while let Some(n) = stream.next().await {
    ///     if let ServerNotification::ToolsListChanged(_) = n {
    ///         let tools = client.list_tools().await?;
    ///         println!("{} tools now", tools.len());
    ///     }
    /// }
    /// println!("stream ended: {:?}", stream.end());
    /// # Ok(()) }
    /// ```
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, Error> {
        let method = methods::SUBSCRIPTIONS_LISTEN;
        if let era @ Era::Stateful = self.era_when_ready().await? {
            return Err(Error::Unsupported {
                method: method.into(),
                era,
            });
        }
        let params = ListenParams {
            notifications: filter,
            ..Default::default()
        };
        let params = serde_json::to_value(params).map_err(|e| Error::Codec {
            method: method.into(),
            problem: e.to_string(),
        })?;
        // Subscribed before sending: the acknowledgement cannot be missed.
        let notes = self.notifications();
        let id = self.shared.next_id();
        let (tx, done) = oneshot::channel();
        let client = self.clone();
        let request_id = id.clone();
        let task = tokio::spawn(async move {
            let opts = RequestOptions::new().timeout(std::time::Duration::MAX);
            let params = client.with_log_level(Some(params));
            let r = client
                .round(request_id, method, &params, &opts, Instant::now())
                .await
                .and_then(|(raw, _)| {
                    raw.parse::<ListenResult>().map_err(|e| Error::Codec {
                        method: method.into(),
                        problem: format!("could not decode the result: {e}"),
                    })
                });
            let _ = tx.send(r);
        });
        Ok(Subscription {
            id,
            notes,
            done: Some(done),
            end: None,
            task,
        })
    }
}

/// Keeps the tool list fresh: fetched again when a server becomes ready and
/// whenever it says the list changed (2025-11-25: its notification; 2026-07-28: a
/// `subscriptions/listen` stream opened for it). Runs on a detached handle,
/// so it never keeps the client alive; ends when the client does.
pub(crate) async fn refresh_tools(client: Client) {
    let mut status = client.watch_status();
    // Stateful sessions only: a stateless session's changes come on the stream.
    let mut notes: Option<Notifications> = None;
    loop {
        let session = loop {
            let now = status.borrow_and_update().clone();
            match now {
                Status::Ready(s) => break s,
                s if s.is_final() => return,
                _ => {}
            }
            if status.changed().await.is_err() {
                return;
            }
        };
        let _ = client.refresh_tools().await;
        let mut stream = match session.era {
            Era::Stateless => client
                .listen(SubscriptionFilter {
                    tools_list_changed: Some(true),
                    ..Default::default()
                })
                .await
                .ok(),
            Era::Stateful => None,
        };
        if stream.is_some() {
            notes = None;
        } else if notes.is_none() {
            notes = Some(client.notifications());
        }
        loop {
            let next = async {
                match (stream.as_mut(), notes.as_mut()) {
                    (Some(s), _) => s.next().await,
                    // Only the method is looked at: the others are not
                    // decoded for nothing.
                    (None, Some(n)) => loop {
                        match n.recv().await {
                            Some(raw) if raw.method == methods::TOOLS_LIST_CHANGED => {
                                break Some(ServerNotification::from_raw(raw))
                            }
                            Some(_) => {}
                            None => break None,
                        }
                    },
                    (None, None) => None,
                }
            };
            tokio::select! {
                n = next => match n {
                    Some(ServerNotification::ToolsListChanged(_)) => {
                        let _ = client.refresh_tools().await;
                    }
                    Some(_) => {}
                    // The stream ended (or the client): wait for the next
                    // session, not for the same one.
                    None => {
                        if status.changed().await.is_err() {
                            return;
                        }
                        break;
                    }
                },
                r = status.changed() => {
                    if r.is_err() {
                        return;
                    }
                    break;
                }
            }
        }
    }
}
