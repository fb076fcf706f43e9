//! The spawning thread: every child is cloned on one thread that lives as
//! long as the process.
//!
//! `PR_SET_PDEATHSIG` is tied to the thread that created the child: when
//! that thread exits, the kernel sends the signal, even though the process
//! lives on. Spawning from whatever thread happens to run the caller
//! (`Client::start` runs in the caller's task; restarts run on a tokio
//! worker) made healthy servers die when tokio retired a thread. This
//! thread is started on the first spawn and never returns: its channel's
//! sender is a static, so its `recv` never fails.
//!
//! Everything the child needs is prepared (and owned) by a
//! [`Prepared`] before it crosses to this thread; the pointer arrays
//! `execve` takes are built on this thread, next to the `clone` that uses
//! them.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Mutex;

use super::clone::Prepared;
use super::launch::Launched;

/// Stack of the spawning thread: it only prepares pointers and clones (the
/// child runs on a stack of its own).
const STACK_BYTES: usize = 256 * 1024;

type Job = Box<dyn FnOnce() + Send>;

/// The spawning thread's queue; `None` until the first spawn.
static QUEUE: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);

/// Clones the child on the spawning thread and waits for it to have called
/// `execve` (or failed).
///
/// Cancel safety: cancel safe. If the future is dropped, the child it could
/// not hand over is killed and reaped, whether the drop came before the
/// spawning thread sent it or after (while it waited in the channel).
pub(super) async fn launch(p: Prepared) -> io::Result<Launched> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    submit(Box::new(move || {
        // A refused send drops the hand-over, which ends the child.
        let _ = tx.send(super::launch::launch(p).map(|l| Handover(Some(l))));
    }))?;
    let mut handover = rx
        .await
        .map_err(|_| io::Error::other("the spawning thread dropped a spawn"))??;
    handover
        .0
        .take()
        .ok_or_else(|| io::Error::other("a spawn was handed over twice"))
}

/// A launched child on its way to the caller. A value sent on a channel is
/// dropped with the receiver if the receiving future goes before reading
/// it: the child must end then, not run on with no owner (an aborted
/// start must leave no server alive and no zombie unreaped).
struct Handover(Option<Launched>);

impl Drop for Handover {
    fn drop(&mut self) {
        if let Some(orphan) = self.0.take() {
            super::abandon(orphan, true);
        }
    }
}

/// Runs `job` on the spawning thread, starting it if needed.
fn submit(job: Job) -> io::Result<()> {
    let mut queue = crate::sync::lock(&QUEUE);
    let job = match queue.as_ref() {
        Some(tx) => match tx.send(job) {
            Ok(()) => return Ok(()),
            // Unreachable in practice (the thread never returns), but
            // starting another thread is the right answer if it were.
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("conduit-mcp-spawn".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                // A panic must not end the thread: its children would get
                // their parent-death signal.
                let _ = catch_unwind(AssertUnwindSafe(job));
            }
        })?;
    tx.send(job)
        .map_err(|_| io::Error::other("the spawning thread ended at once"))?;
    *queue = Some(tx);
    Ok(())
}
