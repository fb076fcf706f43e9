//! Per-request options: timeout, progress, cancellation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, Notify};

/// One `notifications/progress` for a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far (increases with each notification).
    pub progress: f64,
    /// Total, if known.
    pub total: Option<f64>,
    /// A human-readable message, if any.
    pub message: Option<String>,
    /// The notification's params as sent.
    pub raw: Value,
}

impl Progress {
    pub(crate) fn from_params(raw: Value) -> Self {
        Progress {
            progress: raw.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
            total: raw.get("total").and_then(Value::as_f64),
            message: raw
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
            raw,
        }
    }
}

/// Cancels a request from elsewhere. Cloneable; cancelling is idempotent.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<(AtomicBool, Notify)>,
}

impl CancelToken {
    /// A new, uncancelled token.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::CancelToken;
    ///
    /// let token = CancelToken::new();
    /// assert!(!token.is_cancelled());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every request using this token.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::{CancelToken, RequestOptions};
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) {
    /// let token = CancelToken::new();
    /// let opts = RequestOptions::new().cancel_token(token.clone());
    /// let call = client.call_tool("long_job", json!({}), opts);
    /// tokio::spawn(async move { token.cancel() }); // from anywhere: a UI, a signal
    /// match call.await {
    ///     Err(conduit_mcp::Error::Cancelled { method }) => println!("{method} cancelled"),
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// ```
    pub fn cancel(&self) {
        self.inner.0.store(true, Ordering::Release);
        self.inner.1.notify_waiters();
    }

    /// Whether [`cancel`](Self::cancel) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::CancelToken;
    ///
    /// let token = CancelToken::new();
    /// let clone = token.clone();
    /// clone.cancel();
    /// assert!(token.is_cancelled()); // clones share the token
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.inner.0.load(Ordering::Acquire)
    }

    /// Resolves once cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::CancelToken;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let token = CancelToken::new();
    /// let waiter = tokio::spawn({
    ///     let token = token.clone();
    ///     async move { token.cancelled().await }
    /// });
    /// token.cancel();
    /// waiter.await.unwrap();
    /// token.cancelled().await; // at once once cancelled
    /// # }
    /// ```
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.1.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Options of one request.
///
/// ```
/// use std::time::Duration;
/// use conduit_mcp::RequestOptions;
/// let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
/// let opts = RequestOptions::new()
///     .timeout(Duration::from_secs(10))
///     .progress(tx)
///     .reset_timeout_on_progress(Duration::from_secs(300));
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    timeout: Option<Duration>,
    progress: Option<mpsc::UnboundedSender<Progress>>,
    reset_timeout_on_progress: bool,
    max_total: Option<Duration>,
    cancel: Option<CancelToken>,
    single_round: bool,
}

impl RequestOptions {
    /// The call's timeout: this one's, else `default` (the client's).
    #[inline]
    pub(crate) fn timeout_or(&self, default: Duration) -> Duration {
        self.timeout.unwrap_or(default)
    }

    /// The cap on the whole call, progress resets included.
    #[inline]
    pub(crate) fn max_total(&self) -> Option<Duration> {
        self.max_total
    }

    /// Whether the call needs the server's progress: to pass it on, or to
    /// reset its timeout.
    #[inline]
    pub(crate) fn wants_progress(&self) -> bool {
        self.progress.is_some() || self.reset_timeout_on_progress
    }

    /// Whether progress resets the timeout.
    #[inline]
    pub(crate) fn resets_timeout_on_progress(&self) -> bool {
        self.reset_timeout_on_progress
    }

    /// Where the caller wants progress, if it does.
    #[inline]
    pub(crate) fn progress_sender(&self) -> Option<&mpsc::UnboundedSender<Progress>> {
        self.progress.as_ref()
    }

    /// The caller's cancellation, if any.
    #[inline]
    pub(crate) fn cancel(&self) -> Option<&CancelToken> {
        self.cancel.as_ref()
    }

    /// Whether an `input_required` result is returned as is.
    #[inline]
    pub(crate) fn is_single_round(&self) -> bool {
        self.single_round
    }

    /// The options of one page of a list: a timeout of `own` (the list's)
    /// within `left` (what is left of the list's time).
    pub(crate) fn for_page(&self, own: Duration, left: Duration) -> Self {
        let mut page = self.clone();
        page.timeout = Some(own.min(left));
        if page.reset_timeout_on_progress {
            page.max_total = Some(page.max_total.map_or(left, |t| t.min(left)));
        }
        page
    }

    /// Defaults: the client's `request_timeout`, no progress.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::RequestOptions;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// // The same as `client.request("ping", None)`.
    /// client.request_with("ping", None, RequestOptions::new()).await?;
    /// # Ok(()) }
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the timeout (otherwise the client's `request_timeout`).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks for progress (`_meta.progressToken`) and sends each
    /// notification to `tx`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::{Progress, RequestOptions};
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    /// tokio::spawn(async move {
    ///     while let Some(p) = rx.recv().await {
    ///         println!("{} of {:?}: {:?}", p.progress, p.total, p.message);
    ///     }
    /// });
    /// let opts = RequestOptions::new().progress(tx);
    /// client.call_tool("index_repository", json!({}), opts).await?;
    /// # Ok(()) }
    /// ```
    pub fn progress(mut self, tx: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(tx);
        self
    }

    /// Restarts the timeout at each progress notification, never beyond
    /// `max_total` from the start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use conduit_mcp::RequestOptions;
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    /// // 30 s without progress fails the call, and so do 10 minutes in all.
    /// let opts = RequestOptions::new()
    ///     .timeout(Duration::from_secs(30))
    ///     .progress(tx)
    ///     .reset_timeout_on_progress(Duration::from_secs(600));
    /// client.call_tool("build", json!({}), opts).await?;
    /// # Ok(()) }
    /// ```
    pub fn reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
        self.reset_timeout_on_progress = true;
        self.max_total = Some(max_total);
        self
    }

    /// Cancels the request when `token` is cancelled.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::{CancelToken, RequestOptions};
    ///
    /// # async fn example(client: conduit_mcp::Client) {
    /// let token = CancelToken::new();
    /// tokio::spawn({
    ///     let token = token.clone();
    ///     async move {
    ///         let _ = tokio::signal::ctrl_c().await;
    ///         token.cancel();
    ///     }
    /// });
    /// let opts = RequestOptions::new().cancel_token(token);
    /// let result = client.request_with("tools/call", None, opts).await;
    /// if let Err(conduit_mcp::Error::Cancelled { .. }) = result {
    ///     println!("stopped by Ctrl-C");
    /// }
    /// # }
    /// ```
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// 2026-07-28 era: returns an `input_required` result as the server sent
    /// it, instead of fulfilling its input requests with the handler and
    /// retrying. For a relay (a gateway) whose own client answers the
    /// input requests and retries with `inputResponses` and the
    /// `requestState` itself.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::RequestOptions;
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let params = json!({ "name": "deploy", "arguments": {} });
    /// let opts = RequestOptions::new().single_round();
    /// let result = client.request_with("tools/call", Some(params), opts).await?;
    /// if result["resultType"] == "input_required" {
    ///     // Pass `result["inputRequests"]` on; retry with `inputResponses`
    ///     // and `result["requestState"]`.
    /// }
    /// # Ok(()) }
    /// ```
    pub fn single_round(mut self) -> Self {
        self.single_round = true;
        self
    }
}
