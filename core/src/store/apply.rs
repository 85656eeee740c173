//! Applying pending migrations to one state database, in one `BEGIN IMMEDIATE` transaction: all
//! pending migrations land or none do. Each of the 14 operations follows the reference's
//! semantics, quirks included where they are observable (see formats.md §2.5).

use crate::migrate::Body;
use crate::migrate::{LoadedMigration, MigrationSet};
use crate::time::{isoformat, now_iso, parse};

use super::bulk::Val;
use super::mirror::{Item, Mirror, Revision, Spec};
use super::moves::{Cause, Move, Tracker};
use sqlx::{Connection, SqliteConnection};
use std::collections::{BTreeMap, HashMap, HashSet};
use theurian_protocol::migration::{
    OpAddAlias, OpAddEvidence, OpAddRelation, OpChangeSensitivity, OpCreateItem, OpDeprecateItem,
    OpRegisterSpecification, OpRemoveEvidence, OpRemoveRelation, OpSupersedeSpecification,
    OpUpsertRevision, Operation, SourceAnchor,
};

/// The project row every table hangs off.
#[derive(Debug, Clone)]
pub struct ProjectRow {
    pub project_id: String,
    pub root_path: String,
    pub repository_url: Option<String>,
    pub default_branch: String,
    pub registered_at: String,
}

/// A refusal raised while applying: the whole apply rolls back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// An applied migration's file changed.
    ChecksumMismatch {
        id: String,
        recorded: String,
        observed: String,
    },
    /// `expectedRevision` did not match.
    RevisionConflict {
        item: String,
        expected: Option<String>,
        actual: Option<String>,
    },
    /// Any other refusal the engine raises.
    Refused(String),
    /// SQLite failed.
    Database(String),
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::ChecksumMismatch { id, recorded, observed } => write!(
                f,
                "Migration {id} was applied with checksum {recorded} but the file on disk hashes to {observed}. An applied migration must never be edited."
            ),
            ApplyError::RevisionConflict { item, expected, actual } => write!(
                f,
                "Revision conflict on {item}: migration expected {}, store holds {}",
                expected.as_deref().unwrap_or("<none>"),
                actual.as_deref().unwrap_or("<none>")
            ),
            ApplyError::Refused(m) => f.write_str(m),
            ApplyError::Database(m) => write!(f, "The state database failed: {m}"),
        }
    }
}

impl From<sqlx::Error> for ApplyError {
    fn from(e: sqlx::Error) -> Self {
        ApplyError::Database(e.to_string())
    }
}

/// What an apply did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    pub applied: Vec<String>,
    pub skipped: Vec<String>,
    pub operations_applied: u64,
    /// Items touched by operations that can withdraw them from serving.
    pub affected_items: Vec<String>,
    /// The same items as a set, so recording a touch does not rescan the list.
    affected_seen: HashSet<String>,
    /// Status and sensitivity moves that loosen what is disclosed.
    pub moves: Vec<Move>,
}

/// Migrations already recorded in this database, checked against the files: `(id, checksum)`.
pub async fn recorded(
    conn: &mut SqliteConnection,
    project_id: &str,
) -> Result<Vec<(String, String)>, ApplyError> {
    Ok(sqlx::query_as::<_, (String, String)>("SELECT migration_id, checksum FROM migration_history WHERE project_id = ? ORDER BY sequence")
        .bind(project_id)
        .fetch_all(conn)
        .await?)
}

/// Refuses when a recorded migration's file now hashes differently.
pub fn check_checksums(
    recorded: &[(String, String)],
    set: &MigrationSet,
) -> Result<(), ApplyError> {
    let by_id: HashMap<&str, &String> = recorded
        .iter()
        .map(|(id, checksum)| (id.as_str(), checksum))
        .collect();
    for m in &set.ordered {
        if let Some(checksum) = by_id.get(m.id.as_str()) {
            if **checksum != m.checksum {
                return Err(ApplyError::ChecksumMismatch {
                    id: m.id.clone(),
                    recorded: (*checksum).clone(),
                    observed: m.checksum.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Applies every pending migration of `set`: the rows are read once, the operations run in
/// memory in application order, and the tables are written back in the same transaction.
pub async fn apply(
    conn: &mut SqliteConnection,
    project: &ProjectRow,
    set: &MigrationSet,
    created: bool,
    progress: &dyn crate::progress::Progress,
) -> Result<ApplyReport, ApplyError> {
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query(
        "INSERT INTO projects (project_id, root_path, repository_url, default_branch, knowledge_directory, registered_at) VALUES (?, ?, ?, ?, '.theurian', ?)
         ON CONFLICT(project_id) DO UPDATE SET root_path = excluded.root_path, repository_url = excluded.repository_url,
         default_branch = excluded.default_branch, knowledge_directory = excluded.knowledge_directory, last_seen_commit = excluded.last_seen_commit",
    )
    .bind(&project.project_id)
    .bind(&project.root_path)
    .bind(&project.repository_url)
    .bind(&project.default_branch)
    .bind(&project.registered_at)
    .execute(&mut *tx)
    .await?;
    // The usual re-run has nothing pending: the history alone shows it, without loading every
    // item and revision into memory only to write nothing back.
    if !created {
        let history = recorded(&mut tx, &project.project_id).await?;
        check_checksums(&history, set)?;
        let done: HashSet<&str> = history.iter().map(|(id, _)| id.as_str()).collect();
        if set.ordered.iter().all(|m| done.contains(m.id.as_str())) {
            tx.commit().await?;
            return Ok(ApplyReport {
                skipped: set.ordered.iter().map(|m| m.id.clone()).collect(),
                ..ApplyReport::default()
            });
        }
    }
    let mut mirror = Mirror::load(&mut tx, &project.project_id).await?;
    let recorded: Vec<(String, String)> = mirror
        .history
        .iter()
        .map(|(id, ck, _, _)| (id.clone(), ck.clone()))
        .collect();
    check_checksums(&recorded, set)?;
    let done: HashSet<&str> = recorded.iter().map(|(id, _)| id.as_str()).collect();
    let mut report = ApplyReport::default();
    let mut sequence = mirror.history.iter().map(|h| h.3).max().unwrap_or(0);
    let mut tracker = Tracker::default();
    for (id, item) in &mirror.items {
        tracker.seed(id, "status", &item.status);
        tracker.seed(id, "sensitivity", &item.sensitivity);
    }
    progress.stage("applying migrations", Some(set.ordered.len() as u64));
    for m in &set.ordered {
        progress.step();
        if done.contains(m.id.as_str()) {
            report.skipped.push(m.id.clone());
            continue;
        }
        tracker.begin(&m.id);
        Engine {
            mirror: &mut mirror,
            project: &project.project_id,
            migration: m,
            report: &mut report,
            tracker: &mut tracker,
        }
        .run()?;
        sequence += 1;
        mirror
            .history
            .push((m.id.clone(), m.checksum.clone(), now_iso(), sequence));
        report.applied.push(m.id.clone());
    }
    report.moves = tracker.into_moves();
    if created || !report.applied.is_empty() {
        progress.stage("writing the state", None);
        mirror.write(&mut tx, &project.project_id).await?;
    }
    tx.commit().await?;
    Ok(report)
}

struct Engine<'a> {
    mirror: &'a mut Mirror,
    project: &'a str,
    migration: &'a LoadedMigration,
    report: &'a mut ApplyReport,
    tracker: &'a mut Tracker,
}

/// Replays the whole set from empty, in memory, touching no database: the permissive-moves
/// report `migrate validate` prints, or the refusal an apply would meet.
pub fn replay(set: &MigrationSet) -> Result<Vec<Move>, ApplyError> {
    replay_mirror(set).map(|(_, moves)| moves)
}

/// The replay itself: the rows the set ends with, and its permissive moves.
fn replay_mirror(set: &MigrationSet) -> Result<(Mirror, Vec<Move>), ApplyError> {
    let mut mirror = Mirror::default();
    let mut report = ApplyReport::default();
    let mut tracker = Tracker::default();
    for m in &set.ordered {
        tracker.begin(&m.id);
        Engine {
            mirror: &mut mirror,
            project: "replay",
            migration: m,
            report: &mut report,
            tracker: &mut tracker,
        }
        .run()?;
    }
    Ok((mirror, tracker.into_moves()))
}

/// What the landed set makes of one item: the fields a proposal drafted against it inherits
/// or must respect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemView {
    pub status: String,
    pub current: Option<String>,
    pub namespace: String,
    pub kind: String,
    pub owner: String,
    pub trust: String,
    pub sensitivity: String,
}

/// Replays the landed set in memory and returns `item` as it ends up; None when no
/// `createItem` or `upsertRevision` in the set names it (then nothing is replayed).
pub fn replay_item(set: &MigrationSet, item: &str) -> Result<Option<ItemView>, ApplyError> {
    let mentioned = set.ordered.iter().any(|m| {
        m.doc.operations.iter().any(|op| match op {
            Operation::CreateItem(c) => c.item_id.as_str() == item,
            Operation::UpsertRevision(u) => u.item_id.as_str() == item,
            _ => false,
        })
    });
    if !mentioned {
        return Ok(None);
    }
    Ok(replay_items(set, &[item])?.remove(item))
}

/// Replays the set once and returns each named item that exists at its end.
pub fn replay_items(
    set: &MigrationSet,
    items: &[&str],
) -> Result<BTreeMap<String, ItemView>, ApplyError> {
    let (mirror, _) = replay_mirror(set)?;
    Ok(items
        .iter()
        .filter_map(|item| {
            mirror.items.get(*item).map(|i| {
                (
                    (*item).to_owned(),
                    ItemView {
                        status: i.status.clone(),
                        current: i.current.clone(),
                        namespace: i.namespace.clone(),
                        kind: i.kind.clone(),
                        owner: i.owner.clone(),
                        trust: i.trust.clone(),
                        sensitivity: i.sensitivity.clone(),
                    },
                )
            })
        })
        .collect())
}

/// JSON text as Python's `json.dumps` writes a list of strings (", " between items); the one
/// spacing formatter the token pricing already uses.
fn json_list(items: &[String]) -> String {
    crate::model::text::priced_json(&serde_json::json!(items))
}

fn opt(s: Option<impl ToString>) -> Val {
    Val::Text(s.map(|v| v.to_string()))
}

impl Engine<'_> {
    fn touch(&mut self, item: &str) {
        if self.report.affected_seen.insert(item.to_owned()) {
            self.report.affected_items.push(item.to_owned());
        }
    }

    /// A label write of an item's status (deprecate, restore); the permissive-moves tracker
    /// sees it like every other status write.
    fn set_status(&mut self, item: &str, status: &str) -> Result<(), ApplyError> {
        let Some(i) = self.mirror.items.get_mut(item) else {
            return Err(ApplyError::Refused(format!(
                "Cannot change the status of unknown item {item}"
            )));
        };
        i.status = status.to_owned();
        self.tracker.write(item, "status", status, Cause::Label);
        Ok(())
    }

    fn relation(&mut self, source: &str, kind: &str, target: &str, note: Option<&str>) {
        let key = (source.to_owned(), kind.to_owned(), target.to_owned());
        if self.mirror.relation_keys.insert(key) {
            self.mirror.relations.push((
                source.to_owned(),
                kind.to_owned(),
                target.to_owned(),
                note.map(str::to_owned),
                now_iso(),
            ));
        }
    }

    /// Runs the migration's operations in order against the mirror.
    fn run(&mut self) -> Result<(), ApplyError> {
        let mut bodies = self.migration.bodies.iter();
        for op in &self.migration.doc.operations {
            self.report.operations_applied += 1;
            match op {
                Operation::CreateItem(c) => self.create_item(c),
                Operation::UpsertRevision(u) => {
                    let body = bodies.next().ok_or_else(|| {
                        ApplyError::Refused(format!(
                            "{}: a revision body went missing between load and apply",
                            self.migration.id
                        ))
                    })?;
                    self.upsert(u, body)?;
                    self.touch(&u.item_id);
                }
                Operation::DeprecateItem(d) => self.deprecate(d)?,
                Operation::RestoreItem(r) => {
                    self.set_status(&r.item_id, "approved")?;
                    self.touch(&r.item_id);
                }
                Operation::AddRelation(r) => self.add_relation(r)?,
                Operation::RemoveRelation(r) => self.remove_relation(r),
                Operation::AddAlias(a) => self.add_alias(a)?,
                Operation::RemoveAlias(a) => {
                    self.mirror.aliases.remove(a.alias.as_str());
                }
                Operation::ChangeSensitivity(c) => self.change_sensitivity(c)?,
                Operation::ChangeOwner(c) => self.item_mut(&c.item_id)?.owner = c.owner.to_string(),
                Operation::RegisterSpecification(s) => self.register_spec(s)?,
                Operation::SupersedeSpecification(s) => self.supersede_spec(s),
                Operation::AddEvidence(e) => self.add_evidence(e)?,
                Operation::RemoveEvidence(e) => self.remove_evidence(e),
            }
        }
        Ok(())
    }

    /// The item an operation names, or the refusal that it is unknown.
    fn item_mut(&mut self, item: &str) -> Result<&mut Item, ApplyError> {
        let migration = self.migration;
        self.mirror.items.get_mut(item).ok_or_else(|| {
            ApplyError::Refused(format!("{} references unknown item {item}", migration.id))
        })
    }

    /// A new item starts as a draft; creating one that exists changes nothing.
    fn create_item(&mut self, c: &OpCreateItem) {
        if self.mirror.items.contains_key(c.item_id.as_str()) {
            return;
        }
        let item = Item {
            namespace: c.namespace.to_string(),
            kind: c.kind.to_string(),
            status: "draft".into(),
            current: None,
            owner: c.owner.to_string(),
            trust: c.trust_level.to_string(),
            sensitivity: c.sensitivity.to_string(),
            tenant: "local".into(),
            acl: "default".into(),
            valid_from: now_iso(),
            valid_to: None,
        };
        self.mirror.items.insert(c.item_id.to_string(), item);
        let sensitivity = c.sensitivity.to_string();
        self.tracker
            .write(&c.item_id, "status", "draft", Cause::Label);
        self.tracker
            .write(&c.item_id, "sensitivity", &sensitivity, Cause::Label);
    }

    /// Deprecation, with the `supersedes` relation when a successor is named.
    fn deprecate(&mut self, d: &OpDeprecateItem) -> Result<(), ApplyError> {
        self.set_status(&d.item_id, "deprecated")?;
        if let Some(by) = &d.superseded_by {
            let reason = d.reason.as_ref().map(|r| r.as_str());
            self.relation(by, "supersedes", &d.item_id, reason);
        }
        self.touch(&d.item_id);
        Ok(())
    }

    fn add_relation(&mut self, r: &OpAddRelation) -> Result<(), ApplyError> {
        if r.source_item_id.as_str() == r.target_item_id.as_str() {
            return Err(ApplyError::Refused(format!(
                "Self-relation on {} via {}",
                r.source_item_id.as_str(),
                r.relation_type
            )));
        }
        let note = r.note.as_ref().map(|n| n.as_str());
        let kind = r.relation_type.to_string();
        self.relation(&r.source_item_id, &kind, &r.target_item_id, note);
        Ok(())
    }

    fn remove_relation(&mut self, r: &OpRemoveRelation) {
        let key = (
            r.source_item_id.to_string(),
            r.relation_type.to_string(),
            r.target_item_id.to_string(),
        );
        if self.mirror.relation_keys.remove(&key) {
            self.mirror
                .relations
                .retain(|(s, k, t, _, _)| !(s == &key.0 && k == &key.1 && t == &key.2));
        }
    }

    fn add_alias(&mut self, a: &OpAddAlias) -> Result<(), ApplyError> {
        if a.alias.as_str() == a.item_id.as_str() {
            return Err(ApplyError::Refused(format!(
                "Alias {} cannot point at itself",
                a.alias.as_str()
            )));
        }
        let target = (a.item_id.to_string(), now_iso());
        self.mirror.aliases.insert(a.alias.to_string(), target);
        Ok(())
    }

    fn change_sensitivity(&mut self, c: &OpChangeSensitivity) -> Result<(), ApplyError> {
        let sensitivity = c.sensitivity.to_string();
        self.item_mut(&c.item_id)?.sensitivity = sensitivity.clone();
        self.tracker
            .write(&c.item_id, "sensitivity", &sensitivity, Cause::Label);
        self.touch(&c.item_id);
        Ok(())
    }

    /// A specification is registered against its item's current revision; registering it
    /// again keeps what superseded it.
    fn register_spec(&mut self, s: &OpRegisterSpecification) -> Result<(), ApplyError> {
        let Some(revision) = self.item_mut(&s.item_id)?.current.clone() else {
            return Err(ApplyError::Refused(format!(
                "{}: cannot register {} against {}, which has no revision yet",
                self.migration.id,
                s.spec_id.as_str(),
                s.item_id.as_str()
            )));
        };
        let superseded_by = self
            .mirror
            .specs
            .get(s.spec_id.as_str())
            .and_then(|old| old.superseded_by.clone());
        let spec = Spec {
            revision_id: revision,
            title: s.spec_id.to_string(),
            status: s.status.to_string(),
            format: s.format.as_str().unwrap_or_default().to_owned(),
            source_uri: s.source_uri.to_string(),
            structured: "{}".into(),
            valid_from: now_iso(),
            valid_to: None,
            superseded_by,
        };
        self.mirror.specs.insert(s.spec_id.to_string(), spec);
        Ok(())
    }

    fn supersede_spec(&mut self, s: &OpSupersedeSpecification) {
        if let Some(spec) = self.mirror.specs.get_mut(s.spec_id.as_str()) {
            spec.status = "superseded".into();
            spec.superseded_by = Some(s.superseded_by.to_string());
        }
    }

    /// Evidence is keyed by item and source URI: adding it again replaces the row, which then
    /// moves to the end as a delete and insert would.
    fn add_evidence(&mut self, e: &OpAddEvidence) -> Result<(), ApplyError> {
        if e.description.trim().is_empty() {
            return Err(ApplyError::Refused(format!(
                "{}: evidence for {} needs a description that is not blank",
                self.migration.id,
                e.item_id.as_str()
            )));
        }
        let a = &e.anchor;
        let (item, uri) = (e.item_id.to_string(), a.source_uri.to_string());
        self.mirror
            .evidence
            .retain(|(i, u, _)| !(i == &item && u == &uri));
        // The evidence table has no blob column: the anchor's blobSha is dropped.
        let mut values = vec![self.project.into(), item.as_str().into()];
        values.extend(anchor_values(a, false));
        values.extend([
            e.description.as_str().into(),
            Val::Real(e.confidence),
            now_iso().into(),
        ]);
        self.mirror.evidence.push((item, uri, values));
        Ok(())
    }

    fn remove_evidence(&mut self, e: &OpRemoveEvidence) {
        let (item, uri) = (e.item_id.as_str(), e.source_uri.as_str());
        self.mirror
            .evidence
            .retain(|(i, u, _)| !(i == item && u == uri));
    }

    fn upsert(&mut self, u: &OpUpsertRevision, body: &Body) -> Result<(), ApplyError> {
        let mid = self.migration.id.clone();
        let item = u.item_id.as_str();
        let revision = u.revision_id.as_str();
        let actual = self.mirror.items.get(item).and_then(|i| i.current.clone());
        let expected = u.expected_revision.as_ref().map(|e| e.to_string());
        let ok = match &expected {
            None => actual.is_none() || actual.as_deref() == Some(revision),
            Some(e) => actual.as_deref() == Some(e.as_str()),
        };
        if !ok {
            return Err(ApplyError::RevisionConflict {
                item: item.to_owned(),
                expected,
                actual,
            });
        }
        let m = &u.metadata;
        let title = m.title.as_str();
        if title.trim().is_empty() {
            return Err(ApplyError::Refused(format!(
                "{mid}: revision {revision} of {item} has a blank title"
            )));
        }
        let valid_from = match &m.valid_from {
            Some(t) => parse(t).map(|d| isoformat(&d)).ok_or_else(|| {
                ApplyError::Refused(format!("{mid}: validFrom of {revision} is not a timestamp"))
            })?,
            None => now_iso(),
        };
        let valid_to = match &m.valid_to {
            Some(t) => Some(parse(t).ok_or_else(|| {
                ApplyError::Refused(format!("{mid}: validTo of {revision} is not a timestamp"))
            })?),
            None => None,
        };
        if let (Some(to), Some(from)) = (&valid_to, parse(&valid_from)) {
            if *to <= from {
                return Err(ApplyError::Refused(format!("{mid}: revision {revision} of {item} has valid_to {} which must be after valid_from {valid_from}", isoformat(to))));
            }
        }
        let valid_to = valid_to.map(|d| isoformat(&d));
        let labels: Vec<String> = m.labels.iter().flatten().map(|l| l.to_string()).collect();
        if m.source_anchors.is_empty() && !labels.iter().any(|l| l == "authored-in-theurian") {
            return Err(ApplyError::Refused(format!(
                "{mid}: revision {revision} of {item} names no source anchor; give it sourceAnchors, or the label authored-in-theurian when the knowledge originates here"
            )));
        }
        let scope: Vec<String> = m
            .scope
            .as_ref()
            .map(|s| s.paths.iter().map(|p| p.to_string()).collect())
            .unwrap_or_default();
        // Hashed (and checked against the pin) when the body was loaded.
        let sha = body.sha256.clone();
        let (kind, status, trust, sensitivity) = (
            m.kind.to_string(),
            m.status.to_string(),
            m.trust_level.to_string(),
            m.sensitivity.to_string(),
        );
        match self
            .mirror
            .revision_index
            .get(revision)
            .map(|&i| &self.mirror.revisions[i])
        {
            Some(existing) if existing.item_id != item => {
                return Err(ApplyError::Refused(format!(
                    "{mid}: revision {revision} already belongs to item {}, not {item}",
                    existing.item_id
                )));
            }
            Some(existing) if existing.sha != sha => {
                return Err(ApplyError::Refused(format!(
                    "{mid}: revision {revision} already exists with different content"
                )));
            }
            Some(_) => {}
            None => {
                let created_at = parse(&self.migration.doc.created_at)
                    .map(|d| isoformat(&d))
                    .unwrap_or_else(|| self.migration.doc.created_at.clone());
                let values: Vec<Val> = vec![
                    revision.into(),
                    item.into(),
                    self.project.into(),
                    mid.as_str().into(),
                    title.into(),
                    body.text.as_str().into(),
                    m.content_type.as_str().into(),
                    sha.as_str().into(),
                    kind.as_str().into(),
                    m.namespace.as_str().into(),
                    status.as_str().into(),
                    trust.as_str().into(),
                    sensitivity.as_str().into(),
                    m.owner.as_str().into(),
                    m.tenant_id.as_str().into(),
                    m.acl_group.as_str().into(),
                    json_list(&labels).into(),
                    json_list(&scope).into(),
                    Val::Text(None),
                    valid_from.as_str().into(),
                    valid_to.clone().into(),
                    self.migration.doc.author.as_str().into(),
                    created_at.into(),
                    Val::Text(None),
                ];
                self.mirror
                    .revision_index
                    .insert(revision.to_owned(), self.mirror.revisions.len());
                self.mirror.revisions.push(Revision {
                    values,
                    item_id: item.to_owned(),
                    sha: sha.clone(),
                });
                for a in &m.source_anchors {
                    self.mirror
                        .anchors
                        .push(anchor_row(revision, self.project, a));
                }
            }
        }
        // Create the item from the metadata if need be, then point it at this revision and take
        // every label from it (an upsert resets earlier label changes, as the reference does).
        self.tracker.write(item, "status", &status, Cause::Upsert);
        self.tracker
            .write(item, "sensitivity", &sensitivity, Cause::Upsert);
        self.mirror.items.insert(
            item.to_owned(),
            Item {
                namespace: m.namespace.to_string(),
                kind,
                status,
                current: Some(revision.to_owned()),
                owner: m.owner.to_string(),
                trust,
                sensitivity,
                tenant: m.tenant_id.to_string(),
                acl: m.acl_group.to_string(),
                valid_from,
                valid_to,
            },
        );
        Ok(())
    }
}

fn anchor_row(revision: &str, project: &str, a: &SourceAnchor) -> Vec<Val> {
    let mut row = vec![revision.into(), project.into()];
    row.extend(anchor_values(a, true));
    row
}

/// An anchor's columns in table order: provider, source URI, repository, commit, (blob,) file
/// path, line range, external id.
fn anchor_values(a: &SourceAnchor, with_blob: bool) -> Vec<Val> {
    let mut v = vec![
        a.provider.as_str().into(),
        a.source_uri.as_str().into(),
        opt(a.repository.as_ref().map(|r| r.as_str())),
        opt(a.commit_sha.as_ref().map(|r| r.as_str())),
    ];
    if with_blob {
        v.push(opt(a.blob_sha.as_ref().map(|r| r.as_str())));
    }
    v.extend([
        opt(a.file_path.as_ref().map(|r| r.as_str())),
        Val::Int(a.line_start.map(|n| n.get() as i64)),
        Val::Int(a.line_end.map(|n| n.get() as i64)),
        opt(a.external_id.as_ref().map(|r| r.as_str())),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::json_list;

    #[test]
    fn label_lists_are_spaced_like_python_and_keep_quotes_inside_labels() {
        assert_eq!(json_list(&[]), "[]");
        assert_eq!(json_list(&["a".into(), "b".into()]), r#"["a", "b"]"#);
        // Quotes and commas inside a label survive the spacing.
        let tricky = vec![r#"x","y"#.to_owned()];
        let back: Vec<String> = serde_json::from_str(&json_list(&tricky)).expect("json");
        assert_eq!(back, tricky);
    }
}
