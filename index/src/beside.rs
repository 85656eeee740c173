//! Two pieces of one search side by side: one on the calling thread, the other offered to a
//! helper thread, and taken back by the caller when no helper has started it yet.
//!
//! Why not the CPU pool: the daemon searches on its serving threads, which are not pool
//! workers. A pool worker sleeps moments after its last job, and waking a sleeping thread on a
//! small virtual machine takes tens to hundreds of microseconds (the other virtual CPU is
//! halted, and waking it goes through the host). Searches arrive a fraction of a millisecond
//! apart, so every search found the worker asleep and waited for it: the word page plus the
//! wake-up was the longer half. A helper here stays awake, yielding, for `LINGER` (2 ms) after
//! each piece of work, which covers the gap between one client's searches; only after a quiet
//! spell does it sleep. A busy machine pays nothing for the yielding (a yield gives the core away),
//! and an idle daemon pays it once, after its last search.
//!
//! The offered half borrows the caller's stack. The helper only touches it between claiming it
//! and marking it done, and the caller leaves `both` (normally or by unwinding) only after it
//! took the half back unclaimed or saw it done: that is what makes handing a borrowed closure
//! to another thread sound here.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long a helper stays awake after its last piece of work before it sleeps.
const LINGER: Duration = Duration::from_millis(2);
/// How long the caller checks for the other half by yielding before it checks by sleeping.
const SPIN: Duration = Duration::from_millis(5);
/// The most helpers, whatever the core count.
const MOST_HELPERS: usize = 7;

/// One offered half, on the offering thread's stack.
struct Offer {
    /// Runs the half and stores its result; called at most once, by the thread that claimed it.
    run: unsafe fn(*const ()),
    /// The half and the place for its result (a [`Work`]).
    data: *const (),
    /// Set by the helper once `run` has returned.
    done: AtomicBool,
}

/// A half and, once it ran, its result (None after a panic).
struct Work<F, R> {
    half: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<R>>,
}

/// Runs the half in the [`Work`] at `data`.
///
/// # Safety
/// `data` points at a live `Work<F, R>` that no other thread touches until this returns.
unsafe fn run<F: FnOnce() -> R, R>(data: *const ()) {
    // SAFETY: the caller's contract: `data` is a live Work<F, R> this thread has to itself.
    let work = unsafe { &*(data as *const Work<F, R>) };
    // SAFETY: as above; nothing else reads or writes the cells while this runs.
    if let Some(half) = unsafe { (*work.half.get()).take() } {
        let result = catch_unwind(AssertUnwindSafe(half)).ok();
        // SAFETY: as above.
        unsafe { *work.result.get() = result };
    }
}

struct Helper {
    offered: AtomicPtr<Offer>,
    /// True while the helper sleeps or is about to: an offer then unparks it.
    parked: AtomicBool,
    thread: OnceLock<Thread>,
}

/// The helpers: one fewer than the machine's cores (the caller keeps one busy), none on a
/// machine of one core, and only those whose thread could be started.
fn helpers() -> &'static [Helper] {
    static HELPERS: OnceLock<&'static [Helper]> = OnceLock::new();
    HELPERS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let count = cores.saturating_sub(1).min(MOST_HELPERS);
        let all: &'static [Helper] = Box::leak(
            (0..count)
                .map(|_| Helper {
                    offered: AtomicPtr::new(std::ptr::null_mut()),
                    parked: AtomicBool::new(false),
                    thread: OnceLock::new(),
                })
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let mut started = 0;
        for (i, helper) in all.iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("search-helper-{i}"))
                .spawn(move || serve(helper));
            match spawned {
                Ok(handle) => {
                    let _ = helper.thread.set(handle.thread().clone());
                    started += 1;
                }
                Err(_) => break,
            }
        }
        all.get(..started).unwrap_or_default()
    })
}

/// A helper's life: run what is offered; stay awake, yielding, for [`LINGER`] after the last
/// piece of work; then sleep until an offer wakes it.
fn serve(helper: &'static Helper) {
    let mut idle_since = Instant::now();
    loop {
        let offer = helper.offered.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !offer.is_null() {
            // SAFETY: a non-null pointer here was placed by `both`, whose caller does not
            // leave until it sees `done` (the swap above claimed the offer, so it cannot take
            // it back); the Offer and its Work are alive and this thread has them to itself.
            unsafe {
                let offer = &*offer;
                (offer.run)(offer.data);
                offer.done.store(true, Ordering::Release);
            }
            idle_since = Instant::now();
        } else if idle_since.elapsed() < LINGER {
            std::thread::yield_now();
        } else {
            helper.parked.store(true, Ordering::SeqCst);
            // An offer made before `parked` was set is seen here; one made after sees it set
            // and unparks this thread, so no offer waits for a sleeping helper.
            if helper.offered.load(Ordering::SeqCst).is_null() {
                std::thread::park();
            }
            helper.parked.store(false, Ordering::SeqCst);
            idle_since = Instant::now();
        }
    }
}

/// Takes the offer back if no helper has claimed it, or waits until the helper is done with
/// it; on every way out of [`both`], including a panic in the caller's half.
struct Reclaim<'a> {
    helper: &'a Helper,
    offer: *mut Offer,
    settled: bool,
}

impl Reclaim<'_> {
    /// True when the offer was taken back unclaimed; false once the helper has run it.
    fn settle(&mut self) -> bool {
        self.settled = true;
        let taken_back = self
            .helper
            .offered
            .compare_exchange(
                self.offer,
                std::ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if !taken_back {
            // SAFETY: the offer lives in `both`'s frame, which outlives this guard.
            let done = unsafe { &(*self.offer).done };
            let started = Instant::now();
            while !done.load(Ordering::Acquire) {
                if started.elapsed() < SPIN {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        taken_back
    }
}

impl Drop for Reclaim<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.settle();
        }
    }
}

/// Runs `here` on this thread and `there` on a helper at once, and returns both results.
/// `there` runs on this thread instead when every helper is busy, or when none has begun it
/// by the time `here` is done, so a loaded machine never waits on an idle helper.
/// `None` only if `there` panicked on a helper.
pub fn both<RA, RB: Send>(
    here: impl FnOnce() -> RA,
    there: impl FnOnce() -> RB + Send,
) -> (RA, Option<RB>) {
    both_with(helpers(), here, there)
}

fn both_with<RA, RB: Send, F: FnOnce() -> RB + Send>(
    helpers: &[Helper],
    here: impl FnOnce() -> RA,
    there: F,
) -> (RA, Option<RB>) {
    let work = Work {
        half: UnsafeCell::new(Some(there)),
        result: UnsafeCell::new(None),
    };
    let data = &work as *const Work<F, RB> as *const ();
    let mut offer = Offer {
        run: run::<F, RB>,
        data,
        done: AtomicBool::new(false),
    };
    let offered: *mut Offer = std::ptr::addr_of_mut!(offer);
    let helper = helpers.iter().find(|h| {
        h.offered
            .compare_exchange(
                std::ptr::null_mut(),
                offered,
                Ordering::SeqCst,
                Ordering::Relaxed,
            )
            .is_ok()
    });
    let Some(helper) = helper else {
        let a = here();
        // SAFETY: never offered, so this thread has the Work to itself.
        unsafe { run::<F, RB>(data) };
        return (a, work.result.into_inner());
    };
    if helper.parked.load(Ordering::SeqCst) {
        if let Some(thread) = helper.thread.get() {
            thread.unpark();
        }
    }
    let mut reclaim = Reclaim {
        helper,
        offer: offered,
        settled: false,
    };
    let a = here();
    if reclaim.settle() {
        // SAFETY: taken back unclaimed, so this thread has the Work to itself.
        unsafe { run::<F, RB>(data) };
    }
    (a, work.result.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn both_halves_run_exactly_once_and_return_their_results() {
        for round in 0..200u64 {
            let runs = AtomicUsize::new(0);
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
        // The caller's half ends as soon as a helper has begun the other, which then runs on
        // past the caller's yielding: the caller waits for it, sleeping.
        let begun = AtomicBool::new(false);
        let (a, b) = both(
            || {
                let asked = Instant::now();
                while !begun.load(Ordering::Acquire) && asked.elapsed() < Duration::from_secs(2) {
                    std::thread::yield_now();
                }
                1
            },
            || {
                begun.store(true, Ordering::Release);
                std::thread::sleep(SPIN * 2);
                2
            },
        );
        assert_eq!((a, b), (1, Some(2)));
    }

    #[test]
    fn callers_at_once_each_get_their_own_halves() {
        std::thread::scope(|s| {
            for t in 0..8u64 {
                s.spawn(move || {
                    for round in 0..100u64 {
                        let label = [t, round];
                        let (a, b) = both(|| t * 1000 + round, || label.iter().sum::<u64>());
                        assert_eq!((a, b), (t * 1000 + round, Some(t + round)));
                    }
                });
            }
        });
    }

    #[test]
    fn a_panic_in_either_half_leaves_the_helpers_serving() {
        // Run on a helper or taken back, a panicking offered half leaves its result missing.
        let (a, b) = both(|| 1, || -> u8 { panic!("the offered half fails") });
        assert_eq!((a, b), (1, None));
        let unwound = catch_unwind(|| both(|| -> u8 { panic!("the caller's half fails") }, || 2));
        assert!(unwound.is_err());
        assert_eq!(both(|| 3, || 4), (3, Some(4)));
    }

    #[test]
    fn without_helpers_both_halves_run_here() {
        let caller = std::thread::current().id();
        let (a, b) = both_with(&[], || 1, || (2, std::thread::current().id()));
        assert_eq!((a, b), (1, Some((2, caller))));
    }
}
