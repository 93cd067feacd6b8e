//! The queue children wait in: at most [`MAX_RUNNING`] run at once at each depth, and the
//! rest wait for a free slot rather than fail. Each depth has slots of its own, so a child
//! that waits for its own children never holds a slot they need.

use std::sync::{Arc, Mutex};

use larik_protocol::sync::locked;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many children run at once at one depth.
pub const MAX_RUNNING: usize = 8;

/// The slots of one session's children.
#[derive(Debug, Default)]
pub struct Slots {
    levels: Mutex<Vec<Arc<Semaphore>>>,
}

impl Slots {
    /// The slots of children at `depth` (1 for the main agent's children).
    fn level(&self, depth: u32) -> Arc<Semaphore> {
        let mut levels = locked(&self.levels);
        let index = depth as usize;
        while levels.len() <= index {
            levels.push(Arc::new(Semaphore::new(MAX_RUNNING)));
        }
        Arc::clone(&levels[index])
    }

    /// A slot for a child at `depth` at once, or `None` when all are taken.
    pub fn try_take(&self, depth: u32) -> Option<OwnedSemaphorePermit> {
        self.level(depth).try_acquire_owned().ok()
    }

    /// Waits for a slot for a child at `depth`; it is free again when the permit drops.
    pub async fn take(&self, depth: u32) -> OwnedSemaphorePermit {
        self.level(depth)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }
}
