//! Admission gates: at most four concurrent answers per expensive tool, a bounded wait for a
//! permit, then a constant, retryable refusal instead of an unbounded queue.

use std::time::Duration;
use theurian_protocol::mcp::RefusalMetaCode;
use theurian_protocol::Refusal;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Concurrent answers per gate.
pub const MAX_CONCURRENT: usize = 4;
/// How long a caller waits for a permit.
pub const ADMISSION_WAIT: Duration = Duration::from_secs(1);
/// The delay suggested to a refused caller.
pub const RETRY_AFTER_MS: u64 = 250;

/// One gate.
#[derive(Debug)]
pub struct Gate {
    permits: Semaphore,
    what: &'static str,
}

impl Gate {
    /// A gate for `what` (e.g. "knowledge searches").
    pub fn new(what: &'static str) -> Self {
        Gate {
            permits: Semaphore::new(MAX_CONCURRENT),
            what,
        }
    }

    /// Waits up to [`ADMISSION_WAIT`] for a permit.
    pub async fn enter(&self) -> Result<SemaphorePermit<'_>, Refusal> {
        match tokio::time::timeout(ADMISSION_WAIT, self.permits.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => {
                let mut refusal = Refusal::new(
                    RefusalMetaCode::CapacityExceeded,
                    format!(
                        "The daemon is already answering {MAX_CONCURRENT} {} at once and none finished within {} s. Retry shortly. \
                         This message is fixed: it says nothing about your request or any project.",
                        self.what,
                        ADMISSION_WAIT.as_secs()
                    ),
                )
                .retryable();
                refusal.meta.retry_after_ms = std::num::NonZeroU64::new(RETRY_AFTER_MS);
                Err(refusal)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fifth_caller_is_refused_retryably_after_the_wait() {
        let gate = Gate::new("knowledge searches");
        let mut held = Vec::new();
        for _ in 0..MAX_CONCURRENT {
            held.push(gate.enter().await.expect("permit"));
        }
        let started = std::time::Instant::now();
        let refusal = gate.enter().await.expect_err("capacity");
        assert!(started.elapsed() >= ADMISSION_WAIT);
        assert_eq!(refusal.meta.code, RefusalMetaCode::CapacityExceeded);
        assert!(refusal.meta.retryable);
        assert_eq!(
            refusal.meta.retry_after_ms.map(|n| n.get()),
            Some(RETRY_AFTER_MS)
        );
        drop(held.pop());
        assert!(
            gate.enter().await.is_ok(),
            "a released permit admits the next caller"
        );
    }
}
