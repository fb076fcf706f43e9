//! `ServeActor`: serving under a ractor supervision tree.

use crate::server_support;

use std::time::Duration;

use tokio::time::Instant;

use conduit_mcp::server::{SendError, ServeActor, ServeArgs, StdioServer};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use serde_json::json;
use server_support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

#[tokio::test]
async fn serves_and_stops_normally_at_end_of_input() {
    let (h, _ev) = TestHandler::new();
    let (mut client_tx, server_rx) = tokio::io::duplex(4096);
    let (server_tx, client_rx) = tokio::io::duplex(4096);
    let server = StdioServer::over(server_rx, server_tx, config());
    let handle = server.handle();
    let (actor, done) = Actor::spawn(None, ServeActor::new(), ServeArgs { server, handler: h })
        .await
        .unwrap();
    client_tx
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(client_rx).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&line).unwrap()["result"],
        json!({})
    );
    drop(client_tx);
    tokio::time::timeout(PATIENCE, done).await.unwrap().unwrap();
    assert_eq!(actor.get_status(), ractor::ActorStatus::Stopped);
    assert!(matches!(
        handle.notify("x", None),
        Err(SendError::TransportGone)
    ));
}

// On the paused clock: "at once" is no timer waited on (a hang would run
// the clock to PATIENCE at once).
#[tokio::test(start_paused = true)]
async fn stopping_the_actor_stops_serving_at_once() {
    let (h, _ev) = TestHandler::new();
    let (_client_tx, server_rx) = tokio::io::duplex(4096);
    let (server_tx, _client_rx) = tokio::io::duplex(4096);
    let server = StdioServer::over(server_rx, server_tx, config());
    let handle = server.handle();
    let (actor, done) = Actor::spawn(None, ServeActor::new(), ServeArgs { server, handler: h })
        .await
        .unwrap();
    handle.wait_until_ready().await.unwrap();
    let t = Instant::now();
    actor.stop(None);
    tokio::time::timeout(PATIENCE, done).await.unwrap().unwrap();
    assert_eq!(t.elapsed(), Duration::ZERO, "the stop waited on a timer");
    assert!(!handle.lifetime_token().is_alive());
}

#[tokio::test]
async fn killing_the_actor_aborts_in_flight_handlers() {
    let (h, mut ev) = TestHandler::new();
    let (mut c_tx, server_rx) = tokio::io::duplex(4096);
    // Kept open for the whole test: the server's output has a reader.
    let (server_tx, _client_rx) = tokio::io::duplex(4096);
    let server = StdioServer::over(server_rx, server_tx, config());
    let handle = server.handle();
    let (actor, done) = Actor::spawn(None, ServeActor::new(), ServeArgs { server, handler: h })
        .await
        .unwrap();
    c_tx.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"wait\",\"params\":{\"gate\":\"g\"}}\n")
        .await
        .unwrap();
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(2)));
    actor.kill();
    tokio::time::timeout(PATIENCE, done).await.unwrap().unwrap();
    assert_eq!(next_event(&mut ev).await, Event::Dropped(json!(2)));
    assert!(!handle.lifetime_token().is_alive());
}

/// A parent that reports its children's supervision events.
struct Parent;

impl Actor for Parent {
    type Msg = ();
    type State = mpsc::UnboundedSender<String>;
    type Arguments = mpsc::UnboundedSender<String>;

    async fn pre_start(
        &self,
        _: ActorRef<()>,
        tx: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(tx)
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        evt: SupervisionEvent,
        tx: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let _ = tx.send(match evt {
            SupervisionEvent::ActorFailed(_, e) => format!("failed: {e}"),
            SupervisionEvent::ActorTerminated(_, _, why) => format!("terminated: {why:?}"),
            _ => return Ok(()),
        });
        Ok(())
    }
}

#[tokio::test]
async fn a_serving_error_fails_the_actor_for_its_supervisor() {
    struct Failing;
    impl tokio::io::AsyncRead for Failing {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Err(std::io::Error::other("stdin broke")))
        }
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (parent, parent_done) = Actor::spawn(None, Parent, tx).await.unwrap();
    let (h, _ev) = TestHandler::new();
    let server = StdioServer::over(Failing, tokio::io::sink(), config());
    Actor::spawn_linked(
        None,
        ServeActor::new(),
        ServeArgs { server, handler: h },
        parent.get_cell(),
    )
    .await
    .unwrap();
    let evt = tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        evt.starts_with("failed: ") && evt.contains("stdin broke"),
        "{evt}"
    );

    // A clean end is a normal termination with its reason.
    let (h, _ev) = TestHandler::new();
    let server = StdioServer::over(tokio::io::empty(), tokio::io::sink(), config());
    Actor::spawn_linked(
        None,
        ServeActor::new(),
        ServeArgs { server, handler: h },
        parent.get_cell(),
    )
    .await
    .unwrap();
    let evt = tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(evt, "terminated: Some(\"eof\")");
    parent.stop(None);
    parent_done.await.unwrap();
}
