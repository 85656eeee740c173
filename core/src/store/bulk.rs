//! Writing many rows with few round trips: multi-row `INSERT`s of bound values, in chunks below
//! SQLite's parameter limit. Each call to SQLite through sqlx costs a round trip to its worker
//! thread (tens of microseconds here), so the apply path writes tables, not rows.

use sqlx::sqlite::SqliteArguments;
use sqlx::{Arguments, SqliteConnection};

/// One bound value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Text(Option<String>),
    Int(Option<i64>),
    Real(f64),
}

impl From<&str> for Val {
    fn from(s: &str) -> Self {
        Val::Text(Some(s.to_owned()))
    }
}
impl From<String> for Val {
    fn from(s: String) -> Self {
        Val::Text(Some(s))
    }
}
impl From<Option<String>> for Val {
    fn from(s: Option<String>) -> Self {
        Val::Text(s)
    }
}
impl From<Option<i64>> for Val {
    fn from(n: Option<i64>) -> Self {
        Val::Int(n)
    }
}
impl From<i64> for Val {
    fn from(n: i64) -> Self {
        Val::Int(Some(n))
    }
}
impl From<f64> for Val {
    fn from(n: f64) -> Self {
        Val::Real(n)
    }
}

/// Most parameters bound in one statement (SQLite allows 32766).
const MAX_PARAMS: usize = 30_000;

/// Inserts `rows` into `table` (`columns` in order). `table` and `columns` are this crate's own
/// constants, never input, so the statement text is safe to assemble. The rows are taken, so
/// their text moves into the statement's arguments: an apply writes tens of megabytes of
/// bodies, and copying them again into freshly faulted memory cost more than building them.
pub async fn insert(
    conn: &mut SqliteConnection,
    table: &'static str,
    columns: &'static [&'static str],
    rows: Vec<Vec<Val>>,
) -> Result<(), sqlx::Error> {
    let width = columns.len();
    let per_chunk = (MAX_PARAMS / width).max(1);
    let row_placeholders = format!("({})", vec!["?"; width].join(", "));
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<Vec<Val>> = rows.by_ref().take(per_chunk).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES {}",
            columns.join(", "),
            vec![row_placeholders.as_str(); chunk.len()].join(", ")
        );
        let mut args = SqliteArguments::default();
        for v in chunk.into_iter().flatten() {
            let added = match v {
                Val::Text(s) => args.add(s),
                Val::Int(n) => args.add(n),
                Val::Real(f) => args.add(f),
            };
            added.map_err(sqlx::Error::Encode)?;
        }
        sqlx::query_with(sqlx::AssertSqlSafe(sql), args)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}
