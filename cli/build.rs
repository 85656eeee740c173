//! Lays out the daemon's code together in release builds.
//!
//! The kernel maps a program's code into memory in 64 KiB windows around each page it runs, so
//! the few MB of functions a serving daemon uses, scattered through a 14 MB image, made almost
//! all of the image resident. `symbol-order.txt` (written by `scripts/symbol_order.py`, which
//! profiles a serving daemon) lists those functions; LLD places them first and together. An
//! entry the code no longer has is skipped, so a stale list only costs memory.
//!
//! Only where the linker is LLD: release builds for x86-64 Linux with rustc 1.90 or later
//! (whose default linker it is) and no linker chosen in RUSTFLAGS. `THEURIAN_SYMBOL_ORDER=off`
//! turns it off.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=THEURIAN_SYMBOL_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let release = var("PROFILE") == "release";
    let target = var("TARGET") == "x86_64-unknown-linux-gnu";
    let off = var("THEURIAN_SYMBOL_ORDER") == "off";
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let linker_chosen = flags.contains("linker") || flags.contains("link-self-contained");
    if !release || !target || off || linker_chosen || !lld_by_default(&var("RUSTC")) {
        return;
    }
    let list = Path::new(&var("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
    if list.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=theurian=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bin=theurian=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether this rustc links x86-64 Linux programs with its own LLD (1.90 and later).
fn lld_by_default(rustc: &str) -> bool {
    let rustc = if rustc.is_empty() { "rustc" } else { rustc };
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let minor = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    matches!(minor, Some(m) if m >= 90) && text.starts_with("rustc 1.")
}
