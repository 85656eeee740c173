//! The whole migration set of a project: discovery under `.theurian/migrations/`, duplicate and
//! dependency checks, the application order (level-wise Kahn, ids byte-sorted within a level),
//! the static guards, and the state hash.

use super::hash::{state_hash, ENGINE_VERSION};
use super::load::{load_file, LoadedMigration};
use super::MigrateError;
use crate::paths::{resolve_inside, PathFault};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use theurian_protocol::migration::Operation;

/// Most migration files a project may hold.
pub const MAX_MIGRATIONS: usize = 10_000;

/// A loaded, ordered and guarded migration set.
#[derive(Debug, Clone)]
pub struct MigrationSet {
    /// Migrations in application order.
    pub ordered: Vec<LoadedMigration>,
    /// The state hash of this set.
    pub state_hash: String,
}

/// Distinct body digests of `ordered`.
fn digests_of(ordered: &[LoadedMigration]) -> BTreeSet<&str> {
    ordered
        .iter()
        .flat_map(|m| m.bodies.iter().map(|b| b.sha256.as_str()))
        .collect()
}

impl MigrationSet {
    /// Distinct body digests.
    pub fn content_digests(&self) -> BTreeSet<&str> {
        digests_of(&self.ordered)
    }

    /// Loads, orders and guards the set under `root` (canonical); the first guard violation
    /// refuses.
    pub fn load(root: &Path) -> Result<MigrationSet, MigrateError> {
        let (set, violations) = MigrationSet::load_reporting(root)?;
        match violations.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(set),
        }
    }

    /// Loads and orders the set, returning the static-guard violations (migration id, fault)
    /// instead of refusing, for `migrate status`.
    pub fn load_reporting(
        root: &Path,
    ) -> Result<(MigrationSet, Vec<(String, MigrateError)>), MigrateError> {
        let files = discover(root)?;
        // Each file (and its bodies) is read, hashed and parsed on its own, so the files are
        // loaded on every core; the refusal is still the first failing file in byte order.
        let loaded: Vec<Result<_, MigrateError>> =
            files.par_iter().map(|rel| load_file(root, rel)).collect();
        let loaded = loaded.into_iter().collect::<Result<Vec<_>, _>>()?;
        let ordered = order(loaded)?;
        let violations = guards(&ordered);
        let state_hash = state_hash(
            ordered.iter().map(|m| (m.id.as_str(), m.checksum.as_str())),
            digests_of(&ordered),
            crate::CANONICAL_SCHEMA_VERSION,
            ENGINE_VERSION,
        );
        Ok((
            MigrationSet {
                ordered,
                state_hash,
            },
            violations,
        ))
    }
}

/// The `.yaml` files under `.theurian/migrations/`, relative to the root, byte-sorted.
/// The migration files of the project at `root`, relative to it, in byte order.
pub fn discover(root: &Path) -> Result<Vec<String>, MigrateError> {
    let dir = match resolve_inside(root, Path::new(".theurian/migrations")) {
        Ok(dir) => dir,
        Err(PathFault::Missing) => return Ok(Vec::new()),
        Err(PathFault::Escapes) => {
            return Err(MigrateError::set(
                ".theurian/migrations resolves outside the project root.",
                "Make .theurian/migrations a real directory inside the repository.",
            ))
        }
        Err(other) => {
            return Err(MigrateError::set(
                format!(".theurian/migrations {other}."),
                "Repair or remove it.",
            ))
        }
    };
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        MigrateError::set(
            format!(".theurian/migrations cannot be listed: {e}."),
            "Check its permissions.",
        )
    })?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| {
            MigrateError::set(
                format!(".theurian/migrations cannot be listed: {e}."),
                "Check its permissions.",
            )
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".yaml") {
            continue;
        }
        match std::fs::metadata(entry.path()) {
            Ok(meta) if meta.is_file() => names.push(name),
            Ok(_) => {}
            Err(_) => {
                return Err(MigrateError::set(
                    format!(".theurian/migrations/{name} is a symlink that leads nowhere (dangling or looping)."),
                    "Remove it or point it at the migration file.",
                ))
            }
        }
        if names.len() > MAX_MIGRATIONS {
            return Err(MigrateError::set(
                format!("The project holds more than {MAX_MIGRATIONS} migration files."),
                "Consolidate migrations; the engine loads at most that many.",
            ));
        }
    }
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(names
        .into_iter()
        .map(|n| format!(".theurian/migrations/{n}"))
        .collect())
}

/// Level-wise Kahn: each round takes every migration whose dependencies are met, in id order.
fn order(loaded: Vec<LoadedMigration>) -> Result<Vec<LoadedMigration>, MigrateError> {
    let mut by_id: BTreeMap<String, LoadedMigration> = BTreeMap::new();
    for m in loaded {
        if let Some(other) = by_id.get(&m.id) {
            return Err(MigrateError::set(
                format!(
                    "Duplicate migration id {}: {} and {}",
                    m.id, other.path, m.path
                ),
                "Give one of them a fresh ULID (each migration's id must be unique).",
            ));
        }
        by_id.insert(m.id.clone(), m);
    }
    let mut pending: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (id, m) in &by_id {
        let deps: BTreeSet<String> = m.doc.depends_on.iter().map(|d| d.to_string()).collect();
        if let Some(unknown) = deps.iter().find(|d| !by_id.contains_key(*d)) {
            return Err(MigrateError::set(
                format!("Migration {id} depends on unknown migration {unknown}"),
                "Add the missing migration, or remove it from dependsOn.",
            ));
        }
        pending.insert(id.clone(), deps);
    }
    let mut order = Vec::with_capacity(by_id.len());
    while !pending.is_empty() {
        let ready: Vec<String> = pending
            .iter()
            .filter(|(_, deps)| deps.is_empty())
            .map(|(id, _)| id.clone())
            .collect();
        if ready.is_empty() {
            return Err(MigrateError::set(
                format!("Migration dependency cycle: {}", cycle(&pending)),
                "Break the cycle by removing one dependsOn entry.",
            ));
        }
        for id in &ready {
            pending.remove(id);
        }
        for deps in pending.values_mut() {
            for id in &ready {
                deps.remove(id);
            }
        }
        order.extend(ready);
    }
    Ok(order
        .into_iter()
        .filter_map(|id| by_id.remove(&id))
        .collect())
}

/// One concrete cycle: from the smallest remaining id, follow the smallest remaining dependency.
fn cycle(pending: &BTreeMap<String, BTreeSet<String>>) -> String {
    let Some(start) = pending.keys().next() else {
        return String::new();
    };
    let mut path = vec![start.clone()];
    let mut current = start.clone();
    while let Some(next) = pending.get(&current).and_then(|d| d.iter().next()).cloned() {
        if let Some(pos) = path.iter().position(|p| *p == next) {
            let mut ring: Vec<String> = path[pos..].to_vec();
            ring.push(next);
            return ring.join(" -> ");
        }
        path.push(next.clone());
        current = next;
    }
    path.join(" -> ")
}

/// The set-level guards, in the reference's order: every violation, with its migration.
fn guards(ordered: &[LoadedMigration]) -> Vec<(String, MigrateError)> {
    let mut found = Vec::new();
    // 1. Scopes this build cannot enforce.
    for m in ordered {
        for op in &m.doc.operations {
            if let Operation::UpsertRevision(u) = op {
                let (tenant, acl) = (
                    u.metadata.tenant_id.to_string(),
                    u.metadata.acl_group.to_string(),
                );
                if tenant != "local" || acl != "default" {
                    found.push((m.id.clone(), MigrateError::set(
                        format!("Migration {} sets tenantId {tenant:?} / aclGroup {acl:?} on {}; this build enforces only tenant \"local\" and ACL group \"default\".", m.id, u.item_id.as_str()),
                        "Remove tenantId and aclGroup (or set them to local and default) in a new migration; access scopes beyond those are not enforced, so they are refused rather than ignored.",
                    )));
                }
            }
        }
    }
    // 2. One body file serving two revisions.
    let mut seen: BTreeMap<(u64, u64), (&str, &str)> = BTreeMap::new();
    for m in ordered {
        for b in &m.bodies {
            match seen.get(&b.identity) {
                Some((rev, other)) if *rev != b.revision_id => {
                    found.push((m.id.clone(), MigrateError::set(
                        format!("Migration {} pins the same body file as migration {other} but under revision {} instead of {rev}.", m.id, b.revision_id),
                        "Each revision needs its own body file: copy the body to a new file for the new revision.",
                    )))
                }
                Some(_) => {}
                None => {
                    seen.insert(b.identity, (b.revision_id.as_str(), m.id.as_str()));
                }
            }
        }
    }
    // 3. An alias shadowing a live item.
    let mut status: BTreeMap<String, String> = BTreeMap::new();
    let mut aliases: BTreeMap<String, &str> = BTreeMap::new();
    for m in ordered {
        for op in &m.doc.operations {
            match op {
                Operation::CreateItem(c) => {
                    status
                        .entry(c.item_id.to_string())
                        .or_insert_with(|| "draft".into());
                }
                Operation::UpsertRevision(u) => {
                    status.insert(u.item_id.to_string(), u.metadata.status.to_string());
                }
                Operation::DeprecateItem(d) => {
                    status.insert(d.item_id.to_string(), "deprecated".into());
                }
                Operation::RestoreItem(r) => {
                    status.insert(r.item_id.to_string(), "approved".into());
                }
                Operation::AddAlias(a) => {
                    aliases.insert(a.alias.to_string(), m.id.as_str());
                }
                Operation::RemoveAlias(a) => {
                    aliases.remove(a.alias.as_str());
                }
                _ => {}
            }
        }
    }
    for (alias, migration) in aliases {
        if status.get(&alias).is_some_and(|s| s != "deprecated") {
            found.push((migration.to_owned(), MigrateError::set(
                format!("Migration {migration} makes {alias} an alias, but {alias} is also an item that is not deprecated."),
                "Deprecate the item first, or choose another alias.",
            )));
        }
    }
    found
}
