//! Discovery and the handshake: the `server/discover` probe, the 2025-11-25
//! `initialize`, and how their answers (and a late probe answer) settle the
//! era. The judgement itself is in [`discovery`].

use std::sync::Arc;

use ractor::ActorRef;
use serde_json::{json, Value};
use tracing::{debug, info, warn};

use super::{ConnectionMsg, ConnectionState, LinkPhase, MAX_REPROBES};
use crate::client::direct::{Direct, MetaCache};
use crate::client::discovery::{self, DiscoverVerdict};
use crate::client::waiters::Waiter;
use crate::client::EraPreference;
use crate::client::LifecycleEvent;
use crate::client::{ServerSession, Status};
use crate::error::CloseReason;
use crate::jsonrpc::{encode, Outcome, RequestId};
use crate::protocol::{meta, methods, Era, LATEST_STATEFUL_VERSION, STATELESS_VERSION};

impl ConnectionState {
    pub(super) fn probe(&mut self, myself: &ActorRef<ConnectionMsg>, version: String) {
        let id = self.next_id();
        let params = json!({ "_meta": self.stateless_meta(&version) });
        let Ok(line) = encode::request(&id, methods::DISCOVER, Some(&params)) else {
            return;
        };
        self.shared.pending().insert(id.clone(), Waiter::Probe);
        self.phase = LinkPhase::Probing {
            id,
            version: version.clone(),
        };
        debug!(server = %self.name(), version = %version, "probing with server/discover");
        self.send_control(line);
        if self.shared.config().get_era() == EraPreference::Auto {
            let gen = self.gen;
            self.handshake_timer = Some(
                myself.send_after(self.shared.config().get_probe_timeout(), move || {
                    ConnectionMsg::ProbeTimeout { gen }
                }),
            );
        } else {
            let gen = self.gen;
            self.handshake_timer = Some(
                myself.send_after(self.shared.config().get_init_timeout(), move || {
                    ConnectionMsg::InitTimeout { gen }
                }),
            );
        }
    }

    pub(super) fn initialize(&mut self, myself: &ActorRef<ConnectionMsg>) {
        let id = self.next_id();
        let cfg = self.shared.config();
        let params = json!({
            "protocolVersion": LATEST_STATEFUL_VERSION,
            "capabilities": cfg.get_capabilities(),
            "clientInfo": cfg.get_client_info(),
        });
        let Ok(line) = encode::request(&id, methods::INITIALIZE, Some(&params)) else {
            return;
        };
        self.shared.pending().insert(id.clone(), Waiter::Initialize);
        self.phase = LinkPhase::Initializing;
        let init_timeout = cfg.get_init_timeout();
        self.send_control(line);
        let gen = self.gen;
        self.handshake_timer =
            Some(myself.send_after(init_timeout, move || ConnectionMsg::InitTimeout { gen }));
    }

    pub(super) fn stateless_meta(&self, version: &str) -> Value {
        let cfg = self.shared.config();
        json!({
            meta::PROTOCOL_VERSION: version,
            meta::CLIENT_CAPABILITIES: cfg.get_capabilities(),
            meta::CLIENT_INFO: cfg.get_client_info(),
        })
    }

    pub(super) fn ready(&mut self, session: ServerSession) {
        self.meta_cache = match session.era {
            Era::Stateless => match self.stateless_meta(&session.protocol_version) {
                Value::Object(map) => serde_json::value::to_raw_value(&map)
                    .ok()
                    .map(|raw| Arc::new(MetaCache::new(map, raw))),
                _ => None,
            },
            Era::Stateful => None,
        };
        let session = Arc::new(session);
        info!(
            server = %self.name(), pid = session.pid, era = %session.era,
            version = %session.protocol_version, "server ready"
        );
        self.shared.server_ready();
        if let Some(t) = self.handshake_timer.take() {
            t.abort();
        }
        self.shared.emit(LifecycleEvent::Ready {
            name: self.shared.name().to_owned(),
            session: session.clone(),
        });
        self.phase = LinkPhase::Ready(session.clone());
        // The status first: whoever gets an answer from this server finds
        // the client Ready (a caller waiting for the path wakes just after).
        self.shared.set_status(Status::Ready(session.clone()));
        if let Some(link) = self.shared.link() {
            self.shared.pending().accept(self.gen);
            self.shared.publish_direct(Arc::new(Direct::new(
                self.shared.name().to_owned(),
                self.gen,
                session.era,
                self.meta_cache.clone(),
                link,
                self.shared.pending().clone(),
            )));
        }
    }

    pub(super) fn probe_answered(&mut self, myself: &ActorRef<ConnectionMsg>, outcome: Outcome) {
        let LinkPhase::Probing { version, .. } = &self.phase else {
            return;
        };
        let requested = version.clone();
        let pid = self.shared.link().and_then(|l| l.pid());
        let pinned = self.shared.config().get_era() == EraPreference::Stateless;
        match discovery::judge(&outcome, &requested) {
            DiscoverVerdict::Stateless(mut session) => {
                session.pid = pid;
                self.ready(session);
            }
            DiscoverVerdict::Retry(v) if v == requested && self.reprobes >= MAX_REPROBES => self
                .handshake_failed(format!(
                    "server refused protocol version {v} {MAX_REPROBES} times while listing it as supported"
                )),
            DiscoverVerdict::Retry(v) => {
                if v == requested {
                    self.reprobes += 1;
                }
                info!(server = %self.name(), version = %v, "server asked for another modern version");
                self.probe(myself, v)
            }
            DiscoverVerdict::Incompatible(why) => self.handshake_failed(why),
            DiscoverVerdict::Stateful(why) if pinned => {
                self.handshake_failed(format!("era pinned to modern, but {why}"))
            }
            DiscoverVerdict::Stateful(why) => {
                info!(server = %self.name(), reason = %why, "2025-11-25 era");
                self.initialize(myself)
            }
        }
    }

    /// The answer to a probe that timed out. Servers answer in order, so a
    /// DiscoverResult that arrives while `initialize` is still unanswered
    /// means a 2026-07-28 server that was merely slow to start (a cold `npx` or
    /// Python start): it settles the era as 2026-07-28 and the `initialize`
    /// answer is then ignored. Once the 2025-11-25 era is established, or if
    /// the late answer is an error, it is ignored.
    pub(super) fn late_probe_answered(&mut self, outcome: Outcome) {
        if !matches!(self.phase, LinkPhase::Initializing) {
            debug!(server = %self.name(), "late server/discover answer ignored: era already settled");
            return;
        }
        if let DiscoverVerdict::Stateless(mut session) =
            discovery::judge(&outcome, STATELESS_VERSION)
        {
            info!(server = %self.name(), "late server/discover answer before initialize's: 2026-07-28 era");
            session.pid = self.shared.link().and_then(|l| l.pid());
            self.shared.pending().forget_initialize();
            self.ready(session);
        }
    }

    pub(super) fn initialize_answered(
        &mut self,
        myself: &ActorRef<ConnectionMsg>,
        outcome: Outcome,
    ) {
        if !matches!(self.phase, LinkPhase::Initializing) {
            return;
        }
        // A stateless server that refuses `initialize` with -32022 and lists
        // stateless versions is stateless: probe again (now warm), never give up.
        if let Outcome::Error(e) = &outcome {
            if let DiscoverVerdict::Retry(v) = discovery::judge(&outcome, "") {
                if self.reprobes < MAX_REPROBES {
                    self.reprobes += 1;
                    info!(server = %self.name(), error = %e, version = %v, "initialize refused by a modern server: probing again");
                    self.probe(myself, v);
                    return;
                }
            }
        }
        match discovery::judge_initialize(&outcome) {
            Ok(mut session) => {
                session.pid = self.shared.link().and_then(|l| l.pid());
                self.send_notification(methods::INITIALIZED, None::<&Value>);
                self.ready(session);
            }
            Err(why) => self.handshake_failed(why),
        }
    }

    /// A handshake failure is final: restarting would meet the same server.
    /// The client gives up once the link has closed.
    pub(super) fn handshake_failed(&mut self, why: String) {
        warn!(server = %self.name(), reason = %why, "handshake failed; giving up");
        self.give_up_after_close = Some(format!("handshake failed: {why}"));
        if let Some(link) = self.shared.link() {
            link.close(CloseReason::Handshake(why));
        }
    }

    /// The link says the probe or `initialize` `id` will get no answer
    /// (its HTTP answer is not JSON-RPC, or over a limit): the probe falls
    /// back to `initialize` at once (as after its timeout), `initialize`
    /// fails the handshake at once with the reason.
    pub(super) fn handshake_unanswered(
        &mut self,
        myself: &ActorRef<ConnectionMsg>,
        id: &RequestId,
        problem: String,
    ) {
        let probing = matches!(&self.phase, LinkPhase::Probing { id: p, .. } if p == id);
        if probing && self.shared.pending().remove(id).is_some() {
            if self.shared.config().get_era() == EraPreference::Stateless {
                return self.handshake_failed(format!("server/discover got no answer: {problem}"));
            }
            info!(server = %self.name(), reason = %problem, "server/discover got no answer: 2025-11-25 era");
            return self.initialize(myself);
        }
        if matches!(self.phase, LinkPhase::Initializing)
            && matches!(self.shared.pending().remove(id), Some(Waiter::Initialize))
        {
            self.handshake_failed(format!("initialize got no answer: {problem}"));
        }
    }

    /// No answer to `server/discover` within the probe timeout: 2025-11-25.
    pub(super) fn probe_timed_out(&mut self, myself: &ActorRef<ConnectionMsg>) {
        if let LinkPhase::Probing { id, .. } = &self.phase {
            let id = id.clone();
            info!(server = %self.name(), timeout = ?self.shared.config().get_probe_timeout(), "no answer to server/discover: 2025-11-25 era");
            // Kept pending: a stateless server slow to start answers it
            // before `initialize` (see `late_probe_answered`).
            self.shared.pending().insert(id.clone(), Waiter::LateProbe);
            self.send_cancelled(&id, "discovery probe timed out");
            self.initialize(myself);
        }
    }
}
