//! The accept loop: hyper's HTTP/1 on every connection, at most
//! `max_connections` of them at once and `max_connections_per_peer` from
//! one peer address, each with a deadline for its request heads, and the
//! stop (no new connection, graceful close, then a cut).
//!
//! A slot is given back by the peer that holds it, or taken from it: when
//! the listener is full (or a peer at its share connects again), the
//! oldest idle connection (one waiting for its next request) of the peer
//! that holds the most gives way. So connections that never send a byte
//! cost their peer its own slots, and nobody else's; and they last at most
//! `header_read_timeout` anyway.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use super::coarse::CoarseTimer;
use super::config::HttpConfig;

/// The connection bounds of one listener.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    max: usize,
    per_peer: usize,
    header_read_timeout: Duration,
}

impl ConnLimits {
    pub(crate) fn of(config: &HttpConfig) -> Self {
        ConnLimits {
            max: config.max_connections.max(1),
            per_peer: config
                .max_connections_per_peer
                .clamp(1, config.max_connections.max(1)),
            header_read_timeout: config.header_read_timeout,
        }
    }
}

/// Serves any axum `router` on `listener` with the connection bounds of
/// [`HttpServer`](super::HttpServer)'s own listener, taken from `config`:
/// at most [`max_connections`](HttpConfig::max_connections), of them
/// [`max_connections_per_peer`](HttpConfig::max_connections_per_peer) from
/// one peer address, each request head within
/// [`header_read_timeout`](HttpConfig::header_read_timeout) (which also
/// ends idle keep-alive connections), and the peer's address in each
/// request's extensions (`ConnectInfo<SocketAddr>`), where the body room
/// and the session quotas find it.
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
    serve_app(listener, router, ConnLimits::of(config), stop, grace).await
}

/// Renamed to [`serve`].
#[deprecated(note = "renamed to `conduit_mcp::server::http::serve`")]
pub async fn serve_router(
    listener: TcpListener,
    router: axum::Router,
    config: &HttpConfig,
    stop: watch::Receiver<bool>,
    grace: Duration,
) -> io::Result<()> {
    serve(listener, router, config, stop, grace).await
}

/// [`serve`] with its bounds given.
pub(crate) async fn serve_app(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    done: watch::Receiver<bool>,
    flush: Duration,
) -> io::Result<()> {
    let table = Arc::new(Table::new(limits));
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
        // Admitted, or waiting (accepting no other) until a slot frees.
        let slot = loop {
            let changed = table.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match table.admit(peer.ip()) {
                Admit::Slot(slot) => break Some(slot),
                Admit::PeerFull => {
                    tracing::debug!(%peer, "connection refused: the peer holds max_connections_per_peer busy connections");
                    break None;
                }
                Admit::Full => {
                    tokio::select! {
                        () = stopped(&mut done) => return,
                        () = changed => {}
                    }
                }
            }
        };
        let Some(slot) = slot else {
            drop(tcp);
            continue;
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
    let io = TokioIo::new(Conn::new(tcp, slot.cut.clone()));
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

/// What [`Table::admit`] decided.
enum Admit {
    Slot(Slot),
    /// The peer holds its share, all of it busy.
    PeerFull,
    /// Every slot is busy.
    Full,
}

struct Entry {
    peer: IpAddr,
    /// Requests in progress (hyper serves one at a time; a count is safe).
    busy: usize,
    /// Since when it waits for a request (meaningless while busy).
    idle_since: Instant,
    cut: Arc<Cut>,
}

#[derive(Default)]
struct State {
    conns: HashMap<u64, Entry>,
    per_peer: HashMap<IpAddr, usize>,
    next: u64,
}

impl State {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.conns.remove(&id)?;
        if let Some(n) = self.per_peer.get_mut(&e.peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&e.peer);
            }
        }
        Some(e)
    }

    /// The oldest idle connection of `peer` (any peer: `None`).
    fn oldest_idle(&self, peer: Option<IpAddr>) -> Option<u64> {
        self.conns
            .iter()
            .filter(|(_, e)| e.busy == 0 && peer.is_none_or(|p| p == e.peer))
            .min_by_key(|(_, e)| e.idle_since)
            .map(|(id, _)| *id)
    }

    /// The oldest idle connection of the peer that holds the most
    /// connections among those that have an idle one.
    fn idle_of_largest_holder(&self) -> Option<u64> {
        let mut idle: HashMap<IpAddr, (u64, Instant)> = HashMap::new();
        for (id, e) in &self.conns {
            if e.busy != 0 {
                continue;
            }
            let oldest = idle.entry(e.peer).or_insert((*id, e.idle_since));
            if e.idle_since < oldest.1 {
                *oldest = (*id, e.idle_since);
            }
        }
        idle.into_iter()
            .max_by_key(|(peer, (_, since))| {
                (
                    self.per_peer.get(peer).copied().unwrap_or(0),
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
    /// A connection ended, or became idle.
    changed: Notify,
    /// The connections' header deadlines.
    timer: CoarseTimer,
}

impl Table {
    fn new(limits: ConnLimits) -> Self {
        Table {
            limits,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            timer: CoarseTimer::new(),
        }
    }

    fn admit(self: &Arc<Self>, peer: IpAddr) -> Admit {
        let mut s = crate::sync::lock(&self.state);
        let held = s.per_peer.get(&peer).copied().unwrap_or(0);
        let give_way = if held >= self.limits.per_peer {
            match s.oldest_idle(Some(peer)) {
                Some(id) => Some(id),
                None => return Admit::PeerFull,
            }
        } else if s.conns.len() >= self.limits.max {
            match s.idle_of_largest_holder() {
                Some(id) => Some(id),
                None => return Admit::Full,
            }
        } else {
            None
        };
        if let Some(e) = give_way.and_then(|id| s.remove(id)) {
            tracing::debug!(peer = %e.peer, "idle connection closed to make room for a new one");
            e.cut.cut();
        }
        let id = s.next;
        s.next += 1;
        let cut = Arc::new(Cut::default());
        s.conns.insert(
            id,
            Entry {
                peer,
                busy: 0,
                idle_since: Instant::now(),
                cut: cut.clone(),
            },
        );
        *s.per_peer.entry(peer).or_insert(0) += 1;
        Admit::Slot(Slot {
            table: self.clone(),
            id,
            cut,
        })
    }

    fn set_busy(&self, id: u64, busy: bool) {
        let mut s = crate::sync::lock(&self.state);
        if let Some(e) = s.conns.get_mut(&id) {
            if busy {
                e.busy += 1;
            } else {
                e.busy = e.busy.saturating_sub(1);
                if e.busy == 0 {
                    e.idle_since = Instant::now();
                }
            }
        }
        drop(s);
        if !busy {
            self.changed.notify_waiters();
        }
    }

    /// Cuts every connection; how many there were.
    fn cut_all(&self) -> usize {
        let s = crate::sync::lock(&self.state);
        for e in s.conns.values() {
            e.cut.cut();
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
    cut: Arc<Cut>,
}

impl Slot {
    fn busy_handle(&self) -> BusyHandle {
        BusyHandle {
            table: self.table.clone(),
            id: self.id,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        crate::sync::lock(&self.table.state).remove(self.id);
        self.table.changed.notify_waiters();
    }
}

/// Marks requests of one connection in progress.
#[derive(Clone)]
struct BusyHandle {
    table: Arc<Table>,
    id: u64,
}

impl BusyHandle {
    fn enter(&self) -> BusyGuard {
        self.table.set_busy(self.id, true);
        BusyGuard(self.clone())
    }
}

/// A request in progress: until its response body is written (or dropped).
struct BusyGuard(BusyHandle);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.table.set_busy(self.0.id, false);
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

/// The order to cut one connection: its I/O fails from then on.
#[derive(Default)]
struct Cut {
    flag: AtomicBool,
    wake: Notify,
}

impl Cut {
    fn cut(&self) {
        self.flag.store(true, Ordering::Release);
        // One waiter (the connection): a stored permit reaches it even if
        // it is not waiting yet.
        self.wake.notify_one();
    }

    fn is_cut(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

/// A connection that fails its I/O once it is cut.
///
/// Each operation reads the flag; the wake-up future, which wakes the
/// connection's task on the cut, is polled only when the I/O itself is
/// pending (polling it costs about as much as the check of a request's
/// headers).
struct Conn {
    io: TcpStream,
    cut: Arc<Cut>,
    woken: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
}

impl Conn {
    fn new(io: TcpStream, cut: Arc<Cut>) -> Self {
        let waiter = cut.clone();
        Conn {
            io,
            cut,
            woken: Box::pin(async move { waiter.wake.notified().await }),
        }
    }

    /// `io`'s poll, failing once the connection is cut.
    fn guard<T>(
        &mut self,
        cx: &mut Context<'_>,
        io: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if self.cut.is_cut() {
            return Poll::Ready(Err(aborted()));
        }
        match io(Pin::new(&mut self.io), cx) {
            Poll::Pending if self.woken.as_mut().poll(cx).is_ready() || self.cut.is_cut() => {
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
        self.guard(cx, |io, cx| io.poll_flush(cx))
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
