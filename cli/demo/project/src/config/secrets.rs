//! Loads secrets from Vault (AppRole) before the server binds. Nothing is read from files.

use secrecy::SecretString;

use crate::config::vault::{VaultClient, VaultError};

pub struct Secrets {
    pub database_url: SecretString,
    pub kafka_password: SecretString,
    pub webhook_signing_key: SecretString,
    pub treasury_api_token: SecretString,
}

impl std::fmt::Debug for Secrets {
    // Hand-written so that no secret value can reach a log or build output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets { [redacted] }")
    }
}

pub async fn load(vault: &VaultClient) -> Result<Secrets, VaultError> {
    Ok(Secrets {
        database_url: vault.database_creds("ledger-app").await?,
        kafka_password: vault.kv("ledger/kafka", "password").await?,
        webhook_signing_key: vault.kv("ledger/webhooks", "signing_key").await?,
        treasury_api_token: vault.kv("ledger/treasury", "token").await?,
    })
}
