//! What `mcp serve` answers while its servers start (up to the ready wait,
//! 60 s by default): `GET /health` says 503 `"starting"` at once, so an
//! orchestrator's probe gets an answer instead of a timeout, and every other
//! request waits for the gateway and then goes to it, so an early
//! `tools/list` sees what it would see after the start.

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::Response;
use serde_json::json;
use tokio::sync::watch;
use tower_service::Service;

/// Where the gateway is in its life, as the early listener sees it.
#[derive(Clone)]
enum Phase {
    Starting,
    Up(axum::Router),
    /// Stopped before it was up (a signal during the start).
    Gone,
}

/// The switch from "starting" to the gateway's own routes.
pub(super) struct Starting {
    phase: watch::Sender<Phase>,
}

impl Starting {
    /// The early app (to serve at once) and its switch; `names` are the
    /// servers being started and `lazy` those started on first use, shown
    /// by `/health` as the gateway shows them.
    pub(super) fn new(names: Vec<String>, lazy: Vec<String>) -> (Starting, axum::Router) {
        let mut servers = serde_json::Map::new();
        for n in names {
            servers.insert(n, json!({ "status": "starting", "tools": 0 }));
        }
        for n in lazy {
            servers.insert(n, json!({ "status": "lazy" }));
        }
        let health = json!({ "status": "starting", "servers": servers }).to_string();
        let (phase, rx) = watch::channel(Phase::Starting);
        let app = axum::Router::new().fallback(move |req: Request| {
            let rx = rx.clone();
            let health = health.clone();
            async move { Ok::<_, Infallible>(answer(rx, health, req).await) }
        });
        (Starting { phase }, app)
    }

    /// From now on every request goes to `router` (the held ones too).
    pub(super) fn up(&self, router: axum::Router) {
        self.phase.send_replace(Phase::Up(router));
    }

    /// The start was given up: held requests get 503.
    pub(super) fn gone(&self) {
        self.phase.send_replace(Phase::Gone);
    }
}

async fn answer(mut rx: watch::Receiver<Phase>, health: String, req: Request) -> Response {
    let is_health = req.uri().path() == "/health" && req.method() == Method::GET;
    let phase = rx.borrow().clone();
    let phase = match phase {
        Phase::Starting if is_health => return plain(StatusCode::SERVICE_UNAVAILABLE, health),
        // Held until the start ends; a sender dropped counts as gone.
        Phase::Starting => match rx.wait_for(|p| !matches!(p, Phase::Starting)).await {
            Ok(p) => p.clone(),
            Err(_) => Phase::Gone,
        },
        other => other,
    };
    match phase {
        Phase::Up(mut router) => match router.call(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        },
        Phase::Starting | Phase::Gone => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "status": "stopping" }).to_string(),
        ),
    }
}

fn plain(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}
