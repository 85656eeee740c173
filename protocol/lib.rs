//! Theurian's MCP wire contract as Rust: the types, validators and tool table generated from
//! `schemas/`, plus the few hand-written pieces they lean on.
//!
//! Integrators depend on this crate to talk to a Theurian daemon with the same types the daemon
//! compiles against. Nothing in the generated modules is written by hand: `build.rs` runs
//! `theurian-codegen` over `schemas/` on every build, and `generated/protocol.rs` is a committed
//! copy of that output kept for review (a test fails when it drifts).
//!
//! * [`mcp`], [`migration`], [`evidence`], [`config`], [`protocol`]: typed structs for each
//!   schema group.
//! * [`tools`]: the tool table, each tool's key usage, the [`tools::ToolHandlers`] trait the
//!   daemon implements, typed dispatch, and the `tool_handlers!` / `with_tools!` macros.
//! * [`refusal`]: the refusal every failed call answers with, and the bounds on what it quotes.
//! * [`schemas`]: every schema file, embedded verbatim.
//! * [`answer`]: a tool's typed answer, serialised once per form the transport writes.
//! * [`bundle`]: a schema made self-contained, every file it reaches embedded.
//! * [`publish`]: the compact, portable form of a tool's schemas that `tools/list` carries.
//! * [`canonical`]: the sorted, indented JSON every file and digest of ours uses.
//! * [`local`]: the data directory's layout and the daemon's lock record, which clients read.
//! * [`seat`]: the validation seat that checks raw arguments before any handler runs.

include!(concat!(env!("OUT_DIR"), "/protocol.rs"));

pub mod answer;
pub mod bundle;
pub mod canonical;
pub mod local;
pub mod publish;
mod refusal;
pub mod seat;

pub use refusal::{bounded, quote_name as refusal_quote, KeyUsage, Refusal};

/// The `_meta` key under which the MCP `initialize` result carries [`PROTOCOL_VERSION`], so a
/// client learns which contract it is talking to in the handshake itself.
pub const PROTOCOL_VERSION_META_KEY: &str = "dev.theurian/protocolVersion";

/// The TypeScript declarations generated from the same schemas, for the drift test of
/// `clients/typescript/src/types.ts`.
pub const GENERATED_TYPESCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/types.ts"));

/// The generated source this build compiled, for the drift test.
pub const GENERATED_SOURCE: &str = include_str!(concat!(env!("OUT_DIR"), "/protocol.rs"));
