//! One file per command, and the table that dispatches to them.

mod auth;
mod bench;
mod bench_embed;
mod bench_findings;
mod bench_fuzz;
mod bench_review;
mod bench_search;
mod bench_soak;
mod bench_tools;
mod compat;
mod contract;
mod daemon;
mod doctor;
mod doctor_report;
mod eval;
mod feedback;
pub(crate) mod findings;
mod index;
mod ingest;
mod init;
mod migrate;
mod model;
mod new;
mod okf;
mod project;
mod project_status;
pub(crate) mod propose;
mod reference;
pub(crate) mod review;
mod setup;
mod version;

use crate::args::{Cli, Command};
use serde_json::Value;
use theurian_core::CoreError;

/// Runs the parsed command and returns what it reports.
pub fn run(cli: Cli) -> Result<Value, CoreError> {
    let data = theurian_core::datadir::DataDir::from_env();
    match cli.command {
        Command::Init => init::run(&data),
        Command::Project(cmd) => project::run(&data, cmd),
        Command::Migrate(cmd) => migrate::run(&data, cmd, cli.json),
        Command::Findings(cmd) => findings::run(&data, cmd, cli.json),
        Command::Review(cmd) => review::run(&data, cmd, cli.json),
        Command::New(args) => new::run(*args),
        Command::Propose(args) => propose::run(*args),
        Command::Index(cmd) => index::run(&data, cmd, cli.json),
        Command::Daemon(cmd) => daemon::run(&data, cmd, cli.json),
        Command::Stdio {
            tool_names,
            full_descriptions,
        } => {
            let publication = daemon::publication(tool_names, full_descriptions);
            theurian_server::stdio::run(data, publication)?;
            // Standard output belonged to the session: nothing more is written there.
            std::process::exit(0);
        }
        Command::Auth(cmd) => auth::run(&data, cmd),
        Command::Version => Ok(version::run()),
        Command::Doctor { report } => doctor::run(&data, cli.json, report),
        Command::Compat(cmd) => {
            let (verdict, exit) = compat::run(cmd)?;
            crate::output::success(&verdict, cli.json);
            std::process::exit(exit as i32);
        }
        Command::Ingest => {
            let (report, exit) = ingest::run()?;
            crate::output::success(&report, cli.json);
            std::process::exit(exit as i32);
        }
        Command::Okf(cmd) => {
            let (report, exit) = okf::run(&data, cmd)?;
            crate::output::success(&report, cli.json);
            std::process::exit(exit as i32);
        }
        Command::Feedback(cmd) => feedback::run(&data, cmd),
        Command::Model(cmd) => model::run(&data, cmd),
        Command::Eval(args) => {
            let (report, exit) = eval::run(&data, args, cli.json)?;
            crate::output::success(&report, cli.json);
            std::process::exit(exit as i32);
        }
        Command::Contract(cmd) => {
            let (report, exit) = contract::run(cmd, cli.json)?;
            if cli.json {
                crate::output::success(&report, true);
            }
            std::process::exit(exit as i32);
        }
        Command::Setup {
            client,
            port,
            dry_run,
            approve_conflicts,
        } => {
            let options = setup::Options {
                client,
                port,
                dry_run,
                approve_conflicts,
            };
            let (report, exit) = setup::run(&data, options, cli.json)?;
            if cli.json {
                crate::output::success(&report, true);
            }
            std::process::exit(exit as i32);
        }
        Command::Uninstall {
            dry_run,
            remove_data,
            port,
        } => {
            let report = setup::uninstall(&data, port, dry_run, remove_data)?;
            crate::output::success(&report, cli.json);
            std::process::exit(0);
        }
        Command::Reference { protocol } => {
            let page = if protocol {
                reference::protocol()
            } else {
                reference::markdown()
            };
            let _ = std::io::Write::write_all(&mut std::io::stdout(), page.as_bytes());
            std::process::exit(0);
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = crate::args::Cli::command();
            // Written to memory first: a closed pipe (`| head`) is then a quiet end, not a panic.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "theurian", &mut script);
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            // The script is the output; nothing else is printed.
            std::process::exit(0);
        }
        Command::Bench(cmd) => bench::run(cmd),
        Command::Demo {
            port,
            dir,
            no_serve,
        } => crate::demo::run(port, dir, no_serve),
    }
}

/// The current directory, or a refusal naming why it cannot be read.
pub fn cwd() -> Result<std::path::PathBuf, CoreError> {
    std::env::current_dir().map_err(|e| {
        CoreError::failure(
            format!("The current directory cannot be read: {e}."),
            "cd into your project and try again.",
        )
    })
}
