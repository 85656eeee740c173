//! MCP over the process's standard streams, for clients that launch their servers as a
//! subprocess (Claude Desktop, IDEs).
//!
//! The same handler, seat and tools as the HTTP daemon, over the same data directory and
//! registry; it takes no daemon lock, so it runs beside a daemon serving that directory. There
//! is no bearer token: whoever can start this process can already read the data directory, so
//! the process boundary is the trust boundary. Standard output carries JSON-RPC and nothing
//! else (logs go to standard error); the session ends when the client closes standard input.

use crate::mcp::TheurianMcp;
use crate::state::Publication;
use rmcp::ServiceExt;
use theurian_core::datadir::DataDir;
use theurian_core::CoreError;

fn failed(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The stdio MCP session {what}: {e}."),
        "The client that launched `theurian stdio` can show what it sent; run it with RUST_LOG=debug to see more on standard error.",
    )
}

/// Serves one MCP session on stdin/stdout until the client closes it.
pub fn run(data: DataDir, publication: impl Into<Publication>) -> Result<(), CoreError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed("could not start", e))?;
    runtime.block_on(async move {
        let state = crate::daemon::build_stdio_state(data, publication)?;
        let handler = TheurianMcp::new(state).map_err(|e| failed("could not start", e))?;
        let service = handler
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|e| failed("ended during the handshake", e))?;
        tracing::info!("serving MCP on standard input and output");
        service
            .waiting()
            .await
            .map_err(|e| failed("ended abnormally", e))?;
        Ok(())
    })
}
