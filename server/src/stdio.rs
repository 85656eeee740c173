//! MCP over the process's standard streams, for clients that launch their servers as a
//! subprocess (Claude Desktop, IDEs).
//!
//! The same handler, seat and tools as the HTTP daemon, over the same data directory and
//! registry; it takes no daemon lock, so it runs beside a daemon serving that directory. There
//! is no bearer token: whoever can start this process can already read the data directory, so
//! the process boundary is the trust boundary. Standard output carries JSON-RPC and nothing
//! else (logs go to standard error); the session ends when the client closes standard input,
//! or as soon as standard output is gone (nobody is left to read an answer).
//!
//! The transport is this module's own, in front of rmcp's session, for three promises:
//!
//! * **One front door.** Every line goes through [`envelope::check`], as every HTTP body does:
//!   a key given twice, a batch or a bad `tools/call` shape gets the same JSON-RPC error on
//!   both transports.
//! * **Backpressure.** At most [`MAX_IN_FLIGHT`] requests are read and not yet answered; while
//!   that many are open, standard input is not read, so a client that writes without reading
//!   fills its own pipe instead of this process's memory. A line is bounded like an HTTP body.
//! * **No answer lost at the end.** When standard input closes, the requests already read are
//!   answered before the session ends.

use crate::envelope;
use crate::guard::MAX_REQUEST_BODY_BYTES;
use crate::mcp::TheurianMcp;
use crate::state::Publication;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, RequestId, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use rmcp::ServiceExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use theurian_core::datadir::DataDir;
use theurian_core::CoreError;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};

/// Requests read and not yet answered. Beyond this, standard input waits.
pub const MAX_IN_FLIGHT: u32 = 16;
/// The longest line read: the bound on an HTTP body.
const MAX_LINE_BYTES: usize = MAX_REQUEST_BODY_BYTES;
/// Answers queued for standard output before a handler waits for the writer.
const WRITE_QUEUE: usize = MAX_IN_FLIGHT as usize;

fn failed(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The stdio MCP session {what}: {e}."),
        "The client that launched `theurian stdio` can show what it sent; run it with RUST_LOG=debug to see more on standard error.",
    )
}

/// Serves one MCP session on stdin/stdout until the client closes either.
pub fn run(data: DataDir, publication: impl Into<Publication>) -> Result<(), CoreError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed("could not start", e))?;
    let result = runtime.block_on(async move {
        let state = crate::daemon::build_stdio_state(data, publication)?;
        let handler = TheurianMcp::new(state).map_err(|e| failed("could not start", e))?;
        let (input, output) = rmcp::transport::stdio_pipes();
        let transport = Front::start(BufReader::new(input), output);
        let service = handler
            .serve(transport)
            .await
            .map_err(|e| failed("ended during the handshake", e))?;
        tracing::info!("serving MCP on standard input and output");
        service
            .waiting()
            .await
            .map_err(|e| failed("ended abnormally", e))?;
        Ok(())
    });
    // A read of standard input that is not a pipe cannot be cancelled; the session is over,
    // so the process does not wait for it.
    runtime.shutdown_background();
    result
}

/// A line for standard output, and the request it answers (whose slot it frees).
type Outgoing = (Vec<u8>, Option<RequestId>);

/// The permits of the requests read and not yet answered, by id.
type Open = Arc<Mutex<HashMap<RequestId, OwnedSemaphorePermit>>>;

/// The transport rmcp's session runs over: messages from the reader task, answers to the
/// writer task.
pub struct Front {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: mpsc::Sender<Outgoing>,
    /// Flips to true once standard output is gone.
    gone: watch::Receiver<bool>,
}

impl Front {
    /// Starts the reader and writer tasks on the current runtime.
    pub fn start<R, W>(input: R, output: W) -> Front
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT as usize));
        let open: Open = Arc::default();
        let (to_session, incoming) = mpsc::channel(1);
        let (outgoing, to_write) = mpsc::channel(WRITE_QUEUE);
        let (gone_tx, gone) = watch::channel(false);
        tokio::spawn(write_lines(output, to_write, open.clone(), gone_tx));
        tokio::spawn(read_lines(
            input,
            to_session,
            outgoing.clone(),
            slots,
            open,
            gone.clone(),
        ));
        Front {
            incoming,
            outgoing,
            gone,
        }
    }
}

impl Transport<RoleServer> for Front {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            let answers = match &item {
                ServerJsonRpcMessage::Response(r) => Some(r.id.clone()),
                ServerJsonRpcMessage::Error(e) => e.id.clone(),
                _ => None,
            };
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            outgoing
                .send((line, answers))
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        if *self.gone.borrow() {
            return None;
        }
        let mut gone = self.gone.clone();
        tokio::select! {
            message = self.incoming.recv() => message,
            _ = gone.wait_for(|g| *g) => None,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Writes each answer as one line; frees the slot of the request it answers once written. The
/// first failed write means the client stopped reading for good: it is logged once, and the
/// session is told to end.
async fn write_lines<W>(
    mut output: W,
    mut lines: mpsc::Receiver<Outgoing>,
    open: Open,
    gone: watch::Sender<bool>,
) where
    W: tokio::io::AsyncWrite + Unpin,
{
    while let Some((mut line, answers)) = lines.recv().await {
        line.push(b'\n');
        let written = match output.write_all(&line).await {
            Ok(()) => output.flush().await,
            Err(e) => Err(e),
        };
        if let Some(id) = answers {
            open.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        }
        if let Err(e) = written {
            tracing::info!(error = %e, "standard output is closed; ending the stdio session");
            let _ = gone.send(true);
            return;
        }
    }
}

/// What one read of a line gave.
enum Line {
    Text(Vec<u8>),
    TooLong,
    End,
}

/// Reads one line of at most [`MAX_LINE_BYTES`], without its newline; the rest of a longer
/// line is read and dropped. A last line without a newline counts as a line.
async fn read_line<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(if over {
                Line::TooLong
            } else if line.is_empty() {
                Line::End
            } else {
                Line::Text(line)
            });
        }
        let newline = buffer.iter().position(|b| *b == b'\n');
        let chunk = &buffer[..newline.unwrap_or(buffer.len())];
        if !over && line.len() + chunk.len() <= MAX_LINE_BYTES {
            line.extend_from_slice(chunk);
        } else {
            over = true;
            line = Vec::new();
        }
        let consumed = chunk.len() + usize::from(newline.is_some());
        input.consume(consumed);
        if newline.is_some() {
            return Ok(if over {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
    }
}

/// Reads requests while a slot is free: each line through the front door, faults answered
/// here, messages handed to the session. At the end of input, waits until every request read
/// has been answered, then ends the session.
async fn read_lines<R>(
    mut input: R,
    to_session: mpsc::Sender<ClientJsonRpcMessage>,
    to_write: mpsc::Sender<Outgoing>,
    slots: Arc<Semaphore>,
    open: Open,
    gone: watch::Receiver<bool>,
) where
    R: AsyncBufRead + Unpin,
{
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        if *gone.borrow() {
            return;
        }
        let line = match read_line(&mut input).await {
            Ok(Line::Text(line)) => line,
            Ok(Line::TooLong) => {
                let fault = envelope::too_long_line(MAX_LINE_BYTES);
                let _ = to_write.send((fault, None)).await;
                continue;
            }
            Ok(Line::End) => break,
            Err(e) => {
                tracing::info!(error = %e, "standard input failed; ending the stdio session");
                break;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message = envelope::check(&line).and_then(|value| {
            serde_json::from_value::<ClientJsonRpcMessage>(value.clone())
                .map_err(|_| envelope::not_mcp(&value))
        });
        let admitted = message.and_then(|message| admit(message, slot, &open));
        match admitted {
            Err(fault) => {
                let _ = to_write.send((fault.line(), None)).await;
            }
            Ok(message) => {
                if to_session.send(message).await.is_err() {
                    return;
                }
            }
        }
    }
    // Every slot back means every request read has been answered (or the writer is gone).
    let mut gone = gone;
    tokio::select! {
        _ = slots.acquire_many(MAX_IN_FLIGHT) => {}
        _ = gone.wait_for(|g| *g) => {}
    }
}

/// Holds a request's slot until its answer is written. A request reusing an open id is
/// refused (two answers could not be told apart, and the slot count would drift); a cancelled
/// request's slot is freed at once, because the session never answers it.
fn admit(
    message: ClientJsonRpcMessage,
    slot: OwnedSemaphorePermit,
    open: &Open,
) -> Result<ClientJsonRpcMessage, envelope::Fault> {
    let mut open = open.lock().unwrap_or_else(|p| p.into_inner());
    match &message {
        ClientJsonRpcMessage::Request(request) => {
            if open.contains_key(&request.id) {
                let id = serde_json::to_value(&request.id).unwrap_or_default();
                return Err(envelope::id_in_use(id));
            }
            open.insert(request.id.clone(), slot);
        }
        ClientJsonRpcMessage::Notification(note) => {
            if let ClientNotification::CancelledNotification(cancelled) = &note.notification {
                if let Some(id) = &cancelled.params.request_id {
                    open.remove(id);
                }
            }
        }
        _ => {}
    }
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_past_the_bound_is_refused_and_the_next_line_read_whole() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\n{\"a\":1}\n{\"b\":2}");
        let mut reader = BufReader::new(&input[..]);
        assert!(matches!(read_line(&mut reader).await, Ok(Line::TooLong)));
        assert!(matches!(read_line(&mut reader).await, Ok(Line::Text(l)) if l == b"{\"a\":1}"));
        assert!(matches!(read_line(&mut reader).await, Ok(Line::Text(l)) if l == b"{\"b\":2}"));
        assert!(matches!(read_line(&mut reader).await, Ok(Line::End)));
    }
}
