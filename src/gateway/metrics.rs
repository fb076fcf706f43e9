//! `GET /metrics`: Prometheus text from the Prometheus project's own Rust
//! client, kept in the gateway (no process-wide recorder): calls by server,
//! method and outcome, their latency, calls in flight, server restarts,
//! answer bytes, and each server's readiness.
//!
//! Methods are labels only for the methods MCP defines (anything else is
//! `other`), so a client cannot grow the series without bound.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The methods that are labels as they are.
const KNOWN: &[&str] = &[
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
];

/// `method` as a label.
pub(crate) fn method_label(method: &str) -> &'static str {
    KNOWN
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Call {
    server: String,
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Timing {
    server: String,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Server {
    server: String,
}

fn latency() -> Histogram {
    // 100 µs to about 3.3 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

/// The gateway's metrics.
pub(crate) struct Metrics {
    registry: Registry,
    calls: Family<Call, Counter>,
    duration: Family<Timing, Histogram, fn() -> Histogram>,
    in_flight: Family<Server, Gauge>,
    restarts: Family<Server, Counter>,
    bytes: Family<Server, Counter>,
    ready: Family<Server, Gauge>,
    held: Gauge,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("mcp_gateway");
        let calls = Family::<Call, Counter>::default();
        let duration =
            Family::<Timing, Histogram, fn() -> Histogram>::new_with_constructor(latency);
        let in_flight = Family::<Server, Gauge>::default();
        let restarts = Family::<Server, Counter>::default();
        let bytes = Family::<Server, Counter>::default();
        let ready = Family::<Server, Gauge>::default();
        let held = Gauge::default();
        registry.register(
            "requests",
            "Requests sent on to a server, by server, method and outcome (ok, error, input_required, cancelled)",
            calls.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from a request's arrival to its answer, by server and method",
            duration.clone(),
        );
        registry.register(
            "requests_in_flight",
            "Requests waiting for their server's answer",
            in_flight.clone(),
        );
        registry.register(
            "server_restarts",
            "Times a server was restarted after it exited or broke its pipe",
            restarts.clone(),
        );
        registry.register(
            "response_bytes",
            "Bytes of the servers' answers",
            bytes.clone(),
        );
        registry.register(
            "server_ready",
            "1 when the server is ready and listed, else 0",
            ready.clone(),
        );
        registry.register(
            "held_calls",
            "2026-07-28 calls to legacy servers waiting for their client's input",
            held.clone(),
        );
        Metrics {
            registry,
            calls,
            duration,
            in_flight,
            restarts,
            bytes,
            ready,
            held,
        }
    }

    /// Counts the call log's dropped lines too (`call_log`'s counter).
    pub(crate) fn count_call_log_drops(&mut self, dropped: Counter) {
        self.registry.register(
            "call_log_dropped_lines",
            "Call log lines dropped because its writer was behind by more than its queue's bytes",
            dropped,
        );
    }

    /// Counts the servers' requests the gateway refused (the relay's
    /// counter).
    pub(crate) fn count_server_request_refusals(
        &mut self,
        refused: Family<super::server_requests::Refused, Counter>,
    ) {
        self.registry.register(
            "server_requests_refused",
            "Requests of servers the gateway refused to pass on, by server and reason (several_clients, client_share, no_call)",
            refused,
        );
    }

    pub(crate) fn started(&self, server: &str) {
        self.in_flight
            .get_or_create(&Server {
                server: server.to_owned(),
            })
            .inc();
    }

    pub(crate) fn finished(
        &self,
        server: &str,
        method: &'static str,
        outcome: &'static str,
        seconds: f64,
        bytes: u64,
    ) {
        let s = Server {
            server: server.to_owned(),
        };
        self.in_flight.get_or_create(&s).dec();
        self.calls
            .get_or_create(&Call {
                server: server.to_owned(),
                method,
                outcome,
            })
            .inc();
        self.duration
            .get_or_create(&Timing {
                server: server.to_owned(),
                method,
            })
            .observe(seconds);
        if bytes > 0 {
            self.bytes.get_or_create(&s).inc_by(bytes);
        }
    }

    pub(crate) fn restarted(&self, server: &str) {
        self.restarts
            .get_or_create(&Server {
                server: server.to_owned(),
            })
            .inc();
    }

    /// The text of `GET /metrics`, the gauges of the moment set first.
    pub(crate) fn render(&self, ready: &[(String, bool)], held: usize) -> String {
        // The servers of the moment only: one removed (`--watch`) is no
        // longer reported, ready or not.
        self.ready.clear();
        for (server, up) in ready {
            self.ready
                .get_or_create(&Server {
                    server: server.clone(),
                })
                .set(i64::from(*up));
        }
        self.held.set(i64::try_from(held).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
