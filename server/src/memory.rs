//! How the daemon keeps its resident memory near what it actually holds.
//!
//! Two glibc habits inflate a long-running server's footprint: an arena per allocating thread,
//! each keeping its own freed pages, and freed pages inside the heap that stay mapped until the
//! allocator is asked to give them back. The daemon's work is many small, short-lived
//! allocations per request, so after a burst of calls most of that memory is free space. An
//! arena per core (not per thread), and a trim once the daemon has gone quiet after serving,
//! return it. Elsewhere (musl, other systems) both are no-ops.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long the daemon must have served nothing before freed memory is handed back.
pub const QUIET_BEFORE_TRIM: Duration = Duration::from_millis(500);

/// Counts requests, so the trimmer can tell a quiet daemon from a busy one.
#[derive(Debug, Default)]
pub struct Activity {
    requests: AtomicU64,
}

impl Activity {
    /// Records one request.
    pub fn touch(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// One malloc arena per core, at most [`MAX_ARENAS`]: fewer arenas than threads keep freed
/// pages pooled (one arena took about 11 MB off the resident set), and one per core keeps the
/// runtime's workers from queueing on one arena's lock. With one arena, 8 clients searching on
/// 2 cores spent a fifth of the daemon's samples waiting for it; two took throughput from about
/// 1,100 to 1,600–2,000 calls/s at the same resident memory (scripts/side_by_side.py, 648
/// items). Call before any thread starts.
pub fn arenas_per_core() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let arenas = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_ARENAS);
        // SAFETY: mallopt only tunes the allocator; the caller runs it before other threads exist.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas as libc::c_int);
        }
    }
}

/// The most malloc arenas the daemon asks for, however many cores it runs on.
pub const MAX_ARENAS: usize = 4;

/// Hands freed heap pages back to the system.
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it takes the allocator's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs for the daemon's lifetime: after requests were served and then none for
/// [`QUIET_BEFORE_TRIM`], trims once (never while busy, never twice for the same quiet spell).
pub async fn trim_when_quiet(state: crate::state::AppState) {
    let mut tick = tokio::time::interval(QUIET_BEFORE_TRIM);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut seen, mut trimmed_at) = (state.activity.count(), state.activity.count());
    loop {
        tick.tick().await;
        let now = state.activity.count();
        if due(seen, now, trimmed_at) {
            trim();
            trimmed_at = now;
        }
        seen = now;
    }
}

/// A trim is due when no request came since the last tick (`seen == now`) and some came since
/// the last trim.
fn due(seen: u64, now: u64, trimmed_at: u64) -> bool {
    now == seen && now != trimmed_at
}

#[cfg(test)]
mod tests {
    use super::due;

    #[test]
    fn trims_once_per_quiet_spell_and_never_while_busy() {
        // Busy: requests arrived since the last tick.
        assert!(!due(10, 12, 0));
        // Quiet after serving: trim.
        assert!(due(12, 12, 0));
        // Still quiet, already trimmed for this spell.
        assert!(!due(12, 12, 12));
        // Never served anything: nothing to give back.
        assert!(!due(0, 0, 0));
    }
}
