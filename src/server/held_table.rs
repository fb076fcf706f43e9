//! The table of held calls (see the `held` module): each parked call
//! under its request state, with the client's scope it may be resumed in,
//! its bounds and its expiry.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::handle::SessionId;

use crate::jsonrpc::{codes, ErrorObject};
use crate::sync::AbortOnDrop;

use super::error::{AskError, HandlerError};
use super::server_config::ServerConfig;

/// The prefix of the request states of held calls.
pub(crate) const STATE_PREFIX: &str = "conduit-held.";

/// The request that parks or resumes a held call: its client's scope (the
/// id of a stdio or HTTP session, or of the 2026-07-28 requests of one
/// principal: a held call is resumed only by its own client), its method
/// and its tool's or prompt's name.
#[derive(Clone, Copy)]
pub(super) struct Asker<'a> {
    pub(super) scope: &'a SessionId,
    pub(super) method: &'a str,
    pub(super) target: Option<&'a str>,
}

/// A call parked until its client's retry.
pub(super) struct Parked {
    scope: SessionId,
    method: String,
    target: Option<String>,
    /// The held work's driver, of the type its `run_held` knows.
    pub(super) driver: Box<dyn Any + Send>,
    _timer: AbortOnDrop<()>,
}

#[derive(Default)]
struct Parking {
    calls: HashMap<String, Parked>,
    per_scope: HashMap<SessionId, usize>,
}

impl Parking {
    fn remove(&mut self, state: &str) -> Option<Parked> {
        let p = self.calls.remove(state)?;
        if let Some(n) = self.per_scope.get_mut(&p.scope) {
            *n -= 1;
            if *n == 0 {
                self.per_scope.remove(&p.scope);
            }
        }
        Some(p)
    }
}

/// The calls of one server (or stdio session) waiting for their clients'
/// next round, by request state.
#[derive(Default)]
pub(crate) struct HeldTable {
    parking: Mutex<Parking>,
}

impl HeldTable {
    /// Calls waiting now.
    pub(crate) fn len(&self) -> usize {
        crate::sync::lock(&self.parking).calls.len()
    }

    /// Drops every waiting call: their asks fail, their work is aborted.
    pub(crate) fn clear(&self) {
        let all = std::mem::take(&mut *crate::sync::lock(&self.parking));
        drop(all);
    }

    /// Parks `driver` for the retry of request `who`; its new request
    /// state, or the driver back with why it cannot wait.
    pub(super) fn park<D: Any + Send>(
        self: &Arc<Self>,
        config: &ServerConfig,
        who: Asker<'_>,
        driver: Box<D>,
    ) -> Result<String, (Box<D>, AskError)> {
        let max = config.get_max_held_calls().max(1);
        let quota = (max / 4).max(1);
        let scope = who.scope.clone();
        let Some(state) = mint() else {
            return Err((driver, AskError::TooManyHeld { max }));
        };
        let mut parking = crate::sync::lock(&self.parking);
        let held = parking.per_scope.get(&scope).copied().unwrap_or(0);
        if parking.calls.len() >= max || held >= quota {
            return Err((driver, AskError::TooManyHeld { max }));
        }
        let weak: Weak<HeldTable> = Arc::downgrade(self);
        let key = state.clone();
        let timeout = config.get_held_input_timeout();
        let timer = AbortOnDrop(tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            if let Some(table) = weak.upgrade() {
                let expired = crate::sync::lock(&table.parking).remove(&key);
                if expired.is_some() {
                    tracing::info!("a call waiting for its client's input expired; its asks fail and its work is aborted");
                }
                // Dropped outside the lock: its timer is this task.
                drop(expired);
            }
        }));
        *parking.per_scope.entry(scope.clone()).or_insert(0) += 1;
        parking.calls.insert(
            state.clone(),
            Parked {
                scope,
                method: who.method.to_owned(),
                target: who.target.map(str::to_owned),
                driver,
                _timer: timer,
            },
        );
        Ok(state)
    }

    /// Takes the call parked under `state`, if the client of request `who`
    /// may resume it; a call of another client stays where it is.
    pub(super) fn take(&self, state: &str, who: Asker<'_>) -> Result<Parked, HandlerError> {
        let mut parking = crate::sync::lock(&self.parking);
        let mine = parking
            .calls
            .get(state)
            .is_some_and(|p| p.scope == *who.scope);
        if !mine {
            return Err(invalid_state("unknown, expired or already used"));
        }
        let parked = parking.remove(state);
        drop(parking);
        let parked = parked.ok_or_else(|| invalid_state("unknown, expired or already used"))?;
        if parked.method != who.method || parked.target.as_deref() != who.target {
            return Err(invalid_state("it belongs to another request"));
        }
        Ok(parked)
    }
}

pub(super) fn invalid_state(why: &str) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("invalid requestState: {why}"),
    ))
}

/// A fresh request state: the prefix and 128 random bits.
fn mint() -> Option<String> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).ok()?;
    Some(
        std::iter::once(STATE_PREFIX.to_owned())
            .chain(raw.iter().map(|b| format!("{b:02x}")))
            .collect(),
    )
}
