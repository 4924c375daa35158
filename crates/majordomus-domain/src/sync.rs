//! Taking a lock whose holder panicked.

use std::sync::{Mutex, MutexGuard};

/// [`Mutex::lock`] that recovers the guard from a poisoned lock instead of failing.
///
/// Every value majordomus keeps behind a `std::sync::Mutex` is left consistent at each
/// unlock: no critical section leaves a half-made change that a later holder could
/// misread. A panic in one holder (one request's handler, one background task) therefore
/// says nothing about the value, and recovering it keeps one failed task from taking the
/// whole server, and every peer on its board, down with it.
pub trait LockExt<T: ?Sized> {
    /// Locks, taking the guard even when a former holder panicked.
    fn lock_or_recover(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> LockExt<T> for Mutex<T> {
    fn lock_or_recover(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_still_yields_its_value() {
        let shared = std::sync::Arc::new(Mutex::new(1));
        let held = shared.clone();
        let _ = std::thread::spawn(move || {
            let mut value = held.lock().unwrap();
            *value = 2;
            panic!("a holder fails");
        })
        .join();
        assert!(shared.is_poisoned());
        assert_eq!(*shared.lock_or_recover(), 2);
    }
}
