//! The project registry `<data>/projects.json`: a JSON object keyed by project id, in the
//! reference's format so a registry the Python tool wrote is read (and written back) as is.
//!
//! Entries that cannot be used (no absolute root path, an id that is not a valid project id)
//! are kept on disk untouched and reported as unreadable, never silently dropped or rewritten.

use crate::datadir::DataDir;
use crate::fsutil::{ensure_dir, sorted_json, write_atomic};
use crate::gitdir::Repo;
use crate::CoreError;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use theurian_protocol::mcp::ProjectId;

/// The fixed remedy for unreadable entries.
pub const UNREADABLE_REMEDY: &str = "Remove each with `theurian project unregister <id>` and register the project again from its repository. Until then those ids resolve to no project, and `theurian project register` will not reuse them.";

/// One usable registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The project's working-tree root, absolute.
    pub root_path: PathBuf,
    /// The whole stored record, for output.
    pub record: Map<String, Value>,
}

/// The registry as read from disk. Shared with the parse cache ([`crate::stamped`]) until it
/// is changed.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    raw: Arc<Map<String, Value>>,
}

/// Whether `id` is a valid project id, by the schema's own definition.
pub fn valid_id(id: &str) -> bool {
    id.parse::<ProjectId>().is_ok()
}

/// Derives an id from a directory name: lowercase, runs of other characters become `-`.
pub fn derive_id(root: &Path) -> Option<String> {
    let name = root.file_name()?.to_string_lossy().to_lowercase();
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_owned();
    valid_id(&out).then_some(out)
}

fn usable_root(value: &Value) -> Option<PathBuf> {
    let root = value.as_object()?.get("rootPath")?.as_str()?;
    let path = PathBuf::from(root);
    if !path.is_absolute() || root.contains('\0') || path.starts_with("/proc") {
        return None;
    }
    Some(path)
}

impl Registry {
    /// Reads the registry; a missing file is an empty registry.
    pub fn load(data: &DataDir) -> Result<Self, CoreError> {
        let path = data.registry();
        let parsed =
            crate::stamped::load(&path, |text| match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(raw)) => Some(Arc::new(raw)),
                _ => None,
            });
        match parsed {
            Ok(parsed) => match parsed.as_ref() {
                Some(raw) => Ok(Registry { raw: raw.clone() }),
                None => Err(CoreError::failure(
                    format!("The project registry {} is not a JSON object.", path.display()),
                    "Repair the file by hand, or move it aside and register your projects again with `theurian project register`.",
                )),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registry::default()),
            Err(e) => Err(CoreError::failure(
                format!(
                    "The project registry {} cannot be read: {e}.",
                    path.display()
                ),
                "Check its permissions (it should belong to you), then try again.",
            )),
        }
    }

    /// Writes the registry back: sorted keys, indent 2, final newline, atomically, in a 0700
    /// directory.
    pub fn save(&self, data: &DataDir) -> Result<(), CoreError> {
        ensure_dir(data.root(), 0o700)?;
        write_atomic(
            &data.registry(),
            sorted_json(&Value::Object(self.raw.as_ref().clone())).as_bytes(),
            0o644,
        )
    }

    /// Every usable registration, sorted by id.
    pub fn entries(&self) -> BTreeMap<String, Entry> {
        self.raw
            .keys()
            .filter_map(|id| Some((id.clone(), self.get(id)?)))
            .collect()
    }

    /// Ids present but unusable, sorted.
    pub fn unreadable(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .raw
            .iter()
            .filter(|(id, v)| !valid_id(id) || usable_root(v).is_none())
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// The usable entry for `id`: a valid id whose record names a usable root.
    pub fn get(&self, id: &str) -> Option<Entry> {
        let v = self.raw.get(id)?;
        let root_path = usable_root(v)?;
        valid_id(id).then(|| Entry {
            root_path,
            record: v.as_object().cloned().unwrap_or_default(),
        })
    }

    /// Whether `id` is present but unusable.
    pub fn is_unreadable(&self, id: &str) -> bool {
        self.raw.contains_key(id) && self.get(id).is_none()
    }

    /// The id registered for `root`, refusing when the answer would be a guess.
    pub fn id_for_root(&self, root: &Path) -> Result<Option<String>, CoreError> {
        let unreadable = self.unreadable();
        if !unreadable.is_empty() {
            return Err(CoreError::failure(
                format!("The registry holds entries that cannot be read ({}), so it cannot tell whether one of them is this project.", unreadable.join(", ")),
                UNREADABLE_REMEDY,
            ));
        }
        let ids: Vec<String> = self
            .entries()
            .into_iter()
            .filter(|(_, e)| e.root_path == root)
            .map(|(id, _)| id)
            .collect();
        match ids.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.clone())),
            many => Err(CoreError::failure(
                format!(
                    "{} is registered under more than one id ({}).",
                    root.display(),
                    many.join(", ")
                ),
                "Keep one registration: remove the others with `theurian project unregister <id>`.",
            )),
        }
    }

    /// Registers `repo` under `explicit_id` (or the id it already has, or one derived from its
    /// directory name). Returns the command's report.
    pub fn register(
        &mut self,
        data: &DataDir,
        repo: &Repo,
        explicit_id: Option<&str>,
    ) -> Result<Value, CoreError> {
        let id = match explicit_id {
            Some(id) => {
                if !valid_id(id) {
                    return Err(CoreError::failure(
                        format!("{} is not a valid project id.", crate::layout::quoted(id)),
                        "Use lowercase letters and digits in dash-separated runs, at most 200 characters, e.g. `backend-service`.",
                    ));
                }
                id.to_owned()
            }
            None => match self.id_for_root(&repo.root)? {
                Some(id) => id,
                None => derive_id(&repo.root).ok_or_else(|| {
                    CoreError::failure(
                        format!("No project id can be derived from the directory name of {}.", repo.root.display()),
                        "Pass one with `--project-id`, e.g. `theurian project register --project-id backend-service`.",
                    )
                })?,
            },
        };
        if self.is_unreadable(&id) {
            return Err(CoreError::failure(
                format!("The registry already holds an entry for {id} that cannot be read."),
                format!("Remove it with `theurian project unregister {id}`, then register again."),
            ));
        }
        if let Some(existing) = self.get(&id) {
            if existing.root_path != repo.root {
                return Err(CoreError::failure(
                    format!("{id} is already registered to {}.", existing.root_path.display()),
                    "A project id names one repository. Choose another id with `--project-id`, or unregister the old one first.",
                ));
            }
        }
        if let Some((other, _)) = self
            .entries()
            .into_iter()
            .find(|(other, e)| other != &id && e.root_path == repo.root)
        {
            return Err(CoreError::failure(
                format!("{} is already registered as {other}.", repo.root.display()),
                format!("A project id is an identity, not a label: keep using {other}, or unregister it first with `theurian project unregister {other}`."),
            ));
        }
        let registered_at = self
            .raw
            .get(&id)
            .and_then(|v| v.get("registeredAt"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
            });
        let record = json!({
            "rootPath": repo.root.to_string_lossy(),
            "repositoryUrl": repo.origin_url,
            "defaultBranch": repo.branch,
            "knowledgeDirectory": ".theurian",
            "registeredAt": registered_at,
        });
        let changed = self.raw.get(&id) != Some(&record);
        if changed {
            Arc::make_mut(&mut self.raw).insert(id.clone(), record);
            self.save(data)?;
        }
        Ok(json!({
            "projectId": id,
            "root": repo.root.to_string_lossy(),
            "repositoryUrl": if repo.origin_url.is_empty() { Value::Null } else { Value::String(repo.origin_url.clone()) },
            "defaultBranch": repo.branch,
            "initialized": repo.root.join(".theurian").is_dir(),
            "changed": changed,
        }))
    }

    /// Removes `id` (usable or not). Never touches the project's files.
    pub fn unregister(&mut self, data: &DataDir, id: &str) -> Result<Value, CoreError> {
        let removed = Arc::make_mut(&mut self.raw).remove(id).is_some();
        if removed {
            self.save(data)?;
        }
        Ok(json!({
            "projectId": id,
            "removed": removed,
            "knowledgePreserved": true,
            "note": if removed {
                "The registration is gone; the project's .theurian/ directory was not touched."
            } else {
                "No registration had that id; nothing changed."
            },
        }))
    }

    /// The `project list` report.
    pub fn list(&self) -> Value {
        let entries = self.entries();
        let projects: Vec<Value> = entries
            .into_iter()
            .map(|(id, e)| {
                let mut record = e.record;
                record.insert("projectId".into(), Value::String(id));
                Value::Object(record)
            })
            .collect();
        let unreadable = self.unreadable();
        let mut out =
            json!({ "count": projects.len(), "projects": projects, "unreadable": unreadable });
        if !unreadable.is_empty() {
            out["remedy"] = Value::String(UNREADABLE_REMEDY.into());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(root: &Path) -> Repo {
        Repo {
            root: root.to_path_buf(),
            branch: "main".into(),
            origin_url: String::new(),
        }
    }

    #[test]
    fn ids_derive_from_directory_names() {
        assert_eq!(
            derive_id(Path::new("/x/My Repo_2")).as_deref(),
            Some("my-repo-2")
        );
        assert_eq!(derive_id(Path::new("/x/__")), None);
    }

    #[test]
    fn registration_round_trips_and_refuses_a_second_identity() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(dir.path().join("data"));
        let a = dir.path().join("alpha");
        std::fs::create_dir_all(&a).expect("mkdir");
        let mut reg = Registry::load(&data).expect("empty");
        let out = reg.register(&data, &repo(&a), None).expect("register");
        assert_eq!(out["projectId"], "alpha");
        assert_eq!(out["changed"], true);
        let mut again = Registry::load(&data).expect("reload");
        assert_eq!(
            again.register(&data, &repo(&a), None).expect("again")["changed"],
            false
        );
        assert!(again.register(&data, &repo(&a), Some("other")).is_err());
        assert_eq!(again.list()["count"], 1);
    }

    #[test]
    fn unusable_entries_are_reported_and_preserved() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(dir.path());
        std::fs::write(
            data.registry(),
            r#"{"good": {"rootPath": "/srv/good"}, "Not An Id": {"rootPath": "/srv/x"}, "rel": {"rootPath": "x/y"}, "odd": 3}"#,
        )
        .expect("write");
        let mut reg = Registry::load(&data).expect("load");
        assert_eq!(reg.unreadable(), vec!["Not An Id", "odd", "rel"]);
        assert_eq!(reg.entries().keys().collect::<Vec<_>>(), vec!["good"]);
        reg.unregister(&data, "good").expect("unregister");
        let text = std::fs::read_to_string(data.registry()).expect("read");
        assert!(text.contains("Not An Id") && text.ends_with("}\n"));
    }
}
