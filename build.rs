//! Generates the protocol crate's source from `schemas/` into `OUT_DIR/protocol.rs`, and the
//! TypeScript declarations into `OUT_DIR/types.ts`.
//!
//! The committed copy in `generated/protocol.rs` is for reading and review; the code the crate
//! compiles always comes from the schemas of the same checkout, through this script.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=schemas");
    println!("cargo:rerun-if-changed=build.rs");
    let out_dir = match std::env::var_os("OUT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            eprintln!("OUT_DIR is not set: this script only runs under cargo");
            std::process::exit(1);
        }
    };
    let source = match theurian_codegen::generate(Path::new("schemas"), "schemas") {
        Ok(source) => source,
        Err(e) => {
            eprintln!("error: cannot generate the protocol crate from schemas/: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = std::fs::write(out_dir.join("protocol.rs"), source) {
        eprintln!("error: cannot write OUT_DIR/protocol.rs: {e}");
        std::process::exit(1);
    }
    let typescript = match theurian_codegen::typescript(Path::new("schemas")) {
        Ok(source) => source,
        Err(e) => {
            eprintln!("error: cannot generate the TypeScript declarations from schemas/: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = std::fs::write(out_dir.join("types.ts"), typescript) {
        eprintln!("error: cannot write OUT_DIR/types.ts: {e}");
        std::process::exit(1);
    }
}
