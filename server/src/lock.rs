//! The one way the front ends take a lock. Every change made under these locks is a single
//! assignment, insert or remove, so a panic elsewhere cannot leave the data half-changed:
//! a poisoned lock is taken as it stands.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking it as it stands if a panic poisoned it.
pub fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
