//! `theurian compat check`: the gate a client plugin runs before it uses this Core.
//!
//! The verdict is printed as the schema `protocol/compat-verdict.schema.json` describes, on
//! stdout in every case (a plugin script reads it whichever way the check went), and the exit
//! code carries the decision: 0 compatible, 3 incompatible, 2 an unusable declaration.

use crate::args::{CompatCheckArgs, CompatCommand};
use serde_json::Value;
use theurian_core::compat;
use theurian_core::{CoreError, Exit};

/// The verdict to print and the exit code to end with.
pub fn run(cmd: CompatCommand) -> Result<(Value, Exit), CoreError> {
    match cmd {
        CompatCommand::Check(args) => check(args),
    }
}

fn check(args: CompatCheckArgs) -> Result<(Value, Exit), CoreError> {
    // Cargo only accepts Semantic Versioning package versions, so this holds for every build.
    let core = semver::Version::parse(theurian_core::VERSION).map_err(|e| {
        CoreError::failure(
            format!(
                "This build reports the version {}, which is not a Semantic Versioning version ({e}).",
                theurian_core::VERSION
            ),
            "Install a released Theurian build.",
        )
    })?;
    let protocol = theurian_protocol::PROTOCOL_VERSION;
    let declared = match &args.declaration {
        Some(file) => compat::from_file(file),
        None => compat::from_values(
            args.plugin_version.as_deref().unwrap_or_default(),
            args.core_minimum.as_deref().unwrap_or_default(),
            args.core_maximum_exclusive.as_deref().unwrap_or_default(),
            args.protocol_version.as_deref().unwrap_or_default(),
        ),
    };
    let (verdict, exit) = match declared {
        Ok(decl) => {
            let verdict = compat::resolve(&decl, &core, protocol);
            let exit = if verdict.compatible {
                Exit::Ok
            } else {
                Exit::Incompatible
            };
            (verdict, exit)
        }
        Err(e) => (compat::invalid(&e, &core, protocol), Exit::Usage),
    };
    let value = serde_json::to_value(&verdict).map_err(|e| {
        CoreError::failure(
            format!("The verdict could not be written as JSON ({e})."),
            "Report this as a bug.",
        )
    })?;
    Ok((value, exit))
}
