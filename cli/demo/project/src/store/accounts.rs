//! Account row locking. Always lock in ascending id order to avoid deadlocks.

use sqlx::{Postgres, Transaction as PgTx};

use crate::store::{AccountId, AccountRow, StoreError};

pub async fn lock_accounts_in_order(
    tx: &mut PgTx<'_, Postgres>,
    ids: &[AccountId],
) -> Result<Vec<AccountRow>, StoreError> {
    let mut ids = ids.to_vec();
    ids.sort();
    ids.dedup();
    // lock_timeout (500ms) is set per transaction; a timeout surfaces as LEDGER_BUSY.
    let rows = sqlx::query_as::<_, AccountRow>(
        "SELECT id, state, currency, balance_minor FROM accounts \
         WHERE id = ANY($1) ORDER BY id FOR UPDATE",
    )
    .bind(&ids)
    .fetch_all(&mut **tx)
    .await
    .map_err(StoreError::from)?;
    if rows.len() != ids.len() {
        return Err(StoreError::AccountNotFound);
    }
    Ok(rows)
}
