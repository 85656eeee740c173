//! Opening a session: where the daemon is, the MCP handshake, and the contract-version check that
//! makes a client built for one protocol refuse a daemon speaking another before any call.

use crate::Error;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use std::sync::Arc;
use std::time::Duration;
use theurian_protocol::local::{endpoint, DataDir, LockInfo};
use theurian_protocol::{PROTOCOL_VERSION, PROTOCOL_VERSION_META_KEY};

/// How a [`Client`] behaves when the daemon is busy or slow.
#[derive(Debug, Clone)]
pub struct Options {
    /// How many times a call refused with `CAPACITY_EXCEEDED` is sent again, each after the
    /// `retryAfterMs` the daemon asked for. `0` hands the first such refusal to the caller.
    pub capacity_retries: u32,
    /// The longest single wait between retries, whatever the daemon asks for.
    pub max_retry_wait: Duration,
    /// How long one call may take before it fails as [`Error::Transport`].
    pub call_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            capacity_retries: 3,
            max_retry_wait: Duration::from_secs(5),
            call_timeout: Duration::from_secs(60),
        }
    }
}

/// One MCP session with a Theurian daemon. Cheap to clone: clones share the session. One method
/// per tool, named after the tool (`knowledge.search` → [`Client::knowledge_search`]).
#[derive(Clone)]
pub struct Client {
    pub(crate) session: Arc<RunningService<RoleClient, ()>>,
    pub(crate) options: Options,
    server_protocol: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server_protocol", &self.server_protocol)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the daemon at `url` (`http://127.0.0.1:7419/mcp`) with its bearer `token`,
    /// runs the MCP handshake and checks the daemon speaks [`PROTOCOL_VERSION`].
    pub async fn connect(url: &str, token: &str) -> Result<Client, Error> {
        Client::connect_with(url, token, Options::default()).await
    }

    /// [`Client::connect`] with explicit [`Options`].
    pub async fn connect_with(url: &str, token: &str, options: Options) -> Result<Client, Error> {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
        );
        let session = tokio::time::timeout(options.call_timeout, ().serve(transport))
            .await
            .map_err(|_| Error::Transport {
                message: format!(
                    "no answer to the MCP handshake within {} s from {url}",
                    options.call_timeout.as_secs()
                ),
            })?
            .map_err(|e| Error::Transport {
                message: format!("the MCP handshake with {url} failed: {e}"),
            })?;
        let announced = session.peer_info().and_then(|info| {
            info.meta
                .as_ref()
                .and_then(|meta| meta.0.get(PROTOCOL_VERSION_META_KEY))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        });
        let mut client = Client {
            session: Arc::new(session),
            options,
            server_protocol: String::new(),
        };
        // A daemon that does not announce its contract in the handshake (the Python reference)
        // still reports it in `system.capabilities`.
        let server = match announced {
            Some(version) => version,
            None => client.capabilities_protocol().await?,
        };
        if server != PROTOCOL_VERSION {
            return Err(Error::Version {
                server,
                client: PROTOCOL_VERSION,
            });
        }
        client.server_protocol = server;
        Ok(client)
    }

    /// Connects to the daemon serving this user's data directory, found the way the `theurian`
    /// command finds it: `$THEURIAN_DATA_DIR` (or `~/.theurian`) holds the token and the lock
    /// file recording the running daemon's port.
    pub async fn from_data_dir() -> Result<Client, Error> {
        Client::from_data_dir_with(Options::default()).await
    }

    /// [`Client::from_data_dir`] with explicit [`Options`].
    pub async fn from_data_dir_with(options: Options) -> Result<Client, Error> {
        Client::connect_through(DataDir::from_env(), options).await
    }

    /// Connects to the daemon serving the data directory at `root`, whatever the environment
    /// says (a daemon started with another `THEURIAN_DATA_DIR`).
    pub async fn from_data_dir_at(
        root: impl AsRef<std::path::Path>,
        options: Options,
    ) -> Result<Client, Error> {
        Client::connect_through(DataDir::at(root.as_ref()), options).await
    }

    async fn connect_through(data: DataDir, options: Options) -> Result<Client, Error> {
        let (url, token) = locate(&data)?;
        Client::connect_with(&url, &token, options)
            .await
            .map_err(|e| match e {
                Error::Transport { message } => Error::Transport {
                    message: format!(
                        "{message} (the lock file {} names a daemon that may have stopped: `theurian daemon status` tells)",
                        data.daemon_lock().display()
                    ),
                },
                other => other,
            })
    }

    /// The Theurian protocol version the daemon reported (equal to [`PROTOCOL_VERSION`]).
    pub fn server_protocol(&self) -> &str {
        &self.server_protocol
    }

    /// Ends the session. Dropping the last clone does the same without waiting.
    pub async fn close(self) {
        if let Ok(mut session) = Arc::try_unwrap(self.session) {
            let _ = session.close().await;
        }
    }

    async fn capabilities_protocol(&self) -> Result<String, Error> {
        let input = theurian_protocol::mcp::SystemCapabilitiesInput::default();
        let answer = self.system_capabilities(&input).await?;
        Ok(answer.protocol_version.to_string())
    }
}

/// The endpoint and token a data directory records.
fn locate(data: &DataDir) -> Result<(String, String), Error> {
    let token_path = data.token();
    let token = match std::fs::read_to_string(&token_path) {
        Ok(text) if !text.trim().is_empty() => text.trim().to_owned(),
        Ok(_) => {
            return Err(Error::Discovery {
                message: format!(
                    "The token file {} is empty: run `theurian auth rotate` to write one.",
                    token_path.display()
                ),
            })
        }
        Err(e) => {
            return Err(Error::Discovery {
                message: format!(
                    "Cannot read the daemon's token at {} ({e}): run `theurian setup`, or set THEURIAN_DATA_DIR to the data directory the daemon serves.",
                    token_path.display()
                ),
            })
        }
    };
    let lock = data.daemon_lock();
    let recorded = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|text| serde_json::from_str::<LockInfo>(text.trim()).ok());
    let Some(info) = recorded else {
        return Err(Error::Discovery {
            message: format!(
                "No running daemon is recorded in {}: start one with `theurian daemon start`.",
                lock.display()
            ),
        });
    };
    Ok((endpoint(info.port), token))
}
