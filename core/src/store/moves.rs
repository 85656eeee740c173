//! The permissive-moves report: which migrations loosen an item's status (to a surfaceable one)
//! or its sensitivity (to a lower level), and what they undo. Informational for `migrate
//! validate` and `apply`; it changes no state.
//!
//! Per migration, each touched field is compared between the item as the migration found it
//! (`held`) and as it left it. An upsert that loosens a field reports it (`undoes` when the last
//! writer had tightened it, `lowers` otherwise); a plain label write reports only when it
//! replays after a larger-id migration that wrote the same field (`reorders`).

use serde_json::{json, Value};
use std::collections::HashMap;

/// What made a field change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// createItem, deprecateItem, restoreItem, changeSensitivity.
    Label,
    /// upsertRevision.
    Upsert,
}

#[derive(Debug, Clone)]
struct FieldState {
    value: String,
    /// The migration that last wrote the field, and whether that write tightened it.
    last_writer: Option<(String, bool)>,
    /// The largest migration id that has written the field.
    attributed: Option<String>,
}

/// One reported move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    pub migration_id: String,
    pub item_id: String,
    pub field: &'static str,
    pub before: String,
    pub after: String,
    pub undoes: Option<String>,
    pub kind: Option<&'static str>,
}

impl Move {
    /// The row as `--json` prints it.
    pub fn to_json(&self) -> Value {
        json!({"migrationId": self.migration_id, "itemId": self.item_id, "field": self.field, "before": self.before,
               "after": self.after, "undoes": self.undoes, "kind": self.kind})
    }
}

fn surfaceable(status: &str) -> bool {
    crate::model::SURFACEABLE.contains(&status)
}

/// A level's place in the schema's order, least sensitive first.
fn rank(level: &str) -> usize {
    theurian_protocol::migration::Sensitivity::VALUES
        .iter()
        .position(|l| *l == level)
        .unwrap_or(usize::MAX)
}

/// Whether `to` discloses more than `from`.
fn looser(field: &str, to: &str, from: &str) -> bool {
    match field {
        "status" => surfaceable(to) && !surfaceable(from),
        _ => rank(to) < rank(from),
    }
}

/// Whether `to` discloses less than `from`.
fn tighter(field: &str, to: &str, from: &str) -> bool {
    match field {
        "status" => !surfaceable(to) && surfaceable(from),
        _ => rank(to) > rank(from),
    }
}

/// Follows field writes across migrations.
#[derive(Debug, Default)]
pub struct Tracker {
    fields: HashMap<(String, &'static str), FieldState>,
    migration: Option<String>,
    held: HashMap<(String, &'static str), Option<FieldState>>,
    candidates: Vec<((String, &'static str), Cause)>,
    moves: Vec<Move>,
}

impl Tracker {
    /// Seeds a field whose value predates this run (its writer is unknown).
    pub fn seed(&mut self, item: &str, field: &'static str, value: &str) {
        self.fields.insert(
            (item.to_owned(), field),
            FieldState {
                value: value.to_owned(),
                last_writer: None,
                attributed: None,
            },
        );
    }

    /// Starts a migration (closing the previous one).
    pub fn begin(&mut self, migration: &str) {
        self.finish();
        self.migration = Some(migration.to_owned());
    }

    /// Records that the current migration set `field` of `item` to `value`.
    pub fn write(&mut self, item: &str, field: &'static str, value: &str, cause: Cause) {
        let Some(mid) = self.migration.clone() else {
            return;
        };
        let key = (item.to_owned(), field);
        let previous = self.fields.get(&key).cloned();
        self.held
            .entry(key.clone())
            .or_insert_with(|| previous.clone());
        let mut tightening = false;
        if let Some(p) = &previous {
            let loosens = looser(field, value, &p.value);
            let candidate = match cause {
                Cause::Label => {
                    loosens && p.attributed.as_deref().is_some_and(|a| a > mid.as_str())
                }
                Cause::Upsert => loosens,
            };
            if candidate && !self.candidates.iter().any(|(k, _)| *k == key) {
                self.candidates.push((key.clone(), cause));
            }
            tightening = tighter(field, value, &p.value);
        }
        let attributed = match previous.and_then(|p| p.attributed) {
            Some(a) if a.as_str() > mid.as_str() => Some(a),
            _ => Some(mid.clone()),
        };
        self.fields.insert(
            key,
            FieldState {
                value: value.to_owned(),
                last_writer: Some((mid, tightening)),
                attributed,
            },
        );
    }

    fn finish(&mut self) {
        let Some(mid) = self.migration.take() else {
            return;
        };
        for ((item, field), cause) in std::mem::take(&mut self.candidates) {
            let key = (item.clone(), field);
            let (Some(Some(held)), Some(now)) = (self.held.get(&key), self.fields.get(&key)) else {
                continue;
            };
            if !looser(field, &now.value, &held.value) {
                continue;
            }
            let (undoes, kind) = match cause {
                Cause::Label => (held.attributed.clone(), Some("reorders")),
                Cause::Upsert => match &held.last_writer {
                    Some((writer, true)) => (Some(writer.clone()), Some("undoes")),
                    Some((writer, false)) => (Some(writer.clone()), Some("lowers")),
                    None => (None, None),
                },
            };
            self.moves.push(Move {
                migration_id: mid.clone(),
                item_id: item,
                field,
                before: held.value.clone(),
                after: now.value.clone(),
                undoes,
                kind,
            });
        }
        self.held.clear();
    }

    /// Closes the last migration and returns every move, in order.
    pub fn into_moves(mut self) -> Vec<Move> {
        self.finish();
        self.moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_re_upsert_without_sensitivity_lowers_what_the_first_set() {
        let mut t = Tracker::default();
        t.begin("M1");
        t.write("a", "sensitivity", "confidential", Cause::Upsert);
        t.write("a", "status", "approved", Cause::Upsert);
        t.begin("M2");
        t.write("a", "sensitivity", "internal", Cause::Upsert);
        t.write("a", "status", "approved", Cause::Upsert);
        let moves = t.into_moves();
        assert_eq!(
            moves,
            vec![Move {
                migration_id: "M2".into(),
                item_id: "a".into(),
                field: "sensitivity",
                before: "confidential".into(),
                after: "internal".into(),
                undoes: Some("M1".into()),
                kind: Some("lowers")
            }]
        );
    }

    #[test]
    fn undoing_a_withdrawal_and_replaying_out_of_order_are_named() {
        let mut t = Tracker::default();
        t.begin("M1");
        t.write("a", "status", "approved", Cause::Upsert);
        t.begin("M2");
        t.write("a", "status", "deprecated", Cause::Label);
        t.begin("M3");
        t.write("a", "status", "approved", Cause::Upsert);
        let moves = t.into_moves();
        assert_eq!(moves[0].kind, Some("undoes"));
        assert_eq!(moves[0].undoes.as_deref(), Some("M2"));

        let mut t = Tracker::default();
        t.begin("M9");
        t.write("b", "status", "deprecated", Cause::Label);
        t.begin("M5");
        t.write("b", "status", "approved", Cause::Label);
        let moves = t.into_moves();
        assert_eq!(
            (moves[0].kind, moves[0].undoes.as_deref()),
            (Some("reorders"), Some("M9"))
        );
        // A tightening is never reported.
        let mut t = Tracker::default();
        t.begin("M1");
        t.write("c", "sensitivity", "public", Cause::Upsert);
        t.begin("M2");
        t.write("c", "sensitivity", "restricted", Cause::Label);
        assert!(t.into_moves().is_empty());
    }
}
