//! `theurian propose accept <id>`: moves a proposal's migration and bodies into
//! `.theurian/migrations/` and `.theurian/knowledge/`. It approves nothing and applies nothing
//! (the merge approves; `migrate apply` applies) — but it refuses anything the landed set would
//! not take: a name or id already landed, a body that would overwrite landed knowledge, a
//! secret under `security.secretScan: block`, and a union of landed and proposed migrations that
//! does not load, order and replay, lowers an item's sensitivity or revives a withdrawn item.
//!
//! The rehearsal runs on a copy of the project's migrations and knowledge in a scratch
//! directory; the real tree is written only after it passes, and put back if a write fails.

use crate::migrate::MigrationSet;
use crate::paths::MAX_SOURCE_FILE_BYTES;
use crate::secrets::{scan, Policy};
use crate::store::apply::{replay, replay_items};
use crate::walk::{walk, Descend, Limits, Stop};
use crate::CoreError;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Most operations one accepted migration may hold.
pub const MAX_OPERATIONS: usize = 250;

fn fail(message: impl Into<String>, remedy: impl Into<String>) -> CoreError {
    CoreError::failure(message, remedy)
}

fn state(message: impl Into<String>, remedy: impl Into<String>) -> CoreError {
    CoreError::state(message, remedy)
}

static ULID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new("^[0-7][0-9A-HJKMNP-TV-Z]{25}$").expect("constant regex")
});
static MIGRATION_NAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"^([0-7][0-9A-HJKMNP-TV-Z]{25})-[a-z0-9]+(?:-[a-z0-9]+)*\.yaml$")
        .expect("constant regex")
});

/// `path` with `.` and `..` folded away lexically (the destination may not exist yet).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// Refuses when any existing component of `path` below `root` is a symlink: accept reads its
/// proposal and writes the knowledge tree without following links a clone may carry.
fn no_links(root: &Path, path: &Path) -> Result<(), CoreError> {
    let rel = path.strip_prefix(root).map_err(|_| {
        state(
            format!("{} is outside the project.", path.display()),
            "Keep proposals and knowledge inside the project.",
        )
    })?;
    let mut here = root.to_path_buf();
    for c in rel.components() {
        here.push(c);
        if is_symlink(&here) {
            return Err(state(
                format!(
                    "{} is a symlink; accept neither reads nor writes through one.",
                    here.display()
                ),
                "Replace the link with the directory or file itself, then retry.",
            ));
        }
    }
    Ok(())
}

/// The proposal's directory: in exactly one of the two proposal roots, a real directory.
fn locate(root: &Path, id: &str) -> Result<PathBuf, CoreError> {
    let found: Vec<PathBuf> = [".theurian/proposals", ".theurian/proposals-local"]
        .iter()
        .map(|d| root.join(d).join(id))
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect();
    match found.as_slice() {
        [] => Err(fail(
            format!("No proposal {id} under .theurian/proposals/ or .theurian/proposals-local/."),
            "Check the id the draft printed (`proposalId`).",
        )),
        [one] if is_symlink(one) || !one.is_dir() => Err(fail(
            format!("{} is not a plain directory, so it was not read.", one.display()),
            "Remove it and draft the proposal again.",
        )),
        [one] => Ok(one.clone()),
        _ => Err(fail(
            format!("Proposal {id} exists under both .theurian/proposals/ and .theurian/proposals-local/."),
            "Remove the copy you do not mean to accept, then retry.",
        )),
    }
}

/// What accepting changes, planned before anything is written.
struct Plan {
    migration_name: String,
    migration_bytes: Vec<u8>,
    /// `(staged source, destination, knowledge-relative path)`.
    bodies: Vec<(PathBuf, PathBuf, String)>,
}

/// Accepts proposal `raw_id` into the project at `root` (canonical).
pub fn accept(root: &Path, raw_id: &str) -> Result<Value, CoreError> {
    let id = raw_id.trim().to_ascii_uppercase();
    if !ULID.is_match(&id) {
        return Err(CoreError::usage(
            "The proposal id is not a ULID (26 Crockford base32 characters).",
            "Pass the `proposalId` a draft printed.",
        ));
    }
    // One writer at a time: two accepts of one proposal must not interleave their moves.
    let _lock = crate::store::lock::acquire(
        &root.join(".theurian/runtime"),
        crate::store::lock::WRITE_LOCK_WAIT,
    )?;
    let landed = MigrationSet::load(root)?;
    let landed_moves = replay(&landed).map_err(|e| {
        state(
            format!("The landed migrations do not apply on their own ({e}), so nothing can be accepted on top of them."),
            "Fix the landed set first: `theurian migrate validate` names the fault.",
        )
    })?;
    let dir = locate(root, &id)?;
    no_links(root, &dir)?;
    let plan = plan(root, &dir, &landed)?;

    // Secret scan over what would land.
    let policy = crate::secrets::policy(root)?;
    let mut findings = Vec::new();
    if policy != Policy::Off {
        // The raw bytes, every parsed string (a secret split by YAML escapes reassembles
        // there), the file name and the landing paths.
        let mut texts: Vec<(String, String)> = vec![
            (
                plan.migration_name.clone(),
                String::from_utf8_lossy(&plan.migration_bytes).into_owned(),
            ),
            ("migration file name".into(), plan.migration_name.clone()),
        ];
        let parsed = crate::yaml::parse(&String::from_utf8_lossy(&plan.migration_bytes))
            .unwrap_or(Value::Null);
        let mut strings = Vec::new();
        super::draft::collect_strings(&parsed, &mut strings);
        texts.push((
            format!("{} (parsed)", plan.migration_name),
            strings.join("\n"),
        ));
        for (_, _, rel) in &plan.bodies {
            texts.push(("landing path".into(), format!(".theurian/knowledge/{rel}")));
        }
        if let Ok(ev) = std::fs::read(dir.join("evidence.json")) {
            texts.push((
                "evidence.json".into(),
                String::from_utf8_lossy(&ev).into_owned(),
            ));
        }
        for (src, _, rel) in &plan.bodies {
            let text = std::fs::read(src).map_err(|e| CoreError::io("read", src, &e))?;
            texts.push((rel.clone(), String::from_utf8_lossy(&text).into_owned()));
        }
        for (name, text) in &texts {
            for f in scan(text, 20) {
                findings.push(format!("{name}:{}:{}: {}", f.line, f.column, f.family));
            }
        }
        if policy == Policy::Block && !findings.is_empty() {
            return Err(fail(
                format!("Proposal {id} appears to carry a secret ({}); nothing has moved.", findings.join("; ")),
                "Remove the secret from the proposal's files (and rotate it), or set `security.secretScan: warn` in .theurian/config.yaml to accept with a warning.",
            ));
        }
    }

    rehearse(root, &plan, &landed, &landed_moves)?;
    let (written, replaced) = commit(root, &plan)?;
    // The staged copies go; evidence.json stays as the record of who drafted it.
    let mut remedy = None;
    for path in plan
        .bodies
        .iter()
        .map(|(s, _, _)| s.clone())
        .chain([dir.join(&plan.migration_name)])
    {
        if std::fs::remove_file(&path).is_err() {
            remedy = Some(format!(
                "Remove the staged copies left in {} by hand.",
                dir.display()
            ));
        }
    }
    let mut out = json!({
        "proposalId": id,
        "migrationFile": format!(".theurian/migrations/{}", plan.migration_name),
        "bodyFiles": written,
        "replacedBodies": replaced,
        "secretScanPolicy": policy.to_string(),
        "secretFindings": findings,
        "nextSteps": [
            "The files are in place. Nothing is approved yet.",
            "Commit them and open a pull request: merging it is the approval.",
            "After the merge, run `theurian migrate apply` to build the state that serves them.",
        ],
    });
    if let Some(r) = remedy {
        out["remedy"] = json!(r);
    }
    Ok(out)
}

fn plan(root: &Path, dir: &Path, landed: &MigrationSet) -> Result<Plan, CoreError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)
        .map_err(|e| CoreError::io("read", dir, &e))?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if MIGRATION_NAME.is_match(&name) {
            if is_symlink(&entry.path()) {
                return Err(fail(
                    format!("{name} in the proposal is a symlink; it was not read."),
                    "Replace it with the migration file itself.",
                ));
            }
            names.push(name);
        }
    }
    let name = match names.as_slice() {
        [one] => one.clone(),
        [] => return Err(already_or_unfinished(dir, landed)),
        _ => {
            return Err(fail(
                format!(
                    "The proposal holds {} migration files; one is expected.",
                    names.len()
                ),
                "Remove all but the one to accept.",
            ))
        }
    };
    let path = dir.join(&name);
    let bytes = std::fs::read(&path).map_err(|e| CoreError::io("read", &path, &e))?;
    if bytes.len() as u64 > MAX_SOURCE_FILE_BYTES {
        return Err(fail(
            format!("{name} is larger than {MAX_SOURCE_FILE_BYTES} bytes."),
            "Split the change into smaller migrations.",
        ));
    }
    let text = String::from_utf8(bytes.clone())
        .map_err(|_| fail(format!("{name} is not UTF-8."), "Fix the file."))?;
    let doc = crate::yaml::parse(&text).map_err(|crate::yaml::YamlError(m)| {
        fail(format!("{name} cannot be read: {m}."), "Fix the file.")
    })?;
    let doc_id = doc.get("id").and_then(Value::as_str).unwrap_or_default();
    let file_id = name.get(..26).unwrap_or_default();
    let dest = root.join(".theurian/migrations").join(&name);
    if std::fs::symlink_metadata(&dest).is_ok()
        || landed
            .ordered
            .iter()
            .any(|m| m.id == doc_id || m.id == file_id)
    {
        return Err(state(
            format!("A migration named {name} (or with its id) has already landed."),
            "This proposal was accepted already, or another change took its id: draft it again.",
        ));
    }
    if doc_id != file_id {
        return Err(fail(
            format!("{name} is named for migration {file_id} but its `id` differs."),
            "Make the file name's id and the document's `id` the same.",
        ));
    }
    let ops = doc
        .get("operations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if ops.len() > MAX_OPERATIONS {
        return Err(fail(
            format!(
                "{name} holds {} operations, more than {MAX_OPERATIONS}.",
                ops.len()
            ),
            "Split it into several proposals.",
        ));
    }
    let knowledge = normalise(&root.join(".theurian/knowledge"));
    let landed_bodies: std::collections::BTreeMap<(u64, u64), String> = landed
        .ordered
        .iter()
        .flat_map(|m| m.bodies.iter().map(|b| (b.identity, b.revision_id.clone())))
        .collect();
    let mut bodies = Vec::new();
    for op in &ops {
        let Some(cf) = op
            .get("contentFile")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            continue;
        };
        let dest = normalise(&root.join(".theurian/migrations").join(cf));
        let Ok(rel) = dest.strip_prefix(&knowledge) else {
            return Err(state(
                format!("{name} points a body at {cf}, outside .theurian/knowledge/."),
                "Bodies land under .theurian/knowledge/; fix `contentFile`.",
            ));
        };
        let rel = rel.to_string_lossy().into_owned();
        let src = dir.join(&rel);
        no_links(root, &dest)?;
        no_links(root, &src)?;
        let revision = op
            .get("revisionId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let meta = std::fs::symlink_metadata(&src).map_err(|_| {
            fail(
                format!("The proposal lacks the body {rel} its migration names."),
                "Draft the proposal again.",
            )
        })?;
        if !meta.is_file() {
            return Err(fail(
                format!("The staged body {rel} is not a regular file."),
                "Draft the proposal again.",
            ));
        }
        if let Ok(existing) = std::fs::metadata(&dest) {
            use std::os::unix::fs::MetadataExt;
            let same = std::fs::read(&dest).ok() == std::fs::read(&src).ok();
            let backs = landed_bodies.get(&(existing.dev(), existing.ino()));
            if backs.is_some_and(|landed_rev| !(same && landed_rev == revision)) {
                return Err(state(format!(".theurian/knowledge/{rel} backs a landed revision; accepting would overwrite it."), "A new revision gets a new body file: draft the change again."));
            }
        }
        bodies.push((src, dest, rel));
    }
    Ok(Plan {
        migration_name: name,
        migration_bytes: bytes,
        bodies,
    })
}

/// No migration file left: accepted already (exit 4) or never finished (exit 1).
fn already_or_unfinished(dir: &Path, landed: &MigrationSet) -> CoreError {
    let evidence: Value = std::fs::read_to_string(dir.join("evidence.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    match evidence.get("migrationId").and_then(Value::as_str) {
        Some(mid) if landed.ordered.iter().any(|m| m.id == mid) => state(
            format!("This proposal was accepted already: its migration {mid} has landed."),
            "Nothing to do; commit the landed files and run `theurian migrate apply` if you have not.",
        ),
        Some(mid) => fail(format!("The proposal holds no migration file, and its migration {mid} has not landed."), "The proposal is incomplete: draft it again."),
        None if has_staged_body(dir) => fail(
            "The proposal holds a staged body but no migration file: it looks unfinished.",
            "Draft the proposal again.",
        ),
        None => state(
            "The proposal holds neither a migration nor a staged body: it appears to have been accepted already.",
            "Nothing to do; check .theurian/migrations/ for it.",
        ),
    }
}

/// How far the walks over a proposal directory and the project's knowledge may go: as deep and
/// as many entries as any real project holds, and no further.
const WALK_LIMITS: Limits = Limits {
    depth: 32,
    entries: 1_000_000,
};

/// Whether a generated body file (`<leaf>.<ULID>.<ext>`) remains anywhere under `dir`. A tree
/// too large to walk counts as holding none.
fn has_staged_body(dir: &Path) -> bool {
    static BODY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^[a-z0-9]+(?:-[a-z0-9]+)*\.[0-7][0-9A-HJKMNP-TV-Z]{25}\.(?:md|json|yaml)$",
        )
        .expect("constant regex")
    });
    let mut found = false;
    let _ = walk::<Stop>(dir, WALK_LIMITS, |e| {
        let name = e.path.file_name().unwrap_or_default().to_string_lossy();
        found |= !e.kind.is_dir() && BODY.is_match(&name);
        Ok(if found { Descend::No } else { Descend::Yes })
    });
    found
}

/// Copies the directories and regular files under `from` to `to`; links and special files are
/// left behind, as the loader would refuse them.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let walked = walk(from, WALK_LIMITS, |e| {
        let target = to.join(&e.rel);
        if e.kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(|err| Stop::Io(target, err))?;
            return Ok(Descend::Yes);
        }
        if e.kind.is_file() {
            std::fs::copy(&e.path, &target).map_err(|err| Stop::Io(target, err))?;
        }
        Ok(Descend::No)
    });
    walked.map_err(|stop| match stop {
        Stop::Io(_, err) => err,
        Stop::TooDeep(_) | Stop::TooMany => std::io::Error::other(
            "the tree is deeper or holds more entries than a project's knowledge can",
        ),
    })
}

/// Loads and replays landed + proposed in a scratch copy, and compares every touched item.
fn rehearse(
    root: &Path,
    plan: &Plan,
    landed: &MigrationSet,
    landed_moves: &[crate::store::moves::Move],
) -> Result<(), CoreError> {
    let scratch = tempfile_dir()?;
    let io = |e: std::io::Error| {
        fail(
            format!("The rehearsal copy could not be made ({e})."),
            "Check free space in the temporary directory, then retry.",
        )
    };
    for d in ["migrations", "knowledge"] {
        let src = root.join(".theurian").join(d);
        if src.is_dir() {
            copy_tree(&src, &scratch.join(".theurian").join(d)).map_err(io)?;
        }
    }
    std::fs::create_dir_all(scratch.join(".theurian/migrations")).map_err(io)?;
    std::fs::write(
        scratch
            .join(".theurian/migrations")
            .join(&plan.migration_name),
        &plan.migration_bytes,
    )
    .map_err(io)?;
    for (src, _, rel) in &plan.bodies {
        let to = scratch.join(".theurian/knowledge").join(rel);
        if let Some(p) = to.parent() {
            std::fs::create_dir_all(p).map_err(io)?;
        }
        std::fs::copy(src, &to).map_err(io)?;
    }
    let result = (|| {
        let union = MigrationSet::load(&scratch).map_err(|e| {
            let e: CoreError = e.into();
            fail(
                format!(
                    "With the proposal added, the migration set does not load: {}",
                    e.message
                ),
                e.remedy,
            )
        })?;
        stale_base(&union, plan, landed)?;
        let union_moves = replay(&union).map_err(|e| {
            fail(
                format!("With the proposal added, the migrations do not apply: {e}."),
                "Fix the proposal (or draft it again against the current state).",
            )
        })?;
        let known: BTreeSet<String> = landed_moves
            .iter()
            .map(|m| m.to_json().to_string())
            .collect();
        let new: Vec<String> = union_moves
            .iter()
            .map(|m| m.to_json().to_string())
            .filter(|m| !known.contains(m))
            .collect();
        if !new.is_empty() {
            return Err(fail(
                format!("With the proposal added, the set makes permissive moves it did not make before: {}.", new.join("; ")),
                "Order the proposal after the migrations it builds on with `dependsOn`, or drop the loosening change.",
            ));
        }
        let proposed = union
            .ordered
            .iter()
            .find(|m| plan.migration_name.starts_with(&m.id))
            .cloned();
        let touched: BTreeSet<String> = proposed
            .iter()
            .flat_map(|m| {
                serde_json::to_value(&m.doc.operations)
                    .ok()
                    .and_then(|v| v.as_array().cloned())
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|op| op.get("itemId").and_then(Value::as_str).map(str::to_owned))
            })
            .collect();
        let rank = super::draft::rank;
        // One replay of each set, not one per touched item (both already replayed above).
        let names: Vec<&str> = touched.iter().map(String::as_str).collect();
        let before_all = replay_items(landed, &names).unwrap_or_default();
        let after_all = replay_items(&union, &names).unwrap_or_default();
        for item in &touched {
            if let (Some(b), Some(a)) = (before_all.get(item), after_all.get(item)) {
                if rank(&a.sensitivity) < rank(&b.sensitivity) {
                    return Err(fail(format!("The proposal lowers {item}'s sensitivity from {} to {}.", b.sensitivity, a.sensitivity), "Lowering a sensitivity is a deliberate act: hand-write a `changeSensitivity` migration."));
                }
                let surf = |s: &str| crate::model::SURFACEABLE.contains(&s);
                if !surf(&b.status) && surf(&a.status) {
                    return Err(fail(format!("The proposal brings the withdrawn item {item} back into the served knowledge."), "Restoring an item is a deliberate act: hand-write a `restoreItem` migration."));
                }
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// Refuses a proposal that revises an item from a revision the landed migrations have since
/// replaced, naming both: the revision it was drafted against and the one that is current now.
/// (Replaying the union would report the clash on whichever migration sorts later, which can be
/// the landed one, naming the proposal's own revision as the store's.)
fn stale_base(union: &MigrationSet, plan: &Plan, landed: &MigrationSet) -> Result<(), CoreError> {
    let Some(proposed) = union
        .ordered
        .iter()
        .find(|m| plan.migration_name.starts_with(&m.id))
    else {
        return Ok(());
    };
    let ops = serde_json::to_value(&proposed.doc.operations)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    // (item, the revision it writes, the revision it expects to replace)
    let revised: Vec<(String, String, Option<String>)> = ops
        .iter()
        .filter_map(|op| {
            let item = op.get("itemId")?.as_str()?.to_owned();
            let revision = op.get("revisionId")?.as_str()?.to_owned();
            let expected = op
                .get("expectedRevision")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Some((item, revision, expected))
        })
        .collect();
    let names: Vec<&str> = revised.iter().map(|(i, _, _)| i.as_str()).collect();
    let now = replay_items(landed, &names).unwrap_or_default();
    for (item, revision, expected) in &revised {
        let current = now.get(item).and_then(|v| v.current.clone());
        let moved = current.as_ref().is_some_and(|c| c != revision) && &current != expected;
        if moved {
            let from = expected.as_deref().unwrap_or("nothing (as a new item)");
            let current = current.unwrap_or_default();
            return Err(fail(
                format!("The proposal revises {item} from {from}, but the landed migrations have since moved it to revision {current}."),
                format!("Draft the change again against the current revision (expectedRevision {current}), so the reviewer sees what it replaces."),
            ));
        }
    }
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf, CoreError> {
    let dir = std::env::temp_dir().join(format!("theurian-accept-{}", ulid::Ulid::generate()));
    std::fs::create_dir_all(&dir).map_err(|e| CoreError::io("create", &dir, &e))?;
    Ok(dir)
}

/// Writes bodies then the migration; on any failure, removes what it created and puts back
/// what it replaced.
fn commit(root: &Path, plan: &Plan) -> Result<(Vec<String>, Vec<String>), CoreError> {
    let mut created: Vec<PathBuf> = Vec::new();
    let mut restored: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut written = Vec::new();
    let mut replaced = Vec::new();
    let result = (|| -> Result<(), CoreError> {
        for (src, dest, rel) in &plan.bodies {
            if let Some(p) = dest.parent() {
                std::fs::create_dir_all(p).map_err(|e| CoreError::io("create", p, &e))?;
            }
            let bytes = std::fs::read(src).map_err(|e| CoreError::io("read", src, &e))?;
            match std::fs::read(dest) {
                Ok(old) => {
                    restored.push((dest.clone(), old));
                    replaced.push(format!(".theurian/knowledge/{rel}"));
                }
                Err(_) => created.push(dest.clone()),
            }
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW)
                .open(dest)
                .map_err(|e| CoreError::io("write", dest, &e))?;
            f.write_all(&bytes)
                .map_err(|e| CoreError::io("write", dest, &e))?;
            written.push(format!(".theurian/knowledge/{rel}"));
        }
        let dir = root.join(".theurian/migrations");
        std::fs::create_dir_all(&dir).map_err(|e| CoreError::io("create", &dir, &e))?;
        let dest = dir.join(&plan.migration_name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&dest)
            .map_err(|e| CoreError::io("write", &dest, &e))?;
        created.push(dest.clone());
        f.write_all(&plan.migration_bytes)
            .and_then(|_| f.sync_all())
            .map_err(|e| CoreError::io("write", &dest, &e))?;
        Ok(())
    })();
    if let Err(e) = result {
        for p in &created {
            let _ = std::fs::remove_file(p);
        }
        for (p, bytes) in &restored {
            let _ = std::fs::write(p, bytes);
        }
        return Err(e);
    }
    Ok((written, replaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_fold_dot_dot_lexically() {
        assert_eq!(
            normalise(Path::new("/p/.theurian/migrations/../knowledge/a/b.md")),
            PathBuf::from("/p/.theurian/knowledge/a/b.md")
        );
        assert_eq!(
            normalise(Path::new("/p/.theurian/migrations/../../etc/x")),
            PathBuf::from("/p/etc/x")
        );
    }
}
