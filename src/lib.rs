//! conduit-mcp: the Model Context Protocol stdio transport on ractor.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod client;
pub mod error;
pub mod framing;
pub mod jsonrpc;
pub mod protocol;
pub mod secret;
pub mod server;
pub mod transport;

pub use client::config::{Backoff, ClientConfig, EraPreference, StderrMode};
pub use client::handler::{ClientHandler, InboundRequest};
pub use client::session::{ServerSession, Status};
pub use client::{
    CancelToken, Client, ClientShutdown, Progress, RequestOptions, StartError, StartOptions,
};
pub use error::{CloseReason, ConfigError, Error, ExitStatus, SpawnError};
pub use jsonrpc::{ErrorObject, Notification, RequestId};
pub use protocol::{Era, Implementation};
pub use secret::{EnvValue, Secret};
pub use transport::{ShutdownHandle, ShutdownReport};
