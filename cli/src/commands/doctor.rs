//! `theurian doctor`: what is wrong with this installation and the project here, and how to
//! fix each thing — data directory, registry, token, serving profile, daemon, and for the
//! current project its migrations, applied state, index and review stores. Reads only.

use super::migrate::project_repo;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::migrate::MigrationSet;
use theurian_core::store::provenance;
use theurian_core::CoreError;

fn check(name: &str, ok: bool, detail: impl Into<String>, remedy: &str) -> Value {
    json!({
        "check": name,
        "ok": ok,
        "detail": detail.into(),
        "remedy": if ok { Value::Null } else { json!(remedy) },
    })
}

fn installation(data: &DataDir, out: &mut Vec<Value>) {
    let root = data.root();
    out.push(check(
        "data directory",
        root.is_dir(),
        root.display().to_string(),
        "It is created on first use: run `theurian project register` in a project, or set THEURIAN_DATA_DIR.",
    ));
    match theurian_core::registry::Registry::load(data) {
        Ok(r) => {
            let bad = r.unreadable();
            out.push(check(
                "registry",
                bad.is_empty(),
                format!("{} project(s) registered{}", r.entries().len(), if bad.is_empty() { String::new() } else { format!("; unreadable: {}", bad.join(", ")) }),
                "Run `theurian project unregister <id>` for each unreadable entry, then register it again from its repository.",
            ));
        }
        Err(e) => out.push(check("registry", false, e.message, &e.remedy)),
    }
    match theurian_core::token::read(&data.token()) {
        Ok(Some(_)) => out.push(check("token", true, data.token().display().to_string(), "")),
        Ok(None) => out.push(check(
            "token",
            true,
            "not created yet (the daemon creates it on first start)",
            "",
        )),
        Err(e) => out.push(check("token", false, e.message, &e.remedy)),
    }
    match theurian_core::serving_profile::load(data) {
        Ok(c) => out.push(check(
            "serving profile",
            true,
            format!("serves {}", c.visible_names().join(", ")),
            "",
        )),
        Err(e) => out.push(check("serving profile", false, e.message, &e.remedy)),
    }
    let daemon = super::daemon::status(data);
    let running = daemon["state"] == "running";
    let listening = daemon["listening"] == true;
    out.push(check(
        "daemon",
        !running || listening,
        if running { format!("running at {}", daemon["endpoint"].as_str().unwrap_or("?")) } else { "not running".into() },
        "It holds the lock but does not answer /health: run `theurian daemon stop`, then `theurian daemon start`.",
    ));
    let service = daemon["service"]["status"].as_str().unwrap_or("unknown");
    let manager = daemon["service"]["manager"]
        .as_str()
        .unwrap_or("no service manager");
    out.push(check(
        "service",
        service != "installed-stopped",
        match service {
            "running" => format!("installed ({manager}) and running"),
            "installed-stopped" => format!("installed ({manager}) but stopped"),
            "not-installed" => format!("not installed ({manager}): `theurian setup` installs it"),
            _ => "no user service manager answers here: start the daemon with `theurian daemon start`".into(),
        },
        "Start it: `systemctl --user start theurian.service` (Linux) or `theurian daemon start`; `journalctl --user -u theurian.service` shows why it stopped.",
    ));
}

fn project(data: &DataDir, out: &mut Vec<Value>) {
    let Ok(repo) = project_repo() else {
        out.push(check(
            "project",
            true,
            "not inside a Git repository: project checks skipped",
            "",
        ));
        return;
    };
    let root = repo.root.clone();
    if !root.join(".theurian").is_dir() {
        out.push(check(
            "project",
            true,
            format!(
                "{} has no .theurian/: project checks skipped",
                root.display()
            ),
            "",
        ));
        return;
    }
    let registered = theurian_core::registry::Registry::load(data)
        .ok()
        .and_then(|r| r.id_for_root(&root).ok().flatten());
    out.push(check(
        "project registered",
        registered.is_some(),
        registered.clone().map_or_else(
            || format!("{} is not registered", root.display()),
            |id| format!("registered as {id}"),
        ),
        "Run `theurian project register` in the repository.",
    ));
    let contained = theurian_core::store::writable::inside_project(&root, "theurian migrate apply");
    out.push(match contained {
        Ok(()) => check(
            "state directories",
            true,
            ".theurian/state and .theurian/runtime are inside the project",
            "",
        ),
        Err(e) => check("state directories", false, e.message, &e.remedy),
    });
    let set = MigrationSet::load(&root);
    match &set {
        Ok(s) => out.push(check(
            "migrations",
            true,
            format!(
                "{} migration(s), state hash {}",
                s.ordered.len(),
                &s.state_hash[..12.min(s.state_hash.len())]
            ),
            "",
        )),
        Err(e) => out.push(check("migrations", false, e.message.clone(), &e.remedy)),
    }
    let state_dir = root.join(".theurian/state");
    match theurian_core::store::pointer::read(&state_dir) {
        Ok(Some(active)) => {
            let current = set
                .as_ref()
                .is_ok_and(|s| s.state_hash == active.state_hash);
            let trusted = provenance::is_recorded(data, &root, "state", &active.state_hash);
            out.push(check(
                "applied state",
                current && trusted,
                format!(
                    "{}{}",
                    if current {
                        "matches the migrations"
                    } else {
                        "behind the migrations"
                    },
                    if trusted {
                        ""
                    } else {
                        "; not built by this installation"
                    }
                ),
                "Run `theurian migrate apply`.",
            ));
        }
        Ok(None) => out.push(check(
            "applied state",
            false,
            "never applied",
            "Run `theurian migrate apply`.",
        )),
        Err(e) => out.push(check("applied state", false, e.message, &e.remedy)),
    }
    if let Some(id) = &registered {
        let rt = theurian_core::runtime::current_thread();
        let stale = rt.is_ok_and(|rt| {
            rt.block_on(theurian_core::store::pipeline::active_state_built_for_another(&root, id))
        });
        if stale {
            out.push(check(
                "state project id",
                false,
                format!("the applied state was built before the project was registered as {id}, so the daemon serves nothing for it"),
                "Run `theurian migrate apply`, then `theurian index build`.",
            ));
        }
    }
    match theurian_core::index::pointer::IndexPointer::read(&state_dir) {
        Some(p) => {
            let fresh = set.as_ref().is_ok_and(|s| s.state_hash == p.state_hash) && !p.purge_failed;
            out.push(check(
                "index",
                fresh,
                format!(
                    "build {}{}",
                    p.index_build_id,
                    if fresh { "" } else { ", stale or purge-failed" }
                ),
                "Run `theurian index build` (search falls back to an unranked scan until then).",
            ));
        }
        None => out.push(check(
            "index",
            false,
            "no published index: search answers by an unranked scan",
            "Run `theurian index build`.",
        )),
    }
    for (kind, file, rebuild) in [
        (
            "findings",
            theurian_core::findings::store::STORE_FILE,
            "theurian findings build",
        ),
        (
            "review",
            theurian_core::review::store::STORE_FILE,
            "theurian review build",
        ),
    ] {
        let present = state_dir.join(file).is_file();
        let vouched = provenance::is_recorded(data, &root, kind, "local");
        out.push(check(
            &format!("{kind} store"),
            !present || vouched,
            match (present, vouched) {
                (false, _) => format!("not built (the review.{kind} tool refuses until it is)"),
                (true, true) => "built here".into(),
                (true, false) => {
                    "present but not built by this installation, so it is not served".into()
                }
            },
            &format!("Run `{rebuild}`."),
        ));
    }
    if let Ok(Some(dir)) = theurian_core::review::listing::review_root(&root) {
        let prints = theurian_core::review::listing::fingerprints(&dir);
        match theurian_core::review::listing::read_all(
            &dir,
            &prints,
            &theurian_core::progress::SILENT,
        ) {
            Ok(entries) => out.push(check(
                "review evidence",
                true,
                format!("{} readable file(s)", entries.len()),
                "",
            )),
            Err(e) => {
                let core: CoreError = e.into();
                out.push(check("review evidence", false, core.message, &core.remedy));
            }
        }
    }
}

/// The report; fails (exit 1) after printing it when any check failed.
pub fn run(data: &DataDir, json_out: bool, shareable: bool) -> Result<Value, CoreError> {
    let mut checks = Vec::new();
    installation(data, &mut checks);
    project(data, &mut checks);
    let failing: Vec<String> = checks
        .iter()
        .filter(|c| c["ok"] == false)
        .filter_map(|c| c["check"].as_str().map(str::to_owned))
        .collect();
    let mut report = json!({"ok": failing.is_empty(), "checks": checks});
    if shareable {
        report = super::doctor_report::shareable(data, report);
    }
    if failing.is_empty() {
        return Ok(report);
    }
    crate::output::success(&report, json_out);
    Err(CoreError::failure(
        format!(
            "{} check(s) need attention: {}.",
            failing.len(),
            failing.join(", ")
        ),
        "Each failing check above carries its remedy.",
    ))
}
