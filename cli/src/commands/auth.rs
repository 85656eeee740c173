//! `theurian auth rotate`: a new bearer token.

use crate::args::AuthCommand;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::{token, CoreError};

pub fn run(data: &DataDir, cmd: AuthCommand) -> Result<Value, CoreError> {
    match cmd {
        AuthCommand::Rotate => {
            token::rotate(data)?;
            Ok(json!({
                "rotated": true,
                "tokenFile": data.token().to_string_lossy(),
                "envFile": data.env_file().to_string_lossy(),
                "note": "A running daemon keeps the old token until it restarts: run `theurian daemon stop` and `theurian daemon start`. Clients reading THEURIAN_MCP_TOKEN need `source` of the env file again.",
            }))
        }
    }
}
