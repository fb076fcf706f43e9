//! The session loop: one reader, concurrent request tasks, one writer.
//!
//! ```text
//!  reader task ──Inbound──▶ session loop ──lines──▶ writer task ──▶ output
//!  (framing, parse)          │   ▲                    ▲
//!                    spawn   ▼   │ completion         │ notifications,
//!                     request tasks (JoinSet)         │ s→c requests
//!                                              ServerHandle / contexts
//! ```
//!
//! The loop never awaits a handler or a write: it only routes. Requests go
//! to the [engine](crate::server::engine), which runs them in the session's scope
//! (beyond `max_in_flight` they wait there); when the outbound queue
//! is over its byte limit, the loop stops taking inbound messages, so the
//! reader task stops reading (back-pressure reaches the client's writes).
//!
//! Memory is bounded in bytes: the reader charges each line's estimated
//! parsed size to the inbound budget before parsing it. The [`Charge`]
//! travels with the message (waiting request, request task, notification queue)
//! and is released when the message is done with; see
//! [`budget`](crate::server::engine::budget). A request line the budget cannot afford is
//! held (one at most) by a task that waits for room, while the reader reads
//! on as long as what follows are control messages (cancellations,
//! responses, pings): they do not wait behind the work they cancel or
//! unblock. The first other line waits until the held one is in.

use std::borrow::Cow;
use std::sync::Arc;

use tokio::io::AsyncRead;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::deadline::After;
use crate::sync::AbortOnDrop;

use crate::framing::LineFramer;
use crate::jsonrpc::{
    codes, encode, ErrorObject, Message, Notification, ParseError, Request, RequestId,
};
use crate::line_io::reader::{read_lines, Flow, LineHandler, ReadEnd};
use crate::line_io::BurstHint;
use crate::protocol::methods;

use crate::server::engine::budget::{Charge, InboundBudget};
use crate::server::engine::dispatch::{route, Route};
use crate::server::engine::{duplicate_error, Duplicate, Engine, Reply, Scope};
use crate::server::error::{HandlerError, ServerError};
use crate::server::handle::{ServerHandle, SessionShared};

use super::output::Sink;
use crate::line_io::{self, QueueReceiver, WriteQueue};
use crate::memory_estimate::{self, Estimate};
use crate::server::request_handler::Handler;
use crate::server::ServeEnd;

/// Parsed input, from the reader task to the loop.
enum Inbound {
    /// A message and the bytes charged for it.
    Message(Message, Charge),
    /// A ready-made error reply to a malformed or oversize line.
    Reply(Vec<u8>),
    Eof,
    Failed(std::io::Error),
}

/// Parsed messages the reader may run ahead of the loop.
const INBOUND_CAPACITY: usize = 16;
/// Notifications queued for the notification handler.
const NOTIFICATION_CAPACITY: usize = 64;

/// A stdio request's answer goes to the session's output queue, as do
/// its notifications.
struct StdioReply(WriteQueue);

impl Reply for StdioReply {
    fn answer(&self, line: Vec<u8>) {
        let _ = self.0.push(line);
    }
}

struct Session<H> {
    shared: Arc<SessionShared>,
    /// The session's output queue.
    out: WriteQueue,
    engine: Arc<Engine<H>>,
    scope: Arc<Scope<StdioReply>>,
    notifications: mpsc::Sender<(Notification, Charge)>,
    /// A notification waiting for room in the handler's queue; reading is
    /// paused meanwhile.
    stalled: Option<(Notification, Charge)>,
}

pub(crate) async fn run<H: Handler>(
    shared: Arc<SessionShared>,
    handler: Arc<H>,
    input: Box<dyn AsyncRead + Send + Unpin>,
    sink: Sink,
    (queue, out): (WriteQueue, QueueReceiver),
) -> Result<ServeEnd, ServerError> {
    let (n_tx, n_rx) = mpsc::channel(NOTIFICATION_CAPACITY);
    let mut tasks = Tasks::spawn(&shared, &handler, input, sink, out, n_rx);
    let mut s = Session {
        shared: shared.clone(),
        out: queue,
        engine: Engine::new(handler),
        scope: Scope::new(shared.clone(), true),
        notifications: n_tx,
        stalled: None,
    };
    shared.mark_ready();
    tracing::info!(
        max_in_flight = shared.config().get_max_in_flight(),
        max_inbound_bytes = shared.config().get_max_inbound_bytes(),
        "server ready: reading input"
    );
    let end = s.serve(&mut tasks).await;
    s.finish(tasks, &end).await;
    end
}

/// The session's helper tasks: the writer, the reader, and the task that
/// hands notifications to the handler.
struct Tasks {
    writer: AbortOnDrop<std::io::Result<()>>,
    writer_done: bool,
    reader: AbortOnDrop<()>,
    inbound: mpsc::Receiver<Inbound>,
    notifier: AbortOnDrop<()>,
    notifier_failed: oneshot::Receiver<ServerError>,
    notifier_done: bool,
}

impl Tasks {
    fn spawn<H: Handler>(
        shared: &Arc<SessionShared>,
        handler: &Arc<H>,
        input: Box<dyn AsyncRead + Send + Unpin>,
        sink: Sink,
        out: QueueReceiver,
        notifications: mpsc::Receiver<(Notification, Charge)>,
    ) -> Tasks {
        let burst = out.burst_hint();
        let writer = AbortOnDrop(tokio::spawn(async move {
            // Only a close marker (or every handle gone) ends it: never
            // stopped.
            line_io::writer::run(out, sink, std::future::pending())
                .await
                .map_err(|f| match f {
                    line_io::writer::WriteFailure::Io(e) => e,
                    line_io::writer::WriteFailure::Stalled { .. } => {
                        std::io::Error::other("the output stalled")
                    }
                })
        }));
        let (in_tx, inbound) = mpsc::channel(INBOUND_CAPACITY);
        let reader = AbortOnDrop(tokio::spawn(read_loop(
            input,
            shared.config().get_max_message_bytes(),
            shared.inbound().clone(),
            in_tx,
            burst,
        )));
        let (failed_tx, notifier_failed) = oneshot::channel();
        let notifier = AbortOnDrop(tokio::spawn(notification_loop(
            handler.clone(),
            ServerHandle::new(shared),
            notifications,
            failed_tx,
        )));
        Tasks {
            writer,
            writer_done: false,
            reader,
            inbound,
            notifier,
            notifier_failed,
            notifier_done: false,
        }
    }
}

/// Resolves once stop was requested. (A helper so that the watch guard,
/// which is not `Send`, never lives in the `select!` output.)
async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

impl<H: Handler> Session<H> {
    /// Reads, dispatches and completes requests until a stop, the end of
    /// input (and of the drain period), or a failure.
    async fn serve(&mut self, t: &mut Tasks) -> Result<ServeEnd, ServerError> {
        let shared = self.shared.clone();
        let mut stop = shared.watch_stop();
        // One wait for the whole loop: a fresh one per message would
        // register and unregister a waiter under a lock every time.
        let stop_requested = stopped(&mut stop);
        tokio::pin!(stop_requested);
        // A second sender, so a pending `reserve` does not borrow the
        // session.
        let notify_tx = self.notifications.clone();
        let mut eof_deadline: Option<Instant> = None;
        loop {
            if eof_deadline.is_some() && self.scope.is_empty() {
                return Ok(ServeEnd::Eof);
            }
            let out_full = self.out.is_full();
            // What waits is bounded by the byte budget (the reader's), not
            // here: stopping at a count kept the cancellations behind it out.
            let can_read = eof_deadline.is_none() && !out_full && self.stalled.is_none();
            let emptied = self.scope.emptied();
            tokio::select! {
                biased;
                _ = &mut stop_requested => return Ok(ServeEnd::Stopped),
                r = &mut t.writer.0, if !t.writer_done => {
                    t.writer_done = true;
                    match r {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return Err(ServerError::Write(e)),
                        Err(e) => return Err(ServerError::Write(std::io::Error::other(e.to_string()))),
                    }
                }
                r = &mut t.notifier_failed, if !t.notifier_done => {
                    t.notifier_done = true;
                    if let Ok(e) = r {
                        return Err(e);
                    }
                }
                () = emptied, if eof_deadline.is_some() => {}
                item = t.inbound.recv(), if can_read => match item {
                    Some(Inbound::Message(m, charge)) => self.on_message(m, charge),
                    Some(Inbound::Reply(line)) => {
                        let _ = self.out.push(line);
                    }
                    Some(Inbound::Failed(e)) => return Err(ServerError::Read(e)),
                    Some(Inbound::Eof) | None => {
                        shared.mark_input_closed();
                        let (in_flight, queued) = self.scope.counts();
                        tracing::info!(
                            in_flight,
                            queued,
                            "end of input: finishing in-flight requests"
                        );
                        eof_deadline = Some(Instant::now().after(shared.config().get_eof_drain()));
                    }
                },
                _ = self.out.drained(), if out_full => {}
                permit = notify_tx.reserve(), if self.stalled.is_some() => {
                    if let (Ok(permit), Some(n)) = (permit, self.stalled.take()) {
                        permit.send(n);
                    }
                }
                _ = sleep_until(eof_deadline) => {
                    tracing::warn!(
                        in_flight = self.scope.counts().0,
                        "end of input: drain period over, aborting remaining requests"
                    );
                    return Ok(ServeEnd::Eof);
                }
            }
        }
    }

    /// Ends serving: stops reading, lets handlers finish after a stop (for
    /// `stop_drain`), aborts the rest, makes handles inert, and flushes the
    /// output (for at most `flush_timeout`).
    async fn finish(self, mut t: Tasks, end: &Result<ServeEnd, ServerError>) {
        t.reader.0.abort();
        drop(t.inbound);
        let aborted = if matches!(end, Ok(ServeEnd::Stopped)) {
            self.engine
                .stop(self.shared.config().get_stop_drain(), [&self.scope])
                .await
        } else {
            // Waiting requests are dropped, their bytes released.
            self.scope.take_queue().len() + self.engine.abort_all()
        };
        t.notifier.0.abort();
        match end {
            Ok(reason) => tracing::info!(?reason, aborted, "server stopping"),
            Err(e) => tracing::warn!(error = %e, aborted, "server stopping on error"),
        }
        // Handles and contexts become inert before the final flush, so
        // nothing is queued behind the close marker.
        let shared = &self.shared;
        shared.close();
        if !t.writer_done {
            self.out.close();
            match tokio::time::timeout(shared.config().get_flush_timeout(), &mut t.writer.0).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => tracing::warn!(error = %e, "final flush of output failed"),
                Ok(Err(_)) => {}
                Err(_) => {
                    tracing::warn!(
                        "final flush timed out: the client is not reading; output abandoned"
                    );
                    t.writer.0.abort();
                }
            }
        }
        tracing::info!("server stopped");
    }

    /// Routes one message; `charge` goes with it wherever it is kept, and
    /// is released here otherwise.
    fn on_message(&mut self, m: Message, charge: Charge) {
        match m {
            Message::Request(req) => self.on_request(req, charge),
            Message::Notification(n) => self.on_notification(n, charge),
            Message::Response(r) => self.shared.route_response(r),
        }
    }

    fn on_request(&mut self, req: Request, charge: Charge) {
        match route(&self.shared, &req) {
            Route::Answer(a) => {
                let id = Some(req.id);
                let line = match a {
                    Ok(v) => encode::result(&id, &v)
                        .unwrap_or_else(|e| encode::error(&id, &internal(e.to_string()))),
                    Err(e) => encode::error(&id, &e),
                };
                let _ = self.out.push(line);
            }
            Route::Dispatch(d) => {
                let id = req.id.clone();
                let reply = StdioReply(self.out.clone());
                if let Err(Duplicate(_)) = self.engine.submit(&self.scope, req, d, charge, reply) {
                    tracing::debug!(%id, "duplicate in-flight request id refused");
                    let e = duplicate_error(&id);
                    let _ = self.out.push(encode::error(&Some(id), &e));
                }
            }
        }
    }

    fn on_notification(&mut self, n: Notification, charge: Charge) {
        match n.method.as_str() {
            methods::CANCELLED => {
                match crate::protocol::cancelled_request_id(&n) {
                    Some(id) => self.cancel(&id),
                    None => tracing::debug!("notifications/cancelled without a valid requestId"),
                }
                return;
            }
            methods::INITIALIZED => {
                self.shared.session().mark_initialized();
                tracing::info!("client sent notifications/initialized");
            }
            _ => {}
        }
        // Never wait here (stop must stay responsive): when the handler is
        // NOTIFICATION_CAPACITY behind, park the notification and stop reading.
        if let Err(mpsc::error::TrySendError::Full(n)) = self.notifications.try_send((n, charge)) {
            self.stalled = Some(n);
        }
    }

    fn cancel(&mut self, id: &RequestId) {
        if self.engine.cancel_id(&self.scope, id) {
            tracing::debug!(%id, "request cancelled by the client");
        } else {
            tracing::debug!(%id, "cancellation of an unknown or finished request ignored");
        }
    }
}

fn internal(message: String) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, message)
}

/// The reader task: frames and parses input; never answers by itself.
async fn read_loop(
    mut input: Box<dyn AsyncRead + Send + Unpin>,
    max: usize,
    budget: Arc<InboundBudget>,
    tx: mpsc::Sender<Inbound>,
    burst: BurstHint,
) {
    let mut framer = LineFramer::new(max);
    let mut lines = InboundLines {
        max,
        budget,
        tx,
        burst,
        held: None,
    };
    let end = read_lines(&mut input, &mut framer, &mut lines).await;
    match end {
        ReadEnd::Eof => {
            tracing::info!("end of input (EOF)");
            if lines.release_held().await == Flow::Stop {
                return;
            }
            let last = admit(framer.remainder(), &lines.budget).await;
            if let Some(item) = last {
                let _ = lines.tx.send(item).await;
            }
            let _ = lines.tx.send(Inbound::Eof).await;
        }
        ReadEnd::Failed(e) => {
            let _ = lines.tx.send(Inbound::Failed(e)).await;
        }
        // The session is gone.
        ReadEnd::Stopped => {}
    }
}

/// The client's input, line by line: each charged to the byte budget and
/// handed to the session; a line over the limit answered with -32600.
///
/// A request line the budget cannot afford is [`Held`]: a task waits for
/// room and then hands it on, while the reader goes on with the lines
/// behind it as long as they are control messages (cancellations,
/// responses, pings), which have a reserve in the budget. The first line
/// that is not waits until the held one is in (order is kept for all but
/// control messages), and nothing more is read meanwhile.
struct InboundLines {
    max: usize,
    budget: Arc<InboundBudget>,
    tx: mpsc::Sender<Inbound>,
    /// Set when one read brings several requests: their answers follow
    /// together (see [`BurstHint`]).
    burst: BurstHint,
    held: Option<Held>,
}

/// The one request line waiting for room in the budget.
struct Held {
    /// Its id, so that a cancellation of it can drop it before it is read.
    id: Option<RequestId>,
    /// Charges, parses and sends it once it fits; says whether to read on.
    task: AbortOnDrop<Flow>,
}

impl InboundLines {
    async fn send(&self, item: Option<Inbound>) -> Flow {
        match item {
            Some(item) => match self.tx.send(item).await {
                Ok(()) => Flow::Go,
                Err(_) => Flow::Stop,
            },
            None => Flow::Go,
        }
    }

    /// Leaves `line` to a task that waits until the budget affords it.
    fn hold(&mut self, line: &[u8], e: Estimate) {
        tracing::debug!(
            held = self.budget.held(),
            next = e.bytes(),
            "inbound byte budget full: a request waits, control messages read on"
        );
        let (budget, tx, line) = (self.budget.clone(), self.tx.clone(), line.to_vec());
        let id = request_id(&line);
        let task = tokio::spawn(async move {
            let charge = budget.take(e).await;
            tracing::debug!(
                held = budget.held(),
                "inbound byte budget: held request admitted"
            );
            match classify(&line, charge) {
                Some(item) => match tx.send(item).await {
                    Ok(()) => Flow::Go,
                    Err(_) => Flow::Stop,
                },
                None => Flow::Go,
            }
        });
        self.held = Some(Held {
            id,
            task: AbortOnDrop(task),
        });
    }

    /// Waits until the held line (if any) is handed on.
    async fn release_held(&mut self) -> Flow {
        match self.held.take() {
            Some(mut held) => (&mut held.task.0).await.unwrap_or(Flow::Stop),
            None => Flow::Go,
        }
    }

    /// A control message read past the held line. A cancellation of the
    /// held request itself drops both, unless the request was handed on
    /// meanwhile (then the cancellation follows it).
    async fn overtake(&mut self, line: &[u8], e: Estimate) -> Flow {
        let charge = self.budget.take(e).await;
        let item = classify(line, charge);
        let cancels_held = match (&item, &self.held) {
            (Some(Inbound::Message(Message::Notification(n), _)), Some(held)) => {
                n.method == methods::CANCELLED
                    && held.id.is_some()
                    && crate::protocol::cancelled_request_id(n) == held.id
            }
            _ => false,
        };
        if cancels_held {
            if let Some(mut held) = self.held.take() {
                held.task.0.abort();
                match (&mut held.task.0).await {
                    Ok(Flow::Go) => {} // already handed on: the session cancels it
                    Ok(Flow::Stop) => return Flow::Stop,
                    Err(_) => {
                        tracing::debug!(
                            id = ?held.id,
                            "request cancelled while it waited for room: never read"
                        );
                        return Flow::Go;
                    }
                }
            }
        }
        self.send(item).await
    }
}

impl LineHandler for InboundLines {
    fn several(&mut self) {
        self.burst.set();
    }

    async fn line(&mut self, line: Cow<'_, [u8]>) -> Flow {
        if is_blank(&line) {
            return Flow::Go;
        }
        let e = memory_estimate::estimate(&line);
        if self.held.is_some() {
            if e.is_control() {
                return self.overtake(&line, e).await;
            }
            if self.release_held().await == Flow::Stop {
                return Flow::Stop;
            }
        }
        match self.budget.try_take(e) {
            Some(charge) => self.send(classify(&line, charge)).await,
            None if e.is_control() => {
                let charge = self.budget.take(e).await;
                self.send(classify(&line, charge)).await
            }
            None => {
                self.hold(&line, e);
                Flow::Go
            }
        }
    }

    async fn too_large(&mut self, at_least: usize) -> Flow {
        let max = self.max;
        tracing::warn!(at_least, max, "inbound line over max_message_bytes refused");
        // In order: after the held request, if any.
        if self.release_held().await == Flow::Stop {
            return Flow::Stop;
        }
        let e = ErrorObject::new(
            codes::INVALID_REQUEST,
            format!("message exceeds max_message_bytes ({max} bytes)"),
        );
        self.send(Some(Inbound::Reply(encode::error(&None, &e))))
            .await
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// The `id` of a request line, read without building the rest.
fn request_id(line: &[u8]) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: Option<RequestId>,
    }
    let body = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    serde_json::from_slice::<IdOnly>(body).ok()?.id
}

/// Charges a line's estimated parsed size to the budget (waiting until it
/// fits), then classifies it. Blank lines are ignored.
async fn admit(line: &[u8], budget: &Arc<InboundBudget>) -> Option<Inbound> {
    if is_blank(line) {
        return None;
    }
    let charge = budget.take(memory_estimate::estimate(line)).await;
    classify(line, charge)
}

/// One line to a message (keeping its charge) or an error reply (releasing
/// it, as the parse is over).
fn classify(line: &[u8], charge: Charge) -> Option<Inbound> {
    Some(match Message::parse(line) {
        Ok(m) => Inbound::Message(m, charge),
        Err(ParseError::NotJson(_)) => Inbound::Reply(encode::error(
            &None,
            &ErrorObject::new(codes::PARSE_ERROR, "Parse error: the line is not JSON"),
        )),
        Err(ParseError::Batch) => Inbound::Reply(encode::error(
            &None,
            &ErrorObject::new(
                codes::INVALID_REQUEST,
                "JSON-RPC batch arrays are not supported",
            ),
        )),
        Err(ParseError::Invalid { reason, id }) => Inbound::Reply(encode::error(
            &id,
            &ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid Request: {reason}")),
        )),
    })
}

/// Delivers notifications to the handler, one at a time, in order.
async fn notification_loop<H: Handler>(
    handler: Arc<H>,
    handle: ServerHandle,
    mut rx: mpsc::Receiver<(Notification, Charge)>,
    failed: oneshot::Sender<ServerError>,
) {
    while let Some((n, charge)) = rx.recv().await {
        let method = n.method.clone();
        let (h, hd) = (handler.clone(), handle.clone());
        // Its own task, so a panic is caught and reported like an error.
        let outcome = tokio::spawn(async move {
            let _charge = charge; // released when the handler is done
            h.handle_notification(n, hd).await
        })
        .await
        .unwrap_or_else(|e| {
            Err(HandlerError::Internal(format!(
                "notification handler panicked: {e}"
            )))
        });
        if let Err(source) = outcome {
            tracing::warn!(%method, error = %source, "notification handler failed");
            let _ = failed.send(ServerError::NotificationHandler { method, source });
            return;
        }
    }
}
