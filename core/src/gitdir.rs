//! Reading just enough of a Git repository to register a project: its working-tree root, the
//! branch checked out, and the `origin` URL. Plain file reads, no `git` process: the files
//! involved (`.git`, `HEAD`, `config`) are stable, documented formats.

use crate::CoreError;
use std::path::{Path, PathBuf};

/// What registration needs to know about a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The working tree's top level, symlinks resolved.
    pub root: PathBuf,
    /// The branch HEAD names, or `main` when HEAD is detached or unreadable.
    pub branch: String,
    /// `remote.origin.url`, or empty when there is none.
    pub origin_url: String,
}

/// Finds the repository containing `start` (a directory).
pub fn discover(start: &Path) -> Result<Repo, CoreError> {
    let start = start
        .canonicalize()
        .map_err(|e| CoreError::io("resolve", start, &e))?;
    let mut dir: Option<&Path> = Some(&start);
    while let Some(d) = dir {
        let dot_git = d.join(".git");
        if let Ok(meta) = std::fs::metadata(&dot_git) {
            let git_dir = if meta.is_dir() {
                dot_git
            } else {
                linked_git_dir(&dot_git, d)?
            };
            let common = common_dir(&git_dir);
            return Ok(Repo {
                root: d.to_path_buf(),
                branch: head_branch(&git_dir).unwrap_or_else(|| "main".to_owned()),
                origin_url: origin_url(&common).unwrap_or_default(),
            });
        }
        dir = d.parent();
    }
    Err(CoreError::failure(
        format!("{} is not inside a Git repository.", start.display()),
        "Theurian keeps knowledge in Git: run `git init` in the project (or cd into its repository) and try again.",
    ))
}

/// The `user.email` git would record for a commit in the repository at `root` (its own
/// configuration, then the user's and the system's), if one is set.
pub fn user_email(root: &Path) -> Option<String> {
    let repo = gix::open(root).ok()?;
    let email = repo.config_snapshot().string("user.email")?;
    let email = email.to_string();
    (!email.trim().is_empty()).then(|| email.trim().to_owned())
}

/// A `.git` file (worktree or submodule) holds `gitdir: <path>`.
fn linked_git_dir(dot_git: &Path, worktree: &Path) -> Result<PathBuf, CoreError> {
    let text = std::fs::read_to_string(dot_git).map_err(|e| CoreError::io("read", dot_git, &e))?;
    let target = text
        .trim()
        .strip_prefix("gitdir:")
        .map(str::trim)
        .ok_or_else(|| {
            CoreError::failure(
                format!(
                    "{} is neither a directory nor a `gitdir:` link.",
                    dot_git.display()
                ),
                "Repair the repository with `git worktree repair`, or re-clone it.",
            )
        })?;
    Ok(worktree.join(target))
}

fn common_dir(git_dir: &Path) -> PathBuf {
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => git_dir.join(rel.trim()),
        Err(_) => git_dir.to_path_buf(),
    }
}

fn head_branch(git_dir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_owned)
}

/// `url` under `[remote "origin"]` in the repository's config.
fn origin_url(common: &Path) -> Option<String> {
    let config = std::fs::read_to_string(common.join("config")).ok()?;
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            in_origin = section == "[remote\"origin\"]";
            continue;
        }
        if in_origin {
            if let Some((key, value)) = line.split_once('=') {
                if key.trim().eq_ignore_ascii_case("url") {
                    return Some(value.trim().trim_matches('"').to_owned());
                }
            }
        }
    }
    None
}

/// Makes `dir` an empty Git repository on branch `main` (what `git init` writes), for projects
/// this tool creates itself, such as the demo.
pub fn init_empty(dir: &Path) -> Result<(), CoreError> {
    let git = dir.join(".git");
    for sub in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
        std::fs::create_dir_all(git.join(sub))
            .map_err(|e| CoreError::io("create", &git.join(sub), &e))?;
    }
    let files = [
        ("HEAD", "ref: refs/heads/main\n"),
        (
            "config",
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
        ),
        ("description", "Unnamed repository.\n"),
    ];
    for (name, text) in files {
        std::fs::write(git.join(name), text)
            .map_err(|e| CoreError::io("write", &git.join(name), &e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_root_branch_and_origin_from_a_subdirectory() {
        let dir = tempfile::tempdir().expect("tempdir");
        init_empty(dir.path()).expect("init");
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/trunk\n").expect("head");
        std::fs::write(
            dir.path().join(".git/config"),
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@example.com:team/app.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        )
        .expect("config");
        std::fs::create_dir_all(dir.path().join("src/deep")).expect("mkdir");
        let repo = discover(&dir.path().join("src/deep")).expect("discover");
        assert_eq!(repo.root, dir.path().canonicalize().expect("canon"));
        assert_eq!(repo.branch, "trunk");
        assert_eq!(repo.origin_url, "git@example.com:team/app.git");
    }

    #[test]
    fn a_directory_outside_any_repository_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A temp dir might sit inside a repository on some machines; only assert when it doesn't.
        if discover(dir.path()).is_err() {
            let err = discover(dir.path()).expect_err("no repo");
            assert!(err.message.contains("not inside a Git repository"));
        }
    }
}
