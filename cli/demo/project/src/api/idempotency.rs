//! Idempotency-Key handling for every POST endpoint.

use sha2::{Digest, Sha256};

use crate::api::errors::ApiError;
use crate::store::idempotency::{IdempotencyRecord, IdempotencyStore};

pub const HEADER: &str = "Idempotency-Key";
pub const RETENTION_HOURS: i64 = 24;

pub enum Outcome {
    /// First time this key is seen; run the handler.
    Fresh,
    /// Same key, same body: return the stored response unchanged.
    Replay(IdempotencyRecord),
}

pub async fn check(
    store: &IdempotencyStore,
    client_id: &str,
    key: Option<&str>,
    canonical_body: &[u8],
) -> Result<Outcome, ApiError> {
    let key = key.ok_or(ApiError::IdempotencyKeyMissing)?;
    let body_hash = Sha256::digest(canonical_body);
    match store.find(client_id, key).await? {
        None => Ok(Outcome::Fresh),
        Some(rec) if rec.in_flight() => Err(ApiError::IdempotencyRequestInProgress),
        Some(rec) if rec.body_hash != body_hash.as_slice() => Err(ApiError::IdempotencyKeyReused),
        Some(rec) => Ok(Outcome::Replay(rec)),
    }
}
