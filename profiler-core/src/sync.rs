//! Locking for the cold path.

use std::sync::{Mutex, MutexGuard};

/// Locks, shrugging off poisoning: a panic elsewhere must not take the profiler down with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
