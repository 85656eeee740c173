//! Capped exponential backoff with full jitter for outbound calls.

use std::time::Duration;

use rand::Rng;

use crate::clients::Deadline;

pub const MAX_ATTEMPTS: u32 = 5;
pub const BASE: Duration = Duration::from_millis(100);
pub const CAP: Duration = Duration::from_secs(3);

#[derive(Clone, Copy)]
pub enum RetryPolicy {
    /// GET/PUT/DELETE, or POST carrying an idempotency key the target honours.
    Idempotent,
    Never,
}

pub fn should_retry(policy: RetryPolicy, status: Option<u16>) -> bool {
    match (policy, status) {
        (RetryPolicy::Never, _) => false,
        (_, Some(429)) => true,
        (_, Some(s)) if (400..500).contains(&s) => false,
        (_, Some(500 | 502 | 503 | 504)) | (_, None) => true,
        _ => false,
    }
}

pub fn backoff(attempt: u32, deadline: &Deadline) -> Option<Duration> {
    let exp = BASE.saturating_mul(1 << attempt.min(5)).min(CAP);
    let sleep = Duration::from_millis(rand::thread_rng().gen_range(0..=exp.as_millis() as u64));
    // Retries spend from the request budget; stop when it cannot cover the sleep.
    (deadline.remaining() > sleep + Duration::from_millis(50)).then_some(sleep)
}
