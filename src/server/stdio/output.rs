//! Where the server's output goes: a stream (the caller's, or process
//! stdout reopened as a non-blocking pipe), or a thread writing the
//! process's stdout. The queue in front of it and the task that drains
//! it are the shared ones of [`line_io`](crate::line_io).

use std::io;
use std::pin::Pin;

use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::line_io::writer::{LineSink, WriteFailure};
use crate::line_io::QueueReceiver;

/// Where the writer's bytes go.
pub(crate) enum Sink {
    /// A stream: the caller's, or process stdout as a non-blocking pipe.
    Async(Pin<Box<dyn AsyncWrite + Send>>),
    /// A dedicated thread writing a blocking file descriptor (process stdout).
    Thread(super::process_stdio::ThreadSink),
}

impl LineSink for Sink {
    async fn write(&mut self, batch: &mut Vec<u8>, _: &QueueReceiver) -> Result<(), WriteFailure> {
        let written = match self {
            Sink::Async(w) => match w.write_all(batch).await {
                Ok(()) => w.flush().await,
                Err(e) => Err(e),
            },
            // The thread takes the buffer: no copy.
            Sink::Thread(t) => t.write(std::mem::take(batch)).await,
        };
        written.map_err(WriteFailure::Io)
    }

    async fn finish(&mut self) -> io::Result<()> {
        match self {
            Sink::Async(w) => w.flush().await,
            Sink::Thread(t) => t.finish().await,
        }
    }

    /// Resolves only if the sink failed on its own (the thread's last write).
    async fn failed(&mut self) -> io::Error {
        match self {
            Sink::Async(_) => std::future::pending().await,
            Sink::Thread(t) => t.failed().await,
        }
    }
}
