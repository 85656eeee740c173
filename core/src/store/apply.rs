//! Applying pending migrations to one state database, in one `BEGIN IMMEDIATE` transaction: all
//! pending migrations land or none do. Each of the 14 operations follows the reference's
//! semantics, quirks included where they are observable (see formats.md §2.5).

use super::time::{isoformat, now_iso, parse};
use crate::migrate::load::sha256_hex;
use crate::migrate::{LoadedMigration, MigrationSet};

use sqlx::{Connection, SqliteConnection};
use theurian_protocol::migration::{OpUpsertRevision, Operation, SourceAnchor};

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
    for m in &set.ordered {
        if let Some((_, checksum)) = recorded.iter().find(|(id, _)| *id == m.id) {
            if *checksum != m.checksum {
                return Err(ApplyError::ChecksumMismatch {
                    id: m.id.clone(),
                    recorded: checksum.clone(),
                    observed: m.checksum.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Applies every pending migration of `set`.
pub async fn apply(
    conn: &mut SqliteConnection,
    project: &ProjectRow,
    set: &MigrationSet,
    created: bool,
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
    let recorded = recorded(&mut tx, &project.project_id).await?;
    check_checksums(&recorded, set)?;
    let mut report = ApplyReport::default();
    for m in &set.ordered {
        if recorded.iter().any(|(id, _)| *id == m.id) {
            report.skipped.push(m.id.clone());
            continue;
        }
        let mut engine = Engine {
            tx: &mut tx,
            project: &project.project_id,
            migration: m,
            report: &mut report,
        };
        engine.run().await?;
        sqlx::query(
            "INSERT OR REPLACE INTO migration_history (migration_id, project_id, checksum, applied_at, sequence)
             VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(sequence), 0) + 1 FROM migration_history WHERE project_id = ?))",
        )
        .bind(&m.id)
        .bind(&project.project_id)
        .bind(&m.checksum)
        .bind(now_iso())
        .bind(&project.project_id)
        .execute(&mut *tx)
        .await?;
        report.applied.push(m.id.clone());
    }
    if created || !report.applied.is_empty() {
        sqlx::query(
            "INSERT INTO project_integrity (project_id, expected_surfaceable_count)
             VALUES (?1, (SELECT COUNT(*) FROM knowledge_items WHERE project_id = ?1 AND status IN ('approved', 'draft', 'proposed')))
             ON CONFLICT(project_id) DO UPDATE SET expected_surfaceable_count = excluded.expected_surfaceable_count",
        )
        .bind(&project.project_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(report)
}

struct Engine<'a, 'c> {
    tx: &'a mut sqlx::Transaction<'c, sqlx::Sqlite>,
    project: &'a str,
    migration: &'a LoadedMigration,
    report: &'a mut ApplyReport,
}

/// JSON text as Python's `json.dumps` writes a list of strings by default.
fn json_list(items: &[String]) -> String {
    serde_json::to_string(items)
        .unwrap_or_else(|_| "[]".into())
        .replace("\",\"", "\", \"")
}

impl Engine<'_, '_> {
    async fn item_exists(&mut self, item: &str) -> Result<bool, ApplyError> {
        Ok(sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM knowledge_items WHERE project_id = ? AND item_id = ?",
        )
        .bind(self.project)
        .bind(item)
        .fetch_one(&mut **self.tx)
        .await?
            > 0)
    }

    async fn current_revision(&mut self, item: &str) -> Result<Option<String>, ApplyError> {
        Ok(sqlx::query_scalar::<_, Option<String>>(
            "SELECT current_revision_id FROM knowledge_items WHERE project_id = ? AND item_id = ?",
        )
        .bind(self.project)
        .bind(item)
        .fetch_optional(&mut **self.tx)
        .await?
        .flatten())
    }

    fn touch(&mut self, item: &str) {
        if !self.report.affected_items.iter().any(|i| i == item) {
            self.report.affected_items.push(item.to_owned());
        }
    }

    async fn run(&mut self) -> Result<(), ApplyError> {
        let mut bodies = self.migration.bodies.iter();
        let mid = self.migration.id.clone();
        for op in &self.migration.doc.operations {
            self.report.operations_applied += 1;
            match op {
                Operation::CreateItem(c) => {
                    if !self.item_exists(&c.item_id).await? {
                        sqlx::query(
                            "INSERT INTO knowledge_items (item_id, project_id, namespace, kind, status, current_revision_id, owner, trust_level, sensitivity, tenant_id, acl_group, valid_from, valid_to)
                             VALUES (?, ?, ?, ?, 'draft', NULL, ?, ?, ?, 'local', 'default', ?, NULL)",
                        )
                        .bind(c.item_id.as_str())
                        .bind(self.project)
                        .bind(c.namespace.as_str())
                        .bind(c.kind.to_string())
                        .bind(c.owner.as_str())
                        .bind(c.trust_level.to_string())
                        .bind(c.sensitivity.to_string())
                        .bind(now_iso())
                        .execute(&mut **self.tx)
                        .await?;
                    }
                }
                Operation::UpsertRevision(u) => {
                    let body = bodies.next().ok_or_else(|| {
                        ApplyError::Refused(format!(
                            "{mid}: a revision body went missing between load and apply"
                        ))
                    })?;
                    self.upsert(u, &body.text).await?;
                    self.touch(&u.item_id);
                }
                Operation::DeprecateItem(d) => {
                    self.set_status(&d.item_id, "deprecated").await?;
                    if let Some(by) = &d.superseded_by {
                        self.relation(
                            by,
                            "supersedes",
                            &d.item_id,
                            d.reason.as_ref().map(|r| r.as_str()),
                        )
                        .await?;
                    }
                    self.touch(&d.item_id);
                }
                Operation::RestoreItem(r) => {
                    self.set_status(&r.item_id, "approved").await?;
                    self.touch(&r.item_id);
                }
                Operation::AddRelation(r) => {
                    if r.source_item_id.as_str() == r.target_item_id.as_str() {
                        return Err(ApplyError::Refused(format!(
                            "Self-relation on {} via {}",
                            r.source_item_id.as_str(),
                            r.relation_type
                        )));
                    }
                    self.relation(
                        &r.source_item_id,
                        &r.relation_type.to_string(),
                        &r.target_item_id,
                        r.note.as_ref().map(|n| n.as_str()),
                    )
                    .await?;
                }
                Operation::RemoveRelation(r) => {
                    sqlx::query("DELETE FROM knowledge_relations WHERE project_id = ? AND source_item_id = ? AND relation_type = ? AND target_item_id = ?")
                        .bind(self.project)
                        .bind(r.source_item_id.as_str())
                        .bind(r.relation_type.to_string())
                        .bind(r.target_item_id.as_str())
                        .execute(&mut **self.tx)
                        .await?;
                }
                Operation::AddAlias(a) => {
                    if a.alias.as_str() == a.item_id.as_str() {
                        return Err(ApplyError::Refused(format!(
                            "Alias {} cannot point at itself",
                            a.alias.as_str()
                        )));
                    }
                    sqlx::query("INSERT OR REPLACE INTO knowledge_aliases (alias, item_id, project_id, created_at) VALUES (?, ?, ?, ?)")
                        .bind(a.alias.as_str())
                        .bind(a.item_id.as_str())
                        .bind(self.project)
                        .bind(now_iso())
                        .execute(&mut **self.tx)
                        .await?;
                }
                Operation::RemoveAlias(a) => {
                    sqlx::query("DELETE FROM knowledge_aliases WHERE project_id = ? AND alias = ?")
                        .bind(self.project)
                        .bind(a.alias.as_str())
                        .execute(&mut **self.tx)
                        .await?;
                }
                Operation::ChangeSensitivity(c) => {
                    self.require_item(&c.item_id).await?;
                    sqlx::query("UPDATE knowledge_items SET sensitivity = ? WHERE project_id = ? AND item_id = ?")
                        .bind(c.sensitivity.to_string())
                        .bind(self.project)
                        .bind(c.item_id.as_str())
                        .execute(&mut **self.tx)
                        .await?;
                    self.touch(&c.item_id);
                }
                Operation::ChangeOwner(c) => {
                    self.require_item(&c.item_id).await?;
                    sqlx::query(
                        "UPDATE knowledge_items SET owner = ? WHERE project_id = ? AND item_id = ?",
                    )
                    .bind(c.owner.as_str())
                    .bind(self.project)
                    .bind(c.item_id.as_str())
                    .execute(&mut **self.tx)
                    .await?;
                }
                Operation::RegisterSpecification(s) => {
                    self.require_item(&s.item_id).await?;
                    let Some(revision) = self.current_revision(&s.item_id).await? else {
                        return Err(ApplyError::Refused(format!(
                            "{mid}: cannot register {} against {}, which has no revision yet",
                            s.spec_id.as_str(),
                            s.item_id.as_str()
                        )));
                    };
                    sqlx::query(
                        "INSERT INTO specifications (spec_id, project_id, revision_id, title, status, content_format, source_uri, structured, valid_from, valid_to, superseded_by)
                         VALUES (?1, ?2, ?3, ?1, ?4, ?5, ?6, '{}', ?7, NULL, NULL)
                         ON CONFLICT(project_id, spec_id) DO UPDATE SET revision_id = excluded.revision_id, title = excluded.title, status = excluded.status,
                         content_format = excluded.content_format, source_uri = excluded.source_uri, structured = excluded.structured,
                         valid_from = excluded.valid_from, valid_to = excluded.valid_to",
                    )
                    .bind(s.spec_id.as_str())
                    .bind(self.project)
                    .bind(revision)
                    .bind(s.status.to_string())
                    .bind(s.format.as_str().unwrap_or_default())
                    .bind(s.source_uri.as_str())
                    .bind(now_iso())
                    .execute(&mut **self.tx)
                    .await?;
                }
                Operation::SupersedeSpecification(s) => {
                    sqlx::query("UPDATE specifications SET status = 'superseded', superseded_by = ? WHERE project_id = ? AND spec_id = ?")
                        .bind(s.superseded_by.as_str())
                        .bind(self.project)
                        .bind(s.spec_id.as_str())
                        .execute(&mut **self.tx)
                        .await?;
                }
                Operation::AddEvidence(e) => {
                    if e.description.trim().is_empty() {
                        return Err(ApplyError::Refused(format!(
                            "{mid}: evidence for {} needs a description that is not blank",
                            e.item_id.as_str()
                        )));
                    }
                    let a = &e.anchor;
                    sqlx::query(
                        "INSERT OR REPLACE INTO knowledge_evidence (project_id, item_id, provider, source_uri, repository, commit_sha, file_path, line_start, line_end, external_id, description, confidence, created_at)
                         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(self.project)
                    .bind(e.item_id.as_str())
                    .bind(a.provider.as_str())
                    .bind(a.source_uri.as_str())
                    .bind(a.repository.as_ref().map(|r| r.to_string()))
                    .bind(a.commit_sha.as_ref().map(|r| r.to_string()))
                    .bind(a.file_path.as_ref().map(|r| r.to_string()))
                    .bind(a.line_start.map(|n| n.get() as i64))
                    .bind(a.line_end.map(|n| n.get() as i64))
                    .bind(a.external_id.as_ref().map(|r| r.to_string()))
                    .bind(e.description.as_str())
                    .bind(e.confidence)
                    .bind(now_iso())
                    .execute(&mut **self.tx)
                    .await?;
                }
                Operation::RemoveEvidence(e) => {
                    sqlx::query("DELETE FROM knowledge_evidence WHERE project_id = ? AND item_id = ? AND source_uri = ?")
                        .bind(self.project)
                        .bind(e.item_id.as_str())
                        .bind(e.source_uri.as_str())
                        .execute(&mut **self.tx)
                        .await?;
                }
            }
        }
        Ok(())
    }

    async fn require_item(&mut self, item: &str) -> Result<(), ApplyError> {
        if self.item_exists(item).await? {
            Ok(())
        } else {
            Err(ApplyError::Refused(format!(
                "{} references unknown item {item}",
                self.migration.id
            )))
        }
    }

    async fn set_status(&mut self, item: &str, status: &str) -> Result<(), ApplyError> {
        if !self.item_exists(item).await? {
            return Err(ApplyError::Refused(format!(
                "Cannot change the status of unknown item {item}"
            )));
        }
        sqlx::query("UPDATE knowledge_items SET status = ? WHERE project_id = ? AND item_id = ?")
            .bind(status)
            .bind(self.project)
            .bind(item)
            .execute(&mut **self.tx)
            .await?;
        Ok(())
    }

    async fn relation(
        &mut self,
        source: &str,
        kind: &str,
        target: &str,
        note: Option<&str>,
    ) -> Result<(), ApplyError> {
        sqlx::query("INSERT OR IGNORE INTO knowledge_relations (project_id, source_item_id, relation_type, target_item_id, note, created_at) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(self.project)
            .bind(source)
            .bind(kind)
            .bind(target)
            .bind(note)
            .bind(now_iso())
            .execute(&mut **self.tx)
            .await?;
        Ok(())
    }

    async fn upsert(&mut self, u: &OpUpsertRevision, body: &str) -> Result<(), ApplyError> {
        let mid = &self.migration.id;
        let item = u.item_id.as_str();
        let revision = u.revision_id.as_str();
        let actual = self.current_revision(item).await?;
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
        let sha = sha256_hex(body.as_bytes());
        let existing = sqlx::query_as::<_, (String, String)>("SELECT item_id, content_sha256 FROM knowledge_revisions WHERE revision_id = ? AND project_id = ?")
            .bind(revision)
            .bind(self.project)
            .fetch_optional(&mut **self.tx)
            .await?;
        let created_at = parse(&self.migration.doc.created_at)
            .map(|d| isoformat(&d))
            .unwrap_or_else(|| self.migration.doc.created_at.clone());
        let (kind, status, trust, sensitivity) = (
            m.kind.to_string(),
            m.status.to_string(),
            m.trust_level.to_string(),
            m.sensitivity.to_string(),
        );
        match existing {
            Some((other_item, _)) if other_item != item => {
                return Err(ApplyError::Refused(format!(
                    "{mid}: revision {revision} already belongs to item {other_item}, not {item}"
                )));
            }
            Some((_, other_sha)) if other_sha != sha => {
                return Err(ApplyError::Refused(format!(
                    "{mid}: revision {revision} already exists with different content"
                )));
            }
            Some(_) => {}
            None => {
                sqlx::query(
                    "INSERT INTO knowledge_revisions (revision_id, item_id, project_id, migration_id, title, body, content_type, content_sha256, kind, namespace, status, trust_level,
                     sensitivity, owner, tenant_id, acl_group, labels, scope_paths, structured, valid_from, valid_to, author, created_at, source_commit)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, NULL)",
                )
                .bind(revision)
                .bind(item)
                .bind(self.project)
                .bind(mid)
                .bind(title)
                .bind(body)
                .bind(m.content_type.as_str())
                .bind(&sha)
                .bind(&kind)
                .bind(m.namespace.as_str())
                .bind(&status)
                .bind(&trust)
                .bind(&sensitivity)
                .bind(m.owner.as_str())
                .bind(m.tenant_id.as_str())
                .bind(m.acl_group.as_str())
                .bind(json_list(&labels))
                .bind(json_list(&scope))
                .bind(&valid_from)
                .bind(&valid_to)
                .bind(self.migration.doc.author.as_str())
                .bind(&created_at)
                .execute(&mut **self.tx)
                .await?;
                for a in &m.source_anchors {
                    self.anchor(revision, a).await?;
                }
            }
        }
        if !self.item_exists(item).await? {
            sqlx::query(
                "INSERT INTO knowledge_items (item_id, project_id, namespace, kind, status, current_revision_id, owner, trust_level, sensitivity, tenant_id, acl_group, valid_from, valid_to)
                 VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(item)
            .bind(self.project)
            .bind(m.namespace.as_str())
            .bind(&kind)
            .bind(&status)
            .bind(m.owner.as_str())
            .bind(&trust)
            .bind(&sensitivity)
            .bind(m.tenant_id.as_str())
            .bind(m.acl_group.as_str())
            .bind(&valid_from)
            .bind(&valid_to)
            .execute(&mut **self.tx)
            .await?;
        }
        sqlx::query(
            "UPDATE knowledge_items SET current_revision_id = ?, status = ?, owner = ?, trust_level = ?, sensitivity = ?, namespace = ?, kind = ?, tenant_id = ?, acl_group = ?,
             valid_from = ?, valid_to = ? WHERE project_id = ? AND item_id = ?",
        )
        .bind(revision)
        .bind(&status)
        .bind(m.owner.as_str())
        .bind(&trust)
        .bind(&sensitivity)
        .bind(m.namespace.as_str())
        .bind(&kind)
        .bind(m.tenant_id.as_str())
        .bind(m.acl_group.as_str())
        .bind(&valid_from)
        .bind(&valid_to)
        .bind(self.project)
        .bind(item)
        .execute(&mut **self.tx)
        .await?;
        Ok(())
    }

    async fn anchor(&mut self, revision: &str, a: &SourceAnchor) -> Result<(), ApplyError> {
        sqlx::query(
            "INSERT INTO source_anchors (revision_id, project_id, provider, source_uri, repository, commit_sha, blob_sha, file_path, line_start, line_end, external_id)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(revision)
        .bind(self.project)
        .bind(a.provider.as_str())
        .bind(a.source_uri.as_str())
        .bind(a.repository.as_ref().map(|r| r.to_string()))
        .bind(a.commit_sha.as_ref().map(|r| r.to_string()))
        .bind(a.blob_sha.as_ref().map(|r| r.to_string()))
        .bind(a.file_path.as_ref().map(|r| r.to_string()))
        .bind(a.line_start.map(|n| n.get() as i64))
        .bind(a.line_end.map(|n| n.get() as i64))
        .bind(a.external_id.as_ref().map(|r| r.to_string()))
        .execute(&mut **self.tx)
        .await?;
        Ok(())
    }
}
