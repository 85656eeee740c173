//! Drafting proposals. A content change (`knowledge.proposeChange`, `theurian propose`) is one `createItem` (a no-op for an existing item) and one
//! `upsertRevision` whose body is staged beside it, checked against the landed migration set
//! (optimistic concurrency on `expectedRevision`, no lowering of an item's sensitivity, no
//! revival of a withdrawn item) and against the migration schema before anything is written.
//!
//! An operations-only draft (`knowledge.generateMigrationDraft`,
//! [`DraftOnly::draft_migration`]) carries relations, aliases, owners, specifications,
//! evidence or deprecation, and is refused anything that adds content or widens what is served.
//!
//! [`DraftOnly`] is what the MCP tools hold: a project and its landed set, and no method that
//! writes anywhere but a new proposal directory.

use super::files::{body_path, create_dir, extension, proposals_dir, slug, write_new};
use super::{DraftError, NEXT_STEPS};
use crate::hash::sha256_hex;
use crate::migrate::emit::to_yaml;
use crate::migrate::load::MIGRATION_SCHEMA;
use crate::migrate::MigrationSet;
use crate::schema_order::{order, order_keeping, schema, Trim};
use crate::store::apply::{replay_item, ItemView};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use theurian_protocol::mcp::ProposalPayload;
use theurian_protocol::migration::{
    Kind, Migration, OpCreateItem, OpUpsertRevision, Operation, RevisionMetadata,
    RevisionMetadataScope, Sensitivity, SourceAnchor, TrustLevel,
};

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> =
    LazyLock::new(|| theurian_protocol::seat::compile(MIGRATION_SCHEMA).map_err(|e| e.to_string()));
static MIGRATION_DOC: LazyLock<Value> = LazyLock::new(|| schema(MIGRATION_SCHEMA));

/// The label that stands in for a source anchor on knowledge authored in Theurian itself.
pub const AUTHORED_HERE: &str = "authored-in-theurian";

/// Who drafted it and why, recorded in `evidence.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    pub agent_id: String,
    pub task_id: String,
    pub model: String,
    pub reasoning: String,
}

/// One source anchor as a draft takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub provider: String,
    pub source_uri: String,
    pub repository: Option<String>,
    pub commit_sha: Option<String>,
    pub file_path: Option<String>,
}

/// A content change to draft.
#[derive(Debug, Clone)]
pub struct ContentRequest {
    pub item_id: String,
    pub title: String,
    pub kind: String,
    pub owner: String,
    pub author: String,
    pub description: String,
    pub body: String,
    pub content_type: String,
    pub evidence: Evidence,
    pub source_anchors: Vec<Anchor>,
    pub labels: Vec<String>,
    pub scope_paths: Vec<String>,
    pub namespace: Option<String>,
    pub trust_level: Option<String>,
    pub sensitivity: Option<String>,
    pub expected_revision: Option<String>,
    pub local: bool,
    /// Write trust level and sensitivity into the revision even when they are defaults (a
    /// review candidate states both).
    pub record_defaults: bool,
}

/// Refuses a draft that appears to carry a secret, before anything is written: a proposal
/// lands in the Git-tracked `proposals/` (its file names come from the title), so waiting for
/// `propose accept` to notice would already have put the secret where it gets committed.
/// Under `security.secretScan: warn` or `off` the draft goes ahead (accept reports under warn).
/// Findings name the field, line, column and family, never the text.
fn screen_secrets(root: &Path, fields: &[(String, &str)]) -> Result<(), DraftError> {
    if crate::secrets::policy(root)? != crate::secrets::Policy::Block {
        return Ok(());
    }
    let mut found = Vec::new();
    for (name, text) in fields {
        for f in crate::secrets::scan(text, 5) {
            found.push(format!("{name}:{}:{}: {}", f.line, f.column, f.family));
        }
        if found.len() >= 10 {
            break;
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(DraftError::refused(
        format!("The draft appears to carry a secret ({}), so nothing was written.", found.join("; ")),
        "Remove the secret and rotate it (it has left your hands), then draft again. If it is a false positive, the project can set `security.secretScan: warn` in .theurian/config.yaml.",
    ))
}

impl ContentRequest {
    /// Every text the request would write, named by its key path.
    fn screened_fields(&self) -> Vec<(String, &str)> {
        let mut fields: Vec<(String, &str)> = vec![
            ("itemId".into(), &self.item_id),
            ("title".into(), &self.title),
            ("owner".into(), &self.owner),
            ("author".into(), &self.author),
            ("description".into(), &self.description),
            ("body".into(), &self.body),
            ("evidence/agentId".into(), &self.evidence.agent_id),
            ("evidence/taskId".into(), &self.evidence.task_id),
            ("evidence/model".into(), &self.evidence.model),
            ("evidence/reasoning".into(), &self.evidence.reasoning),
        ];
        for (i, label) in self.labels.iter().enumerate() {
            fields.push((format!("labels/{i}"), label));
        }
        for (i, path) in self.scope_paths.iter().enumerate() {
            fields.push((format!("scopePaths/{i}"), path));
        }
        for (i, a) in self.source_anchors.iter().enumerate() {
            fields.push((format!("sourceAnchors/{i}/sourceUri"), &a.source_uri));
            for (key, v) in [("repository", &a.repository), ("filePath", &a.file_path)] {
                if let Some(v) = v {
                    fields.push((format!("sourceAnchors/{i}/{key}"), v));
                }
            }
        }
        if let Some(ns) = &self.namespace {
            fields.push(("namespace".into(), ns));
        }
        fields
    }
}

/// `N` fresh ULIDs from one instant, each greater than the one before, so a proposal sorts
/// before its migration and the migration before its revision.
fn consecutive_ids<const N: usize>() -> Result<[String; N], DraftError> {
    let mut generator = ulid::Generator::new();
    let mut ids: [String; N] = std::array::from_fn(|_| String::new());
    for id in &mut ids {
        *id = generator
            .generate()
            .map_err(|_| {
                DraftError::refused(
                    "No fresh id could be minted in this millisecond.",
                    "Send the call again.",
                )
            })?
            .to_string();
    }
    Ok(ids)
}

/// The draft entries, and nothing else: what a write-intent tool is given.
pub struct DraftOnly {
    root: PathBuf,
    set: MigrationSet,
    /// Sensitivity levels the caller may see; an item above them is treated as absent.
    visible: Option<Vec<String>>,
}

fn invalid(field: &str, accepted: &[&str]) -> DraftError {
    DraftError::refused(
        format!("`{field}` accepts {}.", accepted.join(", ")),
        format!("Send one of those values as `{field}`."),
    )
}

fn blank(field: &str) -> DraftError {
    DraftError::refused(
        format!("`{field}` is empty or only white space."),
        format!("Give `{field}` a value."),
    )
}

fn typed<T: TryFrom<String>>(value: String, field: &str) -> Result<T, DraftError> {
    T::try_from(value).map_err(|_| {
        DraftError::refused(
            format!("`{field}` does not fit the migration schema's rule for it."),
            format!("Correct `{field}`; the migration schema under schemas/migrations/ states the rule."),
        )
    })
}

/// Checks the closed vocabularies of a content draft (kind, and trust level and sensitivity
/// when given), before anything else about the request is looked at.
pub fn vocabulary(
    kind: &str,
    trust: Option<&str>,
    sensitivity: Option<&str>,
) -> Result<(Kind, Option<TrustLevel>, Option<Sensitivity>), DraftError> {
    let kind: Kind = kind.parse().map_err(|_| invalid("kind", Kind::VALUES))?;
    let trust = trust
        .map(|t| {
            t.parse()
                .map_err(|_| invalid("trustLevel", TrustLevel::VALUES))
        })
        .transpose()?;
    let sensitivity = sensitivity
        .map(|s| {
            s.parse()
                .map_err(|_| invalid("sensitivity", Sensitivity::VALUES))
        })
        .transpose()?;
    Ok((kind, trust, sensitivity))
}

/// A `default` the migration schema states, at `pointer`, parsed into its type.
fn schema_default<T: std::str::FromStr>(pointer: &str) -> Result<T, DraftError> {
    MIGRATION_DOC
        .pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            DraftError::refused(
                format!("The migration schema states no usable default at {pointer}."),
                "This build is damaged: reinstall theurian.",
            )
        })
}

/// The disclosure order of sensitivities, from the schema.
pub(crate) fn rank(s: &str) -> Option<usize> {
    Sensitivity::VALUES.iter().position(|v| *v == s)
}

impl DraftOnly {
    /// The facade for the project at `root` with its landed migrations loaded.
    pub fn open(root: &Path, visible: Option<Vec<String>>) -> Result<DraftOnly, DraftError> {
        // A set that does not load is a project fault (its own exit code), not a bad request.
        let set = MigrationSet::load(root).map_err(|e| {
            let mut core: crate::CoreError = e.into();
            core.message = format!(
                "The project's landed migrations cannot be loaded, so nothing can be drafted against them: {}",
                core.message
            );
            DraftError::Project(core)
        })?;
        Ok(DraftOnly {
            root: root.to_path_buf(),
            set,
            visible,
        })
    }

    /// The project this facade drafts into.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The landed migration that last changes `item` (creates, revises, retires, restores or
    /// relabels it), in application order. A change to an existing item depends on it: without
    /// that, ordering by `dependsOn` could run the change first, against an older revision.
    fn last_to_change(&self, item: &str) -> Option<&str> {
        self.set
            .ordered
            .iter()
            .rev()
            .find(|m| {
                m.doc.operations.iter().any(|op| {
                    let touched = match op {
                        Operation::CreateItem(o) => &o.item_id,
                        Operation::UpsertRevision(o) => &o.item_id,
                        Operation::DeprecateItem(o) => &o.item_id,
                        Operation::RestoreItem(o) => &o.item_id,
                        Operation::ChangeSensitivity(o) => &o.item_id,
                        Operation::ChangeOwner(o) => &o.item_id,
                        _ => return false,
                    };
                    touched.as_str() == item
                })
            })
            .map(|m| m.id.as_str())
    }

    /// The item as the landed set leaves it, as far as the caller may see it.
    fn current(&self, item: &str) -> Result<Option<ItemView>, DraftError> {
        let view = replay_item(&self.set, item).map_err(|e| {
            DraftError::refused(
                format!("The landed migrations do not replay, so {item}'s current state is unknown: {e}."),
                "Fix the landed migration set (`theurian migrate validate` names the fault), then draft again.",
            )
        })?;
        Ok(view.filter(|v| {
            self.visible
                .as_ref()
                .is_none_or(|levels| levels.contains(&v.sensitivity))
        }))
    }

    /// Drafts a content change and writes its proposal directory.
    pub fn draft_content(&self, req: &ContentRequest) -> Result<ProposalPayload, DraftError> {
        let (kind, trust, sensitivity) = self.checked(req)?;
        let ext = extension(&req.content_type).ok_or_else(|| {
            invalid(
                "contentType",
                theurian_protocol::mcp::KnowledgeProposeChangeInputContentType::VALUES,
            )
        })?;
        let item_id: theurian_protocol::migration::ItemId = typed(req.item_id.clone(), "itemId")?;
        let current = self.current(item_id.as_str())?;
        on_current_base(
            item_id.as_str(),
            current.as_ref(),
            req,
            sensitivity.as_ref(),
        )?;
        let labels = Labels::resolve(trust, sensitivity, current.as_ref(), req.record_defaults)?;
        if req.source_anchors.is_empty() && !req.labels.iter().any(|l| l == AUTHORED_HERE) {
            return Err(DraftError::refused(
                "A revision needs at least one source anchor, or the label `authored-in-theurian` when the knowledge originates here.",
                "Add `sourceAnchors` naming where it came from, or the label `authored-in-theurian`.",
            ));
        }
        let [proposal_id, migration_id, revision_id] = consecutive_ids()?;
        let ids = Ids {
            proposal: proposal_id,
            migration: migration_id,
            body: body_path(item_id.as_str(), &revision_id, ext),
            revision: revision_id,
        };
        let namespace = req
            .namespace
            .clone()
            .or_else(|| current.as_ref().map(|v| v.namespace.clone()))
            .unwrap_or_else(|| {
                let id = item_id.as_str();
                id.rsplit_once('.').map_or(id, |(ns, _)| ns).to_owned()
            });
        let depends_on = match current {
            Some(_) => self.last_to_change(item_id.as_str()).map(str::to_owned),
            None => None,
        };
        let content = Content {
            item_id: &item_id,
            kind,
            namespace,
            labels,
            depends_on,
        };
        let value = content_migration(req, &content, &ids)?;
        self.write_proposal(req, &item_id, &ids, &value)
    }

    /// The request's own checks, before anything is read: nothing blank that a reviewer needs,
    /// no secret in any text, and every vocabulary value known.
    fn checked(
        &self,
        req: &ContentRequest,
    ) -> Result<(Kind, Option<TrustLevel>, Option<Sensitivity>), DraftError> {
        for (field, value) in [
            ("evidence.model", &req.evidence.model),
            ("evidence.reasoning", &req.evidence.reasoning),
            ("title", &req.title),
            ("owner", &req.owner),
            ("author", &req.author),
            ("description", &req.description),
        ] {
            if value.trim().is_empty() {
                return Err(blank(field));
            }
        }
        screen_secrets(self.root(), &req.screened_fields())?;
        vocabulary(
            &req.kind,
            req.trust_level.as_deref(),
            req.sensitivity.as_deref(),
        )
    }

    /// Writes the proposal directory (body, evidence, migration) and answers its payload.
    fn write_proposal(
        &self,
        req: &ContentRequest,
        item_id: &theurian_protocol::migration::ItemId,
        ids: &Ids,
        value: &Value,
    ) -> Result<ProposalPayload, DraftError> {
        let migration_file = format!(
            "{}-{}.yaml",
            ids.migration,
            slug(
                &req.title,
                item_id.as_str().rsplit('.').next().unwrap_or("migration")
            )
        );
        if req.local {
            crate::layout::ensure_gitignore(&self.root.join(".gitignore"))?;
        }
        let dir = create_dir(&self.root, req.local, &ids.proposal)?;
        write_new(&dir, &ids.body, req.body.as_bytes())?;
        let evidence = evidence_json(
            &ids.proposal,
            &ids.migration,
            json!(item_id.as_str()),
            &req.evidence,
            &req.source_anchors,
        );
        write_new(&dir, "evidence.json", evidence.as_bytes())?;
        write_new(&dir, &migration_file, to_yaml(value).as_bytes())?;
        payload(req, ids, &migration_file)
    }
}

/// The ids one content draft is written under, and its body's path below `knowledge/`.
struct Ids {
    proposal: String,
    migration: String,
    revision: String,
    body: String,
}

/// What a content draft writes beside the request's own fields.
struct Content<'a> {
    item_id: &'a theurian_protocol::migration::ItemId,
    kind: Kind,
    namespace: String,
    labels: Labels,
    depends_on: Option<String>,
}

/// The trust level and sensitivity a revision records, and which of them to write even when
/// they equal the schema default.
struct Labels {
    trust: TrustLevel,
    sensitivity: Sensitivity,
    keep: Vec<String>,
}

impl Labels {
    /// The values asked for, else the current revision's, else the schema's defaults. Chosen or
    /// inherited values are written even when they equal the default; only values left to the
    /// default are left out.
    fn resolve(
        trust: Option<TrustLevel>,
        sensitivity: Option<Sensitivity>,
        current: Option<&ItemView>,
        record_defaults: bool,
    ) -> Result<Labels, DraftError> {
        let mut keep = Vec::new();
        if trust.is_some() || current.is_some() || record_defaults {
            keep.push("/operations/1/metadata/trustLevel".to_owned());
        }
        if sensitivity.is_some() || current.is_some() || record_defaults {
            keep.push("/operations/1/metadata/sensitivity".to_owned());
        }
        let trust = match (trust, current) {
            (Some(t), _) => t,
            (None, Some(v)) => v
                .trust
                .parse()
                .map_err(|_| invalid("trustLevel", TrustLevel::VALUES))?,
            (None, None) => {
                schema_default("/$defs/revisionMetadata/properties/trustLevel/default")?
            }
        };
        let sensitivity = match (sensitivity, current) {
            (Some(s), _) => s,
            (None, Some(v)) => v
                .sensitivity
                .parse()
                .map_err(|_| invalid("sensitivity", Sensitivity::VALUES))?,
            (None, None) => {
                schema_default("/$defs/revisionMetadata/properties/sensitivity/default")?
            }
        };
        Ok(Labels {
            trust,
            sensitivity,
            keep,
        })
    }
}

/// Refuses a change drafted against a revision that is not current, or one that would bring a
/// withdrawn item back or lower its sensitivity.
fn on_current_base(
    item_id: &str,
    current: Option<&ItemView>,
    req: &ContentRequest,
    sensitivity: Option<&Sensitivity>,
) -> Result<(), DraftError> {
    let current_rev = current.and_then(|v| v.current.clone());
    match (&current_rev, &req.expected_revision) {
        (None, Some(_)) => {
            return Err(DraftError::Conflict {
                message: format!("{item_id} has no revision yet, so `expectedRevision` cannot name one."),
                remedy: "Leave `expectedRevision` out to create the item's first revision.".into(),
                current: None,
            })
        }
        (Some(rev), None) => {
            return Err(DraftError::Conflict {
                message: format!("{item_id} already exists at revision {rev}; a change to it must say which revision it replaces."),
                remedy: format!("Send `expectedRevision: {rev}` to revise it (CLI: --expected-revision {rev}), or use a new item id."),
                current: Some(rev.clone()),
            })
        }
        (Some(rev), Some(want)) if rev != want => {
            return Err(DraftError::Conflict {
                message: format!("{item_id} is now at revision {rev}, not {want}: someone changed it since you read it."),
                remedy: format!("Read the item again, fold its current text into your change, and send `expectedRevision: {rev}`."),
                current: Some(rev.clone()),
            })
        }
        _ => {}
    }
    let Some(view) = current else { return Ok(()) };
    if !crate::model::SURFACEABLE.contains(&view.status.as_str()) {
        return Err(DraftError::refused(
            format!("{item_id} is {} and withdrawn from the served knowledge; a content change cannot bring it back.", view.status),
            "Restoring an item is a deliberate act: hand-write a `restoreItem` migration and have it reviewed.",
        ));
    }
    if let (Some(new), Some(old)) = (sensitivity, rank(&view.sensitivity)) {
        if rank(&new.to_string()).is_some_and(|n| n < old) {
            return Err(DraftError::refused(
                format!("{item_id} is {}; this change would lower it to {new}.", view.sensitivity),
                "Lowering a sensitivity is a deliberate act: hand-write a `changeSensitivity` migration and have it reviewed.",
            ));
        }
    }
    Ok(())
}

/// An optional request field in its schema type.
fn optional<T: TryFrom<String>>(
    value: &Option<String>,
    field: &str,
) -> Result<Option<T>, DraftError> {
    value.clone().map(|v| typed(v, field)).transpose()
}

/// A list of request fields, each in its schema type.
fn listed<T: TryFrom<String>>(values: &[String], field: &str) -> Result<Vec<T>, DraftError> {
    values.iter().map(|v| typed(v.clone(), field)).collect()
}

/// A payload value the drafter built itself: failing its schema type is our defect, named
/// with the directory already written.
fn wired<T: TryFrom<String>>(value: String, rel_dir: &str, what: &str) -> Result<T, DraftError> {
    value.try_into().map_err(|_| {
        DraftError::refused(
            format!("The proposal was written to {rel_dir}, but its {what} does not fit the payload schema."),
            "This is a defect in theurian: please report it with the directory.",
        )
    })
}

/// The request's source anchors as a migration records them.
fn source_anchors(req: &ContentRequest) -> Result<Vec<SourceAnchor>, DraftError> {
    req.source_anchors
        .iter()
        .map(|a| {
            Ok(SourceAnchor {
                provider: typed(a.provider.clone(), "sourceAnchors.provider")?,
                source_uri: typed(a.source_uri.clone(), "sourceAnchors.sourceUri")?,
                repository: optional(&a.repository, "sourceAnchors.repository")?,
                commit_sha: optional(&a.commit_sha, "sourceAnchors.commitSha")?,
                blob_sha: None,
                file_path: optional(&a.file_path, "sourceAnchors.filePath")?,
                line_start: None,
                line_end: None,
                external_id: None,
            })
        })
        .collect()
}

/// The revision's metadata: the request's fields with the resolved labels.
fn revision_metadata(
    req: &ContentRequest,
    content: &Content<'_>,
) -> Result<RevisionMetadata, DraftError> {
    let labels = (!req.labels.is_empty())
        .then(|| listed(&req.labels, "labels"))
        .transpose()?;
    let scope = (!req.scope_paths.is_empty())
        .then(|| {
            listed(&req.scope_paths, "scopePaths").map(|paths| RevisionMetadataScope { paths })
        })
        .transpose()?;
    Ok(RevisionMetadata {
        title: typed(req.title.clone(), "title")?,
        content_type: typed(req.content_type.clone(), "contentType")?,
        kind: content.kind,
        namespace: typed(content.namespace.clone(), "namespace")?,
        status: theurian_protocol::migration::Status::Approved,
        owner: typed(req.owner.clone(), "owner")?,
        trust_level: content.labels.trust,
        sensitivity: content.labels.sensitivity,
        tenant_id: schema_default("/$defs/revisionMetadata/properties/tenantId/default")?,
        acl_group: schema_default("/$defs/revisionMetadata/properties/aclGroup/default")?,
        valid_from: None,
        valid_to: None,
        labels,
        scope,
        source_anchors: source_anchors(req)?,
    })
}

/// The content draft's migration, as the value written (keys in schema order, defaults left
/// out unless kept), validated against the migration schema.
fn content_migration(
    req: &ContentRequest,
    content: &Content<'_>,
    ids: &Ids,
) -> Result<Value, DraftError> {
    let item_id = content.item_id;
    let doc = Migration {
        api_version: theurian_protocol::migration::MigrationApiVersion::TheurianDevV1,
        id: typed(ids.migration.clone(), "id")?,
        created_at: chrono::Utc::now()
            .format("%Y-%m-%dT%H:%M:%S+00:00")
            .to_string(),
        author: typed(req.author.clone(), "author")?,
        depends_on: content
            .depends_on
            .clone()
            .map(|id| typed(id, "dependsOn"))
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?,
        description: Some(typed(req.description.clone(), "description")?),
        operations: vec![
            Operation::CreateItem(OpCreateItem {
                op: theurian_protocol::migration::OpCreateItemOp::CreateItem,
                item_id: item_id.clone(),
                kind: content.kind,
                namespace: typed(content.namespace.clone(), "namespace")?,
                owner: typed(req.owner.clone(), "owner")?,
                sensitivity: schema_default("/$defs/opCreateItem/properties/sensitivity/default")?,
                trust_level: schema_default("/$defs/opCreateItem/properties/trustLevel/default")?,
            }),
            Operation::UpsertRevision(OpUpsertRevision {
                op: theurian_protocol::migration::OpUpsertRevisionOp::UpsertRevision,
                item_id: item_id.clone(),
                revision_id: typed(ids.revision.clone(), "revisionId")?,
                expected_revision: req
                    .expected_revision
                    .clone()
                    .map(|r| typed(r, "expectedRevision"))
                    .transpose()?,
                content_file: typed(format!("../knowledge/{}", ids.body), "contentFile")?,
                content_sha256: typed(sha256_hex(req.body.as_bytes()), "contentSha256")?,
                metadata: revision_metadata(req, content)?,
            }),
        ],
    };
    let value = serde_json::to_value(&doc).map_err(|e| {
        DraftError::refused(
            format!("The migration could not be assembled ({e})."),
            "This is a defect in theurian: please report it.",
        )
    })?;
    let value = order_keeping(&value, &MIGRATION_DOC, Trim::Defaults, &content.labels.keep);
    validate(&value)?;
    Ok(value)
}

/// What the drafter answers for a proposal written under `ids`.
fn payload(
    req: &ContentRequest,
    ids: &Ids,
    migration_file: &str,
) -> Result<ProposalPayload, DraftError> {
    let rel_dir = format!("{}/{}", proposals_dir(req.local), ids.proposal);
    let defect = |what: &str| {
        DraftError::refused(
            format!("The proposal was written to {rel_dir}, but its {what} does not fit the payload schema."),
            "This is a defect in theurian: please report it with the directory.",
        )
    };
    let body = &ids.body;
    Ok(ProposalPayload {
        proposal_id: ids
            .proposal
            .as_str()
            .try_into()
            .map_err(|_| defect("proposalId"))?,
        proposal_directory: rel_dir
            .as_str()
            .try_into()
            .map_err(|_| defect("proposalDirectory"))?,
        migration_id: ids
            .migration
            .as_str()
            .try_into()
            .map_err(|_| defect("migrationId"))?,
        migration_file: migration_file
            .try_into()
            .map_err(|_| defect("migrationFile"))?,
        revision_id: ids
            .revision
            .as_str()
            .try_into()
            .map_err(|_| defect("revisionId"))?,
        expected_revision: req
            .expected_revision
            .as_deref()
            .map(|r| r.try_into().map_err(|_| defect("expectedRevision")))
            .transpose()?,
        body_file: wired(format!("{rel_dir}/{body}"), &rel_dir, "bodyFile")?,
        evidence_file: wired(format!("{rel_dir}/evidence.json"), &rel_dir, "evidenceFile")?,
        content_file: wired(format!("../knowledge/{body}"), &rel_dir, "contentFile")?,
        content_sha256: wired(sha256_hex(req.body.as_bytes()), &rel_dir, "contentSha256")?,
        body_destination: wired(
            format!(".theurian/knowledge/{body}"),
            &rel_dir,
            "bodyDestination",
        )?,
        next_steps: theurian_protocol::mcp::NextSteps(
            NEXT_STEPS
                .iter()
                .map(|s| (*s).try_into().map_err(|_| defect("nextSteps")))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    })
}

/// Checks an assembled migration against the schema it will be loaded with.
pub(crate) fn validate(value: &Value) -> Result<(), DraftError> {
    let validator = VALIDATOR.as_ref().map_err(|e| {
        DraftError::refused(
            format!("The migration schema does not compile: {e}."),
            "This build is damaged: reinstall theurian.",
        )
    })?;
    if let Some((location, detail)) = theurian_protocol::seat::first_error(validator, value) {
        return Err(DraftError::refused(
            format!("The drafted migration would not load: at {location}, {detail}."),
            "Correct the field it names and draft again.",
        ));
    }
    Ok(())
}

/// `evidence.json`: ids, agent, task, model, reasoning and anchors (null fields left out).
pub(crate) fn evidence_json(
    proposal_id: &str,
    migration_id: &str,
    item_id: Value,
    ev: &Evidence,
    anchors: &[Anchor],
) -> String {
    let anchors: Vec<Value> = anchors
        .iter()
        .map(|a| {
            let mut m = serde_json::Map::new();
            m.insert("provider".into(), json!(a.provider));
            m.insert("sourceUri".into(), json!(a.source_uri));
            for (k, v) in [
                ("repository", &a.repository),
                ("commitSha", &a.commit_sha),
                ("filePath", &a.file_path),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), json!(v));
                }
            }
            Value::Object(m)
        })
        .collect();
    let doc = json!({
        "proposalId": proposal_id,
        "migrationId": migration_id,
        "itemId": item_id,
        "agentId": ev.agent_id,
        "taskId": ev.task_id,
        "model": ev.model,
        "reasoning": ev.reasoning,
        "sourceAnchors": anchors,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// The operation kinds an MCP migration draft may carry (the response schema's list).
pub use theurian_protocol::mcp::KnowledgeGenerateMigrationDraftResponseOperationsItem as DraftableOp;

/// A drafted operations migration.
#[derive(Debug, Clone)]
pub struct MigrationDraft {
    pub proposal_id: String,
    pub proposal_directory: String,
    pub migration_id: String,
    pub migration_file: String,
    pub evidence_file: String,
    pub operations: Vec<DraftableOp>,
}

/// Keys whose values name items, collected for `evidence.json`.
const ITEM_KEYS: &[&str] = &["itemId", "sourceItemId", "targetItemId", "alias"];

impl DraftOnly {
    /// Drafts an operations-only migration: the caller's operations, restricted to the kinds
    /// that neither add content nor loosen what is served, under a header this build stamps.
    pub fn draft_migration(
        &self,
        mut document: serde_json::Map<String, Value>,
        evidence: &Evidence,
        local: bool,
    ) -> Result<MigrationDraft, DraftError> {
        let mut texts = Vec::new();
        collect_strings(&Value::Object(document.clone()), &mut texts);
        let document_text = texts.join("\n");
        screen_secrets(
            self.root(),
            &[
                ("document".into(), &document_text),
                ("evidence/reasoning".into(), &evidence.reasoning),
                ("evidence/model".into(), &evidence.model),
                ("evidence/agentId".into(), &evidence.agent_id),
                ("evidence/taskId".into(), &evidence.task_id),
            ],
        )?;
        let ops = document
            .get("operations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut kinds = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let name = op.get("op").and_then(Value::as_str).unwrap_or_default();
            match name {
                "createItem" | "upsertRevision" => {
                    return Err(DraftError::refused(
                        format!("document.operations[{i}] is `{name}`: content enters through `knowledge.proposeChange`, which stages the body and pins its digest."),
                        "Draft the content change with knowledge.proposeChange instead.",
                    ))
                }
                "changeSensitivity" | "restoreItem" => {
                    return Err(DraftError::refused(
                        format!("document.operations[{i}] is `{name}`, which loosens or widens what is served; no tool drafts it."),
                        "A person writes that migration by hand and has it reviewed.",
                    ))
                }
                _ => {}
            }
            let kind: DraftableOp = name.parse().map_err(|_| {
                DraftError::refused(
                    format!("document.operations[{i}] has no `op` this tool drafts."),
                    format!("Use one of {}.", DraftableOp::VALUES.join(", ")),
                )
            })?;
            kinds.push(kind);
        }
        let [proposal_id, migration_id] = consecutive_ids()?;
        document.insert(
            "apiVersion".into(),
            json!(theurian_protocol::migration::MigrationApiVersion::TheurianDevV1.to_string()),
        );
        document.insert("id".into(), json!(migration_id));
        document.insert(
            "createdAt".into(),
            json!(chrono::Utc::now()
                .format("%Y-%m-%dT%H:%M:%S+00:00")
                .to_string()),
        );
        let value = order(&Value::Object(document), &MIGRATION_DOC, Trim::Nothing);
        validate(&value)?;
        let description = value
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let migration_file = format!("{migration_id}-{}.yaml", slug(description, "migration"));
        let mut items: Vec<String> = ops
            .iter()
            .flat_map(|op| {
                ITEM_KEYS
                    .iter()
                    .filter_map(|k| op.get(*k).and_then(Value::as_str).map(str::to_owned))
            })
            .collect();
        items.sort();
        items.dedup();
        if local {
            crate::layout::ensure_gitignore(&self.root.join(".gitignore"))?;
        }
        let dir = create_dir(&self.root, local, &proposal_id)?;
        write_new(
            &dir,
            "evidence.json",
            evidence_json(&proposal_id, &migration_id, json!(items), evidence, &[]).as_bytes(),
        )?;
        write_new(&dir, &migration_file, to_yaml(&value).as_bytes())?;
        let rel_dir = format!("{}/{proposal_id}", proposals_dir(local));
        Ok(MigrationDraft {
            evidence_file: format!("{rel_dir}/evidence.json"),
            proposal_directory: rel_dir,
            proposal_id,
            migration_id,
            migration_file,
            operations: kinds,
        })
    }
}
/// Every string (and object key) inside `v`, so a secret split by escapes reassembles.
pub(crate) fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            out.push(k.clone());
            collect_strings(x, out)
        }),
        _ => {}
    }
}
