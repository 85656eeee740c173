//! Balanced transactions. `Transaction::new` is the only way to build one.
#![deny(clippy::float_arithmetic, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use crate::ledger::{LedgerError, Posting, TransactionId};
use crate::money::Currency;

#[derive(Debug, Clone)]
pub struct Transaction {
    pub id: TransactionId,
    pub postings: Vec<Posting>,
    pub reverses_transaction_id: Option<TransactionId>,
}

impl Transaction {
    pub fn new(id: TransactionId, postings: Vec<Posting>) -> Result<Self, LedgerError> {
        if postings.len() < 2 {
            return Err(LedgerError::TooFewPostings { count: postings.len() });
        }
        let mut sums: BTreeMap<Currency, i64> = BTreeMap::new();
        for p in &postings {
            let entry = sums.entry(p.amount.currency()).or_insert(0);
            *entry = entry
                .checked_add(p.signed_minor())
                .ok_or(LedgerError::AmountOverflow)?;
        }
        let residuals: Vec<_> = sums.into_iter().filter(|(_, s)| *s != 0).collect();
        if !residuals.is_empty() {
            return Err(LedgerError::Unbalanced { residuals });
        }
        Ok(Self { id, postings, reverses_transaction_id: None })
    }
}
