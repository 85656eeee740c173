//! Publishes committed outbox rows to Kafka. At-least-once; consumers dedupe on event_id.

use std::time::Duration;

use crate::outbox::{KafkaProducer, OutboxRow};
use crate::store::Pool;

pub const TOPIC: &str = "ledger.events.v1";
const BATCH_SIZE: i64 = 500;
const IDLE_POLL: Duration = Duration::from_millis(200);

pub async fn run(pool: Pool, producer: KafkaProducer) -> anyhow::Result<()> {
    loop {
        let mut tx = pool.begin().await?;
        let rows: Vec<OutboxRow> = sqlx::query_as(
            "SELECT id, event_id, account_id, payload FROM outbox \
             WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
        )
        .bind(BATCH_SIZE)
        .fetch_all(&mut *tx)
        .await?;
        for row in &rows {
            producer.send(TOPIC, &row.account_id, &row.event_id, &row.payload).await?;
        }
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        sqlx::query("UPDATE outbox SET published_at = now() WHERE id = ANY($1)")
            .bind(&ids)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        if (rows.len() as i64) < BATCH_SIZE {
            tokio::time::sleep(IDLE_POLL).await;
        }
    }
}
