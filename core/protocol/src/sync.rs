//! The one way Larik's crates take a std [`Mutex`] or [`RwLock`], with one poison policy.
//!
//! Every change made under these locks is a single assignment, insert or remove, so a
//! thread that panicked while holding one left the data whole: a poisoned lock is taken as
//! it stands rather than passing the panic on to every later user. A new lock may use these
//! helpers only if the same holds for it. Tokio's locks do not poison and are not covered.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, taking it as it stands when a holder panicked.
pub fn locked<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `lock` for reading, taking it as it stands when a writer panicked.
pub fn read_locked<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `lock` for writing, taking it as it stands when a writer panicked.
pub fn write_locked<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Panics while holding a guard from `hold`, so the lock behind it is poisoned.
    fn poison_with<F: FnOnce() + std::panic::UnwindSafe>(hold: F) {
        let outcome = std::panic::catch_unwind(hold);
        assert!(outcome.is_err(), "the holder panicked");
    }

    #[test]
    fn a_poisoned_mutex_is_taken_as_it_stands() {
        let mutex = Mutex::new(vec![1]);
        poison_with(|| {
            let mut guard = locked(&mutex);
            guard.push(2);
            panic!("while holding the lock");
        });
        assert!(mutex.is_poisoned());
        assert_eq!(*locked(&mutex), [1, 2]);
        locked(&mutex).push(3);
        assert_eq!(*locked(&mutex), [1, 2, 3]);
    }

    #[test]
    fn a_poisoned_rwlock_is_read_and_written_as_it_stands() {
        let lock = RwLock::new(String::from("before"));
        poison_with(|| {
            let mut guard = write_locked(&lock);
            guard.push_str(" and during");
            panic!("while holding the lock");
        });
        assert!(lock.is_poisoned());
        assert_eq!(*read_locked(&lock), "before and during");
        write_locked(&lock).push_str(" and after");
        assert_eq!(*read_locked(&lock), "before and during and after");
    }
}
