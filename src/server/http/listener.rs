//! The accept loop: hyper's HTTP/1 on every connection, at most
//! `max_connections` of them at once and `max_connections_per_peer` from
//! one owner, each with a deadline for its request heads, and the stop (no
//! new connection, graceful close, then a cut).
//!
//! An owner is a group of peer addresses one party can use at once
//! ([`PeerGroup`]: all of loopback, an IPv4 address, an IPv6 /64). A slot
//! is given back by the owner that holds it, or taken from it: when the
//! listener is full (or an owner at its share connects again), the oldest
//! idle connection of the owner that holds the most gives way. Idle means
//! the owner gave the connection up: it waits for its next request, and
//! hyper has written all of the previous answer (a connection whose answer
//! hyper still writes is busy, as one running a request or holding a
//! stream open). So connections that never send a byte cost their owner
//! its own slots, and nobody else's; and they last at most
//! `header_read_timeout` anyway.
//!
//! Busy connections are bounded per owner by the same share, and the last
//! eighth of the listener (the newcomer room) goes only to owners that
//! hold fewer than [`NEWCOMER`] connections: however many owners hold
//! their shares busy, a newcomer gets in. A connection that finds no slot
//! is accepted all the same, answered 503 with `Retry-After`, closed, and
//! counted ([`ConnectionStats`]), rather than left in the kernel's queue.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::time::Instant;

use super::coarse::CoarseTimer;
use super::config::HttpConfig;
use super::principal::PeerGroup;
use crate::throttle::Throttle;

/// An owner that holds fewer connections than this may take the newcomer
/// room.
const NEWCOMER: usize = 4;

/// The connection bounds of one listener.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    max: usize,
    per_owner: usize,
    /// The connections only newcomers may take: an eighth of `max`, less
    /// when the share leaves less (one owner may take all behind a proxy).
    newcomer_room: usize,
    header_read_timeout: Duration,
}

impl ConnLimits {
    pub(crate) fn of(config: &HttpConfig) -> Self {
        let max = config.get_max_connections().max(1);
        let per_owner = config.get_max_connections_per_peer().clamp(1, max);
        ConnLimits {
            max,
            per_owner,
            newcomer_room: (max / 8).min(max - per_owner),
            header_read_timeout: config.get_header_read_timeout(),
        }
    }
}

/// What a listener refused, for an operator: a cheap handle on counters
/// that the listener updates while it serves.
///
/// [`ServerHandle::refused_connections`](crate::server::ServerHandle::refused_connections)
/// reads the one of an [`HttpServer`](super::HttpServer);
/// [`serve_counted`] takes one for any router.
///
/// ```
/// use conduit_mcp::server::http::ConnectionStats;
///
/// let stats = ConnectionStats::new();
/// let reader = stats.clone(); // the same counters
/// assert_eq!(reader.refused(), 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ConnectionStats(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    refused: AtomicU64,
}

impl ConnectionStats {
    /// Counters at zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::ConnectionStats;
    ///
    /// assert_eq!(ConnectionStats::new().refused(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Connections refused since the listener started, because their
    /// owner held its [`max_connections_per_peer`](HttpConfig::max_connections_per_peer)
    /// busy, or the listener its [`max_connections`](HttpConfig::max_connections):
    /// each answered 503 with `Retry-After`, or closed at once when too
    /// many refusals were being answered already.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::ConnectionStats;
    ///
    /// fn report(stats: &ConnectionStats) {
    ///     tracing::info!(refused = stats.refused(), "connections refused");
    /// }
    /// ```
    pub fn refused(&self) -> u64 {
        self.0.refused.load(Ordering::Relaxed)
    }
}

/// Serves any axum `router` on `listener` with the connection bounds of
/// [`HttpServer`](super::HttpServer)'s own listener, taken from `config`:
/// at most [`max_connections`](HttpConfig::max_connections), of them
/// [`max_connections_per_peer`](HttpConfig::max_connections_per_peer) from
/// one owner (a group of peer addresses), each request head within
/// [`header_read_timeout`](HttpConfig::header_read_timeout) (which also
/// ends idle keep-alive connections), and the peer's address in each
/// request's extensions (`ConnectInfo<SocketAddr>`), where the body room
/// and the session quotas find it. A connection that finds no slot is
/// answered 503 with `Retry-After` and closed ([`serve_counted`] counts
/// them).
///
/// Until `stop` turns true (or its sender is dropped): then no connection
/// is accepted, idle ones close, and those still busy get `grace` to
/// finish before they are cut. Returns when every connection is closed.
///
/// ```no_run
/// # async fn demo(router: axum::Router) -> std::io::Result<()> {
/// use std::time::Duration;
/// use conduit_mcp::server::http::{self, HttpConfig};
/// use conduit_mcp::server::ServerConfig;
/// use conduit_mcp::protocol::Implementation;
///
/// let config = HttpConfig::new(ServerConfig::new(Implementation::new("mine", "1.0")));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let (stop, stopped) = tokio::sync::watch::channel(false);
/// tokio::spawn(async move {
///     let _ = tokio::signal::ctrl_c().await;
///     stop.send_replace(true);
/// });
/// http::serve(listener, router, &config, stopped, Duration::from_secs(5)).await
/// # }
/// ```
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    config: &HttpConfig,
    stop: watch::Receiver<bool>,
    grace: Duration,
) -> io::Result<()> {
    serve_counted(
        listener,
        router,
        config,
        stop,
        grace,
        &ConnectionStats::new(),
    )
    .await
}

/// [`serve`], counting what the listener refuses in `stats`.
///
/// ```no_run
/// # async fn demo(router: axum::Router) -> std::io::Result<()> {
/// use std::time::Duration;
/// use conduit_mcp::server::http::{self, ConnectionStats, HttpConfig};
/// use conduit_mcp::server::ServerConfig;
/// use conduit_mcp::protocol::Implementation;
///
/// let config = HttpConfig::new(ServerConfig::new(Implementation::new("mine", "1.0")));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let (_stop, stopped) = tokio::sync::watch::channel(false);
/// let stats = ConnectionStats::new();
/// let metrics = stats.clone(); // read while it serves
/// http::serve_counted(listener, router, &config, stopped, Duration::from_secs(5), &stats).await?;
/// println!("{} connections refused", metrics.refused());
/// # Ok(()) }
/// ```
pub async fn serve_counted(
    listener: TcpListener,
    router: axum::Router,
    config: &HttpConfig,
    stop: watch::Receiver<bool>,
    grace: Duration,
    stats: &ConnectionStats,
) -> io::Result<()> {
    serve_app(listener, router, ConnLimits::of(config), stats, stop, grace).await
}

/// [`serve`] with its bounds given.
pub(crate) async fn serve_app(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    stats: &ConnectionStats,
    done: watch::Receiver<bool>,
    flush: Duration,
) -> io::Result<()> {
    let table = Arc::new(Table::new(limits, stats.clone()));
    accept_until(&listener, &app, &table, done.clone()).await;
    drop(listener);
    // Idle connections closed at once (graceful), busy ones finish.
    if !table.wait_empty(Instant::now() + flush).await {
        let left = table.cut_all();
        tracing::warn!(
            connections = left,
            "connections still open after flush_timeout: cut"
        );
        table
            .wait_empty(Instant::now() + Duration::from_secs(1))
            .await;
    }
    Ok(())
}

async fn accept_until(
    listener: &TcpListener,
    app: &axum::Router,
    table: &Arc<Table>,
    mut done: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            biased;
            () = stopped(&mut done) => return,
            a = listener.accept() => a,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors and the like: wait, as axum does.
                tracing::warn!(error = %e, "accept failed");
                tokio::select! {
                    () = stopped(&mut done) => return,
                    () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                }
            }
        };
        let owner = PeerGroup::of(peer.ip());
        let slot = match table.admit(owner) {
            Ok(slot) => slot,
            Err(full) => {
                table.refuse(tcp, peer, owner, full, done.clone());
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(serve_connection(
            tcp,
            peer,
            slot,
            app.clone(),
            table.limits.header_read_timeout,
            table.timer.clone(),
            done.clone(),
        ));
    }
}

/// Until the stop (or the server is gone).
async fn stopped(done: &mut watch::Receiver<bool>) {
    let _ = done.wait_for(|d| *d).await;
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    slot: Slot,
    app: axum::Router,
    header_read_timeout: Duration,
    timer: CoarseTimer,
    mut done: watch::Receiver<bool>,
) {
    let io = TokioIo::new(Conn::new(tcp, slot.busy_handle()));
    let busy = slot.busy_handle();
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        let guard = busy.enter();
        let mut app = app.clone();
        async move {
            // axum's router is always ready and never fails.
            let response = match tower_service::Service::call(&mut app, req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|body| Tracked { body, _busy: guard }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        // Armed for every request head: a tokio timer each would wake the
        // runtime's driver per request.
        .timer(timer)
        .header_read_timeout(header_read_timeout);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let ended = tokio::select! {
        r = conn.as_mut() => r,
        () = stopped(&mut done) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!(%peer, error = %e, "connection ended");
    }
    drop(slot);
}

/// Why a connection found no slot.
#[derive(Debug, Clone, Copy)]
enum Full {
    /// Its owner holds its share, none of it idle.
    Owner,
    /// The listener holds every connection it may give this owner, none of
    /// them idle.
    Listener,
}

impl Full {
    /// The bound, for logs.
    fn bound(self) -> &'static str {
        match self {
            Full::Owner => "max_connections_per_peer",
            Full::Listener => "max_connections",
        }
    }

    /// The answer: 503, as a JSON-RPC error without an id.
    fn response(self) -> hyper::Response<axum::body::Body> {
        let body = match self {
            Full::Owner => concat!(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"#,
                r#""too many connections from this peer (max_connections_per_peer): retry later"}}"#
            ),
            Full::Listener => concat!(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"#,
                r#""too many connections (max_connections): retry later"}}"#
            ),
        };
        let mut r = super::response::json(StatusCode::SERVICE_UNAVAILABLE, body);
        let h = r.headers_mut();
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        h.insert(header::CONNECTION, HeaderValue::from_static("close"));
        r
    }
}

/// Answers a refused connection's request 503, then closes it: within
/// `header_read_timeout`, or at the stop.
async fn answer_refused(
    tcp: TcpStream,
    full: Full,
    header_read_timeout: Duration,
    timer: CoarseTimer,
    mut done: watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |_: hyper::Request<Incoming>| async move {
        Ok::<_, Infallible>(full.response())
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(timer)
        .header_read_timeout(header_read_timeout)
        .keep_alive(false);
    let conn = builder.serve_connection(TokioIo::new(tcp), service);
    tokio::select! {
        _ = conn => {}
        () = stopped(&mut done) => {}
    }
}

struct Entry {
    owner: PeerGroup,
    /// Requests whose answer hyper has not written whole yet (hyper
    /// serves one at a time; a count is safe).
    busy: usize,
    /// Since when it waits for a request (meaningless while busy).
    idle_since: Instant,
    state: Arc<ConnState>,
}

#[derive(Default)]
struct State {
    conns: HashMap<u64, Entry>,
    per_owner: HashMap<PeerGroup, usize>,
    next: u64,
}

impl State {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.conns.remove(&id)?;
        if let Some(n) = self.per_owner.get_mut(&e.owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(&e.owner);
            }
        }
        Some(e)
    }

    /// The oldest idle connection of `owner`.
    fn oldest_idle(&self, owner: PeerGroup) -> Option<u64> {
        self.conns
            .iter()
            .filter(|(_, e)| e.busy == 0 && e.owner == owner)
            .min_by_key(|(_, e)| e.idle_since)
            .map(|(id, _)| *id)
    }

    /// The oldest idle connection of the owner that holds the most
    /// connections among those that have an idle one.
    fn idle_of_largest_holder(&self) -> Option<u64> {
        let mut idle: HashMap<PeerGroup, (u64, Instant)> = HashMap::new();
        for (id, e) in &self.conns {
            if e.busy != 0 {
                continue;
            }
            let oldest = idle.entry(e.owner).or_insert((*id, e.idle_since));
            if e.idle_since < oldest.1 {
                *oldest = (*id, e.idle_since);
            }
        }
        idle.into_iter()
            .max_by_key(|(owner, (_, since))| {
                (
                    self.per_owner.get(owner).copied().unwrap_or(0),
                    std::cmp::Reverse(*since),
                )
            })
            .map(|(_, (id, _))| id)
    }
}

/// The listener's connections.
struct Table {
    limits: ConnLimits,
    state: Mutex<State>,
    /// A connection ended.
    changed: Notify,
    /// The connections' header deadlines.
    timer: CoarseTimer,
    stats: ConnectionStats,
    /// Refused connections being answered (each until its answer, within
    /// its header deadline); past it, a refused connection is closed at
    /// once.
    refusing: Arc<Semaphore>,
    warned: Throttle,
}

impl Table {
    fn new(limits: ConnLimits, stats: ConnectionStats) -> Self {
        Table {
            limits,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            timer: CoarseTimer::new(),
            stats,
            refusing: Arc::new(Semaphore::new((limits.max / 8).max(1))),
            warned: Throttle::default(),
        }
    }

    /// A slot for a connection of `owner`: a free one, or one an idle
    /// connection gives up; `Err` when every one it may take is busy.
    fn admit(self: &Arc<Self>, owner: PeerGroup) -> Result<Slot, Full> {
        let l = self.limits;
        let mut s = crate::sync::lock(&self.state);
        let held = s.per_owner.get(&owner).copied().unwrap_or(0);
        let open = s.conns.len();
        let give_way = if held >= l.per_owner {
            Some(s.oldest_idle(owner).ok_or(Full::Owner)?)
        } else if open >= l.max || (held >= NEWCOMER && open >= l.max - l.newcomer_room) {
            Some(s.idle_of_largest_holder().ok_or(Full::Listener)?)
        } else {
            None
        };
        if let Some(e) = give_way.and_then(|id| s.remove(id)) {
            tracing::debug!(owner = %e.owner, "idle connection closed to make room for a new one");
            e.state.cut();
        }
        let id = s.next;
        s.next += 1;
        let state = Arc::new(ConnState::default());
        s.conns.insert(
            id,
            Entry {
                owner,
                busy: 0,
                idle_since: Instant::now(),
                state: state.clone(),
            },
        );
        *s.per_owner.entry(owner).or_insert(0) += 1;
        Ok(Slot {
            table: self.clone(),
            id,
            state,
        })
    }

    /// Counts a connection that found no slot, and answers it 503 (or
    /// closes it at once when too many refusals are being answered).
    fn refuse(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
        owner: PeerGroup,
        full: Full,
        done: watch::Receiver<bool>,
    ) {
        self.stats.0.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(skipped) = self.warned.admit() {
            tracing::warn!(%peer, %owner, bound = full.bound(), skipped, "connection refused (503): every slot it may take is busy");
        }
        let Ok(answering) = self.refusing.clone().try_acquire_owned() else {
            return; // `tcp` closes here
        };
        let header_read_timeout = self.limits.header_read_timeout;
        let timer = self.timer.clone();
        tokio::spawn(async move {
            answer_refused(tcp, full, header_read_timeout, timer, done).await;
            drop(answering);
        });
    }

    /// One more request in progress on connection `id`.
    fn enter(&self, id: u64) {
        if let Some(e) = crate::sync::lock(&self.state).conns.get_mut(&id) {
            e.busy += 1;
        }
    }

    /// `answered` requests of connection `id` are answered, their answers
    /// written whole.
    fn written(&self, id: u64, answered: usize) {
        if let Some(e) = crate::sync::lock(&self.state).conns.get_mut(&id) {
            e.busy = e.busy.saturating_sub(answered);
            if e.busy == 0 {
                e.idle_since = Instant::now();
            }
        }
    }

    /// Cuts every connection; how many there were.
    fn cut_all(&self) -> usize {
        let s = crate::sync::lock(&self.state);
        for e in s.conns.values() {
            e.state.cut();
        }
        s.conns.len()
    }

    /// Waits until no connection is left, or `deadline`.
    async fn wait_empty(&self, deadline: Instant) -> bool {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if crate::sync::lock(&self.state).conns.is_empty() {
                return true;
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(deadline) => {
                    return crate::sync::lock(&self.state).conns.is_empty();
                }
            }
        }
    }
}

/// One connection's place in the table, given back when dropped.
struct Slot {
    table: Arc<Table>,
    id: u64,
    state: Arc<ConnState>,
}

impl Slot {
    fn busy_handle(&self) -> BusyHandle {
        BusyHandle {
            table: self.table.clone(),
            id: self.id,
            state: self.state.clone(),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        crate::sync::lock(&self.table.state).remove(self.id);
        self.table.changed.notify_waiters();
    }
}

/// Marks requests of one connection in progress, and their answers
/// written.
#[derive(Clone)]
struct BusyHandle {
    table: Arc<Table>,
    id: u64,
    state: Arc<ConnState>,
}

impl BusyHandle {
    fn enter(&self) -> BusyGuard {
        self.table.enter(self.id);
        BusyGuard(self.state.clone())
    }

    /// Hyper has written all it was given: the answers whose bodies ended
    /// are written whole.
    fn flushed(&self) {
        let answered = self.state.unwritten.swap(0, Ordering::AcqRel);
        if answered > 0 {
            self.table.written(self.id, answered);
        }
    }
}

/// A request in progress: until its response body ends (or is dropped),
/// then until hyper has written what it buffered of it.
struct BusyGuard(Arc<ConnState>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.unwritten.fetch_add(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its connection busy until it is done.
struct Tracked {
    body: axum::body::Body,
    _busy: BusyGuard,
}

impl http_body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// What a connection's I/O shares with the table: the order to cut it
/// (its I/O fails from then on), and the answers whose bodies ended but
/// that hyper may not have written whole yet.
#[derive(Default)]
struct ConnState {
    cut: AtomicBool,
    wake: Notify,
    unwritten: AtomicUsize,
}

impl ConnState {
    fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        // One waiter (the connection): a stored permit reaches it even if
        // it is not waiting yet.
        self.wake.notify_one();
    }

    fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Acquire)
    }
}

/// A connection that fails its I/O once it is cut, and tells the table
/// when hyper has written all it buffered.
///
/// Each operation reads the flag; the wake-up future, which wakes the
/// connection's task on the cut, is polled only when the I/O itself is
/// pending (polling it costs about as much as the check of a request's
/// headers). Hyper flushes its transport only once its own write buffer
/// is empty, so a flush that succeeds is the end of every answer whose
/// body had ended.
struct Conn {
    io: TcpStream,
    busy: BusyHandle,
    woken: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
}

impl Conn {
    fn new(io: TcpStream, busy: BusyHandle) -> Self {
        let waiter = busy.state.clone();
        Conn {
            io,
            busy,
            woken: Box::pin(async move { waiter.wake.notified().await }),
        }
    }

    /// `io`'s poll, failing once the connection is cut.
    fn guard<T>(
        &mut self,
        cx: &mut Context<'_>,
        io: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if self.busy.state.is_cut() {
            return Poll::Ready(Err(aborted()));
        }
        match io(Pin::new(&mut self.io), cx) {
            Poll::Pending
                if self.woken.as_mut().poll(cx).is_ready() || self.busy.state.is_cut() =>
            {
                Poll::Ready(Err(aborted()))
            }
            other => other,
        }
    }
}

fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "the connection was cut")
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.guard(cx, |io, cx| io.poll_read(cx, buf))
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.guard(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flushed = self.guard(cx, |io, cx| io.poll_flush(cx));
        if matches!(flushed, Poll::Ready(Ok(()))) {
            self.busy.flushed();
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.guard(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(max: usize, per_owner: usize) -> Arc<Table> {
        let mut config = HttpConfig::new(crate::server::ServerConfig::new(
            crate::protocol::Implementation::new("t", "0"),
        ));
        config = config.max_connections(max);
        config = config.max_connections_per_peer(per_owner);
        Arc::new(Table::new(ConnLimits::of(&config), ConnectionStats::new()))
    }

    fn owner(ip: &str) -> PeerGroup {
        PeerGroup::of(ip.parse().unwrap())
    }

    /// Admits connections of `ip` and holds them busy (a stream each)
    /// while it can; how many it got.
    fn hold_busy(t: &Arc<Table>, ip: &str, n: usize, held: &mut Vec<(Slot, BusyGuard)>) -> usize {
        let mut got = 0;
        for _ in 0..n {
            match t.admit(owner(ip)) {
                Ok(slot) => {
                    let guard = slot.busy_handle().enter();
                    held.push((slot, guard));
                    got += 1;
                }
                Err(_) => break,
            }
        }
        got
    }

    #[tokio::test]
    async fn every_loopback_address_is_one_owner_and_one_ipv6_64_another() {
        let t = table(64, 16);
        let mut held = Vec::new();
        for last in 2..10 {
            hold_busy(&t, &format!("127.0.0.{last}"), 2, &mut held);
        }
        assert_eq!(held.len(), 16);
        assert!(matches!(t.admit(owner("::1")), Err(Full::Owner)));
        assert!(matches!(
            t.admit(owner("::ffff:127.1.2.3")),
            Err(Full::Owner)
        ));
        for i in 1..=20 {
            hold_busy(&t, &format!("2001:db8::{i:x}"), 1, &mut held);
        }
        assert_eq!(held.len(), 32, "one /64 held more than its share");
        assert!(matches!(t.admit(owner("2001:db8::ffff")), Err(Full::Owner)));
    }

    #[tokio::test]
    async fn owners_holding_their_shares_busy_leave_room_for_a_newcomer() {
        // The defaults: 512 connections, 256 per owner, 64 for newcomers.
        let t = table(512, 256);
        let mut held = Vec::new();
        let a = hold_busy(&t, "192.0.2.1", 512, &mut held);
        let b = hold_busy(&t, "192.0.2.2", 512, &mut held);
        let c = hold_busy(&t, "192.0.2.3", 512, &mut held);
        assert_eq!((a, b, c), (256, 192, NEWCOMER), "held by three owners");
        let victim = t.admit(owner("198.51.100.7"));
        assert!(victim.is_ok(), "a newcomer found the listener full");
        drop(victim);
        // What many owners can still do: take the newcomer room, four
        // connections each.
        let mut owners = 0;
        while hold_busy(
            &t,
            &format!("203.0.113.{}", owners + 1),
            NEWCOMER,
            &mut held,
        ) > 0
        {
            owners += 1;
        }
        assert_eq!(held.len(), 512);
        assert_eq!(owners, 60 / NEWCOMER);
        assert!(matches!(
            t.admit(owner("198.51.100.7")),
            Err(Full::Listener)
        ));
        // Idle connections give way, whoever holds them.
        let (slot, guard) = held.pop().unwrap();
        drop(guard);
        slot.busy_handle().flushed();
        assert!(t.admit(owner("198.51.100.7")).is_ok());
        assert!(slot.state.is_cut(), "the idle connection was not cut");
    }

    #[tokio::test]
    async fn an_answer_hyper_has_not_written_whole_keeps_its_connection() {
        let t = table(1, 1);
        let slot = t.admit(owner("127.0.0.1")).unwrap();
        let busy = slot.busy_handle();
        // The body ended: hyper holds what it has not written yet.
        drop(busy.enter());
        assert!(matches!(t.admit(owner("127.0.0.1")), Err(Full::Owner)));
        assert!(!slot.state.is_cut());
        // Written whole: the connection is idle, and gives way.
        busy.flushed();
        assert!(t.admit(owner("127.0.0.1")).is_ok());
        assert!(slot.state.is_cut());
    }

    #[tokio::test]
    async fn one_owner_may_take_the_whole_listener_when_its_share_is_the_whole() {
        // Behind a reverse proxy: every client one address.
        let t = table(64, 64);
        let mut held = Vec::new();
        assert_eq!(hold_busy(&t, "10.1.1.1", 100, &mut held), 64);
    }
}
