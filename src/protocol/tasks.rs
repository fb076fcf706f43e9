//! 2025-11-25 (experimental) tasks: long-running requests polled
//! with `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`. Absent
//! from the 2026-07-28 revision.

use serde::{Deserialize, Serialize};

use super::common::{Cursor, Extra};

/// Asks for a request to run as a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// How long to keep the task's result after it ends (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// Where a task is.
    TaskStatus {
        /// Running.
        Working = "working",
        /// Waiting for input.
        InputRequired = "input_required",
        /// Done.
        Completed = "completed",
        /// Failed.
        Failed = "failed",
        /// Cancelled.
        Cancelled = "cancelled",
    }
}

/// A task's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// A message about the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long its result is kept (ms); `null` for unlimited.
    pub ttl: Option<u64>,
    /// Suggested polling interval (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
}

schema_object! {
    /// A task and the members around it: the result of `tasks/get` and
    /// `tasks/cancel`, and the parameters of `notifications/tasks/status`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct TaskState {
        /// The task.
        #[serde(flatten)]
        pub task: Task,
    }
}

schema_object! {
    /// The result of a request run as a task: the task it became.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct CreateTaskResult {
        /// The task.
        pub task: Task,
    }
}

schema_object! {
    /// The parameters of `tasks/get`, `tasks/result` and `tasks/cancel`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct TaskParams {
        /// The task.
        pub task_id: String,
    }
}

schema_object! {
    /// The result of `tasks/list` (one page).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListTasksResult {
        /// The tasks.
        pub tasks: Vec<Task>,
        /// The next page's cursor, if there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub next_cursor: Option<Cursor>,
    }
}
