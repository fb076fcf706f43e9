//! The data of a 2025-11-25 session, apart from its live parts, as a
//! record that can leave its process; and the store of such records.
//!
//! A live session has streams, replay buffers, requests in flight and
//! pending server-to-client requests: those stay with the process serving
//! it. Its record keeps what another process needs to serve its next
//! request: who owns it, what the client declared, its log level and
//! subscriptions, and when it expires.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{Era, LoggingLevel};

use super::principal::{Owner, PeerGroup, Principal};

/// An error of a sealer of your own.
pub type SealError = Box<dyn std::error::Error + Send + Sync>;

/// The data of a 2025-11-25 session, without its live parts.
///
/// It serialises with serde, names its format's [`version`](Self::version),
/// and can be sealed by a key you hold with [`seal`](Self::seal) and
/// [`open`](Self::open), so that a record that travels is neither read nor
/// forged on its way.
///
/// ```
/// use conduit_mcp::server::http::{Owner, Seal, SealError, SessionRecord};
///
/// struct Xor(u8);
/// impl Seal for Xor {
///     fn seal(&self, plain: &[u8]) -> Vec<u8> {
///         plain.iter().map(|b| b ^ self.0).collect()
///     }
///     fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
///         Ok(sealed.iter().map(|b| b ^ self.0).collect())
///     }
/// }
///
/// let record = SessionRecord::new("4f2a", Owner::Unknown);
/// let sealed = record.seal(&Xor(7));
/// assert_eq!(SessionRecord::open(&sealed, &Xor(7)).unwrap(), record);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The record's format. A record of another version is refused.
    pub version: u32,
    /// The session's id, as in `MCP-Session-Id`.
    pub id: String,
    /// Whose session it is.
    #[serde(with = "owner")]
    pub owner: Owner,
    /// The protocol version `initialize` agreed on.
    pub protocol_version: Option<String>,
    /// The capabilities the client declared.
    pub client_capabilities: Option<Value>,
    /// The client's `clientInfo`.
    pub client_info: Option<Value>,
    /// The era of the session's latest request.
    pub era: Option<Era>,
    /// Whether `notifications/initialized` was received.
    pub initialized: bool,
    /// The level of the latest `logging/setLevel`.
    pub log_level: Option<LoggingLevel>,
    /// The URIs of the session's resource subscriptions.
    pub subscriptions: Vec<String>,
    /// When the session expires unless a request comes first.
    pub expires: SystemTime,
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record is of a format this version of the crate does not read.
    #[error(
        "session record of version {found}, this server reads version {}",
        SessionRecord::VERSION
    )]
    Version {
        /// The record's version.
        found: u32,
    },
    /// The sealer refused to open the record: another key, or a forgery.
    #[error("the session record could not be opened: {0}")]
    Seal(#[source] SealError),
    /// The opened bytes are no session record.
    #[error("malformed session record: {0}")]
    Format(#[from] serde_json::Error),
}

/// Seals a record's bytes with a key the caller holds, and opens them
/// again.
///
/// The crate brings no cryptography: implement it with an authenticated
/// cipher of your choice, whose `open` fails on bytes it did not seal.
pub trait Seal: Send + Sync {
    /// The sealed form of `plain`.
    fn seal(&self, plain: &[u8]) -> Vec<u8>;
    /// The bytes `sealed` was made from; an error when this key did not
    /// seal them or they were changed.
    fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, SealError>;
}

impl SessionRecord {
    /// The version of the records this crate writes and reads.
    pub const VERSION: u32 = 1;

    /// A record of session `id` of `owner`, before `initialize` told
    /// anything of the client. It expires now.
    pub fn new(id: impl Into<String>, owner: Owner) -> Self {
        SessionRecord {
            version: Self::VERSION,
            id: id.into(),
            owner,
            protocol_version: None,
            client_capabilities: None,
            client_info: None,
            era: None,
            initialized: false,
            log_level: None,
            subscriptions: Vec::new(),
            expires: SystemTime::now(),
        }
    }

    /// The record as JSON, sealed by `sealer`.
    pub fn seal(&self, sealer: &dyn Seal) -> Vec<u8> {
        // A record's members are strings, numbers and JSON values: its
        // serialisation cannot fail.
        sealer.seal(&serde_json::to_vec(self).unwrap_or_default())
    }

    /// The record `sealed` holds, opened by `sealer`; refused when it does
    /// not open, is no record, or is of another version.
    pub fn open(sealed: &[u8], sealer: &dyn Seal) -> Result<Self, RecordError> {
        let plain = sealer.open(sealed).map_err(RecordError::Seal)?;
        #[derive(Deserialize)]
        struct Versioned {
            version: u32,
        }
        let found = serde_json::from_slice::<Versioned>(&plain)?.version;
        if found != Self::VERSION {
            return Err(RecordError::Version { found });
        }
        Ok(serde_json::from_slice(&plain)?)
    }
}

/// Where an HTTP server keeps its sessions' records, so that a session
/// minted by one server can be served by another that shares the store.
///
/// A server saves a session's record when `initialize` minted it and
/// removes it when the session ends. A request naming a session the
/// server does not hold live is served from the record this store loads:
/// the server materialises a live session from it, whoever minted it.
///
/// The default is [`MemoryStore`], which keeps them in this process.
///
/// # Caveats
///
/// The record is saved when the session is minted: a log level or a
/// subscription set later lives with the serving process only.
pub trait SessionStore: Send + Sync + 'static {
    /// Keeps `record`, in place of the one of its id.
    fn save(&self, record: SessionRecord);
    /// The record of session `id`, if the store holds one.
    fn load(&self, id: &str) -> Option<SessionRecord>;
    /// Forgets the record of session `id`: the session ended.
    fn remove(&self, id: &str);
}

/// Session records kept in this process: the default [`SessionStore`].
#[derive(Debug, Default)]
pub struct MemoryStore(Mutex<HashMap<String, SessionRecord>>);

impl SessionStore for MemoryStore {
    fn save(&self, record: SessionRecord) {
        crate::sync::lock(&self.0).insert(record.id.clone(), record);
    }

    fn load(&self, id: &str) -> Option<SessionRecord> {
        crate::sync::lock(&self.0).get(id).cloned()
    }

    fn remove(&self, id: &str) {
        crate::sync::lock(&self.0).remove(id);
    }
}

/// An [`Owner`] as a record holds it.
mod owner {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Wire {
        Principal(String),
        Loopback,
        V4(Ipv4Addr),
        V6Net(u64),
        Unknown,
    }

    pub(super) fn serialize<S: serde::Serializer>(o: &Owner, s: S) -> Result<S::Ok, S::Error> {
        match o {
            Owner::Principal(p) => Wire::Principal(p.name().to_owned()),
            Owner::Peer(PeerGroup::Loopback) => Wire::Loopback,
            Owner::Peer(PeerGroup::V4(ip)) => Wire::V4(*ip),
            Owner::Peer(PeerGroup::V6Net(net)) => Wire::V6Net(*net),
            Owner::Unknown => Wire::Unknown,
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Owner, D::Error> {
        Ok(match Wire::deserialize(d)? {
            Wire::Principal(name) => Owner::Principal(Principal::new(name)),
            Wire::Loopback => Owner::Peer(PeerGroup::Loopback),
            Wire::V4(ip) => Owner::Peer(PeerGroup::V4(ip)),
            Wire::V6Net(net) => Owner::Peer(PeerGroup::V6Net(net)),
            Wire::Unknown => Owner::Unknown,
        })
    }
}
