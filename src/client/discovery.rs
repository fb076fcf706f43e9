//! Judging the answers to `server/discover` and `initialize` (pure
//! functions, so every branch of the stdio discovery rules is unit-tested).
//!
//! The rules (dual-era client on stdio): a DiscoverResult means 2026-07-28; a
//! recognised 2026-07-28 error (-32022 with `data.supported`) means 2026-07-28 with
//! one of the supported versions, never a fallback; any other error means
//! 2025-11-25. The fallback is not keyed to one error code. A timeout (handled by
//! the Connection) also means 2025-11-25; a DiscoverResult that arrives after the
//! probe timed out is ignored as a response to an abandoned request (the
//! probe was cancelled with `notifications/cancelled` and `initialize` is
//! already on its way), so the 2025-11-25 verdict stands for that process.

use serde_json::Value;

use super::status::ServerSession;
use crate::jsonrpc::{codes, Outcome};
use crate::protocol::{meta, Era, Implementation, STATEFUL_VERSIONS, STATELESS_VERSIONS};

/// What an answer to `server/discover` means.
#[derive(Debug, PartialEq)]
// A verdict lives for one match: boxing the session would cost more than
// the size difference.
#[allow(clippy::large_enum_variant)]
pub(crate) enum DiscoverVerdict {
    /// A 2026-07-28 server; ready.
    Stateless(ServerSession),
    /// A 2026-07-28 server that wants another version: probe again with it.
    Retry(String),
    /// A 2026-07-28 server with no version in common: a clear, final error.
    Incompatible(String),
    /// Not a 2026-07-28 server: use `initialize`.
    Stateful(String),
}

/// Judges the answer to a probe that requested `requested`.
pub(crate) fn judge(outcome: &Outcome, requested: &str) -> DiscoverVerdict {
    match outcome {
        Outcome::Result(raw) => {
            let Ok(v) = raw.parse::<Value>() else {
                return DiscoverVerdict::Stateful("discover result is not JSON".into());
            };
            let supported = strings(v.get("supportedVersions"));
            if supported.is_empty() {
                return DiscoverVerdict::Stateful(
                    "discover result has no supportedVersions".into(),
                );
            }
            let chosen = if supported.iter().any(|s| s == requested) {
                requested.to_owned()
            } else if let Some(v) = STATELESS_VERSIONS
                .iter()
                .find(|m| supported.iter().any(|s| s == *m))
            {
                return DiscoverVerdict::Retry((*v).to_owned());
            } else if supported
                .iter()
                .any(|s| STATEFUL_VERSIONS.contains(&s.as_str()))
            {
                return DiscoverVerdict::Stateful(format!(
                    "server supports only legacy versions {supported:?}"
                ));
            } else {
                return DiscoverVerdict::Incompatible(format!(
                    "server supports {supported:?}; this client supports {STATELESS_VERSIONS:?} and {STATEFUL_VERSIONS:?}"
                ));
            };
            let info = v
                .get("_meta")
                .and_then(|m| m.get(meta::SERVER_INFO))
                .or_else(|| v.get("serverInfo"));
            DiscoverVerdict::Stateless(session(&v, Era::Stateless, chosen, info))
        }
        Outcome::Error(e) if e.code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported = strings(e.data.as_ref().and_then(|d| d.get("supported")));
            if supported.is_empty() {
                // -32022 without the stateless data shape is not recognised.
                return DiscoverVerdict::Stateful(format!("discover refused: {e}"));
            }
            // The version asked for first when it is listed (a server that
            // refused the request for another reason, such as a missing or
            // mismatched `MCP-Protocol-Version` header over HTTP, and says
            // it supports it: the Connection retries once, bounded).
            match STATELESS_VERSIONS
                .iter()
                .filter(|m| supported.iter().any(|s| s == **m))
                .min_by_key(|m| **m != requested)
            {
                Some(v) => DiscoverVerdict::Retry((*v).to_owned()),
                None => DiscoverVerdict::Incompatible(format!(
                    "server supports protocol versions {supported:?}, this client {STATELESS_VERSIONS:?}"
                )),
            }
        }
        Outcome::Error(e) => DiscoverVerdict::Stateful(format!("discover refused: {e}")),
    }
}

/// Judges the answer to `initialize`.
pub(crate) fn judge_initialize(outcome: &Outcome) -> Result<ServerSession, String> {
    match outcome {
        Outcome::Error(e) => Err(format!("initialize refused: {e}")),
        Outcome::Result(raw) => {
            let v: Value = raw
                .parse()
                .map_err(|e| format!("initialize result is not JSON: {e}"))?;
            let version = v
                .get("protocolVersion")
                .and_then(Value::as_str)
                .ok_or("initialize result has no protocolVersion")?;
            if !STATEFUL_VERSIONS.contains(&version) {
                return Err(format!(
                    "server negotiated protocol version {version:?}, which this client does not support (it supports {STATEFUL_VERSIONS:?})"
                ));
            }
            Ok(session(
                &v,
                Era::Stateful,
                version.to_owned(),
                v.get("serverInfo"),
            ))
        }
    }
}

/// A session from a DiscoverResult or InitializeResult `v`.
fn session(v: &Value, era: Era, protocol_version: String, info: Option<&Value>) -> ServerSession {
    ServerSession {
        era,
        protocol_version,
        server_info: info.and_then(|s| serde_json::from_value::<Implementation>(s.clone()).ok()),
        capabilities: v
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({})),
        instructions: v
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
        pid: None,
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorObject;
    use crate::protocol::STATELESS_VERSION;
    use serde_json::json;

    fn ok(v: Value) -> Outcome {
        Outcome::Result(crate::jsonrpc::RawJson::from_value(&v).unwrap())
    }

    #[test]
    fn discover_result_is_modern() {
        let r = ok(
            json!({"supportedVersions":[STATELESS_VERSION],"capabilities":{"tools":{}},
            "_meta":{(meta::SERVER_INFO):{"name":"s","version":"1"}},"instructions":"hi"}),
        );
        match judge(&r, STATELESS_VERSION) {
            DiscoverVerdict::Stateless(s) => {
                assert_eq!(s.protocol_version, STATELESS_VERSION);
                assert_eq!(s.server_info, Some(Implementation::new("s", "1")));
                assert_eq!(s.instructions.as_deref(), Some("hi"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fallback_is_not_keyed_to_one_code() {
        for code in [-32601, -32600, -32602, -32603, -1, 42] {
            let e = Outcome::Error(ErrorObject::new(code, "nope"));
            assert!(
                matches!(judge(&e, STATELESS_VERSION), DiscoverVerdict::Stateful(_)),
                "{code}"
            );
        }
    }

    #[test]
    fn unsupported_version_never_falls_back() {
        let e = Outcome::Error(
            ErrorObject::new(-32022, "unsupported")
                .with_data(json!({"supported":[STATELESS_VERSION],"requested":"2099-01-01"})),
        );
        assert_eq!(
            judge(&e, "2099-01-01"),
            DiscoverVerdict::Retry(STATELESS_VERSION.into())
        );
        let e = Outcome::Error(
            ErrorObject::new(-32022, "unsupported")
                .with_data(json!({"supported":["2099-01-01"],"requested":STATELESS_VERSION})),
        );
        assert!(matches!(
            judge(&e, STATELESS_VERSION),
            DiscoverVerdict::Incompatible(_)
        ));
        // Refused, though it lists the version requested: retry with it.
        let e = Outcome::Error(
            ErrorObject::new(-32022, "unsupported")
                .with_data(json!({"supported":[STATELESS_VERSION],"requested":STATELESS_VERSION})),
        );
        assert_eq!(
            judge(&e, STATELESS_VERSION),
            DiscoverVerdict::Retry(STATELESS_VERSION.into())
        );
    }

    #[test]
    fn initialize_checks_version() {
        assert!(judge_initialize(&ok(
            json!({"protocolVersion":"2025-06-18","capabilities":{}})
        ))
        .is_ok());
        let err = judge_initialize(&ok(json!({"protocolVersion":"1999-01-01"}))).unwrap_err();
        assert!(err.contains("1999-01-01"), "{err}");
    }
}
