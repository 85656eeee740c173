//! The command-line reference, rendered from the clap definitions themselves so it cannot
//! drift from what the binary accepts: every command's long help, in tree order, as Markdown.
//! `docs/cli.md` is this output; a test fails when the two differ and names the command that
//! refreshes it.

use clap::CommandFactory;

fn walk(cmd: &mut clap::Command, path: &str, out: &mut String) {
    let name = if path.is_empty() {
        cmd.get_name().to_owned()
    } else {
        format!("{path} {}", cmd.get_name())
    };
    let depth = name.split(' ').count().min(4);
    out.push_str(&format!("{} `{name}`\n\n```text\n", "#".repeat(depth + 1)));
    out.push_str(cmd.render_long_help().to_string().trim_end());
    out.push_str("\n```\n\n");
    let mut subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .cloned()
        .collect();
    for sub in &mut subs {
        walk(sub, &name, out);
    }
}

/// The whole reference.
pub fn markdown() -> String {
    let mut cmd = crate::args::Cli::command();
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n<!-- generated from the clap definitions by `theurian reference`; do not edit by hand.\n     Refresh with: THEURIAN_BLESS=1 cargo test -p theurian-cli --test it cli_reference -->\n\n",
    );
    walk(&mut cmd, "", &mut out);
    out
}
