//! Progress on standard error for the long commands (apply, index build, findings and review
//! builds, review ingest), drawn with indicatif only where a person watches: standard error is
//! a terminal and `--json` is off. Anywhere else the bar is hidden and costs nothing.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use theurian_core::progress::Progress;

/// One bar for the whole command, reused by each stage it reports.
pub struct Bar(ProgressBar);

impl Bar {
    /// A bar that draws only when `json` is off and standard error is a terminal.
    pub fn new(json: bool) -> Bar {
        if json || !std::io::stderr().is_terminal() {
            return Bar(ProgressBar::hidden());
        }
        Bar(ProgressBar::with_draw_target(
            None,
            ProgressDrawTarget::stderr(),
        ))
    }
}

/// The style for a stage of known length, or a spinner with a count when the total is unknown.
fn style(counted: bool) -> ProgressStyle {
    let template = if counted {
        "{msg:>24} [{bar:30}] {pos}/{len} ({eta})"
    } else {
        "{msg:>24} {spinner} {pos}"
    };
    // The templates are constants; a rejected one would fall back to indicatif's default look.
    ProgressStyle::with_template(template)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl Progress for Bar {
    fn stage(&self, what: &'static str, total: Option<u64>) {
        // Draws are rate-limited, so the last step of the stage before may not have been
        // drawn; a person watching should see each stage end where it ended.
        self.0.force_draw();
        self.0.set_message(what);
        self.0.set_style(style(total.is_some()));
        match total {
            Some(n) => self.0.set_length(n),
            None => self.0.unset_length(),
        }
        self.0.set_position(0);
    }

    fn step(&self) {
        self.0.inc(1);
    }

    fn finish(&self) {
        self.0.force_draw();
        self.0.finish_and_clear();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.finish();
    }
}
