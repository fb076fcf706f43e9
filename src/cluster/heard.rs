//! When each node connection's peer last sent something: the guard of
//! peer names, [`GuardedNodeServer`](super::GuardedNodeServer), asks it
//! whether a name's holder is alive.
//!
//! Every connection the node server opens is read through a half that
//! notes the time bytes arrive, and its session is started as one of
//! ractor_cluster's external streams, labelled with the connection's
//! addresses. The node server's event subscription hands each session,
//! as it starts, the time of its connection.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ractor::ActorId;
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{BoxRead, BoxWrite, ClusterBidiStream, NetworkStream, NodeEventSubscription};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// When each session's peer last sent something, shared by the node
/// server's actor and its event subscription.
#[derive(Clone, Default)]
pub(super) struct Hearing(Arc<Mutex<Sessions>>);

#[derive(Default)]
struct Sessions {
    /// The connection being opened, until its session starts.
    opening: Option<LastHeard>,
    by_session: HashMap<ActorId, LastHeard>,
}

impl Hearing {
    /// `stream`, its reads timed from now, for the session about to start,
    /// until [`opened`](Self::opened).
    pub(super) fn timed(&self, stream: NetworkStream) -> Box<dyn ClusterBidiStream> {
        self.time(Halves::of(stream))
    }

    /// [`timed`](Self::timed), for a connection of a custom transport.
    pub(super) fn timed_external(
        &self,
        stream: Box<dyn ClusterBidiStream>,
    ) -> Box<dyn ClusterBidiStream> {
        self.time(Halves::external(stream))
    }

    fn time(&self, mut halves: Halves) -> Box<dyn ClusterBidiStream> {
        let last = LastHeard::new();
        halves.reader = Box::new(Heard {
            inner: halves.reader,
            last: last.clone(),
        });
        crate::sync::lock(&self.0).opening = Some(last);
        Box::new(Timed(halves))
    }

    /// The connection being opened has its session, or none will start.
    pub(super) fn opened(&self) {
        crate::sync::lock(&self.0).opening = None;
    }

    /// The subscription to the node server's events that gives each
    /// session, as it starts, its connection's time.
    pub(super) fn subscription(&self) -> Box<dyn NodeEventSubscription> {
        Box::new(SessionsHeard(self.clone()))
    }

    /// How long `session`'s peer has sent nothing; `None` when its reads
    /// are not timed.
    pub(super) fn silent_for(&self, session: ActorId) -> Option<Duration> {
        crate::sync::lock(&self.0)
            .by_session
            .get(&session)
            .map(LastHeard::silent_for)
    }

    /// `session` ended.
    pub(super) fn ended(&self, session: ActorId) {
        crate::sync::lock(&self.0).by_session.remove(&session);
    }
}

/// When a connection's peer last sent bytes.
#[derive(Clone)]
struct LastHeard(Arc<(Instant, AtomicU64)>);

impl LastHeard {
    fn new() -> Self {
        LastHeard(Arc::new((Instant::now(), AtomicU64::new(0))))
    }

    /// Bytes arrived now.
    fn heard(&self) {
        let ms = u64::try_from(self.0 .0.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0 .1.store(ms, Ordering::Relaxed);
    }

    fn silent_for(&self) -> Duration {
        let at = Duration::from_millis(self.0 .1.load(Ordering::Relaxed));
        self.0 .0.elapsed().saturating_sub(at)
    }
}

/// The node server's subscription: the session started for the
/// connection being opened gets its time.
struct SessionsHeard(Hearing);

impl NodeEventSubscription for SessionsHeard {
    fn node_session_opened(&self, ses: NodeServerSessionInformation) {
        let mut s = crate::sync::lock(&self.0 .0);
        if let Some(last) = s.opening.take() {
            s.by_session.insert(ses.actor.get_id(), last);
        }
    }

    fn node_session_disconnected(&self, _: NodeServerSessionInformation) {}

    fn node_session_authenticated(&self, _: NodeServerSessionInformation) {}
}

/// A connection's two halves and its labels.
struct Halves {
    reader: BoxRead,
    writer: BoxWrite,
    peer: Option<String>,
    local: Option<String>,
}

impl Halves {
    /// A TCP, TLS or external connection, split.
    fn of(stream: NetworkStream) -> Self {
        match stream {
            NetworkStream::Raw {
                peer_addr,
                local_addr,
                stream,
            } => {
                let (r, w) = stream.into_split();
                Halves::addressed(Box::new(r), Box::new(w), peer_addr, local_addr)
            }
            NetworkStream::TlsServer {
                peer_addr,
                local_addr,
                stream,
            } => Halves::split(stream, peer_addr, local_addr),
            NetworkStream::TlsClient {
                peer_addr,
                local_addr,
                stream,
            } => Halves::split(stream, peer_addr, local_addr),
            NetworkStream::External {
                peer_label,
                local_label,
                reader,
                writer,
            } => Halves::new(reader, writer, peer_label, local_label),
        }
    }

    /// A TLS stream split.
    fn split<S>(stream: S, peer: SocketAddr, local: SocketAddr) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (r, w) = tokio::io::split(stream);
        Halves::addressed(Box::new(r), Box::new(w), peer, local)
    }

    fn addressed(reader: BoxRead, writer: BoxWrite, peer: SocketAddr, local: SocketAddr) -> Self {
        Halves::new(
            reader,
            writer,
            Some(peer.to_string()),
            Some(local.to_string()),
        )
    }

    /// A connection of a custom transport, split.
    fn external(stream: Box<dyn ClusterBidiStream>) -> Self {
        let (peer, local) = (stream.peer_label(), stream.local_label());
        let (reader, writer) = stream.split();
        Halves::new(reader, writer, peer, local)
    }

    fn new(reader: BoxRead, writer: BoxWrite, peer: Option<String>, local: Option<String>) -> Self {
        Halves {
            reader,
            writer,
            peer,
            local,
        }
    }
}

/// A connection whose reads are timed: the node server starts its session
/// as it would the connection's own: an external transport of
/// ractor_cluster's, labelled with the addresses.
struct Timed(Halves);

impl ClusterBidiStream for Timed {
    fn split(self: Box<Self>) -> (BoxRead, BoxWrite) {
        (self.0.reader, self.0.writer)
    }

    fn peer_label(&self) -> Option<String> {
        self.0.peer.clone()
    }

    fn local_label(&self) -> Option<String> {
        self.0.local.clone()
    }
}

/// A read half that notes when bytes arrive.
struct Heard {
    inner: BoxRead,
    last: LastHeard,
}

impl AsyncRead for Heard {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.last.heard();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_silence_of_a_connection_is_the_time_since_its_last_bytes() {
        let last = LastHeard::new();
        last.heard();
        assert!(last.silent_for() < Duration::from_secs(10));
        let long_ago = LastHeard(Arc::new((
            Instant::now() - Duration::from_secs(60),
            AtomicU64::new(0),
        )));
        assert!(long_ago.silent_for() >= Duration::from_secs(60));
        long_ago.heard();
        assert!(long_ago.silent_for() < Duration::from_secs(60));
    }
}
