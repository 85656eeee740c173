//! The fuzz targets: each parser that reads what users, agents, clones or any local process
//! control, as a function of one byte string. Two harnesses drive them — the in-tree mutation
//! harness (`theurian bench fuzz`, stable, no dependencies) and the coverage-guided AFL++ one
//! (`fuzz/afl/`) — and the test suite replays every input either ever found
//! (`fuzz/regressions/<target>/`), so a target means the same thing everywhere.
//!
//! A target's errors are expected answers; only a panic (or an abort) is a finding.

use serde_json::Value;
use theurian_core::CoreError;
use theurian_protocol::seat::Seat;
use theurian_protocol::tools::{decode_only, TOOLS};

/// Every target's name, in the order harnesses run them.
pub const TARGETS: [&str; 7] = [
    "arguments",
    "migration",
    "evidence",
    "trailer",
    "envelope",
    "front-matter",
    "contract",
];

/// One target, with whatever it keeps between inputs.
pub enum Target {
    /// Tool arguments: the validation seat, the whole-number rewrite, the typed decode.
    Arguments { seat: Seat },
    /// A migration file, through the loader.
    Migration { root: tempfile::TempDir },
    /// A review evidence file, through its reader.
    Evidence,
    /// A commit message, through the `Review-Finding:` trailer grammar.
    Trailer,
    /// A `POST /mcp` body, through the front door ([`crate::envelope::check`]).
    Envelope,
    /// An OKF concept document, through its front-matter reader.
    FrontMatter,
    /// Two schema documents (split at the first NUL byte), compared by `contract diff`'s walk
    /// both ways and each against itself.
    Contract,
    /// Panics on any input holding 0xFF: proves a harness sees a panic at all.
    Probe,
}

impl Target {
    /// The target called `name` (one of [`TARGETS`], or `probe`).
    pub fn new(name: &str) -> Result<Target, CoreError> {
        Ok(match name {
            "arguments" => Target::Arguments {
                seat: Seat::new().map_err(|e| {
                    CoreError::failure(
                        format!("The validation seat does not compile: {e}."),
                        "This build is damaged.",
                    )
                })?,
            },
            "migration" => {
                let root = tempfile::tempdir().map_err(|e| {
                    CoreError::failure(format!("No scratch directory: {e}."), "Check $TMPDIR.")
                })?;
                let dir = root.path().join(".theurian/migrations");
                std::fs::create_dir_all(&dir).map_err(|e| CoreError::io("create", &dir, &e))?;
                Target::Migration { root }
            }
            "evidence" => Target::Evidence,
            "trailer" => Target::Trailer,
            "envelope" => Target::Envelope,
            "front-matter" => Target::FrontMatter,
            "contract" => Target::Contract,
            "probe" => Target::Probe,
            other => {
                return Err(CoreError::usage(
                    format!("There is no fuzz target {other:?}."),
                    format!(
                        "Use one of {} or all (probe checks the harness itself).",
                        TARGETS.join(", ")
                    ),
                ))
            }
        })
    }

    /// The target's name.
    pub fn name(&self) -> &'static str {
        match self {
            Target::Arguments { .. } => "arguments",
            Target::Migration { .. } => "migration",
            Target::Evidence => "evidence",
            Target::Trailer => "trailer",
            Target::Envelope => "envelope",
            Target::FrontMatter => "front-matter",
            Target::Contract => "contract",
            Target::Probe => "probe",
        }
    }

    /// Runs one input; `pick` chooses among the target's variants (the tool, for arguments).
    pub fn run(&self, input: &[u8], pick: usize) {
        match self {
            Target::Arguments { seat } => {
                let tool = TOOLS[pick % TOOLS.len()].id;
                let Ok(value) = serde_json::from_slice::<Value>(input) else {
                    return;
                };
                if seat.check_input(tool, &value).is_err() {
                    return;
                }
                if let Ok(v) = seat.whole_numbers(tool, value) {
                    let _ = decode_only(tool, v);
                }
            }
            Target::Migration { root } => {
                let rel = ".theurian/migrations/01M0D5GSKA479Y85296S745521-fuzz.yaml";
                if std::fs::write(root.path().join(rel), input).is_ok() {
                    let _ = theurian_core::migrate::load::load_file(root.path(), rel);
                }
            }
            Target::Evidence => {
                let rel = "sha256-5ce990d3a9a3121c5a978f0556175d110fc57346aae1c2f13c5a2f82a3ac9b93/review-thread/PRRT_kwDOAAAA42~1f8f.json";
                let _ = theurian_core::review::evidence::parse(rel, input);
            }
            Target::Trailer => {
                let _ = theurian_core::findings::trailer::parse_message(&String::from_utf8_lossy(
                    input,
                ));
            }
            Target::Envelope => {
                let _ = crate::envelope::check(input);
            }
            Target::FrontMatter => {
                let _ = theurian_core::okf::concept(&String::from_utf8_lossy(input));
            }
            Target::Contract => contract_walk(input),
            Target::Probe => assert!(!input.contains(&0xff), "probe input"),
        }
    }

    /// Runs a whole harness input: for arguments the first byte picks the tool and the rest is
    /// the JSON, so a coverage-guided fuzzer can steer both; other targets take it whole.
    pub fn run_framed(&self, input: &[u8]) {
        match (self, input.split_first()) {
            (Target::Arguments { .. }, Some((pick, rest))) => self.run(rest, usize::from(*pick)),
            (Target::Arguments { .. }, None) => {}
            _ => self.run(input, 0),
        }
    }
}

/// The contract target: the two documents as one stored schema each of two trees (and a tool's
/// input, so the tool path is walked too), diffed both ways and each against itself.
fn contract_walk(input: &[u8]) {
    use theurian_contract::{diff_within, SchemaTree};
    // Small enough that one input stays in the milliseconds; the overrun path is walked too.
    const BUDGET: u64 = 5_000;
    let (old, new) = match input.iter().position(|b| *b == 0) {
        Some(at) => (&input[..at], &input[at + 1..]),
        None => (input, input),
    };
    let tree = |doc: &[u8]| {
        let text = String::from_utf8_lossy(doc).into_owned();
        SchemaTree::from_texts(
            "fuzz",
            [
                ("stored/x.schema.json".to_owned(), text.clone()),
                ("mcp/probe-input.schema.json".to_owned(), text),
            ],
        )
        .ok()
    };
    let (Some(old), Some(new)) = (tree(old), tree(new)) else {
        return;
    };
    let _ = diff_within(&old, &new, BUDGET);
    let _ = diff_within(&new, &old, BUDGET);
    let _ = diff_within(&old, &old, BUDGET);
}
