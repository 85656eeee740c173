//! Money as integer minor units plus an ISO 4217 currency code. No floats here.
#![deny(clippy::float_arithmetic)]

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Currency([u8; 3]);

/// Number of decimal places per currency. Add a row (and a test) for a new currency.
const EXPONENTS: &[(&str, u32)] = &[("BHD", 3), ("EUR", 2), ("GBP", 2), ("JPY", 0), ("KWD", 3), ("USD", 2)];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Money {
    minor: i64,
    currency: Currency,
}

#[derive(Debug, thiserror::Error)]
pub enum MoneyError {
    #[error("currency mismatch")]
    CurrencyMismatch,
    #[error("amount overflow")]
    Overflow,
    #[error("more decimal places than {0:?} allows")]
    PrecisionExceeded(Currency),
}

impl Money {
    pub fn checked_add(self, other: Money) -> Result<Money, MoneyError> {
        if self.currency != other.currency {
            return Err(MoneyError::CurrencyMismatch);
        }
        let minor = self.minor.checked_add(other.minor).ok_or(MoneyError::Overflow)?;
        Ok(Money { minor, currency: self.currency })
    }

    pub fn currency(&self) -> Currency {
        self.currency
    }
}
