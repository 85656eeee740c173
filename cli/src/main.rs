//! The `theurian` command. Thin: argument parsing lives in `args`, each command in its own file
//! under `commands/`, and all real work in `theurian-core`, `theurian-server` and (for `contract`)
//! `theurian-contract`.

mod args;
mod commands;
mod demo;
mod output;
mod progress;

use clap::Parser;

fn main() {
    let args = args::Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let json = args.json;
    let code = match commands::run(args) {
        Ok(value) => output::success(&value, json),
        Err(err) => output::failure(&err, json),
    };
    std::process::exit(code);
}
