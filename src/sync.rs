//! Locks that survive a panic elsewhere, and a task that ends with its owner.
//!
//! Every critical section in this crate leaves its data consistent before
//! anything that could panic, so no section is left half-done and a
//! poisoned lock holds good data. These helpers take it anyway, instead of
//! each module deciding on its own to skip silently or panic in turn.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, ignoring poisoning as the module explains.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads `l`, ignoring poisoning as the module explains.
pub(crate) fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Writes `l`, ignoring poisoning as the module explains.
pub(crate) fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Waits until `done()` holds, checking it again each time `notify` wakes
/// its waiters with `notify_waiters`: the wait is registered before each
/// check, so a wake in between is not missed. Cancel safe.
pub(crate) async fn until(notify: &tokio::sync::Notify, mut done: impl FnMut() -> bool) {
    loop {
        let woken = notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if done() {
            return;
        }
        woken.await;
    }
}

/// A spawned task that is aborted when this value is dropped, so dropping
/// the future that awaits it leaves no task behind.
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
