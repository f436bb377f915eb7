//! The crate's one way to lock a `std::sync::Mutex`. A leaf: everything locks.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering it if a panicking holder poisoned it: every lock in this crate
/// guards short synchronous updates, so the data stays usable and a session must not die of it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
