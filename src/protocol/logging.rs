//! Logging: levels, the 2025-11-25 `logging/setLevel`, `notifications/message`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

string_enum! {
    /// The severity of a log message (RFC 5424). Ordered by
    /// [`severity`](Self::severity), not by the derive.
    LoggingLevel {
        /// Debugging detail.
        Debug = "debug",
        /// Information.
        Info = "info",
        /// A normal but significant event.
        Notice = "notice",
        /// A warning.
        Warning = "warning",
        /// An error.
        Error = "error",
        /// A critical condition.
        Critical = "critical",
        /// Action must be taken at once.
        Alert = "alert",
        /// The system is unusable.
        Emergency = "emergency",
    }
}

impl LoggingLevel {
    /// 0 (debug) to 7 (emergency); an unknown level counts as debug.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::LoggingLevel;
    ///
    /// assert!(LoggingLevel::Error.severity() > LoggingLevel::Warning.severity());
    /// assert_eq!(LoggingLevel::from("verbose").severity(), 0); // unknown: as debug
    /// ```
    pub fn severity(&self) -> u8 {
        match self {
            LoggingLevel::Debug | LoggingLevel::Other(_) => 0,
            LoggingLevel::Info => 1,
            LoggingLevel::Notice => 2,
            LoggingLevel::Warning => 3,
            LoggingLevel::Error => 4,
            LoggingLevel::Critical => 5,
            LoggingLevel::Alert => 6,
            LoggingLevel::Emergency => 7,
        }
    }
}

schema_object! {
    /// The parameters of the 2025-11-25 `logging/setLevel`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct SetLevelParams {
        /// The least severe level the client wants.
        pub level: LoggingLevel,
    }
}

schema_object! {
    /// The parameters of `notifications/message`: one log entry.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct LoggingMessageParams {
        /// Its severity.
        pub level: LoggingLevel,
        /// What is logged (any JSON).
        pub data: Value,
        /// The logger's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub logger: Option<String>,
    }
}
