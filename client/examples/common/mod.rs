//! How the examples find a daemon: `THEURIAN_DATA_DIR` when set, else the daemon `theurian demo`
//! runs (its scratch data directory under the temp directory) when one is recorded there, else
//! the user's own `~/.theurian`.

use theurian_client::{Client, Error, Options};

pub async fn connect() -> Result<Client, Error> {
    let demo = std::env::temp_dir().join("theurian-demo").join("data");
    if std::env::var_os("THEURIAN_DATA_DIR").is_none() && demo.join("daemon.lock").is_file() {
        return Client::from_data_dir_at(&demo, Options::default()).await;
    }
    Client::from_data_dir().await
}

/// The project to read: the first argument after `skip` others, else the demo's.
pub fn project(args: &[String], at: usize) -> String {
    args.get(at)
        .cloned()
        .unwrap_or_else(|| "acme-ledger".into())
}
