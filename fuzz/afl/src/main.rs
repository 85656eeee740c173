//! One AFL++ target binary for every fuzz target: `THEURIAN_FUZZ_TARGET` names which
//! ([`theurian_server::fuzz::TARGETS`]), so one instrumented build serves every run. The
//! target logic is the same the in-tree harness and the regression replay use.

use std::panic::AssertUnwindSafe;
use theurian_server::fuzz::Target;

fn main() {
    let name = std::env::var("THEURIAN_FUZZ_TARGET").unwrap_or_default();
    let target = match Target::new(&name) {
        Ok(target) => AssertUnwindSafe(target),
        Err(e) => {
            eprintln!("{} {}", e.message, e.remedy);
            std::process::exit(2);
        }
    };
    // Through the wrapper's Deref, so the closure captures the wrapper, not the field.
    afl::fuzz(true, move |input: &[u8]| target.run_framed(input));
}
