//! Two pieces of one search side by side: one on the calling thread, the other offered to the
//! CPU pool, and taken back by the caller when no worker has started it yet.
//!
//! Why not `rayon::join`: the daemon searches on its serving threads, which are not pool
//! workers. From outside the pool, `join` hands both halves to the pool and blocks the caller
//! until they are done, so one search pays three thread wake-ups (a worker, a second worker to
//! steal the other half, the caller again). On a small virtual machine each wake-up costs tens
//! to hundreds of microseconds, a large share of a search. Here the caller keeps working: the
//! only wake-up is the worker's, and it overlaps the caller's half.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the caller keeps checking for the other half before it blocks: longer than a
/// search's half usually takes, so the caller seldom sleeps and needs no wake-up.
const SPIN: Duration = Duration::from_millis(5);

/// Runs `here` on this thread and `there` on the pool at once, and returns both results.
/// `there` runs on this thread instead when no worker has begun it by the time `here` is done
/// (a busy pool, or workers slow to wake), so a loaded machine never waits on an idle one.
/// `None` only if `there` panicked on a worker, which the pool reports by panicking here.
pub fn both<RA, RB: Send>(
    here: impl FnOnce() -> RA,
    there: impl FnOnce() -> RB + Send,
) -> (RA, Option<RB>) {
    let offered = Mutex::new(Some(there));
    let answer: Mutex<Option<RB>> = Mutex::new(None);
    let finished = AtomicBool::new(false);
    // The first thread to take the closure runs it; the other finds `None`.
    let take = || offered.lock().ok().and_then(|mut held| held.take());
    let (a, ran_here) = rayon::in_place_scope(|scope| {
        scope.spawn(|_| {
            if let Some(work) = take() {
                let result = work();
                if let Ok(mut slot) = answer.lock() {
                    *slot = Some(result);
                }
                finished.store(true, Ordering::Release);
            }
        });
        let a = here();
        let ran_here = take().map(|work| work());
        if ran_here.is_none() {
            let started = Instant::now();
            while !finished.load(Ordering::Acquire) && started.elapsed() < SPIN {
                std::thread::yield_now();
            }
        }
        // Leaving the scope waits for the worker, if it is still running.
        (a, ran_here)
    });
    let b = ran_here.or_else(|| answer.into_inner().ok().flatten());
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_run_exactly_once_and_return_their_results() {
        for round in 0..200u64 {
            let runs = std::sync::atomic::AtomicUsize::new(0);
            let (a, b) = both(
                || round * 2,
                || {
                    runs.fetch_add(1, Ordering::SeqCst);
                    round * 3
                },
            );
            assert_eq!((a, b), (round * 2, Some(round * 3)));
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        }
    }

    #[test]
    fn a_half_outlasting_the_spin_is_awaited_not_dropped() {
        // The pool has time to start `there`, which then runs past the caller's spin.
        let (a, b) = both(
            || {
                std::thread::sleep(Duration::from_millis(20));
                1
            },
            || {
                std::thread::sleep(SPIN * 4);
                2
            },
        );
        assert_eq!((a, b), (1, Some(2)));
    }
}
