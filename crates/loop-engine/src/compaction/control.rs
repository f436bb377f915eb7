//! Cancelling a compaction from outside the session's task. The compaction itself travels
//! with the conversation (possibly inside a run); only its cancellation token is reachable
//! here, behind a lock that is never held across an `.await`.

use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

#[derive(Default)]
pub(crate) struct Control {
    active: Mutex<Option<Active>>,
}

struct Active {
    manual: bool,
    cancel: CancellationToken,
}

impl Control {
    pub fn started(&self, manual: bool, cancel: CancellationToken) {
        *crate::mutex::lock(&self.active) = Some(Active { manual, cancel });
    }

    pub fn finished(&self) {
        *crate::mutex::lock(&self.active) = None;
    }

    /// Cancels the compaction under way if it is of the kind asked; returns whether one was.
    pub fn cancel(&self, manual: bool) -> bool {
        let active = crate::mutex::lock(&self.active);
        match active.as_ref() {
            Some(a) if a.manual == manual && !a.cancel.is_cancelled() => {
                a.cancel.cancel();
                true
            }
            _ => false,
        }
    }
}
